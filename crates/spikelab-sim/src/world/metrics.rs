//! The summary of a run: per-flow metrics, the per-run columns and the runs table.

use super::*;
use crate::scenario::TraceLevel;
use crate::table::{ColumnData, Table};
use spikelab_core::SimTime;
use spikelab_tcp::spurious::DetectorKind;

impl World {
    pub(super) fn finish(mut self) -> RunResult {
        let end = self.end;
        let mut runs = RunsBuilder::default();
        // The run's span: from the first flow's start to the end, or to the last completion
        // when every flow is a finished transfer.
        let starts = self.flows.iter().map(|f| f.start());
        let first = starts
            .chain(self.assocs.iter().map(|a| a.start()))
            .min()
            .unwrap_or(end);
        let completions: Vec<Option<SimTime>> = self
            .flows
            .iter()
            .map(|f| f.completed())
            .chain(self.assocs.iter().map(|a| a.completed()))
            .collect();
        let last = if completions.iter().all(|c| c.is_some()) {
            completions.iter().flatten().copied().max().unwrap_or(end)
        } else {
            end
        };
        let span = last.since(first).as_secs_f64();
        // The busiest rate stage's share of the span spent serialising.
        let utilisation = self
            .paths
            .iter()
            .flat_map(|p| p.stages.iter())
            .filter_map(|s| s.as_rate())
            .map(|r| {
                let busy = r.busy_time().as_secs_f64();
                if span > 0.0 {
                    (busy / span).min(1.0)
                } else {
                    f64::NAN
                }
            })
            .fold(f64::NAN, f64::max);
        let mut markers = Markers::default();
        self.tcp_rows(&mut runs, &mut markers, end);
        self.assoc_rows(&mut runs, &mut markers, end);
        runs.rows.sort_by_key(|r| r.flow);
        runs.finish_run(span, utilisation);
        let runs = runs.build(&self.global_stages, self.seed);
        let timeseries = if self.level >= TraceLevel::Timeseries {
            let dest = std::mem::take(&mut self.dest_series);
            series_table(std::mem::take(&mut self.series), markers, dest)
        } else {
            series_table(
                SeriesTrace::default(),
                Markers::default(),
                Markers::default(),
            )
        };
        RunResult {
            runs,
            timeseries,
            packets: self.packets_table(),
            events: self.events,
            end,
            cancelled: false,
            pcaps: Vec::new(),
        }
    }
}

/// Per-detector score of one flow.
#[derive(Clone, Copy, Default)]
pub(super) struct DetScore {
    pub(super) tp: i64,
    pub(super) fp: i64,
    pub(super) fn_: i64,
    pub(super) tn: i64,
    pub(super) undecided: i64,
    pub(super) delay_sum_s: f64,
}

pub(super) struct RunRow {
    pub(super) flow: i32,
    pub(super) cc: &'static str,
    pub(super) rtt_min_s: f64,
    pub(super) qdelay_mean_s: f64,
    pub(super) qdelay_p95_s: f64,
    pub(super) rto_per_pkt: f64,
    pub(super) dupacks_per_pkt: f64,
    pub(super) spurious_retx_per_pkt: f64,
    pub(super) retx_per_pkt: f64,
    pub(super) goodput_bps: f64,
    pub(super) bytes_delivered: i64,
    pub(super) rto_count: i64,
    pub(super) rto_spurious_true: i64,
    pub(super) fast_retx_count: i64,
    pub(super) fast_retx_spurious_true: i64,
    pub(super) retx_segments: i64,
    pub(super) spurious_retx_true: i64,
    pub(super) dupacks_rcvd: i64,
    pub(super) dsacks_rcvd: i64,
    pub(super) segments_sent: i64,
    pub(super) rtt_mean_s: f64,
    pub(super) rtt_sd_s: f64,
    pub(super) rtt_samples: i64,
    pub(super) longest_stall_s: f64,
    pub(super) completion_time_s: f64,
    pub(super) mss: i64,
    pub(super) drops: Vec<u64>,
    pub(super) spurious: String,
    pub(super) response: &'static str,
    pub(super) rto_episodes: i64,
    pub(super) rto_episodes_spurious_true: i64,
    pub(super) rto_spurious_detected: i64,
    pub(super) fr_episodes: i64,
    pub(super) fr_episodes_spurious_true: i64,
    pub(super) fr_spurious_detected: i64,
    pub(super) undo_count: i64,
    pub(super) tlp_count: i64,
    pub(super) tlp_recoveries: i64,
    pub(super) rack_loss_count: i64,
    pub(super) local_cwr_count: i64,
    /// Time in timeout recovery, s (NaN for SCTP).
    pub(super) timeout_time_s: f64,
    /// The expired RTOs summed, s (NaN for SCTP).
    pub(super) rto_wait_s: f64,
    pub(super) det: [DetScore; N_DETECTORS],
    pub(super) protocol: &'static str,
    pub(super) failovers: i64,
    pub(super) time_to_failover_s: f64,
    pub(super) data_primary_bytes: i64,
    pub(super) data_other_bytes: i64,
    pub(super) heartbeats_sent: i64,
    pub(super) setup_time_s: f64,
    pub(super) assoc_failed: i64,
}

