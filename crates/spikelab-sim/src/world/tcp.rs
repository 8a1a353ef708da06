//! TCP flows in the world: a sender and a receiver per flow, pumped after every packet and
//! timer; ground truth and loss-recovery episodes; TCP Small Queues; the runs-table rows.

use super::*;
use crate::packet_event::{ACK as EV_ACK, RETX as EV_RETX, SEND as EV_SEND, TLP as EV_TLP};
use crate::scenario::AppKind;
use crate::truth::Truth;
use spikelab_core::SimTime;
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
    /// Its index among the TCP flows: the owner in its timers' tie keys.
    local: u32,
    fwd: u16,
    rev: u16,
    mss: u64,
    snd: Sender,
    rcv: Receiver,
    /// The flow runs ns-2.35's agent and sink (`profile = "ns2"`): ns-2's packet sizes.
    ns2: bool,
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
    /// Flow `id` of the scenario (TCP flow `local`), `f`, starting at `start` over paths `fwd`
    /// and `rev`; `own_queue`: its first path starts with a sender's own queue (`backpressure`).
    pub(super) fn new(
        id: u32,
        local: u32,
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
            local,
            fwd,
            rev,
            mss: cfg.mss as u64,
            ns2: cfg.ns2,
            snd: Sender::new(cfg.clone(), total),
            rcv: Receiver::new(cfg),
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

impl Endpoint for FlowRt {
    fn id(&self) -> u32 {
        self.id
    }

    fn progress(&self) -> &Progress {
        &self.progress
    }

    /// The flow starts: its sender sends what it may.
    fn start(&mut self, cx: &mut Cx) {
        self.progress.started(cx.now);
    }

    fn on_timer(&mut self, timer: Timer, cx: &mut Cx) {
        match timer {
            Timer::Snd => {
                self.snd.on_timer(cx.now);
                self.take_spurious_events();
            }
            Timer::Rcv => self.rcv.on_timer(cx.now),
            // TCP Small Queues: the flow may have room in its interface's queue.
            Timer::Wake => {
                if let Some(q) = &mut self.tsq {
                    fired(&mut q.wake, cx.now);
                }
            }
        }
    }

    #[inline]
    fn on_packet(&mut self, _to: Side, p: &Pkt, cx: &mut Cx) {
        let now = cx.now;
        match p.dir {
            Dir::Data if p.seg.syn => {
                self.rcv.on_segment(now, &p.seg);
            }
            Dir::Data => {
                let idx = (p.seg.seq / self.mss) as usize;
                // A segment PAWS discards (RFC 7323 §5.3) never reached the receiver's data:
                // its ground truth is a drop.
                if self.rcv.on_segment(now, &p.seg) {
                    self.truth.on_delivered(idx, p.tx as u16);
                } else {
                    self.truth.on_dropped(idx);
                }
                self.retire_truth();
                cx.delivered(&mut self.progress, self.id, self.rcv.rcv_nxt());
            }
            Dir::Ack => {
                self.snd.on_ack(now, &p.seg);
                self.retire_truth();
                self.take_spurious_events();
                self.progress.done(now, self.snd.is_done());
                if let Some(r) = self.snd.last_rtt_sample() {
                    cx.rtt_sample(&mut self.progress, self.id, now, r);
                }
            }
        }
    }

    #[inline(always)]
    fn poll_transmit(&mut self, side: Side, cx: &mut Cx) -> Option<Transmit> {
        match side {
            Side::Snd => self.poll_sender(cx),
            Side::Rcv => {
                let seg = self.rcv.poll_transmit(cx.now)?;
                Some(self.send(cx, Side::Rcv, seg, -1, EV_ACK))
            }
        }
    }

    #[inline(always)]
    fn pumped(&mut self, side: Side, cx: &mut Cx) {
        if side == Side::Snd && cx.series_on {
            self.record_vars(cx);
        }
    }

    fn next_timer(&self, side: Side) -> Option<SimTime> {
        match side {
            Side::Snd => self.snd.next_timer(),
            Side::Rcv => self.rcv.next_timer(),
        }
    }

    /// The sender's timer before the receiver's, by the flow's index among the TCP flows.
    fn timer_key(&self, side: Side) -> u128 {
        tie_key(KEY_TIMER, self.local, 0, side as u32)
    }

    /// Counted, and its data's ground truth told.
    fn dropped(&mut self, p: &Pkt, g: usize) {
        self.drops[g] += 1;
        if p.dir == Dir::Data && !p.seg.syn {
            self.truth.on_dropped((p.seg.seq / self.mss) as usize);
            self.retire_truth();
        }
    }

    /// A data segment waits: it counts against TCP Small Queues, and the sender reduces its
    /// window.
    fn own_queue_refused(&mut self, p: &Pkt, now: SimTime) {
        if p.dir == Dir::Data {
            if let Some(q) = &mut self.tsq {
                q.held += 1;
            }
            if !p.seg.syn {
                self.snd.local_congestion(now);
            }
        }
    }

    /// Under TCP Small Queues, notes when the data segment will have left the queue.
    fn own_queue_entered(&mut self, dir: Dir, leave: SimTime, was_held: bool, cx: &mut Cx) {
        if dir != Dir::Data {
            return;
        }
        let Some(q) = &mut self.tsq else {
            return;
        };
        q.held -= was_held as u32;
        q.leaving.push_back(leave);
        if q.throttled {
            self.arm_small_queue(cx);
        }
    }

    /// The flow's runs-table row, and its markers (timeouts and fast retransmits with their
    /// ground truth, detector verdicts, undos).
    fn rows(&mut self, end: SimTime, runs: &mut RunsBuilder, markers: &mut Markers) {
        let stop = self.progress.close(end);
        let spurious = |&(_, idx, tn): &(SimTime, usize, u16)| self.truth.spurious(idx, tn);
        let rto_spurious = self.rto_events.iter().filter(|e| spurious(e)).count();
        let fr_spurious = self.fr_events.iter().filter(|e| spurious(e)).count();
        let spurious_retx = self.truth.spurious_retx();
        // Retransmission markers carry their segment and transmission number.
        let mss = self.mss;
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
        let mut ev: Vec<(SimTime, i32, f64, i64, i32)> = self
            .rto_events
            .iter()
            .map(mark(VAR_RTO_EXPIRY))
            .chain(self.fr_events.iter().map(mark(VAR_FAST_RETX)))
            .collect();
        // Episodes: one verdict marker per enabled detector that judges the episode's kind
        // (value 1 spurious, 0 genuine, -1 undecided), and one marker per response.
        let enabled = self.snd.config().spurious.detectors;
        let mut scores = [DetScore::default(); N_DETECTORS];
        let (mut rto_eps, mut fr_eps, mut rto_eps_true, mut fr_eps_true) = (0, 0, 0, 0);
        let (mut rto_detected, mut fr_detected) = (0, 0);
        for ep in &self.episodes {
            let Some((idx, tn)) = ep.trigger else {
                continue;
            };
            let truth = self.truth.spurious(idx, tn);
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
            markers.mark(t, self.id, var, value, seq, tx);
        }
        let st = self.snd.stats();
        let per_pkt = |n: u64| ratio(n, st.segments_sent);
        let rtt = (st.rtt_samples, st.rtt_sum_s, st.rtt_sumsq_s);
        runs.row(RunRow {
            flow: self.id as i32,
            protocol: "tcp",
            cc: self.snd.cc_name(),
            mss: self.mss as i64,
            delivery: self.progress.columns(stop, self.rcv.rcv_nxt(), rtt),
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
            drops: self.drops.clone(),
            tcp: Some(TcpColumns {
                dupacks_rcvd: st.dupacks_rcvd as i64,
                dsacks_rcvd: st.dsacks_rcvd as i64,
                paws_rejected: self.rcv.paws_rejected() as i64,
                dupacks_per_pkt: per_pkt(st.dupacks_rcvd),
                spurious: enabled.label(),
                response: self.snd.config().spurious.response.name(),
                rto_spurious_detected: rto_detected,
                fr_spurious_detected: fr_detected,
                undo_count: st.undo_count as i64,
                tlp_count: st.tlp_count as i64,
                tlp_recoveries: st.tlp_recoveries as i64,
                rack_loss_count: st.rack_loss_count as i64,
                local_cwr_count: st.local_cwr_count as i64,
                moderate_cwnd_cuts: st.moderate_cwnd_cuts as i64,
                timeout_time_s: self.snd.timeout_time(stop).as_secs_f64(),
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

impl FlowRt {
    /// Sends a segment from `side` (data on the forward path, ACKs on the reverse one).
    #[inline(always)]
    fn send(&self, cx: &mut Cx, side: Side, seg: Segment, tx: i32, event: i32) -> Transmit {
        let path = [self.fwd, self.rev][side as usize];
        let size = spikelab_tcp::segment_wire_size(self.ns2, &seg);
        cx.send(side, path, seg, tx, size, event, None)
    }

    /// The sender's next segment, with its ground truth and episode noted; none while TCP
    /// Small Queues hold the flow back.
    #[inline(always)]
    fn poll_sender(&mut self, cx: &mut Cx) -> Option<Transmit> {
        let now = cx.now;
        if self.small_queue_full(now) {
            self.snd.pause(now);
            self.arm_small_queue(cx);
            return None;
        }
        let tx = self.snd.poll_transmit(now)?;
        if tx.kind == TxKind::Syn {
            // Not a data segment: no ground truth, no episode.
            return Some(self.send(cx, Side::Snd, tx.seg, 0, EV_SEND));
        }
        let idx = (tx.seg.seq / self.mss) as usize;
        let tn = self.truth.on_send(idx);
        if matches!(tx.kind, TxKind::RtoRetransmit | TxKind::FastRetransmit) {
            self.truth.refer(idx);
        }
        match tx.kind {
            TxKind::RtoRetransmit => self.rto_events.push((now, idx, tn)),
            TxKind::FastRetransmit => self.fr_events.push((now, idx, tn)),
            _ => {}
        }
        if matches!(tx.kind, TxKind::RtoRetransmit | TxKind::FastRetransmit) {
            if let Some(ep) = self.episodes.last_mut() {
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
        Some(self.send(cx, Side::Snd, tx.seg, tn as i32, ev))
    }

    /// Wakes a flow held back by TCP Small Queues when its first packet leaves the queue
    /// (unless a wake is queued already).
    fn arm_small_queue(&mut self, cx: &mut Cx) {
        let Some(q) = &mut self.tsq else {
            return;
        };
        let (None, Some(&at)) = (q.wake, q.leaving.front()) else {
            return;
        };
        let at = at.max(cx.now);
        q.wake = Some(at);
        let key = tie_key(KEY_TIMER, self.local, 0, 4);
        cx.io
            .queue
            .push_keyed(at, key, Ev::Timer(cx.conn, Timer::Wake));
    }

    /// Whether TCP Small Queues hold the flow back now (Linux `tcp_small_queue_check`).
    #[inline(always)]
    fn small_queue_full(&mut self, now: SimTime) -> bool {
        let Some(q) = &mut self.tsq else {
            return false;
        };
        while q.leaving.front().is_some_and(|&t| t <= now) {
            q.leaving.pop_front();
        }
        // About 1 ms at the pacing rate (`sk_pacing_rate >> 10`): mss · max(cwnd, packets
        // out) / srtt, 200 % of it in slow start below ssthresh / 2, else 120 %.
        let snd = &self.snd;
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
            (bps >> 10) / self.mss as u128
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
        let full = (q.leaving.len() as u128 + q.held as u128) >= limit && outstanding > self.mss;
        q.throttled = full;
        full
    }

    fn record_vars(&mut self, cx: &mut Cx) {
        let s = &self.snd;
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
        let (now, id, series) = (cx.now, self.id, &mut cx.io.series);
        each_change(&mut self.last_vars, &vals, |i, v| {
            series.push(now, id, i as i32, v)
        });
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
