//! The optional three-way handshake (`handshake = true`, RFC 9293 §3.5): a SYN first, data only
//! once the SYN-ACK is back (the third segment of the handshake is the first data segment's
//! ACK field, so it is not sent on its own).
//!
//! The SYN takes the RTO timer: 1 s (`rto.initial`, RFC 6298 (2.1)), doubled on each
//! retransmission. The SYN-ACK gives the first RTT sample unless the SYN was retransmitted
//! (Karn). If it was, the connection starts with one segment of cwnd, as Linux's
//! `tcp_init_transfer` does after a lost SYN (RFC 6298 §5.7 asks for a 3 s RTO then; the model
//! keeps the backed-off RTO until the first sample instead). Both SYNs are 60 bytes on the wire
//! (Linux's options: MSS, SACK-permitted, timestamps, window scale).

use super::*;

impl TcpSender {
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

    /// The RTO expired before the SYN-ACK: send the SYN again, backed off.
    pub(super) fn syn_timeout(&mut self, now: SimTime) {
        if let Handshake::SynSent {
            first_sent,
            retries,
        } = self.handshake
        {
            self.rtt.backoff();
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
        if retries == 0 {
            let r = now - first_sent;
            self.rtt.on_sample(r, 0, 0);
            self.note_rtt_sample(r);
        } else {
            self.cwnd = self.mss;
        }
    }
}
