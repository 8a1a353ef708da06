//! The numbers of a validated scenario that the kernel side of an emulation needs, in plain
//! units (ns, bytes, segments), as JSON: what `spikelab emulate` maps to socket options,
//! sysctls and routes.

use serde_json::{json, Value};
use spikelab_sim::scenario::{AppKind, Scenario};
use spikelab_tcp::{RtoAlgorithm, Variant};

pub fn scenario_view(sc: &Scenario) -> Value {
    let flows: Vec<Value> = sc
        .flow
        .iter()
        .map(|f| {
            let c = f.tcp_config();
            let (estimator, alpha, beta, k) = match c.rto.algorithm {
                RtoAlgorithm::Rfc6298 { alpha, beta, k, .. } => ("rfc6298", alpha, beta, k),
                RtoAlgorithm::Linux => ("linux", 0.125, 0.25, 4.0),
            };
            json!({
                "start_ns": f.start.0.as_nanos(),
                "app": match f.app.kind { AppKind::Bulk => "bulk", AppKind::File => "file" },
                "size": f.app.size.map(|b| b.0),
                "cc": f.cc.algo(),
                "fwd": f.fwd,
                "rev": f.rev,
                "tcp": {
                    "variant": match c.variant {
                        Variant::Reno => "reno",
                        Variant::NewReno => "newreno",
                        Variant::Sack => "sack",
                    },
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
    json!({
        "duration_ns": sc.sim.duration.0.as_nanos(),
        "seed": sc.sim.seed,
        "flows": flows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_nanoseconds() {
        let sc = spikelab_sim::parse(
            "[sim]\nduration = \"3s\"\n[[flow]]\nstart = \"100ms\"\napp = { type = \"file\", size = 5000 }\n[flow.tcp.rto]\nestimator = \"linux\"\n",
            &[],
            std::path::Path::new("."),
        )
        .unwrap();
        let v = scenario_view(&sc);
        assert_eq!(v["duration_ns"], 3_000_000_000u64);
        assert_eq!(v["flows"][0]["start_ns"], 100_000_000u64);
        assert_eq!(v["flows"][0]["size"], 5000);
        assert_eq!(v["flows"][0]["tcp"]["rto"]["min_ns"], 200_000_000u64);
        assert_eq!(v["flows"][0]["tcp"]["rto"]["estimator"], "linux");
    }
}
