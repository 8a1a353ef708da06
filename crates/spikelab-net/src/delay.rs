//! The delay stage: a fixed delay or a time profile (paper 000 Eq. 1-2), FIFO by default.
//!
//! FIFO: a packet never leaves before the packet ahead of it,
//! `departure = max(arrival + delay(arrival), previous departure)`. With `reorder = true` the
//! max is skipped and a packet that met a smaller delay overtakes, as NetEm does when its delay
//! changes. Profile loss (Eq. 2) is drawn when the packet arrives, using the loss value at its
//! arrival time, and the packet is discarded when it would have left (at the outgoing port, as
//! in the paper's emulator). A discarded packet does not hold back the packets behind it.

use crate::{DropCause, Outcome, PacketInfo, Profile, StageModel};
use spikelab_core::{Rng, SimDuration, SimTime};

#[derive(Debug)]
enum DelaySource {
    Fixed(SimDuration),
    Profile(Profile),
}

#[derive(Debug)]
pub struct DelayStage {
    source: DelaySource,
    reorder: bool,
    last_departure: SimTime,
    rng: Rng,
}

impl DelayStage {
    pub fn fixed(delay: SimDuration, reorder: bool, rng: Rng) -> DelayStage {
        DelayStage {
            source: DelaySource::Fixed(delay),
            reorder,
            last_departure: SimTime::ZERO,
            rng,
        }
    }

    pub fn profile(profile: Profile, reorder: bool, rng: Rng) -> DelayStage {
        DelayStage {
            source: DelaySource::Profile(profile),
            reorder,
            last_departure: SimTime::ZERO,
            rng,
        }
    }

    /// `reorder = true`: packets may overtake each other.
    pub fn reorders(&self) -> bool {
        self.reorder
    }
}

impl StageModel for DelayStage {
    fn on_arrival(&mut self, now: SimTime, _pkt: &PacketInfo) -> Outcome {
        let (delay, loss) = match &mut self.source {
            DelaySource::Fixed(d) => (*d, 0.0),
            DelaySource::Profile(p) => p.at(now),
        };
        let mut leave = now + delay;
        if !self.reorder && leave < self.last_departure {
            leave = self.last_departure;
        }
        if loss > 0.0 && self.rng.chance(loss) {
            return Outcome::Drop(leave, DropCause::Profile);
        }
        if leave > self.last_departure {
            self.last_departure = leave;
        }
        Outcome::Pass(leave)
    }

    fn keeps_order(&self) -> bool {
        !self.reorders()
    }
}

