//! The `wlan-walkaway` preset: paper 004's WLAN client walking away from its access point
//! (802.11g, about 1 m/s), as a round-trip-time trace and a loss curve.
//!
//! Paper 004 reports the behaviour in words and one snapshot: the RTT is flat at a few
//! milliseconds until about 60 s (§6.1, Fig. 2), then rises steeply, to seconds after about
//! 100 s (§5); the RFC 4960 estimator's state at 100 s is SRTT 107 ms, RTTVAR 79 ms, RTT 7 ms,
//! RTO 1 s, and its RTO at 110 s is 2,802 ms. The deterministic *skeleton* below is a curve
//! fitted to those numbers (one sample a second; the fit and its residuals are in the shared
//! model reference, §5 "WLAN walk-away"):
//!
//! - `t < 60 s`: 5 ms;
//! - `60 <= t < 100`: a ramp `B(t) = 5 + 135·(t − 60)/39` ms made bursty by ±46 % on alternate
//!   seconds (`B·1.46` on odd seconds, `B·0.54` on even ones);
//! - `t = 100`: 7 ms (the paper's snapshot sample);
//! - `t > 100`: `min(800·e^((t − 101)/20), 2900)` ms.
//!
//! The noisy variant multiplies each sample by an independent LogNormal(0, σ) draw from a
//! seeded stream. The paper gives no loss numbers; the loss curve
//! `p(t) = p_max·(1 − e^(−(t − 60)/τ))` from 60 s on (p_max 0.3, τ 40 s) is an assumption, a
//! knob, not a measurement.

use spikelab_core::Rng;

/// Seconds after which the walk's RTT starts rising (and loss starts).
pub const KNEE_S: f64 = 60.0;
/// Default maximum loss probability of the loss curve (an assumption).
pub const DEFAULT_P_MAX: f64 = 0.3;
/// Default time constant of the loss curve, seconds (an assumption).
pub const DEFAULT_TAU_S: f64 = 40.0;
/// The skeleton's cap, ms: the RTT stops growing here (the AP's queue is full).
pub const RTT_CAP_MS: f64 = 2900.0;

/// The skeleton RTT at whole second `t`, ms.
pub fn skeleton_rtt_ms(t: u32) -> f64 {
    let tf = t as f64;
    if tf < KNEE_S {
        5.0
    } else if t < 100 {
        let base = 5.0 + (140.0 - 5.0) * (tf - KNEE_S) / 39.0;
        let s = if t % 2 == 1 { 1.0 } else { -1.0 };
        base * (1.0 + 0.46 * s)
    } else if t == 100 {
        7.0
    } else {
        (800.0 * ((tf - 101.0) / 20.0).exp()).min(RTT_CAP_MS)
    }
}

/// One RTT sample a second for `t = 0 .. seconds - 1`, ms: the skeleton, or with `noise = σ > 0`
/// each sample multiplied by LogNormal(0, σ) drawn from the stream `(seed, "wlan-walkaway")`.
pub fn rtt_trace_ms(seconds: u32, noise: f64, seed: u64) -> Vec<f64> {
    let mut rng = Rng::stream(seed, "wlan-walkaway");
    (0..seconds)
        .map(|t| {
            let r = skeleton_rtt_ms(t);
            if noise > 0.0 {
                r * (noise * standard_normal(&mut rng)).exp()
            } else {
                r
            }
        })
        .collect()
}

/// The loss curve at time `t_s` seconds.
pub fn loss_at(t_s: f64, p_max: f64, tau_s: f64) -> f64 {
    if t_s < KNEE_S {
        0.0
    } else {
        p_max * (1.0 - (-(t_s - KNEE_S) / tau_s).exp())
    }
}

