//! TCP flows in the world: a sender and a receiver per flow, pumped after every packet and
//! timer; ground truth and loss-recovery episodes; TCP Small Queues; the runs-table rows.

use super::*;
use crate::packet_event::{ACK as EV_ACK, RETX as EV_RETX, SEND as EV_SEND, TLP as EV_TLP};
use crate::scenario::{AppKind, TraceLevel};
use crate::truth::Truth;
use spikelab_core::{ArenaId, SimTime};
use spikelab_tcp::spurious::{DetectorKind, EpisodeKind};
use spikelab_tcp::{CaState, Receiver, Segment, Sender, SpuriousEvent, TxKind};
use std::collections::VecDeque;

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

pub(super) struct FlowRt {
    /// The flow's index in the scenario.
    pub(super) id: u32,
    fwd: u16,
    rev: u16,
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
    /// In-order deliveries, completion and RTT samples.
    progress: Progress,
    drops: Vec<u64>,
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

impl FlowRt {
    /// Flow `id` of the scenario, `f`, starting at `start` over paths `fwd` and `rev`;
    /// `own_queue`: its first path starts with a sender's own queue (`backpressure`).
    pub(super) fn new(
        id: u32,
        f: &crate::scenario::FlowSpec,
        start: SimTime,
        (fwd, rev): (u16, u16),
        own_queue: bool,
        n_global: usize,
    ) -> FlowRt {
        let cfg = f.tcp_config();
        let total = match f.app.kind {
            AppKind::Bulk => None,
            AppKind::File => f.app.size.map(|b| b.0),
        };
        FlowRt {
            id,
            fwd,
            rev,
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
            progress: Progress::new(start),
            drops: vec![0; n_global],
            tsq: SmallQueue::new(f, own_queue),
        }
    }

    pub(super) fn progress(&self) -> &Progress {
        &self.progress
    }
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

impl World {
    /// The flow starts: its sender sends what it may.
    pub(super) fn tcp_start(&mut self, f: u32) {
        self.flows[f as usize].progress.started(self.now);
        self.pump_sender(f);
    }

    /// A timer of flow `f`'s sender, or of its receiver (`receiver`).
    pub(super) fn flow_timer(&mut self, f: u32, receiver: bool) {
        let t = self.now;
        let fl = &mut self.flows[f as usize];
        if receiver {
            fired(&mut fl.rcv_timer, t);
            fl.rcv.on_timer(t);
            self.pump_receiver(f);
        } else {
            fired(&mut fl.snd_timer, t);
            fl.snd.on_timer(t);
            fl.take_spurious_events();
            self.pump_sender(f);
        }
    }

    /// A flow held back by TCP Small Queues may have room in its interface's queue.
    pub(super) fn small_queue_wake(&mut self, f: u32) {
        let t = self.now;
        let fl = &mut self.flows[f as usize];
        if let Some(q) = &mut fl.tsq {
            fired(&mut q.wake, t);
        }
        self.pump_sender(f);
    }

    /// A TCP packet reached its endpoint.
    pub(super) fn deliver_tcp(&mut self, p: &Pkt) {
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
                if f.progress.delivered(now, rcv_nxt) && self.level >= TraceLevel::Timeseries {
                    self.series.push(now, f.id, VAR_RCV_NXT, rcv_nxt as f64);
                }
                self.pump_receiver(fi);
            }
            Dir::Ack => {
                f.snd.on_ack(now, &p.seg);
                f.retire_truth();
                f.take_spurious_events();
                f.progress.done(now, f.snd.is_done());
                if let Some(r) = f.snd.last_rtt_sample() {
                    f.progress.rtt_sample(r);
                    if self.level >= TraceLevel::Timeseries {
                        self.series.push(now, f.id, VAR_RTT_SAMPLE, r.as_secs_f64());
                    }
                }
                self.pump_sender(fi);
            }
        }
    }

    /// A TCP packet was dropped at stage `g` (of the flat list): counted, and its data's
    /// ground truth told.
    pub(super) fn tcp_dropped(&mut self, p: &Pkt, g: usize) {
        let f = &mut self.flows[p.flow as usize];
        f.drops[g] += 1;
        if p.dir == Dir::Data && !p.seg.syn {
            f.truth.on_dropped((p.seg.seq / f.mss) as usize);
            f.retire_truth();
        }
    }

