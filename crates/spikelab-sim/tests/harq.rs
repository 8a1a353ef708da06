//! A TCP transfer over a HARQ link (paper 001's LMS hop): it completes; without the link-layer
//! reordering buffer the receiver sees data out of order, with it in order; every trace level
//! gives the same summary.

use spikelab_sim::{parse, Table, TraceLevel};
use std::path::Path;

mod common;
use common::*;

fn scenario(buffer: bool) -> String {
    format!(
        r#"
[sim]
duration = "60s"
seed = 5
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "10Mbps"
queue = 200
[[path.fwd.stage]]
type = "delay"
leo = {{ seed = 2, duration = "120s" }}
[[path.fwd.stage]]
type = "harq"
snr = 10
reorder_buffer = {buffer}
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "80ms"
[[flow]]
app = {{ type = "file", size = 1000000 }}
"#
    )
}

/// Data segments leaving the harq stage (new data, first transmissions only, by time), and
/// how many of them carry a lower sequence number than one that left before; plus the
/// number of harq drops.
fn order(packets: &Table) -> (usize, usize, usize) {
    let ev = strs(packets, "event");
    let stage = strs(packets, "stage");
    let kind = strs(packets, "kind");
    let cause = strs(packets, "cause");
    let seq = i64s(packets, "seq");
    let tx = i64s(packets, "tx");
    let mut highest = -1;
    let (mut n, mut late, mut drops) = (0, 0, 0);
    for i in 0..ev.len() {
        if stage[i] == "harq" && ev[i] == "drop" {
            assert_eq!(cause[i], "harq");
            drops += 1;
        }
        if ev[i] != "stage_exit" || stage[i] != "harq" || kind[i] != "data" || tx[i] != 0 {
            continue;
        }
        n += 1;
        if seq[i] < highest {
            late += 1;
        }
        highest = highest.max(seq[i]);
    }
    (n, late, drops)
}

#[test]
fn a_transfer_over_harq_completes_reordered_without_the_buffer_and_in_order_with_it() {
    for buffer in [false, true] {
        let sc = parse(&scenario(buffer), &[], Path::new(".")).unwrap();
        let (runs, packets) = run(&sc, TraceLevel::Packets);
        let done = f64_of(&runs, "completion_time_s");
        let (n, late, drops) = order(&packets);
        println!("bytes {:?}", i64s(&runs, "bytes_delivered"));
        println!(
            "buffer {buffer}: completed in {done:.2} s, {n} segments through harq, {late} out of \
             order, {drops} harq drops, goodput {:.0} bit/s, dupacks {}",
            f64_of(&runs, "goodput_bps"),
            i64s(&runs, "dupacks_rcvd")[0]
        );
        assert!(done.is_finite() && done > 0.0, "buffer {buffer}: {done}");
        assert!(n > 500, "{n}");
        if buffer {
            assert_eq!(late, 0, "the buffer releases in link order");
        } else {
            assert!(late > 10, "parallel HARQ processes reorder: {late}");
        }
        // The same seed gives the same summary at every trace level.
        let (reference, _) = run(&sc, TraceLevel::Summary);
        for level in [TraceLevel::Timeseries, TraceLevel::Packets] {
            let (r, _) = run(&sc, level);
            assert_eq!(r.columns.len(), reference.columns.len());
            for (a, b) in r.columns.iter().zip(&reference.columns) {
                assert!(
                    same(&a.data, &b.data),
                    "buffer {buffer}: {} at {level:?}: {:?} vs {:?}",
                    a.name,
                    a.data,
                    b.data
                );
            }
        }
    }
}

#[test]
fn the_packets_trace_gives_each_packets_harq_transmissions_and_decode_delay() {
    for buffer in [false, true] {
        let sc = parse(&scenario(buffer), &[], Path::new(".")).unwrap();
        let (_, packets) = run(&sc, TraceLevel::Packets);
        let (ev, stage, cause) = (
            strs(&packets, "event"),
            strs(&packets, "stage"),
            strs(&packets, "cause"),
        );
        let (t, pkt, harq_tx, harq_ms) = (
            i64s(&packets, "t_ns"),
            i64s(&packets, "pkt"),
            i64s(&packets, "harq_tx"),
            i64s(&packets, "harq_delay_us")
                .into_iter()
                .map(|u| u as f64 / 1e3)
                .collect::<Vec<f64>>(),
        );
        // When each packet entered the harq stage.
        let mut entered = std::collections::HashMap::new();
        let mut per_tx = [0usize; 5];
        for i in 0..ev.len() {
            let at_harq = stage[i] == "harq" && (ev[i] == "stage_exit" || ev[i] == "drop");
            if stage[i] == "harq" && ev[i] == "stage_enter" {
                entered.insert(pkt[i], t[i]);
            }
            if !at_harq {
                assert_eq!(harq_tx[i], -1, "row {i}: {} at {}", ev[i], stage[i]);
                assert_eq!(harq_ms[i], -0.001, "row {i}");
                continue;
            }
            // Paper 001 §II: at most 3 retransmissions, 10 ms then 20 ms per retransmission.
            let k = harq_tx[i];
            assert!((1..=4).contains(&k), "row {i}: {k} transmissions");
            let want = 10.0 + 20.0 * (k - 1) as f64;
            assert!(
                (harq_ms[i] - want).abs() < 1e-9,
                "{k} tx: {} ms",
                harq_ms[i]
            );
            per_tx[k as usize] += 1;
            let waited = (t[i] - entered[&pkt[i]]) as f64 / 1e6;
            if ev[i] == "drop" {
                assert_eq!((k, cause[i].as_str()), (4, "harq"));
                assert!(
                    (waited - 70.0).abs() < 1e-6,
                    "dropped after its 4th try: {waited}"
                );
            } else if buffer {
                // The reordering buffer may hold a decoded packet for an earlier one.
                assert!(
                    waited >= harq_ms[i] - 1e-6 && waited <= 70.0 + 1e-6,
                    "{waited}"
                );
            } else {
                assert!(
                    (waited - harq_ms[i]).abs() < 1e-6,
                    "{waited} vs {}",
                    harq_ms[i]
                );
            }
        }
        println!(
            "buffer {buffer}: packets by transmissions {:?}",
            &per_tx[1..]
        );
        assert!(per_tx[1..4].iter().all(|&n| n > 10), "{per_tx:?}");
    }
}

#[test]
fn the_leo_lms_preset_runs_as_its_stages_written_out() {
    let by_preset = r#"
[sim]
duration = "30s"
seed = 3
[path.fwd]
preset = { name = "leo-lms", snr = 9 }
[path.rev]
preset = "leo-return"
[[flow]]
cc = "cubic"
"#;
    let written = r#"
[sim]
duration = "30s"
seed = 3
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "40Mbps"
queue = 1000
[[path.fwd.stage]]
type = "delay"
leo = { seed = 1 }
[[path.fwd.stage]]
type = "harq"
snr = 9
[path.rev]
[[path.rev.stage]]
type = "delay"
leo = { seed = 2 }
[[flow]]
cc = "cubic"
"#;
    let a = parse(by_preset, &[], Path::new(".")).unwrap();
    let b = parse(written, &[], Path::new(".")).unwrap();
    let (ra, _) = run(&a, TraceLevel::Summary);
    let (rb, _) = run(&b, TraceLevel::Summary);
    assert!(f64_of(&ra, "goodput_bps") > 1e5);
    for (x, y) in ra.columns.iter().zip(&rb.columns) {
        assert_eq!(x.name, y.name);
        assert!(same(&x.data, &y.data), "{}", x.name);
    }
}
