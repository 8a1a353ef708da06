//! The numbers of a validated scenario that the kernel side of an emulation needs, in plain
//! units (ns, bytes, segments), as JSON: what `spikelab emulate` maps to socket options,
//! sysctls and routes.

use serde_json::{json, Value};
use spikelab_net::{QueueLimit, Stage};
use spikelab_scenario::build_stage;
use spikelab_scenario::{AppKind, Scenario};
use spikelab_sctp::{MaxBurstMode, SctpConfig};
use spikelab_tcp::RtoAlgorithm;

pub fn scenario_view(sc: &Scenario) -> Value {
    let flows: Vec<Value> = sc
        .flow
        .iter()
        .map(|f| {
            let c = f.tcp_config();
            let (estimator, alpha, beta, k) = match c.rto.algorithm {
                RtoAlgorithm::Rfc6298 { alpha, beta, k, .. } => ("rfc6298", alpha, beta, k),
                RtoAlgorithm::Linux => ("linux", 0.125, 0.25, 4.0),
                RtoAlgorithm::Ns2 { .. } => ("ns2", 0.125, 0.25, 4.0),
            };
            json!({
                "start_ns": f.start.0.as_nanos(),
                "app": match f.app.kind { AppKind::Bulk => "bulk", AppKind::File => "file" },
                "size": f.app.size.map(|b| b.0),
                "cc": f.cc.algo(),
                "fwd": f.fwd,
                "rev": f.rev,
                "sctp": f.sctp_config().map(|s| sctp_view(&s)),
                "tcp": {
                    // The scenario's own spelling (`reno`, `newreno`, `sack`).
                    "variant": f.tcp.variant,
                    "mss": c.mss,
                    "initial_window": c.initial_window,
                    "initial_ssthresh": c.initial_ssthresh,
                    "rwnd": c.rwnd,
                    "abc": c.abc,
                    "dupthresh": c.dupthresh,
                    "limited_transmit": c.limited_transmit,
                    "block_fr_after_rto": c.block_fr_after_rto,
                    "timestamps": c.timestamps,
                    "sack": c.sack,
                    "dsack": c.dsack,
                    "delayed_ack": c.delayed_ack,
                    "delack_timeout_ns": c.delack_timeout.as_nanos(),
                    "delack_ato": c.delack_ato,
                    "delack_segments": c.delack_segments,
                    "comp_sack": c.comp_sack,
                    "comp_sack_delay_ns": c.comp_sack_delay.as_nanos(),
                    "comp_sack_slack_ns": c.comp_sack_slack.as_nanos(),
                    "timer_hz": c.timer_hz,
                    "rto": {
                        "estimator": estimator,
                        "alpha": alpha,
                        "beta": beta,
                        "k": k,
                        "min_ns": c.rto.min.as_nanos(),
                        "max_ns": c.rto.max.as_nanos(),
                        "initial_ns": c.rto.initial.as_nanos(),
                    },
                },
            })
        })
        .collect();
    // Paths whose first stage is the sender's own queue (`backpressure`): its rate and
    // capacity, for a qdisc on the sending host's interface.
    let backpressure: Vec<Value> = sc
        .path
        .iter()
        .filter(|(_, p)| p.stage.first().is_some_and(|s| s.config.own_queue()))
        .filter_map(
            |(name, p)| match build_stage(name, 0, &p.stage, sc.sim.seed) {
                Stage::Rate(r) => {
                    let (packets, bytes) = match r.limit() {
                        QueueLimit::Packets(n) => (Some(n as u64), None),
                        QueueLimit::Bytes(b) => (None, Some(b)),
                    };
                    Some(json!({
                        "path": name,
                        "rate_bps": r.rate_bps(),
                        "queue_packets": packets,
                        "queue_bytes": bytes,
                        "constant": r.is_constant(),
                    }))
                }
                _ => None,
            },
        )
        .collect();
    json!({
        "duration_ns": sc.sim.duration.0.as_nanos(),
        "seed": sc.sim.seed,
        "flows": flows,
        "backpressure": backpressure,
    })
}

