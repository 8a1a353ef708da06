//! Paths: stages (rate, delay, loss, harq, rlc, stall), delay and loss profiles, rate
//! schedules, trace files, path presets (`umts-downlink`, `umts-uplink`, `leo-lms`, `leo-return`),
//! the default link.

use super::*;
use crate::units::{Bytes, Rate};
use spikelab_core::SimTime;
use spikelab_net::harq::{K_BITS, SYMBOLS_PER_TX};
use spikelab_net::lms::{DopplerSpectrum, LmsState, ITS_S_BAND};
use spikelab_net::{
    leo, walkaway, AdaptParams, Combining, HarqParams, LmsParams, Profile, ProfileRow, RlcParams,
    StallParams,
};
use std::path::PathBuf;

/// A stage's `preset`: a measured behaviour turned into the stage's profile, given by name
/// (`preset = "wlan-walkaway"`) or as a table with knobs (`preset = { name = "wlan-walkaway",
/// noise = 0.2 }`). Written back the way it came.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetTable {
    pub name: String,
    /// Delay: sigma of the log-normal factor on each sample (0: the deterministic skeleton).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<f64>,
    /// Delay: the seed of the noise (independent of the run's seed, so that every run of a
    /// sweep sees the same walk unless the file varies this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Delay: the fraction of the measured RTT this stage adds (1: all of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Loss: the loss curve's maximum probability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_max: Option<f64>,
    /// Loss: the loss curve's time constant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau: Option<Duration>,
}

/// The knobs of a delay stage's preset and of a loss stage's ([`PresetTable`]).
pub(super) const DELAY_PRESET_KNOBS: &[&str] = &["noise", "seed", "share"];
pub(super) const LOSS_PRESET_KNOBS: &[&str] = &["p_max", "tau"];

/// A preset's knobs table, each with its `name` (stage and path presets alike).
pub trait PresetKnobs: Default + Serialize + for<'de> Deserialize<'de> {
    fn name(&self) -> &str;
    fn set_name(&mut self, name: String);
}

impl PresetKnobs for PresetTable {
    fn name(&self) -> &str {
        &self.name
    }
    fn set_name(&mut self, name: String) {
        self.name = name;
    }
}

impl PresetKnobs for PathPresetTable {
    fn name(&self) -> &str {
        &self.name
    }
    fn set_name(&mut self, name: String) {
        self.name = name;
    }
}

/// A `preset` given by name (`preset = "NAME"`) or as a table with knobs (`preset = { name =
/// "NAME", ... }`), written back the way it came.
#[derive(Clone, Debug, PartialEq)]
pub struct Named<T> {
    pub table: T,
    /// Given as a bare name.
    pub named: bool,
}

/// A stage's `preset`.
pub type PresetSpec = Named<PresetTable>;
/// A path's `preset` (`umts-downlink`, `leo-lms`, ...).
pub type PathPreset = Named<PathPresetTable>;

impl<T: PresetKnobs> Serialize for Named<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.named {
            s.serialize_str(self.table.name())
        } else {
            self.table.serialize(s)
        }
    }
}

impl<'de, T: PresetKnobs> Deserialize<'de> for Named<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{self, MapAccess, Visitor};
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: PresetKnobs> Visitor<'de> for V<T> {
            type Value = Named<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a preset name or a table with `name`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Named<T>, E> {
                let mut table = T::default();
                table.set_name(v.to_string());
                Ok(Named { table, named: true })
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<Named<T>, A::Error> {
                let table = T::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Named {
                    table,
                    named: false,
                })
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Names accepted in a stage's `preset`.
pub const PRESETS: &[&str] = &["wlan-walkaway"];

/// How many seconds of a walk a preset profile covers (its last value holds after that).
pub const WALKAWAY_SECONDS: u32 = 300;

impl PresetSpec {
    /// The stage's profile rows (`[time_ms, delay_ms, loss]` for a delay stage, `[time_ms,
    /// loss]` for a loss stage), after checking the knobs.
    fn rows(&self, at: &str, kind: StageKind) -> Result<Vec<Vec<f64>>> {
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
        let (allowed, present): (&[&str], Vec<(&str, bool)>) = (
            match kind {
                StageKind::Delay => DELAY_PRESET_KNOBS,
                StageKind::Loss => LOSS_PRESET_KNOBS,
                _ => &[],
            },
            vec![
                ("noise", t.noise.is_some()),
                ("seed", t.seed.is_some()),
                ("share", t.share.is_some()),
                ("p_max", t.p_max.is_some()),
                ("tau", t.tau.is_some()),
            ],
        );
        for (name, set) in present {
            check(
                !set || allowed.contains(&name),
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
            StageKind::Delay => {
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
                walkaway::rtt_trace_ms(secs, noise, t.seed.unwrap_or(1))
                    .iter()
                    .enumerate()
                    .map(|(i, r)| vec![i as f64 * 1000.0, r * share, 0.0])
                    .collect()
            }
            _ => {
                let p_max = t.p_max.unwrap_or(walkaway::DEFAULT_P_MAX);
                probability(p_max, &field("p_max"))?;
                let tau = t.tau.map_or(walkaway::DEFAULT_TAU_S, |d| d.0.as_secs_f64());
                check(tau > 0.0, field("tau"), format!("must be > 0, got {tau} s"))?;
                (0..secs)
                    .map(|i| vec![i as f64 * 1000.0, walkaway::loss_at(i as f64, p_max, tau)])
                    .collect()
            }
        })
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageKind {
    Rate,
    Delay,
    Loss,
    /// A hybrid-ARQ link over a land-mobile-satellite channel (paper 001).
    Harq,
    /// A UMTS RLC acknowledged-mode link: geometric extra round trips, in order (paper 003).
    Rlc,
    /// Delivery stalls: Poisson arrivals, log-normal durations, held and released in order.
    Stall,
}

/// One cell of a rate stage's `schedule` row: a number (ms, or bits per second) or a rate
/// with a unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScheduleCell {
    Num(f64),
    Text(String),
}

/// Random switching between rates (`switching = { rates = [...], dwell = "5s", seed = 1 }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchingSpec {
    /// The rates switched between; the first is the rate at time 0.
    pub rates: Vec<Rate>,
    /// Mean dwell time in a rate (exponentially distributed).
    pub dwell: Duration,
    /// Seed of the switching (default: the run's seed, so each replication switches
    /// differently; a fixed seed gives every run the same switching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// A load-driven rate (`adapt = { rates = [...], up_bytes = ..., ... }`): an R99 RNC's
/// traffic-volume bearer allocation (3GPP TS 25.331 events 4a / 4b; docs/models.md, "UMTS
/// bearer").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptSpec {
    /// The levels, ascending (e.g. a 128 and a 384 kbit/s bearer at IP level).
    pub rates: Vec<Rate>,
    /// Index of the level at time 0 (default 0, the lowest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<i64>,
    /// Up one level when the buffer payload stays above this ...
    pub up_bytes: Bytes,
    /// ... for this long (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_after: Option<Duration>,
    /// Down one level when the buffer payload stays at or below this (default 0: empty) ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_bytes: Option<Bytes>,
    /// ... for this long.
    pub down_after: Duration,
    /// From a decision to the new rate (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Duration>,
    /// The queue limit scales with the level's rate over the top rate (a buffer sized in time;
    /// default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_queue: Option<bool>,
}

/// The smallest `adapt.up_bytes`: one 1500-byte packet.
pub const MIN_ADAPT_UP_BYTES: u64 = 1500;

impl AdaptSpec {
    /// The stage's parameters, checked; errors name `{at}.adapt.<field>`.
    pub fn params(&self, at: &str) -> Result<AdaptParams> {
        let f = |k: &str| format!("{at}.adapt.{k}");
        check(
            !self.rates.is_empty(),
            f("rates"),
            "needs at least one rate",
        )?;
        for (i, r) in self.rates.iter().enumerate() {
            check(r.0 > 0, f("rates"), format!("rate {i} must be > 0"))?;
            if i > 0 {
                check(
                    r.0 > self.rates[i - 1].0,
                    f("rates"),
                    "the rates must be ascending (lowest level first)",
                )?;
            }
        }
        let start = self.start.unwrap_or(0);
        check(
            start >= 0 && (start as usize) < self.rates.len(),
            f("start"),
            format!(
                "must index a rate (0 to {}), got {start}",
                self.rates.len() - 1
            ),
        )?;
        check(
            self.up_bytes.0 >= MIN_ADAPT_UP_BYTES,
            f("up_bytes"),
            format!(
                "must be at least one packet ({MIN_ADAPT_UP_BYTES} bytes), got {} bytes",
                self.up_bytes.0
            ),
        )?;
        let down = self.down_bytes.map_or(0, |b| b.0);
        check(
            down < self.up_bytes.0,
            f("down_bytes"),
            format!(
                "must be below up_bytes ({} bytes), got {down} bytes",
                self.up_bytes.0
            ),
        )?;
        Ok(AdaptParams {
            rates: self.rates.iter().map(|r| r.0).collect(),
            start: start as usize,
            up_bytes: self.up_bytes.0,
            up_after: self.up_after.map_or(SimDuration::ZERO, |d| d.0),
            down_bytes: down,
            down_after: self.down_after.0,
            delay: self.delay.map_or(SimDuration::ZERO, |d| d.0),
            scale_queue: self.scale_queue.unwrap_or(false),
        })
    }
}

/// How a HARQ receiver combines transmissions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CombiningKind {
    /// Type II, incremental redundancy.
    Ir,
    /// Type I, chase combining.
    Chase,
}

