//! Paths: each an ordered list of stages, a stage being one stage type's own configuration
//! (`spikelab_net::StageConfig`, defined beside each model in `spikelab-net`) and a name; path
//! presets (`umts-downlink`, `umts-uplink`, `leo-lms`, `leo-return`) that expand into stages;
//! the default link.

use super::*;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::Deserializer;
use spikelab_core::units::{Bytes, Rate};
use spikelab_net::leo::LeoConfig;
use spikelab_net::optional_fields;
use spikelab_net::{
    check_up_reachable, AdaptConfig, DelayConfig, HarqConfig, RateConfig, RlcConfig, Stage,
    StallConfig,
};

pub use spikelab_net::config::{
    delay_profile, loss_profile, read_csv_lines, schedule_points, Named, PathCtx, PresetKnobs,
    ResolveCtx, ScheduleCell, DELAY_TRACE_HEADER, MAX_TRACE_FILE_BYTES, RATE_TRACE_HEADER,
};
pub use spikelab_net::walkaway::{
    PresetSpec, PresetTable, DELAY_PRESET_KNOBS, LOSS_PRESET_KNOBS, PRESETS, WALKAWAY_SECONDS,
};
pub use spikelab_net::StageConfig;

/// A path's `preset` (`umts-downlink`, `leo-lms`, ...).
pub type PathPreset = Named<PathPresetTable>;

/// One stage of a path: its type's own configuration (`type = "..."` picks the type, whose
/// module in `spikelab-net` owns its fields, defaults and checks) and its name.
#[derive(Clone, Debug)]
pub struct StageSpec {
    /// The stage's name (default: its type, numbered when the type repeats in the path).
    pub name: Option<String>,
    pub config: StageConfig,
}

/// Builds stage `index` of path `path` from its validated spec, with its own RNG stream
/// (`path/<path>/stage/<index>`). The simulator and the emulator both build stages here, so a
/// seed draws the same random numbers in both.
pub fn build_stage(path: &str, index: usize, stages: &[StageSpec], seed: u64) -> Stage {
    let configs: Vec<&StageConfig> = stages.iter().map(|s| &s.config).collect();
    let ctx = PathCtx {
        path,
        stages: &configs,
        index,
        seed,
    };
    stages[index].config.build(&ctx)
}

impl StageSpec {
    /// An unnamed stage.
    pub fn new(config: StageConfig) -> StageSpec {
        StageSpec { name: None, config }
    }

    /// Its `type`.
    pub fn kind_name(&self) -> &'static str {
        self.config.type_name()
    }
}

impl Serialize for StageSpec {
    /// `type`, `name`, then the configuration's fields.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Written<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            name: &'a Option<String>,
            #[serde(flatten)]
            config: &'a StageConfig,
        }
        Written {
            kind: self.kind_name(),
            name: &self.name,
            config: &self.config,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for StageSpec {
    /// A table whose `type` comes first (the scenario's reader hands a table's `type` out
    /// first, `strict.rs`): the type's configuration reads the other fields, so a field's
    /// error names it (`path.fwd.stage[0].adapt.rates: ...`); a field of another stage type
    /// is refused by name.
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<StageSpec, D::Error> {
        d.deserialize_struct("StageSpec", &["type", "name"], StageVisitor)
    }
}

struct StageVisitor;

impl<'de> Visitor<'de> for StageVisitor {
    type Value = StageSpec;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct StageSpec")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<StageSpec, A::Error> {
        if map.next_key::<String>()?.as_deref() != Some("type") {
            return Err(de::Error::missing_field("type"));
        }
        let kind = map.next_value_seed(StageType)?;
        let mut name = None;
        let fields = StageFields {
            map,
            kind: &kind,
            name: &mut name,
        };
        let config =
            StageConfig::deserialize_as(&kind, de::value::MapAccessDeserializer::new(fields))?
                .expect("a known type");
        Ok(StageSpec { name, config })
    }
}

/// A stage's `type`: one of the registered stage types.
struct StageType;

impl<'de> DeserializeSeed<'de> for StageType {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<String, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) if StageConfig::fields_of(&s).is_some() => Ok(s),
            toml::Value::String(s) => Err(de::Error::unknown_variant(&s, StageConfig::TYPES)),
            _ => Err(de::Error::custom(format!(
                "must be one of {} (a string)",
                StageConfig::TYPES.join(", ")
            ))),
        }
    }
}

