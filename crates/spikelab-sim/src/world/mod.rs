//! The simulated world: paths, flows, the event loop, ground truth, metrics and traces.
//!
//! By job:
//! - [`events`]: the heap's events and their order at one instant (tie keys);
//! - [`paths`]: building stages, a sender's own queue, folding a packet's passage through a
//!   path's stages, the exit queues;
//! - [`tcp`] and [`sctp`]: the endpoints, pumped after every packet and timer, with their
//!   ground truth and their runs-table rows;
//! - [`metrics`]: the summary of a run and the runs table; [`series`]: the time series and the
//!   RTT histogram; [`packets`]: packet events as trace rows and captured frames;
//! - [`control`]: running the loop, cancellation, errors and streamed chunks;
//! - here: the world itself, its packets and its construction from a scenario.

use crate::packet_event::PacketRows;
use crate::pcap::{AssocWire, FlowWire, PcapWriter};
use crate::scenario::{build_stage, PcapPoint, Protocol, Scenario, TraceLevel};
use spikelab_core::{Arena, ArenaId, EventQueue, Rng, SimTime};
use spikelab_net::Stage;
use spikelab_tcp::Segment;
use std::collections::{HashMap, VecDeque};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Dir {
    Data,
    Ack,
}

struct Pkt {
    id: u64,
    flow: u32,
    dir: Dir,
    path: u16,
    /// Place in its path's entry order (0, 1, 2, ... per path): the tie key of its events.
    pseq: u64,
    seg: Segment,
    /// Transmission number of these bytes (0 = original); -1 for ACKs.
    tx: i32,
    size: u32,
}

/// Set in `Pkt::flow` (its connection's index) for an SCTP packet: `seg.window` then holds the packet's slot in `Io::sctp_pkts` (its chunks). Kept inside the
/// existing fields so that a packet stays 152 bytes: one more field made the arena's moves
/// calls to memcpy and cost the TCP dumbbell 10 % of its core time.
const SCTP_FLOW: u32 = 1 << 31;
const _: () = assert!(std::mem::size_of::<Pkt>() <= 152);

impl Pkt {
    /// The packet's SCTP chunks, if it is an SCTP packet.
    fn sctp(&self) -> Option<ArenaId> {
        (self.flow & SCTP_FLOW != 0).then_some(ArenaId(self.seg.window as u32))
    }

    /// Its connection's index in `World::conns`.
    fn conn(&self) -> u32 {
        self.flow & !SCTP_FLOW
    }
}

mod control;
mod endpoint;
mod events;
mod metrics;
mod packets;
mod paths;
mod sctp;
mod series;
mod tcp;

pub use control::{
    Chunk, RunControl, RunError, RunResult, MAX_PENDING_CHUNKS, MAX_WORK_PER_INSTANT,
};
use endpoint::*;
use events::*;
use metrics::*;
use paths::*;
use series::*;
use tcp::*;

pub struct World {
    seed: u64,
    now: SimTime,
    end: SimTime,
    level: TraceLevel,
    /// The heap, the packets in flight and the time series: what endpoints use ([`Cx`]).
    io: Io,
    paths: Vec<PathRt>,
    path_names: Vec<String>,
    stage_names: Vec<String>,
    /// (path name, stage name) of every stage, in flat order.
    global_stages: Vec<(String, String)>,
    /// The TCP flows and SCTP associations ([`Conn`]).
    conns: Vec<Conn>,
    /// The first association's index in `conns` (the TCP flows come first).
    first_assoc: u32,
    /// Each connection's earliest queued timer event of each side ([`arm_timer`]).
    timers: Vec<[Option<SimTime>; 2]>,
    events: u64,
    ptrace: PacketRows,
    /// Packets traced: what a HARQ stage did to a packet (its id, the stage index) until the
    /// row of its leaving (or drop) is written: (transmissions, decode delay in µs).
    harq_fates: HashMap<(u64, usize), (i32, i32)>,
    /// Upper bound on packets-trace rows (`sim.max_packets_rows`).
    max_packets_rows: u64,
    /// Set when a bound was exceeded; ends the run with this error.
    failure: Option<(String, String)>,
    /// The captures being written (`sim.pcap` with a directory), if any.
    pcap: Option<Box<PcapWriter>>,
    /// Packet events are traced or captured: `trace_pkt` has work to do.
    observe: bool,
    /// Stage hops are followed one by one: packets are traced, or a capture watches a stage
    /// boundary.
    stage_rows: bool,
    /// Test-only: `SPIKELAB_TEST_PANIC` set in the environment makes the first event panic, so
    /// tests can check that a failure inside the core reaches the caller as an error.
    test_panic: bool,
}

