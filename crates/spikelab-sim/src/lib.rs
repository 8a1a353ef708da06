//! The spikelab simulator: a scenario in, result tables out.
//!
//! ```text
//! scenario.toml ─► scenario::parse ─► World::new ─► World::run ─► RunResult { runs, timeseries, packets }
//! ```
//!
//! One run is single-threaded and deterministic: the same scenario and seed give identical
//! tables. Random components draw from streams derived from (seed, component label).

pub mod pcap;
pub mod schema;
mod truth;
mod world;

/// The result tables' columns and the packets table's event codes, in `spikelab-core` so the
/// emulator's capture analysis builds the same tables.
pub use spikelab_core::{packet_event, table};
/// The scenario format (schema, parse, profiles, presets), in its own crate so the emulator
/// reads scenarios without the simulator.
pub use spikelab_scenario as scenario;

/// Scenario value types with units (durations, bit rates, byte counts).
pub use spikelab_core::units;

pub use scenario::{
    build_stage, parse, profile_notes, ProfileNote, Scenario, ScenarioError, TraceLevel,
};
pub use table::{Column, ColumnData, Table};
pub use world::{
    Chunk, RunControl, RunError, RunResult, World, MAX_PENDING_CHUNKS, MAX_WORK_PER_INSTANT,
};

use std::fmt;
use std::path::Path;

/// Why a scenario did not produce a result: it is malformed, or its run stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    Scenario(ScenarioError),
    Run(RunError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Scenario(e) => e.fmt(f),
            Error::Run(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<ScenarioError> for Error {
    fn from(e: ScenarioError) -> Error {
        Error::Scenario(e)
    }
}

impl From<RunError> for Error {
    fn from(e: RunError) -> Error {
        Error::Run(e)
    }
}

/// Parses and runs a scenario. `seed` overrides `sim.seed`, `trace` overrides `sim.trace`.
pub fn run_text(
    text: &str,
    overrides: &[String],
    base_dir: &Path,
    seed: Option<u64>,
    trace: Option<TraceLevel>,
) -> Result<RunResult, Error> {
    let sc = parse(text, overrides, base_dir)?;
    Ok(run_scenario(&sc, seed, trace, None)?)
}

/// Runs a parsed scenario.
pub fn run_scenario(
    sc: &Scenario,
    seed: Option<u64>,
    trace: Option<TraceLevel>,
    ctl: Option<&RunControl>,
) -> Result<RunResult, RunError> {
    let seed = seed.unwrap_or(sc.sim.seed);
    let level = trace.unwrap_or(sc.sim.trace);
    World::new(sc, seed, level).run(ctl)
}

/// Runs a parsed scenario and writes its captures (`sim.pcap`) into `pcap_dir`; without
/// points in `sim.pcap`, the same as [`run_scenario`]. The captures' paths are in
/// [`RunResult::pcaps`].
pub fn run_scenario_pcap(
    sc: &Scenario,
    seed: Option<u64>,
    trace: Option<TraceLevel>,
    ctl: Option<&RunControl>,
    pcap_dir: &Path,
) -> Result<RunResult, RunError> {
    let seed = seed.unwrap_or(sc.sim.seed);
    let level = trace.unwrap_or(sc.sim.trace);
    World::new(sc, seed, level)
        .capture_to(sc, pcap_dir)?
        .run(ctl)
}
