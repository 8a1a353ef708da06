//! The HARQ stage: a hybrid-ARQ link over the LMS channel ([`crate::lms`]), paper 001 §II
//! (Tauran et al.: Adaptive-HARQ of Ahmad et al., QPSK, CCSDS turbo mother code 1/6, codeword
//! 53 520 bits carrying 8 920 data bits, at most 3 retransmissions, 10 to 70 ms).
//!
//! **Decoding abstraction (accumulated mutual information).** A codeword's transmissions carry
//! a quarter of the mother codeword each, `n = 6 690` QPSK symbols. Type II (incremental
//! redundancy, the default): after transmission k the receiver holds `Σ_{i≤k} n·I(γ_i)` bits of
//! mutual information and decodes once that reaches `K·(1 + δ)`, `K = 8 920`, δ the code's gap to
//! the bound. Type I (chase combining): every transmission repeats the first quarter and the
//! receiver adds SNRs: decoded once `n·I(Σ γ_i) ≥ K·(1 + δ)`. `I` is the mutual information of
//! Gaussian-input-constrained QPSK ([`qpsk_mi`]). Block fading: transmission i sees the channel's
//! SNR at its send time (arrival + `retx_delay`·i; codeword c of a packet `c·n/symbol_rate`
//! later).
//!
//! **Timing.** A packet decoded after transmission k leaves `first_delay + (k−1)·retx_delay`
//! after it arrived (10/30/50/70 ms by default); one that fails every transmission is dropped
//! (`DropCause::Harq`) when the last one fails. A packet longer than one codeword (K bits) needs
//! all of its codewords; it leaves when the slowest decodes. HARQ processes run in parallel, so
//! packets do not wait for each other and leave out of order — unless the link-layer reordering
//! buffer (ref. [9] of 001) is on: then packet j leaves at `max(decoded_j, release_{j−1})`, a
//! dropped packet releasing the ones behind it when its last transmission fails.
//!
//! The stage does not model the link's capacity (put a rate stage before it) nor buffer
//! overflow (001's buffers never overflow).
//!
//! **Maturity.** The code parameters and timing are 001's; the equal redundancy split, δ (0.02,
//! calibrated to 001's loss figures), block fading per transmission and the symbol rate are
//! assumptions (docs/models.md, "Satellite link").

use crate::lms::{LmsChannel, LmsParams};
use crate::{DropCause, Outcome, PacketInfo, StageModel};
use spikelab_core::{Rng, SimDuration, SimTime};
use std::sync::OnceLock;

/// Information bits per codeword (paper 001: 8 920).
pub const K_BITS: u32 = 8920;
/// Code bits of the rate-1/6 mother codeword (paper 001: 53 520).
pub const N_BITS: u32 = 53520;
/// Transmissions a codeword is split into (1 + 3 retransmissions).
pub const PARTS: u32 = 4;
/// QPSK symbols per transmission: `N_BITS / 2 / PARTS` = 6 690.
pub const SYMBOLS_PER_TX: u32 = N_BITS / 2 / PARTS;

// ---- QPSK mutual information ---------------------------------------------------------------

/// Lowest and highest tabulated Es/N0 (dB) and the table step.
const MI_LO_DB: f64 = -30.0;
const MI_HI_DB: f64 = 30.0;
const MI_STEP_DB: f64 = 0.02;

/// `E_Z[log2(1 + exp(−2s − 2√s·Z))]`, Z ~ N(0,1), by the composite Simpson rule over
/// |Z| ≤ 10 (the tails weigh < 1e-22).
fn bpsk_loss(s: f64) -> f64 {
    let n = 2000; // even
    let (a, b) = (-10.0f64, 10.0f64);
    let h = (b - a) / n as f64;
    let f = |z: f64| {
        let x = -2.0 * s - 2.0 * s.sqrt() * z;
        // log2(1 + e^x) without overflow.
        let l = if x > 30.0 {
            x + (-x).exp().ln_1p()
        } else {
            x.exp().ln_1p()
        };
        l / std::f64::consts::LN_2 * (-0.5 * z * z).exp()
    };
    let mut acc = f(a) + f(b);
    for i in 1..n {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        acc += w * f(a + i as f64 * h);
    }
    acc * h / 3.0 / (2.0 * std::f64::consts::PI).sqrt()
}

