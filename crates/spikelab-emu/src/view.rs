//! The kernel view: the numbers of a validated scenario that the kernel side of an emulation
//! needs, in plain units (ns, bytes, segments, bit/s): what `spikelab emulate` maps to socket
//! options, sysctls, routes and usrsctp settings. Python reads it as JSON typed by
//! `python/spikelab/emulate/view.py`, whose `TypedDict`s mirror these structs field by field
//! (`tests/test_emu_view.py` checks the two agree; docs/emulation.md, "The kernel view").

use serde::Serialize;
use spikelab_net::{QueueLimit, Stage};
use spikelab_scenario::build_stage;
use spikelab_scenario::{AppKind, EstimatorSpec, Scenario, VariantSpec};
use spikelab_sctp::{MaxBurstMode, SctpConfig};
use spikelab_tcp::RtoAlgorithm;

/// A scenario's kernel view (Python: `KernelView`).
#[derive(Clone, Debug, Serialize)]
pub struct KernelView {
    /// `sim.duration`, ns.
    pub duration_ns: u64,
    /// `sim.seed`.
    pub seed: u64,
    /// One per `[[flow]]`, in the scenario's order.
    pub flows: Vec<FlowView>,
    /// The paths whose first stage is the sender's own queue (`backpressure = true`).
    pub backpressure: Vec<OwnQueueView>,
}

/// One flow (Python: `FlowView`).
#[derive(Clone, Debug, Serialize)]
pub struct FlowView {
    /// When the flow starts, ns from time 0.
    pub start_ns: u64,
    /// The application: `bulk` or `file`.
    pub app: AppKind,
    /// A file's size, bytes (`None` for bulk).
    pub size: Option<u64>,
    /// The congestion control's name (`reno`, `cubic`, ...).
    pub cc: &'static str,
    /// The data path's name.
    pub fwd: String,
    /// The ACK path's name.
    pub rev: String,
    /// The SCTP endpoint settings (`None` for a TCP flow).
    pub sctp: Option<SctpView>,
    /// The TCP settings (given for an SCTP flow too, from `[flow.tcp]`'s defaults).
    pub tcp: TcpView,
}

/// A flow's TCP settings (Python: `TcpView`), as spikelab-tcp's `TcpConfig` has them.
#[derive(Clone, Debug, Serialize)]
pub struct TcpView {
    /// The scenario's own spelling: `reno`, `newreno` or `sack`.
    pub variant: VariantSpec,
    /// Maximum segment size, payload bytes.
    pub mss: u32,
    /// Initial congestion window, segments.
    pub initial_window: u32,
    /// Initial slow-start threshold, bytes (`None`: arbitrarily high).
    pub initial_ssthresh: Option<u64>,
    /// Receive window, bytes.
    pub rwnd: u64,
    /// Appropriate byte counting (RFC 3465), on or off.
    pub abc: bool,
    /// Duplicate ACKs that trigger fast retransmit, count.
    pub dupthresh: u32,
    /// RFC 3042 limited transmit, on or off.
    pub limited_transmit: bool,
    /// No fast retransmit after a timeout until `recover` is passed (RFC 6582), on or off.
    pub block_fr_after_rto: bool,
    /// RFC 7323 timestamps, on or off.
    pub timestamps: bool,
    /// RFC 2018 SACK, on or off.
    pub sack: bool,
    /// RFC 2883 DSACK, on or off.
    pub dsack: bool,
    /// Delayed ACK, on or off.
    pub delayed_ack: bool,
    /// Delayed-ACK timeout (its least value with `delack_ato`), ns.
    pub delack_timeout_ns: u64,
    /// The delayed-ACK timeout adapts as Linux's `ato` does, on or off.
    pub delack_ato: bool,
    /// Full-sized segments that force an ACK, count.
    pub delack_segments: u32,
    /// Receiver SACK compression: ACKs held back at most, count (0: off).
    pub comp_sack: u32,
    /// The compressed-ACK timer's bound, ns.
    pub comp_sack_delay_ns: u64,
    /// The compressed-ACK timer's slack, ns.
    pub comp_sack_slack_ns: u64,
    /// The timers' tick rate, Hz (0: exact timers).
    pub timer_hz: u32,
    /// The retransmission timer.
    pub rto: RtoView,
}

