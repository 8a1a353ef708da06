//! The retransmission timer (RFC 6298 §5) and the early timer (RFC 8985 loss probe or RACK
//! reordering timer), which fires first when both are due.

use super::*;

impl TcpSender {
    /// Linux `tcp_clean_rtx_queue` (`rearm_rto_on_sack`): an ACK that only SACKs restarts the
    /// retransmission timer when its RTT sample comes from data sent before the first
    /// unacknowledged segment was last (re)transmitted (`sack_rtt_us` longer than the time
    /// since then): the SACKs of a flight still arriving keep the timer away from the
    /// retransmission they preceded, while SACKs of data sent after it do not extend it.
    pub(super) fn rearm_rto_on_old_sack(&mut self, now: SimTime) {
        if !self.cfg.rearm_rto_on_sack
            || self.snd_una == self.snd_max
            || self.rto_deadline.is_none()
        {
            return;
        }
        let Some(first) = self.ack_rtt.first_sackt else {
            return;
        };
        if self.head_xmit_time().is_some_and(|h| first < h) {
            self.rto_deadline = Some(self.rto_at(now));
        }
    }

    /// When a timer armed now for `delay` fires: exactly, or on the kernel's clock with
    /// `timer_hz` (whole jiffies, timer-wheel buckets).
    #[inline]
    pub(super) fn timer_at(&self, now: SimTime, delay: SimDuration) -> SimTime {
        jiffies::timer_at(now, delay, self.cfg.timer_hz)
    }

    /// When the retransmission timer armed now fires (with `timer_hz`, the kernel's RTO in
    /// whole jiffies, shifted by the backoff).
    #[inline]
    pub(super) fn rto_at(&self, now: SimTime) -> SimTime {
        match self.cfg.timer_hz {
            0 => now + self.rtt.rto(),
            hz => jiffies::timer_fires(now, self.rtt.rto_ticks(hz), hz),
        }
    }

    /// When the first unacknowledged segment was last (re)transmitted.
    pub(super) fn head_xmit_time(&self) -> Option<SimTime> {
        self.board.get(self.snd_una, self.mss).map(|m| m.xmit_time)
    }

    /// Fires the early timer and then the retransmission timer, each if it is due.
    pub fn on_timer(&mut self, now: SimTime) {
        if let Some(t) = self.early_timer.filter(|t| now >= t.deadline()) {
            match t {
                EarlyTimer::LossProbe(_) => self.on_loss_probe(now),
                EarlyTimer::Reorder(_) => self.on_reorder_timeout(now),
            }
        }
        let Some(deadline) = self.rto_deadline else {
            return;
        };
        if now < deadline {
            return;
        }
        if !self.established() {
            self.syn_timeout(now);
            return;
        }
        if self.snd_max == self.snd_una {
            self.rto_deadline = None;
            return;
        }
        self.stats.rto_count += 1;
        // Paper 003 §4.5's T0: the retransmission timeout that expired (backed off as armed).
        self.stats.rto_wait_ns += self.rtt.rto().as_nanos();
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
            self.ledger.linux_frto = f.on_timeout(&timeout);
            if self.linux_undo_on() {
                // Linux tcp_enter_loss: F-RTO for a timeout that begins an episode from Open or
                // Disorder, and for every backed-off one (icsk_retransmits > 0), also when the
                // episode began in fast recovery.
                // (The kernel clears icsk_retransmits on an ACK that advances snd_una: a timeout
                // again without progress, not a backed-off timer, which only an RTT sample resets.)
                self.ledger.linux_frto =
                    matches!(self.state, CaState::Open | CaState::Disorder) || recurring;
            }
        }
        self.rto_without_progress = true;
        self.frto_budget = 0;
        // Linux `tcp_enter_loss` keeps the ssthresh a fast recovery under way has set.
        let keeps_recovery_ssthresh = self.cfg.ssthresh_basis == crate::SsthreshBasis::Cwnd
            && self.state == CaState::Recovery;
        if !recurring && !keeps_recovery_ssthresh {
            // RFC 5681 §3.1: ssthresh is held when the segment (the one at SND.UNA) was already
            // retransmitted by the timer, i.e. this timeout repeats one without progress since;
            // an ACK that advanced SND.UNA makes the next timeout's segment a new one (the timer
            // may still be backed off without timestamps: Karn's rule gave no sample).
            let basis = self.ssthresh_basis(self.snd_max - self.snd_una);
            let w = self.window();
            self.ssthresh = self.cc.ssthresh(&w, basis);
        }
        self.cwnd = self.mss;
        self.rto_slow_start = true;
        self.recover = Some(self.snd_max);
        // Only a sender the kernel's moderation applies to keeps the mark (no SACK).
        self.loss_high = (self.cfg.moderate_cwnd && !self.cfg.sack).then_some(self.snd_max);
        self.set_ca_state(now, CaState::Loss);
        self.cc_event(now, crate::cc::CaEvent::Loss);
        self.dupacks = 0;
        self.limited_sent = 0;
        self.partial_acks = 0;
        self.snd_nxt = self.snd_una;
        if self.cfg.sack && self.cfg.clear_sack_on_rto {
            self.board.clear_sacked();
        }
        // Go-back-N resends everything not SACKed: RACK's marks start afresh, the probe's
        // episode ends (Linux tcp_retransmit_timer: tlp_high_seq = 0).
        self.board.clear_lost();
        self.early_timer = None;
        self.tlp_high_seq = None;
        self.high_rxt = self.snd_una;
        self.rescue_rxt = None;
        self.timed = None;
        self.rtt.backoff();
        self.pending = Some((self.snd_una, TxKind::RtoRetransmit));
        self.rto_deadline = Some(self.rto_at(now));
    }
}