/// What the world lends its endpoints ([`Cx`]) besides the time: the heap, the packets in flight
/// and the time series. One field of the world, so that lending it costs one pointer.
pub(super) struct Io {
    queue: EventQueue<Ev>,
    packets: Arena<Pkt>,
    /// The chunks of SCTP packets in flight.
    sctp_pkts: Arena<sctp::SctpPkt>,
    /// The next packet's id.
    next_pkt: u64,
    series: SeriesTrace,
    /// Per-destination time series of SCTP associations (with their `dest`).
    dest_series: Markers,
}

/// Flow `i`'s random start delay in nanoseconds: uniform in `[0, start_jitter)` from the stream
/// `flow/{i}/start`, so no other component's draws change; 0 without drawing when the key is 0.
fn start_jitter(seed: u64, i: usize, f: &crate::scenario::FlowSpec) -> u64 {
    let j = f.start_jitter.0.as_nanos();
    if j == 0 {
        return 0;
    }
    let u = Rng::stream(seed, &format!("flow/{i}/start")).next_f64();
    ((u * j as f64) as u64).min(j - 1)
}

impl World {
    /// Builds the world for a validated scenario.
    pub fn new(sc: &Scenario, seed: u64, level: TraceLevel) -> World {
        let mut paths = Vec::new();
        let mut path_names = Vec::new();
        let mut stage_names: Vec<String> = Vec::new();
        let mut global_stages = Vec::new();
        for (name, spec) in &sc.path {
            let first_global = global_stages.len();
            let mut stages = Vec::new();
            let mut stage_code = Vec::new();
            for (i, st) in spec.stage.iter().enumerate() {
                let sname = st.name.clone().unwrap_or_else(|| st.kind_name().into());
                stages.push(build_stage(name, i, &spec.stage, seed));
                let code = match stage_names.iter().position(|s| *s == sname) {
                    Some(c) => c,
                    None => {
                        stage_names.push(sname.clone());
                        stage_names.len() - 1
                    }
                };
                stage_code.push(code as i32);
                global_stages.push((name.clone(), sname));
            }
            let all_keep_order = stages.iter().all(Stage::keeps_order);
            // Validated: only a path's first stage, a rate stage, has it.
            let backpressure = spec.stage.first().is_some_and(|st| st.config.own_queue());
            paths.push(PathRt {
                all_keep_order,
                backpressure,
                held: VecDeque::new(),
                held_armed: false,
                stages,
                stage_code,
                first_global,
                next_pseq: 0,
                next: None,
                exits: VecDeque::new(),
            });
            path_names.push(name.clone());
        }
        for (p, spec) in paths.iter_mut().zip(sc.path.values()) {
            p.next = spec.next.as_ref().map(|n| {
                path_names
                    .iter()
                    .position(|x| x == n)
                    .expect("validated: next names a path") as u16
            });
        }
        // Utilisation counts serialisation before the run's end, whichever engine runs.
        let end = SimTime(sc.sim.duration.0.as_nanos());
        for st in paths.iter_mut().flat_map(|p| p.stages.iter_mut()) {
            if let Some(r) = st.as_rate_mut() {
                r.set_busy_clip(end);
            }
        }
        let n_global = global_stages.len();
        let mut queue = EventQueue::with_capacity(4096);
        let idx = |p: &str| path_names.iter().position(|n| n == p).expect("resolved") as u16;
        // TCP flows first, then associations (see `Conn`), each starting at its own time.
        let tcp = sc
            .flow
            .iter()
            .enumerate()
            .filter(|(_, f)| f.protocol == Protocol::Tcp);
        let sctp = sc
            .flow
            .iter()
            .enumerate()
            .filter(|(_, f)| f.protocol == Protocol::Sctp);
        let mut conns = Vec::new();
        for (i, f) in tcp.chain(sctp) {
            let start = SimTime(f.start.0.as_nanos() + start_jitter(seed, i, f));
            let c = conns.len() as u32;
            queue.push_keyed(start, tie_key(KEY_START, i as u32, 0, 0), Ev::Start(c));
            let i = i as u32;
            conns.push(match f.protocol {
                Protocol::Tcp => {
                    let (fwd, rev) = (idx(&f.fwd), idx(&f.rev));
                    let own_queue = paths[fwd as usize].backpressure;
                    let paths = (fwd, rev);
                    Conn::Tcp(FlowRt::new(i, c, f, start, paths, own_queue, n_global))
                }
                Protocol::Sctp => {
                    let dests = f
                        .destinations()
                        .iter()
                        .map(|d| (idx(&d.fwd), idx(&d.rev)))
                        .collect();
                    Conn::Sctp(sctp::AssocRt::new(i, f, start, dests, seed, n_global))
                }
            });
        }
        let first_assoc = conns
            .iter()
            .take_while(|c| matches!(c, Conn::Tcp(_)))
            .count() as u32;
        World {
            seed,
            now: SimTime::ZERO,
            end: SimTime(sc.sim.duration.0.as_nanos()),
            level,
            io: Io {
                queue,
                packets: Arena::with_capacity(4096),
                sctp_pkts: Arena::with_capacity(64),
                next_pkt: 0,
                series: SeriesTrace::default(),
                dest_series: Markers::default(),
            },
            paths,
            path_names,
            stage_names,
            global_stages,
            timers: vec![[None; 2]; conns.len()],
            conns,
            first_assoc,
            events: 0,
            ptrace: PacketRows::default(),
            harq_fates: HashMap::new(),
            max_packets_rows: sc.sim.max_packets_rows,
            failure: None,
            pcap: None,
            observe: level >= TraceLevel::Packets,
            stage_rows: level >= TraceLevel::Packets,
            test_panic: std::env::var_os("SPIKELAB_TEST_PANIC").is_some(),
        }
    }

