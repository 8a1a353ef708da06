//! The scenario's paths applied to frames: the same `spikelab-net` stages as the simulator,
//! driven by frame arrival times instead of simulated events.
//!
//! Every stage answers analytically when a packet leaves it (`Outcome::Pass(t)`) or that it is
//! dropped and when (`Outcome::Drop(t, cause)`). A packet's hop from one stage to the next is an
//! event at that (virtual) time in a heap ordered by (time, insertion sequence), exactly as in
//! the simulator's world; the last hop is the frame's departure, which the real-time engine
//! performs when the wall clock reaches it. Times are nanoseconds since the run's origin `t0`.
//!
//! Nothing here does I/O, so the whole pipeline is tested without sockets or a clock.

use crate::frame::{self, TcpFrame};
use spikelab_core::SimTime;
use spikelab_net::{DropCause, Outcome, PacketInfo, Stage};
use spikelab_scenario::build_stage;
use spikelab_scenario::Scenario;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Stages per path the emulator supports (a packet carries its exit times inline).
pub const MAX_STAGES: usize = 8;

/// Which veth a frame arrived on (and so which way it travels).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The sender's side: frames travel their flow's `fwd` path and leave on side B.
    A,
    /// The receiver's side: frames travel their flow's `rev` path and leave on side A.
    B,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

struct PathRt {
    stages: Vec<Stage>,
    /// Latest arrival time handed to each stage (stages need non-decreasing arrivals).
    last_arrival: Vec<u64>,
}

/// A path as the pcapng metadata and the analysis describe it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathMeta {
    pub name: String,
    pub stages: Vec<String>,
}

/// A flow as the emulator sees it: frames to / from `port` belong to it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FlowMeta {
    pub port: u16,
    /// Index of its forward (data) path in the path list.
    pub fwd: usize,
    /// Index of its reverse (ACK) path.
    pub rev: usize,
    /// An SCTP association's destinations: the receiver's address of each and its forward
    /// and reverse path indices (empty: one destination, `fwd` / `rev`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dests: Vec<DestMeta>,
}

/// One destination of a multihomed flow.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DestMeta {
    pub addr: [u8; 4],
    pub fwd: usize,
    pub rev: usize,
}

impl FlowMeta {
    /// The destination a frame belongs to: by its destination address from the sender's
    /// side, by its source address from the receiver's; 0 for a flow with one destination or
    /// an address that is none of them.
    pub fn dest_of(&self, side_a: bool, f: &TcpFrame) -> usize {
        let addr = if side_a { f.dst } else { f.src };
        self.dests.iter().position(|d| d.addr == addr).unwrap_or(0)
    }

    /// The path a frame of this flow travels.
    pub fn path_of(&self, side_a: bool, f: &TcpFrame) -> usize {
        match self.dests.get(self.dest_of(side_a, f)) {
            Some(d) if side_a => d.fwd,
            Some(d) => d.rev,
            None if side_a => self.fwd,
            None => self.rev,
        }
    }
}

struct FlowRt {
    meta: FlowMeta,
    /// (fwd, rev) path indices of each destination, in the scenario's order.
    dest_paths: Vec<(usize, usize)>,
    /// Initial sequence number of the sender (from its SYN).
    isn: Option<u32>,
    /// Last unwrapped relative sequence number (for 32-bit wrap-around).
    last_rel: u64,
}

/// One frame inside the emulator.
pub struct Packet {
    /// Unique id in arrival order (all frames, classified or not).
    pub id: u64,
    pub side_in: Side,
    /// Flow index, or -1 for a frame of no flow (forwarded untouched).
    pub flow: i32,
    /// Path index, or -1.
    pub path: i32,
    /// Arrival time (kernel receive timestamp), ns since t0.
    pub t_in: u64,
    /// Exit time from each stage passed so far, ns since t0.
    pub exits: [u64; MAX_STAGES],
    pub n_exits: u8,
    pub len: usize,
    pub buf: Box<[u8]>,
}

