//! Test harness: a client (A, the data sender) and a server (B, the receiver) over N
//! destination pairs. Pair `i` is a forward link A→B and a reverse link B→A; a packet A sends
//! to index `i` crosses `fwd[i]` and B gets `on_packet(t, i, ..)`; B's packets to index `i`
//! cross `rev[i]`. A tiny event loop: a heap ordered by (time, insertion number), endpoint
//! timers polled between deliveries. For tests only.
#![allow(dead_code)] // each test binary uses a different part

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use spikelab_core::{Rng, SimDuration, SimTime};
use spikelab_sctp::{DataSource, Endpoint, Packet, Role, SctpConfig, SctpEvent};

pub fn ms(x: u64) -> SimTime {
    SimTime::from_millis(x)
}

pub fn secs(x: f64) -> SimTime {
    SimTime::from_secs_f64(x)
}

pub fn dur_ms(x: u64) -> SimDuration {
    SimDuration::from_millis(x)
}

/// A drop rule: (send time, packet) -> drop?
pub type DropFn = Box<dyn FnMut(SimTime, &Packet) -> bool>;

/// One direction of one path.
pub struct Link {
    pub delay: SimDuration,
    /// Extra uniform delay in [0, jitter) per packet: reorders.
    pub jitter: SimDuration,
    pub loss: f64,
    /// [from, to) intervals of send time during which every packet is lost.
    pub down: Vec<(SimTime, SimTime)>,
    /// (from, to, extra): packets sent in [from, to) get `extra` delay (a delay spike).
    pub spikes: Vec<(SimTime, SimTime, SimDuration)>,
    pub drop: Option<DropFn>,
    rng: Rng,
}

impl Link {
    pub fn new(delay_ms: u64, seed: u64, label: &str) -> Link {
        Link {
            delay: dur_ms(delay_ms),
            jitter: SimDuration::ZERO,
            loss: 0.0,
            down: Vec::new(),
            spikes: Vec::new(),
            drop: None,
            rng: Rng::stream(seed, label),
        }
    }

    /// Arrival time, or `None` if lost. Always draws the same number of random numbers.
    fn carry(&mut self, now: SimTime, p: &Packet) -> Option<SimTime> {
        let lost = self.rng.chance(self.loss);
        let j = self.rng.next_f64();
        if lost || self.down.iter().any(|&(a, b)| now >= a && now < b) {
            return None;
        }
        if let Some(f) = self.drop.as_mut() {
            if f(now, p) {
                return None;
            }
        }
        let mut t = now + self.delay + SimDuration((self.jitter.as_nanos() as f64 * j) as u64);
        for &(a, b, extra) in &self.spikes {
            if now >= a && now < b {
                t += extra;
            }
        }
        Some(t)
    }
}

/// A packet sent, for assertions.
#[derive(Clone, Debug)]
pub struct Sent {
    pub at: SimTime,
    pub from_a: bool,
    pub dest: usize,
    pub pkt: Packet,
}

pub struct Net {
    pub a: Endpoint,
    pub b: Endpoint,
    pub fwd: Vec<Link>,
    pub rev: Vec<Link>,
    pub now: SimTime,
    pub sent: Vec<Sent>,
    /// Every event of A, in order (drained from the endpoint as they happen).
    pub events_a: Vec<SctpEvent>,
    heap: BinaryHeap<Reverse<(SimTime, u64, bool, usize)>>,
    in_flight: Vec<Option<Packet>>,
    seq: u64,
}

