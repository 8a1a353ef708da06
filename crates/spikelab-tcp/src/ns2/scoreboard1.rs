//! The scoreboard of ns-2.35's `Agent/TCP/Linux` (`ScoreBoard1`, ns-2's `tcp/scoreboard1.cc`):
//! the packets from `snd_una` to the highest SACKed one, in blocks that are in flight, SACKed,
//! lost or retransmitted, with FACK loss marking. Packet numbers are ns-2's; SACK blocks are
//! `[left, right)`, as the Sack1 sink writes them.
//!
//! * A packet in flight is lost once the highest SACKed packet (`fack`) is 4 or more above it
//!   (`fack − (dupack_threshold + 1)`, the threshold fixed at 3): FACK, whatever number of
//!   packets were SACKed in between.
//! * A retransmitted packet is lost again when a packet first sent after its retransmission
//!   is SACKed (`snd_nxt ≤ fack`), or when a retransmission made 4 later has been SACKed or
//!   acknowledged (`rtx_id + 4 < acked_rtx_id`).
//! * SACK blocks below the cumulative ACK are ignored (no DSACK).
//! * Packets in flight count `snd_nxt − snd_una` less the lost and the SACKed ones
//!   (`packets_in_flight`): a retransmission is in flight until it is SACKed, ACKed or lost.
//! * A timeout marks every packet not SACKed lost (`MarkLoss`); the SACKed ones are kept.
//! * Lost packets are offered for retransmission lowest first (`GetNextRetran`); retransmitting
//!   one turns it into a one-packet retransmitted block (`MarkRetran`).
//!
//! The blocks live in an arena linked as ns-2 links its nodes, so that the traversal of
//! `UpdateScoreBoard` (splits, merges, appends while walking) is ns-2's step for step.

/// `SKB_FLAG_*`.
const INFLIGHT: u8 = 0;
const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETRANSMITTED: u8 = 4;

/// `ScoreBoard1::UpdateScoreBoard`'s `dupack_threshold` (its default: `LinuxTcpAgent::recv`
/// passes none).
const DUPACK_THRESHOLD: i64 = 3;

/// The flags `UpdateScoreBoard` returns (ns-2's `tcp/linux/ns-linux-util.h`).
pub const FLAG_DATA_SACKED: u8 = 2;
pub const FLAG_DATA_LOST: u8 = 8;
pub const FLAG_UNSURE_TSTAMP: u8 = 16;

/// `ScoreBoardNode1`.
#[derive(Clone, Debug)]
struct Node {
    flag: u8,
    seq: i64,
    /// The block's last packet, or, retransmitted, `snd_nxt` when it was retransmitted.
    nxt: i64,
    /// The retransmission's number (`rtx_id_` when it was sent).
    retran: i64,
    next: Option<usize>,
}

impl Node {
    fn end(&self) -> i64 {
        if self.flag == RETRANSMITTED {
            self.seq
        } else {
            self.nxt
        }
    }
    fn length(&self) -> i64 {
        if self.flag == RETRANSMITTED {
            1
        } else {
            self.nxt + 1 - self.seq
        }
    }
    fn set_flag(&mut self, flag: u8) {
        if self.flag == RETRANSMITTED {
            self.nxt = self.seq;
        }
        self.flag = flag;
    }
    /// 0: keep; −1: the whole block is acknowledged; n > 0: its first n packets are.
    fn should_clean(&self, ack: i64) -> i64 {
        if ack < self.seq {
            0
        } else if self.flag == RETRANSMITTED || ack >= self.nxt {
            -1
        } else {
            ack + 1 - self.seq
        }
    }
}

#[derive(Clone, Debug)]
pub struct ScoreBoard1 {
    nodes: Vec<Node>,
    free: Vec<usize>,
    head: Option<usize>,
    nxt_to_retrx: Option<usize>,
    acked_rtx_id: i64,
    rtx_id: i64,
    fack: i64,
    fack_out: i64,
    sack_out: i64,
}

impl Default for ScoreBoard1 {
    fn default() -> Self {
        Self::new()
    }
}

