//! ns-2.35's one-way TCP senders: `Agent/TCP/Reno`, `Agent/TCP/Newreno` and `Agent/TCP/Sack1`
//! with `ns-default.tcl`'s defaults, as the agents of ns-2's `tcp/tcp.cc`, `tcp-reno.cc`,
//! `tcp-newreno.cc` and `tcp-sack1.cc` behave. Names in comments are ns-2's variables.
//!
//! Common to the three (`TcpAgent`):
//! * Packets are numbered; the first (0) is a 40-byte SYN (`syn_`) sent with a window of one;
//!   its ACK sets cwnd to `windowInit_` (`delay_growth_`). Without a handshake data starts at 0.
//! * The window is `min(cwnd, window_)` packets, cwnd a real number: +1 per new ACK below
//!   ssthresh, +1/cwnd above (`opencwnd`, `windowOption_` 1), whatever the ACK covers.
//! * On a fast retransmit ssthresh = ⌊min(cwnd, window_)/2⌋ (at least 2) and cwnd = the half
//!   (`slowdown`); on every timeout the same ssthresh, cwnd = 1, go-back-N from the first
//!   unacknowledged packet, the timer backed off (`timeout`, `reset_rtx_timer`).
//! * One packet is timed at a time; a timeout or fast retransmit abandons the timing (Karn's
//!   rule as ns-2 keeps it); a sample ends the backoff ([`super::rtt`]).
//! * The timer is restarted on every new ACK and when a packet is sent with nothing
//!   outstanding, and on each fast retransmit (`newtimer`, `output`, `reset_rtx_timer`).
//! * After a timeout no fast retransmit until an ACK passes the highest packet sent before it
//!   (`bugFix_`; `recover_`), except when the first data packet was lost.
//! * The first two duplicate ACKs each send one new packet if cwnd + dupacks allows
//!   (`singledup_`, limited transmit).
//!
//! Reno: fast recovery inflates the window by one per further duplicate ACK (`dupwnd_`) and
//! ends on any new ACK; a second fast retransmit waits until `recover_` is passed.
//! Newreno: a partial ACK retransmits the next packet, deflates the window by the packets it
//! covers less one, restarts the timer on the first partial ACK only (`newreno_changes1_`), and
//! at most two packets leave per ACK during recovery; the full ACK leaves cwnd at the half.
//! Sack1: a duplicate ACK counts only if it brings new SACK information; recovery sends while
//! `pipe` (packets believed in flight, less one per ACK) is below cwnd, holes below SACKed
//! data first ([`super::scoreboard`]); a partial ACK takes one more from `pipe` and restarts
//! the timer; a timeout ignores duplicate ACKs until the next new ACK.

use super::eifel::{ts_now, Decision, Eifel};
use super::rtt::Ns2Rtt;
use super::scoreboard::Scoreboard;
use crate::spurious::EpisodeKind;
use crate::{
    CaState, Episode, Segment, SenderStats, SpuriousEvent, TcpConfig, Transmit, TxKind, Variant,
};
use spikelab_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// `TCP_MAXSEQ`: what an unlimited application offers.
const MAXSEQ: i64 = 1 << 40;

/// `last_cwnd_action_`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Action {
    None,
    Dupack,
    Timeout,
    Exited,
}

/// Why a packet is sent (`reason`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Reason {
    Normal,
    Dupack,
    Timeout,
}

/// One ns-2.35 TCP agent.
#[derive(Clone, Debug)]
pub struct Ns2Agent {
    cfg: TcpConfig,
    variant: Variant,
    mss: u64,
    total: u64,
    /// Number of the first data packet: 1 after a SYN, else 0.
    base: i64,
    syn: bool,
    numdupacks: i64,
    singledup: bool,
    bug_fix: bool,
    wnd: f64,
    wnd_init: f64,
    cwnd: f64,
    ssthresh: i64,
    dupacks: i64,
    dupwnd: i64,
    t_seqno: i64,
    maxseq: i64,
    highest_ack: i64,
    last_ack: i64,
    curseq: i64,
    recover: i64,
    last_action: Action,
    rtt: Ns2Rtt,
    rtt_active: bool,
    rtt_seq: i64,
    rtt_ts: f64,
    rtx: Option<SimTime>,
    rtx_len: SimDuration,
    started: bool,
    firstpartial: bool,
    fastrecov: bool,
    pipe: i64,
    timeout_seen: bool,
    scb: Scoreboard,
    now: SimTime,
    out: VecDeque<Transmit>,
    stats: SenderStats,
    events: Vec<SpuriousEvent>,
    next_episode: u32,
    rto_without_progress: bool,
    /// Since when, and up to which packet, the sender is in timeout recovery.
    loss: Option<(SimTime, i64)>,
    last_rtt_sample: Option<SimDuration>,
    /// Eifel ([`super::eifel`]), and the last ACK's timestamp echo (`timestamps_`).
    eifel: Option<Eifel>,
    ts_echo: Option<u32>,
}

