//! The optional three-way handshake (`handshake = true`, RFC 9293 §3.5): a SYN first, data only
//! once the SYN-ACK is back (the third segment of the handshake is the first data segment's
//! ACK field, so it is not sent on its own).
//!
//! The SYN takes the RTO timer: 1 s (`rto.initial`, RFC 6298 (2.1)), doubled on each
//! retransmission; with the `linux` estimator the RTO doubles only after the fifth expiry, as
//! in Linux 6.5+ (`tcp_syn_linear_timeouts` = 4: SYNs at 0, 1, 2, 3, 4, 5 s, then 7, 11 s).
//! The SYN-ACK gives the first RTT sample: from the SYN's send time if the SYN was sent once,
//! from its timestamp echo otherwise (RFC 7323 RTTM: the echo names the SYN that was
//! answered; Linux `tcp_ack_update_rtt` takes it too). A retransmitted SYN without a
//! sample (no timestamps: Karn) starts the data with an RTO of 3 s and no backoff (RFC 6298
//! (5.7); Linux `tcp_init_metrics`). After a retransmitted SYN the connection starts with one
//! segment of cwnd (RFC 5681 §3.1); with the `linux` estimator, which carries the kernel's
//! timer rules, only after more than one retransmission (Linux `tcp_init_transfer`: with a
//! 1 s initial RTO one retransmission may be spurious). Both SYNs are 60 bytes on the wire
//! (Linux's options: MSS, SACK-permitted, timestamps, window scale).

use super::*;

/// Linux's `net.ipv4.tcp_syn_linear_timeouts` default (since 6.5): SYN-SENT timeouts that
/// leave the RTO at its initial value (the kernel doubles it once its backoff exceeds this).
const LINUX_SYN_LINEAR_TIMEOUTS: u32 = 4;

impl TcpSender {
    /// The `linux` estimator carries the kernel's handshake timer rules (linear SYN timeouts,
    /// one segment of cwnd only after two lost SYNs); RFC 6298's otherwise.
    fn kernel_handshake(&self) -> bool {
        matches!(self.cfg.rto.algorithm, RtoAlgorithm::Linux)
    }

    /// Whether the handshake is complete (always, without one).
    pub fn established(&self) -> bool {
        self.handshake == Handshake::Established
    }

    /// The SYN, if one is due now; `Some(None)` while waiting for the SYN-ACK.
    pub(super) fn poll_syn(&mut self, now: SimTime) -> Option<Option<Transmit>> {
        match self.handshake {
            Handshake::Established => None,
            Handshake::SynSent { .. } => Some(None),
            Handshake::SynDue {
                first_sent,
                retries,
            } => {
                self.handshake = Handshake::SynSent {
                    first_sent: first_sent.unwrap_or(now),
                    retries,
                };
                self.rto_deadline = Some(self.rto_at(now));
                self.stats.segments_sent += 1;
                let ts = self.cfg.timestamps.then(|| Timestamps {
                    val: self.ts_now(now),
                    ecr: 0,
                });
                Some(Some(Transmit {
                    seg: Segment {
                        window: self.cfg.rwnd,
                        ts,
                        syn: true,
                        ..Segment::default()
                    },
                    kind: TxKind::Syn,
                }))
            }
        }
    }

    /// The RTO expired before the SYN-ACK: send the SYN again, backed off (with the `linux`
    /// estimator only once the backoff exceeds Linux's `tcp_syn_linear_timeouts` = 4, the
    /// kernel's rule since 6.5).
    pub(super) fn syn_timeout(&mut self, now: SimTime) {
        if let Handshake::SynSent {
            first_sent,
            retries,
        } = self.handshake
        {
            let linear = if self.kernel_handshake() {
                LINUX_SYN_LINEAR_TIMEOUTS
            } else {
                0
            };
            if retries >= linear {
                self.rtt.backoff();
            }
            self.handshake = Handshake::SynDue {
                first_sent: Some(first_sent),
                retries: retries + 1,
            };
            self.rto_deadline = Some(self.rto_at(now));
        }
    }

    /// A segment before the connection is established: a SYN-ACK completes it.
    pub(super) fn on_synack(&mut self, now: SimTime, seg: &Segment) {
        let Handshake::SynSent {
            first_sent,
            retries,
        } = self.handshake
        else {
            return;
        };
        if !seg.syn {
            return;
        }
        if let Some(ts) = seg.ts {
            self.ts_recent = ts.val;
        }
        self.handshake = Handshake::Established;
        self.rto_deadline = None;
        let sample = if retries == 0 {
            Some(now - first_sent)
        } else {
            seg.ts
                .filter(|_| self.cfg.timestamps)
                .map(|t| self.ts_rtt(now, t.ecr))
        };
        match sample {
            Some(r) => {
                self.rtt.on_sample(r, 0, 0);
                self.note_rtt_sample(r);
            }
            None => self.rtt.syn_lost_without_sample(),
        }
        let one_segment_after = if self.kernel_handshake() { 2 } else { 1 };
        if retries >= one_segment_after {
            self.cwnd = self.mss;
        }
    }
}
