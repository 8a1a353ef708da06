//! Land-mobile-satellite (LMS) channel: the three-state Markov/Loo model of Perez-Fontan et al.
//! (IEEE Trans. Broadcasting 44(1), 1998; IEEE TVT 50(6), 2001), intermediate tree shadowing
//! (ITS), S band. Paper 001 (Tauran et al.) runs its HARQ link over this channel.
//!
//! The complex gain is Loo's `h(t) = A(t) + d(t)`:
//! - a Markov chain picks state 1 = line of sight, 2 = moderate, 3 = deep shadowing;
//! - `20·log10 A` is Gaussian with the state's mean `alpha` and std `psi` (dB), correlated over
//!   a shadowing correlation length (AR(1) in distance);
//! - `d(t)` is a zero-mean complex Gaussian of power `10^(mp/10)` relative to the unshadowed
//!   direct signal, with a Jakes (Clarke) spectrum at `f_D = v·f_c/c`.
//!
//! The SNR is `γ(t) = γ_ref·|h(t)|²`, γ_ref the SNR of an unshadowed, unfaded direct signal.
//!
//! **Time structure.** The channel is a deterministic function of time once seeded, so that a
//! stage can ask for the SNR at a future instant (a HARQ retransmission) before the next
//! packet's arrival, and the answer does not depend on the order of the questions:
//! - the state chain is continuous-time with rates `q_ij = W_j/τ` (i ≠ j), so its stationary
//!   law is exactly `W` (detailed balance); `τ = sojourn_m / v`. Mean time in state i is
//!   `τ/(1 − W_i)`. Sojourns are drawn lazily from their own stream;
//! - the shadowing is a unit AR(1) sequence `z` on a time grid (step `grid`, held between grid
//!   points), `ρ = exp(−v·grid/L_corr)`, drawn lazily from its own stream. State i's direct
//!   signal is `alpha_i + psi_i·z` dB; for `crossfade_m` of travel after a state change the dB
//!   value and the diffuse power are blended linearly from the old state's to the new one's;
//! - the diffuse part is a sum of 64 sinusoids with random phases, a closed-form function of
//!   continuous time (no grid, no filter state, evaluable at any future instant, exact
//!   time-averaged power), chosen over a filtered Gaussian sequence for that reason. Its
//!   Doppler spectrum is a knob: `Gaussian` (default), frequencies stratified over
//!   N(0, f_D²/2) (the rms spread of Jakes' spectrum, so the same ~2.4 ms half-correlation time
//!   at 50 km/h) with autocorrelation `exp(−(π f_D τ)²)`; or `Jakes` (Zheng & Xiao, IEEE
//!   Commun. Lett. 6(6), 2002), autocorrelation `J0(2π f_D τ)`. Gaussian is the default because
//!   Jakes' isotropic ring keeps |J0| ≈ 0.2 at HARQ's 20 ms spacing, oscillating with speed,
//!   which raises the 7 dB HARQ loss from 4.0 % to about 5 % at 50 km/h through where 20 ms
//!   falls on J0's ripples — an artefact of the isotropic model that the HARQ abstraction
//!   (docs/models.md, "Satellite link": independent diffuse part per transmission) excludes.
//!
//! **Maturity.** The Loo triplets and W are the ITS S-band set quoted from one secondary source
//! (see docs/models.md, "Satellite link"); the transition structure (rates from W and one
//! sojourn knob), the correlation length, the cross-fade and the speed are assumptions, not
//! published for this environment. Tests pin occupancy, per-state Loo statistics, the
//! diffuse power and reproducibility.

use spikelab_core::{Rng, SimDuration, SimTime};
use std::collections::VecDeque;

/// Speed of light, m/s.
const C: f64 = 299_792_458.0;

/// Sinusoids per quadrature component of the diffuse part.
const SINUSOIDS: usize = 64;

/// A standard normal draw (Box-Muller; the second value of the pair is discarded so that one
/// draw always costs two uniforms and the stream position is predictable).
pub(crate) fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.next_f64(); // (0, 1]
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// An exponential draw with the given mean.
fn exponential(rng: &mut Rng, mean: f64) -> f64 {
    -(1.0 - rng.next_f64()).ln() * mean
}

