//! Flows: apps, TCP options, RTO estimators, spurious-timeout detectors, named profiles (`linux`).

use super::*;
use crate::units::{Ato, Bytes, DurationOr, DurationOrAto, DurationOrRto, Rto};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserializer, Serializer};
use spikelab_tcp::cc::{BicParams, CcConfig, CubicFlavor, CubicParams, HyblaParams};
use spikelab_tcp::spurious::{DetectorKind, DetectorSet, FrtoVariant, Response, SpuriousConfig};
use spikelab_tcp::{RtoAlgorithm, RtoConfig, SsthreshBasis, TcpConfig, Variant};

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
    /// ns-2.35's tick-based timer; only the `ns2` profile's agent runs it.
    Ns2,
}

impl EstimatorSpec {
    pub fn name(self) -> &'static str {
        match self {
            EstimatorSpec::Rfc6298 => "rfc6298",
            EstimatorSpec::Linux => "linux",
            EstimatorSpec::Ns2 => "ns2",
        }
    }
}

/// Which F-RTO algorithm `spurious = ["frto"]` runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FrtoSpec {
    /// SACK-enhanced (RFC 5682 §3) when SACK is on, basic (§2) otherwise: Linux `tcp_frto = 2`.
    Auto,
    Basic,
    Sack,
    /// No F-RTO (Linux `tcp_frto = 0`): the linux detector goes back N after a timeout and
    /// never undoes by the F-RTO rule; refused with the frto detector.
    Off,
}

/// What ssthresh is computed from on a loss.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SsthreshBasisSpec {
    /// FlightSize, RFC 5681 eq. 4.
    Flight,
    /// cwnd, as Linux.
    Cwnd,
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
pub const DETECTORS: &[&str] = &["eifel", "dsack", "frto", "linux"];

/// Names accepted in `profile = "..."`.
pub const PROFILES: &[&str] = &["linux", "ns2", "rfc"];

/// The `linux` profile: the keys it fills in `[flow.tcp]` when the file does not set them: the
/// defaults of a Linux 6.x sender (sysctls `tcp_sack`, `tcp_dsack`, `tcp_timestamps` = 1,
/// `tcp_frto` = 2, `tcp_congestion_control` = cubic; constants `TCP_INIT_CWND` = 10,
/// `TCP_RTO_MIN` = 200 ms, `TCP_RTO_MAX` = 120 s, `TCP_TIMEOUT_INIT` = 1 s, `TCP_ATO_MIN` =
/// 40 ms, `TCP_MAX_QUICKACKS` = 16). docs/models.md has the table with the source of each.
const LINUX_PROFILE: &str = r#"
variant = "sack"
initial_window = 10
limited_transmit = true
abc = true
abc_limit = 1000
timestamps = true
sack = true
dsack = true
clear_sack_on_rto = false
delayed_ack = true
delack_timeout = "ato"
delack_segments = 2
quickack = 16
quickack_idle = "rto"
comp_sack = 44
rcv_autotune = true
rearm_rto_on_retransmit = true
rearm_rto_on_sack = true
kernel_rtt_samples = true
timer_hz = 250
ssthresh_basis = "cwnd"
cwnd_limited_check = true
rack = true
tlp = true
prr = true
handshake = true
small_queue = 5
spurious = ["linux"]
frto = "auto"
response = "undo"
[rto]
estimator = "linux"
min = "200ms"
max = "120s"
initial = "1s"
"#;

/// What the `linux` profile sets at flow level (beside `[flow.tcp]`).
const LINUX_PROFILE_FLOW: &str = r#"
cc = { algo = "cubic", flavor = "linux" }
"#;

/// The `ns2` profile: ns-2.35's one-way `Agent/TCP/Reno|Newreno|Sack1` and `TCPSink` family
/// with `ns-default.tcl`'s defaults (`packetSize_` 1000, `windowInit_` 2, `singledup_` 1,
/// `bugFix_` true, `syn_` true, no timestamps, `tcpTick_` 10 ms, `minrto_` 0.2 s, `maxrto_`
/// 60 s, `rtxcur_init_` 3 s, the DelAck sink's `interval_` 100 ms), run by spikelab-tcp's
/// `ns2` agent. Set in code: `rwnd` = 20 packets (`window_`) when neither `rwnd` is given,
/// `sack` = true exactly with `variant = "sack"` (the Sack1 sink), and with `cc = "cubic"` or
/// `"hybla"` (ns-2.35's `Agent/TCP/Linux`, spikelab-tcp's `ns2/linux.rs`) `rto.granularity` =
/// 1 ms, the `tcpTick_` its `select_ca` installs. docs/models.md, "The ns2 TCP profile", has
/// the table with the ns-2 source of each.
const NS2_PROFILE: &str = r#"
mss = 1000
initial_window = 2
limited_transmit = true
block_fr_after_rto = true
abc = false
timestamps = false
dsack = false
delayed_ack = false
delack_timeout = "100ms"
delack_segments = 2
quickack = 0
handshake = true
[rto]
estimator = "ns2"
granularity = "10ms"
min = "200ms"
max = "60s"
initial = "3s"
"#;

/// What the `ns2` profile sets at flow level: the Reno, NewReno and Sack1 agents grow as Reno
/// (a file's `cc = "cubic"` or `"hybla"` picks `Agent/TCP/Linux` instead).
const NS2_PROFILE_FLOW: &str = r#"
cc = { algo = "reno" }
"#;

/// `tcpTick_` of ns-2.35's `Agent/TCP/Linux` once `select_ca` has installed a module
/// (`LinuxTcpAgent::install_congestion_control`: `1/JIFFY_RATIO` s).
const NS2_LINUX_TICK: &str = "1ms";

/// ns-2's `window_` default, packets.
const NS2_WINDOW_PACKETS: i64 = 20;

/// One key a profile resolved: its value from the profile, or the file's value that won.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileNote {
    pub flow: usize,
    pub profile: String,
    /// Dotted key inside the flow (`tcp.variant`, `tcp.rto.min`, `cc`).
    pub key: String,
    /// The profile's value, as TOML.
    pub profile_value: String,
    /// The file's value (as TOML) when the file sets the key itself: it wins.
    pub file_value: Option<String>,
    /// Why the profile's value was not applied although the file leaves the key out (it
    /// conflicts with a key the file sets: RACK and PRR need SACK recovery).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_applied: Option<String>,
}

