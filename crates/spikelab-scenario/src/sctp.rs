//! SCTP flows: `protocol = "sctp"`, the destinations' paths and the `[flow.sctp]` knobs.

use super::*;
use spikelab_core::units::Bytes;
use spikelab_sctp::{Profile as SctpProfile, SctpConfig};

/// A flow's transport protocol.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Tcp,
    Sctp,
}

impl Protocol {
    pub fn is_tcp(&self) -> bool {
        *self == Protocol::Tcp
    }
}

/// One destination of an SCTP association: the path its packets take to the peer and the path
/// the peer's replies take back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DestPaths {
    pub fwd: String,
    pub rev: String,
}

/// `[flow.sctp]`: every key optional; the profile gives the rest (RFC 4960 §15 / RFC 9260 §16).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SctpSpec {
    /// `"rfc9260"` (default), `"rfc4960"` or `"ns2"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Index into `paths` of the primary destination (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_initial: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_min: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_max: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "alpha")]
    pub rto_alpha: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "beta")]
    pub rto_beta: Option<f64>,
    /// Cap E2's doubling at RTO.Max (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_max_cap_on_backoff: Option<bool>,
    /// Max.Burst; 0 turns the limit off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_burst: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_max_retrans: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assoc_max_retrans: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_init_retransmits: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeats: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hb_interval: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sack_delay: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sack_freq: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recv_buffer: Option<Bytes>,
    /// RFC 7829 PotentiallyFailed.Max.Retrans (PF off when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pf_max_retrans: Option<i64>,
    /// RFC 7829 §5 Primary.Switchover.Max.Retrans (off when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psmr: Option<i64>,
    /// Bytes per DATA chunk (default: as many as fit the MTU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_validation: Option<bool>,
}

/// Profiles accepted in `[flow.sctp] profile`.
pub const SCTP_PROFILES: &[&str] = &["rfc9260", "rfc4960", "ns2"];

fn non_negative(v: i64, field: &str, max: i64) -> Result<u32> {
    check(v >= 0, field, format!("must be >= 0, got {v}"))?;
    check(v <= max, field, format!("must be <= {max}, got {v}"))?;
    Ok(v as u32)
}

impl SctpSpec {
    /// Every key of the table set to the value `c` (the configuration this table resolved to)
    /// runs with, so the resolved scenario shows what ran; running it again gives `c` again.
    pub fn fill_from(&mut self, c: &SctpConfig) {
        let d = |x: spikelab_core::SimDuration| Some(Duration(x));
        self.profile = Some(c.profile.name().to_string());
        self.primary = Some(c.primary as i64);
        self.rto_initial = d(c.rto_initial);
        self.rto_min = d(c.rto_min);
        self.rto_max = d(c.rto_max);
        self.rto_alpha = Some(c.rto_alpha);
        self.rto_beta = Some(c.rto_beta);
        self.rto_max_cap_on_backoff = Some(c.rto_max_cap_on_backoff);
        self.max_burst = Some(c.max_burst.map_or(0, i64::from));
        self.path_max_retrans = Some(c.path_max_retrans.into());
        self.assoc_max_retrans = Some(c.assoc_max_retrans.into());
        self.max_init_retransmits = Some(c.max_init_retransmits.into());
        self.heartbeats = Some(c.heartbeats);
        self.hb_interval = d(c.hb_interval);
        self.sack_delay = d(c.sack_delay);
        self.sack_freq = Some(c.sack_freq.into());
        self.mtu = Some(c.mtu.into());
        self.recv_buffer = Some(Bytes(c.recv_buffer.into()));
        self.pf_max_retrans = c.pf_max_retrans.map(i64::from);
        self.psmr = c.psmr.map(i64::from);
        self.message_size = c.message_size.map(i64::from);
        self.cwnd_validation = Some(c.cwnd_validation);
    }