#[derive(Default)]
pub(super) struct RunsBuilder {
    pub(super) rows: Vec<RunRow>,
    /// Per run, on every row: Jain's index, the busiest rate stage's utilisation, the
    /// aggregate goodput.
    pub(super) jfi: f64,
    pub(super) utilisation: f64,
    pub(super) aggregate_goodput_bps: f64,
}

/// Mean and sample standard deviation from a count, a sum and a sum of squares (NaN without
/// samples; sd 0 with one).
pub(super) fn mean_sd(n: u64, sum: f64, sumsq: f64) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let k = n as f64;
    let m = sum / k;
    let var = if n > 1 {
        ((sumsq - k * m * m) / (k - 1.0)).max(0.0)
    } else {
        0.0
    };
    (m, var.sqrt())
}

/// `n / of`, NaN when `of` is 0 (a per-packet ratio of a flow that sent nothing).
pub(super) fn ratio(n: u64, of: u64) -> f64 {
    if of > 0 {
        n as f64 / of as f64
    } else {
        f64::NAN
    }
}

/// `x` clamped at 0, NaN kept.
pub(super) fn nonneg(x: f64) -> f64 {
    if x < 0.0 {
        0.0
    } else {
        x
    }
}

/// Jain's fairness index `(Σx)² / (n·Σx²)` (1: equal shares; 1/n: one takes all); NaN when
/// every value is 0 or there is none.
fn jain_index(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let sum: f64 = xs.iter().sum();
    let sumsq: f64 = xs.iter().map(|x| x * x).sum();
    if sumsq > 0.0 {
        sum * sum / (n * sumsq)
    } else {
        f64::NAN
    }
}

impl RunsBuilder {
    pub(super) fn row(&mut self, r: RunRow) {
        self.rows.push(r);
    }

    /// The per-run columns, once every flow's row is in: `span` is the run's span in seconds.
    fn finish_run(&mut self, span: f64, utilisation: f64) {
        let goodputs: Vec<f64> = self.rows.iter().map(|r| r.goodput_bps).collect();
        self.jfi = jain_index(&goodputs);
        self.utilisation = utilisation;
        let bytes: i64 = self.rows.iter().map(|r| r.bytes_delivered).sum();
        self.aggregate_goodput_bps = if span > 0.0 {
            bytes as f64 * 8.0 / span
        } else {
            f64::NAN
        };
    }

