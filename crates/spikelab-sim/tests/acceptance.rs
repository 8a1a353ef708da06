//! Whole-run tests: the paper 000 example, determinism, trace levels, shared bottlenecks and the
//! exactly-once delivery property over random paths.

use spikelab_sim::{run_text, RunResult, Table, TraceLevel};
use std::collections::HashMap;
use std::path::Path;

fn example(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

fn run(text: &str, overrides: &[&str], seed: Option<u64>, level: TraceLevel) -> RunResult {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    run_text(text, &o, Path::new("."), seed, Some(level)).unwrap()
}

fn i32s<'a>(t: &'a Table, name: &str) -> &'a [i32] {
    match t.column(name) {
        Some(spikelab_sim::ColumnData::I32(v)) => v,
        _ => panic!("no int32 column {name}"),
    }
}

const MS: i64 = 1_000_000;

/// Acceptance: every data packet entering the forward delay stage between 10.000 s and
/// 11.460 s leaves it between 11.500 s and 11.510 s (paper 000 §3.1 with the Fig. 2(a) table).
#[test]
fn spike_releases_packets_between_11500_and_11510_ms() {
    for file in ["lte-handover.toml", "lte-handover-lossless.toml"] {
        let r = run(&example(file), &[], None, TraceLevel::Packets);
        let p = &r.packets;
        let (t, pkt) = (p.i64s("t_ns"), p.i64s("pkt"));
        let (ev, path, stage, kind) = (
            p.strings("event"),
            p.strings("path"),
            p.strings("stage"),
            p.strings("kind"),
        );
        let mut entered = HashMap::new();
        let mut left = HashMap::new();
        let mut dropped = HashMap::new();
        for i in 0..p.num_rows() {
            if path[i] != "fwd" || stage[i] != "delay" || kind[i] != "data" {
                continue;
            }
            match ev[i] {
                "stage_enter" => {
                    entered.insert(pkt[i], t[i]);
                }
                "stage_exit" => {
                    left.insert(pkt[i], t[i]);
                }
                "drop" => {
                    dropped.insert(pkt[i], t[i]);
                }
                _ => {}
            }
        }
        let in_spike: Vec<i64> = entered
            .iter()
            .filter(|(_, &t)| (10_000 * MS..=11_460 * MS).contains(&t))
            .map(|(&k, _)| k)
            .collect();
        assert!(in_spike.len() > 20, "{file}: {} packets", in_spike.len());
        for k in in_spike {
            let out = left
                .get(&k)
                .or(dropped.get(&k))
                .copied()
                .expect("left or dropped");
            assert!(
                (11_500 * MS..=11_510 * MS).contains(&out),
                "{file}: packet {k} left at {out}"
            );
        }
    }
}

/// Acceptance: plain Reno times out spuriously during the spike, cwnd falls to one segment, and
/// `rto_spurious_true` counts it.
#[test]
fn reno_times_out_spuriously_during_the_spike() {
    for file in ["lte-handover.toml", "lte-handover-lossless.toml"] {
        let r = run(&example(file), &[], None, TraceLevel::Timeseries);
        let mss = r.runs.i64s("mss")[0] as f64;
        assert!(r.runs.i64s("rto_spurious_true")[0] >= 1, "{file}");
        let ts = &r.timeseries;
        let (t, var, val) = (ts.i64s("t_ns"), ts.strings("var"), ts.f64s("value"));
        let spurious_rto = (0..ts.num_rows())
            .find(|&i| var[i] == "rto_expiry" && val[i] == 1.0)
            .expect("a spurious RTO marker");
        let when = t[spurious_rto];
        assert!(
            (10_000 * MS..11_500 * MS).contains(&when),
            "{file}: RTO at {when}"
        );
        let cwnd_then = (0..ts.num_rows())
            .filter(|&i| var[i] == "cwnd" && t[i] <= when)
            .map(|i| val[i])
            .next_back()
            .unwrap();
        assert_eq!(cwnd_then, mss, "{file}: cwnd after the timeout");
        // Before the spike the window was large.
        let cwnd_before = (0..ts.num_rows())
            .filter(|&i| var[i] == "cwnd" && t[i] < 10_000 * MS)
            .map(|i| val[i])
            .next_back()
            .unwrap();
        assert!(cwnd_before > 20.0 * mss);
    }
}

