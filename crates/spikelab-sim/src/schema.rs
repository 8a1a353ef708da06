//! The result tables' columns, in one place: each column's type, unit, one-line description,
//! and what stands for "does not apply" in the compact vectors the core fills.
//!
//! The core keeps its columns as plain vectors (`ColumnData`), where a value that does not
//! apply is a marker ([`Null`]): -1 in an integer column whose real values are never negative,
//! NaN in a float column, code -1 in a dictionary column. At the boundary to Arrow (the
//! bindings) the marker becomes a null in the column's validity bitmap, and the unit and the
//! description become the field's metadata (`unit`, `description`), which the Parquet files
//! keep. So no table a user reads holds a sentinel: `avg` over a column skips the runs where it
//! does not apply, instead of averaging a -1 or returning NaN.
//!
//! A unit is empty only for a column that is not a quantity: an identifier (a flow index, a
//! packet id, a seed) or a label (a dictionary or string column). Counts name what they count
//! (`timeouts`, `segments`, `episodes`); dimensionless ratios are `1`.
//!
//! docs/results.md documents every column again at length; `tests/test_docs.py` holds its
//! tables to the metadata the files carry (name, type and unit).

use crate::table::ColumnData;

/// A column's type in the tables (Arrow: int32, int64, float64, dictionary<string>, string).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    I32,
    I64,
    F64,
    /// Dictionary-encoded strings (`ColumnData::Dict`).
    Dict,
    /// Plain strings: written by the Python side only (a sweep's `run_id`, `status`, `error`).
    Str,
}

impl Type {
    pub fn name(self) -> &'static str {
        match self {
            Type::I32 => "int32",
            Type::I64 => "int64",
            Type::F64 => "float64",
            Type::Dict => "dictionary<string>",
            Type::Str => "string",
        }
    }

    /// The type of a column's data.
    pub fn of(data: &ColumnData) -> Type {
        match data {
            ColumnData::I32(_) => Type::I32,
            ColumnData::I64(_) => Type::I64,
            ColumnData::F64(_) => Type::F64,
            ColumnData::Dict(..) => Type::Dict,
        }
    }
}

/// What stands for "does not apply" (null in the tables) in a column's compact vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Null {
    /// Every row has a value.
    Never,
    /// -1 (an integer column whose values are never negative; a dictionary code).
    Minus1,
    /// NaN (a float column).
    NaN,
}

impl Null {
    pub fn name(self) -> &'static str {
        match self {
            Null::Never => "never",
            Null::Minus1 => "-1",
            Null::NaN => "nan",
        }
    }
}

/// One column of a result table. `name` may hold a placeholder: `<d>` (a detector: eifel,
/// dsack, frto, linux), or `<path>_<stage>` (a stage of a path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnSpec {
    pub name: &'static str,
    pub ty: Type,
    pub unit: &'static str,
    pub null: Null,
    pub description: &'static str,
}

const fn col(
    name: &'static str,
    ty: Type,
    unit: &'static str,
    null: Null,
    description: &'static str,
) -> ColumnSpec {
    ColumnSpec {
        name,
        ty,
        unit,
        null,
        description,
    }
}

use Null::{Minus1, NaN, Never};
use Type::{Dict, Str, F64, I32, I64};

/// Detectors whose names fill a `<d>` placeholder, in the columns' order.
pub const DETECTORS: [&str; 4] = ["eifel", "dsack", "frto", "linux"];

