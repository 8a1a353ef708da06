//! DSACK-based detection, RFC 3708 §3 (the congestion/duplicate disambiguation algorithm).
//!
//! The detector keeps the longer history of retransmissions that §3 asks of the scoreboard:
//! how many times each segment (by its first byte) was retransmitted, and which segments were
//! reported as duplicates. Each DSACK block is processed by steps (A) and (B):
//! * (A.1) no SACK information held by the sender and the block starts at SND.UNA (a whole
//!   window of ACKs may have been lost): processing stops and the current episode is never
//!   declared spurious;
//! * (A.2) every segment of the block retransmitted exactly once is marked as a duplicate;
//! * (A.3) a segment of the block retransmitted more than once: processing stops and the current
//!   episode is never declared spurious;
//! * (A.4) a segment of the block never retransmitted: the network duplicated it; processing
//!   stops and the detector is off for the rest of the connection;
//! * (B.1) when every segment retransmitted in the episode is marked as a duplicate, the
//!   episode was spurious; (B.2) otherwise no conclusion yet.
//!
//! A lost ACK that carried a DSACK leaves the episode undecided for good (RFC 3708 accepts such
//! false negatives rather than risk a false positive). The history reaches back to the start of
//! the previous episode; a block below that is not interpreted. Unlike Linux (`undo_retrans`,
//! `tcp_sacktag_one`, `tcp_check_dsack`), which counts retransmissions and DSACKs and has no
//! (A.1), (A.3) or (A.4), a segment is marked once, whatever the number of reports.
//!
//! Needs SACK and DSACK at the receiver. Maturity: scripted packet tests; not validated
//! against Linux.

use std::collections::{BTreeMap, BTreeSet};

use super::{Evidence, Verdict};

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// No episode, or the episode is decided or given up.
    Idle,
    /// Step (B): the segments (first bytes) retransmitted in the episode.
    Watching { retransmitted: BTreeSet<u64> },
}

/// A DSACK block as the sender received it.
#[derive(Copy, Clone, Debug)]
pub struct DsackBlock {
    pub start: u64,
    pub end: u64,
    /// SND.UNA before the ACK carrying the block.
    pub snd_una: u64,
    /// The sender holds no SACK information (empty scoreboard) when the ACK arrives.
    pub scoreboard_empty: bool,
}

#[derive(Clone, Debug)]
pub struct Dsack {
    mss: u64,
    state: State,
    /// Retransmissions of each segment since `history_from`.
    retransmissions: BTreeMap<u64, u32>,
    /// Segments reported as duplicates since their last retransmission.
    duplicated: BTreeSet<u64>,
    history_from: u64,
    /// First byte of the current (last) episode.
    episode_from: u64,
    /// (A.4): network duplication seen.
    disabled: bool,
}

impl Dsack {
    pub fn new(mss: u64) -> Dsack {
        Dsack {
            mss: mss.max(1),
            state: State::Idle,
            retransmissions: BTreeMap::new(),
            duplicated: BTreeSet::new(),
            history_from: 0,
            episode_from: 0,
            disabled: false,
        }
    }

    /// A new episode starting at `snd_una`; the history of the previous one is kept.
    pub fn on_episode_start(&mut self, snd_una: u64) {
        self.history_from = self.episode_from.min(snd_una);
        self.episode_from = snd_una;
        self.retransmissions = self.retransmissions.split_off(&self.history_from);
        self.duplicated = self.duplicated.split_off(&self.history_from);
        self.state = if self.disabled {
            State::Idle
        } else {
            State::Watching {
                retransmitted: BTreeSet::new(),
            }
        };
    }

    /// The sender retransmitted the segment starting at `seq`.
    pub fn on_retransmit(&mut self, seq: u64) {
        *self.retransmissions.entry(seq).or_default() += 1;
        self.duplicated.remove(&seq);
        if let State::Watching { retransmitted } = &mut self.state {
            retransmitted.insert(seq);
        }
    }

    pub fn is_watching(&self) -> bool {
        self.state != State::Idle
    }

    /// Whether (A.4) turned the detector off for the connection.
    pub fn is_disabled(&self) -> bool {
        self.disabled
    }

