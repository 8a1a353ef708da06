//! The scenario file: TOML, deserialised into these types, validated, defaults filled.
//! The simulator (`spikelab-sim`) and the emulator (`spikelab-emu`) both read scenarios here,
//! so the emulator does not depend on the simulator; [`build_stage`] makes a path's stages
//! for both.
//!
//! Every error is a [`ScenarioError`] naming the offending field by its path in the file
//! (`flow[0].tcp.rto.min: must be > 0, got 0ms`). The format is documented in
//! `docs/scenario.md`. By section: [`paths`] (a path's stages, each a stage type's own
//! configuration defined beside its model in `spikelab-net`; path presets; the default link),
//! [`flows`] (apps, protocols, destinations), [`tcp`] (TCP options, RTO estimators, detectors),
//! [`cc`] (the congestion control, each algorithm's own configuration defined beside its model
//! in `spikelab-tcp`), [`sctp`] (the `[flow.sctp]` table defined beside its model in
//! `spikelab-sctp`), [`profiles`] (`linux`, `ns2`: data tables of defaults),
//! [`overrides`] (`--set key=value`); the `[sweep]` table is read by the Python sweep runner.

mod cc;
mod flows;
mod overrides;
mod paths;
mod profiles;
mod sctp;
mod strict;
mod tcp;
#[cfg(test)]
mod tests;

pub use cc::*;
pub use flows::*;
pub use overrides::apply_override;
pub use paths::*;
pub use profiles::*;
pub use sctp::*;
pub use tcp::*;

use serde::{Deserialize, Serialize};
use spikelab_core::units::Duration;
use spikelab_core::SimDuration;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// A problem with a scenario, with the path of the field it concerns.
pub use spikelab_core::config::ConfigError as ScenarioError;
use spikelab_core::config::{check, num};

type Result<T> = std::result::Result<T, ScenarioError>;

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceLevel {
    /// Only the per-flow summary (`runs`).
    Summary,
    /// Summary and the time series.
    Timeseries,
    /// Everything, packet events included.
    Packets,
}

impl TraceLevel {
    pub fn parse(s: &str) -> Result<TraceLevel> {
        match s {
            "summary" => Ok(TraceLevel::Summary),
            "timeseries" => Ok(TraceLevel::Timeseries),
            "packets" => Ok(TraceLevel::Packets),
            _ => Err(ScenarioError::new(
                "trace",
                format!("unknown trace level {s:?} (use summary, timeseries or packets)"),
            )),
        }
    }
}