impl Packet {
    pub fn frame(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    pub fn exits(&self) -> &[u64] {
        &self.exits[..self.n_exits as usize]
    }
}

/// What happened to a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FateKind {
    /// It is due to leave on the other side at `at`.
    Depart,
    /// It was dropped at `stage` of its path.
    Drop { stage: u16, cause: DropCause },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fate {
    pub slot: u32,
    pub kind: FateKind,
    /// Intended time of the departure or the drop, ns since t0.
    pub at: u64,
}

const EV_HOP: u8 = 0;
const EV_DEPART: u8 = 1;
const EV_DROP: u8 = 2; // + index into DropCause::ALL

/// The heap entry: (time, insertion sequence, slot, stage, kind).
type Ev = Reverse<(u64, u64, u32, u16, u8)>;

/// Counters the pipeline keeps.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PipelineStats {
    pub frames_in: [u64; 2],
    pub unclassified: u64,
    /// Drops per path, stage and cause (`DropCause::ALL` order).
    pub drops: Vec<Vec<[u64; DropCause::ALL.len()]>>,
    /// Times a stage was handed an arrival earlier than one it had already seen (the engine fell
    /// behind); the arrival was moved to the later time.
    pub late_stage_arrivals: u64,
}

pub struct Pipeline {
    paths: Vec<PathRt>,
    pub path_meta: Vec<PathMeta>,
    flows: Vec<FlowRt>,
    slots: Vec<Packet>,
    free: Vec<u32>,
    heap: BinaryHeap<Ev>,
    seq: u64,
    next_id: u64,
    buf_size: usize,
    pub stats: PipelineStats,
}

impl Pipeline {
    /// The paths of a validated scenario and its flows on `ports` (one per flow, in order).
    pub fn new(
        sc: &Scenario,
        seed: u64,
        ports: &[u16],
        buf_size: usize,
    ) -> Result<Pipeline, String> {
        if ports.len() != sc.flow.len() {
            return Err(format!("{} ports for {} flows", ports.len(), sc.flow.len()));
        }
        let mut paths = Vec::new();
        let mut path_meta = Vec::new();
        for (name, spec) in &sc.path {
            if spec.next.is_some() {
                return Err(format!(
                    "path.{name}.next: the emulator does not join paths yet; give each flow \
                     one path with all its stages (the simulator supports `next`)"
                ));
            }
            if spec.stage.len() > MAX_STAGES {
                return Err(format!(
                    "path.{name}: the emulator supports at most {MAX_STAGES} stages per path, got {}",
                    spec.stage.len()
                ));
            }
            let stages = (0..spec.stage.len())
                .map(|i| build_stage(name, i, &spec.stage, seed))
                .collect::<Vec<_>>();
            paths.push(PathRt {
                last_arrival: vec![0; stages.len()],
                stages,
            });
            path_meta.push(PathMeta {
                name: name.clone(),
                stages: spec
                    .stage
                    .iter()
                    .map(|s| s.name.clone().unwrap_or_else(|| s.kind_name().into()))
                    .collect(),
            });
        }
        let index = |p: &str| path_meta.iter().position(|m| m.name == p);
        let mut flows = Vec::new();
        for (i, f) in sc.flow.iter().enumerate() {
            let dests = f.destinations();
            let mut idx = Vec::new();
            for d in &dests {
                let (Some(fwd), Some(rev)) = (index(&d.fwd), index(&d.rev)) else {
                    return Err(format!("flow[{i}]: paths not resolved"));
                };
                idx.push((fwd, rev));
            }
            let (fwd, rev) = idx[f.sctp_config().map_or(0, |c| c.primary).min(idx.len() - 1)];
            if ports[..i].contains(&ports[i]) {
                return Err(format!("flow[{i}]: port {} used twice", ports[i]));
            }
            flows.push(FlowRt {
                meta: FlowMeta {
                    port: ports[i],
                    fwd,
                    rev,
                    dests: Vec::new(),
                },
                dest_paths: idx,
                isn: None,
                last_rel: 0,
            });
        }
        let drops = paths
            .iter()
            .map(|p| vec![[0; DropCause::ALL.len()]; p.stages.len()])
            .collect();
        Ok(Pipeline {
            paths,
            path_meta,
            flows,
            slots: Vec::with_capacity(1024),
            free: Vec::with_capacity(1024),
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
            next_id: 0,
            buf_size: buf_size.max(64),
            stats: PipelineStats {
                drops,
                ..PipelineStats::default()
            },
        })
    }