fn mi_table() -> &'static [f64] {
    static TABLE: OnceLock<Vec<f64>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let n = ((MI_HI_DB - MI_LO_DB) / MI_STEP_DB).round() as usize + 1;
        (0..n)
            .map(|i| {
                let g = 10f64.powf((MI_LO_DB + i as f64 * MI_STEP_DB) / 10.0);
                2.0 * (1.0 - bpsk_loss(g))
            })
            .collect()
    })
}

/// Mutual information of QPSK with equiprobable Gray-mapped symbols over complex AWGN at
/// `Es/N0 = snr` (linear), bits per symbol: `2·(1 − E[log2(1 + e^{−2γ−2√γ·Z})])` (each
/// quadrature is BPSK at Es/N0 = γ/2). Tabulated every 0.02 dB from −30 to +30 dB and
/// interpolated linearly in dB; below the table `I ∝ γ`, above it 2.
pub fn qpsk_mi(snr: f64) -> f64 {
    let t = mi_table();
    if snr.is_nan() || snr <= 0.0 {
        return 0.0;
    }
    let db = 10.0 * snr.log10();
    if db <= MI_LO_DB {
        return t[0] * snr / 10f64.powf(MI_LO_DB / 10.0);
    }
    if db >= MI_HI_DB {
        return 2.0;
    }
    let x = (db - MI_LO_DB) / MI_STEP_DB;
    let i = (x.floor() as usize).min(t.len() - 2);
    let f = x - i as f64;
    t[i] * (1.0 - f) + t[i + 1] * f
}

// ---- the stage -----------------------------------------------------------------------------

/// How the receiver combines transmissions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Combining {
    /// Type II, incremental redundancy: mutual information adds.
    IncrementalRedundancy,
    /// Type I, chase combining: SNRs add.
    Chase,
}

/// Knobs of the HARQ stage.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct HarqParams {
    /// Reference SNR γ_ref (linear): an unshadowed, unfaded direct signal's Es/N0.
    pub snr_ref: f64,
    pub combining: Combining,
    /// Code gap δ ≥ 0: decoded once the collected information reaches `K·(1 + δ)`.
    pub delta: f64,
    /// Retransmissions after the first transmission.
    pub max_retx: u32,
    /// Delay of a packet decoded after its first transmission.
    pub first_delay: SimDuration,
    /// Extra delay per retransmission.
    pub retx_delay: SimDuration,
    /// QPSK symbols per second on the link (spaces the codewords of one packet).
    pub symbol_rate: f64,
    /// Deliver in link order (link-layer reordering buffer).
    pub reorder_buffer: bool,
}

impl Default for HarqParams {
    fn default() -> HarqParams {
        HarqParams {
            snr_ref: 10.0,
            combining: Combining::IncrementalRedundancy,
            delta: 0.02,
            max_retx: 3,
            first_delay: SimDuration::from_millis(10),
            retx_delay: SimDuration::from_millis(20),
            symbol_rate: 30e6,
            reorder_buffer: false,
        }
    }
}

/// What happened to one packet (for tests and traces).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HarqFate {
    /// Transmissions used by the slowest codeword (`max_retx + 1` and `decoded = false`: lost).
    pub transmissions: u32,
    pub decoded: bool,
    /// When HARQ finished with the packet (decoded, or its last transmission failed).
    pub done: SimTime,
}

#[derive(Debug)]
pub struct HarqStage {
    p: HarqParams,
    /// Boxed: the channel is large and a `Stage` is an enum.
    channel: Box<LmsChannel>,
    /// Departure of the latest packet in link order (reordering buffer).
    release: SimTime,
    last_fate: Option<HarqFate>,
}

impl HarqStage {
    pub fn new(p: HarqParams, channel: LmsParams, rng: Rng) -> HarqStage {
        HarqStage {
            p,
            channel: Box::new(LmsChannel::new(channel, rng)),
            release: SimTime::ZERO,
            last_fate: None,
        }
    }

    /// Whether packets may leave out of order (no reordering buffer).
    pub fn reorders(&self) -> bool {
        !self.p.reorder_buffer
    }

    /// The fate of the last packet that arrived.
    pub fn last_fate(&self) -> Option<HarqFate> {
        self.last_fate
    }

