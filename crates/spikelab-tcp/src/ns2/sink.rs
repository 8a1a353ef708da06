//! ns-2.35's one-way TCP sinks: `Agent/TCPSink` (an ACK per packet), `TCPSink/DelAck`,
//! `TCPSink/Sack1` and `TCPSink/Sack1/DelAck` (ns-2's `tcp/tcp-sink.cc`, defaults from
//! `tcl/lib/ns-default.tcl`).
//!
//! * The ACK carries the highest packet received in order (`Acker::Seqno`).
//! * DelAck (`interval_` 100 ms): an in-order packet that fills no gap, arriving while no ACK
//!   is held, is held and the timer started; any other packet (a second in-order one, one out
//!   of order, one filling a gap, the SYN) is ACKed at once and cancels the timer. When the
//!   timer fires the held packet is ACKed.
//! * Sack1 (`maxSackBlocks_` 3, no DSACK): while the receiver holds data above a gap, the first
//!   block covers the packet just received, then the remembered blocks (most recent first) that
//!   it does not cover; the memory is emptied once everything seen is in order. An ACK is
//!   40 bytes plus 8 per block.
//!
//! Packets are numbered as ns-2 numbers them: the SYN is 0 and data packet k (from 1) carries
//! bytes `[(k − 1)·mss, k·mss)` (without a handshake data starts at packet 0); an ACK of the
//! highest packet received in order acknowledges the bytes delivered.

use crate::{Segment, TcpConfig, Timestamps};
use spikelab_core::{SimDuration, SimTime};
use std::collections::{BTreeMap, VecDeque};

/// ns-2's `maxSackBlocks_`.
const MAX_SACK_BLOCKS: usize = 3;

/// A sink as ns-2.35 runs it.
#[derive(Clone, Debug)]
pub struct Ns2Sink {
    mss: u64,
    window: u64,
    delack: Option<SimDuration>,
    sack: bool,
    /// Number of the first data packet: 1 after a SYN, else 0.
    base: i64,
    /// The next packet expected (`next_`).
    next: i64,
    /// The highest packet seen (`maxseen_`, −1 before any).
    maxseen: i64,
    /// Packets above `next` seen so far, with their payload lengths.
    above: BTreeMap<i64, u32>,
    /// Payload bytes delivered in order.
    rcv_nxt: u64,
    /// The packet whose ACK is held, and when the delayed-ACK timer fires.
    held: Option<(i64, SimTime)>,
    /// Remembered SACK blocks, most recent first (`SackStack`).
    stack: VecDeque<(i64, i64)>,
    out: VecDeque<Segment>,
    /// The timestamp the next ACK echoes (`ts_echo_`), when the agent sends them.
    echo: Option<Timestamps>,
}

impl Ns2Sink {
    pub fn new(cfg: &TcpConfig) -> Ns2Sink {
        Ns2Sink {
            mss: cfg.mss as u64,
            window: cfg.rwnd,
            delack: cfg.delayed_ack.then_some(cfg.delack_timeout),
            sack: cfg.variant == crate::Variant::Sack,
            base: cfg.handshake as i64,
            next: 0,
            maxseen: -1,
            above: BTreeMap::new(),
            rcv_nxt: 0,
            held: None,
            stack: VecDeque::new(),
            out: VecDeque::new(),
            echo: None,
        }
    }

