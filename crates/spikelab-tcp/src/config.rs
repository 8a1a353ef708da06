//! Every knob of the TCP model. The scenario layer fills this from the TOML file.

use crate::cc::CcConfig;
use crate::spurious::SpuriousConfig;
use spikelab_core::SimDuration;

/// Loss-recovery variant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Variant {
    /// RFC 5681 fast retransmit / fast recovery: any new ACK ends recovery.
    Reno,
    /// RFC 6582: partial ACKs retransmit and keep the sender in recovery until `recover`.
    NewReno,
    /// RFC 6675 SACK-based loss recovery (requires SACK).
    Sack,
}

/// The RTO estimator.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RtoAlgorithm {
    /// RFC 6298 §2: `RTO = SRTT + max(G, K·RTTVAR)`, gains alpha and beta.
    Rfc6298 {
        alpha: f64,
        beta: f64,
        k: f64,
        /// Clock granularity G.
        granularity: SimDuration,
    },
    /// The Linux kernel's estimator (`tcp_rtt_estimator`, `__tcp_set_rto`): srtt gain 1/8,
    /// mdev gain 1/4 with the damped update for falling RTTs, `rttvar` tracks the per-window
    /// maximum `mdev_max` and never falls below the RTO minimum; `RTO = srtt + rttvar`.
    Linux,
    /// ns-2.35's timer ([`crate::ns2::rtt`]): RTT samples in whole ticks of `tick`
    /// (`tcpTick_`), the agent's clock starting `phase` into a tick, scaled-integer smoothing,
    /// `RTO = srtt + 4·rttvar`. Only the ns-2 agent runs it.
    Ns2 {
        tick: SimDuration,
        phase: SimDuration,
    },
}

