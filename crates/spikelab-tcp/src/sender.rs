//! The TCP data sender.
//!
//! Rules and where they come from:
//! * Slow start, congestion avoidance, `ssthresh = max(FlightSize/2, 2·SMSS)` on loss:
//!   RFC 5681 §3.1 (eq. 4); ABC: RFC 3465. Growth is delegated to [`crate::cc`].
//! * Fast retransmit on the `dupthresh`-th duplicate ACK, fast recovery with cwnd inflation
//!   (`cwnd = ssthresh + 3·SMSS`, `+SMSS` per further duplicate ACK): RFC 5681 §3.2.
//!   Reno leaves recovery on any ACK of new data (`cwnd = ssthresh`).
//! * NewReno, RFC 6582 §3.2: `recover = HighData` on entry; a partial ACK retransmits the first
//!   unacknowledged segment, deflates cwnd by the bytes acknowledged and adds back one SMSS if at
//!   least one SMSS was acknowledged, and restarts the RTO timer only on the first partial ACK
//!   (the "Impatient" variant, §4.1); a full ACK sets `cwnd = min(ssthresh, max(FlightSize,
//!   SMSS) + SMSS)`. After a timeout `recover = HighData`, and a third duplicate ACK whose
//!   cumulative ACK does not cover more than `recover` (`ack − 1 > recover`) does not start fast
//!   retransmit (step 2; switchable with `block_fr_after_rto`, which is "the bug fix" of paper
//!   002).
//! * SACK recovery, RFC 6675 §5: entry on `dupthresh` duplicate ACKs (a duplicate ACK carries
//!   new SACK information, §2) or `IsLost(HighACK + 1)`; `cwnd = ssthresh = FlightSize/2`;
//!   `NextSeg()` rules 1-4 with `HighRxt` and `RescueRxt`; `SetPipe()`; sending while
//!   `cwnd − pipe ≥ SMSS`; no new recovery until `HighACK ≥ RecoveryPoint` (§5.1).
//! * Limited transmit, RFC 3042, optional: one new segment on each of the first two duplicate
//!   ACKs; such segments are left out of FlightSize when ssthresh is computed.
//! * RTO, RFC 6298 §5: timer started when data is sent and none is running, restarted on an ACK
//!   of new data, stopped when all data is acknowledged; on expiry retransmit the first
//!   unacknowledged segment, back off, `cwnd = 1·SMSS` (RFC 5681 loss window), ssthresh per eq.
//!   4 unless the segment was already retransmitted by the timer (then ssthresh is held), and
//!   go back N: `snd_nxt = snd_una`, resending in slow start. With SACK, SACKed segments are
//!   skipped during go-back-N; RFC 2018 §8 clears the marks on timeout (`clear_sack_on_rto`).
//! * RTT samples: timestamps (RFC 7323 §4: every ACK of new data, `now − TSecr`), otherwise one
//!   timed segment at a time and Karn's rule (no sample from a retransmitted segment).
//!
//! Simplifications: no handshake, no Nagle, no persist timer (the receiver never closes its
//! window), the advertised window is not scaled or shrunk.

use crate::cc::{AckCounting, CongestionControl, Reno, Window};
use crate::rtt::RttEstimator;
use crate::scoreboard::Scoreboard;
use crate::{Segment, TcpConfig, Timestamps, Variant};
use spikelab_core::{SimDuration, SimTime};

/// Congestion state, named as in Linux (`TCP_CA_*`) and ns-3 (`CA_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CaState {
    Open = 0,
    /// Duplicate ACKs seen, below the fast-retransmit threshold.
    Disorder = 1,
    /// Fast recovery.
    Recovery = 2,
    /// After a retransmission timeout, until everything sent before it is acknowledged.
    Loss = 3,
}

/// Why a segment is being sent.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TxKind {
    /// First transmission of these bytes.
    New,
    /// The fast retransmission that starts fast recovery.
    FastRetransmit,
    /// The retransmission sent when the RTO expires.
    RtoRetransmit,
    /// Any other retransmission: partial ACK, SACK recovery, go-back-N after a timeout.
    Retransmit,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub seg: Segment,
    pub kind: TxKind,
}

/// Counters kept by the sender.
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Retransmitted segments.
    pub retx_segments: u64,
    pub rto_count: u64,
    pub fast_retx_count: u64,
    pub dupacks_rcvd: u64,
    pub dsacks_rcvd: u64,
    pub rtt_samples: u64,
    /// Sum and sum of squares of RTT samples, seconds.
    pub rtt_sum_s: f64,
    pub rtt_sumsq_s: f64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum NextSegRule {
    Lost,
    NewData,
    Unsacked,
    Rescue,
}

