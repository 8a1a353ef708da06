//! The Eifel algorithm on ns-2.35's one-way agent (`[flow.tcp] profile = "ns2"`,
//! `spurious = ["eifel"]`), for paper 002 (Fu et al.), which ran TCP Reno with Eifel in the ns
//! simulator. ns-2.35 ships no Eifel agent, so this is the algorithm of Ludwig & Katz ("The
//! Eifel algorithm: making TCP robust against spurious retransmissions", ACM CCR 30(1), 2000;
//! detection as RFC 3522 words it) on the agent's own rules, and not a copy of any patch:
//!
//! * Timestamps (`timestamps = true`, needed by Eifel): ns-2's `timestamps_` option (in
//!   agent.rs and sink.rs, usable without Eifel too). Every data packet carries its send
//!   time and `ts_option_size_` (10) more bytes of header (`TcpAgent::headersize`); the sink
//!   echoes the send time of the packet that triggered the ACK (`TcpSink::ack`, `ts_echo_`),
//!   and each new ACK gives an RTT sample `now − ts_echo` (`TcpAgent::newack` with
//!   `ts_option_`). The backoff still ends only on the timed packet's sample, as there.
//! * Detection (RFC 3522 steps 1-4): at the first timeout of an episode the agent saves cwnd
//!   and ssthresh and the timestamp of the retransmission (`RetransmitTS`); the first ACK of
//!   new data afterwards is spurious evidence when its echo is older than `RetransmitTS`, i.e.
//!   the original transmission triggered it. Later timeouts of the same episode keep the saved
//!   values.
//! * Response (`response = "undo"`, the 2000 paper's): cwnd and ssthresh back to the saved
//!   values, and no go-back-N: transmission resumes after the highest packet sent. With
//!   `response = "none"` the verdict is counted and nothing changes. RFC 4015's response is
//!   not modelled here.
//!
//! Model maturity: unit-tested on scripted ACKs (below); not compared with an ns-2 Eifel patch.

use crate::spurious::{DetectorKind, Evidence, Response, Verdict};
use crate::SpuriousEvent;
use spikelab_core::SimTime;

/// Timestamp ticks: milliseconds of simulated time (ns-2 carries a double; the agent's RTT
/// samples are whole `tcpTick_`s of 10 ms anyway).
pub fn ts_now(now: SimTime) -> u32 {
    (now.0 / 1_000_000) as u32
}

/// One agent's Eifel state.
#[derive(Clone, Debug)]
pub struct Eifel {
    /// Restore on a detection (`response = "undo"`), else count only.
    pub undo: bool,
    /// A timeout's verdict is pending: (RetransmitTS, cwnd, ssthresh, episode) saved at the
    /// episode's first timeout.
    pending: Option<(u32, f64, i64, u32)>,
}

/// What the agent does with an ACK of new data while a verdict is pending.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Decision {
    /// Spurious: restore cwnd and ssthresh (when `undo`) and resume with new data.
    Spurious {
        cwnd: f64,
        ssthresh: i64,
        episode: u32,
        ts_ecr: u32,
        retransmit_ts: u32,
    },
    Genuine {
        episode: u32,
        ts_ecr: u32,
        retransmit_ts: u32,
    },
}

impl Decision {
    /// The verdict as the world scores it (RFC 3522 step 4's evidence).
    pub fn verdict_event(&self, t: SimTime) -> SpuriousEvent {
        let (episode, verdict) = match *self {
            Decision::Spurious {
                episode,
                ts_ecr,
                retransmit_ts,
                ..
            } => (
                episode,
                Verdict::Spurious(Evidence::Timestamp {
                    ts_ecr,
                    retransmit_ts,
                }),
            ),
            Decision::Genuine {
                episode,
                ts_ecr,
                retransmit_ts,
            } => (
                episode,
                Verdict::Genuine(Evidence::Timestamp {
                    ts_ecr,
                    retransmit_ts,
                }),
            ),
        };
        SpuriousEvent::Verdict {
            episode,
            detector: DetectorKind::Eifel,
            verdict,
            t,
        }
    }

    /// The restore, with cwnd and ssthresh after it in bytes.
    pub fn undo_event(episode: u32, t: SimTime, cwnd: u64, ssthresh: u64) -> SpuriousEvent {
        SpuriousEvent::Undo {
            episode,
            response: Response::Undo,
            detector: DetectorKind::Eifel,
            t,
            cwnd,
            ssthresh,
        }
    }
}

impl Eifel {
    pub fn new(undo: bool) -> Eifel {
        Eifel {
            undo,
            pending: None,
        }
    }

    /// A timeout with data outstanding, before the agent's own reduction: the first of an
    /// episode saves the state (RFC 3522 step 1); later ones keep it.
    pub fn on_timeout(&mut self, now: SimTime, cwnd: f64, ssthresh: i64, episode: u32) {
        if self.pending.is_none() {
            self.pending = Some((ts_now(now), cwnd, ssthresh, episode));
        }
    }

