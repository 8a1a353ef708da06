//! The rate stage: serialisation at a constant bit rate behind a finite drop-tail queue.
//!
//! A packet that arrives while the link is busy waits; the queue limit counts waiting packets
//! (or their bytes), not the one being serialised, as ns-3's device queues and Linux qdiscs do.
//! A packet arriving to a full queue is dropped at once (`queue_full`). Serialisation time is
//! `wire_size · 8 / rate`, rounded up to the nanosecond.

use crate::{DropCause, Outcome, PacketInfo};
use spikelab_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// The drop-tail queue's capacity.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

#[derive(Debug)]
pub struct RateStage {
    /// Bit rate, bits per second.
    rate_bps: u64,
    limit: QueueLimit,
    /// Time the link finishes serialising the last accepted packet.
    busy_until: SimTime,
    /// (start of serialisation, wire bytes) of accepted packets not yet started, in order.
    waiting: VecDeque<(SimTime, u32)>,
    waiting_bytes: u64,
    /// Serialisation time of the accepted packets before `busy_clip`, summed.
    busy: SimDuration,
    /// Serialisation after this time is not counted in `busy` (a run's end).
    busy_clip: SimTime,
}

impl RateStage {
    pub fn new(rate_bps: u64, limit: QueueLimit) -> RateStage {
        assert!(rate_bps > 0, "validated by the scenario");
        RateStage {
            rate_bps,
            limit,
            busy_until: SimTime::ZERO,
            waiting: VecDeque::with_capacity(256),
            waiting_bytes: 0,
            busy: SimDuration::ZERO,
            busy_clip: SimTime::MAX,
        }
    }

    /// Counts serialisation only before `t` from now on (a run's end).
    pub fn set_busy_clip(&mut self, t: SimTime) {
        self.busy_clip = t;
    }

    /// Bit rate, bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Time spent serialising accepted packets before the clip time ([`set_busy_clip`]),
    /// counted when each packet arrives: the same whether the caller hands packets over at
    /// their own times or computes a packet's whole path at once.
    ///
    /// [`set_busy_clip`]: RateStage::set_busy_clip
    pub fn busy_time(&self) -> SimDuration {
        self.busy
    }

    pub fn tx_time(&self, wire_size: u32) -> SimDuration {
        let bits = wire_size as u128 * 8 * 1_000_000_000;
        SimDuration(bits.div_ceil(self.rate_bps as u128) as u64)
    }

    /// Packets waiting (not yet being serialised) at `now`.
    pub fn backlog(&mut self, now: SimTime) -> usize {
        self.purge(now);
        self.waiting.len()
    }

    fn purge(&mut self, now: SimTime) {
        while let Some(&(start, size)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= size as u64;
        }
    }

    pub fn on_arrival(&mut self, now: SimTime, pkt: &PacketInfo) -> Outcome {
        self.purge(now);
        let start = self.busy_until.max(now);
        if start > now {
            let full = match self.limit {
                QueueLimit::Packets(n) => self.waiting.len() as u64 >= n as u64,
                QueueLimit::Bytes(b) => self.waiting_bytes + pkt.wire_size as u64 > b,
            };
            if full {
                return Outcome::Drop(now, DropCause::QueueFull);
            }
            self.waiting.push_back((start, pkt.wire_size));
            self.waiting_bytes += pkt.wire_size as u64;
        }
        let tx = self.tx_time(pkt.wire_size);
        let clip = self.busy_clip;
        if start < clip {
            self.busy = self.busy + ((start + tx).min(clip) - start);
        }
        self.busy_until = start + tx;
        Outcome::Pass(self.busy_until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(size: u32) -> PacketInfo {
        PacketInfo {
            wire_size: size,
            data_seq: None,
        }
    }

    #[test]
    fn serialisation_time_is_size_over_rate() {
        let s = RateStage::new(10_000_000, QueueLimit::Packets(10));
        // 1500 B at 10 Mbit/s = 1.2 ms.
        assert_eq!(s.tx_time(1500), SimDuration::from_micros(1200));
    }

    #[test]
    fn back_to_back_packets_queue_and_overflow_drops_tail() {
        let mut s = RateStage::new(10_000_000, QueueLimit::Packets(2));
        let t0 = SimTime::ZERO;
        assert_eq!(
            s.on_arrival(t0, &pkt(1500)),
            Outcome::Pass(SimTime(1_200_000))
        );
        assert_eq!(
            s.on_arrival(t0, &pkt(1500)),
            Outcome::Pass(SimTime(2_400_000))
        );
        assert_eq!(
            s.on_arrival(t0, &pkt(1500)),
            Outcome::Pass(SimTime(3_600_000))
        );
        // Two waiting, one on the wire: the fourth is dropped.
        assert_eq!(
            s.on_arrival(t0, &pkt(1500)),
            Outcome::Drop(t0, DropCause::QueueFull)
        );
        // After the first finishes, the second starts and one slot frees up.
        assert_eq!(s.backlog(SimTime(1_200_000)), 1);
        assert_eq!(
            s.on_arrival(SimTime(1_200_000), &pkt(1500)),
            Outcome::Pass(SimTime(4_800_000))
        );
    }

    #[test]
    fn busy_time_counts_serialisation_before_the_clip() {
        let mut s = RateStage::new(10_000_000, QueueLimit::Packets(10));
        s.set_busy_clip(SimTime(10_600_000));
        s.on_arrival(SimTime::ZERO, &pkt(1500));
        s.on_arrival(SimTime::ZERO, &pkt(1500));
        assert_eq!(s.busy_time(), SimDuration(2_400_000));
        // Half of this one's 1.2 ms is before the clip; one arriving after it adds nothing.
        s.on_arrival(SimTime(10_000_000), &pkt(1500));
        s.on_arrival(SimTime(11_000_000), &pkt(1500));
        assert_eq!(s.busy_time(), SimDuration(3_000_000));
    }

    #[test]
    fn byte_limit_counts_waiting_bytes() {
        let mut s = RateStage::new(8_000, QueueLimit::Bytes(1000));
        let t0 = SimTime::ZERO;
        assert!(matches!(s.on_arrival(t0, &pkt(600)), Outcome::Pass(_)));
        assert!(matches!(s.on_arrival(t0, &pkt(600)), Outcome::Pass(_)));
        assert!(matches!(s.on_arrival(t0, &pkt(500)), Outcome::Drop(..)));
        assert!(matches!(s.on_arrival(t0, &pkt(400)), Outcome::Pass(_)));
    }
}
