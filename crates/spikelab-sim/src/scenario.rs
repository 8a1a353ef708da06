//! The scenario file: TOML, deserialised into these types, validated, defaults filled.
//!
//! Every error is a [`ScenarioError`] naming the offending field by its path in the file
//! (`flow[0].tcp.rto.min: must be > 0, got 0ms`). The format is documented in
//! `docs/scenario.md`.

use crate::units::{Bytes, Duration, Rate};
use serde::{Deserialize, Serialize};
use spikelab_core::{SimDuration, SimTime};
use spikelab_net::{Profile, ProfileRow};
use spikelab_tcp::spurious::{DetectorKind, DetectorSet, FrtoVariant, Response, SpuriousConfig};
use spikelab_tcp::{RtoAlgorithm, RtoConfig, TcpConfig, Variant};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A problem with a scenario, with the path of the field it concerns.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    pub field: String,
    pub message: String,
}

impl ScenarioError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

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
}

impl Default for SimSpec {
    fn default() -> Self {
        SimSpec {
            duration: default_duration(),
            seed: default_seed(),
            trace: default_trace(),
            max_packets_rows: default_max_packets_rows(),
            figure_flows: default_figure_flows(),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StageKind {
    Rate,
    Delay,
    Loss,
}

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
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    #[serde(default)]
    pub stage: Vec<StageSpec>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppKind {
    Bulk,
    File,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    #[serde(rename = "type")]
    pub kind: AppKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Bytes>,
}

impl Default for AppSpec {
    fn default() -> Self {
        AppSpec {
            kind: AppKind::Bulk,
            size: None,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VariantSpec {
    Reno,
    NewReno,
    Sack,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EstimatorSpec {
    Rfc6298,
    Linux,
}

/// Which F-RTO algorithm `spurious = ["frto"]` runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FrtoSpec {
    /// SACK-enhanced (RFC 5682 §3) when SACK is on, basic (§2) otherwise: Linux `tcp_frto = 2`.
    Auto,
    Basic,
    Sack,
}

/// The response to a detected spurious retransmission.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseSpec {
    None,
    Eifel,
    Undo,
}

/// Names accepted in `spurious = [...]`.
pub const DETECTORS: &[&str] = &["eifel", "dsack", "frto"];

/// Names accepted in `profile = "..."`.
pub const PROFILES: &[&str] = &["linux"];

/// The `linux` profile: the keys it fills in `[flow.tcp]` when the file does not set them,
/// approximating a Linux sender's sysctl defaults (tcp_timestamps = 1, tcp_sack = 1,
/// tcp_dsack = 1, tcp_frto = 2, undo on, RTO minimum 200 ms). See docs/models.md for where it
/// differs from the kernel.
const LINUX_PROFILE: &str = r#"
variant = "sack"
timestamps = true
sack = true
dsack = true
clear_sack_on_rto = false
spurious = ["eifel", "dsack", "frto"]
frto = "auto"
response = "undo"
[rto]
estimator = "linux"
"#;

/// Fills the keys of each flow's `tcp.profile` that the file leaves out (explicit keys win).
fn apply_profiles(root: &mut toml::Value) -> Result<()> {
    let Some(flows) = root.get_mut("flow").and_then(|f| f.as_array_mut()) else {
        return Ok(());
    };
    for (i, flow) in flows.iter_mut().enumerate() {
        let Some(tcp) = flow.get_mut("tcp").and_then(|t| t.as_table_mut()) else {
            continue;
        };
        let Some(p) = tcp.get("profile") else {
            continue;
        };
        let field = format!("flow[{i}].tcp.profile");
        let name = p
            .as_str()
            .ok_or_else(|| ScenarioError::new(&field, "must be a string"))?;
        let defaults: toml::Table = match name {
            "linux" => toml::from_str(LINUX_PROFILE).expect("valid profile"),
            _ => {
                return Err(ScenarioError::new(
                    field,
                    format!("unknown profile {name:?} (known: {})", PROFILES.join(", ")),
                ))
            }
        };
        merge_missing(tcp, &defaults);
    }
    Ok(())
}

fn merge_missing(into: &mut toml::Table, defaults: &toml::Table) {
    for (k, v) in defaults {
        match (into.get_mut(k), v) {
            (None, _) => {
                into.insert(k.clone(), v.clone());
            }
            (Some(toml::Value::Table(sub)), toml::Value::Table(dsub)) => merge_missing(sub, dsub),
            _ => {}
        }
    }
}

fn d_ms(ms: u64) -> Duration {
    Duration(SimDuration::from_millis(ms))
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RtoSpec {
    #[serde(default = "RtoSpec::default_estimator")]
    pub estimator: EstimatorSpec,
    #[serde(default = "RtoSpec::default_alpha")]
    pub alpha: f64,
    #[serde(default = "RtoSpec::default_beta")]
    pub beta: f64,
    #[serde(default = "RtoSpec::default_k")]
    pub k: f64,
    #[serde(default = "RtoSpec::default_granularity")]
    pub granularity: Duration,
    /// Default: 1 s (rfc6298) or 200 ms (linux).
    #[serde(default)]
    pub min: Option<Duration>,
    /// Default: 60 s (rfc6298) or 120 s (linux).
    #[serde(default)]
    pub max: Option<Duration>,
    #[serde(default = "RtoSpec::default_initial")]
    pub initial: Duration,
}

impl RtoSpec {
    fn default_estimator() -> EstimatorSpec {
        EstimatorSpec::Rfc6298
    }
    fn default_alpha() -> f64 {
        0.125
    }
    fn default_beta() -> f64 {
        0.25
    }
    fn default_k() -> f64 {
        4.0
    }
    fn default_granularity() -> Duration {
        d_ms(1)
    }
    fn default_initial() -> Duration {
        d_ms(1000)
    }
}

impl Default for RtoSpec {
    fn default() -> Self {
        RtoSpec {
            estimator: Self::default_estimator(),
            alpha: Self::default_alpha(),
            beta: Self::default_beta(),
            k: Self::default_k(),
            granularity: Self::default_granularity(),
            min: None,
            max: None,
            initial: Self::default_initial(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpSpec {
    /// A named set of defaults for the keys not given (`linux`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    pub variant: VariantSpec,
    pub mss: i64,
    pub initial_window: i64,
    pub initial_ssthresh: Option<Bytes>,
    pub rwnd: Bytes,
    pub abc: bool,
    pub abc_limit: i64,
    pub dupthresh: i64,
    pub limited_transmit: bool,
    /// Default: false for reno, true for newreno and sack.
    pub block_fr_after_rto: Option<bool>,
    pub timestamps: bool,
    pub ts_tick: Duration,
    pub sack: bool,
    pub dsack: bool,
    pub clear_sack_on_rto: bool,
    pub delayed_ack: bool,
    pub delack_timeout: Duration,
    pub delack_segments: i64,
    /// Spurious-retransmission detectors, any of `eifel`, `dsack`, `frto`.
    pub spurious: Vec<String>,
    /// Which F-RTO algorithm runs.
    pub frto: FrtoSpec,
    /// What a detection changes.
    pub response: ResponseSpec,
    pub rto: RtoSpec,
}

impl Default for TcpSpec {
    fn default() -> Self {
        let c = TcpConfig::default();
        TcpSpec {
            profile: None,
            variant: VariantSpec::NewReno,
            mss: c.mss as i64,
            initial_window: c.initial_window as i64,
            initial_ssthresh: None,
            rwnd: Bytes(c.rwnd),
            abc: c.abc,
            abc_limit: c.abc_limit as i64,
            dupthresh: c.dupthresh as i64,
            limited_transmit: c.limited_transmit,
            block_fr_after_rto: None,
            timestamps: c.timestamps,
            ts_tick: Duration(c.ts_tick),
            sack: c.sack,
            dsack: c.dsack,
            clear_sack_on_rto: c.clear_sack_on_rto,
            delayed_ack: c.delayed_ack,
            delack_timeout: Duration(c.delack_timeout),
            delack_segments: c.delack_segments as i64,
            spurious: Vec::new(),
            frto: FrtoSpec::Auto,
            response: ResponseSpec::Undo,
            rto: RtoSpec::default(),
        }
    }
}

fn default_fwd() -> String {
    "fwd".into()
}
fn default_rev() -> String {
    "rev".into()
}
fn default_cc() -> String {
    "reno".into()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    #[serde(default = "default_fwd")]
    pub fwd: String,
    #[serde(default = "default_rev")]
    pub rev: String,
    #[serde(default)]
    pub start: Duration,
    #[serde(default)]
    pub app: AppSpec,
    #[serde(default = "default_cc")]
    pub cc: String,
    #[serde(default)]
    pub tcp: TcpSpec,
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
    /// The `[sweep]` table: read by the Python sweep runner (grid, replications); a single run
    /// ignores it. Kept out of the resolved scenario.
    #[serde(default, skip_serializing)]
    pub sweep: Option<toml::Value>,
}

impl Default for Duration {
    fn default() -> Self {
        Duration(SimDuration::ZERO)
    }
}

/// Congestion controls the simulator knows.
pub const CONGESTION_CONTROLS: &[&str] = &["reno"];

// ---- parsing ---------------------------------------------------------------------------------

/// Parses `text`, applies `overrides` (`key=value`), validates and fills defaults.
/// `base_dir` resolves relative trace-file paths.
pub fn parse(text: &str, overrides: &[String], base_dir: &Path) -> Result<Scenario> {
    let mut value: toml::Value = toml::from_str(text).map_err(|e| toml_error(&e))?;
    for o in overrides {
        apply_override(&mut value, o)?;
    }
    apply_profiles(&mut value)?;
    let mut sc: Scenario = serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        let field = if field == "." { String::new() } else { field };
        let msg = e.inner().to_string().replace('\n', " ");
        // toml appends " in `a.b.c`"; the field path is already in front.
        let msg = match msg.rfind(" in `") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        ScenarioError::new(field, plain_words(msg.trim()))
    })?;
    sc.resolve(base_dir)?;
    Ok(sc)
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
    out
}

fn toml_error(e: &toml::de::Error) -> ScenarioError {
    let msg = e.message().replace('\n', " ");
    let loc = e
        .span()
        .map(|s| format!(" (at byte {})", s.start))
        .unwrap_or_default();
    ScenarioError::new("", format!("not valid TOML: {msg}{loc}"))
}

/// Applies one `key=value` override to the TOML tree. A key is a dotted path; `name[i]` picks
/// one element of an array of tables, and a bare array name applies to every element. Inside a
/// path, a stage may be named by its `name` or its type when that is unambiguous:
/// `path.fwd.delay.profile` is `path.fwd.stage[i].profile` for the path's only delay stage.
pub fn apply_override(root: &mut toml::Value, spec: &str) -> Result<()> {
    let Some((key, raw)) = spec.split_once('=') else {
        return Err(ScenarioError::new(
            format!("--set {spec}"),
            "expected key=value",
        ));
    };
    let key = key.trim();
    let raw = raw.trim();
    if key.is_empty() {
        return Err(ScenarioError::new(format!("--set {spec}"), "empty key"));
    }
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let mut parts = Vec::new();
    for seg in key.split('.') {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => {
                let idx = rest
                    .strip_suffix(']')
                    .and_then(|i| i.parse::<usize>().ok())
                    .ok_or_else(|| ScenarioError::new(key, format!("bad index in {seg:?}")))?;
                (n, Some(idx))
            }
            None => (seg, None),
        };
        if name.is_empty() {
            return Err(ScenarioError::new(key, "empty key segment"));
        }
        parts.push((name.to_string(), index));
    }
    set_path(root, &parts, value, key)
}

fn set_path(
    node: &mut toml::Value,
    parts: &[(String, Option<usize>)],
    value: toml::Value,
    key: &str,
) -> Result<()> {
    let toml::Value::Table(table) = node else {
        return Err(ScenarioError::new(
            key,
            "cannot set a key inside a non-table value",
        ));
    };
    let (name, index) = &parts[0];
    let rest = &parts[1..];
    if index.is_none() && !table.contains_key(name.as_str()) {
        if let Some(toml::Value::Array(stages)) = table.get_mut("stage") {
            return set_stage_by_name(stages, name, rest, value, key);
        }
    }
    if rest.is_empty() && index.is_none() {
        table.insert(name.clone(), value);
        return Ok(());
    }
    let child = table
        .entry(name.clone())
        .or_insert_with(|| toml::Value::Table(Default::default()));
    match (child, index) {
        (toml::Value::Array(items), Some(i)) => {
            let n = items.len();
            let item = items.get_mut(*i).ok_or_else(|| {
                ScenarioError::new(
                    key,
                    format!("index {i} out of range ({name} has {n} entries)"),
                )
            })?;
            if rest.is_empty() {
                *item = value;
                Ok(())
            } else {
                set_path(item, rest, value, key)
            }
        }
        (toml::Value::Array(items), None) => {
            for item in items.iter_mut() {
                set_path(item, rest, value.clone(), key)?;
            }
            Ok(())
        }
        (_, Some(_)) => Err(ScenarioError::new(key, format!("{name} is not an array"))),
        (child, None) => set_path(child, rest, value, key),
    }
}

/// `path.NAME.STAGE.…`: the one stage whose `name` (or, without names, whose `type`) is `stage`.
fn set_stage_by_name(
    stages: &mut [toml::Value],
    stage: &str,
    rest: &[(String, Option<usize>)],
    value: toml::Value,
    key: &str,
) -> Result<()> {
    let field = |st: &toml::Value, f: &str| st.get(f).and_then(|v| v.as_str()).map(str::to_owned);
    let by_name: Vec<usize> = (0..stages.len())
        .filter(|&i| field(&stages[i], "name").as_deref() == Some(stage))
        .collect();
    let hits = if by_name.is_empty() {
        (0..stages.len())
            .filter(|&i| field(&stages[i], "type").as_deref() == Some(stage))
            .collect()
    } else {
        by_name
    };
    match hits.as_slice() {
        [i] if rest.is_empty() => {
            stages[*i] = value;
            Ok(())
        }
        [i] => set_path(&mut stages[*i], rest, value, key),
        [] => Err(ScenarioError::new(
            key,
            format!("no stage named or of type {stage:?} in this path"),
        )),
        many => Err(ScenarioError::new(
            key,
            format!(
                "{} stages of type {stage:?} in this path; name them or use stage[i]",
                many.len()
            ),
        )),
    }
}

// ---- validation ------------------------------------------------------------------------------

fn check(ok: bool, field: impl Into<String>, msg: impl Into<String>) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ScenarioError::new(field, msg))
    }
}

fn positive_int(v: i64, field: &str, max: i64) -> Result<()> {
    check(v >= 1, field, format!("must be >= 1, got {v}"))?;
    check(v <= max, field, format!("must be <= {max}, got {v}"))
}

fn probability(v: f64, field: &str) -> Result<()> {
    check(
        (0.0..=1.0).contains(&v),
        field,
        format!("must be a probability in [0, 1], got {v}"),
    )
}

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
        // The default path names may be left out: they get the default link.
        for f in &self.flow {
            for (which, p) in [("fwd", &f.fwd), ("rev", &f.rev)] {
                if p == which && !self.path.contains_key(p) {
                    self.path.insert(p.clone(), default_path(which));
                }
            }
        }
        for (name, path) in self.path.iter_mut() {
            for (i, st) in path.stage.iter_mut().enumerate() {
                st.validate(&format!("path.{name}.stage[{i}]"), base_dir)?;
            }
            let mut seen = std::collections::BTreeSet::new();
            for (i, st) in path.stage.iter_mut().enumerate() {
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
        for (i, f) in self.flow.iter_mut().enumerate() {
            for (which, p) in [("fwd", &f.fwd), ("rev", &f.rev)] {
                if !self.path.contains_key(p) {
                    let known: Vec<&str> = self.path.keys().map(|s| s.as_str()).collect();
                    return Err(ScenarioError::new(
                        format!("flow[{i}].{which}"),
                        format!("no path named {p:?} (defined: {})", known.join(", ")),
                    ));
                }
            }
            f.validate(&format!("flow[{i}]"))?;
        }
        Ok(())
    }
}

impl StageSpec {
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            StageKind::Rate => "rate",
            StageKind::Delay => "delay",
            StageKind::Loss => "loss",
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
            model,
            p,
            r,
            h,
            k,
            nth,
            seqs
        );
        v
    }

    fn validate(&mut self, at: &str, base_dir: &Path) -> Result<()> {
        let allowed: &[&str] = match self.kind {
            StageKind::Rate => &["rate", "queue", "queue_bytes"],
            StageKind::Delay => &["delay", "profile", "trace", "reorder"],
            StageKind::Loss => &["model", "p", "r", "h", "k", "profile", "nth", "seqs"],
        };
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
                check(
                    self.rate.is_some(),
                    format!("{at}.rate"),
                    "a rate stage needs a rate",
                )?;
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
                if self.queue.is_none() && self.queue_bytes.is_none() {
                    self.queue = Some(1000);
                }
            }
            StageKind::Delay => {
                let n = [
                    self.delay.is_some(),
                    self.profile.is_some(),
                    self.trace.is_some(),
                ]
                .iter()
                .filter(|x| **x)
                .count();
                check(
                    n == 1,
                    at.to_string(),
                    "a delay stage needs exactly one of delay, profile, trace",
                )?;
                if let Some(rows) = &self.profile {
                    delay_profile(rows, &format!("{at}.profile"))?;
                }
                if let Some(file) = &self.trace {
                    let full = resolve_path(base_dir, file);
                    let rows = read_trace(&full, &format!("{at}.trace"))?;
                    delay_profile(&rows, &format!("{at}.trace"))?;
                    self.trace = Some(full.to_string_lossy().into_owned());
                    self.trace_rows = Some(rows);
                }
                self.reorder.get_or_insert(false);
            }
            StageKind::Loss => {
                let model = match self.model {
                    Some(m) => m,
                    None if self.nth.is_some() || self.seqs.is_some() => LossKind::Deterministic,
                    None if self.profile.is_some() => LossKind::Profile,
                    None if self.p.is_some() => LossKind::Bernoulli,
                    None => {
                        return Err(ScenarioError::new(
                            format!("{at}.model"),
                            "a loss stage needs a model (bernoulli, gilbert_elliott, profile, deterministic) or p, profile, nth or seqs",
                        ))
                    }
                };
                self.model = Some(model);
                let need = |f: Option<f64>, name: &str| -> Result<()> {
                    let v = f.ok_or_else(|| {
                        ScenarioError::new(
                            format!("{at}.{name}"),
                            format!("required by the {model:?} loss model"),
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
                        let rows = self.profile.as_ref().ok_or_else(|| {
                            ScenarioError::new(
                                format!("{at}.profile"),
                                "required by the profile loss model",
                            )
                        })?;
                        loss_profile(rows, &format!("{at}.profile"))?;
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
        }
        Ok(())
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

/// Reads a CSV trace with the header `time_ms,delay_ms,loss`.
pub fn read_trace(path: &Path, field: &str) -> Result<Vec<Vec<f64>>> {
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
        header == "time_ms,delay_ms,loss",
        field,
        format!(
            "{}: the first line must be the header time_ms,delay_ms,loss, got {header:?}",
            path.display()
        ),
    )?;
    for (no, line) in lines {
        let vals: std::result::Result<Vec<f64>, _> =
            line.split(',').map(|c| c.trim().parse::<f64>()).collect();
        match vals {
            Ok(v) if v.len() == 3 => rows.push(v),
            _ => {
                return Err(ScenarioError::new(
                    field,
                    format!(
                        "{} line {}: expected three numbers, got {line:?}",
                        path.display(),
                        no + 1
                    ),
                ))
            }
        }
    }
    Ok(rows)
}

/// A number as a reader would write it: `1e300`, not three hundred digits.
fn num(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e15 {
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

impl FlowSpec {
    fn validate(&mut self, at: &str) -> Result<()> {
        check(
            CONGESTION_CONTROLS.contains(&self.cc.as_str()),
            format!("{at}.cc"),
            format!(
                "unknown congestion control {:?} (available: {})",
                self.cc,
                CONGESTION_CONTROLS.join(", ")
            ),
        )?;
        match self.app.kind {
            AppKind::Bulk => check(
                self.app.size.is_none(),
                format!("{at}.app.size"),
                "a bulk app sends without end; use type = \"file\" for a size",
            )?,
            AppKind::File => {
                let s = self.app.size.ok_or_else(|| {
                    ScenarioError::new(format!("{at}.app.size"), "a file app needs a size in bytes")
                })?;
                check(s.0 > 0, format!("{at}.app.size"), "must be > 0")?;
            }
        }
        let t = &mut self.tcp;
        let at = format!("{at}.tcp");
        positive_int(t.mss, &format!("{at}.mss"), 65_495)?;
        positive_int(t.initial_window, &format!("{at}.initial_window"), 100_000)?;
        positive_int(t.abc_limit, &format!("{at}.abc_limit"), 1000)?;
        positive_int(t.dupthresh, &format!("{at}.dupthresh"), 1000)?;
        positive_int(t.delack_segments, &format!("{at}.delack_segments"), 1000)?;
        check(
            t.rwnd.0 <= 1 << 30,
            format!("{at}.rwnd"),
            format!(
                "must be <= 1 GiB (the largest TCP window, RFC 7323 section 2.3), got {}",
                t.rwnd.0
            ),
        )?;
        check(
            t.rwnd.0 >= t.mss as u64,
            format!("{at}.rwnd"),
            format!(
                "must be at least one MSS ({} bytes), got {}",
                t.mss, t.rwnd.0
            ),
        )?;
        if let Some(s) = t.initial_ssthresh {
            check(
                s.0 >= 2 * t.mss as u64,
                format!("{at}.initial_ssthresh"),
                "must be at least 2 MSS",
            )?;
        }
        check(
            t.ts_tick.0 > SimDuration::ZERO,
            format!("{at}.ts_tick"),
            "must be > 0",
        )?;
        check(
            t.delack_timeout.0 > SimDuration::ZERO,
            format!("{at}.delack_timeout"),
            "must be > 0",
        )?;
        if t.variant == VariantSpec::Sack {
            check(
                t.sack,
                format!("{at}.sack"),
                "the sack variant needs sack = true",
            )?;
        }
        if t.dsack {
            t.dsack = t.sack;
        }
        let mut seen = Vec::new();
        for (i, name) in t.spurious.iter().enumerate() {
            let field = format!("{at}.spurious[{i}]");
            check(
                DETECTORS.contains(&name.as_str()),
                &field,
                format!(
                    "unknown detector {name:?} (known: {})",
                    DETECTORS.join(", ")
                ),
            )?;
            check(
                !seen.contains(name),
                &field,
                format!("{name:?} is listed twice"),
            )?;
            seen.push(name.clone());
        }
        let has = |d: &str| t.spurious.iter().any(|n| n == d);
        if has("eifel") {
            check(
                t.timestamps,
                format!("{at}.timestamps"),
                "the eifel detector (RFC 3522) needs timestamps = true",
            )?;
        }
        if has("dsack") {
            check(
                t.sack && t.dsack,
                format!("{at}.dsack"),
                "the dsack detector (RFC 3708) needs sack = true and dsack = true",
            )?;
        }
        if has("frto") && t.frto == FrtoSpec::Sack {
            check(
                t.sack,
                format!("{at}.frto"),
                "SACK-enhanced F-RTO (RFC 5682 section 3) needs sack = true",
            )?;
        }
        t.block_fr_after_rto
            .get_or_insert(t.variant != VariantSpec::Reno);
        let r = &mut t.rto;
        let at = format!("{at}.rto");
        let (min, max) = match r.estimator {
            EstimatorSpec::Rfc6298 => (d_ms(1000), d_ms(60_000)),
            EstimatorSpec::Linux => (d_ms(200), d_ms(120_000)),
        };
        let min = *r.min.get_or_insert(min);
        let max = *r.max.get_or_insert(max);
        check(
            min.0 > SimDuration::ZERO,
            format!("{at}.min"),
            format!("must be > 0, got {min}"),
        )?;
        check(
            max >= min,
            format!("{at}.max"),
            format!("must be >= min ({min}), got {max}"),
        )?;
        check(
            r.initial.0 > SimDuration::ZERO,
            format!("{at}.initial"),
            format!("must be > 0, got {}", r.initial),
        )?;
        check(
            r.alpha > 0.0 && r.alpha <= 1.0,
            format!("{at}.alpha"),
            format!("must be in (0, 1], got {}", r.alpha),
        )?;
        check(
            r.beta > 0.0 && r.beta <= 1.0,
            format!("{at}.beta"),
            format!("must be in (0, 1], got {}", r.beta),
        )?;
        check(
            r.k > 0.0,
            format!("{at}.k"),
            format!("must be > 0, got {}", r.k),
        )?;
        Ok(())
    }

    /// The TCP configuration this flow runs with.
    pub fn tcp_config(&self) -> TcpConfig {
        let t = &self.tcp;
        let r = &t.rto;
        let algorithm = match r.estimator {
            EstimatorSpec::Rfc6298 => RtoAlgorithm::Rfc6298 {
                alpha: r.alpha,
                beta: r.beta,
                k: r.k,
                granularity: r.granularity.0,
            },
            EstimatorSpec::Linux => RtoAlgorithm::Linux,
        };
        TcpConfig {
            variant: match t.variant {
                VariantSpec::Reno => Variant::Reno,
                VariantSpec::NewReno => Variant::NewReno,
                VariantSpec::Sack => Variant::Sack,
            },
            mss: t.mss as u32,
            initial_window: t.initial_window as u32,
            initial_ssthresh: t.initial_ssthresh.map(|b| b.0),
            rwnd: t.rwnd.0,
            abc: t.abc,
            abc_limit: t.abc_limit as u32,
            dupthresh: t.dupthresh as u32,
            limited_transmit: t.limited_transmit,
            block_fr_after_rto: t.block_fr_after_rto.unwrap_or(true),
            rto: RtoConfig {
                algorithm,
                min: r.min.map(|d| d.0).unwrap_or(SimDuration::from_secs(1)),
                max: r.max.map(|d| d.0).unwrap_or(SimDuration::from_secs(60)),
                initial: r.initial.0,
            },
            timestamps: t.timestamps,
            ts_tick: t.ts_tick.0,
            sack: t.sack,
            dsack: t.dsack,
            clear_sack_on_rto: t.clear_sack_on_rto,
            delayed_ack: t.delayed_ack,
            delack_timeout: t.delack_timeout.0,
            delack_segments: t.delack_segments as u32,
            spurious: self.spurious_config(),
        }
    }

    /// The detectors and response this flow runs with.
    pub fn spurious_config(&self) -> SpuriousConfig {
        let t = &self.tcp;
        let mut detectors = DetectorSet::EMPTY;
        for d in DetectorKind::ALL {
            if t.spurious.iter().any(|n| n == d.name()) {
                detectors = detectors.with(d);
            }
        }
        SpuriousConfig {
            detectors,
            frto: match t.frto {
                FrtoSpec::Basic => FrtoVariant::Basic,
                FrtoSpec::Sack => FrtoVariant::SackEnhanced,
                FrtoSpec::Auto if t.sack => FrtoVariant::SackEnhanced,
                FrtoSpec::Auto => FrtoVariant::Basic,
            },
            response: match t.response {
                ResponseSpec::None => Response::None,
                ResponseSpec::Eifel => Response::Eifel,
                ResponseSpec::Undo => Response::Undo,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(text, &[], Path::new(".")).unwrap_err().to_string()
    }

    const MIN: &str = "[[flow]]\n";

    #[test]
    fn minimal_scenario_gets_defaults() {
        let sc = parse(MIN, &[], Path::new(".")).unwrap();
        assert_eq!(sc.flow.len(), 1);
        assert_eq!(sc.flow[0].tcp.variant, VariantSpec::NewReno);
        assert_eq!(sc.flow[0].tcp.rto.min, Some(d_ms(1000)));
        assert_eq!(sc.flow[0].tcp.block_fr_after_rto, Some(true));
        assert!(sc.path.contains_key("fwd") && sc.path.contains_key("rev"));
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            err("[[flow]]\n[flow.tcp.rto]\nmin = -1\n"),
            "flow[0].tcp.rto.min: must be >= 0, got -1"
        );
        assert_eq!(
            err("[[flow]]\n[flow.tcp.rto]\nmin = 0\n"),
            "flow[0].tcp.rto.min: must be > 0, got 0s"
        );
        let e = err("[[flow]]\n[flow.tcp]\nmsss = 1\n");
        assert!(e.starts_with("flow[0].tcp"), "{e}");
        assert!(e.contains("unknown field `msss`"), "{e}");
        let e = err("[[flow]]\n[flow.tcp]\nmss = \"big\"\n");
        assert!(e.starts_with("flow[0].tcp.mss: invalid type"), "{e}");
        assert_eq!(
            err("[path.fwd]\n[[path.fwd.stage]]\ntype = \"rate\"\nrate = \"-10Mbps\"\n[[flow]]\n"),
            "path.fwd.stage[0].rate: must be a positive rate of at least 1 bps, got -10Mbps"
        );
        assert_eq!(
            err("[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\nprofile = [[10, 5, 0], [5, 5, 0]]\n[[flow]]\n"),
            "path.fwd.stage[0].profile: row 1: times must be non-decreasing"
        );
        let e = err(
            "[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\ntrace = \"nope.csv\"\n[[flow]]\n",
        );
        assert!(e.starts_with("path.fwd.stage[0].trace: cannot read"), "{e}");
        assert_eq!(
            err("[[flow]]\ncc = \"cubic\"\n"),
            "flow[0].cc: unknown congestion control \"cubic\" (available: reno)"
        );
        assert_eq!(
            err("[[flow]]\nfwd = \"uplink\"\n"),
            "flow[0].fwd: no path named \"uplink\" (defined: rev)"
        );
        assert_eq!(
            err("[sim]\nduration = 5\n"),
            "flow: at least one [[flow]] is required"
        );
        assert!(err("[[flow]\n").starts_with("not valid TOML"));
    }

    #[test]
    fn messages_use_toml_words_not_rust_types() {
        assert_eq!(
            err("[sim]\nseed = -1\n[[flow]]\n"),
            "sim.seed: invalid value: integer `-1`, expected an integer >= 0"
        );
        assert_eq!(
            err("[sim]\nduration = true\n[[flow]]\n"),
            "sim.duration: invalid type: boolean `true`, expected a number or a string with a unit"
        );
        assert_eq!(
            err("[[flow]]\ntcp = 5\n"),
            "flow[0].tcp: invalid type: integer `5`, expected a table"
        );
        assert_eq!(
            err("[path.fwd]\nstage = 3\n[[flow]]\n"),
            "path.fwd.stage: invalid type: integer `3`, expected an array"
        );
        for bad in [
            "[sim]\nduration = 1.5\nseed = 2.5\n[[flow]]\n",
            "flow = 1\n",
        ] {
            let e = err(bad);
            for word in [
                "u64", "i64", "f64", "struct", "Spec", "sequence", "NumOrStr",
            ] {
                assert!(!e.contains(word), "{e}");
            }
        }
    }

    #[test]
    fn huge_values_are_errors_not_clamped() {
        assert_eq!(
            err("[sim]\nduration = \"1e12s\"\n[[flow]]\n"),
            "sim.duration: must be at most 1e9 s (about 31 years), got 1e12s"
        );
        assert_eq!(
            err("[[flow]]\ntcp = { rwnd = \"2GiB\" }\n"),
            "flow[0].tcp.rwnd: must be <= 1 GiB (the largest TCP window, RFC 7323 section 2.3), got 2147483648"
        );
        assert_eq!(
            err("[sim]\nfigure_flows = 0\n[[flow]]\n"),
            "sim.figure_flows: must be >= 1, got 0"
        );
    }

    #[test]
    fn profile_times_beyond_the_bound_are_errors() {
        assert_eq!(
            err("[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\nprofile = [[0, 5, 0], [1e300, 5, 0]]\n[[flow]]\n"),
            "path.fwd.stage[0].profile[1]: time must be at most 1e12 ms (about 31 years), got 1e300"
        );
        assert_eq!(
            err("[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\nprofile = [[0, inf, 0]]\n[[flow]]\n"),
            "path.fwd.stage[0].profile[0]: delay must be at most 1e12 ms (about 31 years), got inf"
        );
    }

    #[test]
    fn trace_files_must_be_regular_files() {
        let e = err(
            "[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\ntrace = \"/dev/zero\"\n[[flow]]\n",
        );
        assert_eq!(
            e,
            "path.fwd.stage[0].trace: /dev/zero is not a regular file"
        );
        let e =
            err("[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\ntrace = \"/tmp\"\n[[flow]]\n");
        assert!(e.ends_with("is not a regular file"), "{e}");
    }

    #[test]
    fn left_out_paths_are_the_default_link() {
        let sc = parse("[[flow]]\n", &[], Path::new(".")).unwrap();
        let fwd = &sc.path["fwd"].stage;
        assert_eq!(fwd.len(), 2);
        assert_eq!(fwd[0].rate, Some(Rate(10_000_000)));
        assert_eq!(fwd[0].queue, Some(100));
        assert_eq!(fwd[1].delay, Some(d_ms(20)));
        assert_eq!(sc.path["rev"].stage[0].delay, Some(d_ms(20)));
        // A path the file declares, even empty, is taken as written.
        let sc = parse("[path.fwd]\n[[flow]]\n", &[], Path::new(".")).unwrap();
        assert!(sc.path["fwd"].stage.is_empty());
    }

    #[test]
    fn spurious_fields_are_checked_with_the_field_named() {
        assert_eq!(
            err("[[flow]]\n[flow.tcp]\nspurious = [\"eifle\"]\n"),
            "flow[0].tcp.spurious[0]: unknown detector \"eifle\" (known: eifel, dsack, frto)"
        );
        assert_eq!(
            err("[[flow]]\n[flow.tcp]\nspurious = [\"eifel\"]\ntimestamps = false\n"),
            "flow[0].tcp.timestamps: the eifel detector (RFC 3522) needs timestamps = true"
        );
        assert_eq!(
            err("[[flow]]\n[flow.tcp]\nspurious = [\"dsack\"]\nsack = false\n"),
            "flow[0].tcp.dsack: the dsack detector (RFC 3708) needs sack = true and dsack = true"
        );
        assert_eq!(
            err("[[flow]]\n[flow.tcp]\nspurious = [\"frto\", \"frto\"]\n"),
            "flow[0].tcp.spurious[1]: \"frto\" is listed twice"
        );
        let e = err("[[flow]]\n[flow.tcp]\nresponse = \"restore\"\n");
        assert!(
            e.starts_with("flow[0].tcp.response: unknown variant `restore`"),
            "{e}"
        );
        assert!(e.contains("`none`, `eifel`, `undo`"), "{e}");
        assert_eq!(
            err("[[flow]]\n[flow.tcp]\nprofile = \"bsd\"\n"),
            "flow[0].tcp.profile: unknown profile \"bsd\" (known: linux)"
        );
    }

    #[test]
    fn linux_profile_fills_missing_keys_and_explicit_keys_win() {
        let sc = parse(
            "[[flow]]\n[flow.tcp]\nprofile = \"linux\"\nvariant = \"reno\"\n",
            &[],
            Path::new("."),
        )
        .unwrap();
        let t = &sc.flow[0].tcp;
        assert_eq!(t.variant, VariantSpec::Reno, "explicit key kept");
        assert_eq!(t.spurious, vec!["eifel", "dsack", "frto"]);
        assert_eq!(t.response, ResponseSpec::Undo);
        assert_eq!(t.rto.estimator, EstimatorSpec::Linux);
        assert_eq!(t.rto.min, Some(d_ms(200)));
        assert!(!t.clear_sack_on_rto);
        let c = sc.flow[0].tcp_config().spurious;
        assert_eq!(c.frto, FrtoVariant::SackEnhanced);
        assert_eq!(c.detectors.label(), "eifel+dsack+frto");
        // The resolved scenario re-parses to the same thing.
        let back = toml::to_string(&sc).unwrap();
        let sc2 = parse(&back, &[], Path::new(".")).unwrap();
        assert_eq!(
            serde_json::to_string(&sc).unwrap(),
            serde_json::to_string(&sc2).unwrap()
        );
    }

    #[test]
    fn overrides_reach_every_flow_or_one() {
        let text = "[[flow]]\n[[flow]]\n";
        let sc = parse(text, &["flow.tcp.variant=\"reno\"".into()], Path::new(".")).unwrap();
        assert!(sc.flow.iter().all(|f| f.tcp.variant == VariantSpec::Reno));
        let sc = parse(
            text,
            &["flow[1].tcp.mss=1000".into(), "sim.duration=3s".into()],
            Path::new("."),
        )
        .unwrap();
        assert_eq!(sc.flow[0].tcp.mss, 1448);
        assert_eq!(sc.flow[1].tcp.mss, 1000);
        assert_eq!(sc.sim.duration, d_ms(3000));
        let e = parse(text, &["flow[5].tcp.mss=1".into()], Path::new(".")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "flow[5].tcp.mss: index 5 out of range (flow has 2 entries)"
        );
        let e = parse(text, &["nonsense".into()], Path::new(".")).unwrap_err();
        assert_eq!(e.to_string(), "--set nonsense: expected key=value");
    }

    #[test]
    fn overrides_name_a_stage_by_type_or_name() {
        let text = "[path.fwd]\n[[path.fwd.stage]]\ntype = \"rate\"\nrate = \"1Mbps\"\n\
                    [[path.fwd.stage]]\ntype = \"delay\"\ndelay = \"10ms\"\n[[flow]]\n";
        let sc = parse(
            text,
            &["path.fwd.delay.delay=\"30ms\"".into()],
            Path::new("."),
        )
        .unwrap();
        assert_eq!(sc.path["fwd"].stage[1].delay, Some(d_ms(30)));
        let e = parse(text, &["path.fwd.loss.p=0.1".into()], Path::new(".")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "path.fwd.loss.p: no stage named or of type \"loss\" in this path"
        );
        let two = format!(
            "{text}[[path.fwd.stage]]\ntype = \"delay\"\ndelay = \"1ms\"\nname = \"air\"\n"
        );
        let e = parse(
            &two,
            &["path.fwd.delay.delay=\"5ms\"".into()],
            Path::new("."),
        )
        .unwrap_err();
        assert!(e.to_string().contains("2 stages of type \"delay\""), "{e}");
        let sc = parse(&two, &["path.fwd.air.delay=\"5ms\"".into()], Path::new(".")).unwrap();
        assert_eq!(sc.path["fwd"].stage[2].delay, Some(d_ms(5)));
    }

    #[test]
    fn a_sweep_table_is_accepted_and_left_out_of_the_resolved_scenario() {
        let sc = parse("[[flow]]\n[sweep]\nreplications = 3\n", &[], Path::new(".")).unwrap();
        assert!(sc.sweep.is_some());
        assert!(!serde_json::to_string(&sc).unwrap().contains("sweep"));
    }

    #[test]
    fn resolved_scenario_round_trips() {
        let text = "[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\ndelay = \"25ms\"\n[[flow]]\n";
        let sc = parse(text, &[], Path::new(".")).unwrap();
        let back = toml::to_string(&sc).unwrap();
        let sc2 = parse(&back, &[], Path::new(".")).unwrap();
        assert_eq!(
            serde_json::to_string(&sc).unwrap(),
            serde_json::to_string(&sc2).unwrap()
        );
    }
}
