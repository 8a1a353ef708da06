//! The simulated world: paths, flows, the event loop, ground truth, metrics and traces.

use crate::pcap::{AssocWire, FlowWire, PcapWriter, Seen};
use crate::scenario::PcapPoint;
use crate::scenario::{AppKind, LossKind, Protocol, Scenario, StageKind, StageSpec, TraceLevel};
use crate::table::{ColumnData, Table};
use crate::truth::Truth;
use spikelab_core::{Arena, ArenaId, EventQueue, Rng, SimDuration, SimTime};
use spikelab_net::{
    DelayStage, DropCause, LossModel, LossStage, Outcome, PacketInfo, QueueLimit, RateSchedule,
    RateStage, RlcStage, Stage, StallSchedule, StallStage, Switching,
};
use spikelab_tcp::spurious::{DetectorKind, EpisodeKind};
use spikelab_tcp::{CaState, Receiver, Segment, Sender, SpuriousEvent, TxKind};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

/// Work items (heap events and same-instant deliveries) the loop accepts at one instant before
/// it declares simulated time stuck: a path with neither delay nor rate lets a bulk flow
/// exchange data and ACKs forever without time advancing.
pub const MAX_WORK_PER_INSTANT: u64 = 20_000_000;

/// A run that could not finish: simulated time stopped advancing, a trace outgrew its bound,
/// or the core hit a bug (a panic, caught and reported with where the run was).
#[derive(Clone, Debug, PartialEq)]
pub struct RunError {
    /// The scenario field concerned, if one is (`sim.max_packets_rows`); empty otherwise.
    pub field: String,
    pub message: String,
    /// Simulated time when the run stopped.
    pub t: SimTime,
    /// Events processed by then.
    pub events: u64,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(
            f,
            "{} (at t = {} s, after {} events)",
            self.message,
            self.t.as_secs_f64(),
            self.events
        )
    }
}

impl std::error::Error for RunError {}

/// Shared with another thread while a run executes: progress out, cancellation in, and, when
/// streaming, finished chunks of the trace tables out.
#[derive(Debug, Default)]
pub struct RunControl {
    /// Simulated time reached, ns (updated every few thousand events).
    pub progress_ns: AtomicU64,
    /// Set to stop the run at the next check; the result is then marked `cancelled`.
    pub cancel: AtomicBool,
    /// Rows per streamed chunk of `timeseries` and `packets` (0: no streaming; the whole tables
    /// come with the result). Set before the run starts.
    pub stream_rows: AtomicU64,
    /// Chunks waiting for the consumer ([`RunControl::take_chunks`]), in table order.
    chunks: Mutex<Vec<Chunk>>,
    /// Signalled when the consumer took chunks (the run waits while too many are pending).
    taken: Condvar,
    /// Signalled when a chunk is handed over or the run ends (the consumer waits for either).
    ready: Condvar,
    /// The run has ended (completed, cancelled or failed): no more chunks will come.
    finished: AtomicBool,
}

/// A streamed piece of a trace table; the pieces of one table, concatenated in the order they
/// came, followed by the result's own (remaining) rows, are the table.
#[derive(Debug)]
pub struct Chunk {
    /// `"timeseries"` or `"packets"`.
    pub table: &'static str,
    pub data: Table,
}

/// Chunks a run may leave untaken before it waits for the consumer: the bound on the memory a
/// streamed trace holds (a few chunks of `stream_rows` rows).
pub const MAX_PENDING_CHUNKS: usize = 4;

impl RunControl {
    /// Takes the chunks streamed so far (oldest first) and lets a waiting run go on.
    pub fn take_chunks(&self) -> Vec<Chunk> {
        let mut q = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        let out = std::mem::take(&mut *q);
        self.taken.notify_all();
        out
    }

