//! Ground truth of one flow's data segments, kept only while it can still change.
//!
//! A retransmission was *spurious* when an earlier transmission of the same bytes reached the
//! receiver (RTOs and fast retransmits are labelled by the retransmission they send). What a
//! segment's truth says can change as long as the sender may send it again or a copy of it is
//! still in the network. Once the segment lies wholly below `snd_una` (the sender never sends it
//! again) and no copy is in flight, its truth is final: it is *retired*, its spurious
//! retransmissions are folded into a counter, and only segments that a recorded event refers to
//! keep their final answer. Memory is bounded by the segments outstanding plus the events,
//! never by the length of the run.

use std::collections::{BTreeMap, VecDeque};

/// `first_delivered` of a segment no copy of which has reached the receiver.
pub const NO_DELIVERY: u16 = u16::MAX;

#[derive(Copy, Clone)]
struct SegTruth {
    /// Transmissions sent so far.
    tx_count: u16,
    /// Lowest transmission number that reached the receiver (`NO_DELIVERY`: none yet).
    first_delivered: u16,
    /// Copies in the network (sent, neither delivered nor dropped).
    in_net: u16,
    /// An RTO, fast retransmit or episode refers to this segment: keep its answer on retiring.
    referenced: bool,
}

const FRESH: SegTruth = SegTruth {
    tx_count: 0,
    first_delivered: NO_DELIVERY,
    in_net: 0,
    referenced: false,
};

/// The truth of one flow's segments (indexed by `seq / mss`).
#[derive(Default)]
pub struct Truth {
    /// Segment index of `live[0]`; every segment below it is retired.
    base: usize,
    live: VecDeque<SegTruth>,
    /// `first_delivered` of retired segments that an event refers to.
    settled: BTreeMap<usize, u16>,
    /// Spurious retransmissions of retired segments.
    retired_spurious: u64,
}

impl Truth {
    fn get_mut(&mut self, idx: usize) -> Option<&mut SegTruth> {
        idx.checked_sub(self.base)
            .and_then(|i| self.live.get_mut(i))
    }

    /// A transmission of segment `idx` leaves the sender; returns its transmission number
    /// (0 for the original).
    pub fn on_send(&mut self, idx: usize) -> u16 {
        debug_assert!(idx >= self.base, "a retired segment is never sent again");
        let Some(i) = idx.checked_sub(self.base) else {
            return u16::MAX;
        };
        if self.live.len() == i {
            self.live.push_back(FRESH); // the usual case: the next new segment
        } else if self.live.len() < i {
            self.live.resize(i + 1, FRESH);
        }
        let s = &mut self.live[i];
        let tn = s.tx_count;
        s.tx_count = tn.saturating_add(1);
        s.in_net = s.in_net.saturating_add(1);
        tn
    }

    /// An event (an RTO, a fast retransmit, an episode's trigger) refers to segment `idx`.
    pub fn refer(&mut self, idx: usize) {
        if let Some(s) = self.get_mut(idx) {
            s.referenced = true;
        }
    }

    /// Transmission `tx` of segment `idx` reached the receiver.
    pub fn on_delivered(&mut self, idx: usize, tx: u16) {
        if let Some(s) = self.get_mut(idx) {
            s.first_delivered = s.first_delivered.min(tx);
            s.in_net = s.in_net.saturating_sub(1);
        }
    }

    /// A copy of segment `idx` was dropped in the network.
    pub fn on_dropped(&mut self, idx: usize) {
        if let Some(s) = self.get_mut(idx) {
            s.in_net = s.in_net.saturating_sub(1);
        }
    }

    /// Retires the settled segments below `acked_segments` (the number of whole segments below
    /// `snd_una`), oldest first, stopping at the first one with a copy still in flight.
    pub fn retire(&mut self, acked_segments: usize) {
        while self.base < acked_segments {
            let Some(s) = self.live.front() else {
                self.base = acked_segments;
                return;
            };
            if s.in_net > 0 {
                return;
            }
            self.retired_spurious += spurious_copies(s);
            if s.referenced {
                self.settled.insert(self.base, s.first_delivered);
            }
            self.live.pop_front();
            self.base += 1;
        }
    }

    /// Whether transmission `tn` of segment `idx` was spurious: an earlier one arrived.
    pub fn spurious(&self, idx: usize, tn: u16) -> bool {
        let fd = match idx.checked_sub(self.base) {
            Some(i) => self.live.get(i).map_or(NO_DELIVERY, |s| s.first_delivered),
            None => *self.settled.get(&idx).unwrap_or(&NO_DELIVERY),
        };
        fd != NO_DELIVERY && fd < tn
    }

    /// Spurious retransmissions of the flow: transmissions sent after the first one that
    /// arrived.
    pub fn spurious_retx(&self) -> u64 {
        self.retired_spurious + self.live.iter().map(spurious_copies).sum::<u64>()
    }

    /// Segments whose truth is still kept (for tests of the bound).
    #[cfg(test)]
    pub fn live_len(&self) -> usize {
        self.live.len()
    }
}

fn spurious_copies(s: &SegTruth) -> u64 {
    if s.first_delivered == NO_DELIVERY || s.tx_count == 0 {
        return 0;
    }
    (s.tx_count as u64 - 1).saturating_sub(s.first_delivered as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retransmission_is_spurious_when_an_earlier_copy_arrived() {
        let mut t = Truth::default();
        assert_eq!(t.on_send(0), 0);
        assert_eq!(t.on_send(0), 1); // retransmitted while the original is delayed
        t.refer(0);
        t.on_delivered(0, 0);
        t.on_delivered(0, 1);
        assert!(t.spurious(0, 1));
        assert!(!t.spurious(0, 0));
        assert_eq!(t.spurious_retx(), 1);
    }

    #[test]
    fn a_segment_retires_only_when_acked_and_no_copy_is_in_flight() {
        let mut t = Truth::default();
        t.on_send(0);
        t.on_send(1);
        t.on_delivered(0, 0);
        t.retire(1);
        assert_eq!(t.live_len(), 1, "segment 0 retired");
        // Segment 1: acknowledged (by a later copy, say) but its original still in flight.
        t.on_send(1);
        t.refer(1);
        t.on_delivered(1, 1);
        t.retire(2);
        assert_eq!(
            t.live_len(),
            1,
            "a copy of segment 1 is still in the network"
        );
        assert!(!t.spurious(1, 1));
        t.on_delivered(1, 0); // the delayed original arrives after all
        t.retire(2);
        assert_eq!(t.live_len(), 0);
        // The answer survives retirement for the event that refers to it.
        assert!(t.spurious(1, 1));
        assert_eq!(t.spurious_retx(), 1);
    }

    #[test]
    fn a_dropped_copy_leaves_the_network_too() {
        let mut t = Truth::default();
        t.on_send(0);
        t.on_dropped(0);
        t.on_send(0);
        t.refer(0);
        t.on_delivered(0, 1);
        t.retire(1);
        assert_eq!(t.live_len(), 0);
        assert!(
            !t.spurious(0, 1),
            "the original was lost: the retransmission was needed"
        );
        assert_eq!(t.spurious_retx(), 0);
    }
}