    /// A sender's own queue refused the packet (it waits): a TCP data sender counts it
    /// against TCP Small Queues and reduces its window.
    pub(super) fn own_queue_refused(&mut self, id: ArenaId) {
        let now = self.now;
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
    }

    /// The packet entered `path`, whose first stage is a sender's own queue, after waiting for
    /// it if `was_held`: a TCP flow under TCP Small Queues notes when it will have left that
    /// queue.
    pub(super) fn own_queue_entered(&mut self, id: ArenaId, path: u16, was_held: bool) {
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
        let (at, key) = (f.snd.next_timer(), tie_key(KEY_TIMER, fi, 0, 0));
        arm_timer(&mut self.queue, &mut f.snd_timer, at, key, Ev::SndTimer(fi));
    }

    fn pump_receiver(&mut self, fi: u32) {
        let now = self.now;
        while let Some(seg) = self.flows[fi as usize].rcv.poll_transmit(now) {
            self.launch(fi, Dir::Ack, seg, -1, EV_ACK);
        }
        let f = &mut self.flows[fi as usize];
        let (at, key) = (f.rcv.next_timer(), tie_key(KEY_TIMER, fi, 0, 1));
        arm_timer(&mut self.queue, &mut f.rcv_timer, at, key, Ev::RcvTimer(fi));
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

    /// The runs-table row of each flow, and its markers (timeouts and fast retransmits with
    /// their ground truth, detector verdicts, undos).
    pub(super) fn tcp_rows(&mut self, runs: &mut RunsBuilder, markers: &mut Markers, end: SimTime) {
        for f in self.flows.iter_mut() {
            let stop = f.progress.close(end);
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
            let per_pkt = |n: u64| ratio(n, st.segments_sent);
            let rtt = (st.rtt_samples, st.rtt_sum_s, st.rtt_sumsq_s);
            runs.row(RunRow {
                flow: f.id as i32,
                protocol: "tcp",
                cc: f.snd.cc_name(),
                mss: f.mss as i64,
                delivery: f.progress.columns(stop, f.rcv.rcv_nxt(), rtt),
                rto_count: st.rto_count as i64,
                rto_spurious_true: rto_spurious as i64,
                fast_retx_count: st.fast_retx_count as i64,
                fast_retx_spurious_true: fr_spurious as i64,
                retx_segments: st.retx_segments as i64,
                spurious_retx_true: spurious_retx as i64,
                segments_sent: st.segments_sent as i64,
                rto_per_pkt: per_pkt(st.rto_count),
                spurious_retx_per_pkt: per_pkt(spurious_retx),
                retx_per_pkt: per_pkt(st.retx_segments),
                rto_episodes: rto_eps,
                rto_episodes_spurious_true: rto_eps_true,
                fr_episodes: fr_eps,
                fr_episodes_spurious_true: fr_eps_true,
                drops: f.drops.clone(),
                tcp: Some(TcpColumns {
                    dupacks_rcvd: st.dupacks_rcvd as i64,
                    dsacks_rcvd: st.dsacks_rcvd as i64,
                    dupacks_per_pkt: per_pkt(st.dupacks_rcvd),
                    spurious: enabled.label(),
                    response: f.snd.config().spurious.response.name(),
                    rto_spurious_detected: rto_detected,
                    fr_spurious_detected: fr_detected,
                    undo_count: st.undo_count as i64,
                    tlp_count: st.tlp_count as i64,
                    tlp_recoveries: st.tlp_recoveries as i64,
                    rack_loss_count: st.rack_loss_count as i64,
                    local_cwr_count: st.local_cwr_count as i64,
                    moderate_cwnd_cuts: st.moderate_cwnd_cuts as i64,
                    timeout_time_s: f.snd.timeout_time(stop).as_secs_f64(),
                    rto_wait_s: st.rto_wait_ns as f64 * 1e-9,
                    // A detector that is off has no score (null in the table).
                    det: std::array::from_fn(|k| {
                        enabled.contains(DetectorKind::ALL[k]).then_some(scores[k])
                    }),
                }),
                sctp: None,
            });
        }
    }
}

impl FlowRt {
    /// Retires the segments whose ground truth can no longer change (wholly below `snd_una`,
    /// no copy in the network).
    #[inline]
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
