//! The rate stage: serialisation at a bit rate behind a finite drop-tail queue.
//!
//! The rate is constant, or a piecewise-constant schedule ([`RateSchedule`]: a table, a trace,
//! or random switching between rates with exponential dwell times). With a schedule a packet's
//! serialisation is exact across rate changes: it finishes when the integral of the rate from
//! its start reaches its size in bits (a zero-rate segment serialises nothing).
//!
//! A packet that arrives while the link is busy waits; the queue limit counts waiting packets
//! (or their bytes), not the one being serialised, as ns-3's device queues and Linux qdiscs do.
//! A packet arriving to a full queue is dropped at once (`queue_full`). Serialisation time is
//! `wire_size · 8 / rate`, rounded up to the nanosecond.

use crate::{DropCause, Outcome, PacketInfo};
use spikelab_core::{Rng, SimDuration, SimTime};
use std::collections::VecDeque;

/// The drop-tail queue's capacity.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

/// Random switching between rates (e.g. UMTS 384 / 128 / 64 kbit/s bearers, Chan & Ramjee
/// 2005): starts at the first rate; after an exponentially distributed dwell of mean `dwell`,
/// moves to one of the other rates, each equally likely.
#[derive(Debug)]
pub struct Switching {
    rates: Vec<u64>,
    dwell: SimDuration,
    rng: Rng,
    current: usize,
}

impl Switching {
    pub fn new(rates: Vec<u64>, dwell: SimDuration, rng: Rng) -> Switching {
        assert!(!rates.is_empty(), "validated by the scenario");
        Switching {
            rates,
            dwell,
            rng,
            current: 0,
        }
    }

    /// The next (dwell, rate) step.
    fn step(&mut self) -> (SimDuration, u64) {
        let u = 1.0 - self.rng.next_f64();
        let d = SimDuration::from_secs_f64((-u.ln() * self.dwell.as_secs_f64()).min(1e9));
        let n = self.rates.len();
        if n > 1 {
            let k = ((self.rng.next_f64() * (n - 1) as f64) as usize).min(n - 2);
            self.current = if k >= self.current { k + 1 } else { k };
        }
        // A zero dwell would not advance time; a nanosecond does.
        (d.max(SimDuration(1)), self.rates[self.current])
    }
}

/// A piecewise-constant rate: `(from, bits per second)` points in time order, the first holding
/// before its time too and the last forever; extended lazily when it switches at random.
#[derive(Debug)]
pub struct RateSchedule {
    points: Vec<(SimTime, u64)>,
    switching: Option<Switching>,
    /// The segment the last packet finished in (packets start in non-decreasing time).
    cursor: usize,
}

impl RateSchedule {
    /// A fixed table; times non-decreasing, rates with the last one > 0 (validated by the
    /// scenario). At equal times the later point wins.
    pub fn table(mut points: Vec<(SimTime, u64)>) -> RateSchedule {
        assert!(!points.is_empty(), "validated by the scenario");
        points[0].0 = SimTime::ZERO;
        RateSchedule {
            points,
            switching: None,
            cursor: 0,
        }
    }

    pub fn switching(s: Switching) -> RateSchedule {
        let first = s.rates[0];
        RateSchedule {
            points: vec![(SimTime::ZERO, first)],
            switching: Some(s),
            cursor: 0,
        }
    }

    /// The start of segment `i + 1` (`None`: segment `i` lasts forever), drawing the random
    /// switching's next step when needed.
    fn segment_end(&mut self, i: usize) -> Option<SimTime> {
        if i + 1 >= self.points.len() {
            let sw = self.switching.as_mut()?;
            let (d, r) = sw.step();
            let at = self.points[i].0 + d;
            self.points.push((at, r));
        }
        Some(self.points[i + 1].0)
    }

    /// The rate at `t`, bits per second.
    pub fn rate_at(&mut self, t: SimTime) -> u64 {
        let mut i = 0;
        while let Some(e) = self.segment_end(i) {
            if e > t {
                break;
            }
            i += 1;
        }
        self.points[i].1
    }