    /// Waits up to `timeout` for a chunk (returning at once if one is pending or the run has
    /// ended), then takes the chunks as [`RunControl::take_chunks`] does. A consumer that
    /// waits here takes each chunk as soon as it is made, so the run never waits on a poll.
    pub fn wait_chunks(&self, timeout: std::time::Duration) -> Vec<Chunk> {
        let deadline = std::time::Instant::now() + timeout;
        let mut q = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        while q.is_empty() && !self.finished.load(Ordering::Acquire) {
            let now = std::time::Instant::now();
            if now >= deadline {
                break;
            }
            q = self
                .ready
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let out = std::mem::take(&mut *q);
        self.taken.notify_all();
        out
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Marks the run ended and wakes a waiting consumer.
    fn mark_finished(&self) {
        let _q = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        self.finished.store(true, Ordering::Release);
        self.ready.notify_all();
    }

    /// Hands a chunk over; waits while [`MAX_PENDING_CHUNKS`] are untaken (unless cancelled).
    fn give(&self, chunk: Chunk) {
        let mut q = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        while q.len() >= MAX_PENDING_CHUNKS && !self.cancel.load(Ordering::Relaxed) {
            q = self
                .taken
                .wait_timeout(q, std::time::Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        q.push(chunk);
        self.ready.notify_all();
    }
}

/// Tables and counters of one run.
#[derive(Debug, Default)]
pub struct RunResult {
    pub runs: Table,
    pub timeseries: Table,
    pub packets: Table,
    /// Events processed.
    pub events: u64,
    /// The end of the run (the scenario's duration).
    pub end: SimTime,
    /// The run was stopped through [`RunControl::cancel`]; the tables are partial.
    pub cancelled: bool,
    /// The captures written (`sim.pcap`), complete under their final names.
    pub pcaps: Vec<std::path::PathBuf>,
}

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

/// Set in `Pkt::flow` for an SCTP packet: `flow` then indexes the associations, and
/// `seg.window` holds the packet's slot in `World::sctp_pkts` (its chunks). Kept inside the
/// existing fields so that a packet stays 152 bytes: one more field made the arena's moves
/// calls to memcpy and cost the TCP dumbbell 10 % of its core time.
const SCTP_FLOW: u32 = 1 << 31;
const _: () = assert!(std::mem::size_of::<Pkt>() <= 152);

impl Pkt {
    /// The packet's SCTP chunks, if it is an SCTP packet.
    fn sctp(&self) -> Option<ArenaId> {
        (self.flow & SCTP_FLOW != 0).then_some(ArenaId(self.seg.window as u32))
    }

    /// Its flow's index among the TCP flows or among the associations.
    fn local_flow(&self) -> usize {
        (self.flow & !SCTP_FLOW) as usize
    }
}

mod sctp;

enum Ev {
    Start(u32),
    /// An SCTP association's client sends its INIT.
    AssocStart(u32),
    /// A timer of an association's endpoint A (`false`) or B (`true`).
    AssocTimer(u32, bool),
    /// The packet leaves stages `from..=to` of its path at this instant (their passage was
    /// computed when it entered them): their rows in the packets trace, and, when `cont`, the
    /// packet goes on through the stages after `to` (which does not keep order) from now.
    Hop {
        pkt: ArenaId,
        from: u8,
        to: u8,
        cont: bool,
    },
    DropAt {
        pkt: ArenaId,
        stage: u16,
        cause: DropCause,
    },
    /// The path's first stage (a sender's own queue, `backpressure`) may have room for the
    /// packets it refused.
    Held(u16),
    /// The packet at the head of the path's exit queue leaves the path.
    PathHead(u16),
    SndTimer(u32),
    RcvTimer(u32),
    /// A TCP flow held back by TCP Small Queues may have room in its interface's queue.
    SmallQueue(u32),
}

// An event is 8 bytes, so a heap entry (time, key, event) stays 32: the heap's sift moves
// entries by plain loads and stores (a larger entry cost 15 % of the dumbbell's core time).
const _: () = assert!(std::mem::size_of::<Ev>() <= 8);

// ---- tie keys --------------------------------------------------------------------------------
//
// Events at one instant pop in the order of a key that says what they are, never when they were
// pushed: a traced run has events (stage-hop rows) that an untraced one does not, and the key
// keeps every event an endpoint sees in the same order whatever else is queued, so a run's
// summary is the same at every trace level. At one instant:
//   1. flow starts, by flow index;
//   2. packet events, by path index, then the packet's place in its path's entry order, then
//      the stage (a packet's stage hops before its leaving the path);
//   3. timers, by flow index, the sender's before the receiver's.
const KEY_START: u128 = 0;
const KEY_PKT: u128 = 1;
const KEY_TIMER: u128 = 2;
/// The `stage` part of a packet's key when it leaves its path (after every stage).
const KEY_PATH_EXIT: u32 = 0xFF_FFFF;

fn tie_key(class: u128, owner: u32, seq: u64, part: u32) -> u128 {
    debug_assert!(part <= KEY_PATH_EXIT);
    (class << 120) | ((owner as u128) << 88) | ((seq as u128) << 24) | part as u128
}

struct PathRt {
    stages: Vec<Stage>,
    /// Dictionary code of each stage's name.
    stage_code: Vec<i32>,
    /// Index of the path's first stage in the flat list of all stages.
    first_global: usize,
    /// Every stage keeps order: an untraced packet's whole passage is one computation.
    all_keep_order: bool,
    /// Entry counter: the next packet's `pseq`.
    next_pseq: u64,
    /// The path a packet enters when it leaves this one (`None`: it is delivered).
    next: Option<u16>,
    /// Packets that have a time to leave the path, in leaving order: (time, pseq, packet).
    /// Only the head has an event in the heap.
    exits: VecDeque<(SimTime, u64, ArenaId)>,
    /// The first stage is a sender's own queue (`backpressure`): packets senders put on the
    /// path while it is full wait here, in order, instead of being dropped.
    backpressure: bool,
    held: VecDeque<ArenaId>,
    /// An `Ev::Held` is queued.
    held_armed: bool,
}

impl PathRt {
    /// The first stage of a path with `backpressure`: the sender's own queue, a rate stage
    /// (validated).
    fn own_queue(&mut self) -> &mut RateStage {
        match &mut self.stages[0] {
            Stage::Rate(r) => r,
            _ => unreachable!("backpressure is validated to be on a rate stage"),
        }
    }
}

/// What the simulator records about one loss-recovery episode of a sender.
#[derive(Clone)]
struct EpisodeRec {
    kind: EpisodeKind,
    seq: u64,
    start: SimTime,
    /// Segment index and transmission number of the retransmission that started the episode
    /// (`None` until it leaves the sender).
    trigger: Option<(usize, u16)>,
    /// When the next episode started (the end of this one's judging).
    end: Option<SimTime>,
    /// Each detector's first verdict: (time, spurious).
    verdicts: [Option<(SimTime, bool)>; N_DETECTORS],
    /// The response's time, if one was applied.
    undo: Option<(SimTime, u64)>,
}

struct FlowRt {
    /// The flow's index in the scenario.
    id: u32,
    fwd: u16,
    rev: u16,
    start: SimTime,
    mss: u64,
    snd: Sender,
    rcv: Receiver,
    /// The flow runs ns-2.35's agent and sink (`profile = "ns2"`): ns-2's packet sizes.
    ns2: bool,
    snd_timer: Option<SimTime>,
    rcv_timer: Option<SimTime>,
    truth: Truth,
    rto_events: Vec<(SimTime, usize, u16)>,
    fr_events: Vec<(SimTime, usize, u16)>,
    episodes: Vec<EpisodeRec>,
    last_vars: [u64; N_VARS],
    last_rcv_nxt: u64,
    last_progress: SimTime,
    longest_stall: SimDuration,
    completed: Option<SimTime>,
    drops: Vec<u64>,
    /// RTT samples, for the queueing-delay statistics.
    rtt_hist: RttHist,
    /// TCP Small Queues (`tcp.small_queue`, 0: off), when the flow's first path starts with a
    /// sender's own queue (`backpressure`).
    tsq: Option<SmallQueue>,
}

/// Linux TCP Small Queues (`tcp_small_queue_check`) on a sender's own interface queue: the
/// flow stops handing segments down while it has `limit` packets there (or about a
/// millisecond of its pacing rate, if more), unless at most one segment is outstanding, and
/// goes on when one leaves (`tcp_wfree` on the packet's transmission). Refused segments the
/// host holds count too (they wait for the same queue).
struct SmallQueue {
    limit: u32,
    /// When each of the flow's packets in the queue finishes its serialisation there, in order.
    leaving: VecDeque<SimTime>,
    /// The flow's packets the queue refused that wait for room.
    held: u32,
    /// The flow stopped for the limit and waits for a packet to leave.
    throttled: bool,
    /// An `Ev::SmallQueue` is queued for this time.
    wake: Option<SimTime>,
}

impl SmallQueue {
    /// The flow's TCP Small Queues, if it has a limit and its first path starts with a
    /// sender's own queue.
    fn new(f: &crate::scenario::FlowSpec, own_queue: bool) -> Option<SmallQueue> {
        (f.tcp.small_queue > 0 && own_queue).then(|| SmallQueue {
            limit: f.tcp.small_queue as u32,
            leaving: VecDeque::new(),
            held: 0,
            throttled: false,
            wake: None,
        })
    }
}

/// A histogram of RTT samples in logarithmic bins (each 0.1 % wider than the one below), kept
/// only over the range the samples span: a few kB per flow, whatever the run's length. Its
/// quantiles are within 0.1 % of the RTT; its minimum is exact.
#[derive(Default)]
struct RttHist {
    /// Bin index of `bins[0]`.
    base: i64,
    bins: Vec<u32>,
    n: u64,
    min: Option<SimDuration>,
    /// The last sample and its bin: timestamp samples come in whole clock ticks, so most
    /// repeat the one before, and the logarithm is the costly part.
    last: Option<(SimDuration, i64)>,
}

impl RttHist {
    /// ln of the bin width ratio.
    const LN_RATIO: f64 = 0.000_999_500_333; // ln(1.001)

    fn add(&mut self, r: SimDuration) {
        self.min = Some(self.min.map_or(r, |m| m.min(r)));
        let i = match self.last {
            Some((l, i)) if l == r => i,
            _ => {
                let i = ((r.as_nanos().max(1) as f64).ln() / Self::LN_RATIO).floor() as i64;
                self.last = Some((r, i));
                i
            }
        };
        if self.bins.is_empty() {
            self.base = i;
        }
        if i < self.base {
            let k = (self.base - i) as usize;
            self.bins.splice(0..0, std::iter::repeat_n(0, k));
            self.base = i;
        }
        let j = (i - self.base) as usize;
        if j >= self.bins.len() {
            self.bins.resize(j + 1, 0);
        }
        self.bins[j] += 1;
        self.n += 1;
    }

    /// The `q`-quantile, seconds (the middle of its bin); NaN without samples.
    fn quantile_s(&self, q: f64) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let target = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (j, &c) in self.bins.iter().enumerate() {
            seen += c as u64;
            if seen >= target {
                let i = (self.base + j as i64) as f64 + 0.5;
                return (i * Self::LN_RATIO).exp() * 1e-9;
            }
        }
        f64::NAN
    }
}

const VAR_NAMES: [&str; 28] = [
    "cwnd",
    "ssthresh",
    "srtt",
    "rttvar",
    "rto",
    "snd_una",
    "snd_nxt",
    "inflight",
    "ca_state",
    "rtt_sample",
    "rcv_nxt",
    "rto_expiry",
    "fast_retx",
    "dupacks",
    "verdict_eifel",
    "verdict_dsack",
    "verdict_frto",
    "verdict_linux",
    "undo",
    "failover",
    "dest_cwnd",
    "dest_ssthresh",
    "dest_srtt",
    "dest_rttvar",
    "dest_rto",
    "dest_state",
    "dest_errors",
    "dest_flight",
];
const N_VARS: usize = 9;
const VAR_RTT_SAMPLE: i32 = 9;
const VAR_RCV_NXT: i32 = 10;
const VAR_RTO_EXPIRY: i32 = 11;
const VAR_FAST_RETX: i32 = 12;
/// `verdict_<detector>`: `VAR_VERDICT + DetectorKind as i32`.
const VAR_VERDICT: i32 = 14;
const VAR_UNDO: i32 = VAR_VERDICT + N_DETECTORS as i32;
/// An SCTP failover: value = the new data destination, `dest` = the one left.
const VAR_FAILOVER: i32 = VAR_UNDO + 1;
/// The first per-destination variable (the last names of `VAR_NAMES`), `dest` = the destination.
const VAR_DEST: i32 = VAR_FAILOVER + 1;
/// Detectors scored per flow.
const N_DETECTORS: usize = DetectorKind::ALL.len();

use crate::packet_event::{
    PacketRows, ACK as EV_ACK, DELIVER as EV_DELIVER, DROP as EV_DROP, ENTER as EV_ENTER,
    EXIT as EV_EXIT, RETX as EV_RETX, SEND as EV_SEND, TLP as EV_TLP,
};

/// The time series recorded while the run lasts: 24 bytes a row. Retransmission markers
/// (with their segment and transmission number) are few and built at the end ([`Markers`]).
#[derive(Default)]
struct SeriesTrace {
    t: Vec<i64>,
    flow: Vec<i32>,
    var: Vec<i32>,
    value: Vec<f64>,
}

impl SeriesTrace {
    fn push(&mut self, t: SimTime, flow: u32, var: i32, value: f64) {
        if self.t.len() == self.t.capacity() {
            crate::packet_event::reserve_lean(&mut self.t);
            let n = self.t.capacity() - self.t.len();
            self.flow.reserve_exact(n);
            self.var.reserve_exact(n);
            self.value.reserve_exact(n);
        }
        self.t.push(t.as_nanos() as i64);
        self.flow.push(flow as i32);
        self.var.push(var);
        self.value.push(value);
    }
}

/// Marker rows: timeouts, fast retransmits, verdicts and undos, each with the first byte of
/// the retransmission concerned (`seq`) and its transmission number (`tx`).
#[derive(Default)]
struct Markers {
    rows: SeriesTrace,
    seq: Vec<i64>,
    tx: Vec<i32>,
    /// The SCTP destination a row is about (-1: none).
    dest: Vec<i32>,
}

impl Markers {
    fn mark(&mut self, t: SimTime, flow: u32, var: i32, value: f64, seq: i64, tx: i32) {
        self.mark_dest(t, flow, var, value, seq, tx, -1);
    }

    #[allow(clippy::too_many_arguments)]
    fn mark_dest(
        &mut self,
        t: SimTime,
        flow: u32,
        var: i32,
        value: f64,
        seq: i64,
        tx: i32,
        dest: i32,
    ) {
        self.rows.push(t, flow, var, value);
        self.seq.push(seq);
        self.tx.push(tx);
        self.dest.push(dest);
    }
}

pub struct World {
    seed: u64,
    now: SimTime,
    end: SimTime,
    level: TraceLevel,
    queue: EventQueue<Ev>,
    paths: Vec<PathRt>,
    path_names: Vec<String>,
    stage_names: Vec<String>,
    /// (path name, stage name) of every stage, in flat order.
    global_stages: Vec<(String, String)>,
    flows: Vec<FlowRt>,
    /// SCTP flows.
    assocs: Vec<sctp::AssocRt>,
    /// The chunks of SCTP packets in flight.
    sctp_pkts: Arena<sctp::SctpPkt>,
    packets: Arena<Pkt>,
    next_pkt: u64,
    events: u64,
    ptrace: PacketRows,
    /// Packets traced: what a HARQ stage did to a packet (its id, the stage index) until the
    /// row of its leaving (or drop) is written: (transmissions, decode delay in µs).
    harq_fates: HashMap<(u64, usize), (i32, i32)>,
    series: SeriesTrace,
    /// Per-destination time series of SCTP associations (with their `dest`).
    dest_series: Markers,
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

/// Builds stage `index` of path `path` from its validated spec, with its own RNG stream
/// (`path/<path>/stage/<index>`). The simulator and the emulator both build stages here, so a
/// seed draws the same random numbers in both.
pub fn build_stage(path: &str, index: usize, stages: &[StageSpec], seed: u64) -> Stage {
    let spec = &stages[index];
    let rng = Rng::stream(seed, &format!("path/{path}/stage/{index}"));
    match spec.kind {
        StageKind::Rate => {
            let limit = match (spec.queue, spec.queue_bytes) {
                (_, Some(b)) => QueueLimit::Bytes(b.0),
                (Some(q), None) => QueueLimit::Packets(q as u32),
                (None, None) => QueueLimit::Packets(1000),
            };
            if let Some(points) = &spec.rate_points {
                Stage::Rate(RateStage::scheduled(
                    RateSchedule::table(points.clone()),
                    limit,
                ))
            } else if let Some(a) = &spec.adapt {
                let mut r = RateStage::adaptive(a.params("stage").expect("validated"), limit);
                // A stall stage later in the path: what it holds still counts as buffered.
                let stall = stages
                    .iter()
                    .enumerate()
                    .skip(index + 1)
                    .find(|(_, st)| st.kind == StageKind::Stall);
                if let Some((j, st)) = stall {
                    r.count_stalled(StallSchedule::new(
                        st.stall_params("stage").expect("validated"),
                        Rng::stream(seed, &format!("path/{path}/stage/{j}")),
                    ));
                }
                Stage::Rate(r)
            } else if let Some(sw) = &spec.switching {
                let rng = match sw.seed {
                    Some(s) => Rng::stream(s, "rate/switching"),
                    None => rng,
                };
                let rates = sw.rates.iter().map(|r| r.0).collect();
                Stage::Rate(RateStage::scheduled(
                    RateSchedule::switching(Switching::new(rates, sw.dwell.0, rng)),
                    limit,
                ))
            } else {
                Stage::Rate(RateStage::new(spec.rate.expect("validated").0, limit))
            }
        }
        StageKind::Delay => {
            let reorder = spec.reorder.unwrap_or(false);
            if let Some(d) = spec.delay {
                Stage::Delay(DelayStage::fixed(d.0, reorder, rng))
            } else {
                let rows = spec
                    .profile
                    .as_ref()
                    .or(spec.trace_rows.as_ref())
                    .or(spec.preset_rows.as_ref())
                    .or(spec.leo_rows.as_ref())
                    .expect("validated: a profile, a trace that was read, a preset or leo");
                let p = crate::scenario::delay_profile(rows, "profile").expect("validated");
                Stage::Delay(DelayStage::profile(p, reorder, rng))
            }
        }
        StageKind::Loss => {
            let model = match spec.model.expect("resolved") {
                LossKind::Bernoulli => LossModel::Bernoulli {
                    p: spec.p.unwrap_or(0.0),
                },
                LossKind::GilbertElliott => LossModel::GilbertElliott {
                    p: spec.p.unwrap_or(0.0),
                    r: spec.r.unwrap_or(1.0),
                    h: spec.h.unwrap_or(0.0),
                    k: spec.k.unwrap_or(1.0),
                    bad: false,
                },
                LossKind::Profile => LossModel::Profile(
                    crate::scenario::loss_profile(
                        spec.profile
                            .as_ref()
                            .or(spec.preset_rows.as_ref())
                            .expect("validated"),
                        "profile",
                    )
                    .expect("validated"),
                ),
                LossKind::Deterministic => LossModel::Deterministic {
                    nth: spec.nth.clone().unwrap_or_default(),
                    seqs: spec.seqs.clone().unwrap_or_default(),
                },
            };
            Stage::Loss(LossStage::new(model, rng))
        }
        StageKind::Harq => {
            let (harq, channel) = spec.harq_params("stage").expect("validated");
            Stage::Harq(spikelab_net::HarqStage::new(harq, channel, rng))
        }
        StageKind::Rlc => Stage::Rlc(RlcStage::new(
            spec.rlc_params("stage").expect("validated"),
            rng,
        )),
        StageKind::Stall => Stage::Stall(StallStage::new(
            spec.stall_params("stage").expect("validated"),
            rng,
        )),
    }
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
            let backpressure = spec.stage.first().and_then(|st| st.backpressure) == Some(true);
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
        let mut assocs = Vec::new();
        for (i, f) in sc.flow.iter().enumerate() {
            if f.protocol != Protocol::Sctp {
                continue;
            }
            let start = SimTime(f.start.0.as_nanos() + start_jitter(seed, i, f));
            queue.push_keyed(
                start,
                tie_key(KEY_START, i as u32, 0, 0),
                Ev::AssocStart(assocs.len() as u32),
            );
            let dests = f
                .destinations()
                .iter()
                .map(|d| (idx(&d.fwd), idx(&d.rev)))
                .collect();
            assocs.push(sctp::AssocRt::new(
                i as u32, f, start, dests, seed, n_global,
            ));
        }
        let flows = sc
            .flow
            .iter()
            .enumerate()
            .filter(|(_, f)| f.protocol == Protocol::Tcp)
            .enumerate()
            .map(|(local, (i, f))| {
                let cfg = f.tcp_config();
                let total = match f.app.kind {
                    AppKind::Bulk => None,
                    AppKind::File => f.app.size.map(|b| b.0),
                };
                let start = SimTime(f.start.0.as_nanos() + start_jitter(seed, i, f));
                queue.push_keyed(
                    start,
                    tie_key(KEY_START, i as u32, 0, 0),
                    Ev::Start(local as u32),
                );
                FlowRt {
                    id: i as u32,
                    fwd: idx(&f.fwd),
                    rev: idx(&f.rev),
                    start,
                    mss: cfg.mss as u64,
                    ns2: cfg.ns2,
                    snd: Sender::new(cfg.clone(), total),
                    rcv: Receiver::new(cfg),
                    snd_timer: None,
                    rcv_timer: None,
                    truth: Truth::default(),
                    rto_events: Vec::new(),
                    fr_events: Vec::new(),
                    episodes: Vec::new(),
                    last_vars: [u64::MAX; N_VARS],
                    last_rcv_nxt: 0,
                    last_progress: start,
                    longest_stall: SimDuration::ZERO,
                    completed: None,
                    drops: vec![0; n_global],
                    rtt_hist: RttHist::default(),
                    tsq: SmallQueue::new(f, paths[idx(&f.fwd) as usize].backpressure),
                }
            })
            .collect();
        World {
            seed,
            now: SimTime::ZERO,
            end: SimTime(sc.sim.duration.0.as_nanos()),
            level,
            queue,
            paths,
            path_names,
            stage_names,
            global_stages,
            flows,
            assocs,
            sctp_pkts: Arena::with_capacity(64),
            packets: Arena::with_capacity(4096),
            next_pkt: 0,
            events: 0,
            ptrace: PacketRows::default(),
            harq_fates: HashMap::new(),
            series: SeriesTrace::default(),
            dest_series: Markers::default(),
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
        let flows = sc
            .flow
            .iter()
            .enumerate()
            .filter(|(_, f)| f.protocol == Protocol::Tcp)
            .map(|(i, f)| {
                let cfg = f.tcp_config();
                let w = FlowWire::new(self.seed, i, cfg.mss, cfg.rwnd, cfg.sack);
                (i as u32, w)
            })
            .collect();
        let assocs = sc
            .flow
            .iter()
            .enumerate()
            .filter(|(_, f)| f.protocol == Protocol::Sctp)
            .map(|(i, f)| {
                (
                    i as u32,
                    AssocWire::new(self.seed, i, f.destinations().len()),
                )
            })
            .collect();
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

    /// Runs to the scenario's end. `ctl`, if given, receives progress and may cancel the run.
    ///
    /// A panic inside the core is caught and returned as a [`RunError`] carrying the simulated
    /// time and event count where it happened.
    pub fn run(mut self, ctl: Option<&RunControl>) -> Result<RunResult, RunError> {
        struct Finish<'a>(Option<&'a RunControl>);
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                if let Some(c) = self.0 {
                    c.mark_finished();
                }
            }
        }
        let _finish = Finish(ctl);
        let outcome = catch_unwind(AssertUnwindSafe(|| self.run_loop(ctl)));
        let stopped = |w: &World, field: String, message: String| RunError {
            field,
            message,
            t: w.now,
            events: w.events,
        };
        match outcome {
            Ok(Ok(cancelled)) => {
                if let (Some(c), false) = (ctl, cancelled) {
                    c.progress_ns.store(self.end.as_nanos(), Ordering::Relaxed);
                }
                // A cancelled run's captures are dropped (their temporary files removed).
                let pcaps = match (self.pcap.take(), cancelled) {
                    (Some(w), false) => w.commit().map_err(|e| {
                        stopped(
                            &self,
                            "sim.pcap".into(),
                            format!("could not finish the captures: {e}"),
                        )
                    })?,
                    _ => Vec::new(),
                };
                let mut r = self.finish();
                r.cancelled = cancelled;
                r.pcaps = pcaps;
                Ok(r)
            }
            Ok(Err((field, message))) => Err(stopped(&self, field, message)),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown cause".into());
                Err(stopped(
                    &self,
                    String::new(),
                    format!("internal error in the simulator core: {what}; please report it with the scenario"),
                ))
            }
        }
    }

    /// The event loop; `Ok(true)` when cancelled, `Err((field, message))` when a bound was hit.
    fn run_loop(
        &mut self,
        ctl: Option<&RunControl>,
    ) -> std::result::Result<bool, (String, String)> {
        let mut instant = SimTime::ZERO;
        let mut work_at_instant: u64 = 0;
        let stream_rows = ctl.map_or(0, |c| c.stream_rows.load(Ordering::Relaxed)) as usize;
        while let Some(t) = self.queue.peek_time() {
            if t > self.end {
                break;
            }
            let (t, ev) = self.queue.pop().expect("peeked");
            self.now = t;
            self.events += 1;
            if self.test_panic {
                panic!("test-only failure requested by SPIKELAB_TEST_PANIC");
            }
            if t != instant {
                instant = t;
                work_at_instant = 0;
            }
            work_at_instant += 1;
            if self.events & 0x3FFF == 0 {
                if let Some(c) = ctl {
                    c.progress_ns.store(t.as_nanos(), Ordering::Relaxed);
                    if c.cancel.load(Ordering::Relaxed) {
                        return Ok(true);
                    }
                }
            }
            match ev {
                Ev::Start(f) => {
                    self.flows[f as usize].last_progress = t;
                    self.pump_sender(f);
                }
                Ev::AssocStart(a) => self.assoc_start(a),
                Ev::AssocTimer(a, b) => self.assoc_timer(a, b),
                Ev::Hop {
                    pkt,
                    from,
                    to,
                    cont,
                } => self.on_hop(pkt, from as usize, to as usize, cont),
                Ev::DropAt { pkt, stage, cause } => self.drop_pkt(pkt, stage as usize, cause),
                Ev::Held(path) => self.release_held(path),
                Ev::PathHead(path) => {
                    let exits = &mut self.paths[path as usize].exits;
                    let (at, _, pkt) = exits.pop_front().expect("a head event has a head");
                    debug_assert_eq!(at, t);
                    // Re-arm before delivering: the delivery may add to this very path.
                    if let Some(&(next, pseq, _)) = exits.front() {
                        self.queue.push_keyed(
                            next,
                            tie_key(KEY_PKT, path as u32, pseq, KEY_PATH_EXIT),
                            Ev::PathHead(path),
                        );
                    }
                    match self.paths[path as usize].next {
                        Some(next) => self.enter_path(pkt, next),
                        None => self.deliver(pkt),
                    }
                }
                Ev::SndTimer(f) => {
                    let fl = &mut self.flows[f as usize];
                    if fl.snd_timer == Some(t) {
                        fl.snd_timer = None;
                    }
                    fl.snd.on_timer(t);
                    fl.take_spurious_events();
                    self.pump_sender(f);
                }
                Ev::SmallQueue(f) => {
                    let fl = &mut self.flows[f as usize];
                    if let Some(q) = &mut fl.tsq {
                        if q.wake == Some(t) {
                            q.wake = None;
                        }
                    }
                    self.pump_sender(f);
                }
                Ev::RcvTimer(f) => {
                    let fl = &mut self.flows[f as usize];
                    if fl.rcv_timer == Some(t) {
                        fl.rcv_timer = None;
                    }
                    fl.rcv.on_timer(t);
                    self.pump_receiver(f);
                }
            }
            if work_at_instant > MAX_WORK_PER_INSTANT {
                return Err((
                    String::new(),
                    format!(
                        "simulated time stopped advancing: more than {MAX_WORK_PER_INSTANT} \
                         events in one instant; a path with neither a delay nor a rate stage \
                         lets a bulk flow send without limit (give its paths a rate or delay \
                         stage)"
                    ),
                ));
            }
            if let Some(f) = self.failure.take() {
                return Err(f);
            }
            if stream_rows > 0 {
                self.stream_chunks(ctl, stream_rows);
            }
        }
        Ok(false)
    }

    /// Hands full chunks of the trace tables to the consumer.
    fn stream_chunks(&mut self, ctl: Option<&RunControl>, rows: usize) {
        let Some(ctl) = ctl else { return };
        if self.series.t.len() >= rows {
            let data = series_table(
                std::mem::take(&mut self.series),
                Markers::default(),
                std::mem::take(&mut self.dest_series),
            );
            ctl.give(Chunk {
                table: "timeseries",
                data,
            });
        }
        if self.ptrace.len() >= rows {
            let data = self.packets_table();
            ctl.give(Chunk {
                table: "packets",
                data,
            });
        }
    }

    // ---- packets -----------------------------------------------------------------------------

    #[inline(always)]
    fn trace_pkt(&mut self, id: ArenaId, event: i32, stage: i32, cause: i32) {
        if self.observe {
            self.observe_pkt(id, event, stage, cause);
        }
    }

    /// A packet event's row in the packets trace and its frame in the captures.
    #[inline(never)]
    fn observe_pkt(&mut self, id: ArenaId, event: i32, stage: i32, cause: i32) {
        if self.pcap.is_some() {
            self.capture_pkt(id, event, stage);
        }
        if self.level < TraceLevel::Packets {
            return;
        }
        let p = self.packets.get(id);
        let stage_code = if stage >= 0 {
            self.paths[p.path as usize].stage_code[stage as usize]
        } else {
            -1
        };
        if self.ptrace.t.len() as u64 >= self.max_packets_rows {
            if self.failure.is_none() {
                self.failure = Some((
                    "sim.max_packets_rows".into(),
                    format!(
                        "the packets trace reached its bound of {} rows; record less \
                         (--trace timeseries), simulate less time, or raise sim.max_packets_rows",
                        self.max_packets_rows
                    ),
                ));
            }
            return;
        }
        let tr = &mut self.ptrace;
        tr.reserve_row();
        tr.t.push(self.now.as_nanos() as i64);
        let (flow, dest) = match p.sctp() {
            Some(s) => (
                self.assocs[p.local_flow()].id,
                self.sctp_pkts.get(s).dest as i32,
            ),
            None => (self.flows[p.local_flow()].id, -1),
        };
        tr.flow.push(flow as i32);
        tr.dest.push(dest);
        tr.pkt.push(p.id as i64);
        tr.event.push(event);
        tr.path.push(p.path as i32);
        tr.stage.push(stage_code);
        tr.kind.push((p.dir == Dir::Ack) as i32);
        tr.seq.push(p.seg.seq as i64);
        tr.ack.push(p.seg.ack as i64);
        tr.len.push(p.seg.len as i32);
        tr.size.push(p.size as i32);
        tr.tx.push(p.tx);
        tr.cause.push(cause);
        let fate = if (event == EV_EXIT || event == EV_DROP) && !self.harq_fates.is_empty() {
            self.harq_fates.remove(&(p.id, stage as usize))
        } else {
            None
        };
        let (harq_tx, harq_delay_us) = fate.unwrap_or((-1, -1));
        tr.harq_tx.push(harq_tx);
        tr.harq_delay_us.push(harq_delay_us);
    }

    /// Hands a packet event to the captures: leaving its endpoint, reaching the other, or
    /// crossing a stage boundary (entering a stage; leaving the path's last one).
    #[cold]
    #[inline(never)]
    fn capture_pkt(&mut self, id: ArenaId, event: i32, stage: i32) {
        let p = self.packets.get(id);
        let seen = match event {
            EV_DELIVER => Seen::Deliver,
            EV_ENTER => Seen::Boundary(p.path, stage as usize),
            EV_EXIT if stage as usize + 1 == self.paths[p.path as usize].stages.len() => {
                Seen::Boundary(p.path, stage as usize + 1)
            }
            EV_EXIT | EV_DROP => return,
            _ => Seen::Launch,
        };
        let Some(w) = self.pcap.as_mut() else { return };
        match p.sctp() {
            Some(s) => {
                let sp = self.sctp_pkts.get(s);
                w.observe_sctp(
                    self.now.as_nanos(),
                    seen,
                    (p.local_flow(), sp.dest as usize),
                    p.dir == Dir::Data,
                    p.id,
                    &sp.pkt,
                );
            }
            None => w.observe(
                self.now.as_nanos(),
                seen,
                p.local_flow(),
                p.dir == Dir::Data,
                p.id,
                &p.seg,
            ),
        }
        if let (Some(e), None) = (w.error(), &self.failure) {
            self.failure = Some((
                "sim.pcap".into(),
                format!("could not write the capture: {e}"),
            ));
        }
    }

    fn launch(&mut self, flow: u32, dir: Dir, seg: Segment, tx: i32, event: i32) {
        let f = &self.flows[flow as usize];
        let path = if dir == Dir::Data { f.fwd } else { f.rev };
        let id = self.packets.insert(Pkt {
            id: self.next_pkt,
            flow,
            dir,
            path,
            pseq: 0, // taken on entering the path
            size: spikelab_tcp::segment_wire_size(f.ns2, &seg),
            seg,
            tx,
        });
        self.next_pkt += 1;
        self.trace_pkt(id, event, -1, -1);
        self.offer(id, path);
    }

    /// A sender puts the packet on `path`. When the path's first stage is the sender's own
    /// queue (`backpressure`) and has no room, or packets refused earlier still wait, the
    /// packet waits too, in order, instead of being dropped, and a TCP data sender is told
    /// (Linux 2.6 `tcp_transmit_skb`: a local drop calls `tcp_enter_cwr`).
    pub(super) fn offer(&mut self, id: ArenaId, path: u16) {
        let now = self.now;
        let p = &mut self.paths[path as usize];
        if !p.backpressure {
            self.enter_path(id, path);
            return;
        }
        let size = self.packets.get(id).size;
        let refused = !p.held.is_empty() || !p.own_queue().accepts(now, size);
        if !refused {
            self.enter_own_queue(id, path, false);
            return;
        }
        p.held.push_back(id);
        let pkt = self.packets.get(id);
        if pkt.sctp().is_none() && pkt.dir == Dir::Data {
            let f = &mut self.flows[pkt.flow as usize];
            if let Some(q) = &mut f.tsq {
                q.held += 1;
            }
            if !pkt.seg.syn {
                f.snd.local_congestion(now);
            }
        }
        self.arm_held(path);
    }

    /// The packet enters a path whose first stage is a sender's own queue (which has room),
    /// after waiting for it if `was_held`: a TCP flow under TCP Small Queues notes when it
    /// will have left that queue.
    fn enter_own_queue(&mut self, id: ArenaId, path: u16, was_held: bool) {
        self.enter_path(id, path);
        let pkt = self.packets.get(id);
        if pkt.sctp().is_some() || pkt.dir != Dir::Data {
            return;
        }
        let fi = pkt.flow;
        let leave = self.paths[path as usize].own_queue().busy_until();
        let Some(q) = &mut self.flows[fi as usize].tsq else {
            return;
        };
        q.held -= was_held as u32;
        q.leaving.push_back(leave);
        if q.throttled {
            self.arm_small_queue(fi);
        }
    }

    /// Wakes a flow held back by TCP Small Queues when its first packet leaves the queue
    /// (unless a wake is queued already).
    fn arm_small_queue(&mut self, fi: u32) {
        let Some(q) = &mut self.flows[fi as usize].tsq else {
            return;
        };
        let (None, Some(&at)) = (q.wake, q.leaving.front()) else {
            return;
        };
        let at = at.max(self.now);
        q.wake = Some(at);
        self.queue
            .push_keyed(at, tie_key(KEY_TIMER, fi, 0, 4), Ev::SmallQueue(fi));
    }

    /// Whether TCP Small Queues hold the flow back now (Linux `tcp_small_queue_check`).
    fn small_queue_full(&mut self, fi: u32) -> bool {
        let now = self.now;
        let f = &mut self.flows[fi as usize];
        let Some(q) = &mut f.tsq else {
            return false;
        };
        while q.leaving.front().is_some_and(|&t| t <= now) {
            q.leaving.pop_front();
        }
        // About 1 ms at the pacing rate (`sk_pacing_rate >> 10`): mss · max(cwnd, packets
        // out) / srtt, 200 % of it in slow start below ssthresh / 2, else 120 %.
        let snd = &f.snd;
        let outstanding = snd.snd_max() - snd.snd_una();
        let paced = snd.srtt().map_or(0, |srtt| {
            let pct = if snd.cwnd() < snd.ssthresh() / 2 {
                200
            } else {
                120
            };
            let bps = snd.cwnd().max(outstanding) as u128 * 1_000_000_000 * pct
                / 100
                / srtt.as_nanos().max(1) as u128;
            (bps >> 10) / f.mss as u128
        });
        // The retransmission timer's segment and a loss probe go out unchecked
        // (`tcp_retransmit_timer`, `tcp_send_loss_probe`); the retransmission queue's segments
        // (fast retransmits, recovery, go-back-N after a timeout) get twice the limit
        // (`tcp_xmit_retransmit_queue`, factor 1).
        let shift = match snd.pending_kind() {
            Some(TxKind::RtoRetransmit | TxKind::Tlp) => {
                q.throttled = false;
                return false;
            }
            Some(_) => 1,
            None => matches!(snd.state(), CaState::Recovery | CaState::Loss) as u32,
        };
        let limit = (q.limit as u128).max(paced) << shift;
        // Always send when at most one segment is outstanding (`tcp_rtx_queue_empty_or_single_skb`).
        let full = (q.leaving.len() as u128 + q.held as u128) >= limit && outstanding > f.mss;
        q.throttled = full;
        full
    }

    fn arm_held(&mut self, path: u16) {
        let p = &mut self.paths[path as usize];
        if p.held_armed {
            return;
        }
        let at = p.own_queue().next_room().max(self.now);
        p.held_armed = true;
        self.queue.push_keyed(
            at,
            tie_key(KEY_PKT, path as u32, p.next_pseq, 0),
            Ev::Held(path),
        );
    }

    /// Hands the waiting packets to the path's first stage while it has room.
    fn release_held(&mut self, path: u16) {
        let now = self.now;
        self.paths[path as usize].held_armed = false;
        while let Some(&id) = self.paths[path as usize].held.front() {
            let size = self.packets.get(id).size;
            let p = &mut self.paths[path as usize];
            if !p.own_queue().accepts(now, size) {
                break;
            }
            p.held.pop_front();
            self.enter_own_queue(id, path, true);
        }
        if !self.paths[path as usize].held.is_empty() {
            self.arm_held(path);
        }
    }

    /// The packet enters `path` now: the flow's first path when it is sent, or the path its
    /// path continues into (`next`) when it left that one. Its place in the path's entry order
    /// is taken at this instant, so a path shared by several access paths sees its arrivals in
    /// time order.
    fn enter_path(&mut self, id: ArenaId, path: u16) {
        let p = &mut self.paths[path as usize];
        let pseq = p.next_pseq;
        p.next_pseq += 1;
        let pkt = self.packets.get_mut(id);
        pkt.path = path;
        pkt.pseq = pseq;
        self.fold_from(id, 0);
    }

    /// Computes the packet's passage through the stages of its path from stage `from` on, which
    /// it enters now, as far as the first stage that does not keep order (or the path's end): in
    /// entry order, which on stages that keep order is the order in which each stage sees its
    /// arrivals, so every stage is handed its packets in time order. Queues the packet's leaving
    /// of the path or its drop; a stage that reorders hands the packet on by an event at its own
    /// time. With packets traced, the rows of each stage hop are emitted at their own times (a
    /// `Hop` event per distinct time, keyed like the stage's own exit).
    fn fold_from(&mut self, id: ArenaId, from: usize) {
        let traced = self.stage_rows;
        let p = self.packets.get(id);
        let (path, pseq, pkt_id) = (p.path as usize, p.pseq, p.id);
        let info = PacketInfo {
            wire_size: p.size,
            // The deterministic loss model's `seqs`: TCP bytes, SCTP TSNs.
            data_seq: match p.sctp() {
                Some(s) => self.sctp_pkts.get(s).first_tsn,
                None => (p.dir == Dir::Data && !p.seg.syn).then_some(p.seg.seq),
            },
        };
        let n = self.paths[path].stages.len();
        let now = self.now;
        if !traced && self.paths[path].all_keep_order {
            // The common case, kept tight: no rows, no stretch ends.
            let mut t = now;
            for (k, stage) in self.paths[path].stages[from..].iter_mut().enumerate() {
                match stage.on_arrival(t, &info) {
                    Outcome::Pass(leave) => t = leave,
                    Outcome::Drop(at, cause) if at == now => {
                        self.drop_pkt(id, from + k, cause);
                        return;
                    }
                    Outcome::Drop(at, cause) => {
                        schedule_drop(&mut self.queue, at, path, pseq, from + k, id, cause);
                        return;
                    }
                }
            }
            self.exit_at(path, t, id);
            return;
        }
        if traced && from < n {
            self.trace_pkt(id, EV_ENTER, from as i32, -1);
        }
        let mut t = now;
        // Rows not yet emitted: the hops from stage `.1` on, at time `.0`.
        let mut group: Option<(SimTime, usize)> = None;
        let hop = |queue: &mut EventQueue<Ev>, at: SimTime, from: usize, to: usize, cont: bool| {
            queue.push_keyed(
                at,
                tie_key(KEY_PKT, path as u32, pseq, from as u32),
                Ev::Hop {
                    pkt: id,
                    from: from as u8,
                    to: to as u8,
                    cont,
                },
            );
        };
        for k in from..n {
            let stage = &mut self.paths[path].stages[k];
            let keeps_order = stage.keeps_order();
            let outcome = stage.on_arrival(t, &info);
            if let (true, Stage::Harq(h)) = (traced, &*stage) {
                if let Some(f) = h.last_fate() {
                    let us = (f.done.as_nanos() - t.as_nanos()) / 1000;
                    let us = i32::try_from(us).unwrap_or(i32::MAX);
                    self.harq_fates
                        .insert((pkt_id, k), (f.transmissions as i32, us));
                }
            }
            match outcome {
                Outcome::Pass(leave) if leave == now => {
                    if traced {
                        self.trace_pkt(id, EV_EXIT, k as i32, -1);
                        if k + 1 < n {
                            self.trace_pkt(id, EV_ENTER, k as i32 + 1, -1);
                        }
                    }
                }
                Outcome::Pass(leave) => {
                    if traced || !keeps_order {
                        match group {
                            Some((gt, _)) if gt == leave => {}
                            Some((gt, gs)) => {
                                hop(&mut self.queue, gt, gs, k - 1, false);
                                group = Some((leave, k));
                            }
                            None => group = Some((leave, k)),
                        }
                        if !keeps_order {
                            let gs = group.map_or(k, |g| g.1);
                            hop(&mut self.queue, leave, gs, k, true);
                            return;
                        }
                    }
                    t = leave;
                }
                Outcome::Drop(at, cause) => {
                    if let Some((gt, gs)) = group {
                        hop(&mut self.queue, gt, gs, k - 1, false);
                    }
                    if at == now {
                        self.drop_pkt(id, k, cause);
                    } else {
                        schedule_drop(&mut self.queue, at, path, pseq, k, id, cause);
                    }
                    return;
                }
            }
        }
        if let Some((gt, gs)) = group {
            hop(&mut self.queue, gt, gs, n - 1, false);
        }
        self.exit_at(path, t, id);
    }

    /// The rows of the stage hops `from..=to` of a packet, at their time; then, when `cont`,
    /// its way on through the rest of its path.
    #[inline(never)]
    fn on_hop(&mut self, id: ArenaId, from: usize, to: usize, cont: bool) {
        if self.stage_rows {
            let n = self.paths[self.packets.get(id).path as usize].stages.len();
            for k in from..=to {
                self.trace_pkt(id, EV_EXIT, k as i32, -1);
                if k + 1 < n && (k < to || !cont) {
                    self.trace_pkt(id, EV_ENTER, k as i32 + 1, -1);
                }
            }
        }
        if cont {
            self.fold_from(id, to + 1);
        }
    }

    /// Queues the packet's leaving of its path at `t` (>= every exit already queued).
    fn exit_at(&mut self, path: usize, t: SimTime, id: ArenaId) {
        let pseq = self.packets.get(id).pseq;
        let exits = &mut self.paths[path].exits;
        debug_assert!(exits.back().is_none_or(|b| b.0 <= t));
        exits.push_back((t, pseq, id));
        if exits.len() == 1 {
            self.queue.push_keyed(
                t,
                tie_key(KEY_PKT, path as u32, pseq, KEY_PATH_EXIT),
                Ev::PathHead(path as u16),
            );
        }
    }

    fn drop_pkt(&mut self, id: ArenaId, stage: usize, cause: DropCause) {
        let code = DropCause::ALL.iter().position(|c| *c == cause).unwrap_or(0) as i32;
        self.trace_pkt(id, EV_DROP, stage as i32, code);
        let p = self.packets.remove(id);
        let g = self.paths[p.path as usize].first_global + stage;
        if let Some(s) = p.sctp() {
            self.sctp_pkts.remove(s);
            self.assocs[p.local_flow()].drops[g] += 1;
            return;
        }
        let f = &mut self.flows[p.flow as usize];
        f.drops[g] += 1;
        if p.dir == Dir::Data && !p.seg.syn {
            f.truth.on_dropped((p.seg.seq / f.mss) as usize);
            f.retire_truth();
        }
    }

    fn deliver(&mut self, id: ArenaId) {
        self.trace_pkt(id, EV_DELIVER, -1, -1);
        let p = self.packets.remove(id);
        if let Some(s) = p.sctp() {
            self.deliver_sctp(p.local_flow() as u32, p.dir == Dir::Data, s);
            return;
        }
        let now = self.now;
        let fi = p.flow;
        let f = &mut self.flows[fi as usize];
        match p.dir {
            Dir::Data if p.seg.syn => {
                f.rcv.on_segment(now, &p.seg);
                self.pump_receiver(fi);
            }
            Dir::Data => {
                let idx = (p.seg.seq / f.mss) as usize;
                f.truth.on_delivered(idx, p.tx as u16);
                f.retire_truth();
                f.rcv.on_segment(now, &p.seg);
                let rcv_nxt = f.rcv.rcv_nxt();
                if rcv_nxt > f.last_rcv_nxt {
                    f.last_rcv_nxt = rcv_nxt;
                    f.longest_stall = f.longest_stall.max(now - f.last_progress);
                    f.last_progress = now;
                    if self.level >= TraceLevel::Timeseries {
                        self.series.push(now, f.id, VAR_RCV_NXT, rcv_nxt as f64);
                    }
                }
                self.pump_receiver(fi);
            }
            Dir::Ack => {
                f.snd.on_ack(now, &p.seg);
                f.retire_truth();
                f.take_spurious_events();
                if f.completed.is_none() && f.snd.is_done() {
                    f.completed = Some(now);
                }
                if let Some(r) = f.snd.last_rtt_sample() {
                    f.rtt_hist.add(r);
                    if self.level >= TraceLevel::Timeseries {
                        self.series.push(now, f.id, VAR_RTT_SAMPLE, r.as_secs_f64());
                    }
                }
                self.pump_sender(fi);
            }
        }
    }

    // ---- endpoints ---------------------------------------------------------------------------

    fn pump_sender(&mut self, fi: u32) {
        let now = self.now;
        loop {
            if self.small_queue_full(fi) {
                self.flows[fi as usize].snd.pause(now);
                self.arm_small_queue(fi);
                break;
            }
            let f = &mut self.flows[fi as usize];
            let Some(tx) = f.snd.poll_transmit(now) else {
                break;
            };
            if tx.kind == TxKind::Syn {
                // Not a data segment: no ground truth, no episode.
                self.launch(fi, Dir::Data, tx.seg, 0, EV_SEND);
                continue;
            }
            let idx = (tx.seg.seq / f.mss) as usize;
            let tn = f.truth.on_send(idx);
            if matches!(tx.kind, TxKind::RtoRetransmit | TxKind::FastRetransmit) {
                f.truth.refer(idx);
            }
            match tx.kind {
                TxKind::RtoRetransmit => f.rto_events.push((now, idx, tn)),
                TxKind::FastRetransmit => f.fr_events.push((now, idx, tn)),
                _ => {}
            }
            if matches!(tx.kind, TxKind::RtoRetransmit | TxKind::FastRetransmit) {
                if let Some(ep) = f.episodes.last_mut() {
                    if ep.trigger.is_none() && ep.seq == tx.seg.seq {
                        ep.trigger = Some((idx, tn));
                    }
                }
            }
            let ev = match tx.kind {
                TxKind::New => EV_SEND,
                TxKind::Tlp => EV_TLP,
                _ => EV_RETX,
            };
            self.launch(fi, Dir::Data, tx.seg, tn as i32, ev);
        }
        if self.level >= TraceLevel::Timeseries {
            self.record_vars(fi);
        }
        let f = &mut self.flows[fi as usize];
        arm_timer(
            &mut self.queue,
            &mut f.snd_timer,
            f.snd.next_timer(),
            tie_key(KEY_TIMER, fi, 0, 0),
            Ev::SndTimer(fi),
        );
    }

    fn pump_receiver(&mut self, fi: u32) {
        let now = self.now;
        while let Some(seg) = self.flows[fi as usize].rcv.poll_transmit(now) {
            self.launch(fi, Dir::Ack, seg, -1, EV_ACK);
        }
        let f = &mut self.flows[fi as usize];
        arm_timer(
            &mut self.queue,
            &mut f.rcv_timer,
            f.rcv.next_timer(),
            tie_key(KEY_TIMER, fi, 0, 1),
            Ev::RcvTimer(fi),
        );
    }

    fn record_vars(&mut self, fi: u32) {
        let f = &mut self.flows[fi as usize];
        let s = &f.snd;
        let ssthresh = if s.ssthresh() == u64::MAX {
            f64::INFINITY
        } else {
            s.ssthresh() as f64
        };
        let vals: [f64; N_VARS] = [
            s.cwnd() as f64,
            ssthresh,
            s.srtt().map_or(f64::NAN, |d| d.as_secs_f64()),
            s.rttvar().as_secs_f64(),
            s.rto().as_secs_f64(),
            s.snd_una() as f64,
            s.snd_nxt() as f64,
            s.inflight() as f64,
            s.state() as u8 as f64,
        ];
        let (now, id) = (self.now, f.id);
        each_change(&mut f.last_vars, &vals, |i, v| {
            self.series.push(now, id, i as i32, v)
        });
    }

    // ---- results -----------------------------------------------------------------------------

    fn finish(mut self) -> RunResult {
        let end = self.end;
        let mut runs = RunsBuilder::default();
        // The run's span: from the first flow's start to the end, or to the last completion
        // when every flow is a finished transfer.
        let starts = self.flows.iter().map(|f| f.start);
        let first = starts
            .chain(self.assocs.iter().map(|a| a.start()))
            .min()
            .unwrap_or(end);
        let completions: Vec<Option<SimTime>> = self
            .flows
            .iter()
            .map(|f| f.completed)
            .chain(self.assocs.iter().map(|a| a.completed()))
            .collect();
        let last = if completions.iter().all(|c| c.is_some()) {
            completions.iter().flatten().copied().max().unwrap_or(end)
        } else {
            end
        };
        let span = last.since(first).as_secs_f64();
        // The busiest rate stage's share of the span spent serialising.
        let utilisation = self
            .paths
            .iter()
            .flat_map(|p| p.stages.iter())
            .filter_map(|s| s.as_rate())
            .map(|r| {
                let busy = r.busy_time().as_secs_f64();
                if span > 0.0 {
                    (busy / span).min(1.0)
                } else {
                    f64::NAN
                }
            })
            .fold(f64::NAN, f64::max);
        let mut markers = Markers::default();
        for f in self.flows.iter_mut() {
            let stop = f.completed.unwrap_or(end);
            if f.completed.is_none() && stop > f.last_progress {
                f.longest_stall = f.longest_stall.max(stop - f.last_progress);
            }
            let spurious = |&(_, idx, tn): &(SimTime, usize, u16)| f.truth.spurious(idx, tn);
            let rto_spurious = f.rto_events.iter().filter(|e| spurious(e)).count();
            let fr_spurious = f.fr_events.iter().filter(|e| spurious(e)).count();
            let spurious_retx = f.truth.spurious_retx();
            // Retransmission markers carry their segment and transmission number.
            let mss = f.mss;
            let mark = |var: i32| {
                move |e: &(SimTime, usize, u16)| {
                    let (t, idx, tn) = *e;
                    (
                        t,
                        var,
                        spurious(e) as u8 as f64,
                        (idx as u64 * mss) as i64,
                        tn as i32,
                    )
                }
            };
            let mut ev: Vec<(SimTime, i32, f64, i64, i32)> = f
                .rto_events
                .iter()
                .map(mark(VAR_RTO_EXPIRY))
                .chain(f.fr_events.iter().map(mark(VAR_FAST_RETX)))
                .collect();
            // Episodes: one verdict marker per enabled detector that judges the episode's kind
            // (value 1 spurious, 0 genuine, -1 undecided), and one marker per response.
            let enabled = f.snd.config().spurious.detectors;
            let mut scores = [DetScore::default(); N_DETECTORS];
            let (mut rto_eps, mut fr_eps, mut rto_eps_true, mut fr_eps_true) = (0, 0, 0, 0);
            let (mut rto_detected, mut fr_detected) = (0, 0);
            for ep in &f.episodes {
                let Some((idx, tn)) = ep.trigger else {
                    continue;
                };
                let truth = f.truth.spurious(idx, tn);
                let (seq, tx) = ((idx as u64 * mss) as i64, tn as i32);
                let timeout = ep.kind == EpisodeKind::Timeout;
                if timeout {
                    rto_eps += 1;
                    rto_eps_true += truth as i64;
                } else {
                    fr_eps += 1;
                    fr_eps_true += truth as i64;
                }
                let mut detected = false;
                for d in enabled.iter().filter(|d| d.judges(ep.kind)) {
                    let sc = &mut scores[d as usize];
                    let (t, value) = match ep.verdicts[d as usize] {
                        Some((t, true)) => {
                            detected = true;
                            sc.delay_sum_s += t.since(ep.start).as_secs_f64();
                            if truth {
                                sc.tp += 1;
                            } else {
                                sc.fp += 1;
                            }
                            (t, 1.0)
                        }
                        v => {
                            if v.is_none() {
                                sc.undecided += 1;
                            }
                            if truth {
                                sc.fn_ += 1;
                            } else {
                                sc.tn += 1;
                            }
                            match v {
                                Some((t, _)) => (t, 0.0),
                                None => (ep.end.unwrap_or(stop).min(end), -1.0),
                            }
                        }
                    };
                    ev.push((t, VAR_VERDICT + d as i32, value, seq, tx));
                }
                if detected {
                    if timeout {
                        rto_detected += 1;
                    } else {
                        fr_detected += 1;
                    }
                }
                if let Some((t, cwnd)) = ep.undo {
                    ev.push((t, VAR_UNDO, cwnd as f64, seq, tx));
                }
            }
            ev.sort_by_key(|e| (e.0, e.1));
            for (t, var, value, seq, tx) in ev {
                markers.mark(t, f.id, var, value, seq, tx);
            }
            let st = f.snd.stats();
            let active = stop.since(f.start).as_secs_f64();
            let delivered = f.rcv.rcv_nxt();
            let (mean, sd) = mean_sd(st.rtt_samples, st.rtt_sum_s, st.rtt_sumsq_s);
            let per_pkt = |n: u64| ratio(n, st.segments_sent);
            let rtt_min = f.rtt_hist.min.map_or(f64::NAN, |m| m.as_secs_f64());
            runs.row(RunRow {
                flow: f.id as i32,
                protocol: "tcp",
                cc: f.snd.cc_name(),
                rtt_min_s: rtt_min,
                // NaN without samples (f64::max would turn NaN into 0).
                qdelay_mean_s: nonneg(mean - rtt_min),
                qdelay_p95_s: nonneg(f.rtt_hist.quantile_s(0.95) - rtt_min),
                rto_per_pkt: per_pkt(st.rto_count),
                dupacks_per_pkt: per_pkt(st.dupacks_rcvd),
                spurious_retx_per_pkt: per_pkt(spurious_retx),
                retx_per_pkt: per_pkt(st.retx_segments),
                goodput_bps: if active > 0.0 {
                    delivered as f64 * 8.0 / active
                } else {
                    0.0
                },
                bytes_delivered: delivered as i64,
                rto_count: st.rto_count as i64,
                rto_spurious_true: rto_spurious as i64,
                fast_retx_count: st.fast_retx_count as i64,
                fast_retx_spurious_true: fr_spurious as i64,
                retx_segments: st.retx_segments as i64,
                spurious_retx_true: spurious_retx as i64,
                dupacks_rcvd: st.dupacks_rcvd as i64,
                dsacks_rcvd: st.dsacks_rcvd as i64,
                segments_sent: st.segments_sent as i64,
                rtt_mean_s: mean,
                rtt_sd_s: sd,
                rtt_samples: st.rtt_samples as i64,
                longest_stall_s: f.longest_stall.as_secs_f64(),
                completion_time_s: f
                    .completed
                    .map_or(f64::NAN, |c| c.since(f.start).as_secs_f64()),
                mss: f.mss as i64,
                drops: f.drops.clone(),
                spurious: enabled.label(),
                response: f.snd.config().spurious.response.name(),
                rto_episodes: rto_eps,
                rto_episodes_spurious_true: rto_eps_true,
                rto_spurious_detected: rto_detected,
                fr_episodes: fr_eps,
                fr_episodes_spurious_true: fr_eps_true,
                fr_spurious_detected: fr_detected,
                undo_count: st.undo_count as i64,
                tlp_count: st.tlp_count as i64,
                tlp_recoveries: st.tlp_recoveries as i64,
                rack_loss_count: st.rack_loss_count as i64,
                local_cwr_count: st.local_cwr_count as i64,
                timeout_time_s: f.snd.timeout_time(stop).as_secs_f64(),
                rto_wait_s: st.rto_wait_ns as f64 * 1e-9,
                det: scores,
                failovers: 0,
                time_to_failover_s: f64::NAN,
                data_primary_bytes: 0,
                data_other_bytes: 0,
                heartbeats_sent: 0,
                setup_time_s: f64::NAN,
                assoc_failed: 0,
            });
        }
        self.assoc_rows(&mut runs, &mut markers, end);
        runs.rows.sort_by_key(|r| r.flow);
        runs.finish_run(span, utilisation);
        let runs = runs.build(&self.global_stages, self.seed);
        let timeseries = if self.level >= TraceLevel::Timeseries {
            let dest = std::mem::take(&mut self.dest_series);
            series_table(std::mem::take(&mut self.series), markers, dest)
        } else {
            series_table(
                SeriesTrace::default(),
                Markers::default(),
                Markers::default(),
            )
        };
        RunResult {
            runs,
            timeseries,
            packets: self.packets_table(),
            events: self.events,
            end,
            cancelled: false,
            pcaps: Vec::new(),
        }
    }

    fn packets_table(&mut self) -> Table {
        let causes = DropCause::ALL
            .iter()
            .map(|c| c.as_str().to_string())
            .collect();
        std::mem::take(&mut self.ptrace).into_table(
            self.path_names.clone(),
            self.stage_names.clone(),
            causes,
        )
    }
}

impl FlowRt {
    /// Retires the segments whose ground truth can no longer change (wholly below `snd_una`,
    /// no copy in the network).
    fn retire_truth(&mut self) {
        self.truth.retire((self.snd.snd_una() / self.mss) as usize);
    }