    /// Steps (A) and (B) for one DSACK block.
    pub fn on_dsack(&mut self, b: &DsackBlock) -> Option<Verdict> {
        if self.disabled || b.end <= b.start {
            return None;
        }
        if b.scoreboard_empty && b.start == b.snd_una {
            // (A.1)
            self.state = State::Idle;
            return None;
        }
        if b.start < self.history_from {
            return None;
        }
        let mut segments = Vec::new();
        let mut seq = b.start / self.mss * self.mss;
        while seq < b.end {
            match self.retransmissions.get(&seq) {
                None => {
                    // (A.4)
                    self.disabled = true;
                    self.state = State::Idle;
                    return None;
                }
                Some(&n) if n > 1 => {
                    // (A.3)
                    self.state = State::Idle;
                    return None;
                }
                Some(_) => segments.push(seq),
            }
            seq += self.mss;
        }
        // (A.2)
        self.duplicated.extend(segments);
        // (B)
        let State::Watching { retransmitted } = &self.state else {
            return None;
        };
        if retransmitted.is_empty() || !retransmitted.is_subset(&self.duplicated) {
            return None; // (B.2)
        }
        let n = retransmitted.len() as u32;
        self.state = State::Idle;
        Some(Verdict::Spurious(Evidence::Dsack { retransmissions: n }))
    }

    pub fn reset(&mut self) {
        self.state = State::Idle;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(start: u64, snd_una: u64) -> DsackBlock {
        DsackBlock {
            start,
            end: start + 1000,
            snd_una,
            scoreboard_empty: false,
        }
    }

    #[test]
    fn spurious_only_when_every_retransmitted_segment_is_marked_b1() {
        let mut d = Dsack::new(1000);
        d.on_episode_start(0);
        d.on_retransmit(0);
        d.on_retransmit(1000);
        assert_eq!(d.on_dsack(&block(0, 5000)), None, "B.2");
        assert_eq!(d.on_dsack(&block(0, 5000)), None, "marked once");
        assert_eq!(
            d.on_dsack(&block(1000, 5000)),
            Some(Verdict::Spurious(Evidence::Dsack { retransmissions: 2 }))
        );
        assert!(!d.is_watching());
    }

    #[test]
    fn segment_retransmitted_twice_ends_the_episode_a3() {
        let mut d = Dsack::new(1000);
        d.on_episode_start(0);
        d.on_retransmit(0);
        d.on_retransmit(0);
        assert_eq!(d.on_dsack(&block(0, 5000)), None);
        assert!(!d.is_watching());
        assert!(!d.is_disabled());
    }

    #[test]
    fn segment_never_retransmitted_disables_the_detector_a4() {
        let mut d = Dsack::new(1000);
        d.on_episode_start(0);
        d.on_retransmit(0);
        assert_eq!(d.on_dsack(&block(1000, 5000)), None);
        assert!(d.is_disabled());
        assert_eq!(d.on_dsack(&block(0, 5000)), None);
        d.on_episode_start(5000);
        assert!(!d.is_watching());
    }

    #[test]
    fn block_at_snd_una_with_no_sack_information_ends_the_episode_a1() {
        let mut d = Dsack::new(1000);
        d.on_episode_start(0);
        d.on_retransmit(0);
        let b = DsackBlock {
            scoreboard_empty: true,
            ..block(0, 0)
        };
        assert_eq!(d.on_dsack(&b), None);
        assert!(!d.is_watching());
    }

    #[test]
    fn a_new_retransmission_clears_the_duplicate_mark() {
        let mut d = Dsack::new(1000);
        d.on_episode_start(0);
        d.on_retransmit(0);
        d.on_retransmit(1000);
        assert_eq!(d.on_dsack(&block(0, 0)), None);
        // Next episode: segment 0 retransmitted again (now twice in all); its old mark does
        // not count, and its next report falls under (A.3).
        d.on_episode_start(0);
        d.on_retransmit(0);
        assert_eq!(d.on_dsack(&block(0, 0)), None);
        assert!(!d.is_watching());
    }

    #[test]
    fn dsack_before_any_retransmission_proves_nothing() {
        let mut d = Dsack::new(1000);
        d.on_episode_start(0);
        assert_eq!(d.on_dsack(&block(0, 0)), None);
        assert!(d.is_disabled(), "A.4: never retransmitted");
    }
}
