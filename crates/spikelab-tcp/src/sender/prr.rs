//! PRR: proportional rate reduction during SACK fast recovery, RFC 6937 §3 (PRR-SSRB), as
//! Linux `tcp_cwnd_reduction` runs it.
//!
//! On entering recovery `prr_delivered = prr_out = 0` and `RecoverFS` is taken; on every ACK in
//! recovery (the one that entered it included) `prr_delivered` grows by the segments newly
//! delivered (cumulatively ACKed or SACKed), then:
//! * `pipe > ssthresh`: `sndcnt = ⌈prr_delivered · ssthresh / RecoverFS⌉ − prr_out`
//!   (proportional part);
//! * otherwise (slow-start reduction bound): `sndcnt = min(ssthresh − pipe,
//!   max(prr_delivered − prr_out, DeliveredData) + 1)`, the `+1` only when the ACK advanced
//!   `snd_una` and marked nothing newly lost (Linux since 5.19);
//! * `sndcnt ≥ 1` while nothing was sent in this recovery (the fast retransmit);
//! * `cwnd = pipe + sndcnt`.
//!
//! Leaving recovery sets `cwnd = ssthresh` (Linux `tcp_end_cwnd_reduction`).
//!
//! Model decisions, following Linux: counts are in segments (bytes are converted with the
//! MSS, rounding partial segments up), and `RecoverFS` is cwnd at entry (Linux `prior_cwnd`;
//! RFC 6937 uses FlightSize, the same for a cwnd-limited sender).

use super::*;

/// PRR's state (RFC 6937 names), segments.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// Segments delivered to the receiver since recovery started.
    pub prr_delivered: u64,
    /// Segments sent since recovery started.
    pub prr_out: u64,
    /// `RecoverFS`: cwnd at entry (Linux `prior_cwnd`), segments.
    pub recover_fs: u64,
}

impl TcpSender {
    /// RFC 6937 on entering recovery: `prior_cwnd` is the cwnd before the reduction.
    pub(super) fn prr_init(&mut self, prior_cwnd: u64) {
        self.prr = Prr {
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: prior_cwnd.div_ceil(self.mss).max(1),
        };
    }

    /// PRR on one ACK in SACK recovery (after `SetPipe()`): `delivered` bytes newly ACKed or
    /// SACKed; `una_advanced`: the ACK moved `snd_una`; `newly_lost`: the ACK marked segments
    /// lost. Sets cwnd.
    pub(super) fn prr_on_ack(&mut self, delivered: u64, una_advanced: bool, newly_lost: bool) {
        if !self.cfg.prr || self.state != CaState::Recovery || delivered == 0 {
            return;
        }
        let mss = self.mss;
        let newly = delivered.div_ceil(mss);
        let ssthresh = (self.ssthresh / mss).max(1);
        let pipe = self.pipe.div_ceil(mss);
        let p = &mut self.prr;
        p.prr_delivered += newly;
        let mut sndcnt = if pipe > ssthresh {
            (ssthresh * p.prr_delivered)
                .div_ceil(p.recover_fs)
                .saturating_sub(p.prr_out)
        } else {
            let mut n = p.prr_delivered.saturating_sub(p.prr_out).max(newly);
            if una_advanced && !newly_lost {
                n += 1;
            }
            n.min(ssthresh - pipe)
        };
        if p.prr_out == 0 {
            sndcnt = sndcnt.max(1);
        }
        // Without RACK, SetPipe() already counts the pending fast retransmission (it is below
        // HighRxt); with RACK it is counted when sent.
        let counted = if !self.cfg.rack && self.pending.is_some() {
            mss
        } else {
            0
        };
        self.cwnd = (self.pipe + sndcnt * mss).saturating_sub(counted).max(mss);
    }

    /// RFC 6937: every segment sent in recovery counts in `prr_out`.
    pub(super) fn prr_on_send(&mut self) {
        if self.cfg.prr && self.state == CaState::Recovery {
            self.prr.prr_out += 1;
        }
    }
}