    /// Moves the sender's spurious-retransmission events into the episode records.
    fn take_spurious_events(&mut self) {
        for e in self.snd.spurious_events() {
            match *e {
                SpuriousEvent::EpisodeStart(ep) => {
                    if let Some(prev) = self.episodes.last_mut() {
                        prev.end = Some(ep.start);
                    }
                    debug_assert_eq!(ep.id as usize, self.episodes.len());
                    self.episodes.push(EpisodeRec {
                        kind: ep.kind,
                        seq: ep.seq,
                        start: ep.start,
                        trigger: None,
                        end: None,
                        verdicts: [None; N_DETECTORS],
                        undo: None,
                    });
                }
                SpuriousEvent::Verdict {
                    episode,
                    detector,
                    verdict,
                    t,
                } => {
                    if let Some(rec) = self.episodes.get_mut(episode as usize) {
                        rec.verdicts[detector as usize].get_or_insert((t, verdict.is_spurious()));
                    }
                }
                SpuriousEvent::Undo {
                    episode, t, cwnd, ..
                } => {
                    if let Some(rec) = self.episodes.get_mut(episode as usize) {
                        rec.undo.get_or_insert((t, cwnd));
                    }
                }
            }
        }
        self.snd.clear_spurious_events();
    }
}

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

/// Schedules a packet's drop at stage `stage` of its path at `at` (its own tie key).
fn schedule_drop(
    queue: &mut EventQueue<Ev>,
    at: SimTime,
    path: usize,
    pseq: u64,
    stage: usize,
    pkt: ArenaId,
    cause: DropCause,
) {
    queue.push_keyed(
        at,
        tie_key(KEY_PKT, path as u32, pseq, stage as u32),
        Ev::DropAt {
            pkt,
            stage: stage as u16,
            cause,
        },
    );
}

/// Lazy timers: an endpoint's deadline moves on nearly every ACK, so an event is pushed only
/// when the deadline comes earlier than the earliest one already queued (`scheduled`). An event
/// that fires early finds the deadline later and the endpoint re-arms it then.
fn arm_timer(
    queue: &mut EventQueue<Ev>,
    scheduled: &mut Option<SimTime>,
    want: Option<SimTime>,
    key: u128,
    ev: Ev,
) {
    if let Some(want) = want {
        if scheduled.is_none_or(|s| want < s) {
            *scheduled = Some(want);
            queue.push_keyed(want, key, ev);
        }
    }
}

/// The timeseries table: the series rows (time order) followed by the marker rows (time
/// order). Series rows have `seq` = -1 and `tx` = -1. A streamed run hands the series over in
/// chunks as it goes and the markers come last, so both ways give the same table.
fn series_table(a: SeriesTrace, b: Markers, c: Markers) -> Table {
    fn cat<T: Copy>(mut a: Vec<T>, b: &[T]) -> Vec<T> {
        a.extend_from_slice(b);
        a
    }
    // The per-destination rows follow the markers.
    let mut b = b;
    b.rows.t.extend_from_slice(&c.rows.t);
    b.rows.flow.extend_from_slice(&c.rows.flow);
    b.rows.var.extend_from_slice(&c.rows.var);
    b.rows.value.extend_from_slice(&c.rows.value);
    b.seq.extend_from_slice(&c.seq);
    b.tx.extend_from_slice(&c.tx);
    b.dest.extend_from_slice(&c.dest);
    let n = a.t.len();
    let SeriesTrace {
        t,
        flow,
        var,
        value,
    } = a;
    let mut out = Table::default();
    out.push("t_ns", ColumnData::I64(cat(t, &b.rows.t)));
    out.push("flow", ColumnData::I32(cat(flow, &b.rows.flow)));
    let names = VAR_NAMES.iter().map(|v| v.to_string()).collect();
    out.push("var", ColumnData::Dict(cat(var, &b.rows.var), names));
    out.push("value", ColumnData::F64(cat(value, &b.rows.value)));
    out.push("seq", ColumnData::I64(cat(vec![-1; n], &b.seq)));
    out.push("tx", ColumnData::I32(cat(vec![-1; n], &b.tx)));
    out.push("dest", ColumnData::I32(cat(vec![-1; n], &b.dest)));
    out
}

struct RunRow {
    flow: i32,
    cc: &'static str,
    rtt_min_s: f64,
    qdelay_mean_s: f64,
    qdelay_p95_s: f64,
    rto_per_pkt: f64,
    dupacks_per_pkt: f64,
    spurious_retx_per_pkt: f64,
    retx_per_pkt: f64,
    goodput_bps: f64,
    bytes_delivered: i64,
    rto_count: i64,
    rto_spurious_true: i64,
    fast_retx_count: i64,
    fast_retx_spurious_true: i64,
    retx_segments: i64,
    spurious_retx_true: i64,
    dupacks_rcvd: i64,
    dsacks_rcvd: i64,
    segments_sent: i64,
    rtt_mean_s: f64,
    rtt_sd_s: f64,
    rtt_samples: i64,
    longest_stall_s: f64,
    completion_time_s: f64,
    mss: i64,
    drops: Vec<u64>,
    spurious: String,
    response: &'static str,
    rto_episodes: i64,
    rto_episodes_spurious_true: i64,
    rto_spurious_detected: i64,
    fr_episodes: i64,
    fr_episodes_spurious_true: i64,
    fr_spurious_detected: i64,
    undo_count: i64,
    tlp_count: i64,
    tlp_recoveries: i64,
    rack_loss_count: i64,
    local_cwr_count: i64,
    /// Time in timeout recovery, s (NaN for SCTP).
    timeout_time_s: f64,
    /// The expired RTOs summed, s (NaN for SCTP).
    rto_wait_s: f64,
    det: [DetScore; N_DETECTORS],
    protocol: &'static str,
    failovers: i64,
    time_to_failover_s: f64,
    data_primary_bytes: i64,
    data_other_bytes: i64,
    heartbeats_sent: i64,
    setup_time_s: f64,
    assoc_failed: i64,
}

#[derive(Default)]
struct RunsBuilder {
    rows: Vec<RunRow>,
    /// Per run, on every row: Jain's index, the busiest rate stage's utilisation, the
    /// aggregate goodput.
    jfi: f64,
    utilisation: f64,
    aggregate_goodput_bps: f64,
}

/// Mean and sample standard deviation from a count, a sum and a sum of squares (NaN without
/// samples; sd 0 with one).
fn mean_sd(n: u64, sum: f64, sumsq: f64) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let k = n as f64;
    let m = sum / k;
    let var = if n > 1 {
        ((sumsq - k * m * m) / (k - 1.0)).max(0.0)
    } else {
        0.0
    };
    (m, var.sqrt())
}

