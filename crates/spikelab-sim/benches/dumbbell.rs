//! `cargo bench -p spikelab-sim`: wall time of the ns-3 comparison scenario
//! (`benches/ns3-dumbbell.toml`) at summary-level tracing, and simulated packets per second.
//!
//! A plain timing harness (no criterion): it runs the scenario `SPIKELAB_BENCH_REPEAT` times
//! (default 5) and prints the best and median wall times; then as many runs that also write
//! the sender's and the receiver's pcapng captures (`sim.pcap = true`) into a temporary
//! directory, with the time they add (`SPIKELAB_BENCH_PCAP=0` skips those).

use spikelab_sim::{parse, run_scenario, run_scenario_pcap, TraceLevel};
use std::path::Path;
use std::time::Instant;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = std::env::var("SPIKELAB_BENCH_SCENARIO")
        .map(Into::into)
        .unwrap_or_else(|_| root.join("benches/ns3-dumbbell.toml"));
    let repeat: usize = std::env::var("SPIKELAB_BENCH_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let text = std::fs::read_to_string(&file).expect("bench scenario");
    let sc = parse(&text, &[], file.parent().unwrap()).expect("valid scenario");
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..repeat {
        let t0 = Instant::now();
        let r = run_scenario(&sc, None, Some(TraceLevel::Summary), None).unwrap();
        times.push(t0.elapsed().as_secs_f64());
        last = Some(r);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let r = last.unwrap();
    let sent: i64 = r.runs.i64s("segments_sent").iter().sum();
    let best = times[0];
    let median = times[times.len() / 2];
    let sim_s = sc.sim.duration.0.as_secs_f64();
    println!("scenario           {}", file.display());
    println!("simulated          {sim_s:.0} s, {} events", r.events);
    println!("data packets       {sent}");
    println!("wall best/median   {best:.3} s / {median:.3} s over {repeat} runs");
    println!(
        "packets per second {:.0} (data packets simulated per wall second, best run)",
        sent as f64 / best
    );
    println!("events per second  {:.0}", r.events as f64 / best);
    println!(
        "goodput            {:.3} Mbit/s",
        r.runs.f64s("goodput_bps")[0] / 1e6
    );
    // The same runs writing captures at the sender and the receiver (skipped with
    // SPIKELAB_BENCH_PCAP=0, e.g. under a profiler).
    if std::env::var("SPIKELAB_BENCH_PCAP").is_ok_and(|v| v == "0") {
        return;
    }
    let sc = parse(
        &text,
        &["sim.pcap=true".to_string()],
        file.parent().unwrap(),
    )
    .expect("valid scenario");
    let dir = std::env::temp_dir().join(format!("spikelab-bench-pcap-{}", std::process::id()));
    let mut ptimes = Vec::new();
    let mut bytes = 0;
    for _ in 0..repeat {
        let t0 = Instant::now();
        let r = run_scenario_pcap(&sc, None, Some(TraceLevel::Summary), None, &dir).unwrap();
        ptimes.push(t0.elapsed().as_secs_f64());
        bytes = r
            .pcaps
            .iter()
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
            .sum::<u64>();
    }
    let _ = std::fs::remove_dir_all(&dir);
    ptimes.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "with pcap          {:.3} s / {:.3} s best/median (sender + receiver captures, {:.0} MB)",
        ptimes[0],
        ptimes[ptimes.len() / 2],
        bytes as f64 / 1e6
    );
}
