//! spikelab's real-time emulator: a scenario's path stages applied to real frames.
//!
//! The emulator sits between two veths in its own network namespace, with the sending host on
//! one side (A) and the receiving host on the other (B). Every frame it reads goes through the
//! stages of its flow's path (`fwd` from A to B, `rev` from B to A): the same `spikelab-net`
//! rate, delay and loss stages the simulator uses, built from the same scenario with the same
//! RNG streams, driven by kernel receive timestamps instead of simulated events. It leaves on
//! the other side when the stages say, give or take the engine's timing error, which is
//! measured for every frame and reported.
//!
//! - [`pipeline`]: the stages and the hop heap, without I/O (tested without sockets);
//! - `rt` (Linux only): AF_PACKET sockets, timerfd, the real-time loop;
//! - [`pcapng`], [`notes`]: the capture: every frame in, out and dropped, with nanosecond
//!   timestamps and what the emulator did;
//! - [`analyze`]: from a capture to the simulator's `packets` table and per-flow figures.
//!
//! Maturity: the engine runs the paths of the scenario format (rate with drop-tail queue,
//! fixed / profile / trace delay, Bernoulli / Gilbert-Elliott / profile / deterministic loss)
//! for TCP flows over IPv4. Its timing depends on the machine: see `docs/emulation.md`.

pub mod analyze;
pub mod config;
pub mod frame;
pub mod notes;
pub mod pcapng;
pub mod pipeline;
#[cfg(target_os = "linux")]
pub mod rt;
pub mod view;

pub use analyze::{analyze, Analysis, FlowSummary, Timing};
pub use config::EmuConfig;

/// Reads and analyses a capture file.
pub fn analyze_file(path: &std::path::Path, duration_ns: u64) -> Result<Analysis, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let cap = pcapng::read(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    analyze(&cap, duration_ns)
}