#[test]
fn same_seed_gives_identical_tables_and_another_seed_changes_losses() {
    let text = example("lte-handover.toml");
    let over = ["path.fwd.stage[1].profile=[[0, 50, 0.02]]"];
    let a = run(&text, &over, Some(7), TraceLevel::Packets);
    let b = run(&text, &over, Some(7), TraceLevel::Packets);
    assert_eq!(format!("{:?}", a.runs), format!("{:?}", b.runs));
    assert_eq!(format!("{:?}", a.timeseries), format!("{:?}", b.timeseries));
    assert_eq!(format!("{:?}", a.packets), format!("{:?}", b.packets));
    let c = run(&text, &over, Some(8), TraceLevel::Packets);
    let drops = |r: &RunResult| {
        let p = &r.packets;
        let ev = p.strings("event");
        (0..p.num_rows())
            .filter(|&i| ev[i] == "drop")
            .map(|i| p.i64s("pkt")[i])
            .collect::<Vec<_>>()
    };
    assert!(!drops(&a).is_empty());
    assert_ne!(drops(&a), drops(&c));
}

/// `start_jitter`: the start is drawn from the stream `flow/{i}/start`, inside
/// `[start, start + start_jitter)`; the same seed gives the same start and run, another seed
/// another start, and a jitter of 0 is the run without the key, bit for bit.
#[test]
fn start_jitter_moves_the_start_per_seed_and_zero_changes_nothing() {
    let text = example("lte-handover-lossless.toml");
    let first_send = |r: &RunResult| {
        let p = &r.packets;
        let ev = p.strings("event");
        (0..p.num_rows())
            .filter(|&i| ev[i] == "send")
            .map(|i| p.i64s("t_ns")[i])
            .min()
            .unwrap()
    };
    let jit = ["flow.start=\"1s\"", "flow.start_jitter=\"100ms\""];
    let a = run(&text, &jit, Some(1), TraceLevel::Packets);
    let b = run(&text, &jit, Some(1), TraceLevel::Packets);
    assert_eq!(format!("{:?}", a.runs), format!("{:?}", b.runs));
    assert_eq!(format!("{:?}", a.packets), format!("{:?}", b.packets));
    let starts: Vec<i64> = (1..=5)
        .map(|s| first_send(&run(&text, &jit, Some(s), TraceLevel::Packets)))
        .collect();
    for &t in &starts {
        assert!((1000 * MS..1100 * MS).contains(&t), "{starts:?}");
    }
    let mut distinct = starts.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), starts.len(), "{starts:?}");
    let plain = run(&text, &[], Some(1), TraceLevel::Packets);
    let zero = run(
        &text,
        &["flow.start_jitter=\"0s\""],
        Some(1),
        TraceLevel::Packets,
    );
    assert_eq!(format!("{:?}", plain.runs), format!("{:?}", zero.runs));
    assert_eq!(
        format!("{:?}", plain.packets),
        format!("{:?}", zero.packets)
    );
    assert_eq!(first_send(&plain), 0);
}

#[test]
fn summary_level_records_no_traces() {
    let r = run(
        &example("lte-handover.toml"),
        &[],
        None,
        TraceLevel::Summary,
    );
    assert_eq!(r.packets.num_rows(), 0);
    assert_eq!(r.timeseries.num_rows(), 0);
    assert_eq!(r.runs.num_rows(), 1);
    let full = run(
        &example("lte-handover.toml"),
        &[],
        None,
        TraceLevel::Packets,
    );
    // Tracing never changes what is simulated.
    assert_eq!(format!("{:?}", r.runs), format!("{:?}", full.runs));
}

