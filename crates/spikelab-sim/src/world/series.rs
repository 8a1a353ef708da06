//! The time series (variables on change, markers, per-destination rows) and the RTT
//! histogram behind the queueing-delay statistics.

use crate::table::{ColumnData, Table};
use spikelab_core::{SimDuration, SimTime};
use spikelab_tcp::spurious::DetectorKind;

/// A histogram of RTT samples in logarithmic bins (each 0.1 % wider than the one below), kept
/// only over the range the samples span: a few kB per flow, whatever the run's length. Its
/// quantiles are within 0.1 % of the RTT; its minimum is exact.
#[derive(Default)]
pub(super) struct RttHist {
    /// Bin index of `bins[0]`.
    base: i64,
    bins: Vec<u32>,
    n: u64,
    pub(super) min: Option<SimDuration>,
    /// The last sample and its bin: timestamp samples come in whole clock ticks, so most
    /// repeat the one before, and the logarithm is the costly part.
    last: Option<(SimDuration, i64)>,
}

impl RttHist {
    /// ln of the bin width ratio.
    const LN_RATIO: f64 = 0.000_999_500_333; // ln(1.001)

    pub(super) fn add(&mut self, r: SimDuration) {
        self.min = Some(self.min.map_or(r, |m| m.min(r)));
        let i = match self.last {
            Some((l, i)) if l == r => i,
            _ => {
                let i = ((r.as_nanos().max(1) as f64).ln() / Self::LN_RATIO).floor() as i64;
                self.last = Some((r, i));
                i
            }
        };
        if self.bins.is_empty() {
            self.base = i;
        }
        if i < self.base {
            let k = (self.base - i) as usize;
            self.bins.splice(0..0, std::iter::repeat_n(0, k));
            self.base = i;
        }
        let j = (i - self.base) as usize;
        if j >= self.bins.len() {
            self.bins.resize(j + 1, 0);
        }
        self.bins[j] += 1;
        self.n += 1;
    }

    /// The `q`-quantile, seconds (the middle of its bin); NaN without samples.
    pub(super) fn quantile_s(&self, q: f64) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let target = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (j, &c) in self.bins.iter().enumerate() {
            seen += c as u64;
            if seen >= target {
                let i = (self.base + j as i64) as f64 + 0.5;
                return (i * Self::LN_RATIO).exp() * 1e-9;
            }
        }
        f64::NAN
    }
}

pub(super) const VAR_NAMES: [&str; 28] = [
    "cwnd",
    "ssthresh",
    "srtt",
    "rttvar",
    "rto",
    "snd_una",
    "snd_nxt",
    "inflight",
    "ca_state",
    "rtt_sample",
    "rcv_nxt",
    "rto_expiry",
    "fast_retx",
    "dupacks",
    "verdict_eifel",
    "verdict_dsack",
    "verdict_frto",
    "verdict_linux",
    "undo",
    "failover",
    "dest_cwnd",
    "dest_ssthresh",
    "dest_srtt",
    "dest_rttvar",
    "dest_rto",
    "dest_state",
    "dest_errors",
    "dest_flight",
];
pub(super) const N_VARS: usize = 9;
pub(super) const VAR_RTT_SAMPLE: i32 = 9;
pub(super) const VAR_RCV_NXT: i32 = 10;
pub(super) const VAR_RTO_EXPIRY: i32 = 11;
pub(super) const VAR_FAST_RETX: i32 = 12;
/// `verdict_<detector>`: `VAR_VERDICT + DetectorKind as i32`.
pub(super) const VAR_VERDICT: i32 = 14;
pub(super) const VAR_UNDO: i32 = VAR_VERDICT + N_DETECTORS as i32;
/// An SCTP failover: value = the new data destination, `dest` = the one left.
pub(super) const VAR_FAILOVER: i32 = VAR_UNDO + 1;
/// The first per-destination variable (the last names of `VAR_NAMES`), `dest` = the destination.
pub(super) const VAR_DEST: i32 = VAR_FAILOVER + 1;
/// Detectors scored per flow.
pub(super) const N_DETECTORS: usize = DetectorKind::ALL.len();

