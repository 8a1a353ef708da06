//! The RLC stage: a UMTS radio link controller in acknowledged mode (3GPP TS 25.322), reduced to
//! what a transport protocol above it sees (paper 003; docs/models.md, "UMTS bearer").
//!
//! **Form.** Each IP packet needs `K` extra link round trips before the receiving RLC entity
//! holds all of it, `P(K ≥ k) = p^k` (a geometric number of failed attempts, `p` the per-packet
//! block error rate after the link's own retransmission scheduling), so it would leave
//! `K · rlc_rtt` after it arrived. RLC AM delivers SDUs **in sequence**: a packet never leaves
//! before the one ahead of it, `departure = max(arrival + K·rlc_rtt, previous departure)` (the
//! head-of-line blocking of Ludwig et al., ref. [11] of 003). The mean added delay of an isolated
//! packet is `rlc_rtt · p / (1 − p)`.
//!
//! **Residual loss.** With probability `loss` the SDU is discarded (RLC's MaxDAT reached; 003
//! ref. [3]: below 1 % after RLC). The discard happens when the packet would have left, and the
//! packets behind it wait for it until then (the receiver releases them only after the sender's
//! discard), with cause `rlc`.
//!
//! **Draws.** Two uniform draws per packet from the stage's own stream (attempts, discard), so a
//! seed gives the same pattern whatever `p` and `loss` are.
//!
//! **Maturity.** The form is an assumption (the paper does not measure RLC); `p`, `rlc_rtt` and
//! `loss` are calibration knobs (`p = 0.1`: a typical 10 % BLER target; 120 ms: an RLC round trip
//! of a few 10 ms TTIs plus status-report delay). Not validated against a link-level trace.

use crate::{DropCause, Outcome, PacketInfo, StageModel};
use spikelab_core::{Rng, SimDuration, SimTime};

/// The stage type's name (`type = "rlc"`), also the label of the tests' random streams.
pub const NAME: &str = "rlc";

/// The most extra round trips one packet may take (bounds `K` when `p` is close to 1).
pub const MAX_ATTEMPTS: u64 = 1000;

/// Knobs of the RLC stage.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RlcParams {
    /// Probability that a packet needs one more link round trip, `0 ≤ p < 1`.
    pub p: f64,
    /// RLC round trip: the wait per extra attempt.
    pub rtt: SimDuration,
    /// Residual SDU loss probability, `0 ≤ loss ≤ 1`.
    pub loss: f64,
}

impl Default for RlcParams {
    fn default() -> RlcParams {
        RlcParams {
            p: 0.1,
            rtt: SimDuration::from_millis(120),
            loss: 0.002,
        }
    }
}

#[derive(Debug)]
pub struct RlcStage {
    p: RlcParams,
    /// `ln p` (`-inf` for `p = 0`).
    ln_p: f64,
    last_departure: SimTime,
    rng: Rng,
}

impl RlcStage {
    pub fn new(p: RlcParams, rng: Rng) -> RlcStage {
        debug_assert!((0.0..1.0).contains(&p.p), "validated by the scenario");
        RlcStage {
            ln_p: p.p.ln(),
            p,
            last_departure: SimTime::ZERO,
            rng,
        }
    }

    pub fn params(&self) -> RlcParams {
        self.p
    }

    /// Extra round trips for the next packet: `floor(ln U / ln p)`, `U` uniform in (0, 1].
    fn attempts(&mut self) -> u64 {
        let u = 1.0 - self.rng.next_f64();
        if self.p.p <= 0.0 {
            return 0;
        }
        let k = (u.ln() / self.ln_p).floor();
        if k.is_finite() && k >= 0.0 {
            (k as u64).min(MAX_ATTEMPTS)
        } else {
            0
        }
    }
}

impl StageModel for RlcStage {
    fn on_arrival(&mut self, now: SimTime, _pkt: &PacketInfo) -> Outcome {
        let k = self.attempts();
        let lost = self.rng.chance(self.p.loss);
        let leave = (now + self.p.rtt.saturating_mul(k)).max(self.last_departure);
        self.last_departure = leave;
        if lost {
            Outcome::Drop(leave, DropCause::Rlc)
        } else {
            Outcome::Pass(leave)
        }
    }
}