/// `runs`: one row per flow (TCP connection or SCTP association).
#[rustfmt::skip]
pub static RUNS: &[ColumnSpec] = &[
    col("flow", I32, "", Never, "flow index (flow[N] in the scenario)"),
    col("seed", I64, "", Never, "master seed of the run"),
    col("goodput_bps", F64, "bit/s", Never,
        "in-order bytes delivered to the receiving app x 8 per second of the flow's lifetime"),
    col("bytes_delivered", I64, "bytes", Never, "in-order bytes delivered to the receiving app"),
    col("rto_count", I64, "timeouts", Never,
        "retransmission timer expirations (SCTP: T3-rtx expiries)"),
    col("rto_spurious_true", I64, "timeouts", Never,
        "of these, spurious by ground truth (the data was delayed, not lost)"),
    col("fast_retx_count", I64, "fast retransmits", Never, "fast retransmits"),
    col("fast_retx_spurious_true", I64, "fast retransmits", Never,
        "of these, spurious by ground truth"),
    col("retx_segments", I64, "segments", Never,
        "retransmitted segments (SCTP: DATA chunks), by timeout or fast retransmit"),
    col("spurious_retx_true", I64, "segments", Never,
        "retransmissions whose bytes an earlier copy had already brought (ground truth)"),
    col("dupacks_rcvd", I64, "ACKs", Minus1, "duplicate ACKs received by the sender; null for SCTP"),
    col("dsacks_rcvd", I64, "ACKs", Minus1, "ACKs carrying a DSACK block; null for SCTP"),
    col("paws_rejected", I64, "segments", Minus1,
        "data segments the receiver discarded by PAWS (RFC 7323 §5.3); null for SCTP"),
    col("segments_sent", I64, "segments", Never,
        "data segments sent, retransmissions included (SCTP: DATA chunks)"),
    col("rtt_mean_s", F64, "s", NaN, "mean of the RTT samples; null without samples"),
    col("rtt_sd_s", F64, "s", NaN, "standard deviation of the RTT samples; null without samples"),
    col("rtt_samples", I64, "samples", Never, "number of RTT samples"),
    col("longest_stall_s", F64, "s", Never,
        "longest time in which no new in-order byte reached the receiving app"),
    col("completion_time_s", F64, "s", NaN,
        "from the flow's start to the ACK of a file app's last byte; null for other apps and \
         unfinished transfers"),
    col("mss", I64, "bytes", Never,
        "maximum segment size (payload; SCTP: a full DATA chunk's payload)"),
    col("cc", Dict, "", Never, "the flow's congestion control (sctp for SCTP)"),
    col("rtt_min_s", F64, "s", NaN, "smallest RTT sample; null without samples"),
    col("qdelay_mean_s", F64, "s", NaN,
        "mean queueing delay, RTT - rtt_min_s over the RTT samples; null without samples"),
    col("qdelay_p95_s", F64, "s", NaN,
        "95th percentile of the queueing delay (0.1 % histogram bins); null without samples"),
    col("rto_per_pkt", F64, "timeouts/segment", NaN,
        "rto_count / segments_sent; null when nothing was sent"),
    col("dupacks_per_pkt", F64, "ACKs/segment", NaN,
        "dupacks_rcvd / segments_sent; null when nothing was sent, and for SCTP"),
    col("spurious_retx_per_pkt", F64, "1", NaN,
        "spurious_retx_true / segments_sent; null when nothing was sent"),
    col("retx_per_pkt", F64, "1", NaN, "retx_segments / segments_sent; null when nothing was sent"),
    col("jfi", F64, "1", NaN,
        "per run: Jain's fairness index over the flows' goodput_bps; null when no flow \
         delivered anything"),
    col("bottleneck_utilisation", F64, "1", NaN,
        "per run: the busiest rate stage's share of the run's span spent serialising; null \
         without a rate stage"),
    col("aggregate_goodput_bps", F64, "bit/s", NaN,
        "per run: all flows' bytes_delivered x 8 over the run's span; null for an empty span"),
    col("spurious", Dict, "", Minus1,
        "the flow's spurious-timeout detectors joined by + (empty: none); null for SCTP"),
    col("response", Dict, "", Minus1,
        "the response to a spurious verdict: none, eifel or undo; null for SCTP"),
    col("rto_episodes", I64, "episodes", Never, "loss-recovery episodes started by a timeout"),
    col("rto_episodes_spurious_true", I64, "episodes", Never, "of these, spurious by ground truth"),
    col("rto_spurious_detected", I64, "episodes", Minus1,
        "timeout episodes a detector declared spurious; null for SCTP"),
    col("fr_episodes", I64, "episodes", Never,
        "loss-recovery episodes started by a fast retransmit"),
    col("fr_episodes_spurious_true", I64, "episodes", Never, "of these, spurious by ground truth"),
    col("fr_spurious_detected", I64, "episodes", Minus1,
        "fast-retransmit episodes a detector declared spurious; null for SCTP"),
    col("undo_count", I64, "responses", Minus1,
        "responses applied to spurious verdicts (eifel or undo); null for SCTP"),
    col("tlp_count", I64, "probes", Minus1, "tail loss probes sent; null for SCTP"),
    col("tlp_recoveries", I64, "probes", Minus1,
        "probes whose retransmission repaired a loss; null for SCTP"),
    col("rack_loss_count", I64, "segments", Minus1, "segments RACK marked lost; null for SCTP"),
    col("local_cwr_count", I64, "reductions", Minus1,
        "window reductions because the sender's own interface queue refused a segment; null \
         for SCTP"),
    col("moderate_cwnd_cuts", I64, "reductions", Minus1,
        "cwnd cuts to the flight + 3 segments when an ACK reaches the Loss state's high_seq \
         (moderate_cwnd, Linux 3.10-4.x); null for SCTP"),
    col("timeout_time_s", F64, "s", NaN,
        "time in timeout recovery (RTO to the ACK or undo that ends the episode); null for SCTP"),
    col("rto_wait_s", F64, "s", NaN,
        "the expired retransmission timeouts summed, backoff included; null for SCTP"),
    col("transport", Dict, "", Never, "the flow's protocol: tcp or sctp"),
    col("failovers", I64, "failovers", Minus1,
        "SCTP: changes of the destination new data goes to; null for TCP"),
    col("time_to_failover_s", F64, "s", NaN,
        "SCTP: from the T3-rtx timer that began the timeouts on the destination left to the \
         first failover; null without failover and for TCP"),
    col("failover_at_s", F64, "s", NaN,
        "SCTP: simulated time of the first failover; null without failover and for TCP"),
    col("data_primary_bytes", I64, "bytes", Minus1,
        "SCTP: wire bytes sent to the initial primary destination; null for TCP"),
    col("data_other_bytes", I64, "bytes", Minus1,
        "SCTP: wire bytes sent to the other destinations; null for TCP"),
    col("heartbeats_sent", I64, "chunks", Minus1, "SCTP: HEARTBEAT chunks sent; null for TCP"),
    col("setup_time_s", F64, "s", NaN,
        "SCTP: from the INIT to the COOKIE-ACK; null if never established and for TCP"),
    col("assoc_failed", I64, "flag", Minus1,
        "SCTP: 1 if the association failed (Association.Max.Retrans exceeded), else 0; null \
         for TCP"),
    col("det_<d>_detections", I64, "episodes", Minus1,
        "episodes detector <d> declared spurious (tp + fp); null when <d> is off"),
    col("det_<d>_tp", I64, "episodes", Minus1,
        "episodes <d> declared spurious that were spurious; null when <d> is off"),
    col("det_<d>_fp", I64, "episodes", Minus1,
        "episodes <d> declared spurious that were genuine; null when <d> is off"),
    col("det_<d>_fn", I64, "episodes", Minus1,
        "spurious episodes <d> did not declare spurious; null when <d> is off"),
    col("det_<d>_tn", I64, "episodes", Minus1,
        "genuine episodes <d> did not declare spurious; null when <d> is off"),
    col("det_<d>_undecided", I64, "episodes", Minus1,
        "episodes <d> left undecided (counted in fn/tn); null when <d> is off"),
    col("det_<d>_delay_mean_s", F64, "s", NaN,
        "mean time from an episode's start to <d>'s spurious verdict; null without detections"),
    col("drops_<path>_<stage>", I64, "packets", Never,
        "this flow's packets dropped at that stage of that path"),
    col("drops_total", I64, "packets", Never, "all of this flow's dropped packets"),
];

