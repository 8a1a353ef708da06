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
//! * Optional, off by default: RACK loss detection ([`rack`], RFC 8985 §6), the tail loss probe
//!   ([`tlp`], RFC 8985 §7) and proportional rate reduction ([`prr`], RFC 6937). With RACK,
//!   SACK recovery keeps RFC 6675's `NextSeg()` rule 1 (lost segments first, now RACK's marks)
//!   and rule 2 (new data) and drops rules 3 and 4, as Linux does; `SetPipe()` counts RACK's
//!   marks (Linux `tcp_packets_in_flight`).
//!
//! Layout: this file holds the state and observers; [`send`] the output path (`poll_transmit`,
//! `NextSeg()`, `SetPipe()`), [`ack`] ACK processing and growth, [`recovery`] entering fast
//! recovery, [`undo`] episodes, the undo ledger and the responses, [`timers`] the RTO and the
//! early timer, [`rack`], [`tlp`], [`prr`].
//!
//! Simplifications: the handshake is optional (`handshake`), no Nagle, no persist timer (the
//! receiver never closes its window), the advertised window is not scaled or shrunk.

mod ack;
mod handshake;
mod linux_undo;
mod prr;
mod rack;
mod recovery;
mod send;
mod timers;
mod tlp;
mod undo;

pub use prr::Prr;
pub use rack::Rack;
pub use tlp::{EarlyTimer, TLP_TIMEOUT_INIT, TLP_TIMEOUT_MIN, WC_DEL_ACK_T};

use crate::cc::{AckSample, CcState, CongestionControl, Window};
use crate::jiffies;
use crate::rtt::RttEstimator;
use crate::scoreboard::{Scoreboard, SegMeta};
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
    /// A congestion-window reduction without a loss (Linux `TCP_CA_CWR`): the sender's own
    /// interface queue refused a segment ([`TcpSender::local_congestion`]).
    Cwr = 4,
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
    /// A tail loss probe (RFC 8985 §7.3): new data or a retransmission of the last segment.
    Tlp,
    /// The SYN of the handshake (`handshake = true`), first sent or retransmitted.
    Syn,
}

/// Where the optional handshake stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Handshake {
    /// No handshake, or it is complete: data may flow.
    Established,
    /// The SYN is due (first, or again after a timeout).
    SynDue {
        first_sent: Option<SimTime>,
        retries: u32,
    },
    /// The SYN is out, sent first at `first_sent`.
    SynSent { first_sent: SimTime, retries: u32 },
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
    /// cwnd clamps at the Loss state's `high_seq` that lowered cwnd (`cfg.moderate_cwnd`,
    /// Linux 3.10-4.x `tcp_moderate_cwnd`).
    pub moderate_cwnd_cuts: u64,
    /// Tail loss probes sent (RFC 8985 §7.3; Linux `LINUX_MIB_TCPLOSSPROBES`).
    pub tlp_count: u64,
    /// Probes that repaired a loss (§7.4; Linux `LINUX_MIB_TCPLOSSPROBERECOVERY`).
    pub tlp_recoveries: u64,
    /// Segments marked lost by RACK (RFC 8985 §6.2 step 5).
    pub rack_loss_count: u64,
    /// Time spent in timeout recovery (the `Loss` state: from an RTO that starts an episode to
    /// the ACK, or the undo, that leaves it; later RTOs of the episode extend it), ns, episodes
    /// that have ended only ([`TcpSender::timeout_time`] adds an ongoing one).
    pub timeout_time_ns: u64,
    /// The retransmission timeouts that expired, summed (each as armed, backoff included), ns:
    /// paper 003 §4.5's `N_tout · T0`.
    pub rto_wait_ns: u64,
    /// Window reductions because the sender's own interface queue refused a segment (entries
    /// into the CWR state, [`TcpSender::local_congestion`]).
    pub local_cwr_count: u64,
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
    /// TSval of the episode's first retransmission (Linux `retrans_stamp`), for the linux
    /// detector's `tcp_packet_delayed`.
    pub retrans_stamp: Option<u32>,
    /// The linux detector's F-RTO may undo the current timeout (Linux `tp->frto`).
    pub linux_frto: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum NextSegRule {
    Lost,
    NewData,
    Unsacked,
    Rescue,
}