fn default_duration() -> Duration {
    Duration(SimDuration::from_secs(20))
}
fn default_seed() -> u64 {
    1
}
/// Summary by default: the only level whose memory does not grow with simulated time (a
/// 3,600 s run stays near the interpreter's own footprint). Time series and packet events are
/// asked for with `trace` (or `--trace`); the packets trace is bounded by `max_packets_rows`.
fn default_trace() -> TraceLevel {
    TraceLevel::Summary
}
fn default_max_packets_rows() -> u64 {
    10_000_000
}
fn default_figure_flows() -> i64 {
    8
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSpec {
    /// Simulated time.
    #[serde(default = "default_duration")]
    pub duration: Duration,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_trace")]
    pub trace: TraceLevel,
    /// Upper bound on the rows of the packets trace; a run that would exceed it stops with an
    /// error naming this field (about 70 bytes per row while the run lasts).
    #[serde(default = "default_max_packets_rows")]
    pub max_packets_rows: u64,
    /// How many flows get figures of their own; the others appear only in the all-flows figures.
    #[serde(default = "default_figure_flows")]
    pub figure_flows: i64,
    /// Observation points of the simulated pcapng captures (`true`: sender and receiver;
    /// `false` or absent: none). Written only by a run with a results directory.
    #[serde(default)]
    pub pcap: PcapPoints,
    /// Bytes of each frame a capture keeps (Ethernet, IPv4 and TCP headers with options fit in
    /// 94; the rest is the zero payload); the original length is always recorded.
    #[serde(default = "default_pcap_snaplen")]
    pub pcap_snaplen: u32,
}

fn default_pcap_snaplen() -> u32 {
    128
}

/// The `sim.pcap` setting, normalised to a list of observation points: `"sender"`,
/// `"receiver"` or `"path.NAME.stage[K]"` (the boundary before stage K of path NAME; K equal
/// to the path's stage count is its exit).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct PcapPoints(pub Vec<String>);

impl<'de> Deserialize<'de> for PcapPoints {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = PcapPoints;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "true, false or an array of observation points (\"sender\", \"receiver\", \"path.NAME.stage[K]\")",
                )
            }
            fn visit_bool<E: serde::de::Error>(
                self,
                v: bool,
            ) -> std::result::Result<PcapPoints, E> {
                Ok(if v {
                    PcapPoints(vec!["sender".into(), "receiver".into()])
                } else {
                    PcapPoints::default()
                })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<PcapPoints, A::Error> {
                let mut out = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    out.push(s);
                }
                Ok(PcapPoints(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// One observation point of a capture, resolved against the scenario's paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PcapPoint {
    /// At the sender: data leaving, ACKs arriving.
    Sender,
    /// At the receiver: data arriving, ACKs leaving.
    Receiver,
    /// Packets crossing the boundary before stage `stage` of `path` (its exit when `stage` is
    /// the path's stage count).
    Boundary { path: String, stage: usize },
}

impl PcapPoint {
    /// Parses `"sender"`, `"receiver"` or `"path.NAME.stage[K]"`.
    pub fn parse(s: &str) -> Option<PcapPoint> {
        match s {
            "sender" => return Some(PcapPoint::Sender),
            "receiver" => return Some(PcapPoint::Receiver),
            _ => {}
        }
        let rest = s.strip_prefix("path.")?.strip_suffix(']')?;
        let (name, k) = rest.rsplit_once(".stage[")?;
        if name.is_empty() || k.is_empty() || !k.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(PcapPoint::Boundary {
            path: name.to_string(),
            stage: k.parse().ok()?,
        })
    }

    /// The capture's file stem: `sender`, `receiver`, `NAME.stageK`.
    pub fn file_stem(&self) -> String {
        match self {
            PcapPoint::Sender => "sender".into(),
            PcapPoint::Receiver => "receiver".into(),
            PcapPoint::Boundary { path, stage } => format!("{path}.stage{stage}"),
        }
    }
}

impl Default for SimSpec {
    fn default() -> Self {
        SimSpec {
            duration: default_duration(),
            seed: default_seed(),
            trace: default_trace(),
            max_packets_rows: default_max_packets_rows(),
            figure_flows: default_figure_flows(),
            pcap: PcapPoints::default(),
            pcap_snaplen: default_pcap_snaplen(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub sim: SimSpec,
    #[serde(default)]
    pub path: BTreeMap<String, PathSpec>,
    #[serde(default)]
    pub flow: Vec<FlowSpec>,
    /// `[preset.NAME]`: this scenario's defaults for a path preset's knobs, used wherever the
    /// preset is expanded unless the path's own `preset` table sets the knob (a calibration
    /// changes one table, or `--set preset.umts-downlink.buffer=55KB`). Kept out of the resolved
    /// scenario, which lists the stages the presets expanded into.
    #[serde(default, skip_serializing)]
    pub preset: BTreeMap<String, toml::Table>,
    /// The `[sweep]` table: read by the Python sweep runner (grid, replications); a single run
    /// ignores it. Kept out of the resolved scenario.
    #[serde(default, skip_serializing)]
    pub sweep: Option<toml::Value>,
}

// ---- parsing ---------------------------------------------------------------------------------

/// Parses `text`, applies `overrides` (`key=value`), validates and fills defaults.
/// `base_dir` resolves relative trace-file paths.
pub fn parse(text: &str, overrides: &[String], base_dir: &Path) -> Result<Scenario> {
    from_value(overridden(text, overrides)?, base_dir)
}

/// The scenario of `value` (overrides applied): profiles, checks, defaults.
fn from_value(mut value: toml::Value, base_dir: &Path) -> Result<Scenario> {
    apply_profiles(&mut value)?;
    cc::check_cc_tables(&value)?;
    let mut sc: Scenario =
        serde_path_to_error::deserialize(strict::Strict(value)).map_err(|e| field_error(e, ""))?;
    sc.resolve(base_dir)?;
    Ok(sc)
}

/// Parses as [`parse`] does, for the emulator: a TCP flow's congestion control that the
/// simulator does not model is read as `reno` and returned by flow index (`None` where the
/// scenario's own is kept), so that the kernel can run it. The same file with the override
/// `flow[i].cc` set to reno for each such flow parses to the same scenario.
pub fn parse_for_kernel(
    text: &str,
    overrides: &[String],
    base_dir: &Path,
) -> Result<(Scenario, Vec<Option<String>>)> {
    let mut value = overridden(text, overrides)?;
    let kernel_only = cc::take_kernel_only(&mut value);
    Ok((from_value(value, base_dir)?, kernel_only))
}

/// A deserialisation error of the table at `at` ("" for the whole file) as one line naming the
/// field, in TOML's words.
pub(crate) fn field_error(
    e: serde_path_to_error::Error<toml::de::Error>,
    at: &str,
) -> ScenarioError {
    let inner = e.path().to_string();
    let inner = if inner == "." { String::new() } else { inner };
    let field = match (at.is_empty(), inner.is_empty()) {
        (true, _) => inner,
        (false, true) => at.to_string(),
        (false, false) => format!("{at}.{inner}"),
    };
    let msg = e.inner().to_string().replace('\n', " ");
    // toml appends " in `a.b.c`"; the field path is already in front.
    let msg = match msg.rfind(" in `") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    let msg = match choices_of(&field) {
        // toml reports a non-string for an enum field as "invalid type: unit variant,
        // expected string only": say what the field takes instead.
        Some(names) if msg.contains("unit variant") => {
            format!("must be one of {names} (a string)")
        }
        // An enum field choices_of does not list yet: still no serde words.
        None if msg.contains("unit variant") => "must be a string".to_string(),
        _ => plain_words(msg.trim()),
    };
    // `[flow]` where `[[flow]]` was meant: an array of tables takes two brackets.
    let msg = if msg == "invalid type: table, expected an array" && !field.is_empty() {
        // The TOML header drops the indexes: flow[0].paths is under [[flow.paths]].
        let mut header = String::new();
        let mut depth = 0;
        for c in field.chars() {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                c if depth == 0 => header.push(c),
                _ => {}
            }
        }
        format!("{msg} (an array of tables: write [[{header}]], one such header per entry)")
    } else {
        msg
    };
    let msg = preset_knob_hint(&field, msg);
    ScenarioError::new(field, msg)
}

/// A stage preset's knob written beside `preset` (`p_max = 0.5` next to `preset =
/// "wlan-walkaway"`): serde lists the stage's fields; say where the knob goes instead.
fn preset_knob_hint(field: &str, msg: String) -> String {
    let Some((table, key)) = field.rsplit_once('.') else {
        return msg;
    };
    let unknown = format!("unknown field `{key}`");
    let knob = paths::DELAY_PRESET_KNOBS.contains(&key) || paths::LOSS_PRESET_KNOBS.contains(&key);
    if !knob || !table.ends_with(']') || !msg.starts_with(&unknown) {
        return msg;
    }
    if !table
        .rsplit('.')
        .next()
        .is_some_and(|t| t.starts_with("stage["))
    {
        return msg;
    }
    format!(
        "{unknown}: it is a knob of a stage preset and goes in the preset's table, e.g. \
         preset = {{ name = \"wlan-walkaway\", {key} = ... }} (docs/scenario.md)"
    )
}

/// What each flow's profile resolved to, key by key (after `overrides`): the values `parse`
/// fills in, and the keys the file sets itself, which win. Empty without profiles.
pub fn profile_notes(text: &str, overrides: &[String]) -> Result<Vec<ProfileNote>> {
    apply_profiles(&mut overridden(text, overrides)?)
}

/// The scenario's TOML with `overrides` (`key=value`) applied.
fn overridden(text: &str, overrides: &[String]) -> Result<toml::Value> {
    // A byte-order mark (Windows editors write one) is not TOML: read the text after it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut value: toml::Value = toml::from_str(text).map_err(|e| toml_error(&e, text))?;
    for o in overrides {
        apply_override(&mut value, o)?;
    }
    Ok(value)
}

/// The names a field of a named kind accepts, by the field's last path segment.
fn choices_of(field: &str) -> Option<&'static str> {
    let last = field.rsplit('.').next().unwrap_or(field);
    let last = last.split('[').next().unwrap_or(last);
    let second = field.rsplit('.').nth(1).unwrap_or("");
    Some(match (second, last) {
        (_, "variant") => "reno, newreno, sack",
        (_, "trace") if field.starts_with("sim.") => "summary, timeseries, packets",
        ("app", "type") => "bulk, file",
        (_, "model") => "bernoulli, gilbert_elliott, profile, deterministic",
        (_, "estimator") => "rfc6298, linux, ns2",
        (_, "ssthresh_basis") => "flight, cwnd",
        (_, "frto") => "auto, basic, sack, off",
        (_, "response") => "none, eifel, undo",
        (_, "protocol") => "tcp, sctp",
        (_, "combining") => "ir, chase",
        (_, "doppler") => "gaussian, jakes",
        _ => return None,
    })
}

/// Rewrites serde's wording in terms of TOML, without Rust type names (`u64`, `struct
/// FlowSpec`, `sequence`) that mean nothing to the author of a scenario file.
fn plain_words(msg: &str) -> String {
    let mut out = msg.to_string();
    for (from, to) in [
        ("expected u64", "expected an integer >= 0"),
        ("expected u32", "expected an integer >= 0"),
        ("expected u16", "expected an integer >= 0"),
        ("expected usize", "expected an integer >= 0"),
        ("expected i64", "expected an integer"),
        ("expected i32", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected a table"),
        ("invalid type: sequence", "invalid type: array"),
        ("invalid type: map", "invalid type: table"),
        ("invalid type: floating point", "invalid type: number"),
        ("invalid value: floating point", "invalid value: number"),
        ("invalid type: unit value", "invalid type: empty value"),
    ] {
        out = out.replace(from, to);
    }
    // "expected struct FlowSpec" / "expected enum X" / "expected tuple struct X" -> a table.
    for kind in [
        "expected struct ",
        "expected tuple struct ",
        "expected enum ",
    ] {
        while let Some(i) = out.find(kind) {
            let rest = &out[i + kind.len()..];
            let end = rest
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(rest.len());
            let what = if kind == "expected enum " {
                "expected a string"
            } else {
                "expected a table"
            };
            out = format!("{}{what}{}", &out[..i], &rest[end..]);
        }
    }
    // A table's fields given as an array (`adapt = []`): serde reads the array as the struct's
    // fields in order ("invalid length 0, expected struct X with 8 elements").
    if out.starts_with("invalid length ") && out.contains("expected a table with ") {
        out = "invalid type: array, expected a table".to_string();
    }
    out
}

fn toml_error(e: &toml::de::Error, text: &str) -> ScenarioError {
    let msg = e.message().replace('\n', " ");
    // Line and column (from 1) of the error's start, as an editor shows them.
    let loc = e
        .span()
        .map(|s| {
            let before = &text.as_bytes()[..s.start.min(text.len())];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            let start = before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let col = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
            format!(" (line {line}, column {col})")
        })
        .unwrap_or_default();
    ScenarioError::new("", format!("not valid TOML: {msg}{loc}"))
}

// ---- validation ------------------------------------------------------------------------------

/// A path's or a stage's name: one or more ASCII letters, digits, `_` or `-`. Names are parts
/// of `--set` keys (`path.NAME.STAGE.key`, split at dots), of the runs columns
/// (`drops_PATH_STAGE`) and of capture points (`path.NAME.stage[K]`). `what` starts the
/// message ("a path's name ", or "" when the field is the name itself).
fn check_name(name: &str, field: String, what: &str) -> Result<()> {
    check(
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        field,
        format!(
            "{what}must be one or more ASCII letters, digits, _ or - (it is part of --set keys \
             such as path.NAME.KEY and of the drops_PATH_STAGE columns), got {name:?}"
        ),
    )
}

/// The default path a flow gets for `role` (`"fwd"` or `"rev"`) when the file does not
/// declare it, in words.
fn default_path_words(role: &str) -> &'static str {
    if role == "fwd" {
        "a 10 Mbit/s rate stage with a 100-packet queue, then 20 ms of delay"
    } else {
        "20 ms of delay, no rate limit"
    }
}

fn positive_int(v: i64, field: &str, max: i64) -> Result<()> {
    check(v >= 1, field, format!("must be >= 1, got {v}"))?;
    check(v <= max, field, format!("must be <= {max}, got {v}"))
}

impl Scenario {
    fn resolve(&mut self, base_dir: &Path) -> Result<()> {
        check(
            self.sim.duration.0 > SimDuration::ZERO,
            "sim.duration",
            "must be > 0",
        )?;
        check(
            self.sim.seed <= i64::MAX as u64,
            "sim.seed",
            format!("must be <= {}, got {}", i64::MAX, self.sim.seed),
        )?;
        check(
            self.sim.max_packets_rows >= 1,
            "sim.max_packets_rows",
            "must be >= 1",
        )?;
        positive_int(self.sim.figure_flows, "sim.figure_flows", 100_000)?;
        check(
            !self.flow.is_empty(),
            "flow",
            "at least one [[flow]] is required",
        )?;
        // `paths` is for SCTP flows: checked before the paths are looked up, which would
        // otherwise name a TCP flow's fwd (the default "fwd" need not exist then).
        for (i, f) in self.flow.iter().enumerate() {
            if f.paths.is_empty() {
                continue;
            }
            if f.protocol == Protocol::Tcp {
                return Err(ScenarioError::new(
                    format!("flow[{i}].paths"),
                    "destinations are for SCTP flows (protocol = \"sctp\"); a TCP flow takes \
                     fwd and rev",
                ));
            }
        }
        // The paths the file declares: a default path ("fwd", "rev") it leaves out stands in
        // only in its own role (below).
        let declared: std::collections::BTreeSet<String> = self.path.keys().cloned().collect();
        // The default path names may be left out: they get the default link.
        for f in &self.flow {
            for d in f.destinations() {
                for (which, p) in [("fwd", &d.fwd), ("rev", &d.rev)] {
                    if *p == which && !self.path.contains_key(p) {
                        self.path.insert(p.clone(), default_path(which));
                    }
                }
            }
        }
        paths::check_preset_defaults(&self.preset)?;
        for (name, path) in self.path.iter_mut() {
            check_name(name, format!("path.{name:?}"), "a path's name ")?;
            if let Some(preset) = path.preset.take() {
                let at = format!("path.{name}.preset");
                let own = preset.table.clone();
                let preset = paths::with_defaults(preset, &self.preset, &at)?;
                preset.check_inert_knobs(&own, &at)?;
                let mut stages = preset.stages(&at)?;
                stages.append(&mut path.stage);
                path.stage = stages;
            }
            check(
                path.stage.len() <= paths::MAX_STAGES,
                format!("path.{name}.stage"),
                format!(
                    "at most {} stages in a path, got {}",
                    paths::MAX_STAGES,
                    path.stage.len()
                ),
            )?;
            for (i, st) in path.stage.iter_mut().enumerate() {
                st.config
                    .resolve(&format!("path.{name}.stage[{i}]"), &ResolveCtx { base_dir })?;
                check(
                    i == 0 || !st.config.own_queue(),
                    format!("path.{name}.stage[{i}].backpressure"),
                    "only a path's first stage can push back on the sender (it stands for the \
                     sender's own interface queue)",
                )?;
            }
            let stages: Vec<&StageConfig> = path.stage.iter().map(|s| &s.config).collect();
            for (index, st) in stages.iter().enumerate() {
                let ctx = PathCtx {
                    path: name,
                    stages: &stages,
                    index,
                    seed: 0,
                };
                st.check_in_path(&format!("path.{name}.stage[{index}]"), &ctx)?;
            }
            let mut seen = std::collections::BTreeSet::new();
            for (i, st) in path.stage.iter_mut().enumerate() {
                if let Some(n) = &st.name {
                    check_name(n, format!("path.{name}.stage[{i}].name"), "")?;
                }
                let base = st
                    .name
                    .clone()
                    .unwrap_or_else(|| st.kind_name().to_string());
                let mut n = base.clone();
                let mut k = 2;
                while seen.contains(&n) {
                    if st.name.is_some() {
                        return Err(ScenarioError::new(
                            format!("path.{name}.stage[{i}].name"),
                            format!("duplicate stage name {base:?} in path {name:?}"),
                        ));
                    }
                    n = format!("{base}{k}");
                    k += 1;
                }
                seen.insert(n.clone());
                st.name = Some(n);
            }
        }
        // Each stage's drops get a column `drops_<path>_<stage>`; two stages must not share one
        // (path "a_b" stage "c" and path "a" stage "b_c" would).
        let mut columns: BTreeMap<String, String> = BTreeMap::new();
        for (name, path) in &self.path {
            for (i, st) in path.stage.iter().enumerate() {
                let stage = st.name.as_deref().unwrap_or_default();
                let column = format!("drops_{name}_{stage}");
                let here = format!("path.{name}.stage[{i}]");
                if let Some(other) = columns.insert(column.clone(), here.clone()) {
                    return Err(ScenarioError::new(
                        format!("{here}.name"),
                        format!(
                            "its drops column {column:?} would be the same as {other}'s; \
                             rename the stage or the path"
                        ),
                    ));
                }
            }
        }
        // `next` names a defined path, and following it always ends (no loop).
        for (name, path) in &self.path {
            let Some(first) = &path.next else { continue };
            let field = format!("path.{name}.next");
            let mut chain = vec![name.as_str()];
            let mut at = Some(first);
            while let Some(p) = at {
                let Some(spec) = self.path.get(p) else {
                    let known: Vec<&str> = self.path.keys().map(|s| s.as_str()).collect();
                    return Err(ScenarioError::new(
                        field,
                        format!("no path named {p:?} (defined: {})", known.join(", ")),
                    ));
                };
                if chain.contains(&p.as_str()) {
                    chain.push(p);
                    return Err(ScenarioError::new(
                        field,
                        format!("the paths form a loop: {}", chain.join(" -> ")),
                    ));
                }
                chain.push(p);
                if chain.len() > paths::MAX_PATH_CHAIN {
                    return Err(ScenarioError::new(
                        field,
                        format!(
                            "a chain of at most {} paths, got more: {} -> ...",
                            paths::MAX_PATH_CHAIN,
                            chain[..4].join(" -> ")
                        ),
                    ));
                }
                at = spec.next.as_ref();
            }
        }
        for (i, f) in self.flow.iter_mut().enumerate() {
            // An SCTP flow's `paths` replace fwd/rev, which then name its first destination.
            if f.protocol == Protocol::Sctp && !f.paths.is_empty() {
                let first = f.paths[0].clone();
                for (which, given, default) in [
                    ("fwd", &mut f.fwd, &first.fwd),
                    ("rev", &mut f.rev, &first.rev),
                ] {
                    check(
                        given == which || given == default,
                        format!("flow[{i}].{which}"),
                        "an SCTP flow with paths names its destinations there; leave fwd and rev out",
                    )?;
                    *given = default.clone();
                }
            }
            let mut ends: Vec<(String, &String, &str)> = Vec::new();
            if f.protocol == Protocol::Sctp && !f.paths.is_empty() {
                for (k, d) in f.paths.iter().enumerate() {
                    ends.push((format!("flow[{i}].paths[{k}].fwd"), &d.fwd, "fwd"));
                    ends.push((format!("flow[{i}].paths[{k}].rev"), &d.rev, "rev"));
                }
            } else {
                ends.push((format!("flow[{i}].fwd"), &f.fwd, "fwd"));
                ends.push((format!("flow[{i}].rev"), &f.rev, "rev"));
            }
            for (field, p, role) in ends {
                // The two default paths are not mirror images: the default rev has no rate
                // limit, so data sent on it would meet no bottleneck.
                let other = if role == "fwd" { "rev" } else { "fwd" };
                check(
                    p != other || declared.contains(p),
                    &field,
                    format!(
                        "the file declares no path \"{other}\", and the default {other} path \
                         ({}) stands in only as a flow's {other}: declare [path.{other}] to use \
                         it as a {role} path",
                        default_path_words(other)
                    ),
                )?;
                if !self.path.contains_key(p) {
                    // The default paths need no declaration in their own role.
                    let mut known: std::collections::BTreeSet<&str> =
                        self.path.keys().map(|s| s.as_str()).collect();
                    known.insert(role);
                    let known: Vec<&str> = known.into_iter().collect();
                    return Err(ScenarioError::new(
                        field,
                        format!("no path named {p:?} (defined: {})", known.join(", ")),
                    ));
                }
            }
            f.validate(&format!("flow[{i}]"))?;
            check(
                f.start.0 < self.sim.duration.0,
                format!("flow[{i}].start"),
                format!(
                    "must be before sim.duration ({} s), got {} s: the flow would never send",
                    self.sim.duration.0.as_secs_f64(),
                    f.start.0.as_secs_f64()
                ),
            )?;
            check(
                f.start_jitter.is_zero() || f.start.0 + f.start_jitter.0 <= self.sim.duration.0,
                format!("flow[{i}].start_jitter"),
                format!(
                    "start + start_jitter must be at most sim.duration ({} s), got {} s + {} s",
                    self.sim.duration.0.as_secs_f64(),
                    f.start.0.as_secs_f64(),
                    f.start_jitter.0.as_secs_f64()
                ),
            )?;
        }
        self.check_adapt_packet_queues()?;
        self.validate_pcap()
    }

    /// A load-driven rate behind a queue counted in packets can step up: `up_bytes` below what
    /// the queue holds at the lowest rate, in packets of the largest size a flow sends on the
    /// path (a path another continues into carries that one's packets too). A path no flow
    /// reaches carries nothing and is not checked. (`queue_bytes` is checked with the stage.)
    fn check_adapt_packet_queues(&self) -> Result<()> {
        let mut largest: BTreeMap<&str, u64> = BTreeMap::new();
        for f in &self.flow {
            let (data, reply) = f.largest_packets();
            for d in f.destinations() {
                for (start, size) in [(d.fwd, data), (d.rev, reply)] {
                    // `next` chains end (checked above): follow one to its end.
                    let mut at = self.path.get_key_value(start.as_str());
                    let mut hops = 0;
                    while let Some((name, spec)) = at {
                        let e = largest.entry(name.as_str()).or_insert(0);
                        *e = (*e).max(size);
                        hops += 1;
                        if hops > paths::MAX_PATH_CHAIN {
                            break;
                        }
                        at = spec.next.as_ref().and_then(|n| self.path.get_key_value(n));
                    }
                }
            }
        }
        for (name, path) in &self.path {
            let Some(&size) = largest.get(name.as_str()) else {
                continue;
            };
            let stages: Vec<&StageConfig> = path.stage.iter().map(|s| &s.config).collect();
            for (index, st) in stages.iter().enumerate() {
                if let StageConfig::Rate(r) = st {
                    let ctx = PathCtx {
                        path: name,
                        stages: &stages,
                        index,
                        seed: 0,
                    };
                    r.check_packets_reachable(&format!("path.{name}.stage[{index}]"), &ctx, size)?;
                }
            }
        }
        Ok(())
    }

    /// `sim.pcap` names known observation points, each once; `sim.pcap_snaplen` holds the
    /// headers.
    fn validate_pcap(&self) -> Result<()> {
        let snap = self.sim.pcap_snaplen;
        check(
            (96..=262_144).contains(&snap),
            "sim.pcap_snaplen",
            format!("must be in [96, 262144] bytes (the headers need 94), got {snap}"),
        )?;
        let mut stems = std::collections::BTreeSet::new();
        for (i, s) in self.sim.pcap.0.iter().enumerate() {
            let field = format!("sim.pcap[{i}]");
            let Some(point) = PcapPoint::parse(s) else {
                return Err(ScenarioError::new(
                    field,
                    format!(
                        "unknown observation point {s:?}; use \"sender\", \"receiver\" or \"path.NAME.stage[K]\""
                    ),
                ));
            };
            if let PcapPoint::Boundary { path, stage } = &point {
                let Some(spec) = self.path.get(path) else {
                    let known: Vec<&str> = self.path.keys().map(|s| s.as_str()).collect();
                    return Err(ScenarioError::new(
                        field,
                        format!("no path named {path:?} (defined: {})", known.join(", ")),
                    ));
                };
                let n = spec.stage.len();
                check(
                    n > 0,
                    &field,
                    format!("path {path:?} has no stages: capture at \"sender\" or \"receiver\""),
                )?;
                check(
                    *stage <= n,
                    &field,
                    format!(
                        "path {path:?} has {n} stages: its boundaries are stage[0] (entry) to stage[{n}] (exit), got stage[{stage}]"
                    ),
                )?;
            }
            check(
                stems.insert(point.file_stem()),
                &field,
                format!("{s:?} is listed twice"),
            )?;
        }
        Ok(())
    }
}