/// An SCTP flow's endpoint settings (what the emulated SCTP stack is given).
fn sctp_view(s: &SctpConfig) -> Value {
    json!({
        "profile": s.profile.name(),
        "destinations": s.n_destinations,
        "primary": s.primary,
        "rto_initial_ns": s.rto_initial.as_nanos(),
        "rto_min_ns": s.rto_min.as_nanos(),
        "rto_max_ns": s.rto_max.as_nanos(),
        "rto_alpha": s.rto_alpha,
        "rto_beta": s.rto_beta,
        "rto_max_cap_on_backoff": s.rto_max_cap_on_backoff,
        "max_burst": s.max_burst,
        "max_burst_mode": match s.max_burst_mode {
            MaxBurstMode::LimitPackets => "packets",
            MaxBurstMode::ClampCwnd => "clamp",
            MaxBurstMode::AfterFastRetransmit => "after_fast_rtx",
        },
        "assoc_max_retrans": s.assoc_max_retrans,
        "path_max_retrans": s.path_max_retrans,
        "max_init_retransmits": s.max_init_retransmits,
        "heartbeats": s.heartbeats,
        "hb_interval_ns": s.hb_interval.as_nanos(),
        "sack_delay_ns": s.sack_delay.as_nanos(),
        "sack_freq": s.sack_freq,
        "mtu": s.mtu,
        "recv_buffer": s.recv_buffer,
        "pf_max_retrans": s.pf_max_retrans,
        "psmr": s.psmr,
        "message_size": s.message_size.unwrap_or(s.max_payload()),
        "cwnd_validation": s.cwnd_validation,
    })
}

#[cfg(test)]
mod tests {
    /// The view of a scenario given as TOML text.
    fn view_of(text: &str) -> Value {
        let sc = spikelab_scenario::parse(text, &[], std::path::Path::new(".")).unwrap();
        scenario_view(&sc)
    }

    use super::*;

    #[test]
    fn durations_are_nanoseconds() {
        let v = view_of("[sim]\nduration = \"3s\"\n[[flow]]\nstart = \"100ms\"\napp = { type = \"file\", size = 5000 }\n[flow.tcp.rto]\nestimator = \"linux\"\n");
        assert_eq!(v["duration_ns"], 3_000_000_000u64);
        assert_eq!(v["flows"][0]["start_ns"], 100_000_000u64);
        assert_eq!(v["flows"][0]["size"], 5000);
        assert_eq!(v["flows"][0]["tcp"]["rto"]["min_ns"], 200_000_000u64);
        assert_eq!(v["flows"][0]["tcp"]["rto"]["estimator"], "linux");
        assert_eq!(v["backpressure"], json!([]));
        assert_eq!(v["flows"][0]["sctp"], Value::Null);
    }

    #[test]
    fn an_sctp_flow_gives_its_endpoint_settings() {
        let s = &view_of("[[flow]]\nprotocol = \"sctp\"\n[flow.sctp]\nprofile = \"rfc4960\"\nrto_min = \"300ms\"\nheartbeats = false\n")["flows"][0]["sctp"];
        // RFC 4960 §15: RTO.Initial 3 s, RTO.Max 60 s; Max.Burst 4 by clamping cwnd (§6.1 D).
        assert_eq!(s["rto_initial_ns"], 3_000_000_000u64);
        assert_eq!(s["rto_min_ns"], 300_000_000u64);
        assert_eq!(s["rto_max_ns"], 60_000_000_000u64);
        assert_eq!(
            (&s["max_burst"], &s["max_burst_mode"]),
            (&json!(4), &json!("clamp"))
        );
        assert_eq!(
            (&s["path_max_retrans"], &s["assoc_max_retrans"]),
            (&json!(5), &json!(10))
        );
        assert_eq!(s["heartbeats"], false);
        // An MTU of 1500 less the IPv4, common and DATA chunk headers.
        assert_eq!(s["message_size"], 1452);
        assert_eq!(s["destinations"], 1);
    }

    #[test]
    fn a_sender_queue_gives_its_rate_and_capacity() {
        let v = view_of("[path.up]\npreset = \"umts-uplink\"\n[path.sw]\n[[path.sw.stage]]\ntype = \"rate\"\nbackpressure = true\nqueue = 7\nswitching = { rates = [\"64kbps\", \"128kbps\"], dwell = \"5s\" }\n[[flow]]\nfwd = \"up\"\n");
        let bp = v["backpressure"].as_array().unwrap();
        assert_eq!(bp.len(), 2);
        // The preset's UE buffer: 58 kbit/s, 12 KB (docs/models.md, UMTS bearer).
        assert_eq!(bp[1]["path"], "up");
        assert_eq!(bp[1]["rate_bps"], 58_000);
        assert_eq!(bp[1]["queue_bytes"], 12_000);
        assert_eq!(bp[1]["queue_packets"], Value::Null);
        assert_eq!(bp[1]["constant"], true);
        assert_eq!(bp[0]["path"], "sw");
        assert_eq!(bp[0]["queue_packets"], 7);
        assert_eq!(bp[0]["constant"], false);
    }
}