    /// The first ACK of new data after a timeout, echoing `ts_ecr` (RFC 3522 step 4).
    pub fn on_new_ack(&mut self, ts_ecr: Option<u32>) -> Option<Decision> {
        let (retransmit_ts, cwnd, ssthresh, episode) = self.pending.take()?;
        let ts_ecr = ts_ecr?;
        Some(if ts_ecr < retransmit_ts {
            Decision::Spurious {
                cwnd,
                ssthresh,
                episode,
                ts_ecr,
                retransmit_ts,
            }
        } else {
            Decision::Genuine {
                episode,
                ts_ecr,
                retransmit_ts,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ns2::Ns2Agent;
    use crate::spurious::DetectorSet;
    use crate::{Segment, Timestamps, TxKind, Variant};
    use spikelab_core::SimDuration;

    fn agent(response: Response) -> Ns2Agent {
        let mut cfg = crate::ns2::agent::tests::cfg(Variant::Reno);
        cfg.handshake = false;
        cfg.timestamps = true;
        cfg.spurious.detectors = DetectorSet::EMPTY.with(DetectorKind::Eifel);
        cfg.spurious.response = response;
        Ns2Agent::new(cfg, None)
    }

    fn ms(t: u64) -> SimTime {
        SimTime::from_millis(t)
    }

    fn drain(a: &mut Ns2Agent, now: SimTime) -> Vec<(u64, TxKind, Option<Timestamps>)> {
        std::iter::from_fn(|| a.poll_transmit(now))
            .map(|t| (t.seg.seq, t.kind, t.seg.ts))
            .collect()
    }

    fn ack(a: &mut Ns2Agent, now: SimTime, bytes: u64, ecr: u32) {
        a.on_ack(
            now,
            &Segment {
                ack: bytes,
                ts: Some(Timestamps { val: 0, ecr }),
                ..Segment::default()
            },
        );
    }

    /// Two packets out at 0 ms, ACKed at 100 ms (the first ACK sets cwnd to `windowInit_` 2,
    /// the second opens it to 3); three more; then silence (a spike) until the
    /// timer fires; returns the agent after the timeout with the go-back-N retransmission.
    fn spike(response: Response) -> (Ns2Agent, SimTime) {
        let mut a = agent(response);
        let first = drain(&mut a, ms(0));
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].2, Some(Timestamps { val: 0, ecr: 0 }));
        ack(&mut a, ms(100), 1000, 0);
        ack(&mut a, ms(100), 2000, 0);
        assert_eq!(drain(&mut a, ms(100)).len(), 3);
        let t = a.next_timer().unwrap();
        a.on_timer(t);
        let rtx = drain(&mut a, t);
        assert_eq!(rtx[0].0, 2000);
        assert_eq!(rtx[0].1, TxKind::RtoRetransmit);
        assert_eq!(a.cwnd(), 1000);
        (a, t)
    }

    #[test]
    fn an_ack_echoing_the_original_restores_cwnd_and_skips_go_back_n() {
        let (mut a, t) = spike(Response::Undo);
        // The original of packet 2000 (sent at 100 ms) is ACKed after the timeout.
        ack(&mut a, t + SimDuration::from_millis(50), 3000, 100);
        assert_eq!(a.cwnd(), 4000, "cwnd 3 restored, +1 for the new ACK");
        assert_eq!(a.ssthresh(), 20_000);
        let next = drain(&mut a, t + SimDuration::from_millis(50));
        assert!(next.iter().all(|p| p.1 == TxKind::New), "{next:?}");
        assert_eq!(next[0].0, 5000, "resumes after the highest packet sent");
        assert!(a
            .spurious_events()
            .iter()
            .any(|e| matches!(e, SpuriousEvent::Undo { .. })));
    }

    #[test]
    fn an_ack_echoing_the_retransmission_is_genuine_and_goes_back_n() {
        let (mut a, t) = spike(Response::Undo);
        let rtx_ts = ts_now(t);
        ack(&mut a, t + SimDuration::from_millis(200), 3000, rtx_ts);
        assert_eq!(a.cwnd(), 2000);
        let next = drain(&mut a, t + SimDuration::from_millis(200));
        assert_eq!(next[0].0, 3000, "go-back-N goes on");
        assert!(!a
            .spurious_events()
            .iter()
            .any(|e| matches!(e, SpuriousEvent::Undo { .. })));
    }

    #[test]
    fn without_a_response_the_verdict_changes_nothing() {
        let (mut a, t) = spike(Response::None);
        ack(&mut a, t + SimDuration::from_millis(50), 3000, 100);
        assert_eq!(a.cwnd(), 2000);
        assert!(a
            .spurious_events()
            .iter()
            .any(|e| matches!(e, SpuriousEvent::Verdict { .. })));
    }
}