pub struct TcpSender {
    cfg: TcpConfig,
    mss: u64,
    cc: Box<dyn CongestionControl>,
    /// Bytes the application will ever send (`None`: unlimited).
    app_total: Option<u64>,
    snd_una: u64,
    snd_nxt: u64,
    /// Highest sequence number sent plus one (RFC 6675 HighData + 1).
    snd_max: u64,
    cwnd: u64,
    ssthresh: u64,
    state: CaState,
    dupacks: u32,
    /// RFC 6582 `recover` / RFC 6675 `RecoveryPoint`, as one past the byte (exclusive).
    recover: Option<u64>,
    partial_acks: u32,
    limited_sent: u64,
    rwnd: u64,
    rtt: RttEstimator,
    rto_deadline: Option<SimTime>,
    /// Without timestamps: (end of the timed segment, time sent).
    timed: Option<(u64, SimTime)>,
    board: Scoreboard,
    /// RFC 6675 HighRxt, exclusive.
    high_rxt: u64,
    /// RFC 6675 RescueRxt, exclusive (`None`: undefined).
    rescue_rxt: Option<u64>,
    pipe: u64,
    /// A retransmission that must go out now regardless of the window.
    pending: Option<(u64, TxKind)>,
    /// TS.Recent of the sender: the receiver's last TSval, echoed in TSecr.
    ts_recent: u32,
    last_rtt_sample: Option<SimDuration>,
    stats: SenderStats,
}

impl TcpSender {
    /// A sender with Reno congestion control; `app_total` bytes to send (`None` = bulk).
    pub fn new(cfg: TcpConfig, app_total: Option<u64>) -> TcpSender {
        let counting = if cfg.abc {
            AckCounting::ByteCounting {
                limit_segments: cfg.abc_limit,
            }
        } else {
            AckCounting::PerAck
        };
        Self::with_cc(cfg, app_total, Box::new(Reno::new(counting)))
    }

    pub fn with_cc(
        cfg: TcpConfig,
        app_total: Option<u64>,
        cc: Box<dyn CongestionControl>,
    ) -> TcpSender {
        let mss = cfg.mss as u64;
        TcpSender {
            mss,
            cc,
            app_total,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd: cfg.initial_window as u64 * mss,
            ssthresh: cfg.initial_ssthresh.unwrap_or(u64::MAX),
            state: CaState::Open,
            dupacks: 0,
            recover: None,
            partial_acks: 0,
            limited_sent: 0,
            rwnd: cfg.rwnd,
            rtt: RttEstimator::new(cfg.rto),
            rto_deadline: None,
            timed: None,
            board: Scoreboard::new(mss),
            high_rxt: 0,
            rescue_rxt: None,
            pipe: 0,
            pending: None,
            ts_recent: 0,
            last_rtt_sample: None,
            stats: SenderStats::default(),
            cfg,
        }
    }