/// What one ACK newly acknowledged, for the RTT the congestion control sees (Linux
/// `tcp_clean_rtx_queue`'s `last_ackt` and `FLAG_RETRANS_DATA_ACKED`, `tcp_sacktag_one`'s
/// `last_sackt`, `tcp_ack_update_rtt`'s `rs->rtt_us`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct AckRtt {
    /// Send time of the newest cumulatively ACKed segment that was neither retransmitted nor
    /// SACKed before.
    pub last_ackt: Option<SimTime>,
    /// Send time of the oldest cumulatively ACKed segment that was neither retransmitted nor
    /// SACKed before (Linux `first_ackt`).
    pub first_ackt: Option<SimTime>,
    /// A cumulatively ACKed segment had been retransmitted (Karn: no sequence sample).
    pub retrans_acked: bool,
    /// Send time of the newest newly SACKed original transmission.
    pub last_sackt: Option<SimTime>,
    /// Send time of the oldest newly SACKed original transmission (Linux `first_sackt`, the
    /// lowest one; originals go out in order).
    pub first_sackt: Option<SimTime>,
    /// The result: the RTT of the newest segment this ACK delivered.
    pub ca_rtt: Option<SimDuration>,
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
    /// When the current timeout recovery began (`state == Loss`).
    loss_since: Option<SimTime>,
    /// In the slow start that follows a timeout (until cwnd reaches ssthresh): RFC 3465
    /// §2.3's L = 1·SMSS applies there (see [`Sender::grow`]).
    rto_slow_start: bool,
    dupacks: u32,
    /// RFC 6582 `recover` / RFC 6675 `RecoveryPoint`, as one past the byte (exclusive).
    recover: Option<u64>,
    /// The Loss state's `high_seq` (snd_max at the timeout) while a sender without SACK may
    /// still be in the kernel's Loss state; kept only with `cfg.moderate_cwnd` and no SACK.
    loss_high: Option<u64>,
    /// The CWR state's `high_seq` (snd_max when it began) and the rate-halving counter (Linux
    /// `snd_cwnd_cnt` in `tcp_cwnd_down`).
    cwr_high: u64,
    cwr_cnt: u32,
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
    /// The send times behind this ACK's congestion-control RTT (Linux `ca_rtt_us`).
    ack_rtt: AckRtt,
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
    /// `cwnd_limited_check` (Linux `tcp_cwnd_validate`): cwnd was full in the current window
    /// (`is_cwnd_limited`), the most bytes outstanding in it (`max_packets_out`), and where the
    /// window ends (`cwnd_usage_seq`).
    is_cwnd_limited: bool,
    max_outstanding: u64,
    cwnd_usage_seq: u64,
    handshake: Handshake,
    // ---- RACK-TLP, PRR ----
    /// RACK's state (`None`: RACK off).
    rack: Option<Rack>,
    /// The loss-probe or reordering timer, whichever is armed.
    early_timer: Option<EarlyTimer>,
    /// RFC 8985 `TLP.end_seq` (Linux `tlp_high_seq`): `snd_max` after the outstanding probe.
    tlp_high_seq: Option<u64>,
    /// New data went out in the current burst: the loss probe is scheduled when the burst
    /// ends (`poll_transmit` returns `None`), once, as Linux `tcp_write_xmit` does after its
    /// loop; the result is the same as after every segment, whose calls overwrite each other.
    tlp_after_burst: bool,
    /// The outstanding probe was a retransmission (Linux `tlp_retrans`).
    tlp_retrans: bool,
    prr: Prr,
}