    /// The receiver's address of each destination of each flow (`EmuConfig::dest_addrs`):
    /// frames then travel the path of the destination their address names.
    pub fn set_dest_addrs(&mut self, addrs: &[Vec<String>]) -> Result<(), String> {
        for (i, a) in addrs.iter().enumerate() {
            let Some(fl) = self.flows.get_mut(i) else {
                return Err(format!("dest_addrs: no flow {i}"));
            };
            if a.is_empty() {
                continue;
            }
            if a.len() != fl.dest_paths.len() {
                return Err(format!(
                    "dest_addrs: flow {i} has {} destinations, {} addresses given",
                    fl.dest_paths.len(),
                    a.len()
                ));
            }
            fl.meta.dests = a
                .iter()
                .zip(&fl.dest_paths)
                .map(|(s, &(fwd, rev))| {
                    let ip: std::net::Ipv4Addr = s
                        .parse()
                        .map_err(|_| format!("dest_addrs: {s:?} is no IPv4 address"))?;
                    Ok(DestMeta {
                        addr: ip.octets(),
                        fwd,
                        rev,
                    })
                })
                .collect::<Result<_, String>>()?;
        }
        Ok(())
    }

    pub fn flow_meta(&self) -> Vec<FlowMeta> {
        self.flows.iter().map(|f| f.meta.clone()).collect()
    }

    pub fn buf_size(&self) -> usize {
        self.buf_size
    }

    pub fn packet(&self, slot: u32) -> &Packet {
        &self.slots[slot as usize]
    }

