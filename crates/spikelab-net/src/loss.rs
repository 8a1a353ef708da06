//! The loss stage: Bernoulli, Gilbert-Elliott, a time profile, or a deterministic list.
//!
//! Random draws come from the stage's own RNG stream, one draw per packet, so the loss pattern
//! for a seed does not depend on what other stages do. Deterministic loss drops the n-th packet
//! through the stage (1-based, ACKs included) or the next transmission of a data segment whose
//! first byte is a listed sequence number (each list entry drops one transmission; list a
//! number twice to drop the original and its first retransmission).

use crate::{DropCause, Outcome, PacketInfo, Profile};
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

    pub fn on_arrival(&mut self, now: SimTime, pkt: &PacketInfo) -> Outcome {
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
