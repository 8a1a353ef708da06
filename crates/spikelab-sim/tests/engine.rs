//! The engine computes a packet's passage through a path's stages when it enters them (one
//! computation per packet and path, or per stretch between stages that reorder); a traced run
//! adds events for the stage-hop rows. The same scenario and seed must give the same summary at
//! every trace level.

use spikelab_sim::{parse, ColumnData, Scenario, Table, TraceLevel, World};
use std::path::Path;

fn repo(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(file),
    )
    .unwrap()
}

fn summary(sc: &Scenario, level: TraceLevel) -> (Table, u64) {
    let r = World::new(sc, sc.sim.seed, level).run(None).unwrap();
    (r.runs, r.events)
}

/// Equal values, NaN equal to NaN (bit for bit).
fn same(a: &ColumnData, b: &ColumnData) -> bool {
    match (a, b) {
        (ColumnData::F64(x), ColumnData::F64(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        _ => a == b,
    }
}

/// Checks the summaries at every trace level against the summary-only run; returns the events
/// of the summary-only and of the packets-traced run.
fn assert_same_everywhere(name: &str, text: &str, overrides: &[&str]) -> (u64, u64) {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let sc = parse(text, &o, Path::new(".")).unwrap();
    let (reference, summary_events) = summary(&sc, TraceLevel::Summary);
    let mut traced_events = 0;
    for level in [TraceLevel::Timeseries, TraceLevel::Packets] {
        let (runs, events) = summary(&sc, level);
        for (a, b) in runs.columns.iter().zip(&reference.columns) {
            assert!(
                same(&a.data, &b.data),
                "{name}: {} at {level:?}: {:?}, summary-only {:?}",
                a.name,
                a.data,
                b.data
            );
        }
        assert!(
            runs.columns.len() == reference.columns.len(),
            "{name}: summary at {level:?} differs from the summary-only run"
        );
        traced_events = events;
    }
    (summary_events, traced_events)
}

#[test]
fn every_trace_level_agrees_on_the_examples_and_the_dumbbell() {
    let _ = assert_same_everywhere("lte-handover", &repo("examples/lte-handover.toml"), &[]);
    let _ = assert_same_everywhere(
        "lte-handover-lossless",
        &repo("examples/lte-handover-lossless.toml"),
        &[],
    );
    let (folded, traced) = assert_same_everywhere(
        "dumbbell",
        &repo("benches/ns3-dumbbell.toml"),
        &["sim.duration=60s"],
    );
    // Four stages a path: untraced, one event carries a packet through all of them; traced,
    // each stage hop at its own time has an event for its rows.
    assert!(folded * 3 < traced, "{folded} events untraced vs {traced}");
}

#[test]
fn every_trace_level_agrees_on_random_shared_bottlenecks() {
    let template = r#"
[sim]
duration = "30s"
seed = SEED
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "RATE"
queue = QUEUE
[[path.fwd.stage]]
type = "delay"
reorder = REORDER
profile = [[0, 20, 0], [SPIKE, 20, 0], [SPIKE, 900, 0.02], [END, 20, 0.02], [END, 20, 0]]
[[path.fwd.stage]]
type = "loss"
model = "gilbert_elliott"
p = 0.01
r = 0.3
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "DELAY"
[[path.rev.stage]]
type = "loss"
p = ACKLOSS
[[flow]]
tcp = { variant = "sack", spurious = ["eifel", "dsack", "frto"] }
[[flow]]
start = "0.3s"
app = { type = "file", size = 400000 }
[[flow]]
start = "1s"
tcp = { variant = "reno", delayed_ack = false }
"#;
    let mut rng = spikelab_core::Rng::stream(7, "engine-equivalence");
    for case in 0..12u64 {
        let spike = 2000 + rng.next_u64() % 10_000;
        let text = template
            .replace("SEED", &case.to_string())
            .replace("RATE", &format!("{}kbps", 500 + rng.next_u64() % 10_000))
            .replace("QUEUE", &format!("{}", 5 + rng.next_u64() % 60))
            .replace("REORDER", if case % 4 == 3 { "true" } else { "false" })
            .replace("SPIKE", &spike.to_string())
            .replace("END", &(spike + 1500).to_string())
            .replace("DELAY", &format!("{}ms", rng.next_u64() % 30))
            .replace("ACKLOSS", if case % 3 == 0 { "0.01" } else { "0.0" });
        let _ = assert_same_everywhere(&format!("case {case}"), &text, &[]);
    }
}

#[test]
fn zero_delay_paths_agree_too() {
    let text = "[sim]\nduration = \"2s\"\n[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\n\
                delay = 0\n[[path.fwd.stage]]\ntype = \"loss\"\np = 0.01\n[path.rev]\n\
                [[flow]]\napp = { type = \"file\", size = 2000000 }\n";
    let _ = assert_same_everywhere("zero delay", text, &[]);
}

/// A consumer that waits for streamed chunks is woken by each chunk and by the run's end: with a
/// one-minute wait per call, the whole packets trace of a 60 s run arrives (every row once, in chunks
/// of at least the asked size) and the last wait returns at once instead of sleeping out its
/// minute. (A consumer that only polled would leave the run waiting on its bounded queue.)
#[test]
fn a_waiting_consumer_takes_every_chunk_as_it_comes() {
    use spikelab_sim::RunControl;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let text = "[sim]\nduration = \"60s\"\ntrace = \"packets\"\n[[flow]]\n";
    let sc = parse(text, &[], Path::new(".")).unwrap();
    let whole = World::new(&sc, 1, TraceLevel::Packets).run(None).unwrap();

    let ctl = Arc::new(RunControl::default());
    ctl.stream_rows.store(10_000, Ordering::Relaxed);
    let runner = {
        let (sc, ctl) = (sc.clone(), ctl.clone());
        std::thread::spawn(move || World::new(&sc, 1, TraceLevel::Packets).run(Some(&ctl)))
    };
    let (mut rows, mut chunks) = (0, 0);
    let started = Instant::now();
    while !ctl.is_finished() {
        for c in ctl.wait_chunks(Duration::from_secs(60)) {
            if c.table == "packets" {
                assert!(c.data.num_rows() >= 10_000);
                rows += c.data.num_rows();
                chunks += 1;
            }
        }
    }
    let rest = runner.join().unwrap().unwrap();
    assert!(ctl.wait_chunks(Duration::from_secs(60)).is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "a wait slept out its timeout"
    );
    assert!(chunks > 10);
    assert_eq!(rows + rest.packets.num_rows(), whole.packets.num_rows());
}

/// A rate stage behind a delay stage sees a folded packet's arrival ahead of simulated time;
/// its utilisation (and every other column) must still be the same at every trace level, with
/// every congestion control.
#[test]
fn trace_levels_agree_with_a_rate_stage_after_a_delay_and_every_congestion_control() {
    let text = r#"
[sim]
duration = "8s"
[path.fwd]
[[path.fwd.stage]]
type = "delay"
delay = "30ms"
[[path.fwd.stage]]
type = "rate"
rate = "4Mbps"
queue = 15
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "10ms"
[[path.rev.stage]]
type = "rate"
rate = "1Mbps"
[[flow]]
cc = "cubic"
[[flow]]
start = "0.5s"
cc = { algo = "cubic", flavor = "linux" }
[[flow]]
start = "1s"
cc = "bic"
[[flow]]
start = "1.5s"
cc = "westwood"
[[flow]]
start = "2s"
cc = "hybla"
tcp = { spurious = ["frto"] }
"#;
    let _ = assert_same_everywhere("delay then rate", text, &[]);
}
