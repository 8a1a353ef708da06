//! Flows: apps, TCP options, RTO estimators, spurious-timeout detectors, named profiles (`linux`).

use super::*;
use crate::units::Bytes;
use spikelab_tcp::spurious::{DetectorKind, DetectorSet, FrtoVariant, Response, SpuriousConfig};
use spikelab_tcp::{RtoAlgorithm, RtoConfig, TcpConfig, Variant};

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
pub(super) fn apply_profiles(root: &mut toml::Value) -> Result<()> {
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

/// Congestion controls the simulator knows.
pub const CONGESTION_CONTROLS: &[&str] = &["reno"];

impl FlowSpec {
    pub(super) fn validate(&mut self, at: &str) -> Result<()> {
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