/// The Doppler spectrum of the LMS channel's diffuse part.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DopplerKind {
    Gaussian,
    Jakes,
}

/// One LMS state's Loo parameters; a missing value keeps the ITS S-band default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LooSpec {
    /// Steady-state probability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w: Option<f64>,
    /// Mean of the direct signal's level, dB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Standard deviation of the direct signal's level, dB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi: Option<f64>,
    /// Diffuse power relative to the unshadowed direct signal, dB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mp: Option<f64>,
}

/// The LMS channel under a harq stage (`channel = { ... }`); every knob has a default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelSpec {
    /// Vehicle speed, km/h (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_kmh: Option<f64>,
    /// Carrier frequency, GHz (default 2.2, S band).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier_ghz: Option<f64>,
    /// The state chain's time constant as a distance, m (default 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sojourn_m: Option<f64>,
    /// Shadowing correlation length, m (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow_corr_m: Option<f64>,
    /// Distance over which a state change is blended, m (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crossfade_m: Option<f64>,
    /// Shadowing grid step (default 10 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<Duration>,
    /// Diffuse Doppler spectrum (default gaussian).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doppler: Option<DopplerKind>,
    /// Per state (`los`, `moderate`, `deep`): Loo parameters overriding the ITS set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<BTreeMap<String, LooSpec>>,
}

/// A LEO constellation's delay (`leo = { seed = 3 }` on a delay stage).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeoSpec {
    /// Seed of the trace (independent of the run's seed; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// How long the trace runs (default 3600 s); its last delay holds after that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Duration>,
    /// Orbit altitude, km (default 800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub altitude_km: Option<f64>,
}

/// The longest LEO trace, s (one day: 864 000 rows).
pub const MAX_LEO_SECONDS: f64 = 86_400.0;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    Bernoulli,
    GilbertElliott,
    Profile,
    Deterministic,
}

/// One stage; which fields apply depends on `type`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    #[serde(rename = "type")]
    pub kind: StageKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    // rate
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<Bytes>,
    /// Rate: a piecewise-constant rate, `[[time_ms, rate], ...]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Vec<Vec<ScheduleCell>>>,
    /// Rate: random switching between rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switching: Option<SwitchingSpec>,
    /// Rate: a load-driven rate (bearer allocation by traffic volume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapt: Option<AdaptSpec>,
    /// Rate, first stage of a path only: the queue is the sender's own (its interface queue
    /// in front of a flow-controlled modem); when full it refuses a packet back to its sender
    /// (which reduces its window, Linux `tcp_enter_cwr`) instead of dropping it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backpressure: Option<bool>,
    /// Rate: the `(time, bits per second)` points of `schedule` or `trace`, checked.
    #[serde(skip)]
    pub rate_points: Option<Vec<(SimTime, u64)>>,
    // delay
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Vec<Vec<f64>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// The rows of `trace`, read once when the scenario is validated.
    #[serde(skip)]
    pub trace_rows: Option<Vec<Vec<f64>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<bool>,
    /// Delay: a LEO constellation's delay trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leo: Option<LeoSpec>,
    /// The rows `leo` stands for, computed when the scenario is validated.
    #[serde(skip)]
    pub leo_rows: Option<Vec<Vec<f64>>>,
    // delay or loss
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<PresetSpec>,
    /// The rows `preset` stands for, computed when the scenario is validated.
    #[serde(skip)]
    pub preset_rows: Option<Vec<Vec<f64>>>,
    // loss
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<LossKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<Vec<u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seqs: Option<Vec<u64>>,
    // harq
    /// Reference SNR, dB: an unshadowed, unfaded direct signal's Es/N0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snr: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combining: Option<CombiningKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retx: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_delay: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retx_delay: Option<Duration>,
    /// QPSK symbols per second on the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_buffer: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<ChannelSpec>,
    // rlc (and `p`)
    /// RLC round trip: the wait per extra attempt (default 120 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlc_rtt: Option<Duration>,
    /// Residual SDU loss probability (default 0.002).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    // stall
    /// Stalls per second (Poisson; default 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_rate: Option<f64>,
    /// Median stall duration (default 2.5 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<Duration>,
    /// Standard deviation of a stall duration's logarithm (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma_ln: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// A path preset (`umts-downlink`, `umts-uplink`) that expands into stages placed before
    /// `stage`; replaced by its stages when the scenario is resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<PathPreset>,
    #[serde(default)]
    pub stage: Vec<StageSpec>,
    /// The path a packet enters when it leaves this one's last stage (`None`: it is
    /// delivered). Several paths that continue into one path share its stages and queues:
    /// per-flow access links that join at a shared bottleneck.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// The most stages one path may have (a stage index fits a byte in the engine's events).