/// A standard normal draw (Box-Muller, one of the pair).
fn standard_normal(rng: &mut Rng) -> f64 {
    // 1 - u is in (0, 1]: the logarithm is finite.
    let u1 = 1.0 - rng.next_f64();
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The `wlan-walkaway` preset of a delay or loss stage (`preset = "wlan-walkaway"` or a table
/// with its knobs): this walk as the stage's profile.
#[cfg(feature = "serde")]
pub use schema::{
    PresetFor, PresetSpec, PresetTable, DELAY_PRESET_KNOBS, LOSS_PRESET_KNOBS, PRESETS,
    WALKAWAY_SECONDS,
};

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::config::prelude::*;
    use crate::config::{Named, PresetKnobs};

    optional_fields! {
        /// A stage's `preset`: a measured behaviour turned into the stage's profile, given by name
        /// (`preset = "wlan-walkaway"`) or as a table with knobs (`preset = { name = "wlan-walkaway",
        /// noise = 0.2 }`). Written back the way it came.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct PresetTable {
            [name: String]
            /// Delay: sigma of the log-normal factor on each sample (0: the deterministic skeleton).
            noise: f64,
            /// Delay: the seed of the noise (independent of the run's seed, so that every run of a
            /// sweep sees the same walk unless the file varies this).
            seed: u64,
            /// Delay: the fraction of the measured RTT this stage adds (1: all of it).
            share: f64,
            /// Loss: the loss curve's maximum probability.
            p_max: f64,
            /// Loss: the loss curve's time constant.
            tau: Duration,
        }
    }

    /// The knobs of a delay stage's preset and of a loss stage's ([`PresetTable`]).
    pub const DELAY_PRESET_KNOBS: &[&str] = &["noise", "seed", "share"];
    pub const LOSS_PRESET_KNOBS: &[&str] = &["p_max", "tau"];

    impl PresetKnobs for PresetTable {
        fn name(&self) -> &str {
            &self.name
        }
        fn set_name(&mut self, name: String) {
            self.name = name;
        }
    }

    /// A stage's `preset`.
    pub type PresetSpec = Named<PresetTable>;

    /// The stage a preset's profile is for.
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub enum PresetFor {
        /// Rows `[time_ms, delay_ms, loss]`.
        Delay,
        /// Rows `[time_ms, loss]`.
        Loss,
    }

    /// Names accepted in a stage's `preset`.
    pub const PRESETS: &[&str] = &["wlan-walkaway"];

    /// How many seconds of a walk a preset profile covers (its last value holds after that).
    pub const WALKAWAY_SECONDS: u32 = 300;

    impl PresetSpec {
        /// The stage's profile rows (`[time_ms, delay_ms, loss]` for a delay stage, `[time_ms,
        /// loss]` for a loss stage), after checking the knobs.
        pub fn rows(&self, at: &str, kind: PresetFor) -> Result<Vec<Vec<f64>>> {
            let t = &self.table;
            let field = |f: &str| {
                if self.named {
                    format!("{at}.preset")
                } else {
                    format!("{at}.preset.{f}")
                }
            };
            check(
                PRESETS.contains(&t.name.as_str()),
                field("name"),
                format!(
                    "unknown preset {:?} (known: {})",
                    t.name,
                    PRESETS.join(", ")
                ),
            )?;
            let allowed = match kind {
                PresetFor::Delay => DELAY_PRESET_KNOBS,
                PresetFor::Loss => LOSS_PRESET_KNOBS,
            };
            for name in t.set_fields() {
                check(
                    allowed.contains(&name),
                    field(name),
                    format!(
                        "not a knob of the {} preset on a {} stage (allowed: {})",
                        t.name,
                        format!("{kind:?}").to_lowercase(),
                        allowed.join(", ")
                    ),
                )?;
            }
            let secs = WALKAWAY_SECONDS;
            Ok(match kind {
                PresetFor::Delay => {
                    let noise = t.noise.unwrap_or(0.0);
                    check(
                        noise.is_finite() && (0.0..=2.0).contains(&noise),
                        field("noise"),
                        format!("must be in [0, 2] (a log-normal sigma), got {}", num(noise)),
                    )?;
                    let share = t.share.unwrap_or(1.0);
                    check(
                        share.is_finite() && share > 0.0 && share <= 1.0,
                        field("share"),
                        format!("must be in (0, 1], got {}", num(share)),
                    )?;
                    rtt_trace_ms(secs, noise, t.seed.unwrap_or(1))
                        .iter()
                        .enumerate()
                        .map(|(i, r)| vec![i as f64 * 1000.0, r * share, 0.0])
                        .collect()
                }
                PresetFor::Loss => {
                    let p_max = t.p_max.unwrap_or(DEFAULT_P_MAX);
                    probability(p_max, &field("p_max"))?;
                    let tau = t.tau.map_or(DEFAULT_TAU_S, |d| d.0.as_secs_f64());
                    check(tau > 0.0, field("tau"), format!("must be > 0, got {tau} s"))?;
                    (0..secs)
                        .map(|i| vec![i as f64 * 1000.0, loss_at(i as f64, p_max, tau)])
                        .collect()
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skeleton_matches_its_definition() {
        assert_eq!(skeleton_rtt_ms(0), 5.0);
        assert_eq!(skeleton_rtt_ms(59), 5.0);
        // 60 s: B = 5, even second: 5 * 0.54.
        assert!((skeleton_rtt_ms(60) - 2.7).abs() < 1e-12);
        // 99 s: B = 5 + 135 * 39/39 = 140, odd: 140 * 1.46.
        assert!((skeleton_rtt_ms(99) - 204.4).abs() < 1e-9);
        assert_eq!(skeleton_rtt_ms(100), 7.0);
        assert_eq!(skeleton_rtt_ms(101), 800.0);
        assert!((skeleton_rtt_ms(121) - 800.0 * 1f64.exp()).abs() < 1e-9);
        assert_eq!(skeleton_rtt_ms(200), RTT_CAP_MS);
    }

    #[test]
    fn the_envelope_rises_after_the_knee_and_the_noise_is_seeded() {
        let s = rtt_trace_ms(221, 0.0, 1);
        assert_eq!(s.len(), 221);
        // The ramp's envelope (the odd seconds) rises through 60-100 s; after 101 s it never falls.
        for t in (61..99).step_by(2) {
            assert!(s[t + 2] > s[t]);
        }
        for t in 101..220 {
            assert!(s[t + 1] >= s[t]);
        }
        let a = rtt_trace_ms(221, 0.2, 7);
        assert_eq!(a, rtt_trace_ms(221, 0.2, 7));
        assert_ne!(a, rtt_trace_ms(221, 0.2, 8));
        // LogNormal(0, 0.2) has median 1: about half the samples are above the skeleton.
        let above = a.iter().zip(&s).filter(|(x, y)| x > y).count();
        assert!((80..=140).contains(&above), "{above} of 221 above");
    }

    #[test]
    fn loss_starts_at_the_knee_and_approaches_p_max() {
        assert_eq!(loss_at(59.9, 0.3, 40.0), 0.0);
        assert!((loss_at(100.0, 0.3, 40.0) - 0.3 * (1.0 - (-1f64).exp())).abs() < 1e-12);
        assert!(loss_at(1000.0, 0.3, 40.0) > 0.2999);
    }
}
