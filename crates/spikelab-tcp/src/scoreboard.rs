//! The sender's per-segment record of outstanding data, from `snd_una` to `snd_max`.
//!
//! Segments have fixed boundaries, so entry `i` covers the `i`-th segment after `snd_una`. The
//! record holds what RFC 6675 calls the scoreboard (SACKed or not) and how often each segment
//! has been sent.

use std::collections::VecDeque;

#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct SegMeta {
    /// Payload bytes.
    pub len: u32,
    pub sacked: bool,
    /// Transmissions so far (1 after the original).
    pub tx_count: u16,
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
    pub fn push_new(&mut self, len: u32) {
        self.segs.push_back(SegMeta {
            len,
            sacked: false,
            tx_count: 1,
        });
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

    /// Drops entries below the new cumulative ACK.
    pub fn advance(&mut self, ack: u64) {
        while let Some(front) = self.segs.front() {
            let end = self.base + front.len as u64;
            if end > ack {
                break;
            }
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
    pub fn mark_sacked(&mut self, start: u64, end: u64) -> u64 {
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

    /// One past the highest SACKed byte, if any.
    pub fn highest_sacked_end(&self) -> Option<u64> {
        self.iter()
            .rev()
            .find(|(_, m)| m.sacked)
            .map(|(s, m)| s + m.len as u64)
    }

    /// RFC 6675 `IsLost` for every entry, lowest first: a segment is lost when at least
    /// `dupthresh` SACKed segments lie above it, or more than `(dupthresh − 1)·SMSS` SACKed
    /// bytes do. Calls `f(seq, meta, lost)` from the highest entry down.
    pub fn for_each_rev_with_lost(
        &self,
        dupthresh: u32,
        mss: u64,
        mut f: impl FnMut(u64, &SegMeta, bool),
    ) {
        let mut sacked_segs = 0u32;
        let mut sacked_bytes = 0u64;
        for (seq, m) in self.iter().rev() {
            let lost = sacked_segs >= dupthresh || sacked_bytes > (dupthresh as u64 - 1) * mss;
            f(seq, m, lost);
            if m.sacked {
                sacked_segs += 1;
                sacked_bytes += m.len as u64;
            }
        }
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
