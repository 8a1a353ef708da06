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
//!
//! **Ties:** an arrival at the very instant a waiting packet starts serialising still sees that
//! packet waiting. ACK clocking makes such ties exact in a simulation (in slow start each ACK
//! releases two packets at the instant the link finishes one); on real hosts they are broken by
//! processing jitter, and in most kernel runs of the fidelity suite this way: the sender
//! answers the first ACK after an idle link some 20 µs slower than the ones that follow, so the
//! later packets reach the queue just ahead of the link's schedule (`buffer-shallow` drops the
//! 20th packet of its second round, as the kernel's capture shows).
//!
//! **Load-driven rate** ([`Adapt`]): the rate steps between levels by what is queued, as an R99
//! RNC allocates a DCH rate from traffic-volume measurements (3GPP TS 25.331 §14.4, events 4a
//! and 4b): the level goes up one step when the buffer payload (bytes accepted and not yet
//! sent, the packet on the wire included) has stayed above `up_bytes` for `up_after`, down one
//! step when it has stayed at or below `down_bytes` for `down_after`; a decided switch takes
//! effect `delay` later (the radio-bearer reconfiguration). The buffer payload only falls
//! between arrivals, so both conditions are decided exactly at the next arrival from the
//! departures already computed. **Approximation:** packets accepted before the switch keep the
//! departure computed at their arrival, so a switch takes effect at `decision + delay` or when
//! the link finishes the packets accepted so far, whichever is later: it lags by at most the
//! backlog's serialisation time beyond `delay` (the buffer's worth at the old rate, less
//! `delay`). Deterministic: no random draws.
//!
//! **Stalls downstream** ([`RateStage::count_stalled`]): when a stall stage follows in the same
//! path, a packet the link sends during a stall stays in the payload until the stall ends, as
//! the RNC's RLC keeps an SDU until the UE acknowledges it (the traffic-volume measurement
//! counts the RLC buffer). Without this a stall would empty the measured buffer and downgrade
//! the bearer however many flows keep it full. The link's copy of the stall schedule (the stall
//! stage's parameters and random stream) gives the same stall times as the stall stage.
//! **Approximation:** a packet counts as held when it leaves the link inside a stall; the RLC
//! stage's extra delay between the two is ignored.

use crate::stall::StallSchedule;
use crate::{DropCause, Outcome, PacketInfo, StageModel};
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

/// Knobs of a load-driven rate ([`Adapt`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptParams {
    /// The levels, bits per second, ascending (each > 0).
    pub rates: Vec<u64>,
    /// Index of the level at time 0.
    pub start: usize,
    /// Up one level when the buffer payload has stayed above this many bytes (event 4a) ...
    pub up_bytes: u64,
    /// ... for this long (its time-to-trigger).
    pub up_after: SimDuration,
    /// Down one level when the buffer payload has stayed at or below this many bytes (event
    /// 4b; 0: empty) ...
    pub down_bytes: u64,
    /// ... for this long.
    pub down_after: SimDuration,
    /// From a decision to the new rate (the radio-bearer reconfiguration).
    pub delay: SimDuration,
    /// The queue limit scales with the level's rate over the top rate (a buffer sized in
    /// time), instead of staying fixed.
    pub scale_queue: bool,
}

/// How many of its past switches a load-driven rate keeps (a bound on memory in long runs).
pub const MAX_KEPT_SWITCHES: usize = 4096;

/// A load-driven rate's state (see the module's documentation).
#[derive(Debug)]
pub struct Adapt {
    p: AdaptParams,
    /// The level decided last, in effect from `switch_at`; `before` until then.
    level: usize,
    before: usize,
    switch_at: SimTime,
    /// (leaves the buffer, wire bytes) of the accepted packets still counted, in order: the
    /// link's finish, or a downstream stall's end; their bytes.
    system: VecDeque<(SimTime, u32)>,
    payload: u64,
    /// Since when the payload has been above `up_bytes` / at or below `down_bytes`.
    above_since: Option<SimTime>,
    below_since: Option<SimTime>,
    /// Every switch that took or will take effect: (time, level).
    switches: Vec<(SimTime, usize)>,
    /// The stalls of a stall stage downstream: a packet sent during one stays counted until it
    /// ends.
    stalls: Option<StallSchedule>,
}

