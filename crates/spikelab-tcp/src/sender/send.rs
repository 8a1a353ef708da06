//! The output path: what to send next (RFC 6675 `NextSeg()`, go-back-N, F-RTO new data), `SetPipe()`.

use super::*;

impl TcpSender {
    // ---- output -----------------------------------------------------------------------------

    /// The next segment to send at `now`, if any. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Transmit> {
        let t = self.next_transmit(now);
        if t.is_none() {
            self.pause(now);
        }
        t
    }

    /// The host stops asking for segments before [`TcpSender::poll_transmit`] returns `None`
    /// (TCP Small Queues: the flow has enough in its interface's queue). Ends the burst as
    /// `tcp_write_xmit` does whatever stopped it: a loss probe after new data is scheduled.
    pub fn pause(&mut self, now: SimTime) {
        if self.tlp_after_burst {
            self.tlp_after_burst = false;
            self.schedule_loss_probe(now, false);
        }
    }

    fn next_transmit(&mut self, now: SimTime) -> Option<Transmit> {
        if let Some(syn) = self.poll_syn(now) {
            return syn;
        }
        if let Some((seq, kind)) = self.pending.take() {
            return Some(self.transmit(now, seq, kind));
        }
        match self.state {
            CaState::Recovery if self.cfg.variant == Variant::Sack => {
                if self.cwnd < self.pipe + self.mss {
                    return None;
                }
                if self.cfg.rack {
                    // `transmit` counts the segment in pipe.
                    let (seq, _) = self.rack_next_seg()?;
                    return Some(self.transmit(now, seq, TxKind::Retransmit));
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
                // With RACK the SACKed segments free the room (below); RFC 3042's allowance
                // would count them twice.
                let limited =
                    self.state == CaState::Disorder && self.cfg.limited_transmit && !self.cfg.rack;
                if limited {
                    allowance += self.dupacks.min(2) as u64 * self.mss;
                }
                let end = seq + len - self.snd_una;
                if end > self.rwnd {
                    return None;
                }
                // With RACK (the kernel's loss detection) the window counts what Linux's
                // `tcp_packets_in_flight` does: SACKed segments have left the network, so each
                // SACK frees room for new data (the kernel needs no RFC 3042 limit).
                let used = if self.cfg.rack {
                    end - self.board.sacked_bytes()
                } else {
                    end
                };
                if used > allowance {
                    return None;
                }
                // Beyond cwnd in Disorder: RFC 3042 transmissions, left out of FlightSize.
                let beyond = self.state == CaState::Disorder && (limited || self.cfg.rack);
                if beyond && end > self.cwnd {
                    self.limited_sent += len;
                }
                Some(self.transmit(now, seq, TxKind::Retransmit))
            }
        }
    }

    /// Sends the segment at `seq`; `kind` is corrected to `New` for bytes never sent before.
    pub(super) fn transmit(&mut self, now: SimTime, seq: u64, mut kind: TxKind) -> Transmit {
        let len = self.seg_len(seq);
        debug_assert!(len > 0 && seq <= self.snd_max);
        let rack_recovery = self.cfg.rack && self.state == CaState::Recovery;
        self.prr_on_send();
        if seq == self.snd_max {
            self.board.push_new(len as u32, now);
            self.snd_max += len;
            if kind != TxKind::Tlp {
                kind = TxKind::New;
            }
            if !self.cfg.timestamps && self.timed.is_none() {
                self.timed = Some((seq + len, now));
            }
            if rack_recovery {
                self.pipe += len;
            }
        } else {
            if kind == TxKind::New {
                kind = TxKind::Retransmit;
            }
            if let Some(m) = self.board.get_mut(seq, self.mss) {
                m.tx_count = m.tx_count.saturating_add(1);
                m.xmit_time = now;
                if !m.retrans && !m.sacked && rack_recovery {
                    self.pipe += len;
                }
                m.retrans = true;
            }
            self.stats.retx_segments += 1;
            if self.ledger.retrans_stamp.is_none() {
                self.ledger.retrans_stamp = Some(self.ts_now(now));
            }
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
        if self.cfg.cwnd_limited_check {
            self.cwnd_validate();
        }
        let head_again = matches!(kind, TxKind::Retransmit | TxKind::FastRetransmit)
            && seq == self.snd_una
            && self.cfg.rearm_rto_on_retransmit;
        if self.rto_deadline.is_none() || head_again {
            // Linux `tcp_xmit_retransmit_queue` also restarts the timer when it resends the
            // first unacknowledged segment (RFC 6298 §5.1 only starts a stopped one).
            self.rto_deadline = Some(self.rto_at(now));
        }
        if kind == TxKind::New && self.cfg.tlp {
            // Linux tcp_write_xmit: a loss probe after new data (not after the probe itself),
            // scheduled when the burst ends.
            self.tlp_after_burst = true;
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
                syn: false,
            },
            kind,
        }
    }

    /// RFC 6675 `NextSeg()`. Rules 1 and 3 both take the lowest unSACKed segment at or
    /// above HighRxt and below the highest SACKed byte; since `IsLost` holds for everything
    /// below one boundary, that segment answers rule 1 when it is lost, and no higher one can.
    pub(super) fn next_seg(&self) -> Option<(u64, NextSegRule)> {
        let highest_sacked = self.board.highest_sacked_end();
        let candidate = self
            .board
            .first_unsacked_from(self.high_rxt)
            .filter(|&seq| highest_sacked.is_some_and(|h| seq < h));
        let (lost_end, _) = match candidate {
            Some(_) => self.board.lost_boundary(self.cfg.dupthresh, self.mss),
            None => (0, 0),
        };
        let rule1 = candidate.filter(|&seq| seq < lost_end);
        let rule3 = candidate;
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

    /// RFC 6675 `NextSeg()` with RACK's marks (RFC 8985 §9.2 leaves recovery to RFC 6675):
    /// rule 1, the lowest segment RACK marked lost and not retransmitted since; else rule 2,
    /// new data the receive window allows. Rules 3 and 4 are left out, as in Linux
    /// `tcp_xmit_retransmit_queue`, which retransmits only lost segments.
    pub(super) fn rack_next_seg(&self) -> Option<(u64, NextSegRule)> {
        if let Some(s) = self.board.first_lost() {
            return Some((s, NextSegRule::Lost));
        }
        let len = self.seg_len(self.snd_max);
        if len > 0 && self.snd_max + len <= self.snd_una + self.rwnd {
            return Some((self.snd_max, NextSegRule::NewData));
        }
        None
    }

    /// RFC 6675 `SetPipe()`: every segment not SACKed counts once if it is not lost and once
    /// more if it was retransmitted (below HighRxt). With RACK, "lost" is RACK's mark and
    /// "retransmitted" a retransmission in flight that RACK has not judged lost.
    pub(super) fn set_pipe(&mut self) {
        if self.cfg.rack {
            self.pipe = self.board.rack_pipe();
            return;
        }
        let (_, not_lost) = self.board.lost_boundary(self.cfg.dupthresh, self.mss);
        self.pipe = not_lost + self.board.unsacked_below(self.high_rxt);
    }
}
