//! The Sack1 agent's scoreboard, as ns-2.35's `ScoreBoardRQ` keeps it (`tcp/scoreboard-rq.cc`
//! over the reassembly queue of `tcp/rq.cc`): the SACKed packet ranges, merged, and a pointer
//! `h_seqno` below which every hole has been retransmitted in this recovery.
//!
//! A hole is only offered for retransmission when some SACKed range lies above it
//! (`GetNextRetran`); each is offered once, in order, until the scoreboard is cleared.

/// Packet ranges `[start, end)` in ns-2 sequence numbers.
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    blocks: Vec<(i64, i64)>,
    /// Every hole below this has been retransmitted (−1: none).
    h_seqno: i64,
    /// One above the highest cumulative ACK the scoreboard has seen.
    sack_min: i64,
    changed: bool,
}

impl Scoreboard {
    pub fn new() -> Scoreboard {
        Scoreboard {
            blocks: Vec::new(),
            h_seqno: -1,
            sack_min: -1,
            changed: false,
        }
    }

    fn covered(&self) -> i64 {
        self.blocks.iter().map(|(s, e)| e - s).sum()
    }

    /// Forget every range (a new ACK outside recovery, the end of recovery, a timeout). The
    /// cumulative point is kept.
    pub fn clear(&mut self) {
        self.blocks.clear();
        self.h_seqno = -1;
    }

    /// Takes an ACK's cumulative point (`last_ack`, the highest packet received in order) and
    /// its SACK blocks; [`Scoreboard::changed`] then says whether anything moved.
    pub fn update(&mut self, last_ack: i64, blocks: &[(i64, i64)]) {
        let before = self.covered();
        let mut changed = false;
        if self.sack_min <= last_ack {
            self.sack_min = last_ack + 1;
            if !self.blocks.is_empty() {
                let cut = self.sack_min;
                self.blocks.retain(|&(_, e)| e > cut);
                if let Some(b) = self.blocks.first_mut() {
                    b.0 = b.0.max(cut);
                }
                changed = true;
            }
        }
        for &(s, e) in blocks {
            self.add(s, e);
        }
        self.changed = changed || before != self.covered();
    }

    /// Whether the last [`Scoreboard::update`] changed the ranges.
    pub fn changed(&self) -> bool {
        self.changed
    }

    fn add(&mut self, s: i64, e: i64) {
        if e <= s {
            return;
        }
        let (mut s, mut e) = (s, e);
        let mut out = Vec::with_capacity(self.blocks.len() + 1);
        let mut placed = false;
        for &(bs, be) in &self.blocks {
            if be < s {
                out.push((bs, be));
            } else if bs > e {
                if !placed {
                    out.push((s, e));
                    placed = true;
                }
                out.push((bs, be));
            } else {
                // Overlapping or adjacent: merge.
                s = s.min(bs);
                e = e.max(be);
            }
        }
        if !placed {
            out.push((s, e));
        }
        out.sort_unstable();
        self.blocks = out;
    }

    /// The first hole at or above `seq`, and whether a SACKed range lies above it; `None`
    /// when `seq` is above every range.
    fn next_hole(&self, seq: i64) -> Option<(i64, bool)> {
        for (i, &(s, e)) in self.blocks.iter().enumerate() {
            if s > seq {
                return Some((seq, true));
            }
            if seq <= e {
                return Some((e, i + 1 < self.blocks.len()));
            }
        }
        None
    }

    /// The next hole to retransmit (`GetNextRetran`), if one lies below a SACKed range.
    pub fn next_retran(&mut self) -> Option<i64> {
        if self.h_seqno < self.sack_min {
            self.h_seqno = self.sack_min;
        }
        match self.next_hole(self.h_seqno) {
            Some((seq, true)) if seq > 0 => {
                if seq > self.h_seqno {
                    self.h_seqno = seq;
                }
                Some(seq)
            }
            _ => None,
        }
    }

    /// The first packet at or above `seq` not SACKed (`GetNextUnacked`).
    pub fn next_unacked(&self, seq: i64) -> Option<i64> {
        self.next_hole(seq).map(|(s, _)| s)
    }

    /// `seq` has been retransmitted.
    pub fn mark_retran(&mut self, seq: i64) {
        if seq >= self.h_seqno {
            self.h_seqno = seq + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_below_sacked_ranges_are_offered_once_in_order() {
        let mut sb = Scoreboard::new();
        // Packets 5 and 8 lost; 6-7 and 9-11 SACKed; cumulative ACK 4.
        sb.update(4, &[(6, 8), (9, 12)]);
        assert!(sb.changed());
        sb.mark_retran(5); // the fast retransmission
        assert_eq!(sb.next_retran(), Some(8));
        sb.mark_retran(8);
        // Nothing SACKed above 12: no more holes.
        assert_eq!(sb.next_retran(), None);
        // The same blocks again change nothing.
        sb.update(4, &[(6, 8), (9, 12)]);
        assert!(!sb.changed());
        // Adjacent ranges merge: 8 SACKed joins them.
        sb.update(4, &[(8, 9)]);
        assert_eq!(sb.blocks, vec![(6, 12)]);
        assert_eq!(sb.next_unacked(6), Some(12));
    }

    #[test]
    fn a_cumulative_ack_clears_ranges_below_it() {
        let mut sb = Scoreboard::new();
        sb.update(4, &[(6, 8), (9, 12)]);
        sb.update(8, &[]);
        assert!(sb.changed());
        assert_eq!(sb.blocks, vec![(9, 12)]);
        sb.clear();
        assert_eq!(sb.next_retran(), None);
    }
}