impl Adapt {
    pub fn new(p: AdaptParams) -> Adapt {
        assert!(
            !p.rates.is_empty() && p.start < p.rates.len() && p.rates.iter().all(|r| *r > 0),
            "validated by the scenario"
        );
        Adapt {
            level: p.start,
            before: p.start,
            switch_at: SimTime::ZERO,
            system: VecDeque::with_capacity(256),
            payload: 0,
            above_since: None,
            below_since: Some(SimTime::ZERO),
            switches: Vec::new(),
            stalls: None,
            p,
        }
    }

    /// When a packet the link finishes at `finish` (non-decreasing from call to call) leaves
    /// the measured buffer: at `finish`, or at the end of the downstream stall it falls in.
    fn release(&mut self, finish: SimTime) -> SimTime {
        match self.stalls.as_mut().and_then(|s| s.stall_at(finish)) {
            Some((_, end)) => end,
            None => finish,
        }
    }

    /// The level in effect at `t` (not before the last decision's time).
    fn level_at(&self, t: SimTime) -> usize {
        if t >= self.switch_at {
            self.level
        } else {
            self.before
        }
    }

    /// The switches decided so far, the last [`MAX_KEPT_SWITCHES`] at most: (time it takes
    /// effect, rate in bits per second).
    pub fn switches(&self) -> impl Iterator<Item = (SimTime, u64)> + '_ {
        self.switches.iter().map(|&(t, l)| (t, self.p.rates[l]))
    }

    /// A condition held since `since` decides a switch `after` later, counted from the last
    /// switch at the earliest; `None` if that is not before `until`.
    fn due(&self, since: Option<SimTime>, after: SimDuration, until: SimTime) -> Option<SimTime> {
        let s = since?.max(self.switch_at);
        let at = s + after;
        (at <= until).then_some(at)
    }

    /// Takes every one-level step (`up` or down) that a condition held since `since` makes due
    /// by `until`: each needs its own holding period (`up_after` / `down_after`) counted from
    /// the previous switch; stops at the top or bottom level.
    fn step_while_due(
        &mut self,
        since: Option<SimTime>,
        up: bool,
        until: SimTime,
        busy_until: SimTime,
        decided: &mut Vec<(SimTime, u64)>,
    ) {
        let after = if up {
            self.p.up_after
        } else {
            self.p.down_after
        };
        while let Some(at) = self.due(since, after, until) {
            match self.decide(at, up, busy_until) {
                Some(d) => decided.push(d),
                None => break,
            }
        }
    }

    /// Decides a one-level step at `at` (`up` or down), effective at `delay` later or when the
    /// link has sent what it accepted (`busy_until`), whichever is later; returns the switch.
    fn decide(&mut self, at: SimTime, up: bool, busy_until: SimTime) -> Option<(SimTime, u64)> {
        let to = if up {
            (self.level + 1 < self.p.rates.len()).then_some(self.level + 1)?
        } else {
            self.level.checked_sub(1)?
        };
        let when = (at + self.p.delay).max(busy_until);
        self.before = self.level;
        self.level = to;
        self.switch_at = when;
        if self.switches.len() >= 2 * MAX_KEPT_SWITCHES {
            self.switches.drain(..MAX_KEPT_SWITCHES);
        }
        self.switches.push((when, to));
        Some((when, self.p.rates[to]))
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
    /// Points are appended as the link runs (random switching, a load-driven rate): the ones
    /// the link has left are forgotten.
    grows: bool,
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
            grows: false,
        }
    }

    pub fn switching(s: Switching) -> RateSchedule {
        let first = s.rates[0];
        RateSchedule {
            points: vec![(SimTime::ZERO, first)],
            grows: true,
            switching: Some(s),
            cursor: 0,
        }
    }

    /// Appends a rate from `at` on (`at` not before the last point).
    fn push(&mut self, at: SimTime, rate: u64) {
        debug_assert!(self.switching.is_none());
        self.grows = true;
        let last = self.points.last().expect("never empty").0;
        debug_assert!(at >= last);
        self.points.push((at.max(last), rate));
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

    /// The points given, or drawn or decided so far (random switching and a load-driven rate
    /// forget those the link has left behind, thousands at a time).
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
                    // Random switching and a load-driven rate add points forever: forget the
                    // ones the link has left.
                    if self.grows && i >= 4096 {
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
    /// A load-driven rate (its switches go into `schedule`).
    adapt: Option<Box<Adapt>>,
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
            adapt: None,
            limit,
            busy_until: SimTime::ZERO,
            waiting: VecDeque::with_capacity(256),
            waiting_bytes: 0,
            busy: SimDuration::ZERO,
            busy_clip: SimTime::MAX,
        }
    }

    /// The queue's capacity.
    pub fn limit(&self) -> QueueLimit {
        self.limit
    }

    /// Whether the rate stays at [`RateStage::rate_bps`] for the whole run (no schedule, no
    /// random switching, no load-driven rate).
    pub fn is_constant(&self) -> bool {
        self.schedule.is_none() && self.adapt.is_none()
    }

    /// Lifts the queue's capacity: the stage still serialises at its rate but never drops.
    /// For the emulator, where the sending host's own qdisc holds the queue (`backpressure`)
    /// and releases packets at the stage's rate.
    pub fn unlimit(&mut self) {
        self.limit = QueueLimit::Packets(u32::MAX);
    }

    /// Whether a packet of `wire_size` bytes arriving at `now` would be accepted (not dropped
    /// as [`DropCause::QueueFull`]); changes nothing [`RateStage::on_arrival`] at `now` would
    /// not.
    pub fn accepts(&mut self, now: SimTime, wire_size: u32) -> bool {
        self.purge(now);
        self.adapt_until(now);
        !self.full(now, wire_size)
    }

    /// When a packet it refuses now may be accepted: just after the first waiting packet starts
    /// its serialisation (the queue then holds less), or, with nothing waiting (a packet larger
    /// than the whole queue), when the link falls idle (an arrival at an idle link always
    /// passes).
    pub fn next_room(&self) -> SimTime {
        match self.waiting.front() {
            Some(&(start, _)) => SimTime(start.0 + 1),
            None => self.busy_until,
        }
    }

    /// The queue (accepted, not yet serialising) has no room for `wire_size` more bytes at
    /// `now` (a packet that finds the link idle always passes).
    fn full(&self, now: SimTime, wire_size: u32) -> bool {
        if self.busy_until.max(now) <= now {
            return false;
        }
        // A buffer sized in time holds the level's share of the limit.
        let scale = |x: u64| match self.adapt.as_deref() {
            Some(a) if a.p.scale_queue => {
                let top = *a.p.rates.last().expect("validated") as u128;
                let r = a.p.rates[a.level_at(now)] as u128;
                ((x as u128 * r / top) as u64).max(1)
            }
            _ => x,
        };
        match self.limit {
            QueueLimit::Packets(n) => self.waiting.len() as u64 >= scale(n as u64),
            QueueLimit::Bytes(b) => self.waiting_bytes + wire_size as u64 > scale(b),
        }
    }

    /// A rate stage whose rate follows `schedule`.
    pub fn scheduled(schedule: RateSchedule, limit: QueueLimit) -> RateStage {
        let mut s = RateStage::new(schedule.points[0].1.max(1), limit);
        s.schedule = Some(Box::new(schedule));
        s
    }

    /// A rate stage whose rate follows its load ([`Adapt`]).
    pub fn adaptive(p: AdaptParams, limit: QueueLimit) -> RateStage {
        let first = p.rates[p.start];
        let mut s = RateStage::scheduled(RateSchedule::table(vec![(SimTime::ZERO, first)]), limit);
        s.adapt = Some(Box::new(Adapt::new(p)));
        s
    }

    /// A load-driven rate counts what a downstream stall stage holds (its schedule: the stall
    /// stage's parameters and random stream) as still in its buffer. No effect on a fixed rate.
    pub fn count_stalled(&mut self, stalls: StallSchedule) {
        if let Some(a) = self.adapt.as_deref_mut() {
            a.stalls = Some(stalls);
        }
    }

    /// The load-driven rate, if the rate follows the load.
    pub fn adapt(&self) -> Option<&Adapt> {
        self.adapt.as_deref()
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

    /// When the link finishes serialising the last packet it accepted: that packet's leaving
    /// time.
    pub fn busy_until(&self) -> SimTime {
        self.busy_until
    }

    /// Packets waiting (not yet being serialised) at `now`.
    pub fn backlog(&mut self, now: SimTime) -> usize {
        self.purge(now);
        self.waiting.len()
    }

    fn purge(&mut self, now: SimTime) {
        while let Some(&(start, size)) = self.waiting.front() {
            if start >= now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= size as u64;
        }
    }

    /// A load-driven rate's decisions up to `now` (before the packet arriving at `now` is
    /// counted), exact because the payload only falls between arrivals.
    fn adapt_until(&mut self, now: SimTime) {
        let Some(a) = self.adapt.as_deref_mut() else {
            return;
        };
        let busy_until = self.busy_until;
        let mut decided = Vec::new();
        while let Some(&(finish, size)) = a.system.front() {
            if finish > now {
                break;
            }
            a.system.pop_front();
            let was = a.payload;
            a.payload -= size as u64;
            if was > a.p.up_bytes && a.payload <= a.p.up_bytes {
                // Above until `finish`: the upgrades due by then, one level per holding period.
                a.step_while_due(a.above_since, true, finish, busy_until, &mut decided);
                a.above_since = None;
            }
            if a.payload <= a.p.down_bytes && a.below_since.is_none() {
                a.below_since = Some(finish);
            }
        }
        // Still holding at `now`: every step due by then (a long quiet spell moves the rate
        // down as many levels as holding periods fit in it), however often this is called.
        a.step_while_due(a.above_since, true, now, busy_until, &mut decided);
        a.step_while_due(a.below_since, false, now, busy_until, &mut decided);
        if let Some(s) = self.schedule.as_deref_mut() {
            for (t, r) in decided {
                s.push(t, r);
            }
        }
    }
}

