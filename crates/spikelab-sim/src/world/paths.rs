//! Paths: building their stages, handing packets to them (a sender's own queue with
//! `backpressure`), folding a packet's passage through the stages that keep order into one
//! computation, and the exit queue that delivers packets in leaving order.

use super::*;
use crate::packet_event::{
    DELIVER as EV_DELIVER, DROP as EV_DROP, ENTER as EV_ENTER, EXIT as EV_EXIT,
};
use spikelab_core::{ArenaId, EventQueue, SimTime};
use spikelab_net::{DropCause, Outcome, PacketInfo, RateStage, Stage};
use std::collections::VecDeque;

pub(super) struct PathRt {
    pub(super) stages: Vec<Stage>,
    /// Dictionary code of each stage's name.
    pub(super) stage_code: Vec<i32>,
    /// Index of the path's first stage in the flat list of all stages.
    pub(super) first_global: usize,
    /// Every stage keeps order: an untraced packet's whole passage is one computation.
    pub(super) all_keep_order: bool,
    /// Entry counter: the next packet's `pseq`.
    pub(super) next_pseq: u64,
    /// The path a packet enters when it leaves this one (`None`: it is delivered).
    pub(super) next: Option<u16>,
    /// Packets that have a time to leave the path, in leaving order: (time, pseq, packet).
    /// Only the head has an event in the heap.
    pub(super) exits: VecDeque<(SimTime, u64, ArenaId)>,
    /// The first stage is a sender's own queue (`backpressure`): packets senders put on the
    /// path while it is full wait here, in order, instead of being dropped.
    pub(super) backpressure: bool,
    pub(super) held: VecDeque<ArenaId>,
    /// An `Ev::Held` is queued.
    pub(super) held_armed: bool,
}

impl PathRt {
    /// The first stage of a path with `backpressure`: the sender's own queue, a rate stage
    /// (validated).
    pub(super) fn own_queue(&mut self) -> &mut RateStage {
        match &mut self.stages[0] {
            Stage::Rate(r) => r,
            _ => unreachable!("backpressure is validated to be on a rate stage"),
        }
    }
}

