//! The stall stage: delivery stalls of a radio bearer (paper 003's downlink delay spikes;
//! docs/models.md, "UMTS bearer").
//!
//! **Form.** Stalls begin as a Poisson process of rate `λ` per second; each lasts
//! `D ~ LogNormal(ln median, sigma_ln)`; stalls that overlap merge into one. While a stall
//! lasts, nothing leaves the stage: the packets that arrive (the link upstream keeps serving) are
//! held and leave, in order, when the stall ends. Outside a stall a packet passes at once. No
//! packet is lost: a stall is a pure delay spike, which is what 003's timeout counts (flat in the
//! number of flows, absent upstream, ≈ 12–17 go-back-N retransmissions each) point to.
//!
//! **Schedule.** The stall times are drawn lazily from the stage's own stream as time advances,
//! always in the same order (gap, duration, gap, duration, …), so they are a function of the
//! seed and time alone, independent of the traffic.
//!
//! **Maturity.** The form is an assumption inferred from 003's tables (docs/models.md, UMTS bearer); `λ`
//! (0.05/s), the median (2.5 s) and `sigma_ln` (0.5) are calibration knobs. Not validated
//! against a trace of a live bearer.

use crate::{Outcome, PacketInfo, StageModel};
use spikelab_core::{Rng, SimDuration, SimTime};

/// The longest single stall: one hour (bounds the log-normal's tail).
pub const MAX_STALL: SimDuration = SimDuration(3_600_000_000_000);

/// The largest `λ·E[D]` (mean stalls in progress at once) the scenario accepts: above it the
/// stalls would cover the link nearly all the time (`1 − e^−5` = 99.3 % at the bound).
pub const MAX_LOAD: f64 = 5.0;

/// Stalls merged into one at most (a bound on the work of one lookup).
const MAX_MERGE: u32 = 1_000_000;

/// Knobs of the stall stage.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct StallParams {
    /// Stall arrivals per second (`0`: never).
    pub rate: f64,
    /// Median stall duration.
    pub median: SimDuration,
    /// Standard deviation of the duration's logarithm.
    pub sigma_ln: f64,
}

impl StallParams {
    /// `λ·E[D]`, `E[D] = median·e^{σ²/2}`: the mean number of stalls in progress at once.
    pub fn load(&self) -> f64 {
        self.rate * self.median.as_secs_f64() * (self.sigma_ln * self.sigma_ln / 2.0).exp()
    }
}

impl Default for StallParams {
    fn default() -> StallParams {
        StallParams {
            rate: 0.05,
            median: SimDuration::from_millis(2500),
            sigma_ln: 0.5,
        }
    }
}

/// The stall schedule: merged stall intervals, drawn lazily.
#[derive(Debug)]
pub struct StallSchedule {
    p: StallParams,
    rng: Rng,
    /// The current (or last) merged stall, `[start, end)`.
    start: SimTime,
    end: SimTime,
    /// Start of the next stall not yet merged.
    next_start: SimTime,
}

impl StallSchedule {
    pub fn new(p: StallParams, rng: Rng) -> StallSchedule {
        let mut s = StallSchedule {
            p,
            rng,
            start: SimTime::ZERO,
            end: SimTime::ZERO,
            next_start: SimTime::MAX,
        };
        s.next_start = SimTime::ZERO + s.gap();
        s
    }

    fn gap(&mut self) -> SimDuration {
        let u = 1.0 - self.rng.next_f64();
        if self.p.rate <= 0.0 {
            return SimDuration(u64::MAX / 4);
        }
        let s = -u.ln() / self.p.rate;
        SimDuration::from_secs_f64(s.min(1e9))
    }

    fn duration(&mut self) -> SimDuration {
        let z = crate::lms::normal(&mut self.rng);
        let d = self.p.median.as_secs_f64() * (self.p.sigma_ln * z).exp();
        SimDuration::from_secs_f64(d.min(MAX_STALL.as_secs_f64()))
    }

