//! The event loop on degenerate inputs: zero-delay paths, long chains of zero-delay stages,
//! 10^5 segments in one instant, a bulk flow that would stop time, and the trace bound.
//! None of these may overflow the stack, abort or hang; each either completes with every byte
//! delivered exactly once or stops with an error that says why.

use spikelab_sim::{run_text, Error, RunResult, TraceLevel};
use std::path::Path;

fn run(text: &str, level: TraceLevel) -> Result<RunResult, Error> {
    run_text(text, &[], Path::new("."), None, Some(level))
}

fn col_i64(r: &RunResult, name: &str) -> i64 {
    r.runs.i64s(name)[0]
}

fn completion(r: &RunResult) -> f64 {
    match r.runs.column("completion_time_s") {
        Some(spikelab_sim::ColumnData::F64(v)) => v[0],
        _ => panic!("no completion_time_s"),
    }
}

#[test]
fn minimal_scenario_runs_over_the_default_link() {
    let r = run("[[flow]]\n", TraceLevel::Summary).unwrap();
    // The default link is 10 Mbit/s: a bulk flow over 20 s delivers most of 25 MB.
    let bytes = col_i64(&r, "bytes_delivered");
    assert!(bytes > 15_000_000 && bytes < 25_000_000, "{bytes}");
}

#[test]
fn zero_delay_paths_deliver_a_file_exactly_once_at_time_zero() {
    let text = "[sim]\nduration = \"1s\"\n[path.fwd]\n[path.rev]\n\
                [[flow]]\napp = { type = \"file\", size = 1000000 }\n\
                tcp = { delayed_ack = false }\n";
    for level in [TraceLevel::Summary, TraceLevel::Packets] {
        let r = run(text, level).unwrap();
        assert_eq!(col_i64(&r, "bytes_delivered"), 1_000_000);
        // No stage takes time: the whole transfer happens in the first instant.
        assert_eq!(completion(&r), 0.0);
        assert_eq!(col_i64(&r, "retx_segments"), 0);
    }
}

#[test]
fn the_most_zero_delay_stages_a_path_may_have_in_a_row() {
    let stages = |n: usize| {
        let mut text = String::from("[sim]\nduration = \"1s\"\n[path.fwd]\n");
        for _ in 0..n {
            text.push_str("[[path.fwd.stage]]\ntype = \"delay\"\ndelay = 0\n");
        }
        text.push_str("[path.rev]\n[[flow]]\napp = { type = \"file\", size = 200000 }\n");
        text
    };
    let r = run(&stages(255), TraceLevel::Packets).unwrap();
    assert_eq!(col_i64(&r, "bytes_delivered"), 200_000);
    // 139 data segments each enter and leave all 255 stages.
    let enters = r
        .packets
        .strings("event")
        .iter()
        .filter(|e| **e == "stage_enter")
        .count();
    assert_eq!(enters, 139 * 255);
    let e = spikelab_sim::parse(&stages(256), &[], std::path::Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("path.fwd.stage: at most 255 stages"), "{e}");
}

#[test]
fn a_hundred_thousand_segments_in_one_instant() {
    let n: u64 = 100_000;
    let text = format!(
        "[sim]\nduration = \"1s\"\n[path.fwd]\n[path.rev]\n[[flow]]\n\
         app = {{ type = \"file\", size = {} }}\n\
         tcp = {{ mss = 1000, initial_window = {n}, rwnd = \"1GiB\", delayed_ack = false }}\n",
        n * 1000
    );
    let r = run(&text, TraceLevel::Summary).unwrap();
    assert_eq!(col_i64(&r, "bytes_delivered"), (n * 1000) as i64);
    assert_eq!(col_i64(&r, "segments_sent"), n as i64);
    assert_eq!(completion(&r), 0.0);
}

#[test]
fn a_bulk_flow_over_an_ideal_path_is_an_error_not_a_hang() {
    let text = "[sim]\nduration = \"1s\"\n[path.fwd]\n[path.rev]\n[[flow]]\n";
    let Err(Error::Run(e)) = run(text, TraceLevel::Summary) else {
        panic!("expected a run error");
    };
    assert!(e.message.contains("stopped advancing"), "{e}");
    assert_eq!(e.t.as_nanos(), 0);
}

#[test]
fn the_packets_trace_stops_at_its_bound_with_an_error_naming_the_field() {
    let text = "[sim]\nduration = \"5s\"\nmax_packets_rows = 1000\n[[flow]]\n";
    let Err(Error::Run(e)) = run(text, TraceLevel::Packets) else {
        panic!("expected a run error");
    };
    assert_eq!(e.field, "sim.max_packets_rows");
    assert!(e.to_string().starts_with("sim.max_packets_rows: "), "{e}");
    // Below packets level the bound does not apply.
    run(text, TraceLevel::Timeseries).unwrap();
}