/// Fills the keys of each flow's `tcp.profile` that the file leaves out (explicit keys win) and
/// says, key by key, where each value came from.
pub(super) fn apply_profiles(root: &mut toml::Value) -> Result<Vec<ProfileNote>> {
    let mut notes = Vec::new();
    let Some(flows) = root.get_mut("flow").and_then(|f| f.as_array_mut()) else {
        return Ok(notes);
    };
    for (i, flow) in flows.iter_mut().enumerate() {
        let Some(p) = flow.get("tcp").and_then(|t| t.get("profile")) else {
            continue;
        };
        let field = format!("flow[{i}].tcp.profile");
        let name = p
            .as_str()
            .ok_or_else(|| ScenarioError::new(&field, "must be a string"))?
            .to_string();
        let (tcp_defaults, flow_defaults): (toml::Table, toml::Table) = match name.as_str() {
            "linux" => (
                toml::from_str(LINUX_PROFILE).expect("valid profile"),
                toml::from_str(LINUX_PROFILE_FLOW).expect("valid profile"),
            ),
            "ns2" => (
                toml::from_str(NS2_PROFILE).expect("valid profile"),
                toml::from_str(NS2_PROFILE_FLOW).expect("valid profile"),
            ),
            // The RFC behaviour is the defaults: the name only says so.
            "rfc" => (toml::Table::new(), toml::Table::new()),
            _ => {
                return Err(ScenarioError::new(
                    field,
                    format!("unknown profile {name:?} (known: {})", PROFILES.join(", ")),
                ))
            }
        };
        let Some(flow) = flow.as_table_mut() else {
            continue;
        };
        let mut flow_notes = Vec::new();
        let mut note = |key: String, profile_value: &toml::Value, file: Option<&toml::Value>| {
            flow_notes.push(ProfileNote {
                flow: i,
                profile: name.clone(),
                key,
                profile_value: show(profile_value),
                file_value: file.map(show),
                not_applied: None,
            })
        };
        merge_missing(flow, &flow_defaults, "", &mut note);
        if name == "ns2" {
            ns2_computed_keys(flow, &mut note);
        }
        // CUBIC and Hybla under ns2 run in Agent/TCP/Linux, whose install_congestion_control
        // sets tcpTick_ to 1 ms (1/JIFFY_RATIO): the profile's tick for them.
        let linux_agent = name == "ns2"
            && match flow.get("cc") {
                Some(toml::Value::String(a)) => a == "cubic" || a == "hybla",
                Some(toml::Value::Table(t)) => {
                    matches!(
                        t.get("algo").and_then(|a| a.as_str()),
                        Some("cubic" | "hybla")
                    )
                }
                _ => false,
            };
        if let Some(tcp) = flow.get_mut("tcp").and_then(|t| t.as_table_mut()) {
            merge_missing(tcp, &tcp_defaults, "tcp.", &mut note);
            if linux_agent {
                let tick = toml::Value::String(NS2_LINUX_TICK.into());
                for n in &mut flow_notes {
                    if n.key == "tcp.rto.granularity" && n.file_value.is_none() {
                        n.profile_value = show(&tick);
                        if let Some(rto) = tcp.get_mut("rto").and_then(|r| r.as_table_mut()) {
                            rto.insert("granularity".into(), tick.clone());
                        }
                    }
                }
            }
            // Keys the profile filled that need what the file has turned off: not applied.
            let is = |tcp: &toml::Table, k: &str, v: toml::Value| tcp.get(k) == Some(&v);
            let sack_variant = is(tcp, "variant", "sack".into());
            let sack = is(tcp, "sack", true.into());
            // What the key needs and what the file set instead, in the file's words.
            let variant = tcp.get("variant").map(show).unwrap_or_default();
            for n in &mut flow_notes {
                let (needs, off) = match n.key.as_str() {
                    "tcp.rack" | "tcp.prr" if !(sack_variant && sack) => (
                        "variant = \"sack\" and sack = true",
                        match (sack_variant, sack) {
                            (false, false) => format!("variant = {variant} and sack = false"),
                            (false, true) => format!("variant = {variant}"),
                            _ => "sack = false".to_string(),
                        },
                    ),
                    "tcp.tlp" if !sack => ("sack = true", "sack = false".to_string()),
                    _ => continue,
                };
                if n.file_value.is_none() {
                    let k = n.key.trim_start_matches("tcp.");
                    tcp.insert(k.to_string(), false.into());
                    n.not_applied = Some(format!("needs {needs}; the file sets {off}"));
                }
            }
        }
        notes.extend(flow_notes);
    }
    Ok(notes)
}

/// The `ns2` profile's keys that depend on others: `window_` is 20 packets of the flow's `mss`
/// (unless the file gives `rwnd` or `tcp.rwnd`), and the sink sends SACK blocks exactly when the
/// agent is Sack1.
fn ns2_computed_keys(
    flow: &mut toml::Table,
    note: &mut impl FnMut(String, &toml::Value, Option<&toml::Value>),
) {
    let flow_rwnd = flow.get("rwnd").cloned();
    let Some(tcp) = flow.get_mut("tcp").and_then(|t| t.as_table_mut()) else {
        return;
    };
    let mss = tcp.get("mss").and_then(|m| m.as_integer()).unwrap_or(1000);
    let rwnd = toml::Value::Integer(NS2_WINDOW_PACKETS * mss);
    match (tcp.get("rwnd").cloned(), flow_rwnd) {
        (None, None) => {
            note("tcp.rwnd".into(), &rwnd, None);
            tcp.insert("rwnd".into(), rwnd);
        }
        (file, flow) => note("tcp.rwnd".into(), &rwnd, file.or(flow).as_ref()),
    }
    let sack = toml::Value::Boolean(tcp.get("variant").and_then(|v| v.as_str()) == Some("sack"));
    match tcp.get("sack").cloned() {
        None => {
            note("tcp.sack".into(), &sack, None);
            tcp.insert("sack".into(), sack);
        }
        Some(file) => note("tcp.sack".into(), &sack, Some(&file)),
    }
}

/// A TOML value as written in a file (inline tables for tables).
fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::Table(t) => {
            let inner: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{k} = {}", show(v)))
                .collect();
            format!("{{ {} }}", inner.join(", "))
        }
        v => v.to_string(),
    }
}