/// `timeseries`: sender state on change, then markers, then SCTP per-destination rows.
#[rustfmt::skip]
pub static TIMESERIES: &[ColumnSpec] = &[
    col("t_ns", I64, "ns", Never, "simulated time"),
    col("flow", I32, "", Never, "flow index"),
    col("var", Dict, "", Never, "variable name (docs/results.md lists them with their units)"),
    col("value", F64, "per var", Never,
        "the variable's new value, in its unit (bytes, s, or a code); markers: their verdict"),
    col("seq", I64, "bytes", Minus1,
        "markers of retransmissions and episodes: first byte (SCTP: TSN) of the \
         retransmission concerned; null on other rows"),
    col("tx", I32, "retransmissions", Minus1,
        "those markers: the retransmission's transmission number (0 = first); null on other \
         rows and for SCTP"),
    col("dest", I32, "", Minus1,
        "SCTP: the destination a dest_* row or rto_expiry marker is about, the one left for a \
         failover; null otherwise"),
];

/// `packets`: one row per packet event.
#[rustfmt::skip]
pub static PACKETS: &[ColumnSpec] = &[
    col("t_ns", I64, "ns", Never, "simulated time"),
    col("flow", I32, "", Never, "flow index"),
    col("pkt", I64, "", Never, "unique id of one transmission (data or ACK)"),
    col("event", Dict, "", Never,
        "send, retransmit, tlp, ack, stage_enter, stage_exit, drop, deliver, heartbeat, control"),
    col("path", Dict, "", Never, "path name (fwd: data direction, rev: ACK direction)"),
    col("stage", Dict, "", Minus1,
        "stage_enter, stage_exit, drop: the stage's name (or type); null on other rows"),
    col("kind", Dict, "", Never, "data or ack"),
    col("seq", I64, "bytes", Minus1,
        "first payload byte (SCTP: first DATA chunk's TSN); null for a packet without data"),
    col("ack", I64, "bytes", Minus1,
        "cumulative ACK carried (SCTP: the SACK's cumulative TSN ack); null for a packet \
         without one"),
    col("len", I32, "bytes", Never, "payload bytes"),
    col("size", I32, "bytes", Never, "wire size: payload and headers"),
    col("tx", I32, "retransmissions", Minus1,
        "0 = first transmission of these bytes, k = k-th retransmission; null for a packet \
         without data"),
    col("cause", Dict, "", Minus1, "drop: why (queue_full, random, ...); null on other rows"),
    col("dest", I32, "", Minus1,
        "SCTP: the destination whose path pair the packet travels; null for TCP"),
    col("harq_tx", I32, "transmissions", Minus1,
        "a harq stage's stage_exit or drop: the HARQ transmissions the packet took; null on \
         other rows"),
    col("harq_delay_us", I32, "µs", Minus1,
        "the same rows: from arrival at the harq stage until decoded or given up; null on \
         other rows"),
];