/// A deterministic drop of one sequence number: one fast retransmit, no timeout, and the
/// retransmission is genuine.
#[test]
fn deterministic_seq_drop_is_repaired_by_one_fast_retransmit() {
    let text = r#"
[sim]
duration = "5s"
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "10Mbps"
queue = 1000
[[path.fwd.stage]]
type = "delay"
delay = "20ms"
[[path.fwd.stage]]
type = "loss"
seqs = [144800]
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "20ms"
[[flow]]
app = { type = "file", size = "1MB" }
[flow.tcp]
variant = "newreno"
rwnd = "64KiB"
"#;
    for v in ["reno", "newreno", "sack"] {
        let r = run(
            text,
            &[&format!("flow.tcp.variant=\"{v}\"")],
            None,
            TraceLevel::Packets,
        );
        let runs = &r.runs;
        assert_eq!(runs.i64s("fast_retx_count")[0], 1, "{v}");
        assert_eq!(runs.i64s("rto_count")[0], 0, "{v}");
        assert_eq!(runs.i64s("retx_segments")[0], 1, "{v}");
        assert_eq!(runs.i64s("spurious_retx_true")[0], 0, "{v}");
        assert_eq!(runs.i64s("drops_fwd_loss")[0], 1, "{v}");
        assert_eq!(runs.i64s("bytes_delivered")[0], 1_000_000, "{v}");
        assert!(runs.f64s("completion_time_s")[0] > 0.0);
        let p = &r.packets;
        let (ev, seq) = (p.strings("event"), p.i64s("seq"));
        let cause = p.strings("cause");
        let dropped: Vec<usize> = (0..p.num_rows()).filter(|&i| ev[i] == "drop").collect();
        assert_eq!(dropped.len(), 1);
        assert_eq!(seq[dropped[0]], 144_800);
        assert_eq!(cause[dropped[0]], "deterministic");
        let retx: Vec<usize> = (0..p.num_rows())
            .filter(|&i| ev[i] == "retransmit")
            .collect();
        assert_eq!(retx.len(), 1);
        assert_eq!(seq[retx[0]], 144_800);
        assert_eq!(i32s(p, "tx")[retx[0]], 1);
    }
}

/// Two flows through one path share its queue: both progress, the link is not exceeded.
#[test]
fn flows_sharing_a_path_share_its_bottleneck() {
    let text = r#"
[sim]
duration = "30s"
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "5Mbps"
queue = 50
[[path.fwd.stage]]
type = "delay"
delay = "30ms"
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "30ms"
[[flow]]
[[flow]]
start = "2s"
"#;
    let r = run(text, &[], None, TraceLevel::Summary);
    let g = r.runs.f64s("goodput_bps");
    assert_eq!(g.len(), 2);
    assert!(g[0] > 1.0e6 && g[1] > 1.0e6, "{g:?}");
    // Payload goodput cannot exceed the 5 Mbit/s link (the second flow's time base is shorter).
    let bytes: i64 = r.runs.i64s("bytes_delivered").iter().sum();
    assert!((bytes as f64) * 8.0 / 30.0 < 5.0e6);
    assert!(r.runs.i64s("drops_fwd_rate").iter().sum::<i64>() > 0);
}

