//! Spurious-retransmission detection: the detectors and what they report.
//!
//! A **loss-recovery episode** starts when the sender enters loss recovery: a fast retransmit,
//! or a retransmission timeout that is not a recurrence inside an RTO recovery already under
//! way. Each enabled detector watches the episode and returns at most one [`Verdict`]: the
//! episode was spurious (with the evidence), or it was genuine. A detector that never decides
//! leaves the episode undecided. Detectors only read ACKs and the sender's sequence state; they
//! never change cwnd or ssthresh. The sender (`sender.rs`) owns the undo ledger and applies the
//! flow's [`Response`] once per episode, whichever detector spoke first.
//!
//! * [`eifel`]: Eifel detection, RFC 3522 (timestamps);
//! * [`dsack`]: DSACK-based detection, RFC 3708;
//! * [`frto`]: F-RTO, RFC 5682 §2 (basic) and §3 (SACK-enhanced); unlike the other two it also
//!   decides what the sender transmits after a timeout, through the state the sender queries.
//!
//! Maturity: scripted packet tests pin the RFC steps; not validated against Linux.

pub mod dsack;
pub mod eifel;
pub mod frto;

/// The detection algorithms.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DetectorKind {
    /// RFC 3522.
    Eifel = 0,
    /// RFC 3708.
    Dsack = 1,
    /// RFC 5682.
    Frto = 2,
    /// The Linux kernel's undo rules (`tcp_input.c`).
    Linux = 3,
}

impl DetectorKind {
    pub const ALL: [DetectorKind; 4] = [
        DetectorKind::Eifel,
        DetectorKind::Dsack,
        DetectorKind::Frto,
        DetectorKind::Linux,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DetectorKind::Eifel => "eifel",
            DetectorKind::Dsack => "dsack",
            DetectorKind::Frto => "frto",
            DetectorKind::Linux => "linux",
        }
    }

    /// Whether the detector judges episodes of this kind (F-RTO only judges timeouts).
    pub fn judges(self, kind: EpisodeKind) -> bool {
        self != DetectorKind::Frto || kind == EpisodeKind::Timeout
    }
}

/// A set of detectors (any combination).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DetectorSet(u8);

impl DetectorSet {
    pub const EMPTY: DetectorSet = DetectorSet(0);

    pub fn with(self, d: DetectorKind) -> DetectorSet {
        DetectorSet(self.0 | 1 << d as u8)
    }
    pub fn contains(self, d: DetectorKind) -> bool {
        self.0 & (1 << d as u8) != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn iter(self) -> impl Iterator<Item = DetectorKind> {
        DetectorKind::ALL
            .into_iter()
            .filter(move |d| self.contains(*d))
    }
    /// Names joined by `+` in the fixed order eifel, dsack, frto, linux ("" for none).
    pub fn label(self) -> String {
        self.iter().map(|d| d.name()).collect::<Vec<_>>().join("+")
    }
}

/// Which F-RTO algorithm runs when F-RTO is enabled.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FrtoVariant {
    /// RFC 5682 §2.
    Basic,
    /// RFC 5682 §3 (needs SACK).
    SackEnhanced,
}

/// What the sender does once an episode is declared spurious.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// Detect and count only: congestion state and (for Eifel and DSACK) transmission are left
    /// as the conventional algorithm has them.
    None,
    /// The Eifel response algorithm, RFC 4015 (spurious timeouts only).
    Eifel,
    /// Linux-style full undo (`tcp_undo_cwnd_reduction`): cwnd and ssthresh from before the
    /// episode, congestion-control state restored, retransmission stopped.
    Undo,
}

impl Response {
    pub fn name(self) -> &'static str {
        match self {
            Response::None => "none",
            Response::Eifel => "eifel",
            Response::Undo => "undo",
        }
    }
}

/// Detectors and response of one flow.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SpuriousConfig {
    pub detectors: DetectorSet,
    pub frto: FrtoVariant,
    /// Whether the linux detector runs F-RTO after a timeout (Linux `tcp_frto` ≠ 0); false:
    /// conventional go-back-N and no F-RTO undo (`tcp_frto = 0`). The frto detector ignores it.
    pub linux_frto: bool,
    pub response: Response,
}

impl Default for SpuriousConfig {
    fn default() -> Self {
        SpuriousConfig {
            detectors: DetectorSet::EMPTY,
            frto: FrtoVariant::SackEnhanced,
            linux_frto: true,
            response: Response::None,
        }
    }
}

/// What started a loss-recovery episode.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EpisodeKind {
    Timeout,
    FastRetransmit,
}

/// The F-RTO step that decided.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FrtoStep {
    /// §2 step 2a / §3 step 2a: conventional recovery after the first ACK.
    Step2a,
    /// §2 step 2b / §3 step 2b without new data to send: conventional recovery.
    Step2bNoNewData,
    /// §2 step 3a / §3 step 3a.
    Step3a,
    /// §2 step 3b / §3 step 3b: spurious.
    Step3b,
}

/// Why a detector decided as it did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// RFC 3522 step 4: the acceptable ACK's TSecr against RetransmitTS (ticks).
    Timestamp { ts_ecr: u32, retransmit_ts: u32 },
    /// RFC 3522 step 5: the acceptable ACK carried a DSACK, or acknowledged all outstanding data
    /// from a receiver not known to send DSACKs.
    TimestampDsackGuard,
    /// RFC 3708 (B.1): every segment retransmitted in the episode (`retransmissions` of them,
    /// each retransmitted once) was reported by DSACK.
    Dsack { retransmissions: u32 },
    /// RFC 5682: the step that decided and the cumulative ACK it saw.
    Frto { step: FrtoStep, ack: u64 },
    /// The Linux undo rule that fired.
    Linux(LinuxRule),
}

/// The kernel's undo rules (`net/ipv4/tcp_input.c`), each named after the kernel function and
/// the MIB counter it bumps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LinuxRule {
    /// `tcp_process_loss` F-RTO: after a timeout, an ACK or SACK newly covers data sent before
    /// it and never retransmitted (`FLAG_ORIG_SACK_ACKED`): `TCPSpuriousRTOs`.
    Frto,
    /// `tcp_try_undo_loss` on an ACK advancing `snd_una` in the Loss state, or
    /// `tcp_try_undo_recovery` when the Loss state's `high_seq` is reached, with `tcp_may_undo`:
    /// `TCPLossUndo`.
    Loss,
    /// `tcp_try_undo_recovery` when fast recovery's `high_seq` is reached, with `tcp_may_undo`:
    /// `TCPFullUndo`.
    Full,
    /// `tcp_try_undo_partial`: a partial ACK in fast recovery echoes a timestamp older than the
    /// first retransmission and no retransmission is left in flight: `TCPPartialUndo`.
    Partial,
    /// `tcp_try_undo_dsack`: DSACKs have reported every retransmission since the undo marker
    /// (`undo_retrans == 0`), in fast recovery or after it: `TCPDSACKUndo`.
    Dsack,
}

impl LinuxRule {
    pub fn name(self) -> &'static str {
        match self {
            LinuxRule::Frto => "frto",
            LinuxRule::Loss => "loss",
            LinuxRule::Full => "full",
            LinuxRule::Partial => "partial",
            LinuxRule::Dsack => "dsack",
        }
    }
}

/// A detector's decision about the current episode.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Spurious(Evidence),
    Genuine(Evidence),
}

impl Verdict {
    pub fn is_spurious(&self) -> bool {
        matches!(self, Verdict::Spurious(_))
    }
}