    /// The transmissions one codeword needs (`None`: undecodable), its first sent at `t0`.
    fn codeword(&mut self, t0: SimTime) -> Option<u32> {
        let need = K_BITS as f64 * (1.0 + self.p.delta);
        let n = SYMBOLS_PER_TX as f64;
        let mut acc = 0.0;
        for k in 0..=self.p.max_retx {
            let t = t0 + SimDuration(self.p.retx_delay.0 * k as u64);
            let snr = self.p.snr_ref * self.channel.gain(t);
            let info = match self.p.combining {
                Combining::IncrementalRedundancy => {
                    acc += n * qpsk_mi(snr);
                    acc
                }
                Combining::Chase => {
                    acc += snr;
                    n * qpsk_mi(acc)
                }
            };
            if info >= need {
                return Some(k + 1);
            }
        }
        None
    }
}

impl StageModel for HarqStage {
    #[inline(never)]
    fn on_arrival(&mut self, now: SimTime, pkt: &PacketInfo) -> Outcome {
        self.channel.forget_before(now);
        let codewords = (pkt.wire_size as u64 * 8).div_ceil(K_BITS as u64).max(1);
        let spacing = SYMBOLS_PER_TX as f64 / self.p.symbol_rate;
        let mut worst = Some(1);
        for c in 0..codewords {
            let t0 = now + SimDuration::from_secs_f64(c as f64 * spacing);
            match (worst, self.codeword(t0)) {
                (Some(w), Some(k)) => worst = Some(w.max(k)),
                _ => {
                    worst = None;
                    break;
                }
            }
        }
        let attempts = worst.unwrap_or(self.p.max_retx + 1);
        let done =
            now + self.p.first_delay + SimDuration(self.p.retx_delay.0 * (attempts as u64 - 1));
        self.last_fate = Some(HarqFate {
            transmissions: attempts,
            decoded: worst.is_some(),
            done,
        });
        let leave = if self.p.reorder_buffer {
            done.max(self.release)
        } else {
            done
        };
        if self.p.reorder_buffer {
            self.release = leave;
        }
        match worst {
            Some(_) => Outcome::Pass(leave),
            None => Outcome::Drop(done, DropCause::Harq),
        }
    }

    fn keeps_order(&self) -> bool {
        !self.reorders()
    }
}