pub const MAX_STAGES: usize = 255;

/// The longest chain of paths joined by `next`.
pub const MAX_PATH_CHAIN: usize = 16;

/// The path a flow gets when the file leaves out `[path.fwd]` or `[path.rev]`: a 10 Mbit/s
/// bottleneck with a 100-packet drop-tail queue and 20 ms of propagation delay forward, 20 ms
/// back (an RTT of 40 ms plus serialisation), so the smallest scenario `[[flow]]` is a
/// meaningful transfer rather than an infinitely fast one.
pub fn default_path(which: &str) -> PathSpec {
    let text = match which {
        "fwd" => "[[stage]]\ntype = \"rate\"\nrate = \"10Mbps\"\nqueue = 100\n[[stage]]\ntype = \"delay\"\ndelay = \"20ms\"\n",
        _ => "[[stage]]\ntype = \"delay\"\ndelay = \"20ms\"\n",
    };
    toml::from_str(text).expect("the default path is valid")
}

impl StageSpec {
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            StageKind::Rate => "rate",
            StageKind::Delay => "delay",
            StageKind::Loss => "loss",
            StageKind::Harq => "harq",
            StageKind::Rlc => "rlc",
            StageKind::Stall => "stall",
        }
    }

    fn present_fields(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        macro_rules! has {
            ($($f:ident),*) => { $( if self.$f.is_some() { v.push(stringify!($f)); } )* };
        }
        has!(
            rate,
            queue,
            queue_bytes,
            delay,
            profile,
            trace,
            reorder,
            preset,
            model,
            p,
            r,
            h,
            k,
            nth,
            seqs,
            leo,
            snr,
            combining,
            delta,
            max_retx,
            first_delay,
            retx_delay,
            symbol_rate,
            reorder_buffer,
            channel,
            schedule,
            switching,
            adapt,
            backpressure,
            rlc_rtt,
            loss,
            stall_rate,
            median,
            sigma_ln
        );
        v
    }

    pub(super) fn validate(&mut self, at: &str, base_dir: &Path) -> Result<()> {
        let allowed: &[&str] = match self.kind {
            StageKind::Rate => &[
                "rate",
                "schedule",
                "trace",
                "switching",
                "adapt",
                "queue",
                "queue_bytes",
                "backpressure",
            ],
            StageKind::Delay => &["delay", "profile", "trace", "preset", "leo", "reorder"],
            StageKind::Loss => &[
                "model", "p", "r", "h", "k", "profile", "preset", "nth", "seqs",
            ],
            StageKind::Harq => &[
                "snr",
                "combining",
                "delta",
                "max_retx",
                "first_delay",
                "retx_delay",
                "symbol_rate",
                "reorder_buffer",
                "channel",
            ],
            StageKind::Rlc => &["p", "rlc_rtt", "loss"],
            StageKind::Stall => &["stall_rate", "median", "sigma_ln"],
        };
        check(
            self.reorder_buffer.is_none() || self.kind == StageKind::Harq,
            format!("{at}.reorder_buffer"),
            format!(
                "a {} stage keeps packets in order and has no reordering buffer (only a harq \
                 stage, whose HARQ processes run in parallel, reorders)",
                self.kind_name()
            ),
        )?;
        for f in self.present_fields() {
            check(
                allowed.contains(&f),
                format!("{at}.{f}"),
                format!(
                    "not a field of a {} stage (allowed: {})",
                    self.kind_name(),
                    allowed.join(", ")
                ),
            )?;
        }
        match self.kind {
            StageKind::Rate => {
                let n = [
                    self.rate.is_some(),
                    self.schedule.is_some(),
                    self.trace.is_some(),
                    self.switching.is_some(),
                    self.adapt.is_some(),
                ]
                .iter()
                .filter(|x| **x)
                .count();
                check(
                    n == 1,
                    if n == 0 {
                        format!("{at}.rate")
                    } else {
                        at.to_string()
                    },
                    "a rate stage needs exactly one of rate, schedule, trace, switching, adapt",
                )?;
                if let Some(a) = &self.adapt {
                    a.params(at)?;
                }
                if let Some(rows) = &self.schedule {
                    self.rate_points = Some(schedule_points(rows, &format!("{at}.schedule"))?);
                }
                if let Some(file) = &self.trace {
                    let full = resolve_path(base_dir, file);
                    let field = format!("{at}.trace");
                    let (rows, lines) = read_csv_lines(&full, &field, RATE_TRACE_HEADER)?;
                    let cells: Vec<Vec<ScheduleCell>> = rows
                        .iter()
                        .map(|r| r.iter().map(|v| ScheduleCell::Num(*v)).collect())
                        .collect();
                    self.rate_points =
                        Some(at_lines(schedule_points(&cells, &field), &full, &lines)?);
                    self.trace = Some(full.to_string_lossy().into_owned());
                }
                if let Some(sw) = &self.switching {
                    check(
                        !sw.rates.is_empty(),
                        format!("{at}.switching.rates"),
                        "needs at least one rate",
                    )?;
                    check(
                        sw.dwell.0 >= SimDuration::from_millis(1),
                        format!("{at}.switching.dwell"),
                        format!(
                            "must be at least 1 ms (a mean dwell time), got {}",
                            sw.dwell
                        ),
                    )?;
                }
                check(
                    !(self.queue.is_some() && self.queue_bytes.is_some()),
                    format!("{at}.queue_bytes"),
                    "give queue (packets) or queue_bytes, not both",
                )?;
                if let Some(q) = self.queue {
                    check(
                        q >= 1,
                        format!("{at}.queue"),
                        format!("must be >= 1 packet, got {q}"),
                    )?;
                    check(
                        q <= 1_000_000_000,
                        format!("{at}.queue"),
                        format!("must be at most 1000000000 packets, got {q}"),
                    )?;
                }
                if let Some(b) = self.queue_bytes {
                    check(
                        b.0 >= 1,
                        format!("{at}.queue_bytes"),
                        format!("must be >= 1 byte, got {}", b.0),
                    )?;
                }
                // Whether `adapt.up_bytes` is reachable depends on the stages after this one
                // (a stall's held data counts): checked with the path (`check_up_reachable_bytes`).
                if self.queue.is_none() && self.queue_bytes.is_none() {
                    self.queue = Some(1000);
                }
            }
            StageKind::Delay => {
                let n = [
                    self.delay.is_some(),
                    self.profile.is_some(),
                    self.trace.is_some(),
                    self.preset.is_some(),
                    self.leo.is_some(),
                ]
                .iter()
                .filter(|x| **x)
                .count();
                check(
                    n == 1,
                    at.to_string(),
                    "a delay stage needs exactly one of delay, profile, trace, preset, leo",
                )?;
                if let Some(l) = &self.leo {
                    let rows = l.rows(&format!("{at}.leo"))?;
                    delay_profile(&rows, &format!("{at}.leo"))?;
                    self.leo_rows = Some(rows);
                }
                if let Some(p) = &self.preset {
                    let rows = p.rows(at, StageKind::Delay)?;
                    delay_profile(&rows, &format!("{at}.preset"))?;
                    self.preset_rows = Some(rows);
                }
                if let Some(rows) = &self.profile {
                    delay_profile(rows, &format!("{at}.profile"))?;
                }
                if let Some(file) = &self.trace {
                    let full = resolve_path(base_dir, file);
                    let field = format!("{at}.trace");
                    let (rows, lines) = read_csv_lines(&full, &field, DELAY_TRACE_HEADER)?;
                    at_lines(delay_profile(&rows, &field), &full, &lines)?;
                    self.trace = Some(full.to_string_lossy().into_owned());
                    self.trace_rows = Some(rows);
                }
                self.reorder.get_or_insert(false);
            }
            StageKind::Loss => {
                let model = match self.model {
                    Some(m) => m,
                    None if self.nth.is_some() || self.seqs.is_some() => LossKind::Deterministic,
                    None if self.profile.is_some() || self.preset.is_some() => LossKind::Profile,
                    None if self.p.is_some() => LossKind::Bernoulli,
                    None => {
                        return Err(ScenarioError::new(
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
                for f in self.present_fields() {
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
                        ScenarioError::new(
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
                            let rows = p.rows(at, StageKind::Loss)?;
                            loss_profile(&rows, &format!("{at}.preset"))?;
                            self.preset_rows = Some(rows);
                        } else {
                            let rows = self.profile.as_ref().ok_or_else(|| {
                                ScenarioError::new(
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
            }
            StageKind::Harq => {
                self.harq_params(at)?;
                self.combining.get_or_insert(CombiningKind::Ir);
                self.delta.get_or_insert(0.02);
                self.max_retx.get_or_insert(3);
                self.reorder_buffer.get_or_insert(false);
            }
            StageKind::Rlc => {
                let p = self.rlc_params(at)?;
                self.p = Some(p.p);
                self.rlc_rtt = Some(Duration(p.rtt));
                self.loss = Some(p.loss);
            }
            StageKind::Stall => {
                let p = self.stall_params(at)?;
                self.stall_rate = Some(p.rate);
                self.median = Some(Duration(p.median));
                self.sigma_ln = Some(p.sigma_ln);
            }
        }
        Ok(())
    }

    /// The RLC stage's parameters, checked (defaults for what is missing).
    pub fn rlc_params(&self, at: &str) -> Result<RlcParams> {
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

    /// The stall stage's parameters, checked (defaults for what is missing).
    pub fn stall_params(&self, at: &str) -> Result<StallParams> {
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
            p.load() <= spikelab_net::stall::MAX_LOAD,
            format!("{at}.stall_rate"),
            format!(
                "stall_rate × mean duration (median·e^(sigma_ln²/2)) must be at most {} \
                 (stalls would cover the link nearly all the time), got {:.3}",
                spikelab_net::stall::MAX_LOAD,
                p.load()
            ),
        )?;
        Ok(p)
    }

    /// The HARQ stage's and its channel's parameters, checked (defaults for what is missing).
    pub fn harq_params(&self, at: &str) -> Result<(HarqParams, LmsParams)> {
        let d = HarqParams::default();
        let snr = self.snr.ok_or_else(|| {
            ScenarioError::new(
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
                    return Err(ScenarioError::new(
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

impl LeoSpec {
    /// The trace as delay-profile rows `[time_ms, delay_ms, 0]`, after checking the knobs.
    fn rows(&self, at: &str) -> Result<Vec<Vec<f64>>> {
        let secs = self.duration.map_or(3600.0, |d| d.0.as_secs_f64());
        check(
            secs > 0.0 && secs <= MAX_LEO_SECONDS,
            format!("{at}.duration"),
            format!("must be in (0, {MAX_LEO_SECONDS}] s, got {secs} s"),
        )?;
        let alt = self.altitude_km.unwrap_or(800.0);
        check(
            alt.is_finite() && (500.0..=1500.0).contains(&alt),
            format!("{at}.altitude_km"),
            format!("must be in [500, 1500] km (a LEO orbit), got {}", num(alt)),
        )?;
        Ok(leo::delay_trace(self.seed.unwrap_or(1), secs, alt)
            .into_iter()
            .map(|(t, d)| vec![t, d, 0.0])
            .collect())
    }
}

fn resolve_path(base_dir: &Path, file: &str) -> PathBuf {
    let p = PathBuf::from(file);
    if p.is_absolute() {
        p
    } else {
        base_dir.join(p)
    }
}

/// The largest trace file read: 256 MiB (millions of rows).
pub const MAX_TRACE_FILE_BYTES: u64 = 256 << 20;

/// The header of a delay stage's trace.
pub const DELAY_TRACE_HEADER: &str = "time_ms,delay_ms,loss";
/// The header of a rate stage's trace.
pub const RATE_TRACE_HEADER: &str = "time_ms,rate_bps";

/// At most 80 characters of a line quoted in an error (a file of one 20 MB line must not
/// make a 20 MB message), with `…` where it was cut.
fn clipped(line: &str) -> String {
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// An error about "row I" of rows read from `path` restated as the file's line (`lines[I]`,
/// from 1), where the user can find it.
fn at_lines<T>(r: Result<T>, path: &Path, lines: &[usize]) -> Result<T> {
    r.map_err(|mut e| {
        // A value's error names its row as an index of the field (`FIELD[I]`, profile_rows).
        let indexed = e
            .field
            .strip_suffix(']')
            .and_then(|f| f.rsplit_once('['))
            .and_then(|(f, i)| Some((f.to_string(), lines.get(i.parse::<usize>().ok()?)?)));
        if let Some((field, line)) = indexed {
            e.message = format!("{} line {line}: {}", path.display(), e.message);
            e.field = field;
            return e;
        }
        let row = e
            .message
            .strip_prefix("row ")
            .and_then(|rest| rest.split_once(": "))
            .and_then(|(i, msg)| Some((lines.get(i.parse::<usize>().ok()?)?, msg)));
        if let Some((line, msg)) = row {
            e.message = format!("{} line {line}: {msg}", path.display());
        }
        e
    })
}

/// Reads a CSV file of numbers whose first line is `header` (blank lines and `#` comments
/// skipped), one row per line with as many numbers as the header has names; with each row's
/// line number in the file (from 1).
pub fn read_csv_lines(
    path: &Path,
    field: &str,
    header_want: &str,
) -> Result<(Vec<Vec<f64>>, Vec<usize>)> {
    let ncols = header_want.split(',').count();
    use std::io::Read;
    let shown = path.display();
    let cannot = |e: std::io::Error| ScenarioError::new(field, format!("cannot read {shown}: {e}"));
    let meta = std::fs::metadata(path).map_err(cannot)?;
    check(
        meta.is_file(),
        field,
        format!("{shown} is not a regular file"),
    )?;
    check(
        meta.len() <= MAX_TRACE_FILE_BYTES,
        field,
        format!(
            "{shown} is {} bytes; trace files are limited to {} MiB",
            meta.len(),
            MAX_TRACE_FILE_BYTES >> 20
        ),
    )?;
    let mut raw = Vec::new();
    std::fs::File::open(path)
        .map_err(cannot)?
        .take(MAX_TRACE_FILE_BYTES + 1)
        .read_to_end(&mut raw)
        .map_err(cannot)?;
    check(
        raw.len() as u64 <= MAX_TRACE_FILE_BYTES,
        field,
        format!(
            "{shown} grew beyond {} MiB while being read",
            MAX_TRACE_FILE_BYTES >> 20
        ),
    )?;
    let text = String::from_utf8(raw)
        .map_err(|_| ScenarioError::new(field, format!("{shown} is not UTF-8 text")))?;
    let mut rows = Vec::new();
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let header = lines
        .next()
        .map(|(_, l)| l.replace(' ', ""))
        .unwrap_or_default();
    check(
        header == header_want,
        field,
        format!(
            "{}: the first line must be the header {header_want}, got {header:?}",
            path.display()
        ),
    )?;
    let mut numbers = Vec::new();
    for (no, line) in lines {
        let vals: std::result::Result<Vec<f64>, _> =
            line.split(',').map(|c| c.trim().parse::<f64>()).collect();
        match vals {
            Ok(v) if v.len() == ncols => {
                rows.push(v);
                numbers.push(no + 1);
            }
            _ => {
                return Err(ScenarioError::new(
                    field,
                    format!(
                        "{} line {}: expected {} numbers, got {:?}",
                        path.display(),
                        no + 1,
                        if ncols == 3 { "three" } else { "two" },
                        clipped(line)
                    ),
                ))
            }
        }
    }
    Ok((rows, numbers))
}

/// A number as a reader would write it: `1e300`, not three hundred digits (nor `1e-300`
/// three hundred zeros).
fn num(v: f64) -> String {
    if v.is_finite() && (v.abs() >= 1e15 || (v != 0.0 && v.abs() < 1e-6)) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

fn profile_rows(rows: &[Vec<f64>], field: &str, with_delay: bool) -> Result<Vec<ProfileRow>> {
    let arity = if with_delay { 3 } else { 2 };
    let shape = if with_delay {
        "[time_ms, delay_ms, loss]"
    } else {
        "[time_ms, loss]"
    };
    let mut out = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        check(
            r.len() == arity,
            format!("{field}[{i}]"),
            format!("a row is {shape}, got {} values", r.len()),
        )?;
        let t = r[0];
        let (d, loss) = if with_delay {
            (r[1], r[2])
        } else {
            (0.0, r[1])
        };
        let max_ms = crate::units::MAX_DURATION_S * 1e3;
        check(
            !t.is_nan() && t >= 0.0,
            format!("{field}[{i}]"),
            format!("time must be >= 0, got {t}"),
        )?;
        check(
            t <= max_ms,
            format!("{field}[{i}]"),
            format!(
                "time must be at most 1e12 ms (about 31 years), got {}",
                num(t)
            ),
        )?;
        check(
            !d.is_nan() && d >= 0.0,
            format!("{field}[{i}]"),
            format!("delay must be >= 0, got {d}"),
        )?;
        check(
            d <= max_ms,
            format!("{field}[{i}]"),
            format!(
                "delay must be at most 1e12 ms (about 31 years), got {}",
                num(d)
            ),
        )?;
        out.push(ProfileRow {
            t: SimTime::from_secs_f64(t / 1000.0),
            delay: SimDuration::from_secs_f64(d / 1000.0),
            loss,
        });
    }
    Profile::new(out.clone()).map_err(|e| ScenarioError::new(field, e.to_string()))?;
    Ok(out)
}

pub fn delay_profile(rows: &[Vec<f64>], field: &str) -> Result<Profile> {
    Ok(Profile::new(profile_rows(rows, field, true)?).expect("validated"))
}

pub fn loss_profile(rows: &[Vec<f64>], field: &str) -> Result<Profile> {
    Ok(Profile::new(profile_rows(rows, field, false)?).expect("validated"))
}

/// The points of a rate schedule (`[[time_ms, rate], ...]`, the rate a number of bits per
/// second or a string with a unit; `0` allowed except in the last row, which holds forever).
pub fn schedule_points(rows: &[Vec<ScheduleCell>], field: &str) -> Result<Vec<(SimTime, u64)>> {
    check(
        !rows.is_empty(),
        field,
        "a rate schedule needs at least one row [time_ms, rate]",
    )?;
    let max_ms = crate::units::MAX_DURATION_S * 1e3;
    let mut out: Vec<(SimTime, u64)> = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let at = |m: String| ScenarioError::new(field, format!("row {i}: {m}"));
        if r.len() != 2 {
            return Err(at(format!(
                "a row is [time_ms, rate], got {} values",
                r.len()
            )));
        }
        let t = match &r[0] {
            ScheduleCell::Num(t) => *t,
            ScheduleCell::Text(x) => {
                return Err(at(format!("time must be a number of ms, got {x:?}")))
            }
        };
        if t.is_nan() || t < 0.0 || t > max_ms {
            return Err(at(format!("time must be in [0, 1e12] ms, got {}", num(t))));
        }
        let bps = match &r[1] {
            ScheduleCell::Num(v) => {
                if v.is_nan() || *v < 0.0 || *v > crate::units::MAX_RATE_BPS || v.fract() != 0.0 {
                    return Err(at(format!(
                        "rate must be a whole number of bits per second in [0, 1e13], got {}",
                        num(*v)
                    )));
                }
                *v as u64
            }
            ScheduleCell::Text(x) => {
                if x.trim()
                    .trim_end_matches(|c: char| c.is_alphabetic() || c == '/')
                    == "0"
                {
                    0
                } else {
                    Rate::parse(x).map_err(|e| at(format!("rate: {e}")))?.0
                }
            }
        };
        let t = SimTime::from_secs_f64(t / 1000.0);
        if let Some(prev) = out.last() {
            if t < prev.0 {
                return Err(at("times must be non-decreasing".into()));
            }
        }
        // As in a delay profile: a step is two rows, the rate before and the rate after; a
        // third row at that time would never apply.
        if out.len() >= 2 && out[out.len() - 2].0 == t {
            return Err(at(
                "at most two rows may share one time (a step has a before and an after)".into(),
            ));
        }
        out.push((t, bps));
    }
    check(
        out.last().is_some_and(|p| p.1 > 0),
        field,
        format!(
            "row {}: the last rate holds forever and must be > 0",
            rows.len() - 1
        ),
    )?;
    Ok(out)
}

/// The scenario's `[preset.NAME]` tables, checked: each names a path preset and holds only its
/// knobs, with valid values (errors name `preset.NAME.KNOB`).
pub fn check_preset_defaults(raw: &BTreeMap<String, toml::Table>) -> Result<()> {
    for (name, table) in raw {
        let at = format!("preset.{name}");
        check(
            PATH_PRESETS.contains(&name.as_str()),
            &at,
            format!(
                "unknown path preset {name:?} (known: {})",
                PATH_PRESETS.join(", ")
            ),
        )?;
        check(
            !table.contains_key("name"),
            format!("{at}.name"),
            "the table's own name is the preset's; leave name out",
        )?;
        let mut full = table.clone();
        full.insert("name".into(), toml::Value::String(name.clone()));
        let t: PathPresetTable =
            serde_path_to_error::deserialize(super::strict::Strict(toml::Value::Table(full)))
                .map_err(|e| super::field_error(e, &at))?;
        Named {
            table: t,
            named: false,
        }
        .stages(&at)?;
    }
    Ok(())
}

/// A path's `preset` with the scenario's defaults for that preset filled in where the path's
/// own table leaves a knob out.
pub fn with_defaults(
    preset: PathPreset,
    defaults: &BTreeMap<String, toml::Table>,
    at: &str,
) -> Result<PathPreset> {
    let Some(d) = defaults.get(&preset.table.name) else {
        return Ok(preset);
    };
    let mut own = match toml::Value::try_from(&preset.table) {
        Ok(toml::Value::Table(t)) => t,
        _ => unreachable!("a preset table serialises to a table"),
    };
    for (k, v) in d {
        own.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let table: PathPresetTable = toml::Value::Table(own)
        .try_into()
        .map_err(|e: toml::de::Error| ScenarioError::new(at, e.message().replace('\n', " ")))?;
    Ok(Named {
        table,
        named: false,
    })
}

/// The knobs of a path preset; a missing one keeps the preset's value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathPresetTable {
    pub name: String,
    /// IP-level service rate of the bearer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Drop-tail buffer in front of the bearer (RNC for the downlink, UE for the uplink).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<Bytes>,
    /// Fixed one-way delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Duration>,
    /// RLC: chance of one more link round trip per packet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlc_p: Option<f64>,
    /// RLC round trip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlc_rtt: Option<Duration>,
    /// RLC residual SDU loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlc_loss: Option<f64>,
    /// Delivery stalls per second (0: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_rate: Option<f64>,
    /// Median stall duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_median: Option<Duration>,
    /// Log-normal sigma of stall durations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_sigma: Option<f64>,
    /// The downgraded bearer's IP-level rate: with it the rate follows the load (the RNC's
    /// traffic-volume allocation between `low_rate` and `rate`; 0: a fixed `rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_rate: Option<Rate>,
    /// Upgrade when the buffer holds more than this (event 4a threshold) ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_bytes: Option<Bytes>,
    /// ... for this long (time-to-trigger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_after: Option<Duration>,
    /// Downgrade when the buffer has held at most `down_bytes` (event 4b; default 0, empty) ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_bytes: Option<Bytes>,
    /// ... for this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_after: Option<Duration>,
    /// From a decision to the new rate (radio-bearer reconfiguration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_delay: Option<Duration>,
    /// The buffer is sized in time: at the low rate it holds `buffer · low_rate / rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_buffer: Option<bool>,
    /// The buffer is the sender's own and pushes back instead of dropping (`umts-uplink`: the
    /// UE, a modem flow-controlling the computer that sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backpressure: Option<bool>,
    /// `leo-lms`: the drop-tail queue in packets in front of the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<i64>,
    /// `leo-lms`: the HARQ link's reference SNR, dB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snr: Option<f64>,
    /// `leo-lms`: the link-layer reordering buffer after HARQ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_buffer: Option<bool>,
    /// `leo-lms`, `leo-return`: the seed of the LEO delay trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leo_seed: Option<u64>,
}

/// Checks that a load-driven rate stage with a byte queue can step up (`stage` is its index
/// in `stages`, the path's, `at` its name). A stall stage with stalls after it in the path makes
/// any `up_bytes` reachable: what the stall holds counts as buffered
/// ([`spikelab_net::RateStage::count_stalled`]), and a stall holds whatever the link sends.
pub(super) fn check_up_reachable_bytes(stages: &[StageSpec], stage: usize, at: &str) -> Result<()> {
    let st = &stages[stage];
    let (Some(a), Some(b)) = (&st.adapt, st.queue_bytes) else {
        return Ok(());
    };
    if stall_follows(stages, stage) {
        return Ok(());
    }
    check_up_reachable(
        &a.params(at)?,
        b.0,
        format!("{at}.adapt.up_bytes"),
        [
            "the queue",
            "the lowest rate",
            "queue_bytes scaled by scale_queue",
            "the rate",
        ],
    )
}

/// A stall stage that stalls (a positive `stall_rate`) comes after `stages[stage]`.
pub(super) fn stall_follows(stages: &[StageSpec], stage: usize) -> bool {
    stages[stage + 1..]
        .iter()
        .any(|s| s.kind == StageKind::Stall && s.stall_rate.unwrap_or(0.0) > 0.0)
}

/// Checks that a load-driven rate can step up: `up_bytes` below what its queue of
/// `queue_bytes` holds at the lowest level (scaled to that level's rate with `scale_queue`),
/// or event 4a never fires. `words`: the queue, the lowest level, the scaling switch and what
/// steps up, as the caller's table names them (a stage's or a preset's).
fn check_up_reachable(
    p: &AdaptParams,
    queue_bytes: u64,
    field: String,
    words: [&str; 4],
) -> Result<()> {
    let [queue, lowest, scaled_by, what] = words;
    let cap = if p.scale_queue {
        let top = *p.rates.last().expect("validated") as u128;
        ((queue_bytes as u128 * p.rates[0] as u128 / top) as u64).max(1)
    } else {
        queue_bytes
    };
    let scaled = if p.scale_queue {
        format!(", {scaled_by}")
    } else {
        String::new()
    };
    check(
        p.up_bytes < cap,
        field,
        format!(
            "must be below what {queue} holds at {lowest} ({cap} bytes{scaled}), or {what} \
             never steps up; got {} bytes",
            p.up_bytes
        ),
    )
}

/// Checks that a load-driven rate behind a queue of `queue` packets can step up: `up_bytes`
/// below what that many packets of at most `largest` bytes (the largest packet a flow sends on
/// the path) hold at the lowest level (the packet limit scaled to that level's rate with
/// `scale_queue`, as the stage scales it), or event 4a never fires.
pub(super) fn check_up_reachable_packets(
    p: &AdaptParams,
    queue: u64,
    largest: u64,
    field: String,
) -> Result<()> {
    let packets = if p.scale_queue {
        let top = *p.rates.last().expect("validated") as u128;
        ((queue as u128 * p.rates[0] as u128 / top) as u64).max(1)
    } else {
        queue
    };
    let cap = packets.saturating_mul(largest);
    let scaled = if p.scale_queue {
        ", queue scaled by scale_queue,"
    } else {
        ""
    };
    let plural = if packets == 1 { "" } else { "s" };
    check(
        p.up_bytes < cap,
        field,
        format!(
            "must be below what the queue holds at the lowest rate ({packets} packet{plural}\
             {scaled} of at most {largest} bytes, the largest packet the flows send on this \
             path: {cap} bytes), or the rate never steps up; got {} bytes",
            p.up_bytes
        ),
    )
}

/// Names accepted in a path's `preset`.
pub const PATH_PRESETS: &[&str] = &["umts-downlink", "umts-uplink", "leo-lms", "leo-return"];

/// The smallest preset buffer: one 1500-byte packet.
pub const MIN_PRESET_BUFFER: u64 = 1500;

/// One UMTS bearer direction's defaults (paper 003; docs/models.md, UMTS bearer).
struct UmtsDefaults {
    rate: u64,
    buffer: u64,
    delay_ms: u64,
    rlc_loss: f64,
    stall_rate: f64,
    /// The load-driven rate's defaults (`low_rate` 0: off).
    low_rate: u64,
    up_bytes: u64,
    up_after_ms: u64,
    down_after_ms: u64,
    switch_delay_ms: u64,
    scale_buffer: bool,
    backpressure: bool,
}

impl UmtsDefaults {
    /// The UMTS presets' values (paper 003's bearer, docs/models.md, UMTS bearer); `None` for any
    /// other name.
    fn of(name: &str) -> Option<UmtsDefaults> {
        match name {
            "umts-downlink" => Some(UmtsDefaults {
                rate: 330_000,
                buffer: 45_000,
                delay_ms: 170,
                rlc_loss: 0.002,
                stall_rate: 0.05,
                ..UmtsDefaults::ADAPT_OFF
            }),
            "umts-uplink" => Some(UmtsDefaults {
                rate: 58_000,
                buffer: 12_000,
                delay_ms: 130,
                rlc_loss: 0.0003,
                stall_rate: 0.0,
                // The UE is a phone on USB flow-controlling the computer (paper 003's Nokia
                // 6630): its full buffer holds the sender back instead of dropping.
                backpressure: true,
                ..UmtsDefaults::ADAPT_OFF
            }),
            _ => None,
        }
    }

    /// Both presets' load-driven rate defaults (off until `low_rate` is set); the other
    /// fields are placeholders the presets override.
    const ADAPT_OFF: UmtsDefaults = UmtsDefaults {
        rate: 0,
        buffer: 0,
        delay_ms: 0,
        rlc_loss: 0.0,
        stall_rate: 0.0,
        low_rate: 0,
        up_bytes: 20_000,
        up_after_ms: 0,
        down_after_ms: 1000,
        switch_delay_ms: 1000,
        scale_buffer: false,
        backpressure: false,
    };
}

impl PathPreset {
    /// Refuses a knob that `own` (the path's own preset table, before the scenario's
    /// `[preset.NAME]` defaults fill it) sets but that the expanded preset ignores: a stall
    /// knob when the stall rate is 0 (no stall stage), a load-driven rate knob without
    /// `low_rate` (the rate is fixed). A knob that comes from the defaults table is not
    /// refused: it is meant for the paths that do use it.
    pub fn check_inert_knobs(&self, own: &PathPresetTable, at: &str) -> Result<()> {
        let t = &self.table;
        let Some(d) = UmtsDefaults::of(&t.name) else {
            return Ok(());
        };
        if t.stall_rate.unwrap_or(d.stall_rate) <= 0.0 {
            for (k, on) in [
                ("stall_median", own.stall_median.is_some()),
                ("stall_sigma", own.stall_sigma.is_some()),
            ] {
                check(
                    !on,
                    format!("{at}.{k}"),
                    format!(
                        "has no effect: {}'s stall_rate is 0, so it has no stall stage (set \
                         stall_rate > 0 to add one)",
                        t.name
                    ),
                )?;
            }
        }
        if t.low_rate.map_or(d.low_rate, |r| r.0) == 0 {
            for (k, on) in [
                ("up_bytes", own.up_bytes.is_some()),
                ("up_after", own.up_after.is_some()),
                ("down_bytes", own.down_bytes.is_some()),
                ("down_after", own.down_after.is_some()),
                ("switch_delay", own.switch_delay.is_some()),
                ("scale_buffer", own.scale_buffer.is_some()),
            ] {
                check(
                    !on,
                    format!("{at}.{k}"),
                    "has no effect without low_rate (the bearer's rate is fixed; low_rate \
                     makes it load-driven)",
                )?;
            }
        }
        Ok(())
    }

    /// The stages the preset stands for: rate (drop-tail buffer in bytes), rlc, stall (when
    /// its rate is > 0), delay.
    pub fn stages(&self, at: &str) -> Result<Vec<StageSpec>> {
        let t = &self.table;
        let field = |f: &str| {
            if self.named {
                at.to_string()
            } else {
                format!("{at}.{f}")
            }
        };
        // Each family's knobs; a knob of the other family is refused by name.
        const UMTS: [&str; 17] = [
            "rate",
            "buffer",
            "delay",
            "rlc_p",
            "rlc_rtt",
            "rlc_loss",
            "stall_rate",
            "stall_median",
            "stall_sigma",
            "low_rate",
            "up_bytes",
            "up_after",
            "down_bytes",
            "down_after",
            "switch_delay",
            "scale_buffer",
            "backpressure",
        ];
        const LEO_LMS: [&str; 5] = ["rate", "queue", "snr", "reorder_buffer", "leo_seed"];
        let set = [
            ("rate", t.rate.is_some()),
            ("buffer", t.buffer.is_some()),
            ("delay", t.delay.is_some()),
            ("rlc_p", t.rlc_p.is_some()),
            ("rlc_rtt", t.rlc_rtt.is_some()),
            ("rlc_loss", t.rlc_loss.is_some()),
            ("stall_rate", t.stall_rate.is_some()),
            ("stall_median", t.stall_median.is_some()),
            ("stall_sigma", t.stall_sigma.is_some()),
            ("low_rate", t.low_rate.is_some()),
            ("up_bytes", t.up_bytes.is_some()),
            ("up_after", t.up_after.is_some()),
            ("down_bytes", t.down_bytes.is_some()),
            ("down_after", t.down_after.is_some()),
            ("switch_delay", t.switch_delay.is_some()),
            ("scale_buffer", t.scale_buffer.is_some()),
            ("backpressure", t.backpressure.is_some()),
            ("queue", t.queue.is_some()),
            ("snr", t.snr.is_some()),
            ("reorder_buffer", t.reorder_buffer.is_some()),
            ("leo_seed", t.leo_seed.is_some()),
        ];
        let knobs: &[&str] = match t.name.as_str() {
            "leo-lms" => &LEO_LMS,
            "leo-return" => &["leo_seed"],
            _ => &UMTS,
        };
        if PATH_PRESETS.contains(&t.name.as_str()) {
            if let Some((k, _)) = set.iter().find(|(k, on)| *on && !knobs.contains(k)) {
                return Err(ScenarioError::new(
                    format!("{at}.{k}"),
                    format!("not a knob of {} (its knobs: {})", t.name, knobs.join(", ")),
                ));
            }
        }
        if t.name.starts_with("leo-") {
            return self.leo_stages(at);
        }
        let Some(d) = UmtsDefaults::of(&t.name) else {
            return Err(ScenarioError::new(
                field("name"),
                format!(
                    "unknown path preset {:?} (known: {})",
                    t.name,
                    PATH_PRESETS.join(", ")
                ),
            ));
        };
        let buffer = t.buffer.map_or(d.buffer, |b| b.0);
        check(
            buffer >= MIN_PRESET_BUFFER,
            field("buffer"),
            format!(
                "must hold at least one packet ({MIN_PRESET_BUFFER} bytes), got {buffer} bytes"
            ),
        )?;
        let empty = blank_stage;
        let top = t.rate.unwrap_or(Rate(d.rate));
        let low = t.low_rate.map_or(d.low_rate, |r| r.0);
        let stall_rate = t.stall_rate.unwrap_or(d.stall_rate);
        let stalls = stall_rate > 0.0;
        let ms =
            |v: Option<Duration>, def: u64| v.unwrap_or(Duration(SimDuration::from_millis(def)));
        let adapt = (low > 0).then(|| AdaptSpec {
            rates: vec![Rate(low), top],
            // The UE holds the top rate at the start (it is on a DCH already).
            start: Some(1),
            up_bytes: t.up_bytes.unwrap_or(Bytes(d.up_bytes)),
            up_after: Some(ms(t.up_after, d.up_after_ms)),
            down_bytes: t.down_bytes,
            down_after: ms(t.down_after, d.down_after_ms),
            delay: Some(ms(t.switch_delay, d.switch_delay_ms)),
            scale_queue: Some(t.scale_buffer.unwrap_or(d.scale_buffer)),
        });
        if let Some(a) = &adapt {
            check(
                low < top.0,
                field("low_rate"),
                format!("must be below rate ({} bit/s), got {low} bit/s", top.0),
            )?;
            let p = a.params("").map_err(|e| {
                let knob = match e.field.as_str() {
                    ".adapt.up_bytes" => "up_bytes",
                    ".adapt.down_bytes" => "down_bytes",
                    _ => "low_rate",
                };
                ScenarioError::new(field(knob), e.message)
            })?;
            // With stalls (stall_rate > 0) what they hold counts as buffered: any up_bytes
            // can be reached (check_up_reachable_bytes).
            if !stalls {
                check_up_reachable(
                    &p,
                    buffer,
                    field("up_bytes"),
                    [
                        "the buffer",
                        "low_rate",
                        "the buffer scaled by scale_buffer",
                        "the bearer",
                    ],
                )
                .map_err(|mut e| {
                    // The user may not have set up_bytes at all (umts-uplink's 12 KB buffer
                    // is below the 20 KB default): say where the number comes from.
                    if t.up_bytes.is_none() {
                        e.message.push_str(", the preset's default: set up_bytes");
                    }
                    e
                })?;
            }
        }
        let rate = StageSpec {
            kind: StageKind::Rate,
            rate: adapt.is_none().then_some(top),
            adapt,
            queue_bytes: Some(Bytes(buffer)),
            backpressure: Some(t.backpressure.unwrap_or(d.backpressure)),
            ..empty()
        };
        let rlc = StageSpec {
            kind: StageKind::Rlc,
            p: t.rlc_p,
            rlc_rtt: t.rlc_rtt,
            loss: Some(t.rlc_loss.unwrap_or(d.rlc_loss)),
            ..empty()
        };
        // Knob errors name the preset's knob, not the generated stage's field.
        let named_err = |e: ScenarioError, knob: &str| ScenarioError::new(field(knob), e.message);
        rlc.rlc_params("").map_err(|e| {
            let knob = match e.field.as_str() {
                ".p" => "rlc_p",
                ".rlc_rtt" => "rlc_rtt",
                _ => "rlc_loss",
            };
            named_err(e, knob)
        })?;
        let stall = StageSpec {
            kind: StageKind::Stall,
            stall_rate: Some(stall_rate),
            median: t.stall_median,
            sigma_ln: t.stall_sigma,
            ..empty()
        };
        stall.stall_params("").map_err(|e| {
            let knob = match e.field.as_str() {
                ".stall_rate" => "stall_rate",
                ".median" => "stall_median",
                _ => "stall_sigma",
            };
            named_err(e, knob)
        })?;
        let delay = StageSpec {
            kind: StageKind::Delay,
            delay: Some(
                t.delay
                    .unwrap_or(Duration(SimDuration::from_millis(d.delay_ms))),
            ),
            ..empty()
        };
        let mut out = vec![rate, rlc];
        if stalls {
            out.push(stall);
        }
        out.push(delay);
        Ok(out)
    }

    /// `leo-lms` (paper 001 §III's forward path: rate, queue, the LEO constellation's delay,
    /// HARQ over the LMS channel) and `leo-return` (the error-free return path: the LEO delay
    /// of another seed).
    fn leo_stages(&self, at: &str) -> Result<Vec<StageSpec>> {
        let t = &self.table;
        let field = |f: &str| {
            if self.named {
                at.to_string()
            } else {
                format!("{at}.{f}")
            }
        };
        let forward = t.name == "leo-lms";
        let leo = StageSpec {
            kind: StageKind::Delay,
            leo: Some(LeoSpec {
                seed: Some(t.leo_seed.unwrap_or(if forward { 1 } else { 2 })),
                ..LeoSpec::default()
            }),
            ..blank_stage()
        };
        if !forward {
            return Ok(vec![leo]);
        }
        let queue = t.queue.unwrap_or(1000);
        check(
            (1..=1_000_000_000).contains(&queue),
            field("queue"),
            format!("must be 1 to 1000000000 packets, got {queue}"),
        )?;
        let snr = t.snr.unwrap_or(10.0);
        check(
            (-10.0..=40.0).contains(&snr),
            field("snr"),
            format!("must be a reference SNR in [-10, 40] dB, got {}", num(snr)),
        )?;
        let rate = StageSpec {
            kind: StageKind::Rate,
            rate: Some(t.rate.unwrap_or(Rate(40_000_000))),
            queue: Some(queue),
            ..blank_stage()
        };
        let harq = StageSpec {
            kind: StageKind::Harq,
            snr: Some(snr),
            reorder_buffer: Some(t.reorder_buffer.unwrap_or(false)),
            ..blank_stage()
        };
        Ok(vec![rate, leo, harq])
    }
}

/// A stage with no keys set (a preset fills in its own).
fn blank_stage() -> StageSpec {
    StageSpec {
        kind: StageKind::Delay,
        name: None,
        rate: None,
        queue: None,
        queue_bytes: None,
        schedule: None,
        switching: None,
        adapt: None,
        backpressure: None,
        rate_points: None,
        delay: None,
        profile: None,
        trace: None,
        trace_rows: None,
        reorder: None,
        leo: None,
        leo_rows: None,
        preset: None,
        preset_rows: None,
        model: None,
        p: None,
        r: None,
        h: None,
        k: None,
        nth: None,
        seqs: None,
        snr: None,
        combining: None,
        delta: None,
        max_retx: None,
        first_delay: None,
        retx_delay: None,
        symbol_rate: None,
        reorder_buffer: None,
        channel: None,
        rlc_rtt: None,
        loss: None,
        stall_rate: None,
        median: None,
        sigma_ln: None,
    }
}