    /// Writes captures of the run at the scenario's `sim.pcap` points into `dir` (nothing
    /// without points). Files stay under temporary names until the run completes.
    pub fn capture_to(mut self, sc: &Scenario, dir: &std::path::Path) -> Result<World, RunError> {
        let points: Vec<PcapPoint> = sc
            .sim
            .pcap
            .0
            .iter()
            .map(|s| PcapPoint::parse(s).expect("validated: sim.pcap"))
            .collect();
        if points.is_empty() {
            return Ok(self);
        }
        // Each flow's wire identity (addresses, ports, initial sequence numbers).
        let (mut flows, mut assocs) = (Vec::new(), Vec::new());
        for (i, f) in sc.flow.iter().enumerate() {
            match f.protocol {
                Protocol::Tcp => {
                    let cfg = f.tcp_config();
                    let w = FlowWire::new(self.seed, i, cfg.mss, cfg.rwnd, cfg.sack);
                    flows.push((i as u32, w));
                }
                Protocol::Sctp => {
                    let w = AssocWire::new(self.seed, i, f.destinations().len());
                    assocs.push((i as u32, w));
                }
            }
        }
        let name = sc.name.as_deref().unwrap_or("");
        let meta = format!(
            "\"scenario\":{},\"seed\":{}",
            serde_json::to_string(name).unwrap_or_default(),
            self.seed
        );
        let names = &self.path_names;
        let w = PcapWriter::create(
            dir,
            &points,
            flows,
            assocs,
            sc.sim.pcap_snaplen,
            &meta,
            |p| names.iter().position(|n| n == p).map(|i| i as u16),
        )
        .map_err(|e| RunError {
            field: "sim.pcap".into(),
            message: format!("could not create the captures in {}: {e}", dir.display()),
            t: SimTime::ZERO,
            events: 0,
        })?;
        self.stage_rows |= w.needs_stages();
        self.observe = true;
        self.pcap = Some(Box::new(w));
        Ok(self)
    }