    /// The points given, or drawn so far (random switching forgets those the link has left
    /// behind, thousands at a time).
    pub fn points(&self) -> &[(SimTime, u64)] {
        &self.points
    }

    /// When a packet of `bits` bits whose serialisation starts at `start` finishes.
    fn finish(&mut self, start: SimTime, bits: u64) -> SimTime {
        // In bit-nanoseconds, exact: a rate r (bit/s) over d ns carries r·d of them.
        let mut need = bits as u128 * 1_000_000_000;
        let mut t = start;
        let mut i = self.cursor;
        while let Some(e) = self.segment_end(i) {
            if e > t {
                break;
            }
            i += 1;
        }
        loop {
            let r = self.points[i].1 as u128;
            match self.segment_end(i) {
                Some(e) if r * ((e.0 - t.0) as u128) < need => {
                    need -= r * (e.0 - t.0) as u128;
                    t = e;
                    i += 1;
                }
                _ => {
                    self.cursor = i;
                    // Random switching draws points forever: forget the ones the link has left.
                    if self.switching.is_some() && i >= 4096 {
                        self.points.drain(..i);
                        self.cursor = 0;
                    }
                    // The last segment's rate is > 0 (validated).
                    return SimTime(t.0 + need.div_ceil(r.max(1)) as u64);
                }
            }
        }
    }
}

