//! The sender's per-segment record of outstanding data, from `snd_una` to `snd_max`.
//!
//! Segments have fixed boundaries, so entry `i` covers the `i`-th segment after `snd_una`. The
//! record holds what RFC 6675 calls the scoreboard (SACKed or not) and how often each segment
//! has been sent.

use std::collections::VecDeque;

use spikelab_core::SimTime;

#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct SegMeta {
    /// Payload bytes.
    pub len: u32,
    pub sacked: bool,
    /// Transmissions so far (1 after the original).
    pub tx_count: u16,
    /// Time of the latest transmission (RFC 8985 `Segment.xmit_ts`).
    pub xmit_time: SimTime,
    /// Marked lost by RACK (Linux `TCPCB_LOST`); only set when RACK runs.
    pub lost: bool,
    /// A retransmission of the segment is in flight, not yet judged lost (Linux
    /// `TCPCB_SACKED_RETRANS`).
    pub retrans: bool,
}

#[derive(Debug)]
pub(crate) struct Scoreboard {
    /// Segment size: every entry but possibly the last covers exactly `mss` bytes.
    mss: u64,
    /// Sequence number of the first entry (= `snd_una`).
    base: u64,
    segs: VecDeque<SegMeta>,
    /// Bytes currently marked SACKed.
    sacked_bytes: u64,
}

