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
//! * Spurious retransmissions (`crate::spurious`): every fast retransmit, and every timeout that
//!   is not a recurrence before any progress in an RTO recovery, starts a loss-recovery
//!   [`Episode`]. The sender keeps the undo ledger ([`UndoLedger`], Linux `prior_cwnd`,
//!   `prior_ssthresh`, `undo_marker`, `undo_retrans`, plus RFC 4015's `pipe_prev`, `SRTT_prev`,
//!   `RTTVAR_prev` and the congestion control's saved state), feeds the enabled detectors, and
//!   applies the configured response once per episode, through one entry point per kind of
//!   evidence: [`TcpSender::undo_by_timestamps`], [`TcpSender::undo_by_dsack`],
//!   [`TcpSender::undo_by_frto`]. Responses: RFC 4015 (timeouts that initiate an RTO recovery:
//!   resume with new data after a detection on an ACK of an original transmission, `cwnd =
//!   FlightSize + min(bytes_acked, IW)`, `ssthresh = pipe_prev`, RTT estimator restarted on the
//!   first sample from data sent after the timeout), Linux full undo (`cwnd =
//!   undo_cwnd(prior_cwnd)`, `ssthresh = max(ssthresh, prior_ssthresh)`, no more
//!   retransmissions), or none. F-RTO replaces go-back-N after a timeout by up to two new
//!   segments while it decides.
//!
//! Simplifications: no handshake, no Nagle, no persist timer (the receiver never closes its
//! window), the advertised window is not scaled or shrunk.

use crate::cc::{AckCounting, CcState, CongestionControl, Reno, Window};
use crate::rtt::RttEstimator;
use crate::scoreboard::Scoreboard;
use crate::spurious::dsack::{Dsack, DsackBlock};
use crate::spurious::eifel::{AcceptableAck, Eifel};
use crate::spurious::frto::{self, Frto};
use crate::spurious::{DetectorKind, EpisodeKind, Response, Verdict};
use crate::{RtoAlgorithm, Segment, TcpConfig, Timestamps, Variant};
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
    /// Responses applied (Eifel response or undo).
    pub undo_count: u64,
}

/// A loss-recovery episode: what the detectors judge.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Episode {
    /// Episodes of this sender are numbered from 0.
    pub id: u32,
    pub kind: EpisodeKind,
    /// First byte of the retransmission that started it.
    pub seq: u64,
    pub start: SimTime,
    /// A response was applied (at most once per episode).
    pub responded: bool,
}

/// Something the spurious-retransmission machinery did, for traces and scoring. The sender
/// appends; the caller reads [`TcpSender::spurious_events`] and clears them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SpuriousEvent {
    EpisodeStart(Episode),
    Verdict {
        episode: u32,
        detector: DetectorKind,
        verdict: Verdict,
        t: SimTime,
    },
    /// A response changed the congestion state (`None` responses leave no event).
    Undo {
        episode: u32,
        response: Response,
        detector: DetectorKind,
        t: SimTime,
        /// cwnd and ssthresh after the response, bytes.
        cwnd: u64,
        ssthresh: u64,
    },
}

