//! ACK processing: cumulative and duplicate ACKs, SACK and DSACK, RTT samples, detector input, window growth.

use super::*;
use crate::cc::CaEvent;
use crate::spurious::LinuxRule;

impl TcpSender {
    // ---- input ------------------------------------------------------------------------------

    /// Processes an ACK arriving at `now`.
    pub fn on_ack(&mut self, now: SimTime, seg: &Segment) {
        self.last_rtt_sample = None;
        self.ack_rtt = AckRtt::default();
        if !self.established() {
            self.on_synack(now, seg);
            return;
        }
        self.rwnd = seg.window;
        if let Some(ts) = seg.ts {
            self.ts_recent = ts.val;
        }
        let ack = seg.ack;
        if ack > self.snd_max || ack < self.snd_una {
            return;
        }
        let prior_snd_una = self.snd_una;
        let prior_undos = self.stats.undo_count;
        let frto_recover = self.frto.as_ref().and_then(|f| f.recover());
        let mut newly_sacked = 0;
        let mut dsack = false;
        let mut dsack_block = None;
        let mut sack_above_recover = false;
        let mut newly_sacked_below_recover = false;
        let mut linux_ack = linux_undo::LinuxAck::default();
        if !self.cfg.sack {
            linux_ack.orig_acked = self.linux_orig_acked(ack, &[]);
        }
        let prior_fack = self.rack.as_ref().map_or(0, |r| r.fack);
        if ack > self.snd_una {
            let ecr = seg.ts.map(|ts| ts.ecr).filter(|&e| e != 0);
            self.rack_on_cum_ack(now, ack, prior_fack, ecr);
        }
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
            linux_ack.orig_acked = self.linux_orig_acked(ack, &blocks[dsack as usize..]);
            for (i, &(s, e)) in blocks.iter().enumerate() {
                if (i == 0 && dsack) || e <= ack {
                    continue;
                }
                let n = self.mark_sacked(now, s.max(ack), e, prior_fack);
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
        // Bytes delivered by this ACK, each segment once (Linux `delivered` delta).
        let mut delivered = newly_sacked;
        if ack > self.snd_una {
            acked = ack - self.snd_una;
            sample = match (self.cfg.timestamps, seg.ts, self.timed) {
                (true, Some(ts), _) => Some(self.ts_rtt(now, ts.ecr)),
                (false, _, Some((end, sent))) if ack >= end => {
                    self.timed = None;
                    Some(now - sent)
                }
                _ => None,
            };
            self.snd_una = ack;
            let sacked_before = self.board.sacked_bytes();
            let ack_rtt = &mut self.ack_rtt;
            self.board.advance_visit(ack, |m| {
                if m.tx_count > 1 {
                    ack_rtt.retrans_acked = true;
                } else if !m.sacked {
                    let t = m.xmit_time;
                    ack_rtt.last_ackt = Some(t);
                    ack_rtt.first_ackt = Some(ack_rtt.first_ackt.map_or(t, |f| f.min(t)));
                }
            });
            delivered += acked - (sacked_before - self.board.sacked_bytes());
            if self.snd_nxt < ack {
                self.snd_nxt = ack;
            }
            self.high_rxt = self.high_rxt.max(ack);
            self.rto_without_progress = false;
        }
        if self.cfg.kernel_rtt_samples {
            // Linux tcp_ack_update_rtt: the send-time RTT of the oldest newly acknowledged
            // segment never retransmitted (none if a retransmitted one was acknowledged),
            // else of the oldest newly SACKed original, else the timestamp echo of an ACK
            // that advanced snd_una.
            let a = self.ack_rtt;
            let seq_rtt = a
                .first_ackt
                .filter(|_| !a.retrans_acked)
                .map(|t| now.since(t));
            let sack_rtt = a.first_sackt.map(|t| now.since(t));
            let ts_rtt = sample.filter(|_| self.cfg.timestamps);
            sample = seq_rtt.or(sack_rtt).or(ts_rtt);
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
            if !self.cfg.spurious.detectors.contains(DetectorKind::Frto) {
                // Running for the linux detector only: the kernel leaves F-RTO once the
                // timeout's loss is found real; its own rule gives the verdict.
                if frto_action.verdict.is_some_and(|v| !v.is_spurious()) {
                    self.ledger.linux_frto = false;
                }
                frto_action.verdict = None;
            }
            if let Some(v) = frto_action.verdict {
                if v.is_spurious() {
                    // RFC 5682 §2 step 3b: recover = SND.UNA (fast retransmit allowed again).
                    self.recover = Some(self.snd_una);
                }
                spurious_by = spurious_by.or(self.record_verdict(now, DetectorKind::Frto, v));
            }
        }
        linux_ack.dsack = dsack;
        self.linux_note_partial_reordering(seg, acked, prior_snd_una);
        let linux_rule = self.linux_undo_rule(seg, acked, linux_ack);
        if let Some(rule) = linux_rule {
            spurious_by = spurious_by.or(self.linux_verdict(now, rule));
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

        let a = self.ack_rtt;
        let from = |t: Option<SimTime>| t.map(|t| now.since(t));
        self.ack_rtt.ca_rtt = match (a.last_sackt, a.last_ackt, a.retrans_acked) {
            (Some(_), _, _) => from(a.last_sackt),
            (None, Some(_), false) => from(a.last_ackt),
            // No send-time sample: the timestamp one, if any (tcp_ack_update_rtt).
            _ => sample.filter(|_| self.cfg.timestamps && acked > 0),
        };
        if let Some(r) = sample {
            if self.eifel_rtt_after.is_some_and(|h| ack > h) {
                self.eifel_rtt_after = None;
                self.rtt.restart_after_spurious_timeout(
                    self.ledger.srtt_prev,
                    self.ledger.rttvar_prev,
                    r,
                );
            } else {
                // The kernel's window marker is its snd_nxt, the highest sequence sent (a
                // timeout does not rewind it there): ours is snd_max.
                self.rtt.on_sample(r, self.snd_una, self.snd_max);
            }
            self.note_rtt_sample(r);
        }
        if acked > 0 || is_dupack {
            self.cc_pkts_acked(now, acked, is_dupack);
        }
        self.rack_update_reo_wnd(dsack);
        self.tlp_on_ack(
            now,
            ack,
            dsack_block.map(|b| b.end),
            acked > 0 || newly_sacked > 0,
        );
        if acked > 0 {
            self.moderate_at_loss_high(self.stats.undo_count != prior_undos);
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
                DetectorKind::Linux => {
                    self.undo_by_linux(now, acked, linux_rule.unwrap_or(LinuxRule::Full))
                }
            }
        } else if frto_action.verdict.is_some_and(|v| v.is_spurious())
            && (self.state == CaState::Loss || self.snd_nxt < self.snd_max)
        {
            // No response (or one already applied): F-RTO's step 3b still ends the RTO
            // recovery without the retransmissions its detection replaced.
            self.stop_retransmitting(now);
        }
        let (newly_lost, reorder_armed) = self.rack_on_ack(now);
        if acked == 0 && !reorder_armed {
            self.rearm_rto_on_old_sack(now);
        }
        if self.state == CaState::Recovery && self.cfg.variant == Variant::Sack {
            self.set_pipe();
            self.prr_on_ack(delivered, acked > 0, newly_lost > 0);
        }
        if self.snd_una == self.snd_max {
            self.early_timer = None;
        } else if acked > 0 && !reorder_armed {
            // Linux `tcp_set_xmit_timer` on FLAG_SET_XMIT_TIMER unless RACK armed its timer.
            self.schedule_loss_probe(now, true);
        }
    }

    /// Retransmitted segments at or above `marker` that a DSACK block `[s, e)` reports:
    /// retransmitted segments in the scoreboard, or, for a block wholly below `snd_una` (no
    /// longer in the scoreboard), its length in segments above the undo marker (Linux
    /// `tcp_check_dsack` "dumb counting").
    pub(super) fn dsacked_retransmissions(
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
    pub(super) fn record_verdict(
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

    /// Linux 3.10-4.x `tcp_try_undo_recovery` for a sender without SACK (`cfg.moderate_cwnd`):
    /// the ACK that brings SND.UNA exactly to the Loss state's `high_seq` keeps the state one
    /// ACK longer and clamps cwnd to the packets in flight plus `tcp_max_burst` (3 segments;
    /// `tcp_moderate_cwnd`), before this ACK's growth (`tcp_fastretrans_alert` runs before
    /// `tcp_cong_control`). An ACK that undid the timeout (`tcp_try_undo_loss`) returns before
    /// the check. No SACK: nothing is SACKed or marked lost once the segments below `high_seq`
    /// are acknowledged, so the flight is SND.MAX − SND.UNA.
    fn moderate_at_loss_high(&mut self, undone_now: bool) {
        let Some(high) = self.loss_high else {
            return;
        };
        if self.snd_una > high {
            self.loss_high = None;
        } else if self.snd_una == high && !undone_now {
            let clamp = self.snd_max - self.snd_una + 3 * self.mss;
            if clamp < self.cwnd {
                self.cwnd = clamp;
                self.stats.moderate_cwnd_cuts += 1;
            }
        }
    }

    pub(super) fn on_new_ack(&mut self, now: SimTime, acked: u64) {
        self.dupacks = 0;
        self.limited_sent = 0;
        let mut restart_timer = true;
        match self.state {
            CaState::Recovery => match self.cfg.variant {
                Variant::Reno => {
                    self.cwnd = self.ssthresh;
                    self.set_ca_state(now, CaState::Open);
                    self.cc_event(now, CaEvent::CompleteCwr);
                }
                Variant::NewReno => {
                    if self.recover.is_none_or(|r| self.snd_una >= r) {
                        let flight = self.snd_max - self.snd_una;
                        self.cwnd = self.ssthresh.min(flight.max(self.mss) + self.mss);
                        self.set_ca_state(now, CaState::Open);
                        self.cc_event(now, CaEvent::CompleteCwr);
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
                        if self.cfg.prr {
                            // Linux tcp_end_cwnd_reduction.
                            self.cwnd = self.ssthresh.max(self.mss);
                        }
                        self.set_ca_state(now, CaState::Open);
                        self.cc_event(now, CaEvent::CompleteCwr);
                    }
                }
            },
            CaState::Loss => {
                self.grow(acked);
                if self.recover.is_none_or(|r| self.snd_una >= r) {
                    self.set_ca_state(now, CaState::Open);
                }
            }
            CaState::Open | CaState::Disorder => {
                self.set_ca_state(now, CaState::Open);
                self.grow(acked);
            }
            // Linux `tcp_fastretrans_alert`: CWR ends once something above `high_seq` is
            // acknowledged (`tcp_complete_cwr`); until then no growth, and `tcp_cwnd_down`.
            CaState::Cwr => {
                if self.snd_una > self.cwr_high {
                    self.cwnd = self.cwnd.min(self.ssthresh).max(self.mss);
                    self.set_ca_state(now, CaState::Open);
                    self.cc_event(now, CaEvent::CompleteCwr);
                } else {
                    self.cwnd_down();
                }
            }
        }
        if self.snd_una == self.snd_max {
            self.rto_deadline = None;
        } else if restart_timer {
            self.rto_deadline = Some(self.rto_at(now));
        }
    }

    /// The sender's own interface queue refused a segment: Linux 2.6 `tcp_transmit_skb` on a
    /// local drop calls `tcp_enter_cwr(sk, 1)`. From Open or Disorder: ssthresh as for a loss,
    /// `cwnd = min(cwnd, in flight)` (the refused segment, which this sender counts as sent,
    /// goes when the queue has room; Linux's `in flight + 1` counts it unsent), the undo
    /// marker cleared, state CWR until data above what is sent now is acknowledged. Nothing is
    /// retransmitted. In any other state the reduction under way stands.
    pub fn local_congestion(&mut self, now: SimTime) {
        if !matches!(self.state, CaState::Open | CaState::Disorder) {
            return;
        }
        self.stats.local_cwr_count += 1;
        let flight = (self.snd_max - self.snd_una).saturating_sub(self.limited_sent);
        let basis = self.ssthresh_basis(flight);
        let w = self.window();
        self.ssthresh = self.cc.ssthresh(&w, basis);
        self.cwnd = self.cwnd.min(self.inflight()).max(self.mss);
        self.ledger.undo_marker = None;
        self.cwr_high = self.snd_max;
        self.cwr_cnt = 0;
        self.set_ca_state(now, CaState::Cwr);
    }

    /// Linux 2.6 `tcp_cwnd_down`, on each ACK that makes progress in CWR: one segment less
    /// every second ACK while cwnd is above ssthresh, and never more than in flight + 1.
    pub(super) fn cwnd_down(&mut self) {
        let decr = self.cwr_cnt + 1;
        self.cwr_cnt = decr & 1;
        if decr >> 1 > 0 && self.cwnd > self.ssthresh {
            self.cwnd = self.cwnd.saturating_sub(self.mss);
        }
        self.cwnd = self.cwnd.min(self.inflight() + self.mss).max(self.mss);
    }

    pub(super) fn grow(&mut self, acked: u64) {
        if !self.cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if self.rto_slow_start {
            if self.cwnd >= self.ssthresh {
                self.rto_slow_start = false;
            } else if matches!(
                self.cfg.ack_counting(),
                crate::cc::AckCounting::ByteCounting { limit_segments } if limit_segments <= 2
            ) {
                // RFC 3465 §2.3: in the slow start after a timeout, where one ACK often covers
                // much data sent before it, L = 1·SMSS. (A limit above 2 is outside RFC 3465,
                // Linux's uncapped counting, which has no such rule.)
                acked = acked.min(self.mss);
            }
        }
        let mut w = self.window();
        self.cc.cong_avoid(&mut w, acked);
        self.cwnd = w.cwnd;
    }

    pub(super) fn on_dupack(&mut self, now: SimTime) {
        match self.state {
            CaState::Open | CaState::Disorder | CaState::Loss | CaState::Cwr => {
                if self.state == CaState::Cwr {
                    // A duplicate ACK that reports delivery (SACK) is progress too.
                    self.cwnd_down();
                }
                self.dupacks += 1;
                if self.state == CaState::Open {
                    self.set_ca_state(now, CaState::Disorder);
                }
                // With RACK, only RACK's marks start recovery (Linux `tcp_time_to_recover`).
                let trigger = !self.cfg.rack
                    && (self.dupacks == self.cfg.dupthresh
                        || (self.cfg.variant == Variant::Sack
                            && self
                                .board
                                .is_lost(self.snd_una, self.cfg.dupthresh, self.mss)));
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
}