    /// Frees a packet's slot once the engine has sent or logged it.
    pub fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }

    /// Packets inside the emulator (waiting in a stage or not yet released).
    pub fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    fn alloc(&mut self) -> u32 {
        if let Some(s) = self.free.pop() {
            return s;
        }
        self.slots.push(Packet {
            id: 0,
            side_in: Side::A,
            flow: -1,
            path: -1,
            t_in: 0,
            exits: [0; MAX_STAGES],
            n_exits: 0,
            len: 0,
            buf: vec![0u8; self.buf_size].into_boxed_slice(),
        });
        (self.slots.len() - 1) as u32
    }

    /// The time of the earliest pending event and whether it is a departure.
    pub fn next_due(&self) -> Option<(u64, bool)> {
        self.heap
            .peek()
            .map(|Reverse((t, _, _, _, k))| (*t, *k == EV_DEPART))
    }

    fn push(&mut self, t: u64, slot: u32, stage: u16, kind: u8) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, slot, stage, kind)));
    }

    /// A frame arrived on `side` at `t` (ns since t0). Fates decided at once (a frame of no
    /// flow, a path without delay, a drop at arrival) are appended to `out`. Returns the slot.
    pub fn arrive(&mut self, t: u64, side: Side, frame: &[u8], out: &mut Vec<Fate>) -> u32 {
        let slot = self.alloc();
        let id = self.next_id;
        self.next_id += 1;
        self.stats.frames_in[side.index()] += 1;
        let len = frame.len().min(self.buf_size);
        let parsed = frame::parse(frame);
        let (flow, path, info) = self.classify(side, parsed);
        {
            let p = &mut self.slots[slot as usize];
            p.id = id;
            p.side_in = side;
            p.flow = flow;
            p.path = path;
            p.t_in = t;
            p.n_exits = 0;
            p.len = len;
            p.buf[..len].copy_from_slice(&frame[..len]);
        }
        if path < 0 {
            self.stats.unclassified += 1;
            out.push(Fate {
                slot,
                kind: FateKind::Depart,
                at: t,
            });
            return slot;
        }
        self.advance(slot, path as usize, 0, t, &info, out);
        slot
    }

    fn classify(&mut self, side: Side, f: Option<TcpFrame>) -> (i32, i32, PacketInfo) {
        let Some(f) = f else {
            return (
                -1,
                -1,
                PacketInfo {
                    wire_size: 0,
                    data_seq: None,
                },
            );
        };
        let port = match side {
            Side::A => f.dport,
            Side::B => f.sport,
        };
        let Some(fi) = self.flows.iter().position(|fl| fl.meta.port == port) else {
            return (
                -1,
                -1,
                PacketInfo {
                    wire_size: f.ip_len,
                    data_seq: None,
                },
            );
        };
        let fl = &mut self.flows[fi];
        let path = fl.meta.path_of(side == Side::A, &f);
        let mut data_seq = None;
        if side == Side::A {
            if let Some(origin) = f.origin() {
                fl.isn = Some(origin);
                fl.last_rel = 0;
            } else if f.is_data() {
                if let Some(isn) = fl.isn {
                    let rel = unwrap_seq(fl.last_rel, f.seq.wrapping_sub(isn.wrapping_add(1)));
                    fl.last_rel = rel;
                    data_seq = Some(f.data_seq(rel));
                }
            }
        }
        (
            fi as i32,
            path as i32,
            PacketInfo {
                wire_size: f.ip_len,
                data_seq,
            },
        )
    }

    /// The first stage of each of these paths is a rate stage whose queue the sending host's
    /// qdisc holds (`backpressure`): it keeps serialising at its rate, never drops.
    pub fn host_queues(&mut self, paths: &[String]) -> Result<(), String> {
        for name in paths {
            let i = self
                .path_meta
                .iter()
                .position(|m| &m.name == name)
                .ok_or_else(|| format!("host_queue_paths: no path {name:?}"))?;
            match self.paths[i].stages.first_mut() {
                Some(Stage::Rate(r)) => r.unlimit(),
                _ => {
                    return Err(format!(
                        "host_queue_paths: path.{name}.stage[0] is not a rate stage"
                    ))
                }
            }
        }
        Ok(())
    }

    /// Moves a packet into `stage` of `path` at virtual time `t`, like the simulator's
    /// `World::advance`: zero-time passes continue at once, later ones become heap events.
    fn advance(
        &mut self,
        slot: u32,
        path: usize,
        mut stage: usize,
        mut t: u64,
        info: &PacketInfo,
        out: &mut Vec<Fate>,
    ) {
        let n = self.paths[path].stages.len();
        loop {
            if stage == n {
                out.push(Fate {
                    slot,
                    kind: FateKind::Depart,
                    at: t,
                });
                return;
            }
            let pr = &mut self.paths[path];
            if t < pr.last_arrival[stage] {
                self.stats.late_stage_arrivals += 1;
                t = pr.last_arrival[stage];
            }
            pr.last_arrival[stage] = t;
            match pr.stages[stage].on_arrival(SimTime(t), info) {
                Outcome::Pass(exit) => {
                    let p = &mut self.slots[slot as usize];
                    p.exits[stage] = exit.0;
                    p.n_exits = stage as u8 + 1;
                    if exit.0 == t {
                        stage += 1;
                        continue;
                    }
                    let kind = if stage + 1 == n { EV_DEPART } else { EV_HOP };
                    self.push(exit.0, slot, stage as u16, kind);
                    return;
                }
                Outcome::Drop(at, cause) => {
                    if at.0 == t {
                        self.count_drop(path, stage, cause);
                        out.push(Fate {
                            slot,
                            kind: FateKind::Drop {
                                stage: stage as u16,
                                cause,
                            },
                            at: t,
                        });
                    } else {
                        let code = cause_index(cause) as u8;
                        self.push(at.0, slot, stage as u16, EV_DROP + code);
                    }
                    return;
                }
            }
        }
    }

    fn count_drop(&mut self, path: usize, stage: usize, cause: DropCause) {
        self.stats.drops[path][stage][cause_index(cause)] += 1;
    }

    /// Processes every event due at or before `t`, in (time, insertion) order, appending the
    /// departures and drops to `out`.
    pub fn run_until(&mut self, t: u64, out: &mut Vec<Fate>) {
        while let Some(&Reverse((at, _, slot, stage, kind))) = self.heap.peek() {
            if at > t {
                break;
            }
            self.heap.pop();
            let path = self.slots[slot as usize].path as usize;
            match kind {
                EV_DEPART => out.push(Fate {
                    slot,
                    kind: FateKind::Depart,
                    at,
                }),
                EV_HOP => {
                    let info = self.info_of(slot);
                    self.advance(slot, path, stage as usize + 1, at, &info, out);
                }
                _ => {
                    let cause = DropCause::ALL[(kind - EV_DROP) as usize];
                    self.count_drop(path, stage as usize, cause);
                    out.push(Fate {
                        slot,
                        kind: FateKind::Drop { stage, cause },
                        at,
                    });
                }
            }
        }
    }

    /// A queued packet's stage view, recomputed from its frame (no per-packet allocation).
    fn info_of(&self, slot: u32) -> PacketInfo {
        let p = &self.slots[slot as usize];
        let f = frame::parse(p.frame());
        let mut data_seq = None;
        if let (Some(f), Side::A) = (f, p.side_in) {
            if f.is_data() {
                if let Some(isn) = self.flows[p.flow as usize].isn {
                    let rel = unwrap_seq(
                        self.flows[p.flow as usize].last_rel,
                        f.seq.wrapping_sub(isn.wrapping_add(1)),
                    );
                    data_seq = Some(f.data_seq(rel));
                }
            }
        }
        PacketInfo {
            wire_size: f.map_or(0, |f| f.ip_len),
            data_seq,
        }
    }
}