/// Columns a sweep adds to its tables (`run_id` to all three; the rest to `runs`). The metric
/// columns of a failed run's row are null.
#[rustfmt::skip]
pub static SWEEP: &[ColumnSpec] = &[
    col("run_id", Str, "", Never, "the run: p<point>-r<replication>"),
    col("point", I32, "", Never, "grid point index (points.json has its overrides)"),
    col("replication", I32, "", Never, "replication index at the grid point"),
    col("status", Str, "", Never, "ok or failed"),
    col("error", Str, "", Minus1, "a failed run's error message; null for ok runs"),
];

/// The columns of table `name` (`runs`, `timeseries` or `packets`; `series`, the emulator's
/// capture-derived part of a timeseries table, is `timeseries`; `sweep` the columns a sweep
/// adds).
pub fn table(name: &str) -> Option<&'static [ColumnSpec]> {
    match name {
        "runs" => Some(RUNS),
        "timeseries" | "series" => Some(TIMESERIES),
        "packets" => Some(PACKETS),
        "sweep" => Some(SWEEP),
        _ => None,
    }
}

/// A column's spec with its placeholders filled: the description names the detector of a
/// `det_<d>_*` column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub spec: ColumnSpec,
    pub description: String,
}

/// Whether `name` matches a spec name with placeholders.
fn matches(pattern: &str, name: &str) -> Option<Option<&'static str>> {
    if let Some((pre, post)) = pattern.split_once("<d>") {
        return DETECTORS
            .iter()
            .find(|d| {
                name.strip_prefix(pre)
                    .and_then(|r| r.strip_prefix(**d))
                    .is_some_and(|r| r == post)
            })
            .map(|d| Some(*d));
    }
    if let Some(pre) = pattern.strip_suffix("<path>_<stage>") {
        // A stage column: a path name, `_`, a stage name, each non-empty.
        return name
            .strip_prefix(pre)
            .filter(|r| r.len() > 2 && r.contains('_') && !r.starts_with('_'))
            .map(|_| None);
    }
    (pattern == name).then_some(None)
}

/// The spec of column `column` of table `table` (an exact name before a pattern:
/// `drops_total` is not a stage).
pub fn column(table_name: &str, column: &str) -> Option<Resolved> {
    let specs = table(table_name)?;
    let exact = specs.iter().find(|s| s.name == column);
    let (spec, det) = match exact {
        Some(s) => (s, None),
        None => specs
            .iter()
            .find_map(|s| matches(s.name, column).map(|d| (s, d)))?,
    };
    let description = match det {
        Some(d) => spec.description.replace("<d>", d),
        None => spec.description.to_string(),
    };
    Some(Resolved {
        spec: *spec,
        description,
    })
}