fn merge_missing(
    into: &mut toml::Table,
    defaults: &toml::Table,
    prefix: &str,
    note: &mut impl FnMut(String, &toml::Value, Option<&toml::Value>),
) {
    for (k, v) in defaults {
        let key = format!("{prefix}{k}");
        match (into.get_mut(k), v) {
            (None, toml::Value::Table(dsub)) if k != "cc" => {
                let mut sub = toml::Table::new();
                merge_missing(&mut sub, dsub, &format!("{key}."), note);
                into.insert(k.clone(), toml::Value::Table(sub));
            }
            (None, _) => {
                note(key, v, None);
                into.insert(k.clone(), v.clone());
            }
            (Some(toml::Value::Table(sub)), toml::Value::Table(dsub)) if k != "cc" => {
                merge_missing(sub, dsub, &format!("{key}."), note)
            }
            (Some(file), _) => note(key, v, Some(file)),
        }
    }
}

pub(super) fn d_ms(ms: u64) -> Duration {
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
    /// Where in its first tick the `ns2` estimator's clock starts (ns-2 draws it per agent,
    /// `boot_time_`); only that estimator takes it.
    #[serde(default, skip_serializing_if = "Duration::is_zero")]
    pub phase: Duration,
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
            phase: Duration::default(),
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
    /// Delayed-ACK timeout, or `"ato"`: Linux's adaptive one.
    pub delack_timeout: DurationOrAto,
    pub delack_segments: i64,
    /// Segments acknowledged at once in quick-ACK mode (0: off).
    pub quickack: i64,
    /// Receive gap that re-enters quick-ACK mode, or `"rto"`: the receiver's own RTO.
    pub quickack_idle: DurationOrRto,
    /// Receiver SACK compression: ACKs held back at most (0: off; Linux `tcp_comp_sack_nr`).
    pub comp_sack: i64,
    /// The compressed-ACK timer's bound (Linux `tcp_comp_sack_delay_ns`).
    pub comp_sack_delay: Duration,
    /// The compressed-ACK timer's slack (Linux `tcp_comp_sack_slack_ns`).
    pub comp_sack_slack: Duration,
    /// The receiver's window grows as Linux's receive-buffer autotuning grows it.
    pub rcv_autotune: bool,
    /// Resending the first unacknowledged segment restarts the retransmission timer (Linux).
    pub rearm_rto_on_retransmit: bool,
    /// A SACK of data sent before the head's last transmission restarts the timer (Linux).
    pub rearm_rto_on_sack: bool,
    /// RTT samples as the kernel takes them (send times, SACK-only ACKs included) (Linux).
    pub kernel_rtt_samples: bool,
    /// The sender's timers follow the kernel's jiffies and timer wheel at this tick rate
    /// (`CONFIG_HZ`; 0: exact timers).
    pub timer_hz: i64,
    /// What ssthresh is computed from on a loss.
    pub ssthresh_basis: SsthreshBasisSpec,
    /// Grow cwnd only when cwnd-limited (Linux `tcp_is_cwnd_limited`).
    pub cwnd_limited_check: bool,
    /// Open the connection with a SYN / SYN-ACK handshake.
    pub handshake: bool,
    /// Spurious-retransmission detectors, any of `eifel`, `dsack`, `frto`, `linux`.
    pub spurious: Vec<String>,
    /// Which F-RTO algorithm runs.
    pub frto: FrtoSpec,
    /// What a detection changes.
    pub response: ResponseSpec,
    pub rto: RtoSpec,
    /// RACK loss detection (RFC 8985 §6); needs `variant = "sack"`.
    pub rack: bool,
    /// Tail loss probe (RFC 8985 §7); needs `sack = true`.
    pub tlp: bool,
    /// Proportional rate reduction in SACK recovery (RFC 6937); needs `variant = "sack"`.
    pub prr: bool,
    /// TCP Small Queues on a sender's own queue (a `backpressure` stage): at most this many of
    /// the flow's packets in it (0: no limit).
    pub small_queue: i64,
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
            delack_timeout: DurationOr::Fixed(Duration(c.delack_timeout)),
            delack_segments: c.delack_segments as i64,
            quickack: c.quickack as i64,
            quickack_idle: DurationOr::Fixed(Duration(c.quickack_idle)),
            comp_sack: c.comp_sack as i64,
            comp_sack_delay: Duration(c.comp_sack_delay),
            comp_sack_slack: Duration(c.comp_sack_slack),
            rcv_autotune: c.rcv_autotune,
            rearm_rto_on_retransmit: c.rearm_rto_on_retransmit,
            rearm_rto_on_sack: c.rearm_rto_on_sack,
            kernel_rtt_samples: c.kernel_rtt_samples,
            timer_hz: c.timer_hz as i64,
            ssthresh_basis: SsthreshBasisSpec::Flight,
            cwnd_limited_check: c.cwnd_limited_check,
            handshake: c.handshake,
            spurious: Vec::new(),
            frto: FrtoSpec::Auto,
            response: ResponseSpec::Undo,
            rto: RtoSpec::default(),
            rack: c.rack,
            tlp: c.tlp,
            prr: c.prr,
            small_queue: 0,
        }
    }
}

fn default_fwd() -> String {
    "fwd".into()
}
fn default_rev() -> String {
    "rev".into()
}

/// The `[flow.cc]` table: the algorithm and its parameters (each belongs to some algorithms;
/// see [`CC_PARAMS`]). Unset parameters take the algorithm's defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CcTable {
    pub algo: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hystart: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_convergence: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reno_friendly: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_increment: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_window: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smooth_part: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt0: Option<Duration>,
}

/// A flow's congestion control: `cc = "cubic"` or a `[flow.cc]` table with `algo = "cubic"`
/// and parameters. Written back the way it came (a name when no parameter is set).
#[derive(Clone, Debug, PartialEq)]
pub struct CcSpec {
    pub table: CcTable,
    /// Given as a bare name (`cc = "..."`): errors about the name point at `cc`, not `cc.algo`.
    pub named: bool,
}

impl Default for CcSpec {
    fn default() -> Self {
        CcSpec {
            table: CcTable {
                algo: "reno".into(),
                ..CcTable::default()
            },
            named: true,
        }
    }
}

impl CcSpec {
    pub fn algo(&self) -> &str {
        &self.table.algo
    }
}