impl Ns2Agent {
    /// An agent for `cfg` (`variant`, `mss`, `rwnd` as `window_`, `initial_window` as
    /// `windowInit_`, `initial_ssthresh`, `dupthresh`, `limited_transmit` as `singledup_`,
    /// `block_fr_after_rto` as `bugFix_`, `handshake` as `syn_`, the RTO bounds, and the
    /// estimator's tick and phase); `app_total` bytes to send (`None`: bulk).
    pub fn new(cfg: TcpConfig, app_total: Option<u64>) -> Ns2Agent {
        let mss = cfg.mss as u64;
        let (tick, boot) = match cfg.rto.algorithm {
            crate::RtoAlgorithm::Ns2 { tick, phase } => (tick.as_secs_f64(), phase.as_secs_f64()),
            _ => (0.01, 0.0),
        };
        let wnd = (cfg.rwnd / mss) as f64;
        let syn = cfg.handshake;
        let curseq = match app_total {
            Some(t) => t.div_ceil(mss) as i64,
            None => MAXSEQ,
        };
        Ns2Agent {
            variant: cfg.variant,
            mss,
            total: app_total.unwrap_or(u64::MAX),
            base: syn as i64,
            syn,
            numdupacks: cfg.dupthresh as i64,
            singledup: cfg.limited_transmit,
            bug_fix: cfg.block_fr_after_rto,
            wnd,
            wnd_init: cfg.initial_window as f64,
            cwnd: if syn { 1.0 } else { cfg.initial_window as f64 },
            ssthresh: cfg
                .initial_ssthresh
                .map_or(wnd as i64, |b| (b / mss) as i64),
            dupacks: 0,
            dupwnd: 0,
            t_seqno: 0,
            maxseq: -1,
            highest_ack: -1,
            last_ack: -1,
            curseq,
            recover: 0,
            last_action: Action::None,
            rtt: Ns2Rtt::new(
                tick,
                boot,
                cfg.rto.min.as_secs_f64(),
                cfg.rto.max.as_secs_f64(),
                cfg.rto.initial.as_secs_f64(),
            ),
            rtt_active: false,
            rtt_seq: -1,
            rtt_ts: 0.0,
            rtx: None,
            rtx_len: SimDuration::ZERO,
            started: false,
            firstpartial: false,
            fastrecov: false,
            pipe: -1,
            timeout_seen: false,
            scb: Scoreboard::new(),
            now: SimTime::ZERO,
            out: VecDeque::new(),
            stats: SenderStats::default(),
            events: Vec::new(),
            next_episode: 0,
            rto_without_progress: false,
            loss: None,
            last_rtt_sample: None,
            eifel: cfg
                .spurious
                .detectors
                .contains(crate::spurious::DetectorKind::Eifel)
                .then(|| Eifel::new(cfg.spurious.response == crate::spurious::Response::Undo)),
            ts_echo: None,
            cfg,
        }
    }

    // ---- numbering ------------------------------------------------------------------------

    /// The byte after packet `k` (0 for the SYN and below).
    fn end_byte(&self, k: i64) -> u64 {
        ((k + 1 - self.base).max(0) as u64)
            .saturating_mul(self.mss)
            .min(self.total)
    }
    /// The packet an ACK of byte `ack` names (the highest received in order).
    fn packet_of_ack(&self, ack: u64) -> i64 {
        ack.div_ceil(self.mss) as i64 + self.base - 1
    }

