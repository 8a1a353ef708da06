//! Whole runs with RACK-TLP and PRR (`rack`, `tlp`, `prr` in `[flow.tcp]`): a finite transfer
//! over lossy, reordering paths delivers every byte exactly once, the same seed gives the same
//! tables, probes appear in the packets trace, and the keys are validated.

use spikelab_sim::{run_text, RunResult, TraceLevel};
use std::path::Path;

fn run(text: &str, seed: u64) -> RunResult {
    run_text(
        text,
        &[],
        Path::new("."),
        Some(seed),
        Some(TraceLevel::Packets),
    )
    .unwrap()
}

const TEMPLATE: &str = r#"
[sim]
duration = "600s"
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "RATE"
queue = QUEUE
[[path.fwd.stage]]
type = "delay"
delay = "30ms"
reorder = REORDER
[[path.fwd.stage]]
type = "loss"
p = LOSS
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "30ms"
[[path.rev.stage]]
type = "loss"
p = ACKLOSS
[[flow]]
app = { type = "file", size = SIZE }
[flow.tcp]
variant = "sack"
rack = true
tlp = true
prr = PRR
timestamps = TS
delayed_ack = DELACK
spurious = ["dsack"]
"#;

/// Every byte of the file is delivered, and the delivered data segments cover it without a
/// hole; the receiver's in-order point only moves forward.
fn assert_delivered_exactly_once(r: &RunResult, size: u64, ctx: &str) {
    assert_eq!(r.runs.i64s("bytes_delivered")[0] as u64, size, "{ctx}");
    assert!(r.runs.f64s("completion_time_s")[0].is_finite(), "{ctx}");
    let p = &r.packets;
    let (ev, kind, seq) = (p.strings("event"), p.strings("kind"), p.i64s("seq"));
    let len: Vec<i64> = match p.column("len") {
        Some(spikelab_sim::ColumnData::I32(v)) => v.iter().map(|&x| x as i64).collect(),
        _ => panic!("no len column"),
    };
    let mut got: Vec<(i64, i64)> = (0..p.num_rows())
        .filter(|&i| ev[i] == "deliver" && kind[i] == "data")
        .map(|i| (seq[i], seq[i] + len[i]))
        .collect();
    got.sort_unstable();
    let mut covered = 0;
    for (s, e) in got {
        assert!(s <= covered, "hole at {covered}: {ctx}");
        covered = covered.max(e);
    }
    assert_eq!(covered as u64, size, "{ctx}");
    let ts = &r.timeseries;
    let (var, val) = (ts.strings("var"), ts.f64s("value"));
    let mut last = 0.0;
    for i in 0..ts.num_rows() {
        if var[i] == "rcv_nxt" {
            assert!(val[i] > last, "{ctx}");
            last = val[i];
        }
    }
    assert_eq!(last as u64, size, "{ctx}");
}

#[test]
fn rack_tlp_transfers_deliver_every_byte_once_and_are_deterministic() {
    let mut rng = spikelab_core::Rng::stream(8985, "rack-tlp");
    let (mut probes, mut rack_losses) = (0, 0);
    for case in 0..16u64 {
        let size = 100_000 + rng.next_u64() % 400_000;
        let text = TEMPLATE
            .replace("RATE", &format!("{}kbps", 500 + rng.next_u64() % 20_000))
            .replace("QUEUE", &format!("{}", 5 + rng.next_u64() % 60))
            .replace("REORDER", if rng.chance(0.5) { "true" } else { "false" })
            .replace("ACKLOSS", &format!("{:.3}", rng.next_f64() * 0.03))
            .replace("LOSS", &format!("{:.3}", 0.005 + rng.next_f64() * 0.05))
            .replace("SIZE", &format!("{size}"))
            .replace("PRR", if case % 2 == 0 { "true" } else { "false" })
            .replace("TS", if rng.chance(0.5) { "true" } else { "false" })
            .replace("DELACK", if rng.chance(0.5) { "true" } else { "false" });
        let a = run(&text, case);
        let ctx = format!("case {case}\n{text}");
        assert_delivered_exactly_once(&a, size, &ctx);
        let b = run(&text, case);
        assert_eq!(format!("{:?}", a.runs), format!("{:?}", b.runs), "{ctx}");
        assert_eq!(
            format!("{:?}", a.packets),
            format!("{:?}", b.packets),
            "{ctx}"
        );
        let tlp = a.runs.i64s("tlp_count")[0];
        let ev = a.packets.strings("event");
        assert_eq!(
            ev.iter().filter(|e| **e == "tlp").count() as i64,
            tlp,
            "{ctx}"
        );
        probes += tlp;
        rack_losses += a.runs.i64s("rack_loss_count")[0];
    }
    // The cases exercise RACK (losses in mid-flight are repaired by it, SACKs freeing window
    // room for new data as in Linux, so probes are rare here: the tail case below has one).
    assert!(rack_losses > 0, "{probes} {rack_losses}");
}

/// A tail loss (the last three segments of a file, dropped once): the probe goes out before
/// the RTO, its SACK lets RACK mark the other two lost, and one fast recovery repairs them.
#[test]
fn a_tail_loss_is_repaired_by_the_probe_and_rack_without_a_timeout() {
    let text = "[sim]\nduration = \"10s\"\n[path.fwd]\n[[path.fwd.stage]]\ntype = \"rate\"\nrate = \"10Mbps\"\nqueue = 1000\n[[path.fwd.stage]]\ntype = \"delay\"\ndelay = \"10ms\"\n[[path.fwd.stage]]\ntype = \"loss\"\nseqs = [1443656, 1445104, 1446552]\n[path.rev]\n[[path.rev.stage]]\ntype = \"delay\"\ndelay = \"10ms\"\n[[flow]]\napp = { type = \"file\", size = 1448000 }\n[flow.tcp]\nprofile = \"linux\"\n";
    let r = run(text, 1);
    assert_delivered_exactly_once(&r, 1_448_000, text);
    let col = |c: &str| r.runs.i64s(c)[0];
    assert_eq!(col("tlp_count"), 1);
    assert_eq!(col("rto_count"), 0);
    assert_eq!(col("fast_retx_count"), 1);
    assert_eq!(col("rack_loss_count"), 2);
}

#[test]
fn rack_and_prr_need_the_sack_variant_and_tlp_needs_sack() {
    let base = "[[flow]]\n[flow.tcp]\n";
    for (keys, field) in [
        ("variant = \"newreno\"\nrack = true\n", "flow[0].tcp.rack"),
        ("variant = \"newreno\"\nprr = true\n", "flow[0].tcp.prr"),
        (
            "variant = \"newreno\"\nsack = false\ntlp = true\n",
            "flow[0].tcp.tlp",
        ),
    ] {
        let text = format!("{base}{keys}");
        let err = run_text(&text, &[], Path::new("."), None, Some(TraceLevel::Summary))
            .err()
            .unwrap_or_else(|| panic!("{keys} accepted"));
        assert!(err.to_string().contains(field), "{keys}: {err}");
    }
}