/// Property: a finite transfer over a path with random loss, reordering and a delay spike
/// delivers every byte exactly once and in order, for every variant and many seeds; cwnd never
/// falls below one MSS.
#[test]
fn finite_transfers_deliver_every_byte_over_random_paths() {
    let template = r#"
[sim]
duration = "600s"
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "RATE"
queue = QUEUE
[[path.fwd.stage]]
type = "delay"
reorder = REORDER
profile = [[0, 20, 0], [SPIKE, 20, 0], [SPIKE, SPIKEDELAY, 0.05], [SPIKEEND, 20, 0.05], [SPIKEEND, JITTER, 0]]
[[path.fwd.stage]]
type = "loss"
p = LOSS
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "20ms"
[[path.rev.stage]]
type = "loss"
p = ACKLOSS
[[flow]]
app = { type = "file", size = SIZE }
[flow.tcp]
variant = "VARIANT"
timestamps = TS
delayed_ack = DELACK
spurious = SPURIOUS
response = "RESPONSE"
"#;
    let mut rng = spikelab_core::Rng::stream(2024, "property");
    let variants = ["reno", "newreno", "sack"];
    for case in 0..60u64 {
        let variant = variants[(case % 3) as usize];
        let size = 50_000 + (rng.next_u64() % 400_000);
        let spike = 200 + rng.next_u64() % 3000;
        let text = template
            .replace("RATE", &format!("{}kbps", 200 + rng.next_u64() % 20_000))
            .replace("QUEUE", &format!("{}", 5 + rng.next_u64() % 100))
            .replace("REORDER", if rng.chance(0.5) { "true" } else { "false" })
            .replace("SPIKEDELAY", &format!("{}", 100 + rng.next_u64() % 3000))
            .replace(
                "SPIKEEND",
                &format!("{}", spike + 100 + rng.next_u64() % 2000),
            )
            .replace("SPIKE", &format!("{spike}"))
            .replace("JITTER", &format!("{}", 5 + rng.next_u64() % 60))
            .replace("ACKLOSS", &format!("{:.3}", rng.next_f64() * 0.05))
            .replace("LOSS", &format!("{:.3}", rng.next_f64() * 0.08))
            .replace("SIZE", &format!("{size}"))
            .replace("VARIANT", variant)
            .replace("DELACK", if rng.chance(0.5) { "true" } else { "false" });
        // Any combination of detectors (Eifel only with timestamps) and any response.
        let ts_on = rng.chance(0.7);
        let detectors: Vec<String> = DETECTOR_NAMES
            .iter()
            .filter(|d| rng.chance(0.5) && (**d != "eifel" || ts_on))
            .map(|d| format!("\"{d}\""))
            .collect();
        let response = ["none", "eifel", "undo"][(rng.next_u64() % 3) as usize];
        let text = text
            .replace("TS", if ts_on { "true" } else { "false" })
            .replace("SPURIOUS", &format!("[{}]", detectors.join(",")))
            .replace("RESPONSE", response);
        let r = run(&text, &[], Some(case), TraceLevel::Packets);
        if std::env::var("SPIKELAB_DEBUG").is_ok() {
            eprintln!(
                "{case} {variant} size={size} rto={} fr={} retx={} drops={} t={}",
                r.runs.i64s("rto_count")[0],
                r.runs.i64s("fast_retx_count")[0],
                r.runs.i64s("retx_segments")[0],
                r.runs.i64s("drops_total")[0],
                r.runs.f64s("completion_time_s")[0]
            );
        }
        let ctx = format!("case {case} ({variant})\n{text}");
        assert_eq!(r.runs.i64s("bytes_delivered")[0] as u64, size, "{ctx}");
        assert!(r.runs.f64s("completion_time_s")[0].is_finite(), "{ctx}");
        // Exactly once, in order: the receiver's in-order point only moves forward, by whole
        // segments, and ends at the file size; the union of delivered segments covers the file.
        let ts = &r.timeseries;
        let (var, val) = (ts.strings("var"), ts.f64s("value"));
        let mss = r.runs.i64s("mss")[0] as f64;
        let mut last = 0.0;
        for i in 0..ts.num_rows() {
            match var[i] {
                "rcv_nxt" => {
                    assert!(val[i] > last, "{ctx}");
                    last = val[i];
                }
                "cwnd" => assert!(val[i] >= mss, "cwnd {} < mss: {ctx}", val[i]),
                _ => {}
            }
        }
        assert_eq!(last as u64, size, "{ctx}");
        let p = &r.packets;
        let (ev, kind, seq, len) = (
            p.strings("event"),
            p.strings("kind"),
            p.i64s("seq"),
            i32s(p, "len"),
        );
        let mut got: Vec<(i64, i64)> = (0..p.num_rows())
            .filter(|&i| ev[i] == "deliver" && kind[i] == "data")
            .map(|i| (seq[i], seq[i] + len[i] as i64))
            .collect();
        got.sort_unstable();
        let mut covered = 0;
        for (s, e) in got {
            assert!(s <= covered, "hole at {covered}: {ctx}");
            covered = covered.max(e);
        }
        assert_eq!(covered as u64, size, "{ctx}");
    }
}