/// The `harq` stage's configuration in a scenario (docs/scenario.md, "Stages").
#[cfg(feature = "serde")]
pub use schema::{CombiningKind, HarqConfig};

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::config::prelude::*;
    use crate::lms::{ChannelConfig, DopplerKind, DopplerSpectrum, LmsState, ITS_S_BAND};
    use crate::LmsParams;

    /// How a HARQ receiver combines transmissions.
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum CombiningKind {
        /// Type II, incremental redundancy.
        Ir,
        /// Type I, chase combining.
        Chase,
    }

    optional_fields! {
        /// A harq stage (`type = "harq"`): hybrid ARQ over a land-mobile-satellite channel at a
        /// reference SNR; out of order unless `reorder_buffer`.
        #[derive(Clone, Debug, Default, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct HarqConfig {
            /// Reference SNR, dB: an unshadowed, unfaded direct signal's Es/N0.
            snr: f64,
            combining: CombiningKind,
            delta: f64,
            max_retx: i64,
            first_delay: Duration,
            retx_delay: Duration,
            /// QPSK symbols per second on the link.
            symbol_rate: f64,
            reorder_buffer: bool,
            channel: ChannelConfig,
        }
    }

    impl HarqConfig {
        /// The HARQ stage's and its channel's parameters, checked (defaults for what is missing).
        pub fn params(&self, at: &str) -> Result<(HarqParams, LmsParams)> {
            let d = HarqParams::default();
            let snr = self.snr.ok_or_else(|| {
                ConfigError::new(
                    format!("{at}.snr"),
                    "a harq stage needs snr, the reference SNR in dB (paper 001: 7 to 13)",
                )
            })?;
            check(
                snr.is_finite() && (-10.0..=40.0).contains(&snr),
                format!("{at}.snr"),
                format!("must be a reference SNR in [-10, 40] dB, got {}", num(snr)),
            )?;
            let delta = self.delta.unwrap_or(d.delta);
            check(
                delta.is_finite() && delta >= 0.0,
                format!("{at}.delta"),
                format!(
                    "must be >= 0 (the code's gap to the mutual-information bound), got {}",
                    num(delta)
                ),
            )?;
            check(
                delta <= 10.0,
                format!("{at}.delta"),
                format!("must be at most 10, got {}", num(delta)),
            )?;
            let max_retx = self.max_retx.unwrap_or(d.max_retx as i64);
            check(
                (0..=15).contains(&max_retx),
                format!("{at}.max_retx"),
                format!("must be in [0, 15] retransmissions, got {max_retx}"),
            )?;
            let symbol_rate = self.symbol_rate.unwrap_or(d.symbol_rate);
            check(
                symbol_rate.is_finite() && (1e3..=1e10).contains(&symbol_rate),
                format!("{at}.symbol_rate"),
                format!("must be in [1e3, 1e10] symbols/s, got {}", num(symbol_rate)),
            )?;
            let retx_delay = self.retx_delay.map_or(d.retx_delay, |x| x.0);
            check(
                retx_delay.0 <= 10 * 1_000_000_000,
                format!("{at}.retx_delay"),
                format!(
                    "must be at most 10 s (the delay a HARQ retransmission adds; paper 001: 20 ms), \
                     got {}",
                    Duration(retx_delay)
                ),
            )?;
            let hp = HarqParams {
                snr_ref: 10f64.powf(snr / 10.0),
                combining: match self.combining.unwrap_or(CombiningKind::Ir) {
                    CombiningKind::Ir => Combining::IncrementalRedundancy,
                    CombiningKind::Chase => Combining::Chase,
                },
                delta,
                max_retx: max_retx as u32,
                first_delay: self.first_delay.map_or(d.first_delay, |x| x.0),
                retx_delay,
                symbol_rate,
                reorder_buffer: self.reorder_buffer.unwrap_or(false),
            };
            let c = self.channel.clone().unwrap_or_default();
            let ch = |f: &str| format!("{at}.channel.{f}");
            let mut lp = LmsParams::default();
            let positive = |v: Option<f64>, f: &str, unit: &str, max: f64| -> Result<Option<f64>> {
                if let Some(x) = v {
                    check(
                        x.is_finite() && x > 0.0,
                        ch(f),
                        format!("must be > 0 {unit}, got {}", num(x)),
                    )?;
                    check(
                        x <= max,
                        ch(f),
                        format!("must be at most {max} {unit}, got {}", num(x)),
                    )?;
                }
                Ok(v)
            };
            if let Some(v) = positive(c.speed_kmh, "speed_kmh", "km/h", 1000.0)? {
                lp.speed = v / 3.6;
            }
            if let Some(v) = positive(c.carrier_ghz, "carrier_ghz", "GHz", 100.0)? {
                lp.carrier = v * 1e9;
            }
            if let Some(v) = positive(c.sojourn_m, "sojourn_m", "m", 1e6)? {
                // The state chain takes a step per sojourn: a sojourn of a nanosecond would make a
                // run of seconds billions of steps.
                check(
                    v >= 0.1,
                    ch("sojourn_m"),
                    format!("must be at least 0.1 m (ITS: 6 m), got {}", num(v)),
                )?;
                lp.sojourn_m = v;
            }
            if let Some(v) = positive(c.shadow_corr_m, "shadow_corr_m", "m", 1e6)? {
                lp.shadow_corr_m = v;
            }
            if let Some(v) = c.crossfade_m {
                check(
                    v.is_finite() && (0.0..=1e6).contains(&v),
                    ch("crossfade_m"),
                    format!("must be in [0, 1e6] m, got {}", num(v)),
                )?;
                lp.crossfade_m = v;
            }
            if let Some(g) = c.grid {
                check(
                    g.0 .0 >= 1_000 && g.0 .0 <= 1_000_000_000,
                    ch("grid"),
                    format!("must be between 1us and 1s, got {g}"),
                )?;
                lp.grid = g.0;
            }
            if let Some(k) = c.doppler {
                lp.spectrum = match k {
                    DopplerKind::Gaussian => DopplerSpectrum::Gaussian,
                    DopplerKind::Jakes => DopplerSpectrum::Jakes,
                };
            }
            if let Some(states) = &c.states {
                for (name, spec) in states {
                    let f = |x: &str| format!("{at}.channel.states.{name}.{x}");
                    let Some(st) = LmsState::ALL.iter().find(|s| s.name() == name) else {
                        return Err(ConfigError::new(
                            format!("{at}.channel.states.{name}"),
                            format!("unknown channel state {name:?} (known: los, moderate, deep)"),
                        ));
                    };
                    let p = &mut lp.states[*st as usize];
                    if let Some(w) = spec.w {
                        check(
                            w.is_finite() && w > 0.0 && w < 1.0,
                            f("w"),
                            format!("must be a probability in (0, 1), got {}", num(w)),
                        )?;
                        p.w = w;
                    }
                    for (name, v, slot) in [
                        ("alpha", spec.alpha, &mut p.alpha),
                        ("mp", spec.mp, &mut p.mp),
                    ] {
                        if let Some(v) = v {
                            check(
                                v.is_finite() && (-60.0..=20.0).contains(&v),
                                f(name),
                                format!("must be in [-60, 20] dB, got {}", num(v)),
                            )?;
                            *slot = v;
                        }
                    }
                    if let Some(v) = spec.psi {
                        check(
                            v.is_finite() && (0.0..=20.0).contains(&v),
                            f("psi"),
                            format!("must be in [0, 20] dB, got {}", num(v)),
                        )?;
                        p.psi = v;
                    }
                }
                let sum: f64 = lp.states.iter().map(|s| s.w).sum();
                check(
                    (sum - 1.0).abs() < 1e-6,
                    format!("{at}.channel.states"),
                    format!(
                        "the steady-state probabilities w of los, moderate and deep must sum to 1, \
                         got {sum} (defaults {}, {}, {})",
                        ITS_S_BAND[0].w, ITS_S_BAND[1].w, ITS_S_BAND[2].w
                    ),
                )?;
            }
            // The channel is drawn, grid step by grid step, as far ahead as a packet's last
            // transmission: bound what that holds in memory.
            let retx_span = hp.max_retx as f64 * hp.retx_delay.as_secs_f64();
            let codeword_span =
                (HARQ_MAX_CODEWORDS - 1) as f64 * SYMBOLS_PER_TX as f64 / hp.symbol_rate;
            let grid = lp.grid.as_secs_f64();
            let steps = (retx_span + codeword_span) / grid;
            check(
                steps <= HARQ_MAX_LOOKAHEAD_STEPS,
                if retx_span >= codeword_span {
                    format!("{at}.retx_delay")
                } else {
                    format!("{at}.symbol_rate")
                },
                format!(
                    "a packet's transmissions reach {:.6} s ahead (max_retx × retx_delay, plus a \
                     64 KiB packet's codewords at symbol_rate), {steps:.3e} steps of channel.grid \
                     ({}); at most 1e7 (the channel is drawn that far ahead): shorten retx_delay, \
                     raise symbol_rate or coarsen channel.grid",
                    retx_span + codeword_span,
                    Duration(lp.grid)
                ),
            )?;
            Ok((hp, lp))
        }
    }

    /// Codewords of the largest packet (64 KiB and headers) a harq stage may carry.
    const HARQ_MAX_CODEWORDS: u64 = (66_000 * 8u64).div_ceil(K_BITS as u64);
    /// Grid steps of the LMS channel a harq stage may draw ahead of the present.
    const HARQ_MAX_LOOKAHEAD_STEPS: f64 = 1e7;

    impl StageSchema for HarqConfig {
        const TYPE: &'static str = "harq";
        const FIELDS: &'static [&'static str] = &[
            "snr",
            "combining",
            "delta",
            "max_retx",
            "first_delay",
            "retx_delay",
            "symbol_rate",
            "reorder_buffer",
            "channel",
        ];

        fn resolve(&mut self, at: &str, _ctx: &ResolveCtx) -> Result<()> {
            self.params(at)?;
            self.combining.get_or_insert(CombiningKind::Ir);
            self.delta.get_or_insert(0.02);
            self.max_retx.get_or_insert(3);
            self.reorder_buffer.get_or_insert(false);
            Ok(())
        }

        fn build(&self, ctx: &PathCtx) -> Stage {
            let (harq, channel) = self.params("stage").expect("validated");
            Stage::Harq(HarqStage::new(harq, channel, ctx.rng()))
        }

        fn misplaced(field: &str, on: &str) -> Option<String> {
            (field == "reorder_buffer").then(|| {
                format!(
                    "a {on} stage keeps packets in order and has no reordering buffer (only a \
                     harq stage, whose HARQ processes run in parallel, reorders)"
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An independent reference: `I(γ) = 2 − (2/ln 2)·E[ln(1 + e^{−2γ−2√γ Z})]` by the
    /// trapezoid rule over the density of the LLR itself, L ~ N(2γ, 4γ), on 200 000 points
    /// within ±14 standard deviations.
    fn mi_reference(g: f64) -> f64 {
        let (mu, sd) = (2.0 * g, 2.0 * g.sqrt());
        let n = 200_000;
        let (a, b) = (mu - 14.0 * sd, mu + 14.0 * sd);
        let h = (b - a) / n as f64;
        let mut acc = 0.0;
        for i in 0..=n {
            let l: f64 = a + i as f64 * h;
            let pdf = (-(l - mu).powi(2) / (2.0 * sd * sd)).exp()
                / (sd * (2.0 * std::f64::consts::PI).sqrt());
            let soft = if l < -30.0 {
                -l + l.exp().ln_1p()
            } else {
                (-l).exp().ln_1p()
            };
            let w = if i == 0 || i == n { 0.5 } else { 1.0 };
            acc += w * pdf * soft;
        }
        2.0 - 2.0 * acc * h / std::f64::consts::LN_2
    }

    #[test]
    fn qpsk_mutual_information_matches_an_independent_integral_within_1e_3() {
        // The checkpoints of docs/models.md and off-grid points.
        for (db, want) in [
            (-10.0, 0.1375),
            (-5.0, 0.3955),
            (0.0, 0.9719),
            (5.0, 1.7184),
            (10.0, 1.9935),
        ] {
            let g = 10f64.powf(db / 10.0);
            assert!((qpsk_mi(g) - want).abs() < 1e-3, "{db} dB: {}", qpsk_mi(g));
        }
        for db in [-17.3, -7.77, -2.15, 1.01, 2.48, 3.333, 7.9, 12.5, 20.0] {
            let g = 10f64.powf(db / 10.0);
            let r = mi_reference(g);
            assert!(
                (qpsk_mi(g) - r).abs() < 1e-3,
                "{db} dB: {} vs {r}",
                qpsk_mi(g)
            );
        }
        // Limits: 2 bits at high SNR, γ/ln 2 at low SNR.
        assert!((qpsk_mi(1e4) - 2.0).abs() < 1e-9);
        let g = 1e-4;
        assert!((qpsk_mi(g) / (g / std::f64::consts::LN_2) - 1.0).abs() < 1e-2);
    }

    #[test]
    fn awgn_thresholds_after_one_to_four_transmissions() {
        // With a constant SNR γ, k transmissions decode iff k·n·I(γ) ≥ K(1+δ): the thresholds
        // of docs/models.md, 2.48 / −2.15 / −4.31 / −5.75 dB at δ = 0.02.
        let need = K_BITS as f64 * 1.02;
        for (k, db) in [(1.0, 2.48), (2.0, -2.15), (3.0, -4.31), (4.0, -5.75)] {
            let above = 10f64.powf((db + 0.02) / 10.0);
            let below = 10f64.powf((db - 0.02) / 10.0);
            let n = k * SYMBOLS_PER_TX as f64;
            assert!(
                n * qpsk_mi(above) >= need && n * qpsk_mi(below) < need,
                "k={k}"
            );
        }
    }

    use crate::test_packet as info;

    struct Run {
        loss: f64,
        /// Share of packets decoded after 1..=4 transmissions.
        tx: [f64; 4],
        mean_delay_ms: f64,
    }

    /// `n` packets of 1500 bytes, `gap` apart, through a HARQ stage on the default channel.
    fn run(snr_db: f64, n: u64, gap: SimDuration, combining: Combining, seed: u64) -> Run {
        let p = HarqParams {
            snr_ref: 10f64.powf(snr_db / 10.0),
            combining,
            ..HarqParams::default()
        };
        let mut s = HarqStage::new(p, LmsParams::default(), Rng::stream(seed, "harq-test"));
        let (mut lost, mut tx, mut delay) = (0u64, [0u64; 4], 0.0);
        for i in 0..n {
            let t = SimTime(i * gap.0);
            match s.on_arrival(t, &info()) {
                Outcome::Pass(at) => {
                    let d = (at - t).0;
                    let k = s.last_fate().unwrap().transmissions;
                    // Decode delays are exactly 10/30/50/70 ms.
                    assert_eq!(d, 10_000_000 + 20_000_000 * (k as u64 - 1));
                    tx[k as usize - 1] += 1;
                    delay += d as f64 * 1e-6;
                }
                Outcome::Drop(at, cause) => {
                    assert_eq!(cause, DropCause::Harq);
                    assert_eq!(at - t, SimDuration::from_millis(70));
                    lost += 1;
                }
            }
        }
        let ok = (n - lost) as f64;
        Run {
            loss: lost as f64 / n as f64,
            tx: tx.map(|x| x as f64 / n as f64),
            mean_delay_ms: delay / ok,
        }
    }

    /// 10^5 packets of 1500 B per SNR, 10 ms apart (1.2 Mbit/s, the order of 001's TCP
    /// goodput; 14 km of travel at 50 km/h, ~2300 chain time constants, so the estimate's own
    /// spread is ~0.2 %). Back to back at 001's 40 Mbit/s feeder (0.3 ms) 10^5 packets would
    /// cover only 30 s of channel: the same marginals, but a spread of ~1 % from the few
    /// state sojourns.
    #[test]
    fn residual_loss_is_about_4_percent_at_7_db_and_below_half_a_percent_at_13_db() {
        let gap = SimDuration::from_millis(10);
        let mut losses = Vec::new();
        for db in [7.0, 10.0, 13.0] {
            let r = run(db, 100_000, gap, Combining::IncrementalRedundancy, 1);
            println!(
                "IR {db} dB: loss {:.3} %, tx shares {:.3?}, mean delay {:.1} ms",
                r.loss * 100.0,
                r.tx,
                r.mean_delay_ms
            );
            losses.push(r.loss);
        }
        assert!((0.03..=0.05).contains(&losses[0]), "7 dB: {}", losses[0]);
        assert!(losses[1] < losses[0] && losses[2] < losses[1]);
        assert!(losses[2] < 0.005, "13 dB: {}", losses[2]);
    }

    #[test]
    fn chase_combining_loses_more_than_incremental_redundancy() {
        let gap = SimDuration::from_millis(10);
        let ir = run(7.0, 20_000, gap, Combining::IncrementalRedundancy, 2);
        let cc = run(7.0, 20_000, gap, Combining::Chase, 2);
        println!(
            "7 dB: IR {:.3} %, chase {:.3} %",
            ir.loss * 100.0,
            cc.loss * 100.0
        );
        assert!(cc.loss > ir.loss);
    }

    fn arrivals(reorder_buffer: bool, n: u64) -> Vec<(SimTime, Outcome, HarqFate)> {
        let p = HarqParams {
            snr_ref: 10f64.powf(0.7),
            reorder_buffer,
            ..HarqParams::default()
        };
        let mut s = HarqStage::new(p, LmsParams::default(), Rng::stream(4, "harq-test"));
        (0..n)
            .map(|i| {
                let t = SimTime(i * 300_000); // 1500 B at 40 Mbit/s
                let o = s.on_arrival(t, &info());
                (t, o, s.last_fate().unwrap())
            })
            .collect()
    }

    #[test]
    fn without_the_buffer_packets_leave_out_of_order() {
        let v = arrivals(false, 20_000);
        let leaves: Vec<SimTime> = v
            .iter()
            .filter_map(|(_, o, _)| match o {
                Outcome::Pass(at) => Some(*at),
                _ => None,
            })
            .collect();
        let overtaken = leaves.windows(2).filter(|w| w[1] < w[0]).count();
        assert!(overtaken > 100, "{overtaken}");
    }

    #[test]
    fn the_reordering_buffer_releases_in_link_order_within_the_last_attempts_delay() {
        let v = arrivals(true, 20_000);
        let mut last = SimTime::ZERO;
        let mut held = 0;
        for (t, o, fate) in &v {
            match o {
                Outcome::Pass(at) => {
                    assert!(*at >= last, "out of order");
                    assert!(*at >= fate.done);
                    // Never longer than the last transmission's delay (70 ms).
                    assert!(*at - *t <= SimDuration::from_millis(70));
                    if *at > fate.done {
                        held += 1;
                    }
                    last = *at;
                }
                Outcome::Drop(at, _) => {
                    assert_eq!(*at - *t, SimDuration::from_millis(70));
                    // A loss releases the packets behind it at its own time.
                    last = last.max(*at);
                }
            }
        }
        assert!(held > 100, "{held}");
        // The same channel decides the same fates with or without the buffer.
        let free = arrivals(false, 20_000);
        assert!(v.iter().zip(&free).all(|(a, b)| a.2 == b.2));
    }
}