/// The fields of a stage after its `type`, as its configuration reads them: `name` is taken
/// aside, and a key the type does not have is refused where it stands.
struct StageFields<'a, A> {
    map: A,
    kind: &'a str,
    name: &'a mut Option<String>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for StageFields<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        mut seed: K,
    ) -> std::result::Result<Option<K::Value>, A::Error> {
        loop {
            let key = StageKey {
                seed,
                kind: self.kind,
            };
            match self.map.next_key_seed(key)? {
                None => return Ok(None),
                Some(Key::Field(v)) => return Ok(Some(v)),
                Some(Key::Name(s)) => {
                    *self.name = Some(self.map.next_value()?);
                    seed = s;
                }
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

enum Key<K, V> {
    /// `name` (the seed, unused, comes back).
    Name(K),
    /// A field of the stage's type.
    Field(V),
}

/// Reads a key of a stage of type `kind`, refusing one its type does not have.
struct StageKey<'a, K> {
    seed: K,
    kind: &'a str,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for StageKey<'_, K> {
    type Value = Key<K, K::Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        let key = String::deserialize(d)?;
        if key == "name" {
            return Ok(Key::Name(self.seed));
        }
        let own = StageConfig::fields_of(self.kind).expect("a known type");
        if !own.contains(&key.as_str()) {
            let all: Vec<&str> = ["type", "name"]
                .into_iter()
                .chain(StageConfig::TYPES.iter().flat_map(|t| {
                    StageConfig::fields_of(t)
                        .expect("a known type")
                        .iter()
                        .copied()
                }))
                .fold(Vec::new(), |mut v, f| {
                    if !v.contains(&f) {
                        v.push(f);
                    }
                    v
                });
            let msg = if let Some(m) = StageConfig::misplaced(&key, self.kind) {
                m
            } else if all.contains(&key.as_str()) {
                format!(
                    "not a field of a {} stage (allowed: {})",
                    self.kind,
                    own.join(", ")
                )
            } else {
                let quoted: Vec<String> = all.iter().map(|f| format!("`{f}`")).collect();
                format!(
                    "unknown field `{key}`, expected one of {}",
                    quoted.join(", ")
                )
            };
            return Err(de::Error::custom(msg));
        }
        let field: de::value::StringDeserializer<D::Error> = key.into_deserializer();
        self.seed.deserialize(field).map(Key::Field)
    }
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
    let delay = StageConfig::Delay(DelayConfig {
        delay: Some(Duration(SimDuration::from_millis(20))),
        ..DelayConfig::default()
    });
    let mut stage = vec![StageSpec::new(delay)];
    if which == "fwd" {
        let rate = StageConfig::Rate(RateConfig {
            rate: Some(Rate(10_000_000)),
            queue: Some(100),
            ..RateConfig::default()
        });
        stage.insert(0, StageSpec::new(rate));
    }
    PathSpec {
        stage,
        ..PathSpec::default()
    }
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

optional_fields! {
    /// The knobs of a path preset; a missing one keeps the preset's value.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct PathPresetTable {
        [name: String]
        /// IP-level service rate of the bearer.
        rate: Rate,
        /// Drop-tail buffer in front of the bearer (RNC for the downlink, UE for the uplink).
        buffer: Bytes,
        /// Fixed one-way delay.
        delay: Duration,
        /// RLC: chance of one more link round trip per packet.
        rlc_p: f64,
        /// RLC round trip.
        rlc_rtt: Duration,
        /// RLC residual SDU loss.
        rlc_loss: f64,
        /// Delivery stalls per second (0: none).
        stall_rate: f64,
        /// Median stall duration.
        stall_median: Duration,
        /// Log-normal sigma of stall durations.
        stall_sigma: f64,
        /// The downgraded bearer's IP-level rate: with it the rate follows the load (the RNC's
        /// traffic-volume allocation between `low_rate` and `rate`; 0: a fixed `rate`).
        low_rate: Rate,
        /// Upgrade when the buffer holds more than this (event 4a threshold) ...
        up_bytes: Bytes,
        /// ... for this long (time-to-trigger).
        up_after: Duration,
        /// Downgrade when the buffer has held at most `down_bytes` (event 4b; default 0, empty) ...
        down_bytes: Bytes,
        /// ... for this long.
        down_after: Duration,
        /// From a decision to the new rate (radio-bearer reconfiguration).
        switch_delay: Duration,
        /// The buffer is sized in time: at the low rate it holds `buffer · low_rate / rate`.
        scale_buffer: bool,
        /// The buffer is the sender's own and pushes back instead of dropping (`umts-uplink`: the
        /// UE, a modem flow-controlling the computer that sends).
        backpressure: bool,
        /// `leo-lms`: the drop-tail queue in packets in front of the link.
        queue: i64,
        /// `leo-lms`: the HARQ link's reference SNR, dB.
        snr: f64,
        /// `leo-lms`: the link-layer reordering buffer after HARQ.
        reorder_buffer: bool,
        /// `leo-lms`, `leo-return`: the seed of the LEO delay trace.
        leo_seed: u64,
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

/// What a path's `preset` expands into.
pub trait PathPresetStages {
    /// Refuses a knob the expanded preset would ignore.
    fn check_inert_knobs(&self, own: &PathPresetTable, at: &str) -> Result<()>;
    /// The stages the preset stands for.
    fn stages(&self, at: &str) -> Result<Vec<StageSpec>>;
}

impl PathPresetStages for PathPreset {
    /// Refuses a knob that `own` (the path's own preset table, before the scenario's
    /// `[preset.NAME]` defaults fill it) sets but that the expanded preset ignores: a stall
    /// knob when the stall rate is 0 (no stall stage), a load-driven rate knob without
    /// `low_rate` (the rate is fixed). A knob that comes from the defaults table is not
    /// refused: it is meant for the paths that do use it.
    fn check_inert_knobs(&self, own: &PathPresetTable, at: &str) -> Result<()> {
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
    fn stages(&self, at: &str) -> Result<Vec<StageSpec>> {
        let t = &self.table;
        let field = |f: &str| {
            if self.named {
                at.to_string()
            } else {
                format!("{at}.{f}")
            }
        };
        // An error of a generated stage (checked at "") names the preset's knob: `knobs` maps
        // the stage's fields to knobs, the rest to `other`.
        let knob_error = |e: ScenarioError, knobs: &[(&str, &str)], other: &str| {
            let knob = knobs
                .iter()
                .find(|(f, _)| e.field == *f)
                .map_or(other, |k| k.1);
            ScenarioError::new(field(knob), e.message)
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
        let knobs: &[&str] = match t.name.as_str() {
            "leo-lms" => &LEO_LMS,
            "leo-return" => &["leo_seed"],
            _ => &UMTS,
        };
        if PATH_PRESETS.contains(&t.name.as_str()) {
            if let Some(k) = t.set_fields().into_iter().find(|k| !knobs.contains(k)) {
                return Err(ScenarioError::new(
                    format!("{at}.{k}"),
                    format!("not a knob of {} (its knobs: {})", t.name, knobs.join(", ")),
                ));
            }
        }
        if t.name.starts_with("leo-") {
            return leo_stages(self, at);
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
        let top = t.rate.unwrap_or(Rate(d.rate));
        let low = t.low_rate.map_or(d.low_rate, |r| r.0);
        let stall_rate = t.stall_rate.unwrap_or(d.stall_rate);
        let stalls = stall_rate > 0.0;
        let ms =
            |v: Option<Duration>, def: u64| v.unwrap_or(Duration(SimDuration::from_millis(def)));
        let adapt = (low > 0).then(|| AdaptConfig {
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
                let knobs = [
                    (".adapt.up_bytes", "up_bytes"),
                    (".adapt.down_bytes", "down_bytes"),
                ];
                knob_error(e, &knobs, "low_rate")
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
        let rate = RateConfig {
            rate: adapt.is_none().then_some(top),
            adapt,
            queue_bytes: Some(Bytes(buffer)),
            backpressure: Some(t.backpressure.unwrap_or(d.backpressure)),
            ..RateConfig::default()
        };
        let rlc = RlcConfig {
            p: t.rlc_p,
            rlc_rtt: t.rlc_rtt,
            loss: Some(t.rlc_loss.unwrap_or(d.rlc_loss)),
        };
        rlc.params("")
            .map_err(|e| knob_error(e, &[(".p", "rlc_p"), (".rlc_rtt", "rlc_rtt")], "rlc_loss"))?;
        let stall = StallConfig {
            stall_rate: Some(stall_rate),
            median: t.stall_median,
            sigma_ln: t.stall_sigma,
        };
        stall.params("").map_err(|e| {
            let knobs = [(".stall_rate", "stall_rate"), (".median", "stall_median")];
            knob_error(e, &knobs, "stall_sigma")
        })?;
        let delay = DelayConfig {
            delay: Some(
                t.delay
                    .unwrap_or(Duration(SimDuration::from_millis(d.delay_ms))),
            ),
            ..DelayConfig::default()
        };
        let mut out = vec![StageConfig::Rate(rate), StageConfig::Rlc(rlc)];
        if stalls {
            out.push(StageConfig::Stall(stall));
        }
        out.push(StageConfig::Delay(delay));
        Ok(out.into_iter().map(StageSpec::new).collect())
    }
}

/// `leo-lms` (paper 001 §III's forward path: rate, queue, the LEO constellation's delay,
/// HARQ over the LMS channel) and `leo-return` (the error-free return path: the LEO delay
/// of another seed).
fn leo_stages(preset: &PathPreset, at: &str) -> Result<Vec<StageSpec>> {
    let t = &preset.table;
    let field = |f: &str| {
        if preset.named {
            at.to_string()
        } else {
            format!("{at}.{f}")
        }
    };
    let forward = t.name == "leo-lms";
    let leo = StageSpec::new(StageConfig::Delay(DelayConfig {
        leo: Some(LeoConfig {
            seed: Some(t.leo_seed.unwrap_or(if forward { 1 } else { 2 })),
            ..LeoConfig::default()
        }),
        ..DelayConfig::default()
    }));
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
    let rate = StageConfig::Rate(RateConfig {
        rate: Some(t.rate.unwrap_or(Rate(40_000_000))),
        queue: Some(queue),
        ..RateConfig::default()
    });
    let harq = StageConfig::Harq(HarqConfig {
        snr: Some(snr),
        reorder_buffer: Some(t.reorder_buffer.unwrap_or(false)),
        ..HarqConfig::default()
    });
    Ok(vec![StageSpec::new(rate), leo, StageSpec::new(harq)])
}