/// A flow's retransmission timer (Python: `RtoView`).
#[derive(Clone, Debug, Serialize)]
pub struct RtoView {
    /// The estimator: `rfc6298`, `linux` or `ns2`.
    pub estimator: EstimatorSpec,
    /// SRTT gain, dimensionless (0.125 for `linux` and `ns2`).
    pub alpha: f64,
    /// RTTVAR gain, dimensionless (0.25 for `linux` and `ns2`).
    pub beta: f64,
    /// RTTVAR multiplier K, dimensionless (4 for `linux` and `ns2`).
    pub k: f64,
    /// Lower bound, ns.
    pub min_ns: u64,
    /// Upper bound, ns.
    pub max_ns: u64,
    /// RTO before the first RTT sample, ns.
    pub initial_ns: u64,
}

/// An SCTP flow's endpoint settings (Python: `SctpView`): what the emulated SCTP stack is
/// given, as spikelab-sctp's `SctpConfig` has them.
#[derive(Clone, Debug, Serialize)]
pub struct SctpView {
    /// The profile's name: `rfc9260`, `rfc4960` or `ns2`.
    pub profile: &'static str,
    /// The peer's addresses (paths of the association), count.
    pub destinations: usize,
    /// The primary destination's index, from 0.
    pub primary: usize,
    /// RTO.Initial, ns.
    pub rto_initial_ns: u64,
    /// RTO.Min, ns.
    pub rto_min_ns: u64,
    /// RTO.Max, ns.
    pub rto_max_ns: u64,
    /// RTO.Alpha, dimensionless.
    pub rto_alpha: f64,
    /// RTO.Beta, dimensionless.
    pub rto_beta: f64,
    /// A backed-off RTO is capped at RTO.Max, on or off.
    pub rto_max_cap_on_backoff: bool,
    /// Max.Burst, packets (`None`: no limit).
    pub max_burst: Option<u32>,
    /// How Max.Burst applies: `packets`, `clamp` or `after_fast_rtx`.
    pub max_burst_mode: &'static str,
    /// Association.Max.Retrans, count.
    pub assoc_max_retrans: u32,
    /// Path.Max.Retrans, count.
    pub path_max_retrans: u32,
    /// Max.Init.Retransmits, count.
    pub max_init_retransmits: u32,
    /// Heartbeats on idle destinations, on or off.
    pub heartbeats: bool,
    /// HB.interval, ns.
    pub hb_interval_ns: u64,
    /// SACK.Delay, ns.
    pub sack_delay_ns: u64,
    /// Packets carrying DATA that force a SACK, count.
    pub sack_freq: u32,
    /// Path MTU, bytes.
    pub mtu: u32,
    /// The receiver's buffer, bytes.
    pub recv_buffer: u32,
    /// PotentiallyFailed threshold, count (`None`: no PF state).
    pub pf_max_retrans: Option<u32>,
    /// Primary.Switchover.Max.Retrans, count (`None`: off).
    pub psmr: Option<u32>,
    /// Payload bytes per DATA chunk (the user message; default: what fills the MTU).
    pub message_size: u32,
    /// Halve an idle destination's cwnd once per RTO (RFC 9260 §7.2.1), on or off.
    pub cwnd_validation: bool,
}

