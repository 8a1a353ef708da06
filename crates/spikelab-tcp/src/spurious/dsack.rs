//! DSACK-based detection, RFC 3708 §3.
//!
//! The detector counts the segments retransmitted in the episode (every retransmission at or
//! above the episode's undo marker, the `snd_una` at its start) and the DSACK reports for them.
//! When each retransmitted segment has been reported as a duplicate, no retransmission of the
//! episode was needed: the episode was spurious. Until then it is undecided; a lost ACK that
//! carried a DSACK leaves it undecided for good (RFC 3708 accepts such false negatives rather
//! than risk a false positive). The sender does the counting on its scoreboard, as Linux does
//! with `undo_retrans` (`tcp_sacktag_one`, `tcp_check_dsack`): a DSACK block above `snd_una`
//! counts the retransmitted segments it covers; a block below `snd_una` is counted by its
//! length in segments if it ends above the undo marker (the scoreboard no longer holds it).
//!
//! Needs SACK and DSACK at the receiver. Maturity: scripted packet tests; not validated
//! against Linux.

use super::{Evidence, Verdict};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Watching {
        /// Segments retransmitted in the episode.
        retransmissions: u32,
        /// Of these, segments reported by DSACK.
        dsacked: u32,
    },
}

#[derive(Clone, Debug)]
pub struct Dsack {
    state: State,
}

impl Default for Dsack {
    fn default() -> Self {
        Dsack { state: State::Idle }
    }
}

impl Dsack {
    pub fn on_episode_start(&mut self) {
        self.state = State::Watching {
            retransmissions: 0,
            dsacked: 0,
        };
    }

    /// The sender retransmitted one segment of the episode.
    pub fn on_retransmit(&mut self) {
        if let State::Watching {
            retransmissions, ..
        } = &mut self.state
        {
            *retransmissions += 1;
        }
    }

    pub fn is_watching(&self) -> bool {
        self.state != State::Idle
    }

    /// An ACK reported `segments` of the episode's retransmissions as duplicates.
    pub fn on_dsack(&mut self, segments: u32) -> Option<Verdict> {
        let State::Watching {
            retransmissions,
            dsacked,
        } = &mut self.state
        else {
            return None;
        };
        *dsacked = (*dsacked + segments).min(*retransmissions);
        if *retransmissions > 0 && *dsacked == *retransmissions {
            let n = *retransmissions;
            self.state = State::Idle;
            return Some(Verdict::Spurious(Evidence::Dsack { retransmissions: n }));
        }
        None
    }

    pub fn reset(&mut self) {
        self.state = State::Idle;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spurious_only_when_every_retransmission_is_dsacked() {
        let mut d = Dsack::default();
        d.on_episode_start();
        d.on_retransmit();
        d.on_retransmit();
        assert_eq!(d.on_dsack(1), None);
        assert_eq!(
            d.on_dsack(1),
            Some(Verdict::Spurious(Evidence::Dsack { retransmissions: 2 }))
        );
        assert!(!d.is_watching());
    }

    #[test]
    fn dsack_before_any_retransmission_proves_nothing() {
        let mut d = Dsack::default();
        d.on_episode_start();
        assert_eq!(d.on_dsack(3), None);
    }
}