impl TcpSender {
    /// A sender running the congestion control of `cfg.cc`; `app_total` bytes to send
    /// (`None` = bulk).
    pub fn new(cfg: TcpConfig, app_total: Option<u64>) -> TcpSender {
        let cc = cfg.cc.build(cfg.ack_counting());
        Self::with_cc(cfg, app_total, cc)
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
            // The linux detector sends after a timeout as the kernel's F-RTO does (unless
            // `tcp_frto = 0`).
            frto: (sp.detectors.contains(DetectorKind::Frto)
                || (sp.detectors.contains(DetectorKind::Linux) && sp.linux_frto))
                .then(|| Frto::new(sp.frto)),
            ledger: UndoLedger::default(),
            episode: None,
            next_episode: 0,
            events: Vec::new(),
            dsack_seen: false,
            rto_without_progress: false,
            frto_budget: 0,
            eifel_rtt_after: None,
            is_cwnd_limited: false,
            max_outstanding: 0,
            cwnd_usage_seq: 0,
            handshake: if cfg.handshake {
                Handshake::SynDue {
                    first_sent: None,
                    retries: 0,
                }
            } else {
                Handshake::Established
            },
            rack: cfg.rack.then(Rack::default),
            early_timer: None,
            tlp_high_seq: None,
            tlp_after_burst: false,
            tlp_retrans: false,
            prr: Prr::default(),
            mss,
            cc,
            app_total,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd: cfg.initial_window as u64 * mss,
            ssthresh: cfg.initial_ssthresh.unwrap_or(u64::MAX),
            state: CaState::Open,
            loss_since: None,
            rto_slow_start: false,
            dupacks: 0,
            recover: None,
            loss_high: None,
            cwr_high: 0,
            cwr_cnt: 0,
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
            ack_rtt: AckRtt::default(),
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
    /// The kind of the segment the sender will send next before any other (a retransmission
    /// an ACK or a timer decided), if any.
    pub fn pending_kind(&self) -> Option<TxKind> {
        self.pending.map(|(_, kind)| kind)
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

    /// Time spent in timeout recovery up to `now`, an ongoing episode included (paper 003 §4.5:
    /// `E[t_out] = E[N_tout]·E[T0]`).
    pub fn timeout_time(&self, now: SimTime) -> SimDuration {
        let open = self.loss_since.map_or(0, |t0| now.0.saturating_sub(t0.0));
        SimDuration(self.stats.timeout_time_ns + open)
    }
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    /// The congestion control algorithm.
    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
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
    /// `snd_nxt − snd_una` less the SACKed bytes, plus, after a timeout, what was sent above
    /// the timeout's `recover` while go-back-N is below it (F-RTO's new segments; Linux counts
    /// them in `packets_out` and not as lost).
    pub fn inflight(&self) -> u64 {
        if self.state == CaState::Recovery && self.cfg.variant == Variant::Sack {
            return self.pipe;
        }
        let mut out = self.snd_nxt - self.snd_una;
        if self.state == CaState::Loss {
            let above = self.recover.map_or(self.snd_max, |r| r.max(self.snd_nxt));
            out += self.snd_max.saturating_sub(above);
        }
        out.saturating_sub(self.board.sacked_bytes())
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

    /// When `on_timer` must next be called: the earliest of the RTO and the early timer (loss
    /// probe or RACK reordering timer).
    pub fn next_timer(&self) -> Option<SimTime> {
        match (self.rto_deadline, self.early_timer) {
            (Some(r), Some(e)) => Some(r.min(e.deadline())),
            (r, e) => r.or(e.map(|e| e.deadline())),
        }
    }
    /// The armed loss-probe or reordering timer.
    pub fn early_timer(&self) -> Option<EarlyTimer> {
        self.early_timer
    }
    /// The RTO deadline, if the retransmission timer runs.
    pub fn rto_deadline(&self) -> Option<SimTime> {
        self.rto_deadline
    }
    /// RACK's state (`None` when RACK is off).
    pub fn rack(&self) -> Option<&Rack> {
        self.rack.as_ref()
    }
    /// PRR's state of the current or last recovery.
    pub fn prr(&self) -> &Prr {
        &self.prr
    }
    /// RFC 8985 `TLP.end_seq` of the outstanding probe.
    pub fn tlp_high_seq(&self) -> Option<u64> {
        self.tlp_high_seq
    }
    /// Whether the segment starting at `seq` is marked lost by RACK.
    pub fn is_marked_lost(&self, seq: u64) -> bool {
        self.board.get(seq, self.mss).is_some_and(|m| m.lost)
    }

    // ---- helpers -----------------------------------------------------------------------------

    pub(super) fn seg_len(&self, seq: u64) -> u64 {
        match self.app_total {
            Some(t) => self.mss.min(t.saturating_sub(seq)),
            None => self.mss,
        }
    }

    pub(super) fn ts_now(&self, now: SimTime) -> u32 {
        (now.as_nanos() / self.cfg.ts_tick.as_nanos().max(1)) as u32
    }

    /// The RTT a timestamp echo gives (RFC 7323 RTTM): the clock's ticks since `ecr`, at
    /// least one.
    pub(super) fn ts_rtt(&self, now: SimTime, ecr: u32) -> SimDuration {
        let ticks = self.ts_now(now).wrapping_sub(ecr).max(1);
        self.cfg.ts_tick.saturating_mul(ticks as u64)
    }

    pub(super) fn window(&self) -> Window {
        Window {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            mss: self.mss,
        }
    }

    /// Changes the congestion state and tells the congestion control (Linux `tcp_set_ca_state`).
    pub(super) fn set_ca_state(&mut self, now: SimTime, to: CaState) {
        let from = self.state;
        self.state = to;
        if from != to && to == CaState::Loss {
            self.loss_since = Some(now);
        } else if from == CaState::Loss && to != CaState::Loss {
            if let Some(t0) = self.loss_since.take() {
                self.stats.timeout_time_ns += now.since(t0).as_nanos();
            }
        }
        if from != to && matches!(from, CaState::Recovery | CaState::Loss) && to == CaState::Open {
            self.rack_on_recovery_exit();
        }
        if from != to {
            let mut w = self.window();
            self.cc.set_state(&mut w, now, from, to);
            self.cwnd = w.cwnd;
            self.ssthresh = w.ssthresh;
        }
    }

    /// Raises a congestion-control event.
    pub(super) fn cc_event(&mut self, now: SimTime, ev: crate::cc::CaEvent) {
        let mut w = self.window();
        self.cc.cwnd_event(&mut w, now, ev);
        self.cwnd = w.cwnd;
        self.ssthresh = w.ssthresh;
    }

    /// Hands one ACK to the congestion control's `pkts_acked` hook.
    pub(super) fn cc_pkts_acked(&mut self, now: SimTime, acked: u64, dupack: bool) {
        let s = AckSample {
            now,
            acked,
            dupack,
            rtt: self.last_rtt_sample,
            ca_rtt: self.ack_rtt.ca_rtt,
            srtt: self.rtt.srtt(),
            snd_una: self.snd_una,
            snd_max: self.snd_max,
            state: self.state,
        };
        let mut w = self.window();
        self.cc.pkts_acked(&mut w, &s);
        self.cwnd = w.cwnd;
        self.ssthresh = w.ssthresh;
    }

    /// Counts an RTT sample the estimator has taken (stats, `last_rtt_sample`).
    pub(super) fn note_rtt_sample(&mut self, r: SimDuration) {
        let s = r.as_secs_f64();
        self.stats.rtt_samples += 1;
        self.stats.rtt_sum_s += s;
        self.stats.rtt_sumsq_s += s * s;
        self.last_rtt_sample = Some(r);
    }

    /// The bytes ssthresh is computed from on a loss (`ssthresh_basis`).
    pub(super) fn ssthresh_basis(&self, flight: u64) -> u64 {
        match self.cfg.ssthresh_basis {
            crate::SsthreshBasis::FlightSize => flight,
            crate::SsthreshBasis::Cwnd => self.cwnd,
        }
    }

    /// Linux `tcp_cwnd_validate`, after each transmission: remember whether cwnd is full in the
    /// current window, else the most bytes outstanding in it.
    pub(super) fn cwnd_validate(&mut self) {
        // cwnd is in bytes and need not be a whole number of segments: it is full when it
        // has no room for another one (Linux counts packets: in flight >= cwnd).
        let limited = self.inflight() + self.mss > self.cwnd;
        let outstanding = self.snd_max - self.snd_una;
        if self.snd_una >= self.cwnd_usage_seq
            || limited
            || (!self.is_cwnd_limited && outstanding > self.max_outstanding)
        {
            self.is_cwnd_limited = limited;
            self.max_outstanding = outstanding;
            self.cwnd_usage_seq = self.snd_max;
        }
    }

    /// Linux `tcp_is_cwnd_limited`: may cwnd grow on this ACK?
    pub(super) fn cwnd_limited(&self) -> bool {
        !self.cfg.cwnd_limited_check
            || self.is_cwnd_limited
            || (self.cwnd < self.ssthresh && self.cwnd < 2 * self.max_outstanding)
    }

    /// Whether the `dupthresh`-th duplicate ACK may start fast retransmit.
    ///
    /// RFC 6582 §3.2 step 2: only if the cumulative ACK "covers more than recover", i.e.
    /// `ack_number - 1 > recover` where `recover` is the highest sequence number transmitted;
    /// `self.recover` is one past that byte, so `snd_una > recover`. RFC 6675 §5.1: a new SACK
    /// recovery may start once `HighACK >= RecoveryPoint` (both inclusive byte numbers), i.e.
    /// `snd_una >= recover`.
    pub(super) fn fr_allowed(&self) -> bool {
        if !self.cfg.block_fr_after_rto {
            return true;
        }
        match self.recover {
            None => true,
            Some(r) if self.cfg.variant == Variant::Sack => self.snd_una >= r,
            Some(r) => self.snd_una > r,
        }
    }
}