/// The `delay` stage's configuration in a scenario (docs/scenario.md, "Stages").
#[cfg(feature = "serde")]
pub use schema::DelayConfig;

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::config::prelude::*;
    use crate::config::{
        at_lines, delay_profile, read_csv_lines, resolve_path, DELAY_TRACE_HEADER,
    };
    use crate::leo::LeoConfig;
    use crate::walkaway::{PresetFor, PresetSpec};

    optional_fields! {
        /// A delay stage (`type = "delay"`): one of a fixed `delay`, a `profile` of rows
        /// `[time_ms, delay_ms, loss]`, a CSV `trace`, a `preset` or a LEO constellation's `leo`;
        /// FIFO unless `reorder`.
        #[derive(Clone, Debug, Default, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct DelayConfig {
            delay: Duration,
            profile: Vec<Vec<f64>>,
            trace: String,
            reorder: bool,
            /// A LEO constellation's delay trace.
            leo: LeoConfig,
            preset: PresetSpec,
        }
        computed {
            /// The rows of `trace`, read once when the scenario is resolved.
            trace_rows: Vec<Vec<f64>>,
            /// The rows `leo` stands for, computed when the scenario is resolved.
            leo_rows: Vec<Vec<f64>>,
            /// The rows `preset` stands for, computed when the scenario is resolved.
            preset_rows: Vec<Vec<f64>>,
        }
    }

    impl StageSchema for DelayConfig {
        const TYPE: &'static str = "delay";
        const FIELDS: &'static [&'static str] =
            &["delay", "profile", "trace", "preset", "leo", "reorder"];

        fn resolve(&mut self, at: &str, ctx: &ResolveCtx) -> Result<()> {
            let one_of = ["delay", "profile", "trace", "preset", "leo"];
            exactly_one(&self.set_fields(), &one_of, (at, Self::TYPE), None)?;
            if let Some(l) = &self.leo {
                let rows = l.rows(&format!("{at}.leo"))?;
                delay_profile(&rows, &format!("{at}.leo"))?;
                self.leo_rows = Some(rows);
            }
            if let Some(p) = &self.preset {
                let rows = p.rows(at, PresetFor::Delay)?;
                delay_profile(&rows, &format!("{at}.preset"))?;
                self.preset_rows = Some(rows);
            }
            if let Some(rows) = &self.profile {
                delay_profile(rows, &format!("{at}.profile"))?;
            }
            if let Some(file) = &self.trace {
                let full = resolve_path(ctx.base_dir, file);
                let field = format!("{at}.trace");
                let (rows, lines) = read_csv_lines(&full, &field, DELAY_TRACE_HEADER)?;
                at_lines(delay_profile(&rows, &field), &full, &lines)?;
                self.trace = Some(full.to_string_lossy().into_owned());
                self.trace_rows = Some(rows);
            }
            self.reorder.get_or_insert(false);
            Ok(())
        }

        fn build(&self, ctx: &PathCtx) -> Stage {
            let reorder = self.reorder.unwrap_or(false);
            let rng = ctx.rng();
            if let Some(d) = self.delay {
                Stage::Delay(DelayStage::fixed(d.0, reorder, rng))
            } else {
                let rows = self
                    .profile
                    .as_ref()
                    .or(self.trace_rows.as_ref())
                    .or(self.preset_rows.as_ref())
                    .or(self.leo_rows.as_ref())
                    .expect("validated: a profile, a trace that was read, a preset or leo");
                let p = delay_profile(rows, "profile").expect("validated");
                Stage::Delay(DelayStage::profile(p, reorder, rng))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProfileRow;

    use crate::test_packet as info;

    fn falling() -> Profile {
        // 1 s delay at t=0 falling to 0 at t=1 s: later packets would overtake.
        Profile::new(vec![
            ProfileRow {
                t: SimTime::ZERO,
                delay: SimDuration::from_millis(1000),
                loss: 0.0,
            },
            ProfileRow {
                t: SimTime::from_millis(1000),
                delay: SimDuration::ZERO,
                loss: 0.0,
            },
        ])
        .unwrap()
    }

    #[test]
    fn fifo_holds_packets_behind_the_one_ahead() {
        let mut s = DelayStage::profile(falling(), false, Rng::stream(1, "d"));
        assert_eq!(
            s.on_arrival(SimTime::ZERO, &info()),
            Outcome::Pass(SimTime::from_millis(1000))
        );
        // Arrives at 600 ms with 400 ms delay: would leave at 1000 ms, ties are fine.
        assert_eq!(
            s.on_arrival(SimTime::from_millis(600), &info()),
            Outcome::Pass(SimTime::from_millis(1000))
        );
        // Arrives at 900 ms with 100 ms delay: exactly 1000 ms again.
        assert_eq!(
            s.on_arrival(SimTime::from_millis(900), &info()),
            Outcome::Pass(SimTime::from_millis(1000))
        );
    }

    #[test]
    fn reorder_lets_packets_overtake() {
        let p = Profile::new(vec![
            ProfileRow {
                t: SimTime::ZERO,
                delay: SimDuration::from_millis(1000),
                loss: 0.0,
            },
            ProfileRow {
                t: SimTime::from_millis(10),
                delay: SimDuration::from_millis(10),
                loss: 0.0,
            },
        ])
        .unwrap();
        let mut s = DelayStage::profile(p, true, Rng::stream(1, "d"));
        assert_eq!(
            s.on_arrival(SimTime::ZERO, &info()),
            Outcome::Pass(SimTime::from_millis(1000))
        );
        assert_eq!(
            s.on_arrival(SimTime::from_millis(10), &info()),
            Outcome::Pass(SimTime::from_millis(20))
        );
    }

    #[test]
    fn profile_loss_drops_at_the_outgoing_port_with_the_arrival_time_rate() {
        let p = Profile::new(vec![ProfileRow {
            t: SimTime::ZERO,
            delay: SimDuration::from_millis(50),
            loss: 0.25,
        }])
        .unwrap();
        let mut s = DelayStage::profile(p, false, Rng::stream(9, "d"));
        let n = 40_000;
        let mut drops = 0;
        for k in 0..n {
            let t = SimTime(k * 1000);
            match s.on_arrival(t, &info()) {
                Outcome::Drop(at, DropCause::Profile) => {
                    assert_eq!(at, t + SimDuration::from_millis(50));
                    drops += 1;
                }
                Outcome::Pass(_) => {}
                o => panic!("unexpected {o:?}"),
            }
        }
        // Binomial(40000, 0.25): sd ~ 86.6; allow 5 sd.
        assert!((drops as i64 - 10_000).abs() < 433, "{drops}");
    }
}