/// The validity bitmap (Arrow layout: bit i of byte i/8, least significant first; 1 = a value)
/// of a column whose "does not apply" marker is `null`; `None` when every row has a value.
pub fn validity(data: &ColumnData, null: Null) -> Option<Vec<u8>> {
    fn bitmap<T>(v: &[T], is_null: impl Fn(&T) -> bool) -> Option<Vec<u8>> {
        if !v.iter().any(&is_null) {
            return None;
        }
        let mut bits = vec![0u8; v.len().div_ceil(8)];
        for (i, x) in v.iter().enumerate() {
            if !is_null(x) {
                bits[i / 8] |= 1 << (i % 8);
            }
        }
        Some(bits)
    }
    match (data, null) {
        // Dictionary codes: -1 is null whatever the spec says.
        (ColumnData::Dict(codes, _), _) => bitmap(codes, |&c| c < 0),
        (_, Null::Never) => None,
        (ColumnData::I64(v), Null::Minus1) => bitmap(v, |&x| x == -1),
        (ColumnData::I32(v), Null::Minus1) => bitmap(v, |&x| x == -1),
        (ColumnData::F64(v), Null::NaN) => bitmap(v, |x| x.is_nan()),
        // A marker that cannot occur in this type: nothing is null.
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_has_a_description_and_a_marker_its_type_can_hold() {
        for name in ["runs", "timeseries", "packets", "sweep"] {
            for s in table(name).unwrap() {
                assert!(!s.description.is_empty(), "{name}.{}", s.name);
                let ok = matches!(
                    (s.ty, s.null),
                    (_, Null::Never)
                        | (Type::I32 | Type::I64 | Type::Dict | Type::Str, Null::Minus1)
                        | (Type::F64, Null::NaN)
                );
                assert!(ok, "{name}.{}: {:?} cannot hold {:?}", s.name, s.ty, s.null);
                // A quantity has a unit; only identifiers and labels go without.
                let label = matches!(s.ty, Type::Dict | Type::Str)
                    || ["flow", "seed", "pkt", "dest", "point", "replication"].contains(&s.name);
                assert_eq!(
                    s.unit.is_empty(),
                    label,
                    "{name}.{}: unit {:?}",
                    s.name,
                    s.unit
                );
            }
        }
    }

    #[test]
    fn placeholders_match_their_columns_only() {
        let r = column("runs", "det_frto_tp").unwrap();
        assert_eq!(r.spec.name, "det_<d>_tp");
        assert!(r.description.contains("frto"), "{}", r.description);
        assert!(column("runs", "det_bogus_tp").is_none());
        assert_eq!(
            column("runs", "det_eifel_delay_mean_s").unwrap().spec.name,
            "det_<d>_delay_mean_s"
        );
        assert_eq!(
            column("runs", "drops_fwd_rate").unwrap().spec.name,
            "drops_<path>_<stage>"
        );
        assert_eq!(
            column("runs", "drops_total").unwrap().spec.name,
            "drops_total"
        );
        assert!(column("runs", "drops_").is_none());
        assert!(column("runs", "nope").is_none());
        assert!(column("nope", "flow").is_none());
        assert_eq!(column("series", "value").unwrap().spec.unit, "per var");
    }

    #[test]
    fn validity_marks_the_markers_and_nothing_else() {
        let v = ColumnData::I64(vec![0, -1, 5, -1, 7, 8, 9, 10, -1]);
        assert_eq!(validity(&v, Null::Minus1), Some(vec![0b1111_0101, 0b0]));
        assert_eq!(validity(&v, Null::Never), None);
        assert_eq!(validity(&ColumnData::I32(vec![0, 3]), Null::Minus1), None);
        let f = ColumnData::F64(vec![1.0, f64::NAN, -1.0]);
        assert_eq!(validity(&f, Null::NaN), Some(vec![0b101]));
        let d = ColumnData::Dict(vec![0, -1], vec!["a".into()]);
        assert_eq!(validity(&d, Null::Never), Some(vec![0b01]));
    }
}