    // ---- observers ------------------------------------------------------------------------

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    /// cwnd in bytes, the fast-recovery inflation included (ns-2's `window()` before the
    /// `window_` bound).
    pub fn cwnd(&self) -> u64 {
        ((self.cwnd + self.dupwnd as f64) * self.mss as f64) as u64
    }
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh as u64 * self.mss
    }
    pub fn snd_una(&self) -> u64 {
        self.end_byte(self.highest_ack)
    }
    pub fn snd_nxt(&self) -> u64 {
        self.end_byte(self.t_seqno - 1)
    }
    pub fn snd_max(&self) -> u64 {
        self.end_byte(self.maxseq)
    }
    pub fn inflight(&self) -> u64 {
        let pkts = if self.fastrecov {
            self.pipe
        } else {
            self.t_seqno - 1 - self.highest_ack
        };
        pkts.max(0) as u64 * self.mss
    }
    pub fn state(&self) -> CaState {
        let in_recovery = match self.variant {
            Variant::Sack => self.fastrecov,
            _ => self.last_action == Action::Dupack && self.dupwnd > 0,
        };
        if in_recovery {
            CaState::Recovery
        } else if self.loss.is_some() {
            CaState::Loss
        } else if self.dupacks > 0 {
            CaState::Disorder
        } else {
            CaState::Open
        }
    }
    pub fn pending_kind(&self) -> Option<TxKind> {
        self.out.front().map(|t| t.kind)
    }
    pub fn srtt(&self) -> Option<SimDuration> {
        self.rtt.srtt().map(SimDuration::from_secs_f64)
    }
    pub fn rttvar(&self) -> SimDuration {
        SimDuration::from_secs_f64(self.rtt.rttvar())
    }
    pub fn rto(&self) -> SimDuration {
        SimDuration::from_secs_f64(self.rtt.timeout())
    }
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
    pub fn timeout_time(&self, now: SimTime) -> SimDuration {
        let open = self.loss.map_or(0, |(t0, _)| now.0.saturating_sub(t0.0));
        SimDuration(self.stats.timeout_time_ns + open)
    }
    pub fn last_rtt_sample(&self) -> Option<SimDuration> {
        self.last_rtt_sample
    }
    pub fn spurious_events(&self) -> &[SpuriousEvent] {
        &self.events
    }
    pub fn clear_spurious_events(&mut self) {
        self.events.clear();
    }
    pub fn is_done(&self) -> bool {
        self.total != u64::MAX && self.snd_una() >= self.total
    }
    pub fn next_timer(&self) -> Option<SimTime> {
        self.rtx
    }

    // ---- the sans-IO surface --------------------------------------------------------------

    /// The next packet to send; the first call starts the transfer (`send_much`).
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Transmit> {
        self.now = now;
        if !self.started {
            self.started = true;
            self.send_much(Reason::Normal, 0);
        }
        self.out.pop_front()
    }

    pub fn on_timer(&mut self, now: SimTime) {
        self.now = now;
        if self.rtx.is_some_and(|t| t <= now) {
            self.rtx = None;
            self.timeout();
        }
    }

    pub fn on_ack(&mut self, now: SimTime, seg: &Segment) {
        self.now = now;
        self.last_rtt_sample = None;
        let a = self.packet_of_ack(seg.ack);
        self.ts_echo = seg.ts.map(|t| t.ecr);
        if a > self.last_ack {
            if let Some(d) = self.eifel.as_mut().and_then(|e| e.on_new_ack(self.ts_echo)) {
                self.eifel_decided(d);
            }
        }
        match self.variant {
            Variant::Reno => self.recv_reno(a),
            Variant::NewReno => self.recv_newreno(a),
            Variant::Sack => {
                let blocks: Vec<(i64, i64)> = seg
                    .sack
                    .as_slice()
                    .iter()
                    .map(|&(s, e)| {
                        (
                            (s / self.mss) as i64 + self.base,
                            e.div_ceil(self.mss) as i64 + self.base,
                        )
                    })
                    .collect();
                self.recv_sack1(a, &blocks)
            }
        }
        if let Some((t0, upto)) = self.loss {
            if self.highest_ack >= upto {
                self.stats.timeout_time_ns += now.0.saturating_sub(t0.0);
                self.loss = None;
            }
        }
    }

    // ---- TcpAgent -------------------------------------------------------------------------

    fn now_s(&self) -> f64 {
        self.now.as_secs_f64()
    }

    fn window(&self) -> i64 {
        match self.variant {
            Variant::Sack => {
                if self.cwnd < self.wnd {
                    self.cwnd as i64
                } else {
                    self.wnd as i64
                }
            }
            _ => (self.cwnd as i64 + self.dupwnd).min(self.wnd as i64),
        }
    }

    fn windowd(&self) -> f64 {
        match self.variant {
            Variant::Sack => self.cwnd.min(self.wnd),
            _ => (self.cwnd + self.dupwnd as f64).min(self.wnd),
        }
    }

    fn set_rtx_timer(&mut self) {
        let d = SimDuration::from_secs_f64(self.rtt.timeout());
        self.rtx = Some(self.now + d);
        self.rtx_len = d;
    }

    /// `reset_rtx_timer(mild, backoff)`.
    fn reset_rtx_timer(&mut self, mild: bool, backoff: bool) {
        if backoff {
            self.rtt.backoff();
        }
        self.set_rtx_timer();
        if !mild {
            self.t_seqno = self.highest_ack + 1;
        }
        self.rtt_active = false;
    }

    fn newtimer(&mut self, a: i64) {
        if self.t_seqno > a || a < self.maxseq || self.cwnd < 1.0 {
            self.set_rtx_timer();
        } else {
            self.rtx = None;
        }
    }

    fn opencwnd(&mut self) {
        if self.cwnd < self.ssthresh as f64 {
            self.cwnd += 1.0;
        } else {
            self.cwnd += 1.0 / self.cwnd;
        }
    }

    /// `slowdown`: ssthresh to half the window when `ssthresh_half`; cwnd to the half
    /// (`Some(None)`), to `Some(Some(w))`, or kept (`None`).
    fn slowdown(&mut self, ssthresh_half: bool, cwnd: Option<Option<f64>>) {
        let half = self.windowd() / 2.0;
        if ssthresh_half {
            self.ssthresh = half as i64;
        }
        match cwnd {
            Some(None) => self.cwnd = half,
            Some(Some(w)) => self.cwnd = w,
            None => {}
        }
        if self.ssthresh < 2 {
            self.ssthresh = 2;
        }
        if self.cwnd < 1.0 {
            self.cwnd = 1.0;
        }
    }

    fn output(&mut self, seqno: i64, reason: Reason) {
        let force = self.highest_ack == self.maxseq;
        let is_syn = self.syn && seqno == 0;
        if is_syn && self.maxseq == -1 {
            self.curseq += 1;
        }
        let kind = if is_syn {
            TxKind::Syn
        } else if seqno > self.maxseq {
            TxKind::New
        } else {
            match reason {
                Reason::Dupack => TxKind::FastRetransmit,
                Reason::Timeout => TxKind::RtoRetransmit,
                Reason::Normal => TxKind::Retransmit,
            }
        };
        let seg = if is_syn {
            Segment {
                window: self.cfg.rwnd,
                syn: true,
                ..Segment::default()
            }
        } else {
            let seq = (seqno - self.base) as u64 * self.mss;
            Segment {
                seq,
                len: self.mss.min(self.total - seq) as u32,
                window: self.cfg.rwnd,
                ..Segment::default()
            }
        };
        let mut seg = seg;
        if self.cfg.timestamps && !is_syn {
            // `timestamps_` (ts_option_): the send time rides on every data packet.
            seg.ts = Some(crate::Timestamps {
                val: ts_now(self.now),
                ecr: 0,
            });
        }
        self.out.push_back(Transmit { seg, kind });
        self.stats.segments_sent += 1;
        if seqno > self.maxseq {
            self.maxseq = seqno;
            if !self.rtt_active {
                self.rtt_active = true;
                if seqno > self.rtt_seq {
                    self.rtt_seq = seqno;
                    self.rtt_ts = self.now_s();
                }
            }
        } else {
            self.stats.retx_segments += 1;
        }
        if self.rtx.is_none() || force {
            self.set_rtx_timer();
        }
    }

    fn send_much(&mut self, reason: Reason, maxburst: i64) {
        if self.variant == Variant::Sack {
            return self.send_much_sack1(reason, maxburst);
        }
        let mut win = self.window();
        let mut n = 0;
        while self.t_seqno <= self.highest_ack + win && self.t_seqno < self.curseq {
            self.output(self.t_seqno, reason);
            n += 1;
            self.t_seqno += 1;
            win = self.window();
            if maxburst > 0 && n == maxburst {
                break;
            }
        }
    }

    /// `send_one`: limited transmit on the first duplicate ACKs.
    fn send_one(&mut self) {
        let t = self.t_seqno as f64;
        if t <= self.highest_ack as f64 + self.wnd
            && self.t_seqno < self.curseq
            && t <= self.highest_ack as f64 + self.cwnd + self.dupacks as f64
        {
            self.output(self.t_seqno, Reason::Normal);
            self.t_seqno += 1;
        }
    }

    /// `newack`: a cumulative ACK of new data.
    fn newack(&mut self, a: i64) {
        self.dupacks = 0;
        self.last_ack = a;
        self.highest_ack = a;
        self.rto_without_progress = false;
        if self.t_seqno < a + 1 {
            self.t_seqno = a + 1;
        }
        let timed = self.rtt_active && a >= self.rtt_seq;
        if timed {
            self.rtt.t_backoff = 1;
            self.rtt_active = false;
        }
        // With `timestamps_` (ts_option_) ns-2 samples every new ACK's echo instead of the
        // timed packet; the timed packet still ends the backoff (`newack`).
        let tao = match self.ts_echo.filter(|_| self.cfg.timestamps) {
            Some(e) => Some(self.now_s() - e as f64 / 1e3),
            _ if timed => Some(self.now_s() - self.rtt_ts),
            _ => None,
        };
        if let Some(tao) = tao {
            self.rtt.update(self.now_s(), tao);
            let d = SimDuration::from_secs_f64(tao);
            self.last_rtt_sample = Some(d);
            self.stats.rtt_samples += 1;
            self.stats.rtt_sum_s += tao;
            self.stats.rtt_sumsq_s += tao * tao;
        }
        self.newtimer(a);
    }

    fn recv_newack_helper(&mut self, a: i64) {
        self.newack(a);
        self.opencwnd();
        if self.highest_ack >= self.curseq - 1 && self.total != u64::MAX {
            // Everything acknowledged: ns-2 keeps the timer running to no effect; stop it.
            self.rtx = None;
        }
    }

    /// `delay_growth_`: the ACK of the SYN (or of packet 0) sets the initial window.
    fn delay_growth(&mut self) {
        if self.last_ack == 0 {
            self.cwnd = self.wnd_init;
        }
    }

    fn start_episode(&mut self, kind: EpisodeKind, packet: i64) {
        let ep = Episode {
            id: self.next_episode,
            kind,
            seq: (packet - self.base).max(0) as u64 * self.mss,
            start: self.now,
            responded: false,
        };
        self.next_episode += 1;
        self.events.push(SpuriousEvent::EpisodeStart(ep));
    }

    /// The start of a fast retransmit, whichever agent.
    fn fast_retransmit_begins(&mut self) {
        self.stats.fast_retx_count += 1;
        self.start_episode(EpisodeKind::FastRetransmit, self.last_ack + 1);
    }

    fn timeout(&mut self) {
        self.stats.rto_wait_ns += self.rtx_len.0;
        match self.variant {
            Variant::Sack => {
                self.dupacks = 0;
                self.fastrecov = false;
                self.timeout_seen = true;
                if self.highest_ack > self.last_ack {
                    self.last_ack = self.highest_ack;
                }
                self.recover = self.maxseq;
                self.scb.clear();
            }
            _ => {
                self.dupwnd = 0;
                self.dupacks = 0;
                if self.bug_fix {
                    self.recover = self.maxseq;
                }
            }
        }
        if self.cwnd < 1.0 {
            self.cwnd = 1.0;
        }
        self.recover = self.maxseq;
        if self.highest_ack == -1 && self.wnd_init > 1.0 {
            // The first packet was lost: no larger initial window (`bugfix_ss_`).
            self.wnd_init = 1.0;
        }
        let outstanding = self.highest_ack != self.maxseq;
        if !outstanding {
            self.slowdown(false, Some(Some(1.0)));
        } else {
            self.stats.rto_count += 1;
            if !self.rto_without_progress {
                self.start_episode(EpisodeKind::Timeout, self.highest_ack + 1);
                if self.loss.is_none() {
                    self.loss = Some((self.now, self.maxseq));
                }
            } else if let Some((_, upto)) = &mut self.loss {
                *upto = self.maxseq;
            }
            self.rto_without_progress = true;
            self.last_action = Action::Timeout;
            let (now, cwnd, ssthresh, ep) =
                (self.now, self.cwnd, self.ssthresh, self.next_episode - 1);
            if let Some(e) = &mut self.eifel {
                e.on_timeout(now, cwnd, ssthresh, ep);
            }
            self.slowdown(true, Some(Some(1.0)));
        }
        self.reset_rtx_timer(false, outstanding);
        self.last_action = Action::Timeout;
        self.send_much(Reason::Timeout, 0);
    }

    /// Eifel's verdict on the first new ACK after a timeout ([`super::eifel`]).
    fn eifel_decided(&mut self, d: Decision) {
        self.events.push(d.verdict_event(self.now));
        if let Decision::Spurious {
            cwnd,
            ssthresh,
            episode,
            ..
        } = d
        {
            if self.eifel.as_ref().is_some_and(|e| e.undo) {
                (self.cwnd, self.ssthresh, self.t_seqno) = (cwnd, ssthresh, self.maxseq + 1);
                self.stats.undo_count += 1;
                let (cwnd, ssthresh) = (self.cwnd(), self.ssthresh());
                self.events
                    .push(Decision::undo_event(episode, self.now, cwnd, ssthresh));
            }
        }
    }

    // ---- Reno -----------------------------------------------------------------------------

    fn recv_reno(&mut self, a: i64) {
        if a > self.last_ack {
            if self.last_action == Action::Dupack {
                self.last_action = Action::Exited;
            }
            self.dupwnd = 0;
            self.recv_newack_helper(a);
            self.delay_growth();
        } else if a == self.last_ack {
            self.stats.dupacks_rcvd += 1;
            self.dupacks += 1;
            if self.dupacks == self.numdupacks {
                self.dupack_action_reno(true);
            } else if self.dupacks > self.numdupacks && self.last_action == Action::Dupack {
                self.dupwnd += 1;
            } else if self.dupacks < self.numdupacks && self.singledup {
                self.send_one();
            }
        }
        if a >= self.last_ack && (self.dupacks == 0 || self.dupacks > self.numdupacks - 1) {
            self.send_much(Reason::Normal, 0);
        }
    }

    /// Reno's and Newreno's `dupack_action` (`reno` allows a fast retransmit while the last
    /// action was one).
    fn dupack_action_reno(&mut self, reno: bool) {
        let recovered = self.highest_ack > self.recover;
        let allow = reno && self.last_action == Action::Dupack;
        if !(recovered || !self.bug_fix || allow || self.highest_ack == 0) {
            return;
        }
        self.fast_retransmit_begins();
        self.recover = self.maxseq;
        self.last_action = Action::Dupack;
        self.slowdown(true, Some(None));
        self.reset_rtx_timer(true, false);
        self.output(self.last_ack + 1, Reason::Dupack);
        self.dupwnd = self.numdupacks;
    }

    // ---- Newreno --------------------------------------------------------------------------

    fn recv_newreno(&mut self, a: i64) {
        if a > self.last_ack {
            if a >= self.recover || self.last_action != Action::Dupack {
                if self.dupwnd > 0 {
                    self.dupwnd = 0;
                    if self.last_action == Action::Dupack {
                        self.last_action = Action::Exited;
                    }
                }
                self.firstpartial = false;
                self.recv_newack_helper(a);
                self.delay_growth();
            } else {
                self.partial_ack_newreno(a);
            }
        } else if a == self.last_ack {
            self.stats.dupacks_rcvd += 1;
            self.dupacks += 1;
            if self.dupacks == self.numdupacks {
                self.dupack_action_reno(false);
            } else if self.dupacks > self.numdupacks && self.last_action == Action::Dupack {
                self.dupwnd += 1;
            } else if self.dupacks < self.numdupacks && self.singledup {
                self.send_one();
            }
        }
        if a >= self.last_ack {
            if self.dupacks == 0 {
                self.send_much(Reason::Normal, 0);
            } else if self.dupacks > self.numdupacks - 1 {
                self.send_much(Reason::Normal, 2);
            }
        }
    }

    /// `partialnewack_helper` with `partial_window_deflation_` = 1 and `newreno_changes1_` = 1.
    fn partial_ack_newreno(&mut self, a: i64) {
        if !self.firstpartial {
            self.firstpartial = true;
            self.newtimer(a);
        }
        let deflate = a - self.last_ack;
        if self.dupwnd > deflate {
            self.dupwnd -= deflate - 1;
        } else {
            self.cwnd -= (deflate - self.dupwnd) as f64;
            self.dupwnd = 1;
        }
        if self.cwnd < 1.0 {
            self.cwnd = 1.0;
        }
        self.last_ack = a;
        self.highest_ack = a;
        if self.t_seqno < a + 1 {
            self.t_seqno = a + 1;
        }
        if self.rtt_active && a >= self.rtt_seq {
            self.rtt_active = false;
            self.rtt.t_backoff = 1;
        }
        self.output(self.last_ack + 1, Reason::Normal);
    }

    // ---- Sack1 ----------------------------------------------------------------------------

    fn recv_sack1(&mut self, a: i64, blocks: &[(i64, i64)]) {
        let valid = a >= self.last_ack;
        if a == self.last_ack {
            self.stats.dupacks_rcvd += 1;
        }
        if !self.fastrecov {
            if a > self.last_ack {
                self.firstpartial = false;
                self.recv_newack_helper(a);
                self.timeout_seen = false;
                self.scb.clear();
                self.delay_growth();
            } else if a == self.last_ack && !self.timeout_seen {
                self.scb.update(self.highest_ack, blocks);
                if self.scb.changed() {
                    self.dupacks += 1;
                    if self.dupacks == self.numdupacks {
                        self.dupack_action_sack1();
                    } else if self.dupacks < self.numdupacks && self.singledup {
                        self.send_one();
                    }
                }
            }
            if valid && self.dupacks == 0 {
                self.send_much(Reason::Normal, 0);
            }
        } else {
            self.pipe -= 1;
            if a >= self.recover {
                self.recover = 0;
                self.fastrecov = false;
                self.newack(a);
                if self.highest_ack >= self.curseq - 1 && self.total != u64::MAX {
                    self.rtx = None;
                }
                self.timeout_seen = false;
                self.scb.clear();
            } else if a > self.highest_ack {
                self.highest_ack = a;
                self.scb.update(self.highest_ack, blocks);
                self.pipe -= 1;
                self.newtimer(a);
                self.rtt.t_backoff = 1;
            } else if !self.timeout_seen {
                self.scb.update(self.highest_ack, blocks);
                if self.scb.changed() && self.dupacks > 0 {
                    self.dupacks += 1;
                }
            }
            if valid {
                self.send_much(Reason::Normal, 0);
            }
        }
    }

    fn dupack_action_sack1(&mut self) {
        let recovered = self.highest_ack > self.recover;
        if !(recovered || !self.bug_fix || self.highest_ack == 0) {
            return;
        }
        self.fast_retransmit_begins();
        self.recover = self.maxseq;
        self.pipe = self.maxseq - self.highest_ack - self.numdupacks;
        self.reset_rtx_timer(true, false);
        self.fastrecov = true;
        self.scb.mark_retran(self.highest_ack + 1);
        self.last_action = Action::Dupack;
        self.slowdown(true, Some(None));
        self.output(self.last_ack + 1, Reason::Dupack);
    }

    fn send_much_sack1(&mut self, reason: Reason, maxburst: i64) {
        let mut win = self.window();
        let wnd = self.wnd as i64;
        let mut found = true;
        let mut n = 0;
        while ((!self.fastrecov && self.t_seqno <= self.last_ack + win)
            || (self.fastrecov && self.pipe < self.cwnd as i64))
            && self.last_ack + 1 < self.curseq
            && found
        {
            found = false;
            let mut xmit = 0;
            match self.scb.next_retran() {
                None => {
                    let room = if self.fastrecov {
                        self.t_seqno <= self.highest_ack + wnd
                    } else {
                        self.t_seqno <= self.highest_ack + win
                    };
                    if room && self.t_seqno < self.curseq {
                        found = true;
                        xmit = self.t_seqno;
                        self.t_seqno += 1;
                    }
                }
                Some(s) => {
                    if self.recover > 0 && s <= self.highest_ack + wnd {
                        found = true;
                        self.scb.mark_retran(s);
                        win = self.window();
                        xmit = s;
                    }
                }
            }
            if found {
                self.output(xmit, reason);
                if self.t_seqno <= xmit {
                    self.t_seqno = xmit + 1;
                }
                n += 1;
                self.pipe += 1;
            }
            if maxburst > 0 && n == maxburst {
                break;
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// ns-default.tcl's agent (the ns2 profile's values) with the handshake, no timestamps.
    pub(crate) fn cfg(variant: Variant) -> TcpConfig {
        TcpConfig {
            variant,
            mss: 1000,
            rwnd: 20_000,
            initial_window: 2,
            limited_transmit: true,
            block_fr_after_rto: true,
            handshake: true,
            timestamps: false,
            ns2: true,
            rto: crate::RtoConfig {
                algorithm: crate::RtoAlgorithm::Ns2 {
                    tick: SimDuration::from_millis(10),
                    phase: SimDuration::ZERO,
                },
                min: SimDuration::from_millis(200),
                max: SimDuration::from_secs(60),
                initial: SimDuration::from_secs(3),
            },
            ..TcpConfig::default()
        }
    }

    fn drain(a: &mut Ns2Agent, now: SimTime) -> Vec<Transmit> {
        std::iter::from_fn(|| a.poll_transmit(now)).collect()
    }

    fn ack(a: &mut Ns2Agent, now: SimTime, bytes: u64) {
        a.on_ack(
            now,
            &Segment {
                ack: bytes,
                ..Segment::default()
            },
        );
    }

    #[test]
    fn the_syn_goes_alone_then_windowinit_packets() {
        let mut a = Ns2Agent::new(cfg(Variant::Reno), None);
        let t = SimTime::ZERO;
        let out = drain(&mut a, t);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, TxKind::Syn);
        assert_eq!(super::super::wire_size(&out[0].seg), 40);
        // The SYN's ACK sets cwnd to windowInit_ = 2 (not 1 + 1 by slow start, nor IW 10).
        let t = SimTime::from_millis(50);
        ack(&mut a, t, 0);
        let out = drain(&mut a, t);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].seg.seq, out[1].seg.seq), (0, 1000));
        assert_eq!(super::super::wire_size(&out[0].seg), 1040);
        // The SYN's round trip gave the first sample: 5 ticks, RTO clamped to minrto_.
        assert_eq!(a.rto(), SimDuration::from_millis(200));
    }

    #[test]
    fn slow_start_ends_at_window_the_initial_ssthresh() {
        let mut a = Ns2Agent::new(cfg(Variant::NewReno), None);
        let mut t = SimTime::ZERO;
        drain(&mut a, t);
        ack(&mut a, t, 0);
        let mut acked = 0;
        // One ACK per packet, every packet delivered: +1 per ACK while cwnd < 20.
        while a.cwnd < 20.0 {
            t += SimDuration::from_millis(1);
            drain(&mut a, t);
            acked += 1000;
            ack(&mut a, t, acked);
        }
        assert_eq!(a.ssthresh(), 20_000);
        assert_eq!(a.cwnd, 20.0);
        ack(&mut a, t, acked + 1000);
        // Above ssthresh: +1/cwnd.
        assert!((a.cwnd - 20.05).abs() < 1e-9, "{}", a.cwnd);
    }

    #[test]
    fn reno_waits_for_recover_before_a_second_fast_retransmit() {
        let mut a = Ns2Agent::new(cfg(Variant::Reno), None);
        let t = SimTime::ZERO;
        drain(&mut a, t);
        ack(&mut a, t, 0);
        let mut acked = 0;
        for _ in 0..30 {
            drain(&mut a, t);
            acked += 1000;
            ack(&mut a, t, acked);
        }
        drain(&mut a, t);
        // Three duplicate ACKs: one fast retransmit of the next packet.
        for _ in 0..3 {
            ack(&mut a, t, acked);
        }
        let fr: Vec<_> = drain(&mut a, t)
            .into_iter()
            .filter(|x| x.kind == TxKind::FastRetransmit)
            .collect();
        assert_eq!(fr.len(), 1);
        assert_eq!(fr[0].seg.seq, acked);
        // A partial ACK ends Reno's recovery; three more duplicates below recover_ do not
        // start another fast retransmit (bugFix_).
        ack(&mut a, t, acked + 1000);
        drain(&mut a, t);
        for _ in 0..3 {
            ack(&mut a, t, acked + 1000);
        }
        assert!(drain(&mut a, t)
            .iter()
            .all(|x| x.kind != TxKind::FastRetransmit));
        assert_eq!(a.stats().fast_retx_count, 1);
    }
}