/// The three shadowing states.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LmsState {
    Los = 0,
    Moderate = 1,
    Deep = 2,
}

impl LmsState {
    pub const ALL: [LmsState; 3] = [LmsState::Los, LmsState::Moderate, LmsState::Deep];
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            LmsState::Los => "los",
            LmsState::Moderate => "moderate",
            LmsState::Deep => "deep",
        }
    }
}

/// The Doppler spectrum of the diffuse part.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DopplerSpectrum {
    /// Gaussian, rms spread `f_D/√2` (the same as Jakes'): autocorrelation
    /// `exp(−(π f_D τ)²)`, no oscillating tail. The default (see the module header).
    Gaussian,
    /// Jakes (Clarke's isotropic ring): autocorrelation `J0(2π f_D τ)`.
    Jakes,
}

/// Inverse of the standard normal CDF (Acklam's rational approximation, relative error
/// < 1.2e-9), for `p` in (0, 1).
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Loo parameters and steady-state probability of one state.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LooParams {
    /// Steady-state probability W.
    pub w: f64,
    /// Mean of `20·log10 A`, dB.
    pub alpha: f64,
    /// Standard deviation of `20·log10 A`, dB.
    pub psi: f64,
    /// Diffuse (multipath) power relative to the unshadowed direct signal, dB.
    pub mp: f64,
}

/// The ITS S-band set (Perez-Fontan; values as in docs/models.md, "Satellite link").
pub const ITS_S_BAND: [LooParams; 3] = [
    LooParams {
        w: 0.3929,
        alpha: -0.4,
        psi: 1.5,
        mp: -13.2,
    },
    LooParams {
        w: 0.3571,
        alpha: -8.2,
        psi: 3.9,
        mp: -12.7,
    },
    LooParams {
        w: 0.25,
        alpha: -17.0,
        // Perez-Fontan's value, not π.
        #[allow(clippy::approx_constant)]
        psi: 3.14,
        mp: -10.0,
    },
];

/// Everything that defines the channel process.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LmsParams {
    /// Per state (LOS, moderate, deep).
    pub states: [LooParams; 3],
    /// Vehicle speed, m/s (> 0).
    pub speed: f64,
    /// Carrier frequency, Hz.
    pub carrier: f64,
    /// The chain's time constant as a distance, m: `τ = sojourn_m / speed`.
    pub sojourn_m: f64,
    /// Shadowing correlation length, m.
    pub shadow_corr_m: f64,
    /// Distance over which a state change is blended, m (0: abrupt).
    pub crossfade_m: f64,
    /// Shadowing grid step.
    pub grid: SimDuration,
    /// Doppler spectrum of the diffuse part.
    pub spectrum: DopplerSpectrum,
}

impl Default for LmsParams {
    fn default() -> LmsParams {
        LmsParams {
            states: ITS_S_BAND,
            speed: 50.0 / 3.6,
            carrier: 2.2e9,
            sojourn_m: 6.0,
            shadow_corr_m: 2.0,
            crossfade_m: 1.0,
            grid: SimDuration::from_millis(10),
            spectrum: DopplerSpectrum::Gaussian,
        }
    }
}

impl LmsParams {
    /// Maximum Doppler shift, Hz.
    pub fn doppler(&self) -> f64 {
        self.speed * self.carrier / C
    }
}

/// One look at the channel.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LmsSample {
    pub state: LmsState,
    /// Within `crossfade_m` after a state change (the values are a blend of two states).
    pub crossfade: bool,
    /// `20·log10 A`, dB.
    pub direct_db: f64,
    /// Diffuse part, relative to the unshadowed direct amplitude.
    pub diffuse: (f64, f64),
    /// `|h|²`, the power gain relative to γ_ref.
    pub gain: f64,
}

#[derive(Copy, Clone, Debug)]
struct Sojourn {
    start: u64,
    state: LmsState,
    prev: LmsState,
}