    /// The result tables of a run that has not started (every counter zero): the columns and
    /// the scenario's settings without simulating, e.g. as the schema for an emulated run.
    pub fn unstarted(self) -> RunResult {
        self.finish()
    }
}

// ---- the runs table's rows: filled by tcp.rs and sctp.rs, written by metrics.rs -----------

/// Per-detector score of one flow.
#[derive(Clone, Copy, Default)]
struct DetScore {
    tp: i64,
    fp: i64,
    fn_: i64,
    tn: i64,
    undecided: i64,
    delay_sum_s: f64,
}

/// One flow's row of the runs table.
struct RunRow {
    flow: i32,
    protocol: &'static str,
    cc: &'static str,
    /// TCP's MSS; SCTP's chunk payload.
    mss: i64,
    delivery: Delivery,
    /// Retransmission timeouts (SCTP: T3-rtx expiries) and fast retransmits, each with how
    /// many were spurious by the ground truth; retransmitted segments (chunks); the same per
    /// packet sent.
    rto_count: i64,
    rto_spurious_true: i64,
    fast_retx_count: i64,
    fast_retx_spurious_true: i64,
    retx_segments: i64,
    spurious_retx_true: i64,
    segments_sent: i64,
    rto_per_pkt: f64,
    spurious_retx_per_pkt: f64,
    retx_per_pkt: f64,
    rto_episodes: i64,
    rto_episodes_spurious_true: i64,
    fr_episodes: i64,
    fr_episodes_spurious_true: i64,
    /// Drops per stage, in the flat order of every path's stages.
    drops: Vec<u64>,
    /// The transport's own columns; the other transport's do not apply (null in the table:
    /// `crate::schema`).
    tcp: Option<TcpColumns>,
    sctp: Option<SctpColumns>,
}

/// The columns only a TCP flow fills (null for an association).
struct TcpColumns {
    dupacks_rcvd: i64,
    dsacks_rcvd: i64,
    /// Data segments the receiver discarded by PAWS.
    paws_rejected: i64,
    dupacks_per_pkt: f64,
    /// The detectors enabled, and the response.
    spurious: String,
    response: &'static str,
    rto_spurious_detected: i64,
    fr_spurious_detected: i64,
    undo_count: i64,
    tlp_count: i64,
    tlp_recoveries: i64,
    rack_loss_count: i64,
    local_cwr_count: i64,
    moderate_cwnd_cuts: i64,
    /// Time in timeout recovery, s.
    timeout_time_s: f64,
    /// The expired RTOs summed, s.
    rto_wait_s: f64,
    /// Each detector's score; `None` for one that is off (null in the table).
    det: [Option<DetScore>; N_DETECTORS],
}

/// The columns only an SCTP association fills (null for a TCP flow).
struct SctpColumns {
    failovers: i64,
    /// NaN without failover (null in the table).
    time_to_failover_s: f64,
    /// Simulated time of the first failover; NaN without failover (null in the table).
    failover_at_s: f64,
    data_primary_bytes: i64,
    data_other_bytes: i64,
    heartbeats_sent: i64,
    /// NaN if never established (null in the table).
    setup_time_s: f64,
    assoc_failed: i64,
}
