//! The `[flow.sctp]` table as a scenario gives it (behind the `serde` feature): every knob
//! optional, the profile supplying the rest (RFC 4960 §15 / RFC 9260 §16, see [`SctpConfig::new`]);
//! [`SctpSpec::config`] checks the knobs given and makes the endpoint's configuration,
//! [`SctpSpec::fill_from`] writes back what ran. Errors name the field by its path in the
//! scenario, one line ([`ConfigError`]).
//!
//! A new knob (docs/adding-a-model.md, "An SCTP knob"): its field and per-profile default in
//! [`SctpConfig`] (`config.rs`, with any cross-check in `SctpConfig::validate`), and here its
//! `Option` in [`SctpSpec`], one line in `fill_from` and its range check in `config`.

use serde::{Deserialize, Serialize};
pub use spikelab_core::config::{check, ConfigError};
use spikelab_core::units::{Bytes, Duration};
use spikelab_core::SimDuration;

use crate::config::{Profile, SctpConfig};

pub type Result<T> = std::result::Result<T, ConfigError>;

/// Profiles accepted in `[flow.sctp] profile`, the default first.
pub const SCTP_PROFILES: &[&str] = &[
    Profile::ALL[0].name(),
    Profile::ALL[1].name(),
    Profile::ALL[2].name(),
];

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

/// `v` is an integer from 0 to `max`: "must be >= 0" / "must be <= max", naming `field`.
pub fn non_negative(v: i64, field: &str, max: i64) -> Result<u32> {
    check(v >= 0, field, format!("must be >= 0, got {v}"))?;
    check(v <= max, field, format!("must be <= {max}, got {v}"))?;
    Ok(v as u32)
}

/// The receive buffer's range (also the flow-level `rwnd`'s, which sets it): 1500 bytes to
/// 4 GiB - 1, the 32 bits of a_rwnd (RFC 9260 §3.3.4).
pub fn check_recv_buffer(b: Bytes, field: &str) -> Result<u32> {
    check(
        b.0 >= 1500 && b.0 <= u32::MAX as u64,
        field,
        format!(
            "must be from 1500 bytes to 4 GiB - 1 (4294967295 bytes), got {} bytes",
            b.0
        ),
    )?;
    Ok(b.0 as u32)
}

impl SctpSpec {
    /// Every key of the table set to the value `c` (the configuration this table resolved to)
    /// runs with, so the resolved scenario shows what ran; running it again gives `c` again.
    pub fn fill_from(&mut self, c: &SctpConfig) {
        let d = |x: SimDuration| Some(Duration(x));
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
            None => Profile::ALL[0],
            Some(p) => Profile::from_name(p).ok_or_else(|| {
                ConfigError::new(
                    f("profile"),
                    format!(
                        "unknown SCTP profile {p:?} (known: {})",
                        SCTP_PROFILES.join(", ")
                    ),
                )
            })?,
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
            c.recv_buffer = check_recv_buffer(b, &f("recv_buffer"))?;
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
            .map_err(|(field, msg)| ConfigError::new(f(field), msg))?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_table_is_the_default_profile_and_fills_back_to_itself() {
        let c = SctpSpec::default().config("flow[0].sctp", 2).unwrap();
        assert_eq!(c, SctpConfig::rfc9260(2));
        let mut s = SctpSpec::default();
        s.fill_from(&c);
        assert_eq!(s.profile.as_deref(), Some("rfc9260"));
        assert_eq!(s.rto_initial, Some(Duration(SimDuration::from_secs(1))));
        assert_eq!(s.max_burst, Some(4));
        assert_eq!(s.pf_max_retrans, None);
        assert_eq!(s.config("flow[0].sctp", 2).unwrap(), c);
    }

    #[test]
    fn every_profile_is_named_and_an_unknown_one_lists_them() {
        for p in Profile::ALL {
            let s = SctpSpec {
                profile: Some(p.name().into()),
                ..SctpSpec::default()
            };
            assert_eq!(s.config("x", 1).unwrap(), SctpConfig::new(p, 1));
        }
        let s = SctpSpec {
            profile: Some("rfc2960".into()),
            ..SctpSpec::default()
        };
        assert_eq!(
            s.config("flow[1].sctp", 1).unwrap_err().to_string(),
            "flow[1].sctp.profile: unknown SCTP profile \"rfc2960\" (known: rfc9260, rfc4960, ns2)"
        );
    }

    #[test]
    fn a_bad_value_names_its_field_in_one_line() {
        let bad = |s: SctpSpec| s.config("flow[0].sctp", 1).unwrap_err().to_string();
        assert_eq!(
            bad(SctpSpec {
                max_burst: Some(-1),
                ..SctpSpec::default()
            }),
            "flow[0].sctp.max_burst: must be >= 0, got -1"
        );
        assert_eq!(
            bad(SctpSpec {
                mtu: Some(100),
                ..SctpSpec::default()
            }),
            "flow[0].sctp.mtu: must be from 576 to 65535 bytes, got 100"
        );
        assert_eq!(
            bad(SctpSpec {
                recv_buffer: Some(Bytes(10)),
                ..SctpSpec::default()
            }),
            "flow[0].sctp.recv_buffer: must be from 1500 bytes to 4 GiB - 1 (4294967295 bytes), \
             got 10 bytes"
        );
        assert_eq!(
            bad(SctpSpec {
                rto_alpha: Some(2.0),
                ..SctpSpec::default()
            }),
            "flow[0].sctp.rto_alpha: must be a real in [0, 1], got 2"
        );
    }
}