impl StageModel for RateStage {
    fn on_arrival(&mut self, now: SimTime, pkt: &PacketInfo) -> Outcome {
        self.purge(now);
        self.adapt_until(now);
        let start = self.busy_until.max(now);
        if start > now {
            if self.full(now, pkt.wire_size) {
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
        if let Some(a) = self.adapt.as_deref_mut() {
            let release = a.release(done);
            a.system.push_back((release, pkt.wire_size));
            a.payload += pkt.wire_size as u64;
            if a.payload > a.p.up_bytes && a.above_since.is_none() {
                a.above_since = Some(now);
            }
            if a.payload > a.p.down_bytes {
                a.below_since = None;
            }
        }
        Outcome::Pass(self.busy_until)
    }
}

/// The `rate` stage's configuration in a scenario (docs/scenario.md, "Stages"): a rate, a
/// `schedule`, a `trace` file, random `switching` or a load-driven rate (`adapt`), behind a
/// queue in packets or bytes, that may be the sender's own (`backpressure`).
#[cfg(feature = "serde")]
pub use schema::{
    check_up_reachable, check_up_reachable_packets, stall_follows, AdaptConfig, RateConfig,
    SwitchingConfig, MIN_ADAPT_UP_BYTES,
};

#[cfg(feature = "serde")]
mod schema;

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
    fn a_full_queue_says_so_and_when_it_will_have_room() {
        // 10 Mbit/s: 1.2 ms a 1500-byte packet; room for two waiting packets.
        let mut s = RateStage::new(10_000_000, QueueLimit::Packets(2));
        let mut twin = RateStage::new(10_000_000, QueueLimit::Packets(2));
        let t0 = SimTime::ZERO;
        assert_eq!(s.next_room(), t0);
        for _ in 0..3 {
            assert!(s.accepts(t0, 1500));
            assert_eq!(
                s.on_arrival(t0, &pkt(1500)),
                twin.on_arrival(t0, &pkt(1500))
            );
        }
        // One serialising, two waiting (starting at 1.2 and 2.4 ms): full.
        assert!(!s.accepts(t0, 1500));
        assert_eq!(
            s.on_arrival(t0, &pkt(1500)),
            Outcome::Drop(t0, DropCause::QueueFull)
        );
        assert_eq!(s.next_room(), SimTime(1_200_001));
        assert!(!s.accepts(SimTime(1_200_000), 1500));
        assert!(s.accepts(SimTime(1_200_001), 1500));
        // Asking changed nothing: the next arrival leaves when it would have anyway.
        let _ = twin.on_arrival(t0, &pkt(1500));
        let at = SimTime(1_200_001);
        let (a, b) = (
            s.on_arrival(at, &pkt(1500)),
            twin.on_arrival(at, &pkt(1500)),
        );
        assert_eq!(a, b);
        assert_eq!(a, Outcome::Pass(SimTime(4_800_000)));
    }

    #[test]
    fn a_packet_larger_than_the_queue_has_room_when_the_link_is_idle() {
        let mut s = RateStage::new(10_000_000, QueueLimit::Bytes(1000));
        let t0 = SimTime::ZERO;
        assert!(s.accepts(t0, 1500));
        assert_eq!(
            s.on_arrival(t0, &pkt(1500)),
            Outcome::Pass(SimTime(1_200_000))
        );
        assert!(!s.accepts(t0, 1500));
        assert_eq!(s.next_room(), SimTime(1_200_000));
        assert!(s.accepts(s.next_room(), 1500));
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
        // At the instant the first finishes, an arrival still sees the second waiting (the
        // tie rule): dropped. One nanosecond later the second is on the wire and a slot is free.
        assert_eq!(s.backlog(SimTime(1_200_000)), 2);
        assert_eq!(
            s.on_arrival(SimTime(1_200_000), &pkt(1500)),
            Outcome::Drop(SimTime(1_200_000), DropCause::QueueFull)
        );
        assert_eq!(s.backlog(SimTime(1_200_001)), 1);
        assert_eq!(
            s.on_arrival(SimTime(1_200_001), &pkt(1500)),
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

    /// 1000-byte packets; 8 kbit/s serialises one per second, 80 kbit/s one per 100 ms.
    fn adapt(up_after_ms: u64, delay_ms: u64, start: usize) -> RateStage {
        RateStage::adaptive(
            AdaptParams {
                rates: vec![8_000, 80_000],
                start,
                up_bytes: 3000,
                up_after: SimDuration::from_millis(up_after_ms),
                down_bytes: 0,
                down_after: SimDuration::from_millis(2000),
                delay: SimDuration::from_millis(delay_ms),
                scale_queue: false,
            },
            QueueLimit::Packets(100),
        )
    }

    fn switches(s: &RateStage) -> Vec<(SimTime, u64)> {
        s.adapt().unwrap().switches().collect()
    }

    #[test]
    fn a_load_driven_rate_steps_up_its_delay_after_the_payload_held_above_the_threshold() {
        // Four packets at 0: 4000 bytes until the first leaves at 1 s, 3000 (not above the
        // threshold) after: above for exactly 1 s.
        let mut s = adapt(1000, 5000, 0);
        for k in 1..=4u64 {
            assert_eq!(
                s.on_arrival(SimTime::ZERO, &pkt(1000)),
                Outcome::Pass(SimTime::from_millis(1000 * k))
            );
        }
        // Decided at the next arrival: due at 1 s, in effect 5 s later. This packet starts at
        // 4 s, still at 8 kbit/s: it leaves at 5 s.
        assert_eq!(
            s.on_arrival(SimTime::from_millis(2000), &pkt(1000)),
            Outcome::Pass(SimTime::from_millis(5000))
        );
        assert_eq!(switches(&s), [(SimTime::from_millis(6000), 80_000)]);
        // From 6 s on the link runs at 80 kbit/s; one straddling the switch is exact across it.
        assert_eq!(
            s.on_arrival(SimTime::from_millis(5500), &pkt(1000)),
            Outcome::Pass(SimTime::from_millis(6000) + SimDuration::from_millis(50))
        );
        assert_eq!(
            s.on_arrival(SimTime::from_millis(7000), &pkt(1000)),
            Outcome::Pass(SimTime::from_millis(7100))
        );
        // Held for 1 s is not enough for a 1.001 s time-to-trigger.
        let mut s = adapt(1001, 5000, 0);
        for _ in 0..4 {
            s.on_arrival(SimTime::ZERO, &pkt(1000));
        }
        s.on_arrival(SimTime::from_millis(30_000), &pkt(1000));
        assert!(switches(&s).is_empty());
    }

    #[test]
    fn a_decided_switch_waits_for_the_packets_already_accepted() {
        // Time-to-trigger 0: due at 0, but the delay (1 s) is shorter than the backlog (4 s at
        // the old rate): the switch comes when the link has sent what it had accepted.
        let mut s = adapt(0, 1000, 0);
        for _ in 0..4 {
            s.on_arrival(SimTime::ZERO, &pkt(1000));
        }
        s.on_arrival(SimTime::from_millis(500), &pkt(1000));
        assert_eq!(switches(&s), [(SimTime::from_millis(4000), 80_000)]);
    }

    #[test]
    fn a_load_driven_rate_steps_down_after_the_buffer_stayed_empty() {
        let mut s = adapt(0, 0, 1);
        assert_eq!(
            s.on_arrival(SimTime::ZERO, &pkt(1000)),
            Outcome::Pass(SimTime::from_millis(100))
        );
        // Empty from 0.1 s to 1 s (0.9 s): not yet.
        assert_eq!(
            s.on_arrival(SimTime::from_millis(1000), &pkt(1000)),
            Outcome::Pass(SimTime::from_millis(1100))
        );
        assert!(switches(&s).is_empty());
        // Empty from 1.1 s: due at 3.1 s, delay 0; this one is sent at 8 kbit/s.
        assert_eq!(
            s.on_arrival(SimTime::from_millis(3200), &pkt(1000)),
            Outcome::Pass(SimTime::from_millis(4200))
        );
        assert_eq!(switches(&s), [(SimTime::from_millis(3100), 8_000)]);
        // Never below the lowest level.
        s.on_arrival(SimTime::from_millis(60_000), &pkt(1000));
        assert_eq!(switches(&s).len(), 1);
    }

    #[test]
    fn what_a_downstream_stall_holds_still_counts_so_the_rate_does_not_step_down_during_it() {
        use crate::stall::{StallParams, StallSchedule};
        let p = StallParams {
            rate: 0.2,
            median: SimDuration::from_millis(3000),
            sigma_ln: 0.1,
        };
        let stream = || Rng::stream(7, "stalls");
        let (start, end) = StallSchedule::new(p, stream()).until(SimTime::from_millis(600_000))[0];
        // A backlog at time 0 keeps the link (80 kbit/s: 100 ms a packet) busy until 200 ms
        // into the stall.
        let n = (start.as_nanos() / 100_000_000) + 3;
        let last = SimTime::from_millis(100 * n);
        assert!(last > start && last + SimDuration::from_millis(2000) < end);
        let run = |counted: bool| {
            let mut s = adapt(0, 0, 1);
            if counted {
                s.count_stalled(StallSchedule::new(p, stream()));
            }
            for _ in 0..n {
                s.on_arrival(SimTime::ZERO, &pkt(1000));
            }
            s.on_arrival(end + SimDuration::from_millis(10_000), &pkt(1000));
            switches(&s)
        };
        // Not counted, the buffer is empty from the last packet's departure inside the stall,
        // and the 2 s of emptiness run out inside the stall ...
        assert_eq!(run(false), [(last + SimDuration::from_millis(2000), 8_000)]);
        // ... counted, only 2 s after the stall released what it held.
        let counted = run(true);
        assert_eq!(counted, [(end + SimDuration::from_millis(2000), 8_000)]);
    }

    #[test]
    fn a_time_sized_buffer_holds_the_levels_share() {
        let mut s = RateStage::adaptive(
            AdaptParams {
                rates: vec![8_000, 80_000],
                start: 0,
                up_bytes: 1_000_000,
                up_after: SimDuration::ZERO,
                down_bytes: 0,
                down_after: SimDuration::from_secs(1000),
                delay: SimDuration::ZERO,
                scale_queue: true,
            },
            QueueLimit::Bytes(20_000),
        );
        // At the low level the limit is 20 000 · 8/80 = 2000 bytes waiting.
        for _ in 0..3 {
            assert!(matches!(
                s.on_arrival(SimTime::ZERO, &pkt(1000)),
                Outcome::Pass(_)
            ));
        }
        assert!(matches!(
            s.on_arrival(SimTime::ZERO, &pkt(1000)),
            Outcome::Drop(..)
        ));
    }

    #[test]
    fn a_load_driven_rate_is_a_function_of_its_arrivals_and_keeps_order() {
        let run = || {
            let mut s = RateStage::adaptive(
                AdaptParams {
                    rates: vec![64_000, 128_000, 384_000],
                    start: 1,
                    up_bytes: 8000,
                    up_after: SimDuration::from_millis(300),
                    down_bytes: 1500,
                    down_after: SimDuration::from_millis(700),
                    delay: SimDuration::from_millis(400),
                    scale_queue: true,
                },
                QueueLimit::Bytes(30_000),
            );
            let mut rng = Rng::stream(5, "arrivals");
            let mut t = SimTime::ZERO;
            let mut out = Vec::new();
            for _ in 0..20_000 {
                // Bursts and gaps: the load moves across both thresholds.
                let gap = if rng.next_f64() < 0.02 {
                    2_000_000_000
                } else {
                    15_000_000
                };
                t = SimTime(t.0 + (rng.next_f64() * gap as f64) as u64);
                out.push((t, s.on_arrival(t, &pkt(1500))));
            }
            (out, switches(&s))
        };
        let (a, sw) = run();
        assert_eq!((a.clone(), sw.clone()), run());
        assert!(sw.len() > 20, "{} switches", sw.len());
        assert!(sw.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 != w[1].1));
        // In order, one at a time: each leaves after the one before by at least its
        // serialisation at the top rate.
        let mut last = SimTime::ZERO;
        for (t, o) in a {
            if let Outcome::Pass(d) = o {
                assert!(d >= t && d.0 >= last.0 + 31_250_000, "{t:?} {d:?} {last:?}");
                last = d;
            }
        }
    }

    #[test]
    fn a_load_driven_rate_forgets_the_switches_the_link_has_left() {
        let mut s = RateStage::adaptive(
            AdaptParams {
                rates: vec![8_000, 80_000],
                start: 0,
                up_bytes: 1500,
                up_after: SimDuration::ZERO,
                down_bytes: 0,
                down_after: SimDuration::ZERO,
                delay: SimDuration::ZERO,
                scale_queue: false,
            },
            QueueLimit::Packets(10),
        );
        // Two packets a second: up when both are in, down when they have left: 20 000 switches.
        for k in 0..10_000u64 {
            let t = SimTime(k * 1_000_000_000);
            s.on_arrival(t, &pkt(1000));
            s.on_arrival(t, &pkt(1000));
        }
        let a = s.adapt().unwrap();
        let n = a.switches().count();
        assert!(
            (MAX_KEPT_SWITCHES..=2 * MAX_KEPT_SWITCHES).contains(&n),
            "{n}"
        );
        assert!(a.switches().last().unwrap().0 > SimTime::from_millis(9_990_000));
        assert!(s.schedule().unwrap().points().len() < 10_000);
    }

    /// Three levels, 1000-byte packets: 64 kbit/s serialises one in 125 ms, 128 kbit/s in
    /// 62.5 ms, 384 kbit/s in 20.833 ms.
    fn three_levels() -> RateStage {
        RateStage::adaptive(
            AdaptParams {
                rates: vec![64_000, 128_000, 384_000],
                start: 2,
                up_bytes: 3000,
                up_after: SimDuration::ZERO,
                down_bytes: 0,
                down_after: SimDuration::from_millis(1000),
                delay: SimDuration::ZERO,
                scale_queue: false,
            },
            QueueLimit::Packets(100),
        )
    }

    #[test]
    fn a_long_quiet_spell_steps_down_once_per_holding_period_however_often_it_is_asked() {
        // One packet at 0 (leaves at 20.833 ms), the next 60 s later: the buffer was empty
        // for far more than two holding periods, so the rate is two levels down, at 64 kbit/s
        // from 2.021 s (1 s after the 384 -> 128 step at 1.021 s).
        let mut s = three_levels();
        s.on_arrival(SimTime::ZERO, &pkt(1000));
        let emptied = SimTime::ZERO + s.tx_time(1000);
        assert_eq!(
            s.on_arrival(SimTime::from_millis(60_000), &pkt(1000)),
            Outcome::Pass(SimTime::from_millis(60_125))
        );
        assert_eq!(
            switches(&s),
            [
                (emptied + SimDuration::from_millis(1000), 128_000),
                (emptied + SimDuration::from_millis(2000), 64_000)
            ]
        );
        // Asking whether a packet would be accepted changes nothing: the same switches
        // whether the link is asked once, or every 100 ms, before the arrival.
        let mut asked = three_levels();
        asked.on_arrival(SimTime::ZERO, &pkt(1000));
        for k in 1..600 {
            assert!(asked.accepts(SimTime::from_millis(100 * k), 1000));
        }
        asked.on_arrival(SimTime::from_millis(60_000), &pkt(1000));
        assert_eq!(switches(&asked), switches(&s));
    }
}
