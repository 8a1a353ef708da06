//! The loss stage: Bernoulli, Gilbert-Elliott, a time profile, or a deterministic list.
//!
//! Random draws come from the stage's own RNG stream, one draw per packet, so the loss pattern
//! for a seed does not depend on what other stages do. Deterministic loss drops the n-th packet
//! through the stage (1-based, ACKs included) or the next transmission of a data segment whose
//! first byte is a listed sequence number (each list entry drops one transmission; list a
//! number twice to drop the original and its first retransmission).

use crate::{DropCause, Outcome, PacketInfo, Profile, StageModel};
use spikelab_core::{Rng, SimTime};

#[derive(Debug)]
pub enum LossModel {
    Bernoulli {
        p: f64,
    },
    /// Two-state Markov chain: `p` good→bad, `r` bad→good per packet; a packet is lost with
    /// probability `1 − k` in the good state and `1 − h` in the bad state.
    GilbertElliott {
        p: f64,
        r: f64,
        h: f64,
        k: f64,
        bad: bool,
    },
    Profile(Profile),
    Deterministic {
        /// Sorted 1-based packet indices to drop.
        nth: Vec<u64>,
        /// Sequence numbers still to drop, one entry per transmission.
        seqs: Vec<u64>,
    },
}

#[derive(Debug)]
pub struct LossStage {
    model: LossModel,
    rng: Rng,
    count: u64,
    nth_cursor: usize,
}

impl LossStage {
    pub fn new(model: LossModel, rng: Rng) -> LossStage {
        let model = match model {
            LossModel::Deterministic { mut nth, seqs } => {
                nth.sort_unstable();
                LossModel::Deterministic { nth, seqs }
            }
            m => m,
        };
        LossStage {
            model,
            rng,
            count: 0,
            nth_cursor: 0,
        }
    }
}

impl StageModel for LossStage {
    fn on_arrival(&mut self, now: SimTime, pkt: &PacketInfo) -> Outcome {
        self.count += 1;
        let dropped = match &mut self.model {
            LossModel::Bernoulli { p } => self.rng.chance(*p).then_some(DropCause::Random),
            LossModel::GilbertElliott { p, r, h, k, bad } => {
                let flip = self.rng.next_f64();
                *bad = if *bad { flip >= *r } else { flip < *p };
                let keep = if *bad { *h } else { *k };
                (!self.rng.chance(keep)).then_some(DropCause::Random)
            }
            LossModel::Profile(profile) => {
                let (_, loss) = profile.at(now);
                self.rng.chance(loss).then_some(DropCause::Profile)
            }
            LossModel::Deterministic { nth, seqs } => {
                let mut hit = false;
                while self.nth_cursor < nth.len() && nth[self.nth_cursor] < self.count {
                    self.nth_cursor += 1;
                }
                if self.nth_cursor < nth.len() && nth[self.nth_cursor] == self.count {
                    self.nth_cursor += 1;
                    hit = true;
                }
                if let Some(seq) = pkt.data_seq {
                    if let Some(i) = seqs.iter().position(|&s| s == seq) {
                        seqs.remove(i);
                        hit = true;
                    }
                }
                hit.then_some(DropCause::Deterministic)
            }
        };
        match dropped {
            Some(cause) => Outcome::Drop(now, cause),
            None => Outcome::Pass(now),
        }
    }
}