/// A CSV trace is the same table as a profile: both give identical runs.
#[test]
fn csv_trace_and_inline_profile_give_the_same_run() {
    let dir = std::env::temp_dir().join(format!("spikelab-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("spike.csv"),
        "time_ms,delay_ms,loss\n0,50,0\n# the spike\n1000,50,0\n1000,800,0.02\n1500,50,0.02\n1500,50,0\n",
    )
    .unwrap();
    let body = |stage: &str| {
        format!("[sim]\nduration = \"5s\"\n[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\n{stage}\n[[flow]]\n")
    };
    let from_trace = body("trace = \"spike.csv\"");
    let inline =
        body("profile = [[0,50,0],[1000,50,0],[1000,800,0.02],[1500,50,0.02],[1500,50,0]]");
    let a = run_text(&from_trace, &[], &dir, Some(3), Some(TraceLevel::Packets)).unwrap();
    let b = run_text(&inline, &[], &dir, Some(3), Some(TraceLevel::Packets)).unwrap();
    // The trace file is read once, at validation: removing it afterwards changes nothing.
    let sc = spikelab_sim::parse(&from_trace, &[], &dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let c = spikelab_sim::run_scenario(&sc, Some(3), Some(TraceLevel::Packets), None).unwrap();
    assert_eq!(format!("{:?}", a.packets), format!("{:?}", b.packets));
    assert_eq!(format!("{:?}", a.packets), format!("{:?}", c.packets));
    assert!(a.runs.i64s("rto_count")[0] >= 1);
}

// ---- spurious-timeout detection (issue 4) -----------------------------------------------------

const DETECTOR_NAMES: [&str; 4] = ["eifel", "dsack", "frto", "linux"];

/// Eifel and F-RTO alone, on both paper 000 examples, detect the spike's spurious timeout; on
/// the lossless path no detector declares a genuine episode spurious; the runs table's counts
/// add up against the ground truth. DSACK cannot detect this spike: it outlasts the backed-off
/// RTO, so the first unacknowledged segment is retransmitted twice, and RFC 3708 (A.3) never
/// reverts a window with a segment retransmitted more than once. The examples run textbook
/// Reno, which may fast-retransmit from the Loss state when the delayed originals' duplicate
/// ACKs arrive; that new episode would end the timeout's episode before its DSACKs return.
/// Linux never fast-retransmits from Loss, so these runs use the RFC 6582 rule that blocks it
/// (`block_fr_after_rto`).
///
/// The linux detector is left out: it follows the kernel, which keeps the undo ledger of the
/// fast recovery that the spike's timeout interrupts on these Reno runs (`retrans_stamp` of
/// its genuine retransmission), so it rightly does not undo; its rules are pinned by
/// `spikelab-tcp/tests/linux_undo.rs` and by [`linux_detector_undoes_the_spike_with_sack`].
#[test]
fn each_detector_detects_the_spikes_spurious_timeout() {
    for file in ["lte-handover-lossless.toml", "lte-handover.toml"] {
        for d in &DETECTOR_NAMES[..3] {
            let d = *d;
            for response in ["undo", "eifel", "none"] {
                let over = [
                    format!("flow.tcp.spurious=[\"{d}\"]"),
                    format!("flow.tcp.response=\"{response}\""),
                    "flow.tcp.block_fr_after_rto=true".to_string(),
                ];
                let over: Vec<&str> = over.iter().map(|s| s.as_str()).collect();
                let r = run(&example(file), &over, None, TraceLevel::Timeseries);
                let runs = &r.runs;
                let col = |c: &str| runs.i64s(c)[0];
                let ctx = format!("{file} {d} {response}");
                if std::env::var("SPIKELAB_DEBUG").is_ok() {
                    eprintln!(
                        "{ctx}: rto={} rto_eps={} true={} detected={} tp={} fp={} fn={} tn={} und={} undo={} bytes={}",
                        col("rto_count"), col("rto_episodes"), col("rto_episodes_spurious_true"),
                        col("rto_spurious_detected"), col(&format!("det_{d}_tp")),
                        col(&format!("det_{d}_fp")), col(&format!("det_{d}_fn")),
                        col(&format!("det_{d}_tn")), col(&format!("det_{d}_undecided")),
                        col("undo_count"), col("bytes_delivered")
                    );
                }
                if d == "dsack" {
                    // RFC 3708 (A.3): the spike's episode retransmitted segment 0 twice.
                    assert!(col("rto_count") > col("rto_episodes"), "{ctx}");
                    assert_eq!(col(&format!("det_{d}_tp")), 0, "{ctx}");
                    assert_eq!(col(&format!("det_{d}_fp")), 0, "{ctx}");
                    assert_eq!(col("undo_count"), 0, "{ctx}");
                    continue;
                }
                assert!(col("rto_spurious_detected") >= 1, "{ctx}");
                assert!(col(&format!("det_{d}_tp")) >= 1, "{ctx}");
                if file == "lte-handover-lossless.toml" {
                    assert_eq!(col(&format!("det_{d}_fp")), 0, "{ctx}");
                }
                let judged_true = if d == "frto" {
                    col("rto_episodes_spurious_true")
                } else {
                    col("rto_episodes_spurious_true") + col("fr_episodes_spurious_true")
                };
                assert_eq!(
                    col(&format!("det_{d}_tp")) + col(&format!("det_{d}_fn")),
                    judged_true,
                    "{ctx}"
                );
                assert_eq!(
                    col(&format!("det_{d}_detections")),
                    col(&format!("det_{d}_tp")) + col(&format!("det_{d}_fp"))
                );
                if response == "none" {
                    assert_eq!(col("undo_count"), 0, "{ctx}");
                } else {
                    assert!(col("undo_count") >= 1, "{ctx}");
                }
                // The spike's verdict marker lies between the timeout and the end of the spike
                // plus a few RTTs.
                let ts = &r.timeseries;
                let (t, var, val) = (ts.i64s("t_ns"), ts.strings("var"), ts.f64s("value"));
                let name = format!("verdict_{d}");
                let first = (0..ts.num_rows())
                    .find(|&i| var[i] == name && val[i] == 1.0)
                    .map(|i| t[i])
                    .expect("a spurious verdict marker");
                assert!(
                    (10_000 * MS..14_000 * MS).contains(&first),
                    "{ctx}: {first}"
                );
                let delay = runs.f64s(&format!("det_{d}_delay_mean_s"))[0];
                assert!(delay > 0.0 && delay < 4.0, "{ctx}: {delay}");
            }
        }
    }
}

/// With SACK recovery (the kernel's), the linux detector undoes the spike's spurious timeout of
/// both paper 000 examples and no genuine episode: one undo, one true positive, no false one.
#[test]
fn linux_detector_undoes_the_spike_with_sack() {
    for file in ["lte-handover-lossless.toml", "lte-handover.toml"] {
        let over = [
            "flow.tcp.spurious=[\"linux\"]",
            "flow.tcp.response=\"undo\"",
            "flow.tcp.variant=\"sack\"",
            "flow.tcp.clear_sack_on_rto=false",
        ];
        let r = run(&example(file), &over, None, TraceLevel::Summary);
        let col = |c: &str| r.runs.i64s(c)[0];
        assert_eq!(col("rto_episodes_spurious_true"), 1, "{file}");
        assert_eq!(col("det_linux_tp"), 1, "{file}");
        assert_eq!(col("det_linux_fp"), 0, "{file}");
        assert_eq!(col("undo_count"), 1, "{file}");
    }
}

/// Over a small study (spike with random loss, several seeds, every combination of detectors),
/// each detector's TP/FP/FN/TN in `runs` equal an independent recount: every `verdict_<d>`
/// marker in `timeseries` names the retransmission that started its episode (`seq`, `tx`), and
/// the episode was spurious exactly when `packets` shows an earlier transmission (`tx` lower)
/// of that segment delivered to the receiver.
#[test]
fn detector_scores_match_a_recount_from_packets_and_timeseries() {
    let combos: [&[&str]; 7] = [
        &["eifel"],
        &["dsack"],
        &["frto"],
        &["eifel", "dsack"],
        &["eifel", "frto"],
        &["dsack", "frto"],
        &["eifel", "dsack", "frto"],
    ];
    let lossy = "path.fwd.stage[1].profile=[[0, 50, 0.0], [10000, 50, 0.0], [10000, 1500, 0.05], [11460, 50, 0.05], [11460, 50, 0.01], [20000, 50, 0.01]]";
    let mut detections = 0;
    let mut positives = 0;
    for (k, combo) in combos.iter().enumerate() {
        for seed in 1..=3u64 {
            let list = combo
                .iter()
                .map(|d| format!("\"{d}\""))
                .collect::<Vec<_>>()
                .join(",");
            let response = ["undo", "eifel", "none"][(k + seed as usize) % 3];
            let over = [
                lossy.to_string(),
                format!("flow.tcp.spurious=[{list}]"),
                format!("flow.tcp.response=\"{response}\""),
            ];
            let over: Vec<&str> = over.iter().map(|s| s.as_str()).collect();
            let r = run(
                &example("lte-handover.toml"),
                &over,
                Some(seed),
                TraceLevel::Packets,
            );
            let ctx = format!("{combo:?} seed {seed} {response}");
            // Deliveries of data: (seq, tx) pairs.
            let p = &r.packets;
            let (ev, kind, pseq, ptx) = (
                p.strings("event"),
                p.strings("kind"),
                p.i64s("seq"),
                i32s(p, "tx"),
            );
            let mut first_delivered: HashMap<i64, i32> = HashMap::new();
            for i in 0..p.num_rows() {
                if ev[i] == "deliver" && kind[i] == "data" {
                    let e = first_delivered.entry(pseq[i]).or_insert(i32::MAX);
                    *e = (*e).min(ptx[i]);
                }
            }
            let ts = &r.timeseries;
            let (var, val, sseq, stx) = (
                ts.strings("var"),
                ts.f64s("value"),
                ts.i64s("seq"),
                i32s(ts, "tx"),
            );
            for d in DETECTOR_NAMES {
                let name = format!("verdict_{d}");
                let (mut tp, mut fp, mut fn_, mut tn, mut und) = (0, 0, 0, 0, 0);
                for i in 0..ts.num_rows() {
                    if var[i] != name {
                        continue;
                    }
                    let truth = first_delivered.get(&sseq[i]).is_some_and(|&fd| fd < stx[i]);
                    match (val[i] == 1.0, truth) {
                        (true, true) => tp += 1,
                        (true, false) => fp += 1,
                        (false, true) => fn_ += 1,
                        (false, false) => tn += 1,
                    }
                    und += (val[i] == -1.0) as i64;
                }
                let col = |c: &str| r.runs.i64s(&format!("det_{d}_{c}"))[0];
                let got = (col("tp"), col("fp"), col("fn"), col("tn"), col("undecided"));
                if combo.contains(&d) {
                    assert_eq!(got, (tp, fp, fn_, tn, und), "{ctx} {d}");
                } else {
                    // A detector that is off has no score: -1, null in the table.
                    assert_eq!(got, (-1, -1, -1, -1, -1), "{ctx}: {d} is off");
                    assert_eq!(tp + fp + fn_ + tn, 0, "{ctx}: {d} is off");
                }
                detections += tp + fp;
                positives += tp + fn_;
            }
            // One response per episode at most.
            let undos = (0..ts.num_rows()).filter(|&i| var[i] == "undo").count() as i64;
            assert_eq!(undos, r.runs.i64s("undo_count")[0], "{ctx}");
            let episodes = r.runs.i64s("rto_episodes")[0] + r.runs.i64s("fr_episodes")[0];
            assert!(undos <= episodes, "{ctx}");
        }
    }
    assert!(
        detections > 10 && positives > 10,
        "{detections} {positives}"
    );
}

/// Detectors on: the same seed still gives identical tables.
#[test]
fn detectors_keep_runs_deterministic() {
    let over = [
        "flow.tcp.spurious=[\"eifel\",\"dsack\",\"frto\"]",
        "path.fwd.stage[1].profile=[[0, 50, 0.0], [10000, 50, 0.0], [10000, 1500, 0.05], [11460, 50, 0.05], [11460, 50, 0.0]]",
    ];
    let a = run(
        &example("lte-handover.toml"),
        &over,
        Some(5),
        TraceLevel::Packets,
    );
    let b = run(
        &example("lte-handover.toml"),
        &over,
        Some(5),
        TraceLevel::Packets,
    );
    assert_eq!(format!("{:?}", a.runs), format!("{:?}", b.runs));
    assert_eq!(format!("{:?}", a.timeseries), format!("{:?}", b.timeseries));
    assert_eq!(format!("{:?}", a.packets), format!("{:?}", b.packets));
}

/// The `linux` profile runs the kernel's undo rules (the linux detector) with undo; the
/// spike's timeout is undone.
#[test]
fn linux_profile_detects_and_undoes_the_spike() {
    let r = run(
        &example("lte-handover-lossless.toml"),
        &["flow.tcp.profile=\"linux\""],
        None,
        TraceLevel::Summary,
    );
    assert_eq!(r.runs.strings("spurious"), vec!["linux"]);
    assert_eq!(r.runs.strings("response"), vec!["undo"]);
    // The example sets `cc = "reno"` and `variant = "reno"` itself: explicit keys win.
    assert_eq!(r.runs.strings("cc"), vec!["reno"]);
    assert!(r.runs.i64s("rto_spurious_detected")[0] >= 1);
    assert!(r.runs.i64s("undo_count")[0] >= 1);
}

/// `handshake = true`: the SYN leaves at the flow's start, the SYN-ACK comes back one RTT
/// later (2 × 25 ms) and only then does the first data segment leave; the SYN is not data
/// (no ground truth, bytes and segments count only data).
#[test]
fn the_handshake_delays_the_first_data_segment_by_one_rtt() {
    let text = "[sim]\nduration = \"2s\"\n[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\ndelay = \"25ms\"\n[path.rev]\n[[path.rev.stage]]\ntype = \"delay\"\ndelay = \"25ms\"\n[[flow]]\napp = { type = \"file\", size = 100000 }\n[flow.tcp]\nhandshake = true\n";
    let r = run(text, &[], None, TraceLevel::Packets);
    let p = &r.packets;
    let (t, ev, seq, size) = (
        p.i64s("t_ns"),
        p.strings("event"),
        p.i64s("seq"),
        i32s(p, "size"),
    );
    let sends: Vec<usize> = (0..p.num_rows()).filter(|&i| ev[i] == "send").collect();
    assert_eq!((t[sends[0]], size[sends[0]]), (0, 60), "the SYN");
    assert_eq!(t[sends[1]], 50 * MS, "first data one RTT later");
    assert_eq!(seq[sends[1]], 0);
    assert_eq!(r.runs.i64s("bytes_delivered")[0], 100_000);
    assert_eq!(r.runs.i64s("rto_count")[0], 0);
}
