//! The Linux kernel's undo rules as a detector of their own (`spurious = ["linux"]`).
//!
//! The kernel does not run RFC 3522, RFC 3708 or RFC 5682 as written; it keeps one undo ledger
//! per loss episode (`undo_marker`, `undo_retrans`, `retrans_stamp`, `prior_cwnd`,
//! `prior_ssthresh`) and checks it at fixed points of `tcp_fastretrans_alert`
//! (`net/ipv4/tcp_input.c`). The rules, by congestion state of the ACK's arrival:
//!
//! * **Loss** (after a timeout): an ACK advancing `snd_una` with `tcp_may_undo` undoes
//!   (`tcp_try_undo_loss`, `TCPLossUndo`); with F-RTO on (`tcp_frto`, default 2), an ACK or SACK
//!   that newly covers data sent before the timeout and never retransmitted undoes at once
//!   (`FLAG_ORIG_SACK_ACKED`, `TCPSpuriousRTOs`), on the first ACK as well as the second,
//!   even when the retransmitted head was really lost. What the sender transmits meanwhile
//!   follows the SACK-enhanced F-RTO (new data on step 2b), which the kernel's `tcp_process_loss`
//!   implements; the kernel drops F-RTO (no undo by this rule) once it finds the loss real.
//! * **Recovery** (fast recovery): reaching `high_seq` with `tcp_may_undo` undoes
//!   (`tcp_try_undo_recovery`, `TCPFullUndo`); a partial ACK echoing a timestamp older than the
//!   first retransmission undoes when no retransmission is left in flight
//!   (`tcp_try_undo_partial`, `TCPPartialUndo`); DSACKs covering every retransmission undo
//!   (`tcp_try_undo_dsack`, `TCPDSACKUndo`).
//! * **Open / Disorder**: an ACK with a DSACK that brings `undo_retrans` to zero undoes the last
//!   episode even after its recovery ended (`tcp_try_undo_dsack`): the ledger stays until the
//!   next episode or an undo.
//!
//! `tcp_may_undo` = an undo marker and either no retransmission left unreported by DSACK
//! (`undo_retrans == 0`) or `tcp_packet_delayed`: the ACK's TSecr is older than the first
//! retransmission of the episode (`retrans_stamp`). Unlike RFC 3708 there is no rule (A.1),
//! (A.3) or (A.4): a segment retransmitted twice needs two DSACKs. Unlike RFC 3522 the timestamp
//! test is made on every ACK of those points, not only on the first acceptable one.
//!
//! The response is the flow's (`response = "undo"`: `tcp_undo_cwnd_reduction`). The detector
//! only ever says "spurious": the kernel can still undo an episode late (a DSACK in Open state),
//! so an episode it never undid is scored as undecided.
//!
//! Maturity: scripted packet tests pin each rule; whole runs are compared with the kernel by
//! `spikelab fidelity`. Simplified: a partial ACK from a delayed original marks reordering
//! seen for RACK but does not raise the reordering degree (`tp->reordering`), no ECN.

use super::*;
use crate::spurious::{Evidence, LinuxRule};

/// What the Linux rules read from one ACK, taken before the ACK changes the scoreboard.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct LinuxAck {
    /// The ACK or one of its SACK blocks newly covers an original transmission sent before the
    /// timeout (Linux `FLAG_ORIG_SACK_ACKED`).
    pub orig_acked: bool,
    /// The ACK carried a DSACK block.
    pub dsack: bool,
}

impl TcpSender {
    /// Whether the linux detector runs.
    pub(super) fn linux_undo_on(&self) -> bool {
        self.cfg.spurious.detectors.contains(DetectorKind::Linux)
    }