/// A path whose first stage is the sender's own queue (Python: `OwnQueueView`): its rate and
/// capacity, for a qdisc on the sending host's interface.
#[derive(Clone, Debug, Serialize)]
pub struct OwnQueueView {
    /// The path's name.
    pub path: String,
    /// The stage's rate as built (before any change), bit/s.
    pub rate_bps: u64,
    /// The queue's capacity, packets (`None` when given in bytes).
    pub queue_packets: Option<u32>,
    /// The queue's capacity, bytes (`None` when given in packets).
    pub queue_bytes: Option<u64>,
    /// The rate never changes (no schedule, trace, switching or adapt).
    pub constant: bool,
}

impl KernelView {
    /// The view as JSON text, keys sorted at every level (as `serde_json::Value` orders them).
    pub fn to_json(&self) -> String {
        serde_json::to_value(self)
            .expect("a kernel view has only numbers, strings and lists")
            .to_string()
    }
}

/// The kernel view of a validated scenario.
pub fn scenario_view(sc: &Scenario) -> KernelView {
    let flows = sc
        .flow
        .iter()
        .map(|f| {
            let c = f.tcp_config();
            let (estimator, alpha, beta, k) = match c.rto.algorithm {
                RtoAlgorithm::Rfc6298 { alpha, beta, k, .. } => {
                    (EstimatorSpec::Rfc6298, alpha, beta, k)
                }
                RtoAlgorithm::Linux => (EstimatorSpec::Linux, 0.125, 0.25, 4.0),
                RtoAlgorithm::Ns2 { .. } => (EstimatorSpec::Ns2, 0.125, 0.25, 4.0),
            };
            FlowView {
                start_ns: f.start.0.as_nanos(),
                app: f.app.kind,
                size: f.app.size.map(|b| b.0),
                cc: f.cc.algo(),
                fwd: f.fwd.clone(),
                rev: f.rev.clone(),
                sctp: f.sctp_config().map(|s| sctp_view(&s)),
                tcp: TcpView {
                    variant: f.tcp.variant,
                    mss: c.mss,
                    initial_window: c.initial_window,
                    initial_ssthresh: c.initial_ssthresh,
                    rwnd: c.rwnd,
                    abc: c.abc,
                    dupthresh: c.dupthresh,
                    limited_transmit: c.limited_transmit,
                    block_fr_after_rto: c.block_fr_after_rto,
                    timestamps: c.timestamps,
                    sack: c.sack,
                    dsack: c.dsack,
                    delayed_ack: c.delayed_ack,
                    delack_timeout_ns: c.delack_timeout.as_nanos(),
                    delack_ato: c.delack_ato,
                    delack_segments: c.delack_segments,
                    comp_sack: c.comp_sack,
                    comp_sack_delay_ns: c.comp_sack_delay.as_nanos(),
                    comp_sack_slack_ns: c.comp_sack_slack.as_nanos(),
                    timer_hz: c.timer_hz,
                    rto: RtoView {
                        estimator,
                        alpha,
                        beta,
                        k,
                        min_ns: c.rto.min.as_nanos(),
                        max_ns: c.rto.max.as_nanos(),
                        initial_ns: c.rto.initial.as_nanos(),
                    },
                },
            }
        })
        .collect();
    let backpressure = sc
        .path
        .iter()
        .filter(|(_, p)| p.stage.first().is_some_and(|s| s.config.own_queue()))
        .filter_map(
            |(name, p)| match build_stage(name, 0, &p.stage, sc.sim.seed) {
                Stage::Rate(r) => {
                    let (queue_packets, queue_bytes) = match r.limit() {
                        QueueLimit::Packets(n) => (Some(n), None),
                        QueueLimit::Bytes(b) => (None, Some(b)),
                    };
                    Some(OwnQueueView {
                        path: name.clone(),
                        rate_bps: r.rate_bps(),
                        queue_packets,
                        queue_bytes,
                        constant: r.is_constant(),
                    })
                }
                _ => None,
            },
        )
        .collect();
    KernelView {
        duration_ns: sc.sim.duration.0.as_nanos(),
        seed: sc.sim.seed,
        flows,
        backpressure,
    }
}

