//! Paths that continue into another path (`next`): per-flow access links joining at one
//! shared bottleneck, the dumbbell with unequal RTTs that RTT-fairness studies need.

use spikelab_sim::{parse, run_text, RunResult, TraceLevel};
use std::path::Path;

/// Flow 0 has 10 ms of access delay each way, flow 1 has 60 ms; both data paths continue into
/// one 10 Mbit/s bottleneck (`queue` packets, 5 ms), the ACK paths into one 5 ms return link.
fn joined(queue: u32, cc: &str, duration: &str) -> String {
    format!(
        r#"
[sim]
duration = "{duration}"
[path.short]
next = "bottleneck"
[[path.short.stage]]
type = "delay"
delay = "10ms"
[path.long]
next = "bottleneck"
[[path.long.stage]]
type = "delay"
delay = "60ms"
[path.bottleneck]
[[path.bottleneck.stage]]
type = "rate"
rate = "10Mbps"
queue = {queue}
[[path.bottleneck.stage]]
type = "delay"
delay = "5ms"
[path.short_back]
next = "back"
[[path.short_back.stage]]
type = "delay"
delay = "10ms"
[path.long_back]
next = "back"
[[path.long_back.stage]]
type = "delay"
delay = "60ms"
[path.back]
[[path.back.stage]]
type = "delay"
delay = "5ms"
[[flow]]
fwd = "short"
rev = "short_back"
cc = "{cc}"
[[flow]]
fwd = "long"
rev = "long_back"
cc = "{cc}"
"#
    )
}

fn run(text: &str, level: TraceLevel) -> RunResult {
    run_text(text, &[], Path::new("."), None, Some(level)).unwrap()
}

#[test]
fn a_packet_crosses_its_access_path_and_then_the_shared_one() {
    // The smallest RTT each flow sees is its own access delay both ways plus the shared 5 ms
    // both ways and one serialisation (1.2 ms for a 1500-byte packet at 10 Mbit/s).
    let r = run(&joined(100, "reno", "20s"), TraceLevel::Summary);
    let rtt_min = r.runs.f64s("rtt_min_s");
    for (flow, access) in [(0, 0.010), (1, 0.060)] {
        let base = 2.0 * access + 2.0 * 0.005;
        assert!(
            rtt_min[flow] >= base && rtt_min[flow] < base + 0.003,
            "flow {flow}: rtt_min {} for a base RTT of {base}",
            rtt_min[flow]
        );
    }
}

#[test]
fn joined_flows_share_the_bottleneck_queue_and_the_short_rtt_wins() {
    let r = run(&joined(30, "reno", "60s"), TraceLevel::Summary);
    let g = r.runs.f64s("goodput_bps");
    eprintln!("goodputs {g:?}, drops {:?}", r.runs.i64s("drops_total"));
    // One queue: both flows lose packets at the shared rate stage, nowhere else.
    let shared = r.runs.i64s("drops_bottleneck_rate");
    assert!(
        shared[0] > 0 && shared[1] > 0,
        "drops at the shared stage: {shared:?}"
    );
    assert_eq!(r.runs.i64s("drops_total"), shared);
    // Together they fill the one 10 Mbit/s link (payload goodput below the wire rate).
    let total: f64 = g.iter().sum();
    assert!(total > 8.5e6 && total < 10e6, "aggregate goodput {total}");
    assert!(r.runs.f64s("bottleneck_utilisation")[0] > 0.9);
    // TCP's well-known RTT unfairness: with the same loss events, the window of the flow with
    // the shorter RTT grows faster (one MSS per RTT), so it takes the larger share.
    assert!(g[0] > 1.5 * g[1], "goodputs {g:?}");
}

#[test]
fn joined_paths_give_the_same_summary_at_every_trace_level() {
    let text = joined(30, "cubic", "30s");
    let base = run(&text, TraceLevel::Summary);
    for level in [TraceLevel::Timeseries, TraceLevel::Packets] {
        let r = run(&text, level);
        for name in ["goodput_bps", "rtt_mean_s", "bottleneck_utilisation"] {
            assert_eq!(
                r.runs.f64s(name),
                base.runs.f64s(name),
                "{name} at {level:?}"
            );
        }
        assert_eq!(r.runs.i64s("drops_total"), base.runs.i64s("drops_total"));
    }
    // The packets trace names the path a packet is on: both of a flow's paths appear.
    let p = run(&text, TraceLevel::Packets).packets;
    let paths = p.strings("path");
    for want in ["short", "long", "bottleneck", "back"] {
        assert!(paths.contains(&want), "no packet event on path {want}");
    }
}

#[test]
fn next_must_name_a_path_and_must_not_loop() {
    let err = |text: &str| parse(text, &[], Path::new(".")).unwrap_err().to_string();
    let unknown = "[path.a]\nnext = \"nowhere\"\n[[path.a.stage]]\ntype = \"delay\"\ndelay = \"1ms\"\n[[flow]]\nfwd = \"a\"\n";
    let e = err(unknown);
    assert!(
        e.starts_with("path.a.next: no path named \"nowhere\""),
        "{e}"
    );
    let looped = "[path.a]\nnext = \"b\"\n[path.b]\nnext = \"a\"\n[[flow]]\nfwd = \"a\"\n";
    let e = err(looped);
    assert!(
        e.starts_with("path.a.next: the paths form a loop: a -> b -> a"),
        "{e}"
    );
}
