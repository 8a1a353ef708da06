//! The summary of a run: per-flow metrics, the per-run columns and the runs table.

use super::*;
use crate::scenario::TraceLevel;
use crate::table::{ColumnData, Table};
use spikelab_core::{SimDuration, SimTime};
use spikelab_tcp::spurious::DetectorKind;

impl World {
    pub(super) fn finish(mut self) -> RunResult {
        let end = self.end;
        let mut runs = RunsBuilder::default();
        // The run's span: from the first flow's start to the end, or to the last completion
        // when every flow is a finished transfer.
        let starts = self.conns.iter().map(|c| c.progress().start());
        let first = starts.min().unwrap_or(end);
        let completions: Vec<Option<SimTime>> = self
            .conns
            .iter()
            .map(|c| c.progress().completed())
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
        for c in &mut self.conns {
            c.rows(end, &mut runs, &mut markers);
        }
        runs.rows.sort_by_key(|r| r.flow);
        runs.finish_run(span, utilisation);
        let runs = runs.build(&self.global_stages, self.seed);
        let timeseries = if self.level >= TraceLevel::Timeseries {
            let dest = std::mem::take(&mut self.io.dest_series);
            series_table(std::mem::take(&mut self.io.series), markers, dest)
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

/// The delivery bookkeeping of one TCP flow or SCTP association: when its in-order data last
/// advanced and its longest stall, when its transfer completed, and its RTT samples.
pub(super) struct Progress {
    start: SimTime,
    /// In-order bytes delivered to the receiving application so far.
    delivered: u64,
    last_progress: SimTime,
    longest_stall: SimDuration,
    completed: Option<SimTime>,
    rtt_hist: RttHist,
}

impl Progress {
    pub(super) fn new(start: SimTime) -> Progress {
        Progress {
            start,
            delivered: 0,
            last_progress: start,
            longest_stall: SimDuration::ZERO,
            completed: None,
            rtt_hist: RttHist::default(),
        }
    }

    pub(super) fn start(&self) -> SimTime {
        self.start
    }

    /// When the transfer was wholly acknowledged.
    pub(super) fn completed(&self) -> Option<SimTime> {
        self.completed
    }

    /// The endpoint starts at `now`: a stall counts from here.
    pub(super) fn started(&mut self, now: SimTime) {
        self.last_progress = now;
    }

    /// The receiver's in-order data reached `delivered` bytes at `now`; whether it advanced.
    pub(super) fn delivered(&mut self, now: SimTime, delivered: u64) -> bool {
        if delivered <= self.delivered {
            return false;
        }
        self.delivered = delivered;
        self.longest_stall = self.longest_stall.max(now - self.last_progress);
        self.last_progress = now;
        true
    }

    /// The sender has all of its data acknowledged at `now` if `done`.
    pub(super) fn done(&mut self, now: SimTime, done: bool) {
        if self.completed.is_none() && done {
            self.completed = Some(now);
        }
    }

    pub(super) fn rtt_sample(&mut self, rtt: SimDuration) {
        self.rtt_hist.add(rtt);
    }

    /// Closes the books at the run's `end`: the end of the endpoint's active time (its
    /// completion, else the run's end), with the stall up to it counted.
    pub(super) fn close(&mut self, end: SimTime) -> SimTime {
        let stop = self.completed.unwrap_or(end);
        if self.completed.is_none() && stop > self.last_progress {
            self.longest_stall = self.longest_stall.max(stop - self.last_progress);
        }
        stop
    }

    /// The runs-table columns of the deliveries until `stop` ([`Progress::close`]): `delivered`
    /// bytes in all, and the RTT samples' count, sum and sum of squares (s, s²).
    pub(super) fn columns(&self, stop: SimTime, delivered: u64, rtt: (u64, f64, f64)) -> Delivery {
        let active = stop.since(self.start).as_secs_f64();
        let (mean, sd) = mean_sd(rtt.0, rtt.1, rtt.2);
        let rtt_min = self.rtt_hist.min.map_or(f64::NAN, |m| m.as_secs_f64());
        Delivery {
            goodput_bps: if active > 0.0 {
                delivered as f64 * 8.0 / active
            } else {
                0.0
            },
            bytes_delivered: delivered as i64,
            rtt_mean_s: mean,
            rtt_sd_s: sd,
            rtt_samples: rtt.0 as i64,
            longest_stall_s: self.longest_stall.as_secs_f64(),
            completion_time_s: self
                .completed
                .map_or(f64::NAN, |c| c.since(self.start).as_secs_f64()),
            rtt_min_s: rtt_min,
            // NaN without samples (f64::max would turn NaN into 0).
            qdelay_mean_s: nonneg(mean - rtt_min),
            qdelay_p95_s: nonneg(self.rtt_hist.quantile_s(0.95) - rtt_min),
        }
    }
}

/// The runs-table columns of what a flow or association delivered ([`Progress::columns`]).
pub(super) struct Delivery {
    goodput_bps: f64,
    bytes_delivered: i64,
    rtt_mean_s: f64,
    rtt_sd_s: f64,
    rtt_samples: i64,
    longest_stall_s: f64,
    completion_time_s: f64,
    rtt_min_s: f64,
    qdelay_mean_s: f64,
    qdelay_p95_s: f64,
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
fn mean_sd(n: u64, sum: f64, sumsq: f64) -> (f64, f64) {
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
fn nonneg(x: f64) -> f64 {
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
        let goodputs: Vec<f64> = self.rows.iter().map(|r| r.delivery.goodput_bps).collect();
        self.jfi = jain_index(&goodputs);
        self.utilisation = utilisation;
        let bytes: i64 = self.rows.iter().map(|r| r.delivery.bytes_delivered).sum();
        self.aggregate_goodput_bps = if span > 0.0 {
            bytes as f64 * 8.0 / span
        } else {
            f64::NAN
        };
    }

    fn build(self, stages: &[(String, String)], seed: u64) -> Table {
        let rows = &self.rows;
        let mut t = Table::default();
        // `col!(f64 name)` is the rows' field `name`; `col!(i64 name in part)` their
        // `part.name`, where the part (`tcp`, `sctp`) may not apply to a row: then the column
        // holds its "does not apply" marker, -1 or NaN, null in the table (crate::schema).
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
            (i64 $f:ident in delivery) => {
                t.push(
                    stringify!($f),
                    ColumnData::I64(rows.iter().map(|r| r.delivery.$f).collect()),
                )
            };
            (f64 $f:ident in delivery) => {
                t.push(
                    stringify!($f),
                    ColumnData::F64(rows.iter().map(|r| r.delivery.$f).collect()),
                )
            };
            (i64 $f:ident in $p:ident) => {
                t.push(
                    stringify!($f),
                    ColumnData::I64(
                        rows.iter()
                            .map(|r| r.$p.as_ref().map_or(-1, |p| p.$f))
                            .collect(),
                    ),
                )
            };
            (f64 $f:ident in $p:ident) => {
                t.push(
                    stringify!($f),
                    ColumnData::F64(
                        rows.iter()
                            .map(|r| r.$p.as_ref().map_or(f64::NAN, |p| p.$f))
                            .collect(),
                    ),
                )
            };
        }
        t.push(
            "flow",
            ColumnData::I32(rows.iter().map(|r| r.flow).collect()),
        );
        // Seeds are u64; the column keeps their bit pattern as int64.
        t.push("seed", ColumnData::I64(vec![seed as i64; rows.len()]));
        col!(f64 goodput_bps in delivery);
        col!(i64 bytes_delivered in delivery);
        col!(i64 rto_count);
        col!(i64 rto_spurious_true);
        col!(i64 fast_retx_count);
        col!(i64 fast_retx_spurious_true);
        col!(i64 retx_segments);
        col!(i64 spurious_retx_true);
        col!(i64 dupacks_rcvd in tcp);
        col!(i64 dsacks_rcvd in tcp);
        col!(i64 paws_rejected in tcp);
        col!(i64 segments_sent);
        col!(f64 rtt_mean_s in delivery);
        col!(f64 rtt_sd_s in delivery);
        col!(i64 rtt_samples in delivery);
        col!(f64 longest_stall_s in delivery);
        col!(f64 completion_time_s in delivery);
        col!(i64 mss);
        col!(f64 rtt_min_s in delivery);
        col!(f64 qdelay_mean_s in delivery);
        col!(f64 qdelay_p95_s in delivery);
        col!(f64 rto_per_pkt);
        col!(f64 dupacks_per_pkt in tcp);
        col!(f64 spurious_retx_per_pkt);
        col!(f64 retx_per_pkt);
        t.push("cc", dictionary(rows.iter().map(|r| Some(r.cc))));
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
        t.push(
            "spurious",
            dictionary(
                rows.iter()
                    .map(|r| r.tcp.as_ref().map(|p| p.spurious.as_str())),
            ),
        );
        t.push(
            "response",
            fixed_dictionary(
                rows.iter().map(|r| r.tcp.as_ref().map(|p| p.response)),
                &["none", "eifel", "undo"],
            ),
        );
        col!(i64 rto_episodes);
        col!(i64 rto_episodes_spurious_true);
        col!(i64 rto_spurious_detected in tcp);
        col!(i64 fr_episodes);
        col!(i64 fr_episodes_spurious_true);
        col!(i64 fr_spurious_detected in tcp);
        col!(i64 undo_count in tcp);
        col!(i64 tlp_count in tcp);
        col!(i64 tlp_recoveries in tcp);
        col!(i64 rack_loss_count in tcp);
        col!(i64 local_cwr_count in tcp);
        col!(i64 moderate_cwnd_cuts in tcp);
        col!(f64 timeout_time_s in tcp);
        col!(f64 rto_wait_s in tcp);
        t.push(
            "transport",
            fixed_dictionary(rows.iter().map(|r| Some(r.protocol)), &["tcp", "sctp"]),
        );
        col!(i64 failovers in sctp);
        col!(f64 time_to_failover_s in sctp);
        col!(f64 failover_at_s in sctp);
        col!(i64 data_primary_bytes in sctp);
        col!(i64 data_other_bytes in sctp);
        col!(i64 heartbeats_sent in sctp);
        col!(f64 setup_time_s in sctp);
        col!(i64 assoc_failed in sctp);
        for d in DetectorKind::ALL {
            let name = d.name();
            let k = d as usize;
            // A detector that is off (or an SCTP row): -1, null in the table.
            let score = |r: &RunRow| r.tcp.as_ref().and_then(|p| p.det[k]);
            let int = |f: fn(&DetScore) -> i64| {
                ColumnData::I64(
                    rows.iter()
                        .map(|r| score(r).as_ref().map_or(-1, f))
                        .collect(),
                )
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
                        .map(|r| match score(r) {
                            Some(s) if s.tp + s.fp > 0 => s.delay_sum_s / (s.tp + s.fp) as f64,
                            _ => f64::NAN,
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

/// A dictionary column of `values` (`None`: null), its dictionary in order of first
/// appearance.
fn dictionary<'a>(values: impl Iterator<Item = Option<&'a str>>) -> ColumnData {
    let mut names: Vec<String> = Vec::new();
    let codes = values
        .map(|v| match v {
            None => -1,
            Some(v) => match names.iter().position(|n| n == v) {
                Some(c) => c as i32,
                None => {
                    names.push(v.to_string());
                    names.len() as i32 - 1
                }
            },
        })
        .collect();
    ColumnData::Dict(codes, names)
}

/// A dictionary column of `values` (`None`: null) over the dictionary `names` (a value not in
/// it: code 0).
fn fixed_dictionary<'a>(
    values: impl Iterator<Item = Option<&'a str>>,
    names: &[&str],
) -> ColumnData {
    let codes = values
        .map(|v| {
            v.map_or(-1, |v| {
                names.iter().position(|n| *n == v).unwrap_or(0) as i32
            })
        })
        .collect();
    ColumnData::Dict(codes, names.iter().map(|n| n.to_string()).collect())
}