/// A seeded realisation of the channel, extended lazily as far as it is asked.
#[derive(Debug)]
pub struct LmsChannel {
    p: LmsParams,
    chain_rng: Rng,
    shadow_rng: Rng,
    /// Sojourns whose end is at or after the earliest time still askable; the last one is open.
    sojourns: VecDeque<Sojourn>,
    /// Shadowing values `z[first_index ..]` on the grid.
    shadow: VecDeque<f64>,
    first_index: u64,
    rho: f64,
    /// Diffuse sum of sinusoids: angular frequencies and phases, in-phase then quadrature.
    w_i: Vec<f64>,
    ph_i: Vec<f64>,
    w_q: Vec<f64>,
    ph_q: Vec<f64>,
    /// Nothing before this time will be asked again (ns).
    horizon: u64,
}

impl LmsChannel {
    /// The channel for `params`, its three random processes seeded from `rng`.
    pub fn new(p: LmsParams, mut rng: Rng) -> LmsChannel {
        debug_assert!(p.speed > 0.0 && p.grid.0 > 0);
        let mut chain_rng = Rng::stream(rng.next_u64(), "lms/state");
        let mut shadow_rng = Rng::stream(rng.next_u64(), "lms/shadow");
        let mut sos_rng = Rng::stream(rng.next_u64(), "lms/diffuse");
        // The first state from the steady-state law.
        let u = chain_rng.next_f64();
        let first = if u < p.states[0].w {
            LmsState::Los
        } else if u < p.states[0].w + p.states[1].w {
            LmsState::Moderate
        } else {
            LmsState::Deep
        };
        let mut sojourns = VecDeque::new();
        sojourns.push_back(Sojourn {
            start: 0,
            state: first,
            prev: first,
        });
        let step_m = p.speed * p.grid.0 as f64 * 1e-9;
        let rho = (-step_m / p.shadow_corr_m).exp();
        let mut shadow = VecDeque::new();
        shadow.push_back(normal(&mut shadow_rng));
        let two_pi = 2.0 * std::f64::consts::PI;
        let wd = two_pi * p.doppler();
        let theta = (sos_rng.next_f64() - 0.5) * two_pi;
        let m = SINUSOIDS as f64;
        let mut w_i = vec![0.0; SINUSOIDS];
        let mut ph_i = vec![0.0; SINUSOIDS];
        let mut w_q = vec![0.0; SINUSOIDS];
        let mut ph_q = vec![0.0; SINUSOIDS];
        for n in 0..SINUSOIDS {
            match p.spectrum {
                DopplerSpectrum::Jakes => {
                    let a = (two_pi * (n as f64 + 1.0) - std::f64::consts::PI + theta) / (4.0 * m);
                    w_i[n] = wd * a.cos();
                    w_q[n] = wd * a.sin();
                }
                DopplerSpectrum::Gaussian => {
                    // Stratified draws from N(0, (f_D/√2)²): one frequency per 1/M of the law.
                    let u = (n as f64 + sos_rng.next_f64()) / m;
                    w_i[n] = wd / 2f64.sqrt() * normal_quantile(u.clamp(1e-12, 1.0 - 1e-12));
                    w_q[n] = w_i[n];
                }
            }
            ph_i[n] = (sos_rng.next_f64() - 0.5) * two_pi;
            ph_q[n] = (sos_rng.next_f64() - 0.5) * two_pi;
        }
        LmsChannel {
            p,
            chain_rng,
            shadow_rng,
            sojourns,
            shadow,
            first_index: 0,
            rho,
            w_i,
            ph_i,
            w_q,
            ph_q,
            horizon: 0,
        }
    }

    pub fn params(&self) -> &LmsParams {
        &self.p
    }

    /// Promises that no time before `t` will be asked again: the samples before it are freed.
    pub fn forget_before(&mut self, t: SimTime) {
        if t.0 <= self.horizon {
            return;
        }
        self.horizon = t.0;
        while self.sojourns.len() > 1 && self.sojourns[1].start <= t.0 {
            self.sojourns.pop_front();
        }
        let keep_from = t.0 / self.p.grid.0;
        while self.first_index < keep_from && self.shadow.len() > 1 {
            self.shadow.pop_front();
            self.first_index += 1;
        }
    }