impl World {
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
        let size = self.io.packets.get(id).size;
        let refused = !p.held.is_empty() || !p.own_queue().accepts(now, size);
        if !refused {
            self.enter_own_queue(id, path, false);
            return;
        }
        p.held.push_back(id);
        let pkt = self.io.packets.get(id);
        self.conns[pkt.conn() as usize].own_queue_refused(pkt, now);
        self.arm_held(path);
    }

    /// The packet enters a path whose first stage is a sender's own queue (which has room),
    /// after waiting for it if `was_held`: a TCP flow under TCP Small Queues notes when it
    /// will have left that queue.
    fn enter_own_queue(&mut self, id: ArenaId, path: u16, was_held: bool) {
        self.enter_path(id, path);
        let leave = self.paths[path as usize].own_queue().busy_until();
        let pkt = self.io.packets.get(id);
        let (c, dir) = (pkt.conn(), pkt.dir);
        let mut cx = cx!(self, c);
        self.conns[c as usize].own_queue_entered(dir, leave, was_held, &mut cx);
    }

    fn arm_held(&mut self, path: u16) {
        let p = &mut self.paths[path as usize];
        if p.held_armed {
            return;
        }
        let at = p.own_queue().next_room().max(self.now);
        p.held_armed = true;
        self.io.queue.push_keyed(
            at,
            tie_key(KEY_PKT, path as u32, p.next_pseq, 0),
            Ev::Held(path),
        );
    }

    /// Hands the waiting packets to the path's first stage while it has room.
    pub(super) fn release_held(&mut self, path: u16) {
        let now = self.now;
        self.paths[path as usize].held_armed = false;
        while let Some(&id) = self.paths[path as usize].held.front() {
            let size = self.io.packets.get(id).size;
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
    pub(super) fn enter_path(&mut self, id: ArenaId, path: u16) {
        let p = &mut self.paths[path as usize];
        let pseq = p.next_pseq;
        p.next_pseq += 1;
        let pkt = self.io.packets.get_mut(id);
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
        let p = self.io.packets.get(id);
        let (path, pseq, pkt_id) = (p.path as usize, p.pseq, p.id);
        let info = PacketInfo {
            wire_size: p.size,
            // The deterministic loss model's `seqs`: TCP bytes, SCTP TSNs.
            data_seq: match p.sctp() {
                Some(s) => self.io.sctp_pkts.get(s).first_tsn,
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
                        schedule_drop(&mut self.io.queue, at, path, pseq, from + k, id, cause);
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
                                hop(&mut self.io.queue, gt, gs, k - 1, false);
                                group = Some((leave, k));
                            }
                            None => group = Some((leave, k)),
                        }
                        if !keeps_order {
                            let gs = group.map_or(k, |g| g.1);
                            hop(&mut self.io.queue, leave, gs, k, true);
                            return;
                        }
                    }
                    t = leave;
                }
                Outcome::Drop(at, cause) => {
                    if let Some((gt, gs)) = group {
                        hop(&mut self.io.queue, gt, gs, k - 1, false);
                    }
                    if at == now {
                        self.drop_pkt(id, k, cause);
                    } else {
                        schedule_drop(&mut self.io.queue, at, path, pseq, k, id, cause);
                    }
                    return;
                }
            }
        }
        if let Some((gt, gs)) = group {
            hop(&mut self.io.queue, gt, gs, n - 1, false);
        }
        self.exit_at(path, t, id);
    }

    /// The rows of the stage hops `from..=to` of a packet, at their time; then, when `cont`,
    /// its way on through the rest of its path.
    #[inline(never)]
    pub(super) fn on_hop(&mut self, id: ArenaId, from: usize, to: usize, cont: bool) {
        if self.stage_rows {
            let n = self.paths[self.io.packets.get(id).path as usize]
                .stages
                .len();
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

    /// The packet at the head of the path's exit queue leaves the path: it enters the path
    /// this one continues into, or reaches its endpoint.
    pub(super) fn path_head(&mut self, path: u16) {
        let exits = &mut self.paths[path as usize].exits;
        let (at, _, pkt) = exits.pop_front().expect("a head event has a head");
        debug_assert_eq!(at, self.now);
        // Re-arm before delivering: the delivery may add to this very path.
        if let Some(&(next, pseq, _)) = exits.front() {
            self.io.queue.push_keyed(
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

    /// Queues the packet's leaving of its path at `t` (>= every exit already queued).
    fn exit_at(&mut self, path: usize, t: SimTime, id: ArenaId) {
        let pseq = self.io.packets.get(id).pseq;
        let exits = &mut self.paths[path].exits;
        debug_assert!(exits.back().is_none_or(|b| b.0 <= t));
        exits.push_back((t, pseq, id));
        if exits.len() == 1 {
            self.io.queue.push_keyed(
                t,
                tie_key(KEY_PKT, path as u32, pseq, KEY_PATH_EXIT),
                Ev::PathHead(path as u16),
            );
        }
    }

    pub(super) fn drop_pkt(&mut self, id: ArenaId, stage: usize, cause: DropCause) {
        let code = DropCause::ALL.iter().position(|c| *c == cause).unwrap_or(0) as i32;
        self.trace_pkt(id, EV_DROP, stage as i32, code);
        let p = self.io.packets.remove(id);
        let g = self.paths[p.path as usize].first_global + stage;
        if let Some(s) = p.sctp() {
            self.io.sctp_pkts.remove(s);
        }
        self.conns[p.conn() as usize].dropped(&p, g);
    }

    fn deliver(&mut self, id: ArenaId) {
        self.trace_pkt(id, EV_DELIVER, -1, -1);
        let p = self.io.packets.remove(id);
        self.conn_deliver(&p);
    }
}