    /// The stall `[start, end)` containing `t`, if any. Calls must come with non-decreasing `t`.
    pub fn stall_at(&mut self, t: SimTime) -> Option<(SimTime, SimTime)> {
        while self.end <= t && self.next_start <= t {
            self.start = self.next_start;
            self.end = self.start + self.duration();
            let g = self.gap();
            self.next_start += g;
            // A safety valve: validated parameters (λ·E[D] <= MAX_LOAD) merge a few hundred
            // stalls at most; beyond this many the rest start a stall of their own.
            let mut merged = 0u32;
            while self.next_start < self.end && merged < MAX_MERGE {
                merged += 1;
                let e = self.next_start + self.duration();
                self.end = self.end.max(e);
                let g = self.gap();
                self.next_start += g;
            }
        }
        (self.start <= t && t < self.end).then_some((self.start, self.end))
    }

    /// Every merged stall that starts before `horizon`, in order (for tests and figures).
    pub fn until(mut self, horizon: SimTime) -> Vec<(SimTime, SimTime)> {
        let mut out = Vec::new();
        loop {
            let t = self.next_start;
            if t >= horizon {
                break;
            }
            if let Some(s) = self.stall_at(t) {
                out.push(s);
            }
        }
        out
    }
}

#[derive(Debug)]
pub struct StallStage {
    schedule: StallSchedule,
    last_departure: SimTime,
    /// Packets held by a stall so far.
    held: u64,
}

impl StallStage {
    pub fn new(p: StallParams, rng: Rng) -> StallStage {
        StallStage {
            schedule: StallSchedule::new(p, rng),
            last_departure: SimTime::ZERO,
            held: 0,
        }
    }

    /// Packets a stall has held so far.
    pub fn held(&self) -> u64 {
        self.held
    }
}

impl StageModel for StallStage {
    fn on_arrival(&mut self, now: SimTime, _pkt: &PacketInfo) -> Outcome {
        let mut leave = match self.schedule.stall_at(now) {
            Some((_, end)) => {
                self.held += 1;
                end
            }
            None => now,
        };
        leave = leave.max(self.last_departure);
        self.last_departure = leave;
        Outcome::Pass(leave)
    }
}