    /// The sojourn that holds `t` (extending the chain as needed).
    fn sojourn_at(&mut self, t: u64) -> Sojourn {
        while self.sojourns.back().expect("never empty").start <= t {
            let last = *self.sojourns.back().expect("never empty");
            let i = last.state as usize;
            let wi = self.p.states[i].w;
            let tau = self.p.sojourn_m / self.p.speed;
            let hold = exponential(&mut self.chain_rng, tau / (1.0 - wi));
            // Next state j ≠ i with probability W_j / (1 − W_i).
            let mut u = self.chain_rng.next_f64() * (1.0 - wi);
            let mut next = last.state;
            for s in LmsState::ALL {
                if s == last.state {
                    continue;
                }
                next = s;
                let wj = self.p.states[s as usize].w;
                if u < wj {
                    break;
                }
                u -= wj;
            }
            let dt = ((hold * 1e9).round() as u64).max(1);
            self.sojourns.push_back(Sojourn {
                start: last.start + dt,
                state: next,
                prev: last.state,
            });
        }
        // The last sojourn starting at or before t.
        let k = self.sojourns.partition_point(|s| s.start <= t);
        debug_assert!(k >= 1, "asked before the horizon");
        self.sojourns[k.saturating_sub(1)]
    }

    /// The unit shadowing value held at `t`.
    fn z_at(&mut self, t: u64) -> f64 {
        let idx = t / self.p.grid.0;
        let idx = idx.max(self.first_index);
        let innov = (1.0 - self.rho * self.rho).sqrt();
        while self.first_index + (self.shadow.len() as u64) <= idx {
            let last = *self.shadow.back().expect("never empty");
            let z = self.rho * last + innov * normal(&mut self.shadow_rng);
            self.shadow.push_back(z);
        }
        self.shadow[(idx - self.first_index) as usize]
    }

    /// The unit-power diffuse process at `t` (E|g|² = 1).
    pub(crate) fn diffuse_unit(&self, t: u64) -> (f64, f64) {
        let ts = t as f64 * 1e-9;
        let mut re = 0.0;
        let mut im = 0.0;
        match self.p.spectrum {
            // Zheng & Xiao: two real sums on the quadrant's angles.
            DopplerSpectrum::Jakes => {
                for n in 0..SINUSOIDS {
                    re += (self.w_i[n] * ts + self.ph_i[n]).cos();
                    im += (self.w_q[n] * ts + self.ph_q[n]).cos();
                }
            }
            // One complex sum of exponentials (the spectrum need not be symmetric per draw).
            DopplerSpectrum::Gaussian => {
                for n in 0..SINUSOIDS {
                    let (s, c) = (self.w_i[n] * ts + self.ph_i[n]).sin_cos();
                    re += c;
                    im += s;
                }
            }
        }
        // Each quadrature has power M/2 before scaling; the pair sums to 1.
        let k = 1.0 / (SINUSOIDS as f64).sqrt();
        (re * k, im * k)
    }

    /// The channel at time `t` (not before the last [`LmsChannel::forget_before`]).
    pub fn sample(&mut self, t: SimTime) -> LmsSample {
        let s = self.sojourn_at(t.0);
        let z = self.z_at(t.0);
        let cur = self.p.states[s.state as usize];
        let mut direct_db = cur.alpha + cur.psi * z;
        let mut mp_db = cur.mp;
        let cf_ns = self.p.crossfade_m / self.p.speed * 1e9;
        let since = (t.0 - s.start) as f64;
        let crossfade = s.start > 0 && s.prev != s.state && since < cf_ns;
        if crossfade {
            let old = self.p.states[s.prev as usize];
            let u = since / cf_ns;
            direct_db = (1.0 - u) * (old.alpha + old.psi * z) + u * direct_db;
            mp_db = (1.0 - u) * old.mp + u * mp_db;
        }
        let a = 10f64.powf(direct_db / 20.0);
        let (gr, gi) = self.diffuse_unit(t.0);
        let dp = 10f64.powf(mp_db / 20.0);
        let diffuse = (gr * dp, gi * dp);
        let re = a + diffuse.0;
        let im = diffuse.1;
        LmsSample {
            state: s.state,
            crossfade,
            direct_db,
            diffuse,
            gain: re * re + im * im,
        }
    }