/// The `rlc` stage's configuration in a scenario (docs/scenario.md, "Stages").
#[cfg(feature = "serde")]
pub use schema::RlcConfig;

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::config::prelude::*;

    optional_fields! {
        /// An RLC stage (`type = "rlc"`): UMTS RLC acknowledged mode, a geometric number of link
        /// round trips per packet, in order, with a residual loss.
        #[derive(Clone, Debug, Default, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct RlcConfig {
            /// The chance that a packet needs one more RLC round trip (default 0.1).
            p: f64,
            /// RLC round trip: the wait per extra attempt (default 120 ms).
            rlc_rtt: Duration,
            /// Residual SDU loss probability (default 0.002).
            loss: f64,
        }
    }

    impl RlcConfig {
        /// The RLC stage's parameters, checked (defaults for what is missing).
        pub fn params(&self, at: &str) -> Result<RlcParams> {
            let d = RlcParams::default();
            let p = self.p.unwrap_or(d.p);
            check(
                p.is_finite() && (0.0..1.0).contains(&p),
                format!("{at}.p"),
                format!("must be in [0, 1) (the chance that a packet needs one more RLC round trip), got {}", num(p)),
            )?;
            let rtt = self.rlc_rtt.map_or(d.rtt, |x| x.0);
            check(
                rtt > SimDuration::ZERO && rtt <= SimDuration::from_secs(60),
                format!("{at}.rlc_rtt"),
                format!("must be in (0, 60 s], got {}", Duration(rtt)),
            )?;
            let loss = self.loss.unwrap_or(d.loss);
            check(
                loss.is_finite() && (0.0..=1.0).contains(&loss),
                format!("{at}.loss"),
                format!("must be a probability in [0, 1], got {}", num(loss)),
            )?;
            Ok(RlcParams { p, rtt, loss })
        }
    }

    impl StageSchema for RlcConfig {
        const TYPE: &'static str = NAME;
        const FIELDS: &'static [&'static str] = &["p", "rlc_rtt", "loss"];

        fn resolve(&mut self, at: &str, _ctx: &ResolveCtx) -> Result<()> {
            let p = self.params(at)?;
            self.p = Some(p.p);
            self.rlc_rtt = Some(Duration(p.rtt));
            self.loss = Some(p.loss);
            Ok(())
        }

        fn build(&self, ctx: &PathCtx) -> Stage {
            Stage::Rlc(RlcStage::new(
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

    fn run(seed: u64, p: RlcParams, gap: SimDuration, n: u64) -> Vec<Outcome> {
        let mut s = RlcStage::new(p, Rng::stream(seed, NAME));
        (0..n)
            .map(|i| s.on_arrival(SimTime(i * gap.as_nanos()), &info()))
            .collect()
    }

    fn time(o: &Outcome) -> SimTime {
        match *o {
            Outcome::Pass(t) | Outcome::Drop(t, _) => t,
        }
    }

    #[test]
    fn never_reorders_even_when_packets_are_dense() {
        // 1 ms apart, 120 ms per extra attempt: many packets wait for one ahead of them.
        let out = run(
            3,
            RlcParams::default(),
            SimDuration::from_millis(1),
            100_000,
        );
        let mut held = 0;
        for (i, w) in out.windows(2).enumerate() {
            assert!(time(&w[1]) >= time(&w[0]), "packet {} overtook", i + 1);
            if time(&w[1]) > SimTime((i as u64 + 1) * 1_000_000) && time(&w[1]) == time(&w[0]) {
                held += 1;
            }
        }
        assert!(held > 10_000, "head-of-line blocking expected, {held}");
    }

    #[test]
    fn mean_added_delay_is_the_geometric_mean_within_two_percent() {
        // 10 s apart: no packet waits for another; the added delay is K · rtt alone.
        let p = RlcParams {
            loss: 0.0,
            ..RlcParams::default()
        };
        let gap = SimDuration::from_secs(10);
        let n = 100_000u64;
        let out = run(11, p, gap, n);
        let total: f64 = out
            .iter()
            .enumerate()
            .map(|(i, o)| (time(o).as_nanos() - i as u64 * gap.as_nanos()) as f64 * 1e-9)
            .sum();
        let mean = total / n as f64;
        let expect = 0.120 * 0.1 / 0.9; // 13.33 ms
        assert!(
            (mean / expect - 1.0).abs() < 0.02,
            "mean added delay {mean} s, expected {expect} s"
        );
        // Every added delay is a whole number of RLC round trips.
        for (i, o) in out.iter().enumerate() {
            let d = time(o).as_nanos() - i as u64 * gap.as_nanos();
            assert_eq!(d % 120_000_000, 0);
        }
    }

    #[test]
    fn residual_loss_drops_at_the_would_be_departure_with_cause_rlc() {
        let p = RlcParams {
            loss: 0.01,
            ..RlcParams::default()
        };
        let out = run(5, p, SimDuration::from_secs(1), 100_000);
        let drops = out
            .iter()
            .filter(|o| matches!(o, Outcome::Drop(_, DropCause::Rlc)))
            .count();
        // Binomial(1e5, 0.01): sd 31.5; allow 5 sd.
        assert!((drops as i64 - 1000).abs() < 158, "{drops}");
    }

    #[test]
    fn zero_p_adds_nothing_and_a_seed_repeats_itself() {
        let p = RlcParams {
            p: 0.0,
            loss: 0.0,
            ..RlcParams::default()
        };
        let out = run(1, p, SimDuration::from_millis(5), 1000);
        for (i, o) in out.iter().enumerate() {
            assert_eq!(*o, Outcome::Pass(SimTime(i as u64 * 5_000_000)));
        }
        let a = run(7, RlcParams::default(), SimDuration::from_millis(3), 10_000);
        let b = run(7, RlcParams::default(), SimDuration::from_millis(3), 10_000);
        let c = run(8, RlcParams::default(), SimDuration::from_millis(3), 10_000);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
