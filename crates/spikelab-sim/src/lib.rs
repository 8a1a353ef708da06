//! The spikelab simulator: a scenario in, result tables out.
//!
//! ```text
//! scenario.toml ─► scenario::parse ─► World::new ─► World::run ─► RunResult { runs, timeseries, packets }
//! ```
//!
//! One run is single-threaded and deterministic: the same scenario and seed give identical
//! tables. Random components draw from streams derived from (seed, component label).

pub mod packet_event;
pub mod scenario;
pub mod table;
pub mod units;
mod world;

pub use scenario::{parse, Scenario, ScenarioError, TraceLevel};
pub use table::{Column, ColumnData, Table};
pub use world::{build_stage, RunControl, RunResult, World};

use std::path::Path;

/// Parses and runs a scenario. `seed` overrides `sim.seed`, `trace` overrides `sim.trace`.
pub fn run_text(
    text: &str,
    overrides: &[String],
    base_dir: &Path,
    seed: Option<u64>,
    trace: Option<TraceLevel>,
) -> Result<RunResult, ScenarioError> {
    let sc = parse(text, overrides, base_dir)?;
    Ok(run_scenario(&sc, seed, trace, None))
}

/// Runs a parsed scenario.
pub fn run_scenario(
    sc: &Scenario,
    seed: Option<u64>,
    trace: Option<TraceLevel>,
    ctl: Option<&RunControl>,
) -> RunResult {
    let seed = seed.unwrap_or(sc.sim.seed);
    let level = trace.unwrap_or(sc.sim.trace);
    World::new(sc, seed, level).run(ctl)
}