impl Scoreboard {
    pub fn new(mss: u64) -> Scoreboard {
        Scoreboard {
            mss,
            base: 0,
            segs: VecDeque::with_capacity(1024),
            sacked_bytes: 0,
        }
    }

    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }

    /// Records the original transmission of a new segment at `snd_max`.
    pub fn push_new(&mut self, len: u32, now: SimTime) {
        self.segs.push_back(SegMeta {
            len,
            sacked: false,
            tx_count: 1,
            xmit_time: now,
            lost: false,
            retrans: false,
        });
    }

    /// Entries as (sequence number, meta), mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (u64, &mut SegMeta)> + '_ {
        let (base, mss) = (self.base, self.mss);
        self.segs
            .iter_mut()
            .enumerate()
            .map(move |(i, m)| (base + i as u64 * mss, m))
    }

    /// Sequence number of the first entry (`snd_una`).
    #[inline]
    pub fn first_seq(&self) -> Option<u64> {
        (!self.segs.is_empty()).then_some(self.base)
    }

    /// Sequence number of the last entry.
    pub fn last_seq(&self) -> Option<u64> {
        (!self.segs.is_empty()).then(|| self.base + (self.segs.len() as u64 - 1) * self.mss)
    }

    /// Entries iterate as (sequence number, meta).
    /// Entries as (sequence number, meta). The sequence number is computed from the index, so
    /// the iterator is correct in both directions.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &SegMeta)> + '_ {
        let (base, mss) = (self.base, self.mss);
        self.segs
            .iter()
            .enumerate()
            .map(move |(i, m)| (base + i as u64 * mss, m))
    }

    /// The entry starting at `seq`. Only the last segment of a stream may be shorter than
    /// `mss`, so the index is `(seq − base) / mss`.
    pub fn get_mut(&mut self, seq: u64, mss: u64) -> Option<&mut SegMeta> {
        if seq < self.base || !(seq - self.base).is_multiple_of(mss) {
            return None;
        }
        self.segs.get_mut(((seq - self.base) / mss) as usize)
    }

    pub fn get(&self, seq: u64, mss: u64) -> Option<&SegMeta> {
        if seq < self.base || !(seq - self.base).is_multiple_of(mss) {
            return None;
        }
        self.segs.get(((seq - self.base) / mss) as usize)
    }

    /// Drops entries below the new cumulative ACK, calling `visit(meta)` on each, oldest first.
    pub fn advance_visit(&mut self, ack: u64, mut visit: impl FnMut(&SegMeta)) {
        while let Some(front) = self.segs.front() {
            let end = self.base + front.len as u64;
            if end > ack {
                break;
            }
            visit(front);
            if front.sacked {
                self.sacked_bytes -= front.len as u64;
            }
            self.base = end;
            self.segs.pop_front();
        }
        debug_assert!(
            self.segs.is_empty() || self.base == ack,
            "ACK inside a segment"
        );
        if self.segs.is_empty() {
            self.base = self.base.max(ack);
        }
    }

    /// Marks every segment wholly inside `[start, end)` as SACKed; returns the newly SACKed bytes.
    #[cfg(test)]
    pub fn mark_sacked(&mut self, start: u64, end: u64) -> u64 {
        self.mark_sacked_visit(start, end, |_, _| {})
    }

    /// [`Scoreboard::mark_sacked`], calling `visit(seq, meta)` on each newly SACKed entry.
    pub fn mark_sacked_visit(
        &mut self,
        start: u64,
        end: u64,
        mut visit: impl FnMut(u64, &SegMeta),
    ) -> u64 {
        let mut newly = 0;
        // Entries below `start` cannot be inside the block: begin at its first segment.
        let first = (start.saturating_sub(self.base) / self.mss) as usize;
        let mut s = self.base + first as u64 * self.mss;
        for m in self.segs.iter_mut().skip(first) {
            let e = s + m.len as u64;
            if s >= end {
                break;
            }
            if s >= start && e <= end && !m.sacked {
                m.sacked = true;
                newly += m.len as u64;
                visit(s, m);
            }
            s = e;
        }
        self.sacked_bytes += newly;
        newly
    }

    pub fn clear_sacked(&mut self) {
        for m in self.segs.iter_mut() {
            m.sacked = false;
        }
        self.sacked_bytes = 0;
    }

    /// Clears the RACK marks (lost, retransmission in flight) of every entry.
    pub fn clear_lost(&mut self) {
        for m in self.segs.iter_mut() {
            m.lost = false;
            m.retrans = false;
        }
    }

    /// The lowest entry marked lost and not retransmitted since, not SACKed (RFC 8985 with
    /// RFC 6675 `NextSeg()` rule 1).
    pub fn first_lost(&self) -> Option<u64> {
        self.iter()
            .find(|(_, m)| !m.sacked && m.lost && !m.retrans)
            .map(|(s, _)| s)
    }

    /// Bytes in flight with RACK's marks (Linux `tcp_packets_in_flight`: `packets_out −
    /// sacked_out − lost_out + retrans_out`): an entry not SACKed counts once if not lost, and
    /// once more for a retransmission in flight.
    pub fn rack_pipe(&self) -> u64 {
        self.segs
            .iter()
            .filter(|m| !m.sacked)
            .map(|m| m.len as u64 * (!m.lost as u64 + m.retrans as u64))
            .sum()
    }

    /// One past the highest SACKed byte, if any.
    pub fn highest_sacked_end(&self) -> Option<u64> {
        self.iter()
            .rev()
            .find(|(_, m)| m.sacked)
            .map(|(s, m)| s + m.len as u64)
    }

    /// `IsLost` is monotone: an entry has at least as many SACKed entries above it as any
    /// entry above it, so the lost entries are exactly those below one boundary. Returns that
    /// boundary (entries starting below it are lost; `base` when none is) and the bytes not
    /// SACKed at or above it, from one walk down from the top that stops at the boundary.
    pub fn lost_boundary(&self, dupthresh: u32, mss: u64) -> (u64, u64) {
        let mut sacked_segs = 0u32;
        let mut sacked_bytes = 0u64;
        let mut unsacked_above = 0u64;
        for (seq, m) in self.iter().rev() {
            if sacked_segs >= dupthresh || sacked_bytes > (dupthresh as u64 - 1) * mss {
                return (seq + m.len as u64, unsacked_above);
            }
            if m.sacked {
                sacked_segs += 1;
                sacked_bytes += m.len as u64;
            } else {
                unsacked_above += m.len as u64;
            }
        }
        (self.base, unsacked_above)
    }

    /// Index of the first entry starting at or above `seq`.
    fn index_from(&self, seq: u64) -> usize {
        seq.saturating_sub(self.base).div_ceil(self.mss) as usize
    }

    /// The lowest entry at or above `seq` that is not SACKed.
    pub fn first_unsacked_from(&self, seq: u64) -> Option<u64> {
        let i = self.index_from(seq);
        self.segs
            .iter()
            .skip(i)
            .position(|m| !m.sacked)
            .map(|k| self.base + (i + k) as u64 * self.mss)
    }

    /// Bytes not SACKed in the entries starting below `seq`.
    pub fn unsacked_below(&self, seq: u64) -> u64 {
        self.iter()
            .take_while(|(s, _)| *s < seq)
            .filter(|(_, m)| !m.sacked)
            .map(|(_, m)| m.len as u64)
            .sum()
    }

    /// Whether an entry wholly inside `[start, end)` and ending at or below `limit` is an
    /// original transmission not yet reported: neither SACKed nor retransmitted (what Linux
    /// flags `FLAG_ORIG_SACK_ACKED` for when an ACK or SACK covers it).
    pub fn has_unreported_original(&self, start: u64, end: u64, limit: u64) -> bool {
        let end = end.min(limit);
        let i = self.index_from(start);
        let mut s = self.base + i as u64 * self.mss;
        for m in self.segs.iter().skip(i) {
            let e = s + m.len as u64;
            if e > end {
                break;
            }
            if !m.sacked && m.tx_count == 1 {
                return true;
            }
            s = e;
        }
        false
    }

    /// Retransmitted entries neither acknowledged nor SACKed (Linux `retrans_out`).
    pub fn retransmitted_in_flight(&self) -> usize {
        self.segs
            .iter()
            .filter(|m| !m.sacked && m.tx_count > 1)
            .count()
    }

    pub fn is_lost(&self, seq: u64, dupthresh: u32, mss: u64) -> bool {
        let mut sacked_segs = 0u32;
        let mut sacked_bytes = 0u64;
        for (s, m) in self.iter().rev() {
            if s <= seq {
                break;
            }
            if m.sacked {
                sacked_segs += 1;
                sacked_bytes += m.len as u64;
            }
        }
        sacked_segs >= dupthresh || sacked_bytes > (dupthresh as u64 - 1) * mss
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6675 `IsLost` for one entry, counted from scratch: at least `dupthresh` SACKed
    /// segments above it, or more than `(dupthresh − 1)·SMSS` SACKed bytes.
    fn is_lost_by_count(b: &Scoreboard, seq: u64, dupthresh: u32, mss: u64) -> bool {
        let above: Vec<&SegMeta> = b
            .iter()
            .filter(|(s, m)| *s > seq && m.sacked)
            .map(|(_, m)| m)
            .collect();
        above.len() as u32 >= dupthresh
            || above.iter().map(|m| m.len as u64).sum::<u64>() > (dupthresh as u64 - 1) * mss
    }

    #[test]
    fn the_lost_boundary_and_the_walks_agree_with_is_lost_counted_per_segment() {
        let mss = 100;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let mut b = Scoreboard::new(mss);
            let n = next() % 40;
            for _ in 0..n {
                b.push_new(mss as u32, SimTime::ZERO);
            }
            for i in 0..n {
                if next() % 3 == 0 {
                    b.mark_sacked(i * mss, (i + 1) * mss);
                }
            }
            let dupthresh = 1 + (next() % 4) as u32;
            let (boundary, not_lost) = b.lost_boundary(dupthresh, mss);
            let mut want_not_lost = 0;
            for (seq, m) in b.iter() {
                let lost = is_lost_by_count(&b, seq, dupthresh, mss);
                assert_eq!(seq < boundary, lost, "seq {seq}, boundary {boundary}");
                assert_eq!(b.is_lost(seq, dupthresh, mss), lost);
                if !m.sacked && !lost {
                    want_not_lost += m.len as u64;
                }
            }
            assert_eq!(not_lost, want_not_lost);
            let from = next() % (n * mss + 1);
            let first = b
                .iter()
                .find(|(s, m)| *s >= from && !m.sacked)
                .map(|(s, _)| s);
            assert_eq!(b.first_unsacked_from(from), first);
            let below: u64 = b
                .iter()
                .filter(|(s, m)| *s < from && !m.sacked)
                .map(|(_, m)| m.len as u64)
                .sum();
            assert_eq!(b.unsacked_below(from), below);
        }
    }
}
