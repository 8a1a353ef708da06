//! Whole-run checks on the bundled examples (paper 000 §3).

use spikelab_sim::{run_text, TraceLevel};
use std::path::Path;

fn example(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn print_summary() {
    let r = run_text(
        &example("lte-handover.toml"),
        &[],
        Path::new("."),
        None,
        Some(TraceLevel::Packets),
    )
    .unwrap();
    for c in &r.runs.columns {
        println!("{} = {:?}", c.name, c.data);
    }
    println!("events {} packets rows {}", r.events, r.packets.num_rows());
}