impl Serialize for CcSpec {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let bare = CcTable {
            algo: self.table.algo.clone(),
            ..CcTable::default()
        };
        if self.table == bare {
            s.serialize_str(&self.table.algo)
        } else {
            self.table.serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for CcSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CcSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a congestion control name or a table with `algo`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<CcSpec, E> {
                Ok(CcSpec {
                    table: CcTable {
                        algo: v.to_string(),
                        ..CcTable::default()
                    },
                    named: true,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<CcSpec, A::Error> {
                let table = CcTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(CcSpec {
                    table,
                    named: false,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// Each `[flow.cc]` parameter and the algorithms that have it.
pub const CC_PARAMS: &[(&str, &[&str])] = &[
    ("flavor", &["cubic"]),
    ("hystart", &["cubic"]),
    ("c", &["cubic"]),
    ("beta", &["cubic", "bic"]),
    ("fast_convergence", &["cubic", "bic"]),
    ("reno_friendly", &["cubic"]),
    ("max_increment", &["bic"]),
    ("low_window", &["bic"]),
    ("smooth_part", &["bic"]),
    ("rtt0", &["hybla"]),
];

/// A `cc` table without `algo` (`--set flow[0].cc.beta=0.6` on a flow that leaves `cc` out
/// makes one): says to give the algorithm with the parameters, in the `--set` words that do
/// it, instead of serde's "missing field `algo`". The example algorithm is one that takes
/// every parameter given (cubic when none or no single one does).
pub(super) fn check_cc_tables(root: &toml::Value) -> Result<()> {
    let Some(flows) = root.get("flow").and_then(|f| f.as_array()) else {
        return Ok(());
    };
    for (i, flow) in flows.iter().enumerate() {
        let Some(cc) = flow.get("cc").and_then(|c| c.as_table()) else {
            continue;
        };
        if cc.contains_key("algo") {
            continue;
        }
        let takes = |algo: &str| {
            cc.keys().all(|k| {
                CC_PARAMS
                    .iter()
                    .any(|(p, algos)| p == k && algos.contains(&algo))
            })
        };
        let algo = ["cubic", "bic", "hybla"]
            .into_iter()
            .find(|a| takes(a))
            .unwrap_or("cubic");
        let mut whole = vec![format!("algo={:?}", algo)];
        whole.extend(cc.iter().map(|(k, v)| format!("{k}={v}")));
        let at = format!("flow[{i}].cc");
        return Err(ScenarioError::new(
            &at,
            format!(
                "a cc table needs algo (set {at}={{{}}} whole, or {at}={algo:?} first)",
                whole.join(", ")
            ),
        ));
    }
    Ok(())
}

/// `paths = []` is refused rather than read as absent: an association needs a destination, and
/// an empty list is more likely a list left unfinished than a wish for the default fwd/rev.
fn non_empty_paths<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<DestPaths>, D::Error> {
    let v = Vec::<DestPaths>::deserialize(d)?;
    if v.is_empty() {
        return Err(de::Error::custom(
            "lists no destination: leave paths out for the default fwd and rev, or (an SCTP \
             flow's destinations) give at least one { fwd = ..., rev = ... }",
        ));
    }
    Ok(v)
}

/// Names accepted in `[flow.cc] flavor`.
pub const CUBIC_FLAVORS: &[&str] = &["rfc9438", "linux"];

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    #[serde(default = "default_fwd")]
    pub fwd: String,
    #[serde(default = "default_rev")]
    pub rev: String,
    #[serde(default)]
    pub start: Duration,
    /// Random extra start delay, nanoseconds: the sender starts at `start + U`, `U` uniform in
    /// `[0, start_jitter)`, drawn from the RNG stream `flow/{i}/start` of the run's seed (so the
    /// replications of a sweep start at different phases). Zero (the default) draws nothing.
    #[serde(default, skip_serializing_if = "Duration::is_zero")]
    pub start_jitter: Duration,
    #[serde(default)]
    pub app: AppSpec,
    #[serde(default)]
    pub cc: CcSpec,
    #[serde(default)]
    pub tcp: TcpSpec,
    /// `"tcp"` (default) or `"sctp"`.
    #[serde(default, skip_serializing_if = "Protocol::is_tcp")]
    pub protocol: Protocol,
    /// SCTP: the association's destinations, each a forward and a reverse path (default: one,
    /// `fwd`/`rev`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "non_empty_paths"
    )]
    pub paths: Vec<DestPaths>,
    /// SCTP: `[flow.sctp]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sctp: Option<SctpSpec>,
    /// The receiver's window, for either protocol: TCP's advertised window (`tcp.rwnd`), SCTP's
    /// receive buffer (`sctp.recv_buffer`). Lets a sweep vary the window of TCP and SCTP flows
    /// with one parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd: Option<Bytes>,
}

/// Congestion controls the simulator knows.
pub const CONGESTION_CONTROLS: &[&str] = CcConfig::NAMES;

impl FlowSpec {
    /// Checks `cc` / `[flow.cc]`: a known name, only that algorithm's parameters, each in range.
    fn validate_cc(&self, at: &str) -> Result<()> {
        let t = &self.cc.table;
        let algo = t.algo.as_str();
        let name_field = if self.cc.named {
            format!("{at}.cc")
        } else {
            format!("{at}.cc.algo")
        };
        check(
            CONGESTION_CONTROLS.contains(&algo),
            name_field,
            format!(
                "unknown congestion control {algo:?} (available: {})",
                CONGESTION_CONTROLS.join(", ")
            ),
        )?;
        let given = |name: &str| match name {
            "flavor" => t.flavor.is_some(),
            "hystart" => t.hystart.is_some(),
            "c" => t.c.is_some(),
            "beta" => t.beta.is_some(),
            "fast_convergence" => t.fast_convergence.is_some(),
            "reno_friendly" => t.reno_friendly.is_some(),
            "max_increment" => t.max_increment.is_some(),
            "low_window" => t.low_window.is_some(),
            "smooth_part" => t.smooth_part.is_some(),
            "rtt0" => t.rtt0.is_some(),
            _ => false,
        };
        for (name, owners) in CC_PARAMS {
            if given(name) && !owners.contains(&algo) {
                let takes: Vec<&str> = CC_PARAMS
                    .iter()
                    .filter(|(_, o)| o.contains(&algo))
                    .map(|(n, _)| *n)
                    .collect();
                let takes = if takes.is_empty() {
                    format!("{algo} takes no parameters")
                } else {
                    format!("{algo} takes {}", takes.join(", "))
                };
                return Err(ScenarioError::new(
                    format!("{at}.cc.{name}"),
                    format!(
                        "is a parameter of {}, not of {algo} ({takes})",
                        owners.join(" and ")
                    ),
                ));
            }
        }
        let f = |name: &str| format!("{at}.cc.{name}");
        let linux = t.flavor.as_deref() == Some("linux");
        if let Some(fl) = &t.flavor {
            check(
                CUBIC_FLAVORS.contains(&fl.as_str()),
                f("flavor"),
                format!(
                    "unknown flavor {fl:?} (known: {})",
                    CUBIC_FLAVORS.join(", ")
                ),
            )?;
        }
        if t.hystart == Some(true) {
            check(
                linux,
                f("hystart"),
                "HyStart is modelled for flavor = \"linux\" only (RFC 9438 leaves slow start \
                 to the sender)",
            )?;
        }
        if let Some(c) = t.c {
            check(
                c.is_finite() && c > 0.0,
                f("c"),
                format!("must be > 0, got {c}"),
            )?;
            check(
                c <= 1000.0,
                f("c"),
                format!("must be <= 1000 segments/s^3, got {c}"),
            )?;
            if linux {
                check(
                    c >= 0.005,
                    f("c"),
                    format!(
                        "must be >= 0.005 with flavor = \"linux\" (bic_scale = C*1024/10 is an \
                         integer >= 1), got {c}"
                    ),
                )?;
            }
        }
        if let Some(b) = t.beta {
            check(
                b.is_finite() && b > 0.0 && b < 1.0,
                f("beta"),
                format!("must be in (0, 1), got {b}"),
            )?;
            if linux || algo == "bic" {
                let scaled = (b * 1024.0).round();
                check(
                    (1.0..=1023.0).contains(&scaled),
                    f("beta"),
                    format!("must be in [1/1024, 1023/1024] for the kernel's beta/1024, got {b}"),
                )?;
            }
        }
        for (name, v) in [
            ("max_increment", t.max_increment),
            ("low_window", t.low_window),
            ("smooth_part", t.smooth_part),
        ] {
            if let Some(v) = v {
                positive_int(v, &f(name), 1_000_000)?;
            }
        }
        if let Some(r) = t.rtt0 {
            check(
                r.0 >= SimDuration::from_micros(1),
                f("rtt0"),
                format!("must be >= 1us, got {r}"),
            )?;
        }
        Ok(())
    }

    /// The congestion control this flow runs, defaults filled.
    pub fn cc_config(&self) -> CcConfig {
        let t = &self.cc.table;
        match t.algo.as_str() {
            "newreno" => CcConfig::NewReno,
            "cubic" => {
                let base = if t.flavor.as_deref() == Some("linux") {
                    CubicParams::linux()
                } else {
                    CubicParams::rfc9438()
                };
                CcConfig::Cubic(CubicParams {
                    flavor: if t.flavor.as_deref() == Some("linux") {
                        CubicFlavor::Linux
                    } else {
                        CubicFlavor::Rfc9438
                    },
                    c: t.c.unwrap_or(base.c),
                    beta: t.beta.unwrap_or(base.beta),
                    fast_convergence: t.fast_convergence.unwrap_or(base.fast_convergence),
                    reno_friendly: t.reno_friendly.unwrap_or(base.reno_friendly),
                    hystart: t.hystart.unwrap_or(base.hystart),
                })
            }
            "bic" => {
                let d = BicParams::default();
                CcConfig::Bic(BicParams {
                    beta: t.beta.unwrap_or(d.beta),
                    fast_convergence: t.fast_convergence.unwrap_or(d.fast_convergence),
                    max_increment: t.max_increment.map_or(d.max_increment, |v| v as u32),
                    low_window: t.low_window.map_or(d.low_window, |v| v as u32),
                    smooth_part: t.smooth_part.map_or(d.smooth_part, |v| v as u32),
                })
            }
            "westwood" => CcConfig::Westwood,
            "hybla" => {
                let d = HyblaParams::default();
                CcConfig::Hybla(HyblaParams {
                    rtt0: t.rtt0.map_or(d.rtt0, |r| r.0),
                })
            }
            _ => CcConfig::Reno,
        }
    }

    /// The forward and reverse path of each destination: `paths`, or the flow's `fwd`/`rev`.
    pub fn destinations(&self) -> Vec<DestPaths> {
        if self.paths.is_empty() {
            vec![DestPaths {
                fwd: self.fwd.clone(),
                rev: self.rev.clone(),
            }]
        } else {
            self.paths.clone()
        }
    }

    /// The largest packet (bytes on the wire, IP header included) this flow sends on its data
    /// path and on its reply path, for checks that turn a queue of packets into bytes. TCP: a
    /// full segment with its headers and timestamps (`mss` + 40 + 12: 1500 by default) and an
    /// ACK with the whole 40-byte option space (a handshake's SYN and SYN-ACK are 60); SCTP:
    /// the MTU both ways (no DATA or SACK packet exceeds it). Call after validation.
    pub(super) fn largest_packets(&self) -> (u64, u64) {
        if let Some(c) = self.sctp_config() {
            return (c.mtu as u64, c.mtu as u64);
        }
        let t = &self.tcp;
        let header = spikelab_tcp::IP_TCP_HEADER as u64;
        let ts = if t.timestamps { 12 } else { 0 };
        // SACK blocks fill what the timestamps leave of the 40 bytes: 3 blocks or 4.
        let sack = match (t.sack, t.timestamps) {
            (false, _) => 0,
            (true, true) => 4 + 3 * 8,
            (true, false) => 4 + 4 * 8,
        };
        let syn = if t.handshake { header + 20 } else { 0 };
        let data = (header + ts + t.mss.max(1) as u64).max(syn);
        let ack = (header + ts + sack).max(syn);
        (data, ack)
    }

    /// The SCTP endpoint configuration of an SCTP flow (validated).
    pub fn sctp_config(&self) -> Option<spikelab_sctp::SctpConfig> {
        (self.protocol == Protocol::Sctp)
            .then(|| self.sctp_config_checked("flow").expect("validated"))
    }

    /// `[flow.sctp]` and the flow-level `rwnd` as an endpoint configuration; errors name
    /// `{at}.sctp.<key>` or `{at}.rwnd`.
    fn sctp_config_checked(&self, at: &str) -> Result<spikelab_sctp::SctpConfig> {
        let mut spec = self.sctp.clone().unwrap_or_default();
        if let Some(r) = self.rwnd {
            // The resolved scenario holds the value in both places; equal values are not a
            // conflict.
            check(
                spec.recv_buffer.is_none() || spec.recv_buffer == Some(r),
                format!("{at}.rwnd"),
                "give rwnd or sctp.recv_buffer, not both",
            )?;
            check(
                r.0 >= 1500 && r.0 <= u32::MAX as u64,
                format!("{at}.rwnd"),
                format!(
                    "must be from 1500 bytes to 4 GiB - 1 (4294967295 bytes), got {} bytes",
                    r.0
                ),
            )?;
            spec.recv_buffer = Some(r);
        }
        spec.config(&format!("{at}.sctp"), self.destinations().len())
    }

    /// Checks what depends on the protocol: SCTP keys on a TCP flow and TCP keys on an SCTP
    /// flow are errors, not silently ignored.
    fn validate_protocol(&mut self, at: &str) -> Result<()> {
        match self.protocol {
            Protocol::Tcp => {
                check(
                    self.paths.is_empty(),
                    format!("{at}.paths"),
                    "destinations are for SCTP flows (protocol = \"sctp\"); a TCP flow takes fwd and rev",
                )?;
                check(
                    self.sctp.is_none(),
                    format!("{at}.sctp"),
                    "[flow.sctp] is for SCTP flows: set protocol = \"sctp\"",
                )
            }
            Protocol::Sctp => {
                check(
                    self.cc == CcSpec::default(),
                    format!("{at}.cc"),
                    "an SCTP flow has the congestion control of RFC 9260 §7.2; cc is for TCP flows",
                )?;
                let given = serde_json::to_value(&self.tcp).ok();
                check(
                    given == serde_json::to_value(TcpSpec::default()).ok(),
                    format!("{at}.tcp"),
                    "[flow.tcp] is for TCP flows; an SCTP flow's knobs are in [flow.sctp]",
                )?;
                check(
                    self.paths.len() <= 64,
                    format!("{at}.paths"),
                    format!("at most 64 destinations, got {}", self.paths.len()),
                )?;
                // The resolved scenario shows every SCTP knob the run used.
                let c = self.sctp_config_checked(at)?;
                self.sctp
                    .get_or_insert_with(SctpSpec::default)
                    .fill_from(&c);
                Ok(())
            }
        }
    }

    pub(super) fn validate(&mut self, at: &str) -> Result<()> {
        self.validate_protocol(at)?;
        self.validate_cc(at)?;
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
        if self.protocol == Protocol::Sctp {
            // [flow.tcp] was checked to be untouched; nothing TCP to resolve.
            return Ok(());
        }
        if let Some(r) = self.rwnd {
            // The resolved scenario holds the value in both places (so tcp.rwnd does not show
            // a default that is not used); equal values are not a conflict.
            check(
                self.tcp.rwnd == TcpSpec::default().rwnd || self.tcp.rwnd == r,
                format!("{at}.rwnd"),
                "give rwnd or tcp.rwnd, not both",
            )?;
            check(
                r.0 <= 1 << 30 && r.0 >= self.tcp.mss.max(1) as u64,
                format!("{at}.rwnd"),
                format!(
                    "must be from one MSS ({} bytes) to 1 GiB (the largest TCP window, \
                     RFC 7323 section 2.3), got {}",
                    self.tcp.mss, r.0
                ),
            )?;
            self.tcp.rwnd = r;
        }
        let t = &mut self.tcp;
        let at = format!("{at}.tcp");
        positive_int(t.mss, &format!("{at}.mss"), 65_495)?;
        positive_int(t.initial_window, &format!("{at}.initial_window"), 100_000)?;
        positive_int(t.abc_limit, &format!("{at}.abc_limit"), 1000)?;
        positive_int(t.dupthresh, &format!("{at}.dupthresh"), 1000)?;
        positive_int(t.delack_segments, &format!("{at}.delack_segments"), 1000)?;
        check(
            (0..=1000).contains(&t.quickack),
            format!("{at}.quickack"),
            format!(
                "must be an integer from 0 (off) to 1000, got {}",
                t.quickack
            ),
        )?;
        check(
            t.quickack_idle != DurationOr::Fixed(Duration(SimDuration::ZERO)),
            format!("{at}.quickack_idle"),
            "must be > 0 (or \"rto\")",
        )?;
        check(
            (0..=10_000).contains(&t.timer_hz),
            format!("{at}.timer_hz"),
            format!(
                "must be 0 (exact timers) or a tick rate in Hz up to 10000 (the kernel's \
                 CONFIG_HZ: 100, 250, 300 or 1000), got {}",
                t.timer_hz
            ),
        )?;
        check(
            (0..=255).contains(&t.comp_sack),
            format!("{at}.comp_sack"),
            format!(
                "must be an integer from 0 (off) to 255 (Linux tcp_comp_sack_nr), got {}",
                t.comp_sack
            ),
        )?;
        check(
            (0..=1_000_000).contains(&t.small_queue),
            format!("{at}.small_queue"),
            format!(
                "must be an integer from 0 (no limit) to 1000000 packets, got {}",
                t.small_queue
            ),
        )?;
        check(
            t.comp_sack_delay.0 <= SimDuration::from_secs(1),
            format!("{at}.comp_sack_delay"),
            "must be at most 1 s",
        )?;
        check(
            t.comp_sack_slack.0 <= SimDuration::from_secs(1),
            format!("{at}.comp_sack_slack"),
            "must be at most 1 s",
        )?;
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
            t.delack_timeout != DurationOr::Fixed(Duration(SimDuration::ZERO)),
            format!("{at}.delack_timeout"),
            "must be > 0 (or \"ato\")",
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
        if t.rack {
            check(
                t.sack,
                format!("{at}.rack"),
                "RACK (RFC 8985) needs sack = true",
            )?;
            check(
                t.variant == VariantSpec::Sack,
                format!("{at}.rack"),
                "RACK (RFC 8985) marks losses for SACK recovery: it needs variant = \"sack\"",
            )?;
        }
        if t.tlp {
            check(
                t.sack,
                format!("{at}.tlp"),
                "the tail loss probe (RFC 8985 section 7) needs sack = true",
            )?;
        }
        if t.prr {
            check(
                t.variant == VariantSpec::Sack,
                format!("{at}.prr"),
                "PRR (RFC 6937) runs in SACK recovery: it needs variant = \"sack\"",
            )?;
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
        // Whatever `spurious` lists: the frto and linux detectors run it, and a setting that
        // could not run is not left lying in the file.
        if has("frto") {
            check(
                t.frto != FrtoSpec::Off,
                format!("{at}.frto"),
                "the frto detector (RFC 5682) cannot run with frto = \"off\" (which turns the \
                 linux detector's F-RTO off, Linux tcp_frto = 0)",
            )?;
        }
        if t.frto == FrtoSpec::Sack {
            check(
                t.sack,
                format!("{at}.frto"),
                "SACK-enhanced F-RTO (RFC 5682 section 3) needs sack = true (\"auto\" picks the \
                 basic algorithm without SACK)",
            )?;
        }
        t.block_fr_after_rto
            .get_or_insert(t.variant != VariantSpec::Reno);
        let ns2 = t.profile.as_deref() == Some("ns2");
        check(
            ns2 == (t.rto.estimator == EstimatorSpec::Ns2),
            format!("{at}.rto.estimator"),
            if ns2 {
                "the ns2 profile runs ns-2.35's own timer: estimator = \"ns2\" (or leave it out)"
            } else {
                "the ns2 estimator runs only in ns-2.35's agent: set tcp.profile = \"ns2\""
            },
        )?;
        let r = &mut t.rto;
        let at = format!("{at}.rto");
        let (min, max) = match r.estimator {
            EstimatorSpec::Rfc6298 => (d_ms(1000), d_ms(60_000)),
            EstimatorSpec::Linux => (d_ms(200), d_ms(120_000)),
            EstimatorSpec::Ns2 => (d_ms(200), d_ms(60_000)),
        };
        let min = *r.min.get_or_insert(min);
        let max = *r.max.get_or_insert(max);
        check(
            min.0 > SimDuration::ZERO,
            format!("{at}.min"),
            format!("must be > 0, got {min}"),
        )?;
        // A floor below a millisecond lets the timer fire far faster than any path's round
        // trip: the run crawls through expiries.
        check(
            min.0 >= d_ms(1).0,
            format!("{at}.min"),
            format!("must be at least 1ms, got {min}"),
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
        // Not bounded by min: Linux's route rto_min does not raise TCP_TIMEOUT_INIT, and RFC
        // 6298 (2.1) sets the initial RTO apart from the floor of (2.4).
        check(
            r.initial <= max,
            format!("{at}.initial"),
            format!("must be at most max ({max}), got {}", r.initial),
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
        check(
            r.phase.is_zero() || (r.estimator == EstimatorSpec::Ns2 && r.phase.0 < r.granularity.0),
            format!("{at}.phase"),
            format!(
                "only the ns2 estimator takes phase, below its tick (granularity {}), got {}",
                r.granularity, r.phase
            ),
        )?;
        if r.estimator != EstimatorSpec::Rfc6298 {
            let who = if r.estimator == EstimatorSpec::Linux {
                "the kernel's"
            } else {
                "ns-2's"
            };
            let fixed = [
                ("alpha", r.alpha, RtoSpec::default_alpha()),
                ("beta", r.beta, RtoSpec::default_beta()),
                ("k", r.k, RtoSpec::default_k()),
            ];
            for (name, v, d) in fixed {
                check(
                    v == d,
                    format!("{at}.{name}"),
                    format!(
                        "only the rfc6298 estimator takes {name} (the {} estimator's gains \
                         are {who}: 1/8, 1/4 and 4), got {v}",
                        r.estimator.name()
                    ),
                )?;
            }
            check(
                r.estimator != EstimatorSpec::Linux
                    || r.granularity.0 == RtoSpec::default_granularity().0,
                format!("{at}.granularity"),
                format!(
                    "only the rfc6298 estimator takes granularity (the linux estimator's \
                     clock is the kernel's: tcp.timer_hz), got {}",
                    r.granularity
                ),
            )?;
        }
        check(
            r.estimator != EstimatorSpec::Ns2 || r.granularity.0 > SimDuration::ZERO,
            format!("{at}.granularity"),
            "the ns2 estimator's tick (tcpTick_) must be > 0",
        )?;
        self.validate_ns2(&at[..at.len() - ".tcp.rto".len()])
    }

    /// The `ns2` profile runs ns-2.35's agent and sink, which read only some keys: the others
    /// must keep their defaults, and the ns2 estimator goes with the profile and nothing else.
    fn validate_ns2(&self, at: &str) -> Result<()> {
        let t = &self.tcp;
        if t.profile.as_deref() != Some("ns2") {
            return Ok(());
        }
        let d = TcpSpec::default();
        let unmodelled: [(&str, bool, &str); 15] = [
            ("rack", t.rack, "it has no RACK"),
            ("tlp", t.tlp, "it has no tail loss probe"),
            ("prr", t.prr, "it has no PRR"),
            ("dsack", t.dsack, "its sinks' DSACK option is not modelled"),
            ("abc", t.abc, "it grows cwnd per ACK, without byte counting"),
            (
                "spurious",
                !t.spurious.is_empty() && t.spurious != ["eifel"],
                "it runs Eifel alone (spikelab-tcp ns2/eifel.rs); its F-RTO is not modelled",
            ),
            ("rcv_autotune", t.rcv_autotune, "its window_ is fixed"),
            (
                "comp_sack",
                t.comp_sack != 0,
                "its sinks do not compress ACKs",
            ),
            (
                "quickack",
                t.quickack != 0,
                "its sinks have no quick-ACK mode",
            ),
            (
                "timer_hz",
                t.timer_hz != 0,
                "its timers tick at rto.granularity (tcpTick_), not in jiffies",
            ),
            (
                "kernel_rtt_samples",
                t.kernel_rtt_samples,
                "it times one packet per round trip",
            ),
            (
                "rearm_rto_on_sack",
                t.rearm_rto_on_sack,
                "it restarts its timer by its own rules",
            ),
            (
                "cwnd_limited_check",
                t.cwnd_limited_check,
                "it grows cwnd on every new ACK",
            ),
            (
                "small_queue",
                t.small_queue != d.small_queue,
                "it has no sender queue",
            ),
            (
                "delack_timeout",
                t.delack_timeout == DurationOr::Word(Ato),
                "its DelAck sink has a fixed interval_",
            ),
        ];
        for (key, set, why) in unmodelled {
            check(
                !set,
                format!("{at}.tcp.{key}"),
                format!("the ns2 profile runs ns-2.35's Agent/TCP: {why}; drop the key"),
            )?;
        }
        check(
            t.spurious.is_empty() || t.response != ResponseSpec::Eifel,
            format!("{at}.tcp.response"),
            "Eifel on the ns2 agent responds as its 2000 paper (\"undo\") or not (\"none\"); \
             RFC 4015's response is not modelled",
        )?;
        check(
            t.delack_segments == 2,
            format!("{at}.tcp.delack_segments"),
            "ns-2.35's DelAck sink ACKs every second packet; drop the key",
        )?;
        match self.cc_config() {
            CcConfig::Reno => Ok(()),
            CcConfig::Cubic(_) | CcConfig::Hybla(_) => self.validate_ns2_linux(at),
            _ => Err(ScenarioError::new(
                format!("{at}.cc"),
                "the ns2 profile's agents grow as Reno (Agent/TCP/Reno, /Newreno, /Sack1: \
                 cc = \"reno\") or run ns-2.35's Linux modules (Agent/TCP/Linux: cc = \
                 \"cubic\" or \"hybla\")",
            )),
        }
    }

    /// `cc = "cubic"` or `"hybla"` under the `ns2` profile: ns-2.35's `Agent/TCP/Linux` with
    /// `select_ca` (spikelab-tcp `ns2/linux.rs`), which runs the modules at ns-2.35's values
    /// (Hybla's `rtt0` may be set, in whole ms) and recovers losses from SACK blocks alone.
    fn validate_ns2_linux(&self, at: &str) -> Result<()> {
        let t = &self.tcp;
        let algo = self.cc.table.algo.clone();
        check(
            t.variant == VariantSpec::Sack,
            format!("{at}.tcp.variant"),
            format!(
                "ns-2.35's Agent/TCP/Linux ({algo}) detects losses from SACK blocks only \
                 (ScoreBoard1): variant = \"sack\" (the TCPSink/Sack1 sink)"
            ),
        )?;
        check(
            t.dupthresh == 3,
            format!("{at}.tcp.dupthresh"),
            "Agent/TCP/Linux marks losses 3 packets below the highest SACKed one \
             (ScoreBoard1's dupack_threshold); drop the key",
        )?;
        check(
            !t.timestamps,
            format!("{at}.tcp.timestamps"),
            "Agent/TCP/Linux with timestamps_ (RTT rounding, CUBIC's delay_min) is not \
             modelled; drop the key",
        )?;
        check(
            t.spurious.is_empty(),
            format!("{at}.tcp.spurious"),
            "Agent/TCP/Linux has no spurious-retransmission detector; drop the key",
        )?;
        let c = &self.cc.table;
        let fixed = [
            ("flavor", c.flavor.is_some()),
            ("hystart", c.hystart.is_some()),
            ("c", c.c.is_some()),
            ("beta", c.beta.is_some()),
            ("fast_convergence", c.fast_convergence.is_some()),
            ("reno_friendly", c.reno_friendly.is_some()),
        ];
        for (key, set) in fixed {
            check(
                !set,
                format!("{at}.cc.{key}"),
                format!(
                    "ns-2.35's tcp_{algo}.c runs at its own values (CUBIC 2.1: beta \
                     819/1024, bic_scale 41, fast convergence, TCP friendliness, no HyStart); \
                     drop the key"
                ),
            )?;
        }
        if let Some(r) = c.rtt0 {
            check(
                r.0.as_nanos() % 1_000_000 == 0,
                format!("{at}.cc.rtt0"),
                format!("tcp_hybla.c's rtt0 is whole milliseconds (jiffies), got {r}"),
            )?;
        }
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
            EstimatorSpec::Ns2 => RtoAlgorithm::Ns2 {
                tick: r.granularity.0,
                phase: r.phase.0,
            },
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
            rwnd: self.rwnd.map_or(t.rwnd.0, |r| r.0),
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
            delack_timeout: t
                .delack_timeout
                .fixed_or(TcpConfig::default().delack_timeout),
            delack_ato: t.delack_timeout == DurationOr::Word(Ato),
            delack_segments: t.delack_segments as u32,
            quickack: t.quickack as u32,
            quickack_idle: t.quickack_idle.fixed_or(TcpConfig::default().quickack_idle),
            quickack_idle_rto: t.quickack_idle == DurationOr::Word(Rto),
            comp_sack: t.comp_sack as u32,
            comp_sack_delay: t.comp_sack_delay.0,
            comp_sack_slack: t.comp_sack_slack.0,
            rcv_autotune: t.rcv_autotune,
            rearm_rto_on_retransmit: t.rearm_rto_on_retransmit,
            rearm_rto_on_sack: t.rearm_rto_on_sack,
            kernel_rtt_samples: t.kernel_rtt_samples,
            timer_hz: t.timer_hz as u32,
            ssthresh_basis: match t.ssthresh_basis {
                SsthreshBasisSpec::Flight => SsthreshBasis::FlightSize,
                SsthreshBasisSpec::Cwnd => SsthreshBasis::Cwnd,
            },
            cwnd_limited_check: t.cwnd_limited_check,
            handshake: t.handshake,
            spurious: self.spurious_config(),
            cc: self.cc_config(),
            rack: t.rack,
            tlp: t.tlp,
            prr: t.prr,
            ns2: t.profile.as_deref() == Some("ns2"),
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
                FrtoSpec::Auto | FrtoSpec::Off if t.sack => FrtoVariant::SackEnhanced,
                FrtoSpec::Auto | FrtoSpec::Off => FrtoVariant::Basic,
            },
            linux_frto: t.frto != FrtoSpec::Off,
            response: match t.response {
                ResponseSpec::None => Response::None,
                ResponseSpec::Eifel => Response::Eifel,
                ResponseSpec::Undo => Response::Undo,
            },
        }
    }
}