/// Index of a cause in `DropCause::ALL` (the order of the `cause` dictionary).
pub fn cause_index(c: DropCause) -> usize {
    DropCause::ALL.iter().position(|x| *x == c).unwrap_or(0)
}

/// The 64-bit value congruent to `rel32` mod 2^32 that is closest to `last`.
pub fn unwrap_seq(last: u64, rel32: u32) -> u64 {
    let base = last & !0xffff_ffff;
    let cands = [
        base.wrapping_sub(1 << 32) | rel32 as u64,
        base | rel32 as u64,
        (base + (1 << 32)) | rel32 as u64,
    ];
    let mut best = cands[1];
    for c in cands {
        if c <= u64::MAX >> 1 && c.abs_diff(last) < best.abs_diff(last) {
            best = c;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::tests::build;
    use crate::frame::{ACK, SYN};
    use spikelab_core::Rng;
    use spikelab_net::{LossModel, LossStage, StageModel};
    use std::path::Path;

    const MS: u64 = 1_000_000;

    fn scenario(paths: &str) -> Scenario {
        let text = format!("{paths}\n[[flow]]\nfwd = \"fwd\"\nrev = \"rev\"\n");
        spikelab_scenario::parse(&text, &[], Path::new(".")).unwrap()
    }

    fn data(seq: u32) -> Vec<u8> {
        build(40000, 5000, seq, 1, ACK, &[], 1448)
    }

    fn ack(a: u32) -> Vec<u8> {
        build(5000, 40000, 1, a, ACK, &[], 0)
    }

    /// Runs `frames` (time, side, frame) through the pipeline; returns (packet id, fate).
    /// The ids of the frames a run's fates drop, in fate order.
    fn dropped_ids(fates: &[(u64, Fate)]) -> Vec<u64> {
        fates
            .iter()
            .filter(|(_, f)| matches!(f.kind, FateKind::Drop { .. }))
            .map(|(id, _)| *id)
            .collect()
    }

    fn run(p: &mut Pipeline, frames: &[(u64, Side, Vec<u8>)]) -> Vec<(u64, Fate)> {
        let mut out = Vec::new();
        let mut fates = Vec::new();
        for (t, side, f) in frames {
            p.run_until(*t, &mut out);
            p.arrive(*t, *side, f, &mut out);
        }
        p.run_until(u64::MAX, &mut out);
        for f in out {
            fates.push((p.packet(f.slot).id, f));
            p.release(f.slot);
        }
        fates
    }

    #[test]
    fn profile_delay_follows_eq1_and_keeps_fifo() {
        let sc = scenario(
            "[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\nprofile = [[0, 50, 0], [10, 50, 0], [10, 1500, 0], [1470, 50, 0]]\n",
        );
        let mut p = Pipeline::new(&sc, 1, &[5000], 2048).unwrap();
        let frames: Vec<_> = [0u64, 10, 740]
            .iter()
            .enumerate()
            .map(|(i, ms)| (ms * MS, Side::A, data(1000 + 1448 * i as u32)))
            .collect();
        let fates = run(&mut p, &frames);
        let at: Vec<u64> = fates.iter().map(|(_, f)| f.at).collect();
        // 0 + 50; 10 + 1500; 740 + 775 (halfway down the ramp)
        assert_eq!(at, vec![50 * MS, 1510 * MS, 1515 * MS]);
        assert!(fates.iter().all(|(_, f)| f.kind == FateKind::Depart));
    }

    #[test]
    fn rate_then_delay_hops_through_the_heap_in_time_order() {
        let sc = scenario(
            "[path.fwd]\n[[path.fwd.stage]]\ntype = \"rate\"\nrate = \"10Mbps\"\nqueue = 1\n[[path.fwd.stage]]\ntype = \"delay\"\ndelay = \"10ms\"\n",
        );
        let mut p = Pipeline::new(&sc, 1, &[5000], 2048).unwrap();
        // Three 1488-byte IP packets at once: 1.1904 ms each; the third finds the queue full.
        let frames: Vec<_> = (0..3).map(|i| (0, Side::A, data(1 + 1448 * i))).collect();
        let fates = run(&mut p, &frames);
        assert_eq!(
            fates[0].1.kind,
            FateKind::Drop {
                stage: 0,
                cause: DropCause::QueueFull
            }
        );
        assert_eq!(fates[0].0, 2);
        assert_eq!(fates[1].1.at, 1_190_400 + 10 * MS);
        assert_eq!(fates[2].1.at, 2_380_800 + 10 * MS);
        assert_eq!(p.stats.drops[0][0][0], 1);
    }

    #[test]
    fn a_host_queue_keeps_the_rate_and_lifts_the_capacity() {
        // The sender's own queue (backpressure): in the emulator the sending host's qdisc
        // refuses when full, so the stage serialises everything it is given.
        let sc = scenario(
            "[path.fwd]\n[[path.fwd.stage]]\ntype = \"rate\"\nrate = \"10Mbps\"\nqueue = 1\nbackpressure = true\n",
        );
        let mut p = Pipeline::new(&sc, 1, &[5000], 2048).unwrap();
        assert!(p.host_queues(&["nope".into()]).is_err());
        p.host_queues(&["fwd".into()]).unwrap();
        let frames: Vec<_> = (0..3).map(|i| (0, Side::A, data(1 + 1448 * i))).collect();
        let fates = run(&mut p, &frames);
        let at: Vec<u64> = fates.iter().map(|(_, f)| f.at).collect();
        // 1488-byte IP packets at 10 Mbit/s: 1.1904 ms each, none dropped.
        assert_eq!(at, vec![1_190_400, 2_380_800, 3_571_200]);
        assert!(fates.iter().all(|(_, f)| f.kind == FateKind::Depart));
        // Only a rate stage can be the host's queue.
        let sc = scenario("[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\ndelay = \"1ms\"\n");
        let mut p = Pipeline::new(&sc, 1, &[5000], 2048).unwrap();
        let err = p.host_queues(&["fwd".into()]).unwrap_err();
        assert!(
            err.contains("path.fwd.stage[0] is not a rate stage"),
            "{err}"
        );
    }

    #[test]
    fn acks_take_the_reverse_path_and_other_frames_pass_untouched() {
        let sc = scenario(
            "[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\ndelay = \"30ms\"\n[path.rev]\n[[path.rev.stage]]\ntype = \"delay\"\ndelay = \"5ms\"\n",
        );
        let mut p = Pipeline::new(&sc, 1, &[5000], 2048).unwrap();
        let other = build(1, 2, 3, 4, ACK, &[], 10);
        let fates = run(
            &mut p,
            &[
                (0, Side::A, data(1)),
                (MS, Side::B, ack(1449)),
                (2 * MS, Side::A, other),
            ],
        );
        let by_id: Vec<(u64, u64)> = fates.iter().map(|(id, f)| (*id, f.at)).collect();
        assert_eq!(by_id, vec![(2, 2 * MS), (1, 6 * MS), (0, 30 * MS)]);
        assert_eq!(p.stats.unclassified, 1);
    }

    #[test]
    fn deterministic_loss_by_sequence_number_is_relative_to_the_syn() {
        let sc = scenario("[path.fwd]\n[[path.fwd.stage]]\ntype = \"loss\"\nseqs = [1448]\n");
        let mut p = Pipeline::new(&sc, 1, &[5000], 2048).unwrap();
        let isn = u32::MAX - 100; // the relative numbers wrap around 2^32
        let syn = build(40000, 5000, isn, 0, SYN, &[], 0);
        let frames = vec![
            (0, Side::A, syn),
            (MS, Side::A, data(isn.wrapping_add(1))),
            (2 * MS, Side::A, data(isn.wrapping_add(1 + 1448))),
            (3 * MS, Side::A, data(isn.wrapping_add(1 + 2 * 1448))),
        ];
        let fates = run(&mut p, &frames);
        let dropped = dropped_ids(&fates);
        assert_eq!(dropped, vec![2]);
    }

    #[test]
    fn sctp_packets_are_a_flows_and_their_tsns_count_from_one() {
        use crate::frame::tests::{build_sctp, data_chunk, init_chunk, sack_chunk};
        // As in the simulator, `seqs` of a deterministic loss stage counts SCTP TSNs from 1:
        // the second DATA chunk of the association is dropped, whatever its Initial TSN.
        let sc = scenario(
            "[path.fwd]\n[[path.fwd.stage]]\ntype = \"loss\"\nseqs = [2]\n[path.rev]\n[[path.rev.stage]]\ntype = \"delay\"\ndelay = \"5ms\"\n",
        );
        let mut p = Pipeline::new(&sc, 1, &[5000], 2048).unwrap();
        let init = u32::MAX; // the TSNs wrap around 2^32
        let frames = vec![
            (0, Side::A, build_sctp(40000, 5000, &[init_chunk(1, init)])),
            (
                MS,
                Side::A,
                build_sctp(40000, 5000, &[data_chunk(init, 1452)]),
            ),
            (
                2 * MS,
                Side::A,
                build_sctp(40000, 5000, &[data_chunk(init.wrapping_add(1), 1452)]),
            ),
            (
                3 * MS,
                Side::A,
                build_sctp(40000, 5000, &[data_chunk(init.wrapping_add(2), 1452)]),
            ),
            (
                4 * MS,
                Side::B,
                build_sctp(5000, 40000, &[sack_chunk(init, &[], &[])]),
            ),
            // Another port is no flow's: forwarded at once.
            (
                5 * MS,
                Side::A,
                build_sctp(40000, 6000, &[data_chunk(1, 100)]),
            ),
        ];
        let fates = run(&mut p, &frames);
        let dropped = dropped_ids(&fates);
        assert_eq!(dropped, vec![2]);
        // The SACK travelled the flow's reverse path (5 ms).
        let sack = fates.iter().find(|(id, _)| *id == 4).unwrap();
        assert_eq!(sack.1.at, 9 * MS);
        assert_eq!(p.stats.unclassified, 1);
    }

    #[test]
    fn a_multihomed_flows_frames_travel_the_path_of_the_address_they_name() {
        use crate::frame::tests::{build_sctp_between, data_chunk, sack_chunk};
        let text = "[path.a]\n[[path.a.stage]]\ntype = \"delay\"\ndelay = \"10ms\"\n\
            [path.b]\n[[path.b.stage]]\ntype = \"delay\"\ndelay = \"30ms\"\n\
            [path.ar]\n[[path.ar.stage]]\ntype = \"delay\"\ndelay = \"1ms\"\n\
            [path.br]\n[[path.br.stage]]\ntype = \"delay\"\ndelay = \"3ms\"\n\
            [[flow]]\nprotocol = \"sctp\"\n\
            paths = [{ fwd = \"a\", rev = \"ar\" }, { fwd = \"b\", rev = \"br\" }]\n\
            sctp = { primary = 1 }\n";
        let sc = spikelab_scenario::parse(text, &[], Path::new(".")).unwrap();
        let mut p = Pipeline::new(&sc, 1, &[5000], 2048).unwrap();
        // Without addresses every frame takes the primary's paths (destination 1: b, br;
        // paths are indexed in name order: a, ar, b, br).
        assert_eq!((p.flow_meta()[0].fwd, p.flow_meta()[0].rev), (2, 3));
        let err = p.set_dest_addrs(&[vec!["10.0.0.2".into()]]).unwrap_err();
        assert!(err.contains("2 destinations, 1 addresses"), "{err}");
        assert!(p.set_dest_addrs(&[vec!["x".into(), "y".into()]]).is_err());
        p.set_dest_addrs(&[vec!["10.0.0.2".into(), "10.0.1.2".into()]])
            .unwrap();
        let (c, s0, s1) = ([10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 1, 2]);
        let frames = vec![
            (
                0,
                Side::A,
                build_sctp_between(c, s0, 40000, 5000, &[data_chunk(1, 100)]),
            ),
            (
                0,
                Side::A,
                build_sctp_between(c, s1, 40000, 5000, &[data_chunk(2, 100)]),
            ),
            (
                0,
                Side::B,
                build_sctp_between(s0, c, 5000, 40000, &[sack_chunk(1, &[], &[])]),
            ),
            (
                0,
                Side::B,
                build_sctp_between(s1, c, 5000, 40000, &[sack_chunk(2, &[], &[])]),
            ),
        ];
        let fates = run(&mut p, &frames);
        let at: Vec<(u64, u64)> = fates.iter().map(|(id, f)| (*id, f.at)).collect();
        assert_eq!(at, vec![(2, MS), (3, 3 * MS), (0, 10 * MS), (1, 30 * MS)]);
    }

    #[test]
    fn a_seed_gives_the_same_loss_pattern_as_the_simulators_stage() {
        let sc = scenario("[path.fwd]\n[[path.fwd.stage]]\ntype = \"loss\"\np = 0.1\n");
        let mut p = Pipeline::new(&sc, 42, &[5000], 2048).unwrap();
        let frames: Vec<_> = (0..500u32)
            .map(|i| (i as u64 * MS, Side::A, data(1 + 1448 * i)))
            .collect();
        let fates = run(&mut p, &frames);
        let mut dropped = dropped_ids(&fates);
        dropped.sort_unstable();
        // The same stream the simulator's world builds for path "fwd", stage 0.
        let mut stage = LossStage::new(
            LossModel::Bernoulli { p: 0.1 },
            Rng::stream(42, "path/fwd/stage/0"),
        );
        let info = PacketInfo {
            wire_size: 1500,
            data_seq: None,
        };
        let expected: Vec<u64> = (0..500u64)
            .filter(|_| matches!(stage.on_arrival(SimTime::ZERO, &info), Outcome::Drop(..)))
            .collect();
        assert_eq!(dropped, expected);
        assert!(!expected.is_empty());
    }

    #[test]
    fn slots_are_reused() {
        let sc = scenario("[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\ndelay = \"1ms\"\n");
        let mut p = Pipeline::new(&sc, 1, &[5000], 2048).unwrap();
        for i in 0..100u32 {
            run(&mut p, &[(i as u64 * 10 * MS, Side::A, data(1 + 1448 * i))]);
        }
        assert_eq!(p.slots.len(), 1);
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    fn sequence_numbers_unwrap_across_2_32() {
        assert_eq!(unwrap_seq(0, 5), 5);
        assert_eq!(unwrap_seq(0xffff_fff0, 0x10), 0x1_0000_0010);
        assert_eq!(unwrap_seq(0x1_0000_0010, 0xffff_fff0), 0xffff_fff0);
        // A retransmission just behind the origin stays near 0 rather than jumping to 2^32.
        assert_eq!(unwrap_seq(100, 50), 50);
    }
}
