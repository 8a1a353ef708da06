//! TLP: the tail loss probe, RFC 8985 §7 (as Linux `tcp_schedule_loss_probe`,
//! `tcp_send_loss_probe` and `tcp_process_tlp_ack` run it).
//!
//! * Scheduling (§7.2, Linux `tcp_schedule_loss_probe`): with SACK, data outstanding, in the
//!   Open state (Linux: Open or CWR; here Open or Disorder with nothing SACKed, which is Linux's
//!   Open), after new data is sent and on every ACK of new data. `PTO = 2·SRTT`, plus
//!   [`WC_DEL_ACK_T`] when exactly one segment is outstanding and [`TLP_TIMEOUT_MIN`]
//!   otherwise (Linux `TCP_TIMEOUT_MIN_US`); 1 s without an RTT sample (`TCP_TIMEOUT_INIT`);
//!   never later than the RTO would fire (on an ACK: the full RTO about to be restarted). The
//!   probe timer shares the sender's early-timer slot with RACK's reordering timer, as Linux's
//!   one `icsk_pending` does; a pending reordering timer is not replaced.
//! * Sending (§7.3, `tcp_send_loss_probe`): at most one probe until its episode ends
//!   (`TLP.end_seq`, Linux `tlp_high_seq`). One new segment if there is new data and the
//!   receive window allows it (cwnd is not checked), otherwise a retransmission of the highest
//!   segment sent. Then the RTO restarts from now.
//! * Detection (§7.4, `tcp_process_tlp_ack`), once the cumulative ACK reaches `TLP.end_seq`:
//!   a probe of new data needs no verdict; a DSACK ending at `TLP.end_seq`, or a pure duplicate
//!   ACK, means the original and the probe both arrived (no loss); an ACK beyond `TLP.end_seq`
//!   means the probe repaired a loss: ssthresh from the congestion control, given cwnd as the
//!   flight (Linux's `ssthresh` hooks work from cwnd), and `cwnd = ssthresh` (Linux: `tcp_init_cwnd_reduction`, CWR, `tcp_end_cwnd_reduction`), counted in
//!   `tlp_recoveries`. This reduction does not open an undo episode (Linux records an undo
//!   marker; the model does not undo it).

use super::*;

/// RFC 8985 §7.2 WCDelAckT, the worst-case delayed-ACK time (Linux adds `tcp_rto_min_us`,
/// 200 ms by default).
pub const WC_DEL_ACK_T: SimDuration = SimDuration(200_000_000);
/// Linux `TCP_TIMEOUT_MIN_US`: 2 ms added to the PTO when more than one segment is outstanding.
pub const TLP_TIMEOUT_MIN: SimDuration = SimDuration(2_000_000);
/// Linux `TCP_TIMEOUT_INIT`: the PTO before any RTT sample.
pub const TLP_TIMEOUT_INIT: SimDuration = SimDuration(1_000_000_000);

/// The timer that fires before the RTO (Linux `icsk_pending`): at most one at a time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EarlyTimer {
    /// RFC 8985 §7.2 PTO.
    LossProbe(SimTime),
    /// RFC 8985 §6.3 reordering timer.
    Reorder(SimTime),
}

impl EarlyTimer {
    pub fn deadline(self) -> SimTime {
        match self {
            EarlyTimer::LossProbe(t) | EarlyTimer::Reorder(t) => t,
        }
    }
}

impl TcpSender {
    /// The probe timeout for the current flight, before the RTO cap.
    pub fn pto(&self) -> SimDuration {
        match self.rtt.srtt() {
            Some(srtt) => {
                let one = self.snd_max - self.snd_una <= self.mss;
                srtt.saturating_mul(2) + if one { WC_DEL_ACK_T } else { TLP_TIMEOUT_MIN }
            }
            None => TLP_TIMEOUT_INIT,
        }
    }

    /// Whether a loss probe may be scheduled now (Linux: SACK, packets out, Open or CWR).
    fn tlp_eligible(&self) -> bool {
        self.cfg.tlp
            && self.cfg.sack
            && self.snd_max > self.snd_una
            && matches!(self.state, CaState::Open | CaState::Disorder)
            && self.board.sacked_bytes() == 0
    }

    /// Linux `tcp_schedule_loss_probe`. `advancing_rto`: the RTO is about to restart from now
    /// (on an ACK), so the cap is a whole RTO; otherwise (after new data is sent) the kernel's
    /// `tcp_rto_delta_us`: one RTO after the first unacknowledged segment was last sent, less
    /// the time since, so a probe never waits past the RTO its head would have had.
    /// Returns whether a probe is scheduled.
    pub(super) fn schedule_loss_probe(&mut self, now: SimTime, advancing_rto: bool) -> bool {
        if matches!(self.early_timer, Some(EarlyTimer::Reorder(_))) {
            return false;
        }
        if !self.tlp_eligible() {
            if matches!(self.early_timer, Some(EarlyTimer::LossProbe(_))) {
                self.early_timer = None;
            }
            return false;
        }
        let mut pto = self.pto();
        let rto_left = if advancing_rto {
            Some(self.rtt.rto())
        } else {
            self.head_xmit_time()
                .map(|t| (t + self.rtt.rto()).since(now))
        };
        if let Some(left) = rto_left.filter(|l| *l > SimDuration::ZERO) {
            pto = pto.min(left);
        }
        self.early_timer = Some(EarlyTimer::LossProbe(self.timer_at(now, pto)));
        true
    }

    /// RFC 8985 §7.3 / Linux `tcp_send_loss_probe`: the PTO expired.
    pub(super) fn on_loss_probe(&mut self, now: SimTime) {
        self.early_timer = None;
        if self.tlp_high_seq.is_some() || self.pending.is_some() || self.snd_max == self.snd_una {
            return;
        }
        let len = self.seg_len(self.snd_max);
        let seq = if len > 0 && self.snd_max + len <= self.snd_una + self.rwnd {
            self.tlp_retrans = false;
            self.snd_max
        } else {
            let Some(last) = self.board.last_seq() else {
                return;
            };
            self.tlp_retrans = true;
            last
        };
        self.pending = Some((seq, TxKind::Tlp));
        self.tlp_high_seq = Some(self.snd_max.max(seq + self.seg_len(seq)));
        self.stats.tlp_count += 1;
        self.rto_deadline = Some(self.rto_at(now));
    }

    /// RFC 8985 §7.4 / Linux `tcp_process_tlp_ack`, on every ACK while a probe is outstanding.
    /// `dsack_end`: end of the ACK's DSACK block; `progress`: the ACK acknowledged or SACKed
    /// new data.
    pub(super) fn tlp_on_ack(
        &mut self,
        now: SimTime,
        ack: u64,
        dsack_end: Option<u64>,
        progress: bool,
    ) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || dsack_end == Some(high) {
            self.tlp_high_seq = None;
        } else if ack > high {
            self.tlp_high_seq = None;
            self.stats.tlp_recoveries += 1;
            let w = self.window();
            // Linux's ssthresh hooks halve cwnd here (`tcp_init_cwnd_reduction`).
            self.ssthresh = self.cc.ssthresh(&w, self.cwnd);
            self.cwnd = self.ssthresh.max(self.mss);
            self.cc_event(now, crate::cc::CaEvent::CompleteCwr);
        } else if !progress {
            self.tlp_high_seq = None;
        }
    }
}
