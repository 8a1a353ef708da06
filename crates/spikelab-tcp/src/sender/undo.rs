//! Loss-recovery episodes, the undo ledger and the responses to a detected spurious retransmission.

use super::*;
use crate::spurious::LinuxRule;

impl TcpSender {
    // ---- the undo ledger and the responses ----------------------------------------------------

    /// Opens a new episode and, unless a fast recovery is being turned into an RTO recovery
    /// (Linux keeps the ledger of the first reduction then), fills the Linux part of the ledger
    /// before cwnd and ssthresh change; the RFC 4015 part is filled only by a timeout that
    /// initiates an RTO recovery.
    pub(super) fn start_episode(&mut self, now: SimTime, kind: EpisodeKind) {
        let keep_ledger = kind == EpisodeKind::Timeout
            && self.state == CaState::Recovery
            && self.ledger.undo_marker.is_some();
        if !keep_ledger {
            let prev = std::mem::take(&mut self.ledger);
            self.ledger = UndoLedger {
                prior_cwnd: self.cwnd,
                prior_ssthresh: self.ssthresh.max(self.cwnd / 2 + self.cwnd / 4),
                undo_marker: Some(self.snd_una),
                // Linux `tcp_init_undo`: the retransmissions still in flight (`retrans_out`)
                // must be DSACKed too before this episode may be undone on DSACKs.
                undo_retrans: self.board.retransmitted_in_flight() as u32,
                cc: self.cc.save_state(),
                retrans_stamp: None,
                linux_frto: false,
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
                RtoAlgorithm::Ns2 { tick, .. } => tick,
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

    /// Undo entry point for the Linux rules (`linux_undo.rs`). A connection without SACK that
    /// undoes a timeout on a timestamp (`rule` Loss, not F-RTO) stays in the kernel's Loss
    /// state until something above `high_seq` is acknowledged (`tcp_try_undo_loss` opens only
    /// for `frto_undo || tcp_is_sack`): the RFC 6582 block on fast retransmit is kept, so a
    /// segment lost below `high_seq` waits for the next timeout.
    pub fn undo_by_linux(&mut self, now: SimTime, acked: u64, rule: LinuxRule) {
        let keep_block = rule == LinuxRule::Loss && !self.cfg.sack;
        let (recover, loss_high) = (self.recover, self.loss_high);
        self.respond(now, DetectorKind::Linux, false, acked);
        if keep_block && self.cfg.spurious.response == Response::Undo {
            self.recover = recover;
            self.loss_high = loss_high;
        }
    }

    /// Applies the flow's response to a spurious episode, once. With `Response::None` nothing
    /// changes and the detectors go on independently.
    pub(super) fn respond(&mut self, now: SimTime, d: DetectorKind, late: bool, acked: u64) {
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
                        self.stop_retransmitting(now);
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
                    self.stop_retransmitting(now);
                }
                // Back in Open as if the episode had not happened: the RFC 6582 block on fast
                // retransmit after a timeout no longer applies (Linux leaves the Loss state).
                // F-RTO has set `recover = SND.UNA` itself (RFC 5682 step 3b).
                if d != DetectorKind::Frto {
                    self.recover = None;
                }
            }
        }
        self.rto_slow_start = false; // the timeout's slow start (RFC 3465 §2.3) is reversed
        self.ledger.undo_marker = None;
        self.loss_high = None; // the kernel opens the Loss state (kept without SACK: undo_by_linux)
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
    pub(super) fn eifel_response_applies(&self, ep: &Episode) -> bool {
        ep.kind == EpisodeKind::Timeout && self.ledger.rfc4015_episode == Some(ep.id)
    }

    /// Leaves loss recovery without retransmitting more: `SND.NXT = SND.MAX`, state Open.
    pub(super) fn stop_retransmitting(&mut self, now: SimTime) {
        self.snd_nxt = self.snd_max;
        self.set_ca_state(now, CaState::Open);
        self.dupacks = 0;
        if matches!(self.pending, Some((_, TxKind::Retransmit))) {
            self.pending = None;
        }
    }
}