    /// The endpoint configuration for `n` destinations, every knob checked; errors name
    /// `{at}.<key>` (`at` = `flow[i].sctp`).
    pub fn config(&self, at: &str, n: usize) -> Result<SctpConfig> {
        let f = |k: &str| format!("{at}.{k}");
        let profile = match self.profile.as_deref() {
            None | Some("rfc9260") => SctpProfile::Rfc9260,
            Some("rfc4960") => SctpProfile::Rfc4960,
            Some("ns2") => SctpProfile::Ns2,
            Some(p) => {
                return Err(ScenarioError::new(
                    f("profile"),
                    format!(
                        "unknown SCTP profile {p:?} (known: {})",
                        SCTP_PROFILES.join(", ")
                    ),
                ))
            }
        };
        let mut c = SctpConfig::new(profile, n);
        if let Some(p) = self.primary {
            check(
                p >= 0 && (p as usize) < n,
                f("primary"),
                format!(
                    "must be the index of one of the flow's {n} destination(s) (0 to {}), got {p}",
                    n - 1
                ),
            )?;
            c.primary = p as usize;
        }
        if let Some(d) = self.rto_initial {
            c.rto_initial = d.0;
        }
        if let Some(d) = self.rto_min {
            c.rto_min = d.0;
        }
        if let Some(d) = self.rto_max {
            c.rto_max = d.0;
        }
        if let Some(a) = self.rto_alpha {
            c.rto_alpha = a;
        }
        if let Some(b) = self.rto_beta {
            c.rto_beta = b;
        }
        if let Some(b) = self.rto_max_cap_on_backoff {
            c.rto_max_cap_on_backoff = b;
        }
        if let Some(m) = self.max_burst {
            let m = non_negative(m, &f("max_burst"), 1_000_000)?;
            c.max_burst = (m > 0).then_some(m);
        }
        if let Some(v) = self.path_max_retrans {
            c.path_max_retrans = non_negative(v, &f("path_max_retrans"), 1000)?;
        }
        if let Some(v) = self.assoc_max_retrans {
            c.assoc_max_retrans = non_negative(v, &f("assoc_max_retrans"), 1000)?;
        }
        if let Some(v) = self.max_init_retransmits {
            c.max_init_retransmits = non_negative(v, &f("max_init_retransmits"), 1000)?;
        }
        if let Some(h) = self.heartbeats {
            c.heartbeats = h;
        }
        if let Some(d) = self.hb_interval {
            c.hb_interval = d.0;
        }
        if let Some(d) = self.sack_delay {
            c.sack_delay = d.0;
        }
        if let Some(v) = self.sack_freq {
            c.sack_freq = non_negative(v, &f("sack_freq"), 1000)?;
        }
        if let Some(v) = self.mtu {
            check(
                (576..=65_535).contains(&v),
                f("mtu"),
                format!("must be from 576 to 65535 bytes, got {v}"),
            )?;
            c.mtu = v as u32;
        }
        if let Some(b) = self.recv_buffer {
            check(
                b.0 >= 1500 && b.0 <= u32::MAX as u64,
                f("recv_buffer"),
                format!(
                    "must be from 1500 bytes to 4 GiB - 1 (4294967295 bytes), got {} bytes",
                    b.0
                ),
            )?;
            c.recv_buffer = b.0 as u32;
        }
        if let Some(v) = self.pf_max_retrans {
            c.pf_max_retrans = Some(non_negative(v, &f("pf_max_retrans"), 1000)?);
        }
        if let Some(v) = self.psmr {
            c.psmr = Some(non_negative(v, &f("psmr"), 1000)?);
        }
        if let Some(v) = self.message_size {
            check(v >= 1, f("message_size"), format!("must be >= 1, got {v}"))?;
            // One message is one DATA chunk (not fragmented): at most one packet's payload.
            // Checked here too so that the error shows the value as written, also one beyond
            // the configuration's 32 bits.
            check(
                v <= c.max_payload() as i64,
                f("message_size"),
                c.message_too_large(v as u64),
            )?;
            c.message_size = Some(v as u32);
        }
        if let Some(v) = self.cwnd_validation {
            c.cwnd_validation = v;
        }
        c.validate()
            .map_err(|(field, msg)| ScenarioError::new(f(field), msg))?;
        Ok(c)
    }
}