impl Net {
    /// A sends `bytes` (None: unlimited) to B; both use `cfg`; link `i` has one-way delay
    /// `delays_ms[i]` both ways.
    pub fn new(cfg: SctpConfig, bytes: Option<u64>, delays_ms: &[u64], seed: u64) -> Net {
        let n = cfg.n_destinations;
        assert_eq!(delays_ms.len(), n);
        let a = Endpoint::new(cfg.clone(), Role::Client, DataSource::Bulk(bytes), seed);
        let b = Endpoint::new(cfg, Role::Server, DataSource::None, seed.wrapping_add(1));
        Net {
            a,
            b,
            fwd: (0..n)
                .map(|i| Link::new(delays_ms[i], seed, &format!("fwd/{i}")))
                .collect(),
            rev: (0..n)
                .map(|i| Link::new(delays_ms[i], seed, &format!("rev/{i}")))
                .collect(),
            now: SimTime::ZERO,
            sent: Vec::new(),
            events_a: Vec::new(),
            heap: BinaryHeap::new(),
            in_flight: Vec::new(),
            seq: 0,
        }
    }

    pub fn connect(&mut self) {
        self.a.connect(self.now);
        self.flush();
    }

    /// Sends whatever both endpoints have.
    pub fn flush(&mut self) {
        let now = self.now;
        for from_a in [true, false] {
            loop {
                let ep = if from_a { &mut self.a } else { &mut self.b };
                let Some((d, p)) = ep.poll_transmit(now) else {
                    break;
                };
                self.sent.push(Sent {
                    at: now,
                    from_a,
                    dest: d,
                    pkt: p.clone(),
                });
                let link = if from_a {
                    &mut self.fwd[d]
                } else {
                    &mut self.rev[d]
                };
                if let Some(t) = link.carry(now, &p) {
                    let slot = self.in_flight.len();
                    self.in_flight.push(Some(p));
                    self.heap
                        .push(Reverse((t, self.seq, !from_a, slot * 64 + d)));
                    self.seq += 1;
                }
            }
        }
        self.events_a.extend(self.a.drain_events());
    }

    /// The next event time (delivery or timer).
    fn next_time(&self) -> Option<SimTime> {
        let mut t = self.heap.peek().map(|r| r.0 .0);
        for x in [self.a.next_timer(), self.b.next_timer()]
            .into_iter()
            .flatten()
        {
            t = Some(t.map_or(x, |y| y.min(x)));
        }
        t
    }

    /// Runs one event; false if none is left before `until`.
    pub fn step(&mut self, until: SimTime) -> bool {
        let Some(t) = self.next_time() else {
            return false;
        };
        if t > until {
            return false;
        }
        self.now = t;
        if self.heap.peek().is_some_and(|r| r.0 .0 == t) {
            let Reverse((_, _, to_a, key)) = self.heap.pop().unwrap();
            let (slot, d) = (key / 64, key % 64);
            let p = self.in_flight[slot].take().unwrap();
            if to_a {
                self.a.on_packet(t, d, &p);
            } else {
                self.b.on_packet(t, d, &p);
            }
        } else {
            if self.a.next_timer().is_some_and(|x| x <= t) {
                self.a.on_timer(t);
            }
            if self.b.next_timer().is_some_and(|x| x <= t) {
                self.b.on_timer(t);
            }
        }
        self.flush();
        true
    }

    pub fn run_until(&mut self, until: SimTime) {
        while self.step(until) {}
        self.now = self.now.max(until);
    }

    /// Runs until `pred` holds (checked after each event) or `until`; true if it held.
    pub fn run_while(&mut self, until: SimTime, mut pred: impl FnMut(&Net) -> bool) -> bool {
        loop {
            if pred(self) {
                return true;
            }
            if !self.step(until) {
                return false;
            }
        }
    }

    /// New DATA chunks (first transmissions) A sent at or after `t`: (time, dest, tsn).
    pub fn new_data_since(&self, t: SimTime) -> Vec<(SimTime, usize, u64)> {
        self.sent
            .iter()
            .filter(|s| s.from_a && s.at >= t)
            .flat_map(|s| {
                s.pkt
                    .data()
                    .filter(|d| d.retransmission == 0)
                    .map(move |d| (s.at, s.dest, d.tsn))
            })
            .collect()
    }
}