/// `n / of`, NaN when `of` is 0 (a per-packet ratio of a flow that sent nothing).
fn ratio(n: u64, of: u64) -> f64 {
    if of > 0 {
        n as f64 / of as f64
    } else {
        f64::NAN
    }
}

/// Calls `f(i, value)` for each value that differs (bit for bit) from the last one recorded in
/// `last`, and records it; NaN values are recorded but not reported (a variable without a
/// value yet, such as srtt before the first sample).
fn each_change(last: &mut [u64], vals: &[f64], mut f: impl FnMut(usize, f64)) {
    for (i, v) in vals.iter().enumerate() {
        let bits = v.to_bits();
        if last[i] != bits {
            last[i] = bits;
            if !v.is_nan() {
                f(i, *v);
            }
        }
    }
}

/// `x` clamped at 0, NaN kept.
fn nonneg(x: f64) -> f64 {
    if x < 0.0 {
        0.0
    } else {
        x
    }
}

/// Jain's fairness index `(Σx)² / (n·Σx²)` (1: equal shares; 1/n: one takes all); NaN when
/// every value is 0 or there is none.
pub fn jain_index(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let sum: f64 = xs.iter().sum();
    let sumsq: f64 = xs.iter().map(|x| x * x).sum();
    if sumsq > 0.0 {
        sum * sum / (n * sumsq)
    } else {
        f64::NAN
    }
}