    // ---- observers -------------------------------------------------------------------------

    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }
    pub fn state(&self) -> CaState {
        self.state
    }
    pub fn rto(&self) -> SimDuration {
        self.rtt.rto()
    }
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    pub fn dupacks(&self) -> u32 {
        self.dupacks
    }
    pub fn recover(&self) -> Option<u64> {
        self.recover
    }
    /// The RTT sample taken by the last `on_ack`, if any (cleared by the next `on_ack`).
    pub fn last_rtt_sample(&self) -> Option<SimDuration> {
        self.last_rtt_sample
    }
    /// Bytes believed in the network: RFC 6675 `pipe` during SACK recovery, otherwise
    /// `snd_nxt − snd_una` less the SACKed bytes.
    pub fn inflight(&self) -> u64 {
        if self.state == CaState::Recovery && self.cfg.variant == Variant::Sack {
            self.pipe
        } else {
            (self.snd_nxt - self.snd_una).saturating_sub(self.board.sacked_bytes())
        }
    }
    /// Whether the application's data has all been acknowledged.
    pub fn is_done(&self) -> bool {
        self.app_total.is_some_and(|t| self.snd_una >= t)
    }

    /// When `on_timer` must next be called.
    pub fn next_timer(&self) -> Option<SimTime> {
        self.rto_deadline
    }

    // ---- helpers -----------------------------------------------------------------------------

    fn seg_len(&self, seq: u64) -> u64 {
        match self.app_total {
            Some(t) => self.mss.min(t.saturating_sub(seq)),
            None => self.mss,
        }
    }

    fn ts_now(&self, now: SimTime) -> u32 {
        (now.as_nanos() / self.cfg.ts_tick.as_nanos().max(1)) as u32
    }

    fn window(&self) -> Window {
        Window {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            mss: self.mss,
        }
    }

    /// Whether the `dupthresh`-th duplicate ACK may start fast retransmit.
    ///
    /// RFC 6582 §3.2 step 2: only if the cumulative ACK "covers more than recover", i.e.
    /// `ack_number - 1 > recover` where `recover` is the highest sequence number transmitted;
    /// `self.recover` is one past that byte, so `snd_una > recover`. RFC 6675 §5.1: a new SACK
    /// recovery may start once `HighACK >= RecoveryPoint` (both inclusive byte numbers), i.e.
    /// `snd_una >= recover`.
    fn fr_allowed(&self) -> bool {
        if !self.cfg.block_fr_after_rto {
            return true;
        }
        match self.recover {
            None => true,
            Some(r) if self.cfg.variant == Variant::Sack => self.snd_una >= r,
            Some(r) => self.snd_una > r,
        }
    }

    // ---- output -----------------------------------------------------------------------------

    /// The next segment to send at `now`, if any. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Transmit> {
        if let Some((seq, kind)) = self.pending.take() {
            return Some(self.transmit(now, seq, kind));
        }
        match self.state {
            CaState::Recovery if self.cfg.variant == Variant::Sack => {
                if self.cwnd < self.pipe + self.mss {
                    return None;
                }
                let (seq, rule) = self.next_seg()?;
                let len = self.seg_len(seq);
                let t = self.transmit(now, seq, TxKind::Retransmit);
                match rule {
                    NextSegRule::Lost | NextSegRule::Unsacked => self.high_rxt = seq + len,
                    NextSegRule::Rescue => self.rescue_rxt = self.recover,
                    NextSegRule::NewData => {}
                }
                self.pipe += len;
                Some(t)
            }
            CaState::Loss => {
                // Go-back-N from snd_nxt, skipping SACKed segments.
                while self.snd_nxt < self.snd_max
                    && self
                        .board
                        .get(self.snd_nxt, self.mss)
                        .is_some_and(|m| m.sacked)
                {
                    self.snd_nxt += self.seg_len(self.snd_nxt);
                }
                let seq = self.snd_nxt;
                let len = self.seg_len(seq);
                if len == 0 {
                    return None;
                }
                let sacked_below: u64 = self
                    .board
                    .iter()
                    .take_while(|(s, _)| *s < seq)
                    .filter(|(_, m)| m.sacked)
                    .map(|(_, m)| m.len as u64)
                    .sum();
                let flight = seq - self.snd_una - sacked_below;
                if flight + len > self.cwnd.min(self.rwnd) {
                    return None;
                }
                Some(self.transmit(now, seq, TxKind::Retransmit))
            }
            _ => {
                let seq = self.snd_nxt;
                let len = self.seg_len(seq);
                if len == 0 {
                    return None;
                }
                let mut allowance = self.cwnd;
                let limited = self.state == CaState::Disorder && self.cfg.limited_transmit;
                if limited {
                    allowance += self.dupacks.min(2) as u64 * self.mss;
                }
                let end = seq + len - self.snd_una;
                if end > allowance.min(self.rwnd) {
                    return None;
                }
                if limited && end > self.cwnd {
                    self.limited_sent += len;
                }
                Some(self.transmit(now, seq, TxKind::Retransmit))
            }
        }
    }

    /// Sends the segment at `seq`; `kind` is corrected to `New` for bytes never sent before.
    fn transmit(&mut self, now: SimTime, seq: u64, mut kind: TxKind) -> Transmit {
        let len = self.seg_len(seq);
        debug_assert!(len > 0 && seq <= self.snd_max);
        if seq == self.snd_max {
            self.board.push_new(len as u32);
            self.snd_max += len;
            kind = TxKind::New;
            if !self.cfg.timestamps && self.timed.is_none() {
                self.timed = Some((seq + len, now));
            }
        } else {
            if kind == TxKind::New {
                kind = TxKind::Retransmit;
            }
            if let Some(m) = self.board.get_mut(seq, self.mss) {
                m.tx_count = m.tx_count.saturating_add(1);
            }
            self.stats.retx_segments += 1;
            // Karn: a retransmission makes the timed measurement ambiguous.
            self.timed = None;
        }
        if seq == self.snd_nxt {
            self.snd_nxt = seq + len;
        }
        self.stats.segments_sent += 1;
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        let ts = self.cfg.timestamps.then(|| Timestamps {
            val: self.ts_now(now),
            ecr: self.ts_recent,
        });
        Transmit {
            seg: Segment {
                seq,
                len: len as u32,
                ack: 0,
                window: self.cfg.rwnd,
                ts,
                sack: Default::default(),
            },
            kind,
        }
    }

    /// RFC 6675 `NextSeg()`.
    fn next_seg(&self) -> Option<(u64, NextSegRule)> {
        let highest_sacked = self.board.highest_sacked_end();
        let mut rule1 = None;
        let mut rule3 = None;
        self.board
            .for_each_rev_with_lost(self.cfg.dupthresh, self.mss, |seq, m, lost| {
                if !m.sacked && seq >= self.high_rxt && highest_sacked.is_some_and(|h| seq < h) {
                    if lost {
                        rule1 = Some(seq);
                    }
                    rule3 = Some(seq);
                }
            });
        if let Some(s) = rule1 {
            return Some((s, NextSegRule::Lost));
        }
        let len = self.seg_len(self.snd_max);
        if len > 0 && self.snd_max + len <= self.snd_una + self.rwnd {
            return Some((self.snd_max, NextSegRule::NewData));
        }
        if let Some(s) = rule3 {
            return Some((s, NextSegRule::Unsacked));
        }
        // Rule 4: HighACK > RescueRxt, both inclusive byte numbers; `snd_una` and `rescue_rxt`
        // are one past theirs.
        if self.rescue_rxt.is_none_or(|r| self.snd_una > r) {
            let highest_unsacked = self.board.iter().rev().find(|(_, m)| !m.sacked);
            if let Some((s, _)) = highest_unsacked {
                return Some((s, NextSegRule::Rescue));
            }
        }
        None
    }

    /// RFC 6675 `SetPipe()`.
    fn set_pipe(&mut self) {
        let mut pipe = 0;
        let high_rxt = self.high_rxt;
        self.board
            .for_each_rev_with_lost(self.cfg.dupthresh, self.mss, |seq, m, lost| {
                if !m.sacked {
                    if !lost {
                        pipe += m.len as u64;
                    }
                    if seq < high_rxt {
                        pipe += m.len as u64;
                    }
                }
            });
        self.pipe = pipe;
    }

    // ---- input ------------------------------------------------------------------------------

    /// Processes an ACK arriving at `now`.
    pub fn on_ack(&mut self, now: SimTime, seg: &Segment) {
        self.last_rtt_sample = None;
        self.rwnd = seg.window;
        if let Some(ts) = seg.ts {
            self.ts_recent = ts.val;
        }
        let ack = seg.ack;
        if ack > self.snd_max || ack < self.snd_una {
            return;
        }
        let mut newly_sacked = 0;
        if self.cfg.sack {
            let blocks = seg.sack.as_slice();
            let mut dsack = false;
            if let Some(&(s0, e0)) = blocks.first() {
                dsack = s0 < ack || blocks.get(1).is_some_and(|&(s1, e1)| s0 >= s1 && e0 <= e1);
                if dsack {
                    self.stats.dsacks_rcvd += 1;
                }
            }
            for (i, &(s, e)) in blocks.iter().enumerate() {
                if (i == 0 && dsack) || e <= ack {
                    continue;
                }
                newly_sacked += self.board.mark_sacked(s.max(ack), e);
            }
        }
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            let sample = match (self.cfg.timestamps, seg.ts, self.timed) {
                (true, Some(ts), _) => {
                    let ticks = self.ts_now(now).wrapping_sub(ts.ecr).max(1);
                    Some(self.cfg.ts_tick.saturating_mul(ticks as u64))
                }
                (false, _, Some((end, sent))) if ack >= end => {
                    self.timed = None;
                    Some(now - sent)
                }
                _ => None,
            };
            self.snd_una = ack;
            self.board.advance(ack);
            if self.snd_nxt < ack {
                self.snd_nxt = ack;
            }
            self.high_rxt = self.high_rxt.max(ack);
            if let Some(r) = sample {
                self.rtt.on_sample(r, self.snd_una, self.snd_nxt);
                let s = r.as_secs_f64();
                self.stats.rtt_samples += 1;
                self.stats.rtt_sum_s += s;
                self.stats.rtt_sumsq_s += s * s;
                self.last_rtt_sample = Some(r);
            }
            self.on_new_ack(now, acked);
        } else if seg.len == 0 && self.snd_max > self.snd_una {
            let is_dup = self.cfg.variant != Variant::Sack || newly_sacked > 0;
            if is_dup {
                self.stats.dupacks_rcvd += 1;
                self.on_dupack();
            }
        }
        if self.state == CaState::Recovery && self.cfg.variant == Variant::Sack {
            self.set_pipe();
        }
    }

    fn on_new_ack(&mut self, now: SimTime, acked: u64) {
        self.dupacks = 0;
        self.limited_sent = 0;
        let mut restart_timer = true;
        match self.state {
            CaState::Recovery => match self.cfg.variant {
                Variant::Reno => {
                    self.cwnd = self.ssthresh;
                    self.state = CaState::Open;
                }
                Variant::NewReno => {
                    if self.recover.is_none_or(|r| self.snd_una >= r) {
                        let flight = self.snd_max - self.snd_una;
                        self.cwnd = self.ssthresh.min(flight.max(self.mss) + self.mss);
                        self.state = CaState::Open;
                    } else {
                        self.pending = Some((self.snd_una, TxKind::Retransmit));
                        self.cwnd = self.cwnd.saturating_sub(acked);
                        if acked >= self.mss {
                            self.cwnd += self.mss;
                        }
                        self.cwnd = self.cwnd.max(self.mss);
                        self.partial_acks += 1;
                        restart_timer = self.partial_acks == 1;
                    }
                }
                Variant::Sack => {
                    if self.recover.is_none_or(|r| self.snd_una >= r) {
                        self.state = CaState::Open;
                    }
                }
            },
            CaState::Loss => {
                self.grow(acked);
                if self.recover.is_none_or(|r| self.snd_una >= r) {
                    self.state = CaState::Open;
                }
            }
            CaState::Open | CaState::Disorder => {
                self.state = CaState::Open;
                self.grow(acked);
            }
        }
        if self.snd_una == self.snd_max {
            self.rto_deadline = None;
        } else if restart_timer {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    fn grow(&mut self, acked: u64) {
        let mut w = self.window();
        self.cc.cong_avoid(&mut w, acked);
        self.cwnd = w.cwnd;
    }

    fn on_dupack(&mut self) {
        match self.state {
            CaState::Open | CaState::Disorder | CaState::Loss => {
                self.dupacks += 1;
                if self.state == CaState::Open {
                    self.state = CaState::Disorder;
                }
                let trigger = self.dupacks == self.cfg.dupthresh
                    || (self.cfg.variant == Variant::Sack
                        && self
                            .board
                            .is_lost(self.snd_una, self.cfg.dupthresh, self.mss));
                if trigger && self.fr_allowed() {
                    self.enter_recovery();
                }
            }
            CaState::Recovery => {
                if self.cfg.variant != Variant::Sack {
                    self.cwnd += self.mss;
                }
            }
        }
    }

    fn enter_recovery(&mut self) {
        let flight = (self.snd_max - self.snd_una).saturating_sub(self.limited_sent);
        let w = self.window();
        self.ssthresh = self.cc.ssthresh(&w, flight);
        self.stats.fast_retx_count += 1;
        self.pending = Some((self.snd_una, TxKind::FastRetransmit));
        self.state = CaState::Recovery;
        self.partial_acks = 0;
        if self.cfg.variant != Variant::Reno {
            self.recover = Some(self.snd_max);
        }
        match self.cfg.variant {
            Variant::Reno | Variant::NewReno => {
                self.cwnd = self.ssthresh + self.cfg.dupthresh as u64 * self.mss;
            }
            Variant::Sack => {
                self.cwnd = self.ssthresh;
                let end = self.snd_una + self.seg_len(self.snd_una);
                self.high_rxt = end;
                self.rescue_rxt = Some(end);
            }
        }
    }

    /// Fires the retransmission timer if it is due.
    pub fn on_timer(&mut self, now: SimTime) {
        let Some(deadline) = self.rto_deadline else {
            return;
        };
        if now < deadline {
            return;
        }
        if self.snd_max == self.snd_una {
            self.rto_deadline = None;
            return;
        }
        self.stats.rto_count += 1;
        if self.rtt.backoff_count() == 0 {
            // RFC 5681: ssthresh is held when the segment was already retransmitted by the timer.
            let w = self.window();
            self.ssthresh = self.cc.ssthresh(&w, self.snd_max - self.snd_una);
        }
        self.cwnd = self.mss;
        self.recover = Some(self.snd_max);
        self.state = CaState::Loss;
        self.dupacks = 0;
        self.limited_sent = 0;
        self.partial_acks = 0;
        self.snd_nxt = self.snd_una;
        if self.cfg.sack && self.cfg.clear_sack_on_rto {
            self.board.clear_sacked();
        }
        self.high_rxt = self.snd_una;
        self.rescue_rxt = None;
        self.timed = None;
        self.rtt.backoff();
        self.pending = Some((self.snd_una, TxKind::RtoRetransmit));
        self.rto_deadline = Some(now + self.rtt.rto());
    }
}