/// The `stall` stage's configuration in a scenario (docs/scenario.md, "Stages").
#[cfg(feature = "serde")]
pub use schema::StallConfig;

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::config::prelude::*;

    optional_fields! {
        /// A stall stage (`type = "stall"`): delivery stalls, Poisson arrivals, log-normal
        /// durations, held and released in order.
        #[derive(Clone, Debug, Default, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct StallConfig {
            /// Stalls per second (Poisson; default 0.05).
            stall_rate: f64,
            /// Median stall duration (default 2.5 s).
            median: Duration,
            /// Standard deviation of a stall duration's logarithm (default 0.5).
            sigma_ln: f64,
        }
    }

    impl StallConfig {
        /// The stall stage's parameters, checked (defaults for what is missing).
        pub fn params(&self, at: &str) -> Result<StallParams> {
            let d = StallParams::default();
            let rate = self.stall_rate.unwrap_or(d.rate);
            check(
                rate.is_finite() && rate >= 0.0,
                format!("{at}.stall_rate"),
                format!("must be >= 0 stalls per second, got {}", num(rate)),
            )?;
            check(
                rate <= 1000.0,
                format!("{at}.stall_rate"),
                format!("must be at most 1000 stalls per second, got {}", num(rate)),
            )?;
            let median = self.median.map_or(d.median, |x| x.0);
            check(
                median > SimDuration::ZERO && median <= SimDuration::from_secs(3600),
                format!("{at}.median"),
                format!("must be in (0, 1 h], got {}", Duration(median)),
            )?;
            let sigma_ln = self.sigma_ln.unwrap_or(d.sigma_ln);
            check(
                sigma_ln.is_finite() && (0.0..=3.0).contains(&sigma_ln),
                format!("{at}.sigma_ln"),
                format!(
                    "must be in [0, 3] (a log-normal sigma), got {}",
                    num(sigma_ln)
                ),
            )?;
            let p = StallParams {
                rate,
                median,
                sigma_ln,
            };
            check(
                p.load() <= MAX_LOAD,
                format!("{at}.stall_rate"),
                format!(
                    "stall_rate × mean duration (median·e^(sigma_ln²/2)) must be at most {} \
                     (stalls would cover the link nearly all the time), got {:.3}",
                    MAX_LOAD,
                    p.load()
                ),
            )?;
            Ok(p)
        }
    }

    impl StageSchema for StallConfig {
        const TYPE: &'static str = "stall";
        const FIELDS: &'static [&'static str] = &["stall_rate", "median", "sigma_ln"];

        fn resolve(&mut self, at: &str, _ctx: &ResolveCtx) -> Result<()> {
            let p = self.params(at)?;
            self.stall_rate = Some(p.rate);
            self.median = Some(Duration(p.median));
            self.sigma_ln = Some(p.sigma_ln);
            Ok(())
        }

        fn build(&self, ctx: &PathCtx) -> Stage {
            Stage::Stall(StallStage::new(
                self.params("stage").expect("validated"),
                ctx.rng(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_packet as info;

    #[test]
    fn a_stall_holds_then_releases_in_order() {
        let mut s = StallStage::new(StallParams::default(), Rng::stream(4, "stall"));
        let stalls = StallSchedule::new(StallParams::default(), Rng::stream(4, "stall"))
            .until(SimTime::from_millis(200_000));
        assert!(!stalls.is_empty());
        let (a, b) = stalls[0];
        // Packets every 10 ms through the first stall and 1 s beyond it.
        let mut last = SimTime::ZERO;
        let mut t = SimTime::ZERO;
        let mut held = 0;
        while t < b + SimDuration::from_secs(1) {
            let Outcome::Pass(leave) = s.on_arrival(t, &info()) else {
                panic!("a stall loses nothing")
            };
            assert!(leave >= last, "reordered at {t:?}");
            if t >= a && t < b {
                assert_eq!(leave, b, "held to the stall's end");
                held += 1;
            } else {
                assert_eq!(leave, t, "passes at once outside a stall");
            }
            last = leave;
            t += SimDuration::from_millis(10);
        }
        assert!(held >= 1);
        assert_eq!(s.held(), held);
    }

    #[test]
    fn stalls_are_poisson_with_log_normal_durations() {
        let p = StallParams::default();
        let horizon = SimTime::from_millis(4_000_000_000); // 4e6 s
        let stalls = StallSchedule::new(p, Rng::stream(1, "stall")).until(horizon);
        // Merging removes a few starts: ~ 1 - e^{-λ·E[D]} ≈ 14 %; rate of merged stalls
        // between 0.8·λ and λ.
        let rate = stalls.len() as f64 / horizon.as_secs_f64();
        assert!(rate > 0.04 && rate < 0.05, "rate {rate}");
        let mut durs: Vec<f64> = stalls
            .iter()
            .map(|(a, b)| b.since(*a).as_secs_f64())
            .collect();
        durs.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let median = durs[durs.len() / 2];
        // Merging lengthens some; the median stays near 2.5 s.
        assert!(median > 2.45 && median < 2.9, "median {median}");
        for w in stalls.windows(2) {
            assert!(w[1].0 >= w[0].1, "merged stalls do not overlap");
        }
    }

    #[test]
    fn the_schedule_depends_on_the_seed_alone() {
        let p = StallParams::default();
        let h = SimTime::from_millis(1_000_000);
        let a = StallSchedule::new(p, Rng::stream(9, "stall")).until(h);
        // Asking at other times (as other traffic would) gives the same stalls.
        let mut s = StallSchedule::new(p, Rng::stream(9, "stall"));
        let mut seen = Vec::new();
        let mut t = SimTime::ZERO;
        while t < h {
            if let Some(x) = s.stall_at(t) {
                if seen.last() != Some(&x) {
                    seen.push(x);
                }
            }
            t += SimDuration::from_millis(1);
        }
        assert_eq!(a, seen);
        let c = StallSchedule::new(p, Rng::stream(10, "stall")).until(h);
        assert_ne!(a, c);
    }

    #[test]
    fn zero_rate_never_stalls() {
        let p = StallParams {
            rate: 0.0,
            ..StallParams::default()
        };
        let mut s = StallStage::new(p, Rng::stream(1, "stall"));
        for i in 0..10_000u64 {
            let t = SimTime(i * 100_000_000);
            assert_eq!(s.on_arrival(t, &info()), Outcome::Pass(t));
        }
    }
}

#[cfg(test)]
mod robustness {
    use super::*;
    use crate::rate::{QueueLimit, RateSchedule, RateStage, Switching};
    use crate::rlc::{RlcParams, RlcStage};

    /// Extreme but valid parameters (the scenario's bounds) and bursty arrivals, including many
    /// in one instant: no panic, nothing leaves before it arrived, order kept.
    #[test]
    fn extreme_parameters_never_panic_and_keep_order() {
        let mut pick = Rng::stream(99, "params");
        for case in 0..200u64 {
            let rlc = RlcParams {
                p: [0.0, 0.5, 0.999_999, pick.next_f64() * 0.999][case as usize % 4],
                rtt: SimDuration::from_secs_f64([1e-9, 60.0, 0.12][case as usize % 3]),
                loss: [0.0, 1.0, 0.002][case as usize % 3],
            };
            let mut stall = StallParams {
                rate: [0.0, 1000.0, 1e-9, 0.05][case as usize % 4],
                median: SimDuration::from_secs_f64([1e-9, 3600.0, 2.5][case as usize % 3]),
                sigma_ln: [0.0, 3.0, 0.5][case as usize % 3],
            };
            if stall.load() > MAX_LOAD {
                // The scenario refuses these; keep the rate and shorten the stalls to the bound.
                let f = MAX_LOAD / stall.load();
                stall.median = SimDuration::from_secs_f64(stall.median.as_secs_f64() * f);
            }
            let rates = vec![8_000, 10_000_000_000_000, 64_000];
            let mut stages: Vec<crate::Stage> = vec![
                crate::Stage::Rate(RateStage::scheduled(
                    RateSchedule::switching(Switching::new(
                        rates,
                        SimDuration::from_millis(1 + case),
                        Rng::stream(case, "sw"),
                    )),
                    QueueLimit::Packets(50),
                )),
                crate::Stage::Rlc(RlcStage::new(rlc, Rng::stream(case, crate::rlc::NAME))),
                crate::Stage::Stall(StallStage::new(stall, Rng::stream(case, "st"))),
            ];
            let info = PacketInfo {
                wire_size: 1500,
                data_seq: None,
            };
            let mut t = SimTime::ZERO;
            let mut last = [SimTime::ZERO; 3];
            for k in 0..300u64 {
                if k % 50 != 0 {
                    t += SimDuration::from_micros(pick.next_u64() % 20_000);
                }
                // The packet goes through the stages in turn, each getting it when the one
                // before releases it; a drop ends its way.
                let mut now = t;
                for (j, s) in stages.iter_mut().enumerate() {
                    match s.on_arrival(now, &info) {
                        Outcome::Pass(at) => {
                            assert!(at >= now, "stage {j} case {case}");
                            // The rate stage is FIFO, the RLC and stall stages keep order.
                            assert!(at >= last[j], "stage {j} reordered, case {case}");
                            last[j] = at;
                            now = at;
                        }
                        Outcome::Drop(at, _) => {
                            assert!(at >= now, "stage {j} case {case}");
                            break;
                        }
                    }
                }
            }
        }
    }
}