impl RtoAlgorithm {
    /// The estimator this crate's sender runs for it: ns-2's timer belongs to the ns-2 agent,
    /// so here it stands for RFC 6298's gains on its tick.
    pub fn rfc_fallback(self) -> RtoAlgorithm {
        match self {
            RtoAlgorithm::Ns2 { tick, .. } => RtoAlgorithm::Rfc6298 {
                alpha: 0.125,
                beta: 0.25,
                k: 4.0,
                granularity: tick,
            },
            a => a,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RtoConfig {
    pub algorithm: RtoAlgorithm,
    /// Lower bound (RFC 6298 (2.4): 1 s; Linux `TCP_RTO_MIN`: 200 ms).
    pub min: SimDuration,
    /// Upper bound (RFC 6298 (2.5): at least 60 s; Linux `TCP_RTO_MAX`: 120 s).
    pub max: SimDuration,
    /// RTO before the first RTT sample (RFC 6298 (2.1): 1 s).
    pub initial: SimDuration,
}

impl RtoConfig {
    pub fn rfc6298() -> RtoConfig {
        RtoConfig {
            algorithm: RtoAlgorithm::Rfc6298 {
                alpha: 0.125,
                beta: 0.25,
                k: 4.0,
                granularity: SimDuration::from_millis(1),
            },
            min: SimDuration::from_secs(1),
            max: SimDuration::from_secs(60),
            initial: SimDuration::from_secs(1),
        }
    }
    pub fn linux() -> RtoConfig {
        RtoConfig {
            algorithm: RtoAlgorithm::Linux,
            min: SimDuration::from_millis(200),
            max: SimDuration::from_secs(120),
            initial: SimDuration::from_secs(1),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    pub variant: Variant,
    /// Sender maximum segment size, payload bytes.
    pub mss: u32,
    /// Initial congestion window, segments.
    pub initial_window: u32,
    /// Initial slow-start threshold, bytes (`None`: arbitrarily high, RFC 5681 §3.1).
    pub initial_ssthresh: Option<u64>,
    /// Receive window advertised by the receiver, bytes (the receiving app reads at once).
    pub rwnd: u64,
    /// Appropriate byte counting (RFC 3465) instead of per-ACK growth.
    pub abc: bool,
    /// ABC limit L, segments (RFC 3465 §2.2 allows L = 2).
    pub abc_limit: u32,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681: 3).
    pub dupthresh: u32,
    /// RFC 3042 limited transmit on the first two duplicate ACKs.
    pub limited_transmit: bool,
    /// After a timeout, no fast retransmit until the cumulative ACK passes `recover`
    /// (RFC 6582 §3.2 step 2; "the bug fix" of paper 002).
    pub block_fr_after_rto: bool,
    pub rto: RtoConfig,
    /// RFC 7323 timestamps on both ends.
    pub timestamps: bool,
    /// Timestamp clock tick (Linux: 1 ms).
    pub ts_tick: SimDuration,
    /// RFC 2018 SACK at the receiver (and SACK processing at the sender).
    pub sack: bool,
    /// RFC 2883 DSACK at the receiver.
    pub dsack: bool,
    /// RFC 2018 §8: clear the SACKed marks on a retransmission timeout (the receiver may have
    /// reneged). Linux keeps them.
    pub clear_sack_on_rto: bool,
    /// Delayed ACK (RFC 5681 §4.2, RFC 1122 §4.2.3.2).
    pub delayed_ack: bool,
    /// Delayed-ACK timer (with `delack_ato`: its least value, Linux `TCP_ATO_MIN`).
    pub delack_timeout: SimDuration,
    /// The delayed-ACK timeout adapts as Linux's `icsk_ack.ato` does (`tcp_event_data_recv`,
    /// `tcp_send_delayed_ack`, `tcp_delack_timer_handler`): it starts at `delack_timeout`,
    /// follows the spacing of in-order data (`ato/2 + m` for gaps `m` between `delack_timeout/2`
    /// and `ato`, back towards the minimum for closer ones), doubles when the timer fires, and is
    /// bounded by the receiver's RTO and, when armed, by its handshake RTT and 200 ms.
    pub delack_ato: bool,
    /// Full-sized segments that force an ACK (RFC 5681: at least every second).
    pub delack_segments: u32,
    /// What ssthresh is computed from on a loss: FlightSize (RFC 5681 eq. 4) or cwnd (Linux,
    /// whose `ssthresh` hooks read `snd_cwnd`; a timeout during fast recovery then keeps the
    /// ssthresh that recovery set, as `tcp_enter_loss` does).
    pub ssthresh_basis: SsthreshBasis,
    /// Grow cwnd only when the sender is cwnd-limited (Linux `tcp_is_cwnd_limited`, in the
    /// spirit of RFC 7661): cwnd was full in the current window, or, in slow start, cwnd is
    /// below twice the most data outstanding in it.
    pub cwnd_limited_check: bool,
    /// Receiver quick-ACK mode (Linux `tcp_incr_quickack`, `TCP_MAX_QUICKACKS = 16`): the first
    /// this many data segments, those after a receive gap longer than `quickack_idle`, and those
    /// after a duplicate segment are acknowledged at once. 0: off.
    pub quickack: u32,
    /// Receive gap that re-enters quick-ACK mode (when `quickack_idle_rto` is off).
    pub quickack_idle: SimDuration,
    /// The gap that re-enters quick-ACK mode is the receiver's own RTO, as Linux has it
    /// (`tcp_event_data_recv`: `m > icsk_rto`): from the handshake's SYN-ACK round trip `m`,
    /// `m + max(2m, rto.min)` (`tcp_synack_rtt_meas`, first sample of `tcp_rtt_estimator`),
    /// `rto.initial` without a handshake; in whole jiffies with `timer_hz`.
    pub quickack_idle_rto: bool,
    /// Receiver SACK compression (Linux `tcp_comp_sack_nr`, 44; 0: off): while out-of-order
    /// data is held and quick-ACK mode is over, the first three ACKs for each `rcv_nxt` go at
    /// once, later ones wait for a timer of `comp_sack_delay` (at most the receiver's RTT / 20)
    /// plus `comp_sack_slack`, or until this many segments are held back.
    pub comp_sack: u32,
    /// The compressed-ACK timer's upper bound (Linux `tcp_comp_sack_delay_ns`, 1 ms).
    pub comp_sack_delay: SimDuration,
    /// The timer's slack (Linux `tcp_comp_sack_slack_ns`, 100 us; the kernel's timer fires at
    /// its end when nothing else wakes the CPU).
    pub comp_sack_slack: SimDuration,
    /// PAWS at the receiver (RFC 7323 §5.3 R1): with timestamps, a data segment whose TSval is
    /// older than TS.Recent by more than `paws_window` ticks of the sender's clock is discarded
    /// and answered with an immediate duplicate ACK (Linux `tcp_validate_incoming`,
    /// `tcp_paws_discard`, `tcp_send_dupack`). It bites when a retransmission fills the left
    /// edge, and so moves TS.Recent, while an older copy of later data is still in flight.
    pub paws: bool,
    /// How many ticks older than TS.Recent a TSval may be and still pass PAWS: 0 as RFC 7323
    /// writes it (`SEG.TSval < TS.Recent` fails), 1 in Linux (`TCP_PAWS_WINDOW`).
    pub paws_window: u32,
    /// The receiver's advertised window grows as Linux grows it (receive-buffer autotuning:
    /// `tcp_grow_window`, `tcp_rcv_space_adjust`), and a segment that grows it is ACKed at once;
    /// `rwnd` is then its upper bound. Off: the window is `rwnd` throughout.
    pub rcv_autotune: bool,
    /// Restart the retransmission timer when the first unacknowledged segment is resent by
    /// fast retransmit or loss recovery (Linux `tcp_xmit_retransmit_queue`); off: the timer is
    /// only started when it is not running (RFC 6298 (5.1)).
    pub rearm_rto_on_retransmit: bool,
    /// Restart the retransmission timer on an ACK that only SACKs, when the newly SACKed data
    /// was sent before the first unacknowledged segment was last (re)transmitted (Linux
    /// `tcp_clean_rtx_queue`); off: only cumulative ACKs restart it (RFC 6298 (5.3)).
    pub rearm_rto_on_sack: bool,
    /// RTT samples as the kernel takes them (Linux `tcp_ack_update_rtt`): from the send time
    /// of the oldest newly acknowledged segment that was never retransmitted, else of the
    /// oldest newly SACKed original (so an ACK that only SACKs gives a sample and clears the
    /// backoff too), else from the timestamp echo of an ACK that advances snd_una; off: only
    /// ACKs that advance snd_una give samples, from the timestamp echo (RFC 7323 RTTM) or
    /// from one timed segment per round trip (RFC 6298 §3, Karn's rule).
    pub kernel_rtt_samples: bool,
    /// The timers (retransmission, loss probe, RACK reordering, delayed ACK) fire as the kernel's
    /// do at this tick rate (`CONFIG_HZ`): the delay in whole jiffies, placed in the timer
    /// wheel, which fires no earlier and up to one level granule later (1 jiffy below 63
    /// jiffies, 8 below 504, 64 below 4032); the reordering timer adds Linux's 2 ms
    /// (`TCP_TIMEOUT_MIN_US`). Jiffies count from time zero. 0: timers fire exactly.
    pub timer_hz: u32,
    /// Open the connection with a handshake (SYN, SYN-ACK) before any data, as the kernel and
    /// ns-3 do; the SYN is retransmitted on the RTO (initial 1 s, backed off).
    pub handshake: bool,
    /// Spurious-retransmission detectors and the response to a detection.
    pub spurious: SpuriousConfig,
    /// The congestion control algorithm and its parameters.
    pub cc: CcConfig,
    /// RACK loss detection (RFC 8985 §6, Linux `tcp_recovery.c`): a segment is lost when a
    /// segment sent after it was delivered and its reordering window has passed. Replaces RFC
    /// 6675 `IsLost` in SACK recovery (Linux since 5.10 runs RACK alone). Needs the SACK
    /// variant.
    pub rack: bool,
    /// Tail loss probe (RFC 8985 §7, Linux `tcp_schedule_loss_probe`): one probe segment
    /// 2·SRTT after the last transmission, before the RTO. Needs SACK.
    pub tlp: bool,
    /// Proportional rate reduction (RFC 6937, PRR-SSRB as Linux `tcp_cwnd_reduction`) during
    /// SACK fast recovery, instead of `cwnd = ssthresh` at entry. Needs the SACK variant.
    pub prr: bool,
    /// Linux 3.10-4.x's `tcp_moderate_cwnd` in `tcp_try_undo_recovery`: a sender without SACK
    /// whose cumulative ACK reaches exactly the `high_seq` of a timeout's Loss state (also
    /// after a timestamp undo, which keeps that state without SACK) clamps cwnd to the
    /// packets in flight plus 3 (`tcp_max_burst`). Later kernels dropped the call (4.18 has it
    /// no more); docs/models.md, "Linux of the paper's time".
    pub moderate_cwnd: bool,
    /// Run ns-2.35's one-way agent and sink ([`crate::ns2`]) instead of this crate's RFC and
    /// Linux sender and receiver (the `ns2` profile). They read `variant`, `mss`, `rwnd`,
    /// `initial_window`, `initial_ssthresh`, `dupthresh`, `limited_transmit`,
    /// `block_fr_after_rto`, `handshake`, `delayed_ack`, `delack_timeout`, `sack` and `rto`.
    pub ns2: bool,
    /// With `ns2`: run ns-2.35's `Agent/TCP/Linux` with `select_ca` of `cc` (Reno too), not
    /// the Reno family of agents. CUBIC and Hybla run there whatever this says.
    pub ns2_linux_agent: bool,
}

/// See [`TcpConfig::ssthresh_basis`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SsthreshBasis {
    FlightSize,
    Cwnd,
}

impl TcpConfig {
    /// How slow start and congestion avoidance count ACKs (`abc`, `abc_limit`).
    pub fn ack_counting(&self) -> crate::cc::AckCounting {
        if self.abc {
            crate::cc::AckCounting::ByteCounting {
                limit_segments: self.abc_limit,
            }
        } else {
            crate::cc::AckCounting::PerAck
        }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            variant: Variant::NewReno,
            mss: 1448,
            initial_window: 10,
            initial_ssthresh: None,
            rwnd: 3 * 1024 * 1024,
            abc: false,
            abc_limit: 2,
            dupthresh: 3,
            limited_transmit: false,
            block_fr_after_rto: true,
            rto: RtoConfig::rfc6298(),
            timestamps: true,
            ts_tick: SimDuration::from_millis(1),
            sack: true,
            dsack: true,
            clear_sack_on_rto: true,
            delayed_ack: true,
            delack_timeout: SimDuration::from_millis(40),
            delack_ato: false,
            delack_segments: 2,
            ssthresh_basis: SsthreshBasis::FlightSize,
            cwnd_limited_check: false,
            quickack: 0,
            quickack_idle: SimDuration::from_secs(1),
            quickack_idle_rto: false,
            comp_sack: 0,
            comp_sack_delay: SimDuration::from_millis(1),
            comp_sack_slack: SimDuration::from_micros(100),
            paws: true,
            paws_window: 0,
            rcv_autotune: false,
            rearm_rto_on_retransmit: false,
            rearm_rto_on_sack: false,
            kernel_rtt_samples: false,
            timer_hz: 0,
            handshake: false,
            spurious: SpuriousConfig::default(),
            cc: CcConfig::Reno(crate::cc::RenoParams),
            rack: false,
            tlp: false,
            prr: false,
            moderate_cwnd: false,
            ns2: false,
            ns2_linux_agent: false,
        }
    }
}
