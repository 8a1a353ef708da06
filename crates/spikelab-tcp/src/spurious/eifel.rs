//! Eifel detection, RFC 3522 (§3.2 steps 1-6).
//!
//! When an episode starts, the detector keeps `RetransmitTS`, the TSval carried by the first
//! retransmission of the episode; later retransmissions of the same episode (a recurring
//! timeout) do not overwrite it (step 2). The first *acceptable* ACK (one that acknowledges
//! data not acknowledged before) decides (steps 3-6):
//! * TSecr not older than RetransmitTS: the ACK was caused by the retransmission: genuine;
//! * TSecr older than RetransmitTS: the ACK was caused by an original transmission, so the
//!   retransmission was not needed, unless step 5 applies: the ACK carries a DSACK, or it
//!   acknowledges all outstanding data while the peer has never sent a DSACK in this connection
//!   (then an echo older than RetransmitTS may come from a receiver that rejected the
//!   retransmitted duplicate without updating TS.Recent, so the sender cannot tell).
//!
//! Works for timeouts and fast retransmits alike. The sender starts the detector only when an
//! episode initiates loss recovery; an episode that starts while loss recovery is under way (a
//! timeout in fast recovery or in an unfinished RTO recovery) gets no Eifel verdict (§3.2: "MUST
//! NOT be reinitiated after loss recovery has already started"). An acceptable ACK without a
//! Timestamps option ends the detection undecided. Needs timestamps on both ends.
//! Maturity: scripted packet tests; not validated against Linux (whose `tcp_packet_delayed`
//! applies the same TSecr test on every ACK of a recovery, not only the first acceptable one).

use super::{EpisodeKind, Evidence, Verdict};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    /// No episode, or the episode already judged.
    Idle,
    /// Step 3: waiting for the first acceptable ACK.
    Waiting {
        /// RFC 3522 `RetransmitTS`, timestamp ticks.
        retransmit_ts: u32,
        kind: EpisodeKind,
    },
}

/// What the detector needs to know about an acceptable ACK.
#[derive(Copy, Clone, Debug)]
pub struct AcceptableAck {
    /// TSecr of the ACK (`None`: no timestamps option).
    pub ts_ecr: Option<u32>,
    /// The ACK carries a DSACK block.
    pub dsack: bool,
    /// An ACK with a DSACK block arrived earlier in this connection.
    pub dsack_seen_before: bool,
    /// The cumulative ACK covers everything sent (`ack == snd_max`).
    pub acks_all_outstanding: bool,
}

#[derive(Clone, Debug)]
pub struct Eifel {
    state: State,
}

impl Default for Eifel {
    fn default() -> Self {
        Eifel { state: State::Idle }
    }
}

/// `a < b` in timestamp space (RFC 7323 §5.2 modular comparison).
fn ts_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

impl Eifel {
    /// Steps 1-2: a new episode whose first retransmission carries TSval `retransmit_ts`.
    pub fn on_episode_start(&mut self, kind: EpisodeKind, retransmit_ts: u32) {
        self.state = State::Waiting {
            retransmit_ts,
            kind,
        };
    }

    /// Whether the detector still waits for the episode's first acceptable ACK.
    pub fn is_waiting(&self) -> bool {
        self.state != State::Idle
    }

    /// Steps 3-6 on an acceptable ACK; at most one verdict per episode.
    pub fn on_acceptable_ack(&mut self, a: &AcceptableAck) -> Option<Verdict> {
        let State::Waiting { retransmit_ts, .. } = self.state else {
            return None;
        };
        self.state = State::Idle;
        let ts_ecr = a.ts_ecr?;
        if !ts_before(ts_ecr, retransmit_ts) {
            return Some(Verdict::Genuine(Evidence::Timestamp {
                ts_ecr,
                retransmit_ts,
            }));
        }
        // Step 5.
        if a.dsack || (!a.dsack_seen_before && a.acks_all_outstanding) {
            return Some(Verdict::Genuine(Evidence::TimestampDsackGuard));
        }
        Some(Verdict::Spurious(Evidence::Timestamp {
            ts_ecr,
            retransmit_ts,
        }))
    }

    /// The episode ended without an acceptable ACK (superseded by a new one).
    pub fn reset(&mut self) {
        self.state = State::Idle;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(ts_ecr: u32) -> AcceptableAck {
        AcceptableAck {
            ts_ecr: Some(ts_ecr),
            dsack: false,
            dsack_seen_before: false,
            acks_all_outstanding: false,
        }
    }

    #[test]
    fn echo_older_than_retransmit_ts_is_spurious_and_decides_once() {
        let mut e = Eifel::default();
        e.on_episode_start(EpisodeKind::Timeout, 1000);
        assert!(e.on_acceptable_ack(&ack(999)).unwrap().is_spurious());
        assert_eq!(
            e.on_acceptable_ack(&ack(999)),
            None,
            "one verdict per episode"
        );
    }

    #[test]
    fn echo_of_the_retransmission_is_genuine() {
        let mut e = Eifel::default();
        e.on_episode_start(EpisodeKind::FastRetransmit, 1000);
        assert!(!e.on_acceptable_ack(&ack(1000)).unwrap().is_spurious());
    }

    #[test]
    fn step5_dsack_or_full_ack_from_a_non_dsack_peer_is_not_spurious() {
        let mut e = Eifel::default();
        e.on_episode_start(EpisodeKind::Timeout, 1000);
        let a = AcceptableAck {
            dsack: true,
            ..ack(10)
        };
        assert_eq!(
            e.on_acceptable_ack(&a),
            Some(Verdict::Genuine(Evidence::TimestampDsackGuard))
        );
        e.on_episode_start(EpisodeKind::Timeout, 1000);
        let a = AcceptableAck {
            acks_all_outstanding: true,
            ..ack(10)
        };
        assert!(!e.on_acceptable_ack(&a).unwrap().is_spurious());
        e.on_episode_start(EpisodeKind::Timeout, 1000);
        let a = AcceptableAck {
            acks_all_outstanding: true,
            dsack_seen_before: true,
            ..ack(10)
        };
        assert!(e.on_acceptable_ack(&a).unwrap().is_spurious());
    }

    #[test]
    fn timestamp_comparison_wraps() {
        assert!(ts_before(u32::MAX, 2));
        assert!(!ts_before(2, u32::MAX));
    }
}