    /// Payload bytes received in order.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    pub fn next_timer(&self) -> Option<SimTime> {
        self.held.map(|(_, t)| t)
    }

    /// The ns-2 number of a data segment or the SYN.
    fn number(&self, seg: &Segment) -> i64 {
        if seg.syn {
            0
        } else {
            (seg.seq / self.mss) as i64 + self.base
        }
    }

    fn seen(&self, k: i64) -> bool {
        k < self.next || self.above.contains_key(&k)
    }

    pub fn on_segment(&mut self, now: SimTime, seg: &Segment) {
        // `ts_echo_`: the send time of the packet that triggers the ACK (Eifel's agent only).
        self.echo = seg.ts.map(|t| Timestamps { val: 0, ecr: t.val });
        let k = self.number(seg);
        let dup = self.seen(k);
        if k > self.maxseen {
            self.maxseen = k;
        }
        if !dup && k >= self.next {
            self.above.insert(k, seg.len);
            while let Some(len) = self.above.remove(&self.next) {
                self.rcv_nxt += len as u64;
                self.next += 1;
            }
        }
        let cum = self.next - 1;
        if let Some(interval) = self.delack {
            // Hold the ACK of an in-order packet that fills no gap when none is held.
            if self.held.is_none() && k == cum && k >= self.maxseen && k != 0 {
                self.held = Some((k, now + interval));
                return;
            }
            self.held = None;
        }
        self.ack(k, dup);
    }

    /// The delayed-ACK timer fired: ACK the held packet.
    pub fn on_timer(&mut self, now: SimTime) {
        if let Some((k, t)) = self.held {
            if t <= now {
                self.held = None;
                self.ack(k, false);
            }
        }
    }

    pub fn poll_transmit(&mut self, _now: SimTime) -> Option<Segment> {
        self.out.pop_front()
    }

    /// Builds the ACK for packet `k` just received (`TcpSink::ack`, `Sacker::append_ack`).
    fn ack(&mut self, k: i64, dup: bool) {
        let cum = self.next - 1;
        let mut seg = Segment {
            ack: self.byte_of(cum),
            window: self.window,
            ts: self.echo,
            ..Segment::default()
        };
        if self.sack {
            let mut blocks: Vec<(i64, i64)> = Vec::new();
            if cum >= self.maxseen {
                self.stack.clear();
            } else if cum < self.maxseen || dup {
                let mut recent = None;
                if k > cum {
                    // The run of seen packets around k.
                    let mut right = k;
                    while right <= self.maxseen && self.seen(right) {
                        right += 1;
                    }
                    let mut left = k;
                    while left - 1 > cum && self.seen(left - 1) {
                        left -= 1;
                    }
                    blocks.push((left, right));
                    recent = Some((left, right));
                }
                let mut i = 0;
                while blocks.len() < MAX_SACK_BLOCKS && i < self.stack.len() {
                    let (l, r) = self.stack[i];
                    if r > self.maxseen + 1 {
                        break;
                    }
                    if let Some((rl, rr)) = recent {
                        if rl <= l && rr >= r {
                            self.stack.remove(i);
                            continue;
                        }
                    }
                    blocks.push((l, r));
                    i += 1;
                }
                if let Some(r) = recent {
                    self.stack.push_front(r);
                    self.stack.truncate(MAX_SACK_BLOCKS);
                }
            }
            for (l, r) in blocks {
                seg.sack.push(self.byte_of(l - 1), self.byte_of(r - 1));
            }
        }
        self.out.push_back(seg);
    }

    /// The byte acknowledged by an ACK of packet `k`: data packet k ends at `k·mss`; the last
    /// packet received in order may be a transfer's shorter last one.
    fn byte_of(&self, k: i64) -> u64 {
        if k == self.next - 1 {
            self.rcv_nxt
        } else {
            (k + 1 - self.base).max(0) as u64 * self.mss
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(delayed_ack: bool, sack: bool) -> TcpConfig {
        TcpConfig {
            mss: 1000,
            delayed_ack,
            delack_timeout: SimDuration::from_millis(100),
            variant: if sack {
                crate::Variant::Sack
            } else {
                crate::Variant::NewReno
            },
            handshake: true,
            ..TcpConfig::default()
        }
    }

    fn data(k: u64) -> Segment {
        Segment {
            seq: (k - 1) * 1000,
            len: 1000,
            ..Segment::default()
        }
    }

    fn acks(s: &mut Ns2Sink) -> Vec<Segment> {
        std::iter::from_fn(|| s.poll_transmit(SimTime::ZERO)).collect()
    }

    #[test]
    fn plain_sink_acks_every_packet_with_the_highest_in_order() {
        let mut s = Ns2Sink::new(&cfg(false, false));
        let t = SimTime::ZERO;
        s.on_segment(
            t,
            &Segment {
                syn: true,
                ..Segment::default()
            },
        );
        s.on_segment(t, &data(1));
        s.on_segment(t, &data(3));
        let a: Vec<u64> = acks(&mut s).iter().map(|a| a.ack).collect();
        assert_eq!(a, vec![0, 1000, 1000]);
        s.on_segment(t, &data(2));
        assert_eq!(acks(&mut s)[0].ack, 3000);
        assert_eq!(s.rcv_nxt(), 3000);
    }

    #[test]
    fn delack_holds_one_in_order_packet_for_100_ms() {
        let mut s = Ns2Sink::new(&cfg(true, false));
        let t = SimTime::from_millis(1000);
        s.on_segment(
            t,
            &Segment {
                syn: true,
                ..Segment::default()
            },
        );
        // The SYN is ACKed at once.
        assert_eq!(acks(&mut s).len(), 1);
        s.on_segment(t, &data(1));
        assert!(acks(&mut s).is_empty());
        assert_eq!(s.next_timer(), Some(SimTime::from_millis(1100)));
        // The second packet releases the ACK of both.
        s.on_segment(t, &data(2));
        assert_eq!(acks(&mut s)[0].ack, 2000);
        assert_eq!(s.next_timer(), None);
        s.on_segment(t, &data(3));
        s.on_timer(SimTime::from_millis(1099));
        assert!(acks(&mut s).is_empty());
        s.on_timer(SimTime::from_millis(1100));
        assert_eq!(acks(&mut s)[0].ack, 3000);
        // Out of order: at once; the gap fill: at once too.
        s.on_segment(t, &data(5));
        assert_eq!(acks(&mut s)[0].ack, 3000);
        s.on_segment(t, &data(4));
        assert_eq!(acks(&mut s)[0].ack, 5000);
    }

    #[test]
    fn sack_blocks_put_the_latest_first_and_cost_eight_bytes_each() {
        let mut s = Ns2Sink::new(&cfg(false, true));
        let t = SimTime::ZERO;
        s.on_segment(
            t,
            &Segment {
                syn: true,
                ..Segment::default()
            },
        );
        for k in [1, 3, 4, 6, 8] {
            s.on_segment(t, &data(k));
        }
        let last = acks(&mut s).pop().unwrap();
        // Packet 8 first, then 6, then 3-4 (packets k → bytes [(k−1)·1000, k·1000)).
        assert_eq!(
            last.sack.as_slice(),
            &[(7000, 8000), (5000, 6000), (2000, 4000)]
        );
        assert_eq!(last.ack, 1000);
        assert_eq!(crate::ns2::wire_size(&last), 40 + 3 * 8);
        s.on_segment(t, &data(2));
        s.on_segment(t, &data(5));
        s.on_segment(t, &data(7));
        let last = acks(&mut s).pop().unwrap();
        assert_eq!(last.ack, 8000);
        assert!(last.sack.is_empty());
    }
}