/// The `loss` stage's configuration in a scenario (docs/scenario.md, "Stages").
#[cfg(feature = "serde")]
pub use schema::{LossConfig, LossKind};

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::config::loss_profile;
    use crate::config::prelude::*;
    use crate::walkaway::{PresetFor, PresetSpec};

    /// The loss model of a loss stage (`model`; default from the fields given).
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum LossKind {
        Bernoulli,
        GilbertElliott,
        Profile,
        Deterministic,
    }

    optional_fields! {
        /// A loss stage (`type = "loss"`): one model, Bernoulli (`p`), Gilbert-Elliott (`p`,
        /// `r`, `h`, `k`), a time `profile` or `preset`, or deterministic (`nth`, `seqs`).
        #[derive(Clone, Debug, Default, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct LossConfig {
            /// Rows `[time_ms, loss]`.
            profile: Vec<Vec<f64>>,
            preset: PresetSpec,
            model: LossKind,
            p: f64,
            r: f64,
            h: f64,
            k: f64,
            /// Drop these packets (counted from 1 in the path's entry order).
            nth: Vec<u64>,
            /// Drop the data with these sequence numbers (TCP bytes, SCTP TSNs).
            seqs: Vec<u64>,
        }
        computed {
            /// The rows `preset` stands for, computed when the scenario is resolved.
            preset_rows: Vec<Vec<f64>>,
        }
    }

    impl StageSchema for LossConfig {
        const TYPE: &'static str = "loss";
        const FIELDS: &'static [&'static str] = &[
            "model", "p", "r", "h", "k", "profile", "preset", "nth", "seqs",
        ];

        fn resolve(&mut self, at: &str, _ctx: &ResolveCtx) -> Result<()> {
            let model = match self.model {
                Some(m) => m,
                None if self.nth.is_some() || self.seqs.is_some() => LossKind::Deterministic,
                None if self.profile.is_some() || self.preset.is_some() => LossKind::Profile,
                None if self.p.is_some() => LossKind::Bernoulli,
                None => {
                    return Err(ConfigError::new(
                        format!("{at}.model"),
                        "a loss stage needs a model (bernoulli, gilbert_elliott, profile, deterministic) or p, profile, nth or seqs",
                    ))
                }
            };
            self.model = Some(model);
            let (name, fields): (&str, &[&str]) = match model {
                LossKind::Bernoulli => ("bernoulli", &["p"]),
                LossKind::GilbertElliott => ("gilbert_elliott", &["p", "r", "h", "k"]),
                LossKind::Profile => ("profile", &["profile", "preset"]),
                LossKind::Deterministic => ("deterministic", &["nth", "seqs"]),
            };
            for f in self.set_fields() {
                check(
                    f == "model" || fields.contains(&f),
                    format!("{at}.{f}"),
                    format!(
                        "not a field of the {name} loss model (its fields: {}); one loss \
                         stage has one model",
                        fields.join(", ")
                    ),
                )?;
            }
            let model_name = name;
            let need = |f: Option<f64>, name: &str| -> Result<()> {
                let v = f.ok_or_else(|| {
                    ConfigError::new(
                        format!("{at}.{name}"),
                        format!("required by the {model_name} loss model"),
                    )
                })?;
                probability(v, &format!("{at}.{name}"))
            };
            match model {
                LossKind::Bernoulli => need(self.p, "p")?,
                LossKind::GilbertElliott => {
                    need(self.p, "p")?;
                    need(self.r, "r")?;
                    self.h.get_or_insert(0.0);
                    self.k.get_or_insert(1.0);
                    need(self.h, "h")?;
                    need(self.k, "k")?;
                }
                LossKind::Profile => {
                    check(
                        !(self.profile.is_some() && self.preset.is_some()),
                        format!("{at}.preset"),
                        "give profile or preset, not both",
                    )?;
                    if let Some(p) = &self.preset {
                        let rows = p.rows(at, PresetFor::Loss)?;
                        loss_profile(&rows, &format!("{at}.preset"))?;
                        self.preset_rows = Some(rows);
                    } else {
                        let rows = self.profile.as_ref().ok_or_else(|| {
                            ConfigError::new(
                                format!("{at}.profile"),
                                "required by the profile loss model",
                            )
                        })?;
                        loss_profile(rows, &format!("{at}.profile"))?;
                    }
                }
                LossKind::Deterministic => {
                    check(
                        self.nth.is_some() || self.seqs.is_some(),
                        format!("{at}.nth"),
                        "the deterministic loss model needs nth or seqs",
                    )?;
                    if let Some(n) = &self.nth {
                        check(
                            n.iter().all(|&x| x >= 1),
                            format!("{at}.nth"),
                            "packet indices count from 1",
                        )?;
                    }
                }
            }
            Ok(())
        }

        fn build(&self, ctx: &PathCtx) -> Stage {
            let model = match self.model.expect("resolved") {
                LossKind::Bernoulli => LossModel::Bernoulli {
                    p: self.p.unwrap_or(0.0),
                },
                LossKind::GilbertElliott => LossModel::GilbertElliott {
                    p: self.p.unwrap_or(0.0),
                    r: self.r.unwrap_or(1.0),
                    h: self.h.unwrap_or(0.0),
                    k: self.k.unwrap_or(1.0),
                    bad: false,
                },
                LossKind::Profile => LossModel::Profile(
                    loss_profile(
                        self.profile
                            .as_ref()
                            .or(self.preset_rows.as_ref())
                            .expect("validated"),
                        "profile",
                    )
                    .expect("validated"),
                ),
                LossKind::Deterministic => LossModel::Deterministic {
                    nth: self.nth.clone().unwrap_or_default(),
                    seqs: self.seqs.clone().unwrap_or_default(),
                },
            };
            Stage::Loss(LossStage::new(model, ctx.rng()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u64) -> PacketInfo {
        PacketInfo {
            wire_size: 1500,
            data_seq: Some(seq),
        }
    }

    #[test]
    fn deterministic_drops_listed_indices_and_each_listed_seq_once() {
        let mut s = LossStage::new(
            LossModel::Deterministic {
                nth: vec![3, 1],
                seqs: vec![2896, 2896],
            },
            Rng::stream(0, "l"),
        );
        let t = SimTime::ZERO;
        let fates: Vec<bool> = [0u64, 1448, 2896, 4344, 2896, 2896]
            .iter()
            .map(|&q| matches!(s.on_arrival(t, &data(q)), Outcome::Drop(..)))
            .collect();
        // #1 by index, #3 by index (and seq), #5 by the second 2896 entry, #6 passes.
        assert_eq!(fates, vec![true, false, true, false, true, false]);
    }

    #[test]
    fn bernoulli_rate_matches_p() {
        let mut s = LossStage::new(LossModel::Bernoulli { p: 0.01 }, Rng::stream(3, "l"));
        let n = 100_000;
        let drops = (0..n)
            .filter(|_| matches!(s.on_arrival(SimTime::ZERO, &data(0)), Outcome::Drop(..)))
            .count();
        // Binomial(1e5, 0.01): mean 1000, sd 31.5; 5 sd.
        assert!((drops as i64 - 1000).abs() < 158, "{drops}");
    }

    #[test]
    fn gilbert_elliott_mean_loss_matches_stationary_rate() {
        // pi_bad = p / (p + r) = 0.2; loss = 0.8*(1-k) + 0.2*(1-h) = 0.8*0 + 0.2*0.5 = 0.1
        let mut s = LossStage::new(
            LossModel::GilbertElliott {
                p: 0.05,
                r: 0.2,
                h: 0.5,
                k: 1.0,
                bad: false,
            },
            Rng::stream(5, "l"),
        );
        let n = 200_000;
        let drops = (0..n)
            .filter(|_| matches!(s.on_arrival(SimTime::ZERO, &data(0)), Outcome::Drop(..)))
            .count();
        let rate = drops as f64 / n as f64;
        assert!((rate - 0.1).abs() < 0.01, "{rate}");
    }
}