#[derive(Debug)]
pub struct RateStage {
    /// Bit rate, bits per second (the first of a schedule).
    rate_bps: u64,
    /// A time-varying rate (boxed: the common constant case stays small).
    schedule: Option<Box<RateSchedule>>,
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
            schedule: None,
            limit,
            busy_until: SimTime::ZERO,
            waiting: VecDeque::with_capacity(256),
            waiting_bytes: 0,
            busy: SimDuration::ZERO,
            busy_clip: SimTime::MAX,
        }
    }

    /// A rate stage whose rate follows `schedule`.
    pub fn scheduled(schedule: RateSchedule, limit: QueueLimit) -> RateStage {
        let mut s = RateStage::new(schedule.points[0].1.max(1), limit);
        s.schedule = Some(Box::new(schedule));
        s
    }

    /// The rate schedule, if the rate varies.
    pub fn schedule(&self) -> Option<&RateSchedule> {
        self.schedule.as_deref()
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
        let done = match &mut self.schedule {
            None => start + self.tx_time(pkt.wire_size),
            Some(s) => s.finish(start, pkt.wire_size as u64 * 8),
        };
        let clip = self.busy_clip;
        if start < clip {
            self.busy = self.busy + (done.min(clip) - start);
        }
        self.busy_until = done;
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
    fn serialisation_is_exact_across_rate_changes() {
        // 8 kbit/s until 1 s, then 0 until 2 s, then 16 kbit/s.
        let sched = RateSchedule::table(vec![
            (SimTime::ZERO, 8_000),
            (SimTime::from_millis(1000), 0),
            (SimTime::from_millis(2000), 16_000),
        ]);
        let mut s = RateStage::scheduled(sched, QueueLimit::Packets(10));
        // 1500 B = 12 000 bits: 8 000 in the first second, none in the second, 4 000 at
        // 16 kbit/s = 250 ms.
        assert_eq!(
            s.on_arrival(SimTime::ZERO, &pkt(1500)),
            Outcome::Pass(SimTime::from_millis(2250))
        );
        // The next starts at 2.25 s at 16 kbit/s: 750 ms.
        assert_eq!(
            s.on_arrival(SimTime::from_millis(100), &pkt(1500)),
            Outcome::Pass(SimTime::from_millis(3000))
        );
        // A packet wholly inside one segment: size over that segment's rate.
        assert_eq!(
            s.on_arrival(SimTime::from_millis(5000), &pkt(1000)),
            Outcome::Pass(SimTime::from_millis(5500))
        );
        // Busy time is start to finish.
        assert_eq!(s.busy_time(), SimDuration::from_millis(3500));
    }

    #[test]
    fn a_table_rate_holds_before_its_first_row_and_after_its_last() {
        let mut sched = RateSchedule::table(vec![
            (SimTime::from_millis(500), 1_000),
            (SimTime::from_millis(1000), 2_000),
        ]);
        assert_eq!(sched.rate_at(SimTime::ZERO), 1_000);
        assert_eq!(sched.rate_at(SimTime::from_millis(999)), 1_000);
        assert_eq!(sched.rate_at(SimTime::from_millis(1000)), 2_000);
        assert_eq!(sched.rate_at(SimTime::from_millis(10_000_000)), 2_000);
    }

    #[test]
    fn rate_switching_follows_its_dwell_times() {
        let rates = vec![384_000, 128_000, 64_000];
        let dwell = SimDuration::from_secs(5);
        let mk = |seed| {
            RateSchedule::switching(Switching::new(
                rates.clone(),
                dwell,
                Rng::stream(seed, "sw"),
            ))
        };
        let mut s = mk(1);
        let horizon = SimTime::from_millis(500_000_000); // 5e5 s: ~1e5 switches
        s.rate_at(horizon);
        let pts = s.points().to_vec();
        assert_eq!(pts[0], (SimTime::ZERO, 384_000));
        let n = pts.len() - 1;
        assert!(n > 90_000, "{n} switches");
        let mean = pts
            .windows(2)
            .map(|w| w[1].0.since(w[0].0).as_secs_f64())
            .sum::<f64>()
            / n as f64;
        // Exponential dwell, mean 5 s: standard error ~0.3 %; allow 2 %.
        assert!((mean / 5.0 - 1.0).abs() < 0.02, "mean dwell {mean}");
        // Memoryless: about e^-1 of the dwells exceed their mean.
        let long = pts
            .windows(2)
            .filter(|w| w[1].0.since(w[0].0).as_secs_f64() > 5.0)
            .count() as f64
            / n as f64;
        assert!((long - (-1f64).exp()).abs() < 0.01, "{long}");
        // Every switch changes the rate; each rate about a third of the time.
        let mut time_at = [0.0f64; 3];
        for w in pts.windows(2) {
            assert_ne!(w[0].1, w[1].1);
            let k = rates.iter().position(|r| *r == w[0].1).unwrap();
            time_at[k] += w[1].0.since(w[0].0).as_secs_f64();
        }
        let total: f64 = time_at.iter().sum();
        for t in time_at {
            assert!((t / total - 1.0 / 3.0).abs() < 0.02, "{time_at:?}");
        }
        // Reproducible per seed, independent of how it is queried.
        let mut a = mk(7);
        let mut b = mk(7);
        a.rate_at(SimTime::from_millis(100_000));
        for k in 0..100_000u64 {
            b.rate_at(SimTime::from_millis(k));
        }
        assert_eq!(a.points()[..10], b.points()[..10]);
        let mut c = mk(8);
        c.rate_at(SimTime::from_millis(100_000));
        assert_ne!(a.points()[..5], c.points()[..5]);
    }

    #[test]
    fn random_switching_forgets_the_points_the_link_has_left() {
        let sw = Switching::new(
            vec![64_000, 128_000],
            SimDuration::from_millis(1),
            Rng::stream(3, "sw"),
        );
        let mut s = RateStage::scheduled(RateSchedule::switching(sw), QueueLimit::Packets(10));
        // 20 000 packets, one every 200 ms: 4 000 s, ~4 million switches.
        for k in 0..20_000u64 {
            let t = SimTime(k * 200_000_000);
            assert!(matches!(s.on_arrival(t, &pkt(1500)), Outcome::Pass(x) if x > t));
        }
        assert!(s.schedule().unwrap().points().len() < 10_000);
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