/// The time series recorded while the run lasts: 24 bytes a row. Retransmission markers
/// (with their segment and transmission number) are few and built at the end ([`Markers`]).
#[derive(Default)]
pub(super) struct SeriesTrace {
    pub(super) t: Vec<i64>,
    pub(super) flow: Vec<i32>,
    pub(super) var: Vec<i32>,
    pub(super) value: Vec<f64>,
}

impl SeriesTrace {
    pub(super) fn push(&mut self, t: SimTime, flow: u32, var: i32, value: f64) {
        if self.t.len() == self.t.capacity() {
            crate::packet_event::reserve_lean(&mut self.t);
            let n = self.t.capacity() - self.t.len();
            self.flow.reserve_exact(n);
            self.var.reserve_exact(n);
            self.value.reserve_exact(n);
        }
        self.t.push(t.as_nanos() as i64);
        self.flow.push(flow as i32);
        self.var.push(var);
        self.value.push(value);
    }
}

/// Marker rows: timeouts, fast retransmits, verdicts and undos, each with the first byte of
/// the retransmission concerned (`seq`) and its transmission number (`tx`).
#[derive(Default)]
pub(super) struct Markers {
    pub(super) rows: SeriesTrace,
    pub(super) seq: Vec<i64>,
    pub(super) tx: Vec<i32>,
    /// The SCTP destination a row is about (-1: none).
    pub(super) dest: Vec<i32>,
}

impl Markers {
    pub(super) fn mark(&mut self, t: SimTime, flow: u32, var: i32, value: f64, seq: i64, tx: i32) {
        self.mark_dest(t, flow, var, value, seq, tx, -1);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn mark_dest(
        &mut self,
        t: SimTime,
        flow: u32,
        var: i32,
        value: f64,
        seq: i64,
        tx: i32,
        dest: i32,
    ) {
        self.rows.push(t, flow, var, value);
        self.seq.push(seq);
        self.tx.push(tx);
        self.dest.push(dest);
    }
}

/// The timeseries table: the series rows (time order) followed by the marker rows (time
/// order). Series rows have `seq` = -1 and `tx` = -1. A streamed run hands the series over in
/// chunks as it goes and the markers come last, so both ways give the same table.
pub(super) fn series_table(a: SeriesTrace, b: Markers, c: Markers) -> Table {
    fn cat<T: Copy>(mut a: Vec<T>, b: &[T]) -> Vec<T> {
        a.extend_from_slice(b);
        a
    }
    // The per-destination rows follow the markers.
    let mut b = b;
    b.rows.t.extend_from_slice(&c.rows.t);
    b.rows.flow.extend_from_slice(&c.rows.flow);
    b.rows.var.extend_from_slice(&c.rows.var);
    b.rows.value.extend_from_slice(&c.rows.value);
    b.seq.extend_from_slice(&c.seq);
    b.tx.extend_from_slice(&c.tx);
    b.dest.extend_from_slice(&c.dest);
    let n = a.t.len();
    let SeriesTrace {
        t,
        flow,
        var,
        value,
    } = a;
    let mut out = Table::default();
    out.push("t_ns", ColumnData::I64(cat(t, &b.rows.t)));
    out.push("flow", ColumnData::I32(cat(flow, &b.rows.flow)));
    let names = VAR_NAMES.iter().map(|v| v.to_string()).collect();
    out.push("var", ColumnData::Dict(cat(var, &b.rows.var), names));
    out.push("value", ColumnData::F64(cat(value, &b.rows.value)));
    out.push("seq", ColumnData::I64(cat(vec![-1; n], &b.seq)));
    out.push("tx", ColumnData::I32(cat(vec![-1; n], &b.tx)));
    out.push("dest", ColumnData::I32(cat(vec![-1; n], &b.dest)));
    out
}

/// Calls `f(i, value)` for each value that differs (bit for bit) from the last one recorded in
/// `last`, and records it; NaN values are recorded but not reported (a variable without a
/// value yet, such as srtt before the first sample).
pub(super) fn each_change(last: &mut [u64], vals: &[f64], mut f: impl FnMut(usize, f64)) {
    for (i, v) in vals.iter().enumerate() {
        let bits = v.to_bits();
        if last[i] != bits {
            last[i] = bits;
            if !v.is_nan() {
                f(i, *v);
            }
        }
    }
}