/// The undo ledger (Linux `tcp_sock` undo fields; RFC 4015 step (0)).
#[derive(Debug, Default)]
pub struct UndoLedger {
    /// cwnd when the episode started, bytes (Linux `prior_cwnd`).
    pub prior_cwnd: u64,
    /// ssthresh to restore, bytes: Linux `tcp_current_ssthresh`, the larger of ssthresh and
    /// 3/4 cwnd when the episode started.
    pub prior_ssthresh: u64,
    /// `snd_una` when the episode started (Linux `undo_marker`); `None`: nothing to undo.
    pub undo_marker: Option<u64>,
    /// Segments retransmitted since the undo marker and not reported by DSACK (Linux
    /// `undo_retrans`).
    pub undo_retrans: u32,
    /// The episode whose timeout initiated the current timeout-based loss recovery and took
    /// RFC 4015 step (0); the Eifel response answers only that episode (§3.1: not reinitiated
    /// before that recovery completes).
    pub rfc4015_episode: Option<u32>,
    /// SND.MAX at that timeout: RFC 4015 step (11) takes its RTT sample from data above it.
    pub rfc4015_snd_max: u64,
    /// RFC 4015 `pipe_prev = max(FlightSize, ssthresh)`, bytes.
    pub pipe_prev: u64,
    /// RFC 4015 `SRTT_prev = SRTT + 2G` (`None`: no RTT sample yet).
    pub srtt_prev: Option<SimDuration>,
    /// RFC 4015 `RTTVAR_prev`.
    pub rttvar_prev: SimDuration,
    /// The congestion control's state when the episode started.
    cc: CcState,
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
    // ---- spurious retransmissions ----
    eifel: Option<Eifel>,
    dsack_det: Option<Dsack>,
    frto: Option<Frto>,
    ledger: UndoLedger,
    episode: Option<Episode>,
    next_episode: u32,
    events: Vec<SpuriousEvent>,
    /// An ACK with a DSACK block has arrived in this connection (RFC 3522 step 5).
    dsack_seen: bool,
    /// An RTO fired and no ACK advanced `snd_una` since (a recurring timeout continues the
    /// episode).
    rto_without_progress: bool,
    /// New segments F-RTO step 2b still lets the sender transmit.
    frto_budget: u32,
    /// RFC 4015 step (11) armed: restart the RTT estimator on the first RTT sample from an
    /// ACK above this sequence number (data not yet sent when the spurious timeout occurred).
    eifel_rtt_after: Option<u64>,
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
        let sp = cfg.spurious;
        TcpSender {
            eifel: sp
                .detectors
                .contains(DetectorKind::Eifel)
                .then(Eifel::default),
            dsack_det: sp
                .detectors
                .contains(DetectorKind::Dsack)
                .then(|| Dsack::new(mss)),
            frto: sp
                .detectors
                .contains(DetectorKind::Frto)
                .then(|| Frto::new(sp.frto)),
            ledger: UndoLedger::default(),
            episode: None,
            next_episode: 0,
            events: Vec::new(),
            dsack_seen: false,
            rto_without_progress: false,
            frto_budget: 0,
            eifel_rtt_after: None,
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
    /// The current (latest) loss-recovery episode.
    pub fn episode(&self) -> Option<&Episode> {
        self.episode.as_ref()
    }
    pub fn ledger(&self) -> &UndoLedger {
        &self.ledger
    }
    /// Spurious-retransmission events since the last [`clear_spurious_events`].
    ///
    /// [`clear_spurious_events`]: TcpSender::clear_spurious_events
    pub fn spurious_events(&self) -> &[SpuriousEvent] {
        &self.events
    }
    pub fn clear_spurious_events(&mut self) {
        self.events.clear();
    }
    /// Whether F-RTO is deciding the current timeout (steps 2-3).
    pub fn frto_active(&self) -> bool {
        self.frto.as_ref().is_some_and(|f| f.is_active())
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
                // F-RTO step 2b: new segments instead of retransmissions.
                if self.frto_budget > 0 {
                    let seq = self.snd_max;
                    let len = self.seg_len(seq);
                    if len > 0 && seq + len <= self.snd_una + self.rwnd {
                        self.frto_budget -= 1;
                        return Some(self.transmit(now, seq, TxKind::New));
                    }
                    self.frto_budget = 0;
                }
                if self
                    .frto
                    .as_ref()
                    .is_some_and(|f| f.holds_retransmissions())
                {
                    return None;
                }
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
            if self.ledger.undo_marker.is_some_and(|m| seq >= m) {
                self.ledger.undo_retrans += 1;
            }
            if let Some(d) = &mut self.dsack_det {
                d.on_retransmit(seq);
            }
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
        let prior_snd_una = self.snd_una;
        let frto_recover = self.frto.as_ref().and_then(|f| f.recover());
        let mut newly_sacked = 0;
        let mut dsack = false;
        let mut dsack_block = None;
        let mut sack_above_recover = false;
        let mut newly_sacked_below_recover = false;
        if self.cfg.sack {
            let blocks = seg.sack.as_slice();
            if let Some(&(s0, e0)) = blocks.first() {
                dsack = s0 < ack || blocks.get(1).is_some_and(|&(s1, e1)| s0 >= s1 && e0 <= e1);
                if dsack {
                    self.stats.dsacks_rcvd += 1;
                    dsack_block = Some(DsackBlock {
                        start: s0,
                        end: e0,
                        snd_una: prior_snd_una,
                        scoreboard_empty: self.board.sacked_bytes() == 0,
                    });
                    let ledger_retx = self.dsacked_retransmissions(
                        s0,
                        e0,
                        prior_snd_una,
                        self.ledger.undo_marker,
                    );
                    self.ledger.undo_retrans = self.ledger.undo_retrans.saturating_sub(ledger_retx);
                }
            }
            for (i, &(s, e)) in blocks.iter().enumerate() {
                if (i == 0 && dsack) || e <= ack {
                    continue;
                }
                let n = self.board.mark_sacked(s.max(ack), e);
                newly_sacked += n;
                if let Some(r) = frto_recover {
                    sack_above_recover |= e > r;
                    newly_sacked_below_recover |= n > 0 && s < r;
                }
            }
        }
        let is_dupack = ack == self.snd_una
            && seg.len == 0
            && self.snd_max > self.snd_una
            && (self.cfg.variant != Variant::Sack || newly_sacked > 0);
        let mut sample = None;
        let mut acked = 0;
        if ack > self.snd_una {
            acked = ack - self.snd_una;
            sample = match (self.cfg.timestamps, seg.ts, self.timed) {
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
            self.rto_without_progress = false;
        }

        // Detectors read the ACK; the response waits until the ACK has been processed.
        let mut spurious_by = None;
        let mut frto_action = frto::Action::default();
        if let Some(e) = &mut self.eifel {
            if acked > 0 {
                let v = e.on_acceptable_ack(&AcceptableAck {
                    ts_ecr: seg.ts.map(|t| t.ecr),
                    dsack,
                    dsack_seen_before: self.dsack_seen,
                    acks_all_outstanding: ack == self.snd_max,
                });
                if let Some(v) = v {
                    spurious_by = spurious_by.or(self.record_verdict(now, DetectorKind::Eifel, v));
                }
            }
        }
        if dsack {
            self.dsack_seen = true;
            if let (Some(d), Some(b)) = (&mut self.dsack_det, &dsack_block) {
                if let Some(v) = d.on_dsack(b) {
                    spurious_by = spurious_by.or(self.record_verdict(now, DetectorKind::Dsack, v));
                }
            }
        }
        let len = self.seg_len(self.snd_max);
        let can_send_new = len > 0 && self.snd_max + len <= self.snd_una + self.rwnd;
        if let Some(f) = &mut self.frto {
            frto_action = f.on_ack(&frto::FrtoAck {
                ack,
                prior_snd_una,
                snd_max: self.snd_max,
                is_dupack,
                sack_above_recover,
                newly_acked_below_recover: (acked > 0
                    && frto_recover.is_none_or(|r| prior_snd_una < r))
                    || newly_sacked_below_recover,
                can_send_new,
            });
            if let Some(v) = frto_action.verdict {
                if v.is_spurious() {
                    // RFC 5682 §2 step 3b: recover = SND.UNA (fast retransmit allowed again).
                    self.recover = Some(self.snd_una);
                }
                spurious_by = spurious_by.or(self.record_verdict(now, DetectorKind::Frto, v));
            }
        }
        let response = self.cfg.spurious.response;
        let responding = response != Response::None
            && spurious_by.is_some()
            && self.episode.is_some_and(|e| !e.responded);
        if responding
            && response == Response::Eifel
            && self
                .episode
                .is_some_and(|e| self.eifel_response_applies(&e))
        {
            // RFC 4015 step (11): on the first RTT sample taken from data that was not yet sent
            // when the spurious timeout occurred (this ACK's own sample, from an original
            // transmission, goes to the estimator as usual).
            self.eifel_rtt_after = Some(self.ledger.rfc4015_snd_max);
        }

        if let Some(r) = sample {
            if self.eifel_rtt_after.is_some_and(|h| ack > h) {
                self.eifel_rtt_after = None;
                self.rtt.restart_after_spurious_timeout(
                    self.ledger.srtt_prev,
                    self.ledger.rttvar_prev,
                    r,
                );
            } else {
                self.rtt.on_sample(r, self.snd_una, self.snd_nxt);
            }
            let s = r.as_secs_f64();
            self.stats.rtt_samples += 1;
            self.stats.rtt_sum_s += s;
            self.stats.rtt_sumsq_s += s * s;
            self.last_rtt_sample = Some(r);
        }
        if acked > 0 {
            self.on_new_ack(now, acked);
        } else if is_dupack {
            self.stats.dupacks_rcvd += 1;
            self.on_dupack(now);
        }

        // F-RTO's decision on what to send (unless a response takes over).
        if !responding && self.episode.is_none_or(|e| !e.responded) {
            self.frto_budget = frto_action.send_new;
            if let Some(cap) = frto_action.cwnd_cap_segments {
                self.cwnd = self.cwnd.min(cap * self.mss).max(self.mss);
            }
        }
        if let Some(d) = spurious_by.filter(|_| responding) {
            match d {
                DetectorKind::Eifel => self.undo_by_timestamps(now, acked),
                DetectorKind::Dsack => self.undo_by_dsack(now, acked),
                DetectorKind::Frto => self.undo_by_frto(now, acked),
            }
        } else if frto_action.verdict.is_some_and(|v| v.is_spurious())
            && (self.state == CaState::Loss || self.snd_nxt < self.snd_max)
        {
            // No response (or one already applied): F-RTO's step 3b still ends the RTO
            // recovery without the retransmissions its detection replaced.
            self.stop_retransmitting();
        }
        if self.state == CaState::Recovery && self.cfg.variant == Variant::Sack {
            self.set_pipe();
        }
    }

    /// Retransmitted segments at or above `marker` that a DSACK block `[s, e)` reports:
    /// retransmitted segments in the scoreboard, or, for a block wholly below `snd_una` (no
    /// longer in the scoreboard), its length in segments above the undo marker (Linux
    /// `tcp_check_dsack` "dumb counting").
    fn dsacked_retransmissions(
        &self,
        s: u64,
        e: u64,
        prior_snd_una: u64,
        marker: Option<u64>,
    ) -> u32 {
        let Some(marker) = marker else {
            return 0;
        };
        if e <= prior_snd_una {
            if e <= marker {
                return 0;
            }
            return (e - s.max(marker)).div_ceil(self.mss) as u32;
        }
        // Segments start at multiples of the MSS: visit only those inside the block.
        let mut seq = s.max(marker).div_ceil(self.mss) * self.mss;
        let mut n = 0;
        while seq < e {
            if let Some(m) = self.board.get(seq, self.mss) {
                if seq + m.len as u64 <= e && m.tx_count > 1 {
                    n += 1;
                }
            }
            seq += self.mss;
        }
        n
    }

    /// Records a detector's verdict on the current episode; returns the detector if it found
    /// the episode spurious.
    fn record_verdict(
        &mut self,
        now: SimTime,
        d: DetectorKind,
        v: Verdict,
    ) -> Option<DetectorKind> {
        let ep = self.episode?;
        self.events.push(SpuriousEvent::Verdict {
            episode: ep.id,
            detector: d,
            verdict: v,
            t: now,
        });
        v.is_spurious().then_some(d)
    }

    // ---- the undo ledger and the responses ----------------------------------------------------

    /// Opens a new episode and, unless a fast recovery is being turned into an RTO recovery
    /// (Linux keeps the ledger of the first reduction then), fills the Linux part of the ledger
    /// before cwnd and ssthresh change; the RFC 4015 part is filled only by a timeout that
    /// initiates an RTO recovery.
    fn start_episode(&mut self, now: SimTime, kind: EpisodeKind) {
        let keep_ledger = kind == EpisodeKind::Timeout
            && self.state == CaState::Recovery
            && self.ledger.undo_marker.is_some();
        if !keep_ledger {
            let prev = std::mem::take(&mut self.ledger);
            self.ledger = UndoLedger {
                prior_cwnd: self.cwnd,
                prior_ssthresh: self.ssthresh.max(self.cwnd / 2 + self.cwnd / 4),
                undo_marker: Some(self.snd_una),
                undo_retrans: 0,
                cc: self.cc.save_state(),
                ..prev
            };
        }
        // RFC 4015 §3.1 step (0): when a timeout-based loss recovery is initiated, i.e. on a
        // timeout outside an RTO recovery (one in fast recovery included), not again until that
        // recovery completes.
        if kind == EpisodeKind::Timeout && self.state != CaState::Loss {
            let g = match self.cfg.rto.algorithm {
                RtoAlgorithm::Rfc6298 { granularity, .. } => granularity,
                RtoAlgorithm::Linux => self.cfg.ts_tick,
            };
            let flight = self.snd_max - self.snd_una;
            self.ledger.rfc4015_episode = Some(self.next_episode);
            self.ledger.rfc4015_snd_max = self.snd_max;
            self.ledger.pipe_prev = flight.max(self.ssthresh);
            self.ledger.srtt_prev = self.rtt.srtt().map(|s| s + g.saturating_mul(2));
            self.ledger.rttvar_prev = self.rtt.rttvar();
        }
        let ep = Episode {
            id: self.next_episode,
            kind,
            seq: self.snd_una,
            start: now,
            responded: false,
        };
        self.next_episode += 1;
        self.episode = Some(ep);
        self.events.push(SpuriousEvent::EpisodeStart(ep));
        self.eifel_rtt_after = None;
        self.frto_budget = 0;
        let ts = self.ts_now(now);
        // RFC 3522 §3.2: detection starts when loss recovery is initiated and is never
        // reinitiated while it is under way (a timeout during fast recovery or during an
        // unfinished RTO recovery, a fast retransmit from the Loss state): no Eifel verdict on
        // such an episode.
        let in_loss_recovery = matches!(self.state, CaState::Recovery | CaState::Loss);
        if let Some(e) = &mut self.eifel {
            if in_loss_recovery {
                e.reset();
            } else {
                e.on_episode_start(kind, ts);
            }
        }
        if let Some(d) = &mut self.dsack_det {
            d.on_episode_start(self.snd_una);
        }
    }

    /// Undo entry point for timestamp evidence (RFC 3522).
    pub fn undo_by_timestamps(&mut self, now: SimTime, acked: u64) {
        self.respond(now, DetectorKind::Eifel, false, acked);
    }

    /// Undo entry point for DSACK evidence (RFC 3708); a late detection in RFC 4015's terms.
    pub fn undo_by_dsack(&mut self, now: SimTime, acked: u64) {
        self.respond(now, DetectorKind::Dsack, true, acked);
    }

    /// Undo entry point for F-RTO evidence (RFC 5682 step 3b).
    pub fn undo_by_frto(&mut self, now: SimTime, acked: u64) {
        self.respond(now, DetectorKind::Frto, false, acked);
    }

    /// Applies the flow's response to a spurious episode, once. With `Response::None` nothing
    /// changes and the detectors go on independently.
    fn respond(&mut self, now: SimTime, d: DetectorKind, late: bool, acked: u64) {
        if self.cfg.spurious.response == Response::None {
            return;
        }
        let Some(ep) = self.episode.filter(|e| !e.responded) else {
            return;
        };
        if let Some(e) = &mut self.episode {
            e.responded = true;
        }
        self.frto_budget = 0;
        if d != DetectorKind::Frto {
            if let Some(f) = &mut self.frto {
                f.reset();
            }
        }
        // Still retransmitting: in recovery, or go-back-N has rewound snd_nxt.
        let in_recovery =
            matches!(self.state, CaState::Loss | CaState::Recovery) || self.snd_nxt < self.snd_max;
        match self.cfg.spurious.response {
            Response::None => return,
            Response::Eifel => {
                if !self.eifel_response_applies(&ep) {
                    // RFC 4015 covers spurious timeouts only (a fast retransmit's
                    // SpuriousRecovery = dupacks+1 goes to (DONE)), and only the timeout that
                    // initiated the RTO recovery (§3.1).
                    return;
                }
                // Step (7): SPUR_TO (detected on an ACK of an original transmission) goes to
                // step (8), LATE_SPUR_TO (DSACK) straight to step (9).
                if !late {
                    if in_recovery {
                        // Step (8): resume with previously unsent data, SND.NXT = SND.MAX.
                        self.stop_retransmitting();
                    }
                    // §4: with NewReno (and Reno, which shares the RFC 6582 "bugfix" check
                    // here) the next three duplicate ACKs go straight to fast retransmit.
                    if self.cfg.variant != Variant::Sack {
                        self.recover = None;
                    }
                }
                // Step (9): reverse the congestion control state (no ECN in the model), for
                // both values; cwnd is kept at least 1 SMSS.
                let flight = self.snd_max - self.snd_una;
                let iw = self.cfg.initial_window as u64 * self.mss;
                self.cwnd = (flight + acked.min(iw)).max(self.mss);
                self.ssthresh = self.ledger.pipe_prev;
                self.cc.restore_state(std::mem::take(&mut self.ledger.cc));
                // Step (11) was armed by `on_ack`.
            }
            Response::Undo => {
                // Linux tcp_undo_cwnd_reduction.
                let w = self.window();
                self.cwnd = self.cc.undo_cwnd(&w, self.ledger.prior_cwnd).max(self.mss);
                if self.ledger.prior_ssthresh > self.ssthresh {
                    self.ssthresh = self.ledger.prior_ssthresh;
                }
                self.cc.restore_state(std::mem::take(&mut self.ledger.cc));
                if in_recovery {
                    self.stop_retransmitting();
                }
            }
        }
        self.ledger.undo_marker = None;
        self.stats.undo_count += 1;
        self.events.push(SpuriousEvent::Undo {
            episode: ep.id,
            response: self.cfg.spurious.response,
            detector: d,
            t: now,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
        });
    }

    /// Whether the RFC 4015 response answers `ep`: a timeout episode that initiated the current
    /// timeout-based loss recovery (step (0) was taken for it).
    fn eifel_response_applies(&self, ep: &Episode) -> bool {
        ep.kind == EpisodeKind::Timeout && self.ledger.rfc4015_episode == Some(ep.id)
    }

    /// Leaves loss recovery without retransmitting more: `SND.NXT = SND.MAX`, state Open.
    fn stop_retransmitting(&mut self) {
        self.snd_nxt = self.snd_max;
        self.state = CaState::Open;
        self.dupacks = 0;
        if matches!(self.pending, Some((_, TxKind::Retransmit))) {
            self.pending = None;
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

    fn on_dupack(&mut self, now: SimTime) {
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
                    self.enter_recovery(now);
                }
            }
            CaState::Recovery => {
                if self.cfg.variant != Variant::Sack {
                    self.cwnd += self.mss;
                }
            }
        }
    }

    fn enter_recovery(&mut self, now: SimTime) {
        self.start_episode(now, EpisodeKind::FastRetransmit);
        if let Some(f) = &mut self.frto {
            f.on_fast_retransmit(self.snd_max);
        }
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
        let recurring = self.state == CaState::Loss && self.rto_without_progress;
        if !recurring {
            self.start_episode(now, EpisodeKind::Timeout);
        }
        let timeout = frto::Timeout {
            in_rto_recovery: self.state == CaState::Loss,
            in_fast_recovery: self.state == CaState::Recovery,
            sack_loss_recovery: self.cfg.variant == Variant::Sack,
            snd_una: self.snd_una,
            snd_max: self.snd_max,
            retransmitted_end: self.snd_una + self.seg_len(self.snd_una),
        };
        if let Some(f) = &mut self.frto {
            f.on_timeout(&timeout);
        }
        self.rto_without_progress = true;
        self.frto_budget = 0;
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