    fn build(self, stages: &[(String, String)], seed: u64) -> Table {
        let rows = &self.rows;
        let mut t = Table::default();
        macro_rules! col {
            (i64 $f:ident) => {
                t.push(
                    stringify!($f),
                    ColumnData::I64(rows.iter().map(|r| r.$f).collect()),
                )
            };
            (f64 $f:ident) => {
                t.push(
                    stringify!($f),
                    ColumnData::F64(rows.iter().map(|r| r.$f).collect()),
                )
            };
        }
        t.push(
            "flow",
            ColumnData::I32(rows.iter().map(|r| r.flow).collect()),
        );
        // Seeds are u64; the column keeps their bit pattern as int64.
        t.push("seed", ColumnData::I64(vec![seed as i64; rows.len()]));
        col!(f64 goodput_bps);
        col!(i64 bytes_delivered);
        col!(i64 rto_count);
        col!(i64 rto_spurious_true);
        col!(i64 fast_retx_count);
        col!(i64 fast_retx_spurious_true);
        col!(i64 retx_segments);
        col!(i64 spurious_retx_true);
        col!(i64 dupacks_rcvd);
        col!(i64 dsacks_rcvd);
        col!(i64 segments_sent);
        col!(f64 rtt_mean_s);
        col!(f64 rtt_sd_s);
        col!(i64 rtt_samples);
        col!(f64 longest_stall_s);
        col!(f64 completion_time_s);
        col!(i64 mss);
        col!(f64 rtt_min_s);
        col!(f64 qdelay_mean_s);
        col!(f64 qdelay_p95_s);
        col!(f64 rto_per_pkt);
        col!(f64 dupacks_per_pkt);
        col!(f64 spurious_retx_per_pkt);
        col!(f64 retx_per_pkt);
        let mut names: Vec<String> = Vec::new();
        let codes = rows
            .iter()
            .map(|r| match names.iter().position(|n| n == r.cc) {
                Some(c) => c as i32,
                None => {
                    names.push(r.cc.to_string());
                    names.len() as i32 - 1
                }
            })
            .collect();
        t.push("cc", ColumnData::Dict(codes, names));
        let n = rows.len();
        t.push("jfi", ColumnData::F64(vec![self.jfi; n]));
        t.push(
            "bottleneck_utilisation",
            ColumnData::F64(vec![self.utilisation; n]),
        );
        t.push(
            "aggregate_goodput_bps",
            ColumnData::F64(vec![self.aggregate_goodput_bps; n]),
        );
        let mut labels: Vec<String> = Vec::new();
        let codes = rows
            .iter()
            .map(|r| match labels.iter().position(|l| *l == r.spurious) {
                Some(c) => c as i32,
                None => {
                    labels.push(r.spurious.clone());
                    labels.len() as i32 - 1
                }
            })
            .collect();
        t.push("spurious", ColumnData::Dict(codes, labels));
        let responses: Vec<String> = ["none", "eifel", "undo"].map(String::from).to_vec();
        t.push(
            "response",
            ColumnData::Dict(
                rows.iter()
                    .map(|r| responses.iter().position(|x| x == r.response).unwrap_or(0) as i32)
                    .collect(),
                responses.clone(),
            ),
        );
        col!(i64 rto_episodes);
        col!(i64 rto_episodes_spurious_true);
        col!(i64 rto_spurious_detected);
        col!(i64 fr_episodes);
        col!(i64 fr_episodes_spurious_true);
        col!(i64 fr_spurious_detected);
        col!(i64 undo_count);
        col!(i64 tlp_count);
        col!(i64 tlp_recoveries);
        col!(i64 rack_loss_count);
        col!(i64 local_cwr_count);
        col!(f64 timeout_time_s);
        col!(f64 rto_wait_s);
        let protocols: Vec<String> = ["tcp", "sctp"].map(String::from).to_vec();
        t.push(
            "transport",
            ColumnData::Dict(
                rows.iter().map(|r| (r.protocol == "sctp") as i32).collect(),
                protocols,
            ),
        );
        col!(i64 failovers);
        col!(f64 time_to_failover_s);
        col!(i64 data_primary_bytes);
        col!(i64 data_other_bytes);
        col!(i64 heartbeats_sent);
        col!(f64 setup_time_s);
        col!(i64 assoc_failed);
        for d in DetectorKind::ALL {
            let name = d.name();
            let k = d as usize;
            let int = |f: fn(&DetScore) -> i64| {
                ColumnData::I64(rows.iter().map(|r| f(&r.det[k])).collect())
            };
            t.push(&format!("det_{name}_detections"), int(|s| s.tp + s.fp));
            t.push(&format!("det_{name}_tp"), int(|s| s.tp));
            t.push(&format!("det_{name}_fp"), int(|s| s.fp));
            t.push(&format!("det_{name}_fn"), int(|s| s.fn_));
            t.push(&format!("det_{name}_tn"), int(|s| s.tn));
            t.push(&format!("det_{name}_undecided"), int(|s| s.undecided));
            t.push(
                &format!("det_{name}_delay_mean_s"),
                ColumnData::F64(
                    rows.iter()
                        .map(|r| {
                            let s = &r.det[k];
                            if s.tp + s.fp > 0 {
                                s.delay_sum_s / (s.tp + s.fp) as f64
                            } else {
                                f64::NAN
                            }
                        })
                        .collect(),
                ),
            );
        }
        for (g, (path, stage)) in stages.iter().enumerate() {
            t.push(
                &format!("drops_{path}_{stage}"),
                ColumnData::I64(rows.iter().map(|r| r.drops[g] as i64).collect()),
            );
        }
        t.push(
            "drops_total",
            ColumnData::I64(
                rows.iter()
                    .map(|r| r.drops.iter().sum::<u64>() as i64)
                    .collect(),
            ),
        );
        t
    }
}
