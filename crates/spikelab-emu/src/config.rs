//! The emulator's configuration, as JSON (written by `spikelab emulate`).

use serde::{Deserialize, Serialize};

fn default_base_dir() -> String {
    ".".into()
}
fn default_snaplen() -> u32 {
    160
}
fn default_spin_ns() -> u64 {
    50_000
}
fn default_frame_buf() -> usize {
    2048
}
fn default_priority() -> i32 {
    50
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmuConfig {
    /// The veth on the sender's side: frames from it travel their flow's `fwd` path.
    pub iface_a: String,
    /// The veth on the receiver's side: frames from it travel their flow's `rev` path.
    pub iface_b: String,
    /// The scenario (TOML text), the overrides applied to it and the directory relative trace
    /// files are read from: the emulator parses and validates it with the simulator's code.
    pub scenario: String,
    #[serde(default)]
    pub overrides: Vec<String>,
    #[serde(default = "default_base_dir")]
    pub base_dir: String,
    /// Master seed (default: the scenario's `sim.seed`).
    #[serde(default)]
    pub seed: Option<u64>,
    /// The TCP port of each flow, in flow order: frames to (side A) or from (side B) it belong
    /// to that flow.
    pub ports: Vec<u16>,
    /// The run ends this long after t0, ns (default: the scenario's duration).
    #[serde(default)]
    pub stop_after_ns: Option<u64>,
    /// Where the pcapng goes.
    pub pcap: String,
    /// Bytes of each frame kept in the capture (0: whole frames).
    #[serde(default = "default_snaplen")]
    pub snaplen: u32,
    /// Run the emulator thread under SCHED_FIFO (falls back to the normal scheduler, and says
    /// so in the statistics, if the kernel refuses).
    #[serde(default)]
    pub realtime: bool,
    #[serde(default = "default_priority")]
    pub priority: i32,
    /// Busy-wait this long before a departure instead of sleeping through it, ns.
    #[serde(default = "default_spin_ns")]
    pub spin_ns: u64,
    /// Pin the emulator thread to this CPU.
    #[serde(default)]
    pub cpu: Option<usize>,
    /// Bytes per frame buffer (at least the veths' MTU + 14).
    #[serde(default = "default_frame_buf")]
    pub frame_buf: usize,
    /// Paths whose first stage (`backpressure`: the sender's own queue) is a qdisc on the
    /// sending host's interface, at the stage's rate and capacity: the emulator keeps the
    /// stage's serialisation and lifts its capacity (the qdisc refuses instead, and the
    /// kernel sees a local drop).
    #[serde(default)]
    pub host_queue_paths: Vec<String>,
    /// Per flow, the receiver's IPv4 address of each of its destinations (an SCTP
    /// association's `paths`, in order): a frame to (side A) or from (side B) address `k`
    /// travels destination `k`'s path. Empty: every frame of the flow uses its first.
    #[serde(default)]
    pub dest_addrs: Vec<Vec<String>>,
}

impl EmuConfig {
    pub fn from_json(text: &str) -> Result<EmuConfig, String> {
        serde_json::from_str(text).map_err(|e| format!("emulator configuration: {e}"))
    }
}