impl RunsBuilder {
    fn row(&mut self, r: RunRow) {
        self.rows.push(r);
    }

    /// The per-run columns, once every flow's row is in: `span` is the run's span in seconds.
    fn finish_run(&mut self, span: f64, utilisation: f64) {
        let goodputs: Vec<f64> = self.rows.iter().map(|r| r.goodput_bps).collect();
        self.jfi = jain_index(&goodputs);
        self.utilisation = utilisation;
        let bytes: i64 = self.rows.iter().map(|r| r.bytes_delivered).sum();
        self.aggregate_goodput_bps = if span > 0.0 {
            bytes as f64 * 8.0 / span
        } else {
            f64::NAN
        };
    }

    fn build(self, stages: &[(String, String)], seed: u64) -> Table {
        let rows = &self.rows;
        let mut t = Table::default();
        macro_rules! col {
            (i64 $f:ident) => {
                t.push(
                    stringify!($f),
                    ColumnData::I64(rows.iter().map(|r| r.$f).collect()),
                )
            };
            (f64 $f:ident) => {
                t.push(
                    stringify!($f),
                    ColumnData::F64(rows.iter().map(|r| r.$f).collect()),
                )
            };
        }
        t.push(
            "flow",
            ColumnData::I32(rows.iter().map(|r| r.flow).collect()),
        );
        // Seeds are u64; the column keeps their bit pattern as int64.
        t.push("seed", ColumnData::I64(vec![seed as i64; rows.len()]));
        col!(f64 goodput_bps);
        col!(i64 bytes_delivered);
        col!(i64 rto_count);
        col!(i64 rto_spurious_true);
        col!(i64 fast_retx_count);
        col!(i64 fast_retx_spurious_true);
        col!(i64 retx_segments);
        col!(i64 spurious_retx_true);
        col!(i64 dupacks_rcvd);
        col!(i64 dsacks_rcvd);
        col!(i64 segments_sent);
        col!(f64 rtt_mean_s);
        col!(f64 rtt_sd_s);
        col!(i64 rtt_samples);
        col!(f64 longest_stall_s);
        col!(f64 completion_time_s);
        col!(i64 mss);
        col!(f64 rtt_min_s);
        col!(f64 qdelay_mean_s);
        col!(f64 qdelay_p95_s);
        col!(f64 rto_per_pkt);
        col!(f64 dupacks_per_pkt);
        col!(f64 spurious_retx_per_pkt);
        col!(f64 retx_per_pkt);
        let mut names: Vec<String> = Vec::new();
        let codes = rows
            .iter()
            .map(|r| match names.iter().position(|n| n == r.cc) {
                Some(c) => c as i32,
                None => {
                    names.push(r.cc.to_string());
                    names.len() as i32 - 1
                }
            })
            .collect();
        t.push("cc", ColumnData::Dict(codes, names));
        let n = rows.len();
        t.push("jfi", ColumnData::F64(vec![self.jfi; n]));
        t.push(
            "bottleneck_utilisation",
            ColumnData::F64(vec![self.utilisation; n]),
        );
        t.push(
            "aggregate_goodput_bps",
            ColumnData::F64(vec![self.aggregate_goodput_bps; n]),
        );
        let mut labels: Vec<String> = Vec::new();
        let codes = rows
            .iter()
            .map(|r| match labels.iter().position(|l| *l == r.spurious) {
                Some(c) => c as i32,
                None => {
                    labels.push(r.spurious.clone());
                    labels.len() as i32 - 1
                }
            })
            .collect();
        t.push("spurious", ColumnData::Dict(codes, labels));
        let responses: Vec<String> = ["none", "eifel", "undo"].map(String::from).to_vec();
        t.push(
            "response",
            ColumnData::Dict(
                rows.iter()
                    .map(|r| responses.iter().position(|x| x == r.response).unwrap_or(0) as i32)
                    .collect(),
                responses.clone(),
            ),
        );
        col!(i64 rto_episodes);
        col!(i64 rto_episodes_spurious_true);
        col!(i64 rto_spurious_detected);
        col!(i64 fr_episodes);
        col!(i64 fr_episodes_spurious_true);
        col!(i64 fr_spurious_detected);
        col!(i64 undo_count);
        col!(i64 tlp_count);
        col!(i64 tlp_recoveries);
        col!(i64 rack_loss_count);
        col!(i64 local_cwr_count);
        col!(f64 timeout_time_s);
        col!(f64 rto_wait_s);
        let protocols: Vec<String> = ["tcp", "sctp"].map(String::from).to_vec();
        t.push(
            "transport",
            ColumnData::Dict(
                rows.iter().map(|r| (r.protocol == "sctp") as i32).collect(),
                protocols,
            ),
        );
        col!(i64 failovers);
        col!(f64 time_to_failover_s);
        col!(i64 data_primary_bytes);
        col!(i64 data_other_bytes);
        col!(i64 heartbeats_sent);
        col!(f64 setup_time_s);
        col!(i64 assoc_failed);
        for d in DetectorKind::ALL {
            let name = d.name();
            let k = d as usize;
            let int = |f: fn(&DetScore) -> i64| {
                ColumnData::I64(rows.iter().map(|r| f(&r.det[k])).collect())
            };
            t.push(&format!("det_{name}_detections"), int(|s| s.tp + s.fp));
            t.push(&format!("det_{name}_tp"), int(|s| s.tp));
            t.push(&format!("det_{name}_fp"), int(|s| s.fp));
            t.push(&format!("det_{name}_fn"), int(|s| s.fn_));
            t.push(&format!("det_{name}_tn"), int(|s| s.tn));
            t.push(&format!("det_{name}_undecided"), int(|s| s.undecided));
            t.push(
                &format!("det_{name}_delay_mean_s"),
                ColumnData::F64(
                    rows.iter()
                        .map(|r| {
                            let s = &r.det[k];
                            if s.tp + s.fp > 0 {
                                s.delay_sum_s / (s.tp + s.fp) as f64
                            } else {
                                f64::NAN
                            }
                        })
                        .collect(),
                ),
            );
        }
        for (g, (path, stage)) in stages.iter().enumerate() {
            t.push(
                &format!("drops_{path}_{stage}"),
                ColumnData::I64(rows.iter().map(|r| r.drops[g] as i64).collect()),
            );
        }
        t.push(
            "drops_total",
            ColumnData::I64(
                rows.iter()
                    .map(|r| r.drops.iter().sum::<u64>() as i64)
                    .collect(),
            ),
        );
        t
    }
}