impl ScoreBoard1 {
    pub fn new() -> ScoreBoard1 {
        ScoreBoard1 {
            nodes: Vec::new(),
            free: Vec::new(),
            head: None,
            nxt_to_retrx: None,
            acked_rtx_id: -1,
            rtx_id: 0,
            fack: 0,
            fack_out: 0,
            sack_out: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.head.is_none()
    }
    /// Packets marked lost and not retransmitted since (`fack_out_`).
    pub fn fack_out(&self) -> i64 {
        self.fack_out
    }
    /// Packets SACKed (`sack_out_`).
    pub fn sack_out(&self) -> i64 {
        self.sack_out
    }
    /// `packets_in_flight(snd_una, snd_nxt)`.
    pub fn packets_in_flight(&self, snd_una: i64, snd_nxt: i64) -> i64 {
        snd_nxt - snd_una - self.fack_out - self.sack_out
    }

    // ---- the arena ------------------------------------------------------------------------

    fn alloc(&mut self, seq: i64, nxt: i64, flag: u8) -> usize {
        let n = Node {
            flag,
            seq,
            nxt,
            retran: 0,
            next: None,
        };
        if let Some(i) = self.free.pop() {
            self.nodes[i] = n;
            i
        } else {
            self.nodes.push(n);
            self.nodes.len() - 1
        }
    }
    fn release(&mut self, i: usize) {
        self.free.push(i);
    }
    fn next(&self, i: usize) -> Option<usize> {
        self.nodes[i].next
    }
    /// `Split(seq)`: the node keeps `[seq_, seq − 1]`, a new one after it `[seq, nxt_]`.
    fn split(&mut self, i: usize, seq: i64) -> usize {
        let (nxt, flag, next) = {
            let n = &self.nodes[i];
            (n.nxt, n.flag, n.next)
        };
        let j = self.alloc(seq, nxt, flag);
        self.nodes[j].next = next;
        self.nodes[i].next = Some(j);
        self.nodes[i].nxt = seq - 1;
        j
    }
    /// `Mergable`: the next node has the same flag and is not a retransmission.
    fn mergable(&self, i: usize) -> bool {
        match self.nodes[i].next {
            Some(j) => {
                let f = self.nodes[j].flag;
                f != RETRANSMITTED && f == self.nodes[i].flag
            }
            None => false,
        }
    }
    /// `Merge`: the node absorbs the next one.
    fn merge(&mut self, i: usize) {
        let j = self.nodes[i].next.expect("merge with a next node");
        self.nodes[i].nxt = self.nodes[j].nxt;
        self.nodes[i].next = self.nodes[j].next;
        if self.nxt_to_retrx == Some(j) {
            self.nxt_to_retrx = Some(i);
        }
        self.release(j);
    }
    fn append(&mut self, i: usize, seq: i64, nxt: i64, flag: u8) -> usize {
        let j = self.alloc(seq, nxt, flag);
        self.nodes[i].next = Some(j);
        j
    }

    // ---- ScoreBoard1 ----------------------------------------------------------------------

    /// `ClearScoreBoard`.
    pub fn clear(&mut self) {
        self.rtx_id = 0;
        self.acked_rtx_id = -1;
        self.fack_out = 0;
        self.sack_out = 0;
        self.fack = 0;
        self.nxt_to_retrx = None;
        self.head = None;
        self.nodes.clear();
        self.free.clear();
    }

    /// `CleanRtxQueue`: drops what the cumulative ACK `last_ack` covers; whether an ACKed
    /// retransmission raised `acked_rtx_id`.
    fn clean_rtx_queue(&mut self, last_ack: i64, flag: &mut u8) -> bool {
        let mut changed = false;
        while let Some(h) = self.head {
            let cmp = self.nodes[h].should_clean(last_ack);
            if cmp == 0 {
                break;
            }
            let pkts = if cmp < 0 { self.nodes[h].length() } else { cmp };
            match self.nodes[h].flag {
                SACKED => self.sack_out -= pkts,
                LOST => self.fack_out -= pkts,
                _ => {}
            }
            if cmp < 0 {
                self.head = self.nodes[h].next;
                if self.nodes[h].flag == RETRANSMITTED {
                    if self.nodes[h].retran > self.acked_rtx_id {
                        changed = true;
                        self.acked_rtx_id = self.nodes[h].retran;
                    }
                    *flag |= FLAG_UNSURE_TSTAMP;
                }
                if self.nxt_to_retrx == Some(h) {
                    self.nxt_to_retrx = self.head;
                }
                self.release(h);
            } else {
                self.nodes[h].seq = last_ack + 1;
                break;
            }
        }
        changed
    }

    /// `UpdateScoreBoard(last_ack, tcph)`: the cumulative ACK (`highest_ack_`) and the ACK's
    /// SACK blocks `[left, right)`; returns `FLAG_DATA_SACKED`, `FLAG_DATA_LOST` and
    /// `FLAG_UNSURE_TSTAMP` as they apply.
    pub fn update(&mut self, last_ack: i64, blocks: &[(i64, i64)]) -> u8 {
        let mut flag = 0u8;
        let mut thorough = self.clean_rtx_queue(last_ack, &mut flag);
        if self.head.is_none() {
            self.clear();
            thorough = false;
        }
        if !thorough && blocks.is_empty() {
            return flag;
        }
        // The blocks at or above the cumulative ACK, by left edge (D-SACKs filtered).
        let mut sacks: Vec<(i64, i64)> = Vec::with_capacity(blocks.len());
        for &(l, r) in blocks {
            if l >= last_ack {
                let mut j = sacks.len();
                sacks.push((l, r));
                while j > 0 && sacks[j - 1].0 > l {
                    sacks[j] = sacks[j - 1];
                    j -= 1;
                }
                sacks[j] = (l, r);
            }
        }
        let n_sacks = sacks.len();
        if !thorough && n_sacks == 0 {
            return flag;
        }
        if n_sacks > 0 && self.fack < sacks[n_sacks - 1].1 - 1 {
            self.fack = sacks[n_sacks - 1].1 - 1;
            thorough = true;
        }
        if self.head.is_none() {
            let fack = self.fack;
            self.head = Some(self.alloc(last_ack + 1, fack, INFLIGHT));
        }
        self.nxt_to_retrx = None;
        let lost_seq_threshold = self.fack - (DUPACK_THRESHOLD + 1);
        let mut now = self.head;
        let mut prev: Option<usize> = None;
        let mut si = 0usize;
        while let Some(n) = now {
            if !(si < n_sacks || thorough) {
                break;
            }
            if self.nodes[n].flag != SACKED {
                while si < n_sacks && sacks[si].1 <= self.nodes[n].seq {
                    si += 1;
                }
                if si < n_sacks {
                    let (left, right) = sacks[si];
                    if left <= self.nodes[n].end() {
                        if left > self.nodes[n].seq {
                            self.split(n, left);
                        } else {
                            if right <= self.nodes[n].end() {
                                self.split(n, right);
                            }
                            let pkts = self.nodes[n].length();
                            match self.nodes[n].flag {
                                LOST => self.fack_out -= pkts,
                                RETRANSMITTED => {
                                    self.acked_rtx_id = self.nodes[n].retran;
                                    flag |= FLAG_UNSURE_TSTAMP;
                                    thorough = true;
                                }
                                _ => {}
                            }
                            self.sack_out += pkts;
                            flag |= FLAG_DATA_SACKED;
                            self.nodes[n].set_flag(SACKED);
                        }
                    }
                }
                if si >= n_sacks || sacks[si].0 > self.nodes[n].end() {
                    match self.nodes[n].flag {
                        RETRANSMITTED => {
                            let node = &self.nodes[n];
                            if node.nxt <= self.fack
                                || node.retran + DUPACK_THRESHOLD + 1 < self.acked_rtx_id
                            {
                                self.nodes[n].set_flag(LOST);
                                self.fack_out += 1;
                                flag |= FLAG_DATA_LOST;
                                self.nxt_to_retrx.get_or_insert(n);
                            }
                        }
                        INFLIGHT if self.nodes[n].seq <= lost_seq_threshold => {
                            if lost_seq_threshold < self.nodes[n].end() {
                                self.split(n, lost_seq_threshold + 1);
                            }
                            self.nodes[n].set_flag(LOST);
                            self.fack_out += self.nodes[n].length();
                            flag |= FLAG_DATA_LOST;
                            self.nxt_to_retrx.get_or_insert(n);
                        }
                        LOST => {
                            self.nxt_to_retrx.get_or_insert(n);
                        }
                        _ => {}
                    }
                }
            }
            let p = match prev {
                Some(p) if self.mergable(p) => {
                    self.merge(p);
                    p
                }
                _ => n,
            };
            prev = Some(p);
            if self.next(p).is_none() && self.nodes[p].end() < self.fack {
                let (s, f) = (self.nodes[p].end() + 1, self.fack);
                self.append(p, s, f, INFLIGHT);
            }
            now = self.next(p);
        }
        flag
    }

    /// `MarkLoss(snd_una, snd_nxt)`: a timeout; every packet not SACKed is lost.
    pub fn mark_loss(&mut self, snd_una: i64, snd_nxt: i64) {
        self.nxt_to_retrx = None;
        let mut now = self.head;
        let mut prev: Option<usize> = None;
        let mut last_lost = false;
        while let Some(mut n) = now {
            if self.nodes[n].flag & SACKED == 0 {
                if self.nodes[n].flag & LOST == 0 {
                    self.fack_out += self.nodes[n].end() - self.nodes[n].seq + 1;
                }
                self.nodes[n].set_flag(LOST);
                if last_lost {
                    let p = prev.expect("a lost block before");
                    self.merge(p);
                    n = p;
                } else {
                    self.nxt_to_retrx.get_or_insert(n);
                }
                last_lost = true;
            } else {
                last_lost = false;
            }
            prev = Some(n);
            now = self.next(n);
            if now.is_none() && self.nodes[n].end() + 1 < snd_nxt {
                let s = self.nodes[n].end() + 1;
                now = Some(self.append(n, s, snd_nxt - 1, INFLIGHT));
            }
        }
        if prev.is_none() && snd_una < snd_nxt {
            let h = self.alloc(snd_una, snd_nxt - 1, LOST);
            self.head = Some(h);
            self.nxt_to_retrx = Some(h);
            self.fack_out += snd_nxt - snd_una;
        }
        self.rtx_id = 0;
        self.acked_rtx_id = -1;
    }

    /// `GetNextRetran`: the lowest lost packet, if any.
    pub fn next_retran(&mut self) -> Option<i64> {
        while let Some(n) = self.nxt_to_retrx {
            if self.nodes[n].flag == LOST {
                return Some(self.nodes[n].seq);
            }
            self.nxt_to_retrx = self.nodes[n].next;
        }
        None
    }

    /// `MarkRetran(seq, snd_nxt)`: the packet [`ScoreBoard1::next_retran`] offered is sent
    /// again while `snd_nxt` is the next new packet.
    pub fn mark_retran(&mut self, seq: i64, snd_nxt: i64) {
        let n = self
            .nxt_to_retrx
            .expect("a retransmission the scoreboard offered");
        debug_assert_eq!(self.nodes[n].seq, seq);
        self.fack_out -= 1;
        if self.nodes[n].nxt > self.nodes[n].seq {
            let s = self.nodes[n].seq + 1;
            self.split(n, s);
        }
        let id = self.rtx_id;
        let node = &mut self.nodes[n];
        node.flag = RETRANSMITTED;
        node.nxt = snd_nxt;
        node.retran = id;
        self.rtx_id += 1;
    }

    /// The blocks as (first, last, flag), for tests.
    #[cfg(test)]
    fn dump(&self) -> Vec<(i64, i64, u8)> {
        let mut out = Vec::new();
        let mut now = self.head;
        while let Some(n) = now {
            let node = &self.nodes[n];
            out.push((node.seq, node.end(), node.flag));
            now = node.next;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fack_marks_a_packet_lost_once_the_highest_sack_is_four_above() {
        let mut s = ScoreBoard1::new();
        // Packet 1 acknowledged; 3 SACKed: 2 is not yet lost (3 − 4 < 2).
        let f = s.update(1, &[(3, 4)]);
        assert_eq!(f & FLAG_DATA_LOST, 0);
        assert_ne!(f & FLAG_DATA_SACKED, 0);
        assert_eq!(s.next_retran(), None);
        // 6 SACKed (fack 6): 2 is lost (≤ 6 − 4), 4 and 5 are not.
        let f = s.update(1, &[(6, 7), (3, 4)]);
        assert_ne!(f & FLAG_DATA_LOST, 0);
        assert_eq!(
            s.dump(),
            vec![
                (2, 2, LOST),
                (3, 3, SACKED),
                (4, 5, INFLIGHT),
                (6, 6, SACKED)
            ]
        );
        assert_eq!((s.fack_out(), s.sack_out()), (1, 2));
        // In flight from snd_una 2 to snd_nxt 10: 8 less one lost, two SACKed.
        assert_eq!(s.packets_in_flight(2, 10), 5);
        assert_eq!(s.next_retran(), Some(2));
        s.mark_retran(2, 10);
        assert_eq!(s.fack_out(), 0);
        assert_eq!(s.next_retran(), None);
        // A packet sent after the retransmission (10) SACKed: the retransmission is lost again,
        // and 4-5 (≤ 10 − 4) are lost too.
        let f = s.update(1, &[(10, 11), (6, 7), (3, 4)]);
        assert_ne!(f & FLAG_DATA_LOST, 0);
        assert_eq!(s.next_retran(), Some(2));
        assert_eq!(s.fack_out(), 3);
    }

    #[test]
    fn the_cumulative_ack_cleans_and_an_empty_board_clears() {
        let mut s = ScoreBoard1::new();
        s.update(1, &[(3, 5)]);
        assert!(!s.is_empty());
        // Everything up to 4 acknowledged: the board empties and forgets fack.
        s.update(4, &[]);
        assert!(s.is_empty());
        assert_eq!((s.fack_out(), s.sack_out()), (0, 0));
    }

    #[test]
    fn a_timeout_marks_all_but_the_sacked_lost_and_merges_them() {
        let mut s = ScoreBoard1::new();
        s.update(1, &[(4, 5)]);
        s.mark_loss(2, 9);
        assert_eq!(s.dump(), vec![(2, 3, LOST), (4, 4, SACKED), (5, 8, LOST)]);
        assert_eq!(s.fack_out(), 6);
        assert_eq!(s.packets_in_flight(2, 9), 0);
        // An empty board: everything outstanding is lost.
        let mut e = ScoreBoard1::new();
        e.mark_loss(5, 8);
        assert_eq!(e.dump(), vec![(5, 7, LOST)]);
        assert_eq!(e.next_retran(), Some(5));
        e.mark_retran(5, 8);
        assert_eq!(e.next_retran(), Some(6));
        assert_eq!(e.packets_in_flight(5, 8), 1);
    }
}