/// An SCTP flow's endpoint settings.
fn sctp_view(s: &SctpConfig) -> SctpView {
    SctpView {
        profile: s.profile.name(),
        destinations: s.n_destinations,
        primary: s.primary,
        rto_initial_ns: s.rto_initial.as_nanos(),
        rto_min_ns: s.rto_min.as_nanos(),
        rto_max_ns: s.rto_max.as_nanos(),
        rto_alpha: s.rto_alpha,
        rto_beta: s.rto_beta,
        rto_max_cap_on_backoff: s.rto_max_cap_on_backoff,
        max_burst: s.max_burst,
        max_burst_mode: match s.max_burst_mode {
            MaxBurstMode::LimitPackets => "packets",
            MaxBurstMode::ClampCwnd => "clamp",
            MaxBurstMode::AfterFastRetransmit => "after_fast_rtx",
        },
        assoc_max_retrans: s.assoc_max_retrans,
        path_max_retrans: s.path_max_retrans,
        max_init_retransmits: s.max_init_retransmits,
        heartbeats: s.heartbeats,
        hb_interval_ns: s.hb_interval.as_nanos(),
        sack_delay_ns: s.sack_delay.as_nanos(),
        sack_freq: s.sack_freq,
        mtu: s.mtu,
        recv_buffer: s.recv_buffer,
        pf_max_retrans: s.pf_max_retrans,
        psmr: s.psmr,
        message_size: s.message_size.unwrap_or(s.max_payload()),
        cwnd_validation: s.cwnd_validation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The view of a scenario given as TOML text.
    fn view_of(text: &str) -> KernelView {
        let sc = spikelab_scenario::parse(text, &[], std::path::Path::new(".")).unwrap();
        scenario_view(&sc)
    }

    #[test]
    fn durations_are_nanoseconds() {
        let v = view_of("[sim]\nduration = \"3s\"\n[[flow]]\nstart = \"100ms\"\napp = { type = \"file\", size = 5000 }\n[flow.tcp.rto]\nestimator = \"linux\"\n");
        assert_eq!(v.duration_ns, 3_000_000_000);
        let f = &v.flows[0];
        assert_eq!(f.start_ns, 100_000_000);
        assert_eq!(f.size, Some(5000));
        assert_eq!(f.tcp.rto.min_ns, 200_000_000);
        assert_eq!(f.tcp.rto.estimator, EstimatorSpec::Linux);
        assert!(v.backpressure.is_empty());
        assert!(f.sctp.is_none());
        // The JSON spells them as before: lowercase names, null for None.
        let j: Value = serde_json::from_str(&v.to_json()).unwrap();
        assert_eq!(j["flows"][0]["tcp"]["rto"]["estimator"], "linux");
        assert_eq!(j["flows"][0]["app"], "file");
        assert_eq!(j["flows"][0]["sctp"], Value::Null);
    }

    #[test]
    fn an_sctp_flow_gives_its_endpoint_settings() {
        let v = view_of("[[flow]]\nprotocol = \"sctp\"\n[flow.sctp]\nprofile = \"rfc4960\"\nrto_min = \"300ms\"\nheartbeats = false\n");
        let s = v.flows[0].sctp.as_ref().unwrap();
        // RFC 4960 §15: RTO.Initial 3 s, RTO.Max 60 s; Max.Burst 4 by clamping cwnd (§6.1 D).
        assert_eq!(s.rto_initial_ns, 3_000_000_000);
        assert_eq!(s.rto_min_ns, 300_000_000);
        assert_eq!(s.rto_max_ns, 60_000_000_000);
        assert_eq!((s.max_burst, s.max_burst_mode), (Some(4), "clamp"));
        assert_eq!((s.path_max_retrans, s.assoc_max_retrans), (5, 10));
        assert!(!s.heartbeats);
        // An MTU of 1500 less the IPv4, common and DATA chunk headers.
        assert_eq!(s.message_size, 1452);
        assert_eq!(s.destinations, 1);
    }

    #[test]
    fn a_sender_queue_gives_its_rate_and_capacity() {
        let v = view_of("[path.up]\npreset = \"umts-uplink\"\n[path.sw]\n[[path.sw.stage]]\ntype = \"rate\"\nbackpressure = true\nqueue = 7\nswitching = { rates = [\"64kbps\", \"128kbps\"], dwell = \"5s\" }\n[[flow]]\nfwd = \"up\"\n");
        let bp = &v.backpressure;
        assert_eq!(bp.len(), 2);
        // The preset's UE buffer: 58 kbit/s, 12 KB (docs/models.md, UMTS bearer).
        assert_eq!(bp[1].path, "up");
        assert_eq!(bp[1].rate_bps, 58_000);
        assert_eq!(
            (bp[1].queue_bytes, bp[1].queue_packets),
            (Some(12_000), None)
        );
        assert!(bp[1].constant);
        assert_eq!(bp[0].path, "sw");
        assert_eq!(bp[0].queue_packets, Some(7));
        assert!(!bp[0].constant);
    }

    /// The keys of a JSON object, sorted.
    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    /// The view's field names are its JSON keys, which `emulate/view.py` and the emulator read:
    /// renaming one must be done on both sides (and here).
    #[test]
    fn the_json_keys_are_the_documented_ones() {
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let text = std::fs::read_to_string(base.join("umts-downlink.toml")).unwrap();
        let sc = spikelab_scenario::parse(&text, &[], &base).unwrap();
        let mut v: Value = serde_json::from_str(&scenario_view(&sc).to_json()).unwrap();
        assert_eq!(keys(&v), ["backpressure", "duration_ns", "flows", "seed"]);
        assert_eq!(
            keys(&v["backpressure"][0]),
            [
                "constant",
                "path",
                "queue_bytes",
                "queue_packets",
                "rate_bps"
            ]
        );
        let f = &v["flows"][0];
        assert_eq!(
            keys(f),
            ["app", "cc", "fwd", "rev", "sctp", "size", "start_ns", "tcp"]
        );
        assert_eq!(
            keys(&f["tcp"]),
            [
                "abc",
                "block_fr_after_rto",
                "comp_sack",
                "comp_sack_delay_ns",
                "comp_sack_slack_ns",
                "delack_ato",
                "delack_segments",
                "delack_timeout_ns",
                "delayed_ack",
                "dsack",
                "dupthresh",
                "initial_ssthresh",
                "initial_window",
                "limited_transmit",
                "mss",
                "rto",
                "rwnd",
                "sack",
                "timer_hz",
                "timestamps",
                "variant",
            ]
        );
        assert_eq!(
            keys(&f["tcp"]["rto"]),
            [
                "alpha",
                "beta",
                "estimator",
                "initial_ns",
                "k",
                "max_ns",
                "min_ns"
            ]
        );
        // An SCTP flow's settings.
        let text = std::fs::read_to_string(base.join("sctp-failover.toml")).unwrap();
        let sc = spikelab_scenario::parse(&text, &[], &base).unwrap();
        v = serde_json::from_str(&scenario_view(&sc).to_json()).unwrap();
        assert_eq!(
            keys(&v["flows"][0]["sctp"]),
            [
                "assoc_max_retrans",
                "cwnd_validation",
                "destinations",
                "hb_interval_ns",
                "heartbeats",
                "max_burst",
                "max_burst_mode",
                "max_init_retransmits",
                "message_size",
                "mtu",
                "path_max_retrans",
                "pf_max_retrans",
                "primary",
                "profile",
                "psmr",
                "recv_buffer",
                "rto_alpha",
                "rto_beta",
                "rto_initial_ns",
                "rto_max_cap_on_backoff",
                "rto_max_ns",
                "rto_min_ns",
                "sack_delay_ns",
                "sack_freq",
            ]
        );
        assert_eq!(v["flows"][0]["sctp"]["max_burst_mode"], json!("packets"));
    }
}