    /// `|h(t)|²`: the SNR at `t` over the reference SNR.
    pub fn gain(&mut self, t: SimTime) -> f64 {
        self.sample(t).gain
    }
}

/// The land-mobile-satellite channel under a harq stage as a scenario gives it (`channel = {
/// ... }`; every knob has a default).
#[cfg(feature = "serde")]
pub use schema::{ChannelConfig, DopplerKind, LooConfig};

#[cfg(feature = "serde")]
mod schema {
    use crate::config::prelude::*;
    use std::collections::BTreeMap;

    /// The Doppler spectrum of the LMS channel's diffuse part.
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum DopplerKind {
        Gaussian,
        Jakes,
    }

    optional_fields! {
        /// One LMS state's Loo parameters; a missing value keeps the ITS S-band default.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct LooConfig {
            /// Steady-state probability.
            w: f64,
            /// Mean of the direct signal's level, dB.
            alpha: f64,
            /// Standard deviation of the direct signal's level, dB.
            psi: f64,
            /// Diffuse power relative to the unshadowed direct signal, dB.
            mp: f64,
        }
    }

    optional_fields! {
        /// The LMS channel under a harq stage (`channel = { ... }`); every knob has a default.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct ChannelConfig {
            /// Vehicle speed, km/h (default 50).
            speed_kmh: f64,
            /// Carrier frequency, GHz (default 2.2, S band).
            carrier_ghz: f64,
            /// The state chain's time constant as a distance, m (default 6).
            sojourn_m: f64,
            /// Shadowing correlation length, m (default 2).
            shadow_corr_m: f64,
            /// Distance over which a state change is blended, m (default 1).
            crossfade_m: f64,
            /// Shadowing grid step (default 10 ms).
            grid: Duration,
            /// Diffuse Doppler spectrum (default gaussian).
            doppler: DopplerKind,
            /// Per state (`los`, `moderate`, `deep`): Loo parameters overriding the ITS set.
            states: BTreeMap<String, LooConfig>,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10^6 samples 100 ms apart (1.4 m at 50 km/h, 10^5 s of channel: about 2·10^5 chain
    /// time constants, so the occupancy estimate's own spread is ~0.15 %).
    fn samples(seed: u64, n: usize) -> Vec<LmsSample> {
        let mut ch = LmsChannel::new(LmsParams::default(), Rng::stream(seed, "lms-test"));
        (0..n)
            .map(|k| {
                let t = SimTime::from_millis(100 * k as u64);
                let s = ch.sample(t);
                ch.forget_before(t);
                s
            })
            .collect()
    }

    #[test]
    fn occupancy_loo_statistics_and_diffuse_power_match_the_its_set() {
        let v = samples(11, 1_000_000);
        for st in LmsState::ALL {
            let want = ITS_S_BAND[st as usize];
            let all: Vec<&LmsSample> = v.iter().filter(|s| s.state == st).collect();
            let occ = all.len() as f64 / v.len() as f64;
            // Outside the cross-fade the direct signal is the state's own Loo process.
            let own: Vec<f64> = all
                .iter()
                .filter(|s| !s.crossfade)
                .map(|s| s.direct_db)
                .collect();
            let n = own.len() as f64;
            let mean = own.iter().sum::<f64>() / n;
            let sd = (own.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            let dpow: f64 = all
                .iter()
                .filter(|s| !s.crossfade)
                .map(|s| s.diffuse.0.powi(2) + s.diffuse.1.powi(2))
                .sum::<f64>()
                / n;
            let mp = 10.0 * dpow.log10();
            println!(
                "{}: occupancy {occ:.4} (W {}), alpha {mean:.3} dB ({}), psi {sd:.3} dB ({}), \
                 MP {mp:.3} dB ({})",
                st.name(),
                want.w,
                want.alpha,
                want.psi,
                want.mp
            );
            assert!((occ - want.w).abs() < 0.01, "{st:?} occupancy {occ}");
            assert!((mean - want.alpha).abs() < 0.1, "{st:?} alpha {mean}");
            assert!((sd - want.psi).abs() < 0.1, "{st:?} psi {sd}");
            assert!((mp - want.mp).abs() < 0.1, "{st:?} MP {mp}");
        }
        // Mean SNR over all states: -2.75 dB relative to the reference (docs/models.md).
        let g = v.iter().map(|s| s.gain).sum::<f64>() / v.len() as f64;
        let g_db = 10.0 * g.log10();
        println!("mean |h|^2 {g_db:.3} dB");
        assert!((g_db + 2.75).abs() < 0.15, "mean gain {g_db} dB");
    }

    #[test]
    fn a_seed_reproduces_the_sequence_whatever_the_order_of_questions() {
        let a = samples(5, 2000);
        let b = samples(5, 2000);
        assert_eq!(a, b);
        assert_ne!(a, samples(6, 2000));
        // Asking ahead (as HARQ does) does not change the realisation.
        let mut ch = LmsChannel::new(LmsParams::default(), Rng::stream(5, "lms-test"));
        for k in 0..2000u64 {
            let t = SimTime::from_millis(100 * k);
            let _ = ch.sample(t + SimDuration::from_millis(370));
            assert_eq!(ch.sample(t), a[k as usize]);
            ch.forget_before(t);
        }
    }

    #[test]
    fn diffuse_autocorrelation_follows_the_chosen_doppler_spectrum() {
        // E[g(t) g*(t+Δ)] = J0(2π f_D Δ) for a unit-power Clarke process; averaged over time
        // on one realisation of 16+16 sinusoids.
        let jakes = LmsParams {
            spectrum: DopplerSpectrum::Jakes,
            ..LmsParams::default()
        };
        let ch = LmsChannel::new(jakes, Rng::stream(3, "lms-test"));
        let gauss = LmsChannel::new(LmsParams::default(), Rng::stream(3, "lms-test"));
        let fd = ch.params().doppler();
        assert!((fd - 101.9).abs() < 0.2, "{fd}");
        // J0 by its integral (1/π)∫_0^π cos(x sin θ) dθ (midpoint rule, 10^4 points).
        let j0 = |x: f64| {
            let m = 10_000;
            (0..m)
                .map(|i| {
                    let th = (i as f64 + 0.5) * std::f64::consts::PI / m as f64;
                    (x * th.sin()).cos()
                })
                .sum::<f64>()
                / m as f64
        };
        // Time-averaged E[g(t)·g*(t+Δ)] on one realisation.
        let corr = |c: &LmsChannel, lag: u64| {
            let n = 200_000u64;
            let mut acc = 0.0;
            for k in 0..n {
                let t = k * 1_234_567;
                let (a, b) = c.diffuse_unit(t);
                let (x, y) = c.diffuse_unit(t + lag);
                acc += a * x + b * y;
            }
            acc / n as f64
        };
        let pi = std::f64::consts::PI;
        for lag_ms in [1.0, 2.0, 4.0, 20.0] {
            let lag = (lag_ms * 1e6) as u64;
            let (r_j, want_j) = (corr(&ch, lag), j0(2.0 * pi * fd * lag_ms * 1e-3));
            let (r_g, want_g) = (
                corr(&gauss, lag),
                (-(pi * fd * lag_ms * 1e-3).powi(2)).exp(),
            );
            println!(
                "lag {lag_ms} ms: Jakes {r_j:.4} vs J0 {want_j:.4}; Gaussian {r_g:.4} vs {want_g:.4}"
            );
            assert!(
                (r_j - want_j).abs() < 0.05,
                "lag {lag_ms}: {r_j} vs {want_j}"
            );
            assert!(
                (r_g - want_g).abs() < 0.05,
                "lag {lag_ms}: {r_g} vs {want_g}"
            );
        }
    }
}