    /// `FLAG_ORIG_SACK_ACKED` for an ACK up to `ack` with SACK `blocks` (DSACK excluded by the
    /// caller), read before the scoreboard is updated; only needed while F-RTO may undo.
    pub(super) fn linux_orig_acked(&self, ack: u64, blocks: &[(u64, u64)]) -> bool {
        if !(self.linux_undo_on() && self.state == CaState::Loss && self.ledger.linux_frto) {
            return false;
        }
        let Some(limit) = self.recover else {
            return false;
        };
        self.board
            .has_unreported_original(self.snd_una, ack.max(self.snd_una), limit)
            || blocks
                .iter()
                .any(|&(s, e)| self.board.has_unreported_original(s.max(ack), e, limit))
    }

    /// Linux `tcp_packet_delayed`: the ACK echoes a timestamp older than the episode's first
    /// retransmission.
    fn linux_packet_delayed(&self, seg: &Segment) -> bool {
        let (Some(ts), Some(stamp)) = (seg.ts, self.ledger.retrans_stamp) else {
            return false;
        };
        self.cfg.timestamps && ts.ecr != 0 && (ts.ecr.wrapping_sub(stamp) as i32) < 0
    }

    /// Linux `tcp_try_undo_partial`'s first step: a partial ACK in fast recovery whose echoed
    /// timestamp predates the episode's first retransmission (the hole was filled by the
    /// delayed original) is evidence of reordering (`tcp_check_sack_reordering`), whether or not
    /// the episode can be undone yet: RACK's reordering window opens from then on
    /// (`reord_seen`), so the next segments of the same reordering are not marked lost at once.
    pub(super) fn linux_note_partial_reordering(
        &mut self,
        seg: &Segment,
        acked: u64,
        prior_snd_una: u64,
    ) {
        let partial = acked > 0 && self.recover.is_some_and(|r| self.snd_una < r);
        if !(self.linux_undo_on()
            && self.state == CaState::Recovery
            && partial
            && self.ledger.undo_marker.is_some()
            && self.linux_packet_delayed(seg))
        {
            return;
        }
        if let Some(rack) = self.rack.as_mut() {
            if prior_snd_una < rack.fack {
                rack.reordering_seen = true;
            }
        }
    }

    /// The rule that undoes the current episode on this ACK, if any. Called after the ACK has
    /// moved `snd_una` and the DSACK accounting, before the state machine reacts to it, so
    /// `self.state` is the state the ACK found.
    pub(super) fn linux_undo_rule(
        &self,
        seg: &Segment,
        acked: u64,
        la: LinuxAck,
    ) -> Option<LinuxRule> {
        if !self.linux_undo_on() || self.ledger.undo_marker.is_none() {
            return None;
        }
        if self.episode.is_none_or(|e| e.responded) {
            return None;
        }
        let advanced = acked > 0;
        // `high_seq` reached; Reno keeps no `recover` and leaves recovery on any new ACK.
        let recovered = match self.recover {
            Some(r) => self.snd_una >= r,
            None => advanced,
        };
        let all_dsacked = self.ledger.undo_retrans == 0;
        let may_undo = || all_dsacked || self.linux_packet_delayed(seg);
        match self.state {
            CaState::Loss => {
                if (advanced || recovered) && may_undo() {
                    Some(LinuxRule::Loss)
                } else if la.orig_acked {
                    Some(LinuxRule::Frto)
                } else {
                    None
                }
            }
            CaState::Recovery => {
                if recovered && may_undo() {
                    Some(LinuxRule::Full)
                } else if advanced
                    && !recovered
                    && self.linux_packet_delayed(seg)
                    && self.board.retransmitted_in_flight() == 0
                {
                    Some(LinuxRule::Partial)
                } else if all_dsacked {
                    Some(LinuxRule::Dsack)
                } else {
                    None
                }
            }
            CaState::Open | CaState::Disorder | CaState::Cwr => {
                (la.dsack && all_dsacked).then_some(LinuxRule::Dsack)
            }
        }
    }

    /// Records a linux verdict; returns the detector for the response.
    pub(super) fn linux_verdict(&mut self, now: SimTime, rule: LinuxRule) -> Option<DetectorKind> {
        self.record_verdict(
            now,
            DetectorKind::Linux,
            Verdict::Spurious(Evidence::Linux(rule)),
        )
    }
}
