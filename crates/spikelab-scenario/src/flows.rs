//! Flows: the app, the protocol and its paths, and the checks that span a flow's tables. A
//! flow's TCP knobs are in [`super::tcp`], its congestion control in [`super::cc`], its SCTP
//! knobs in spikelab-sctp's `schema` (re-exported by [`super::sctp`]); named profiles (`linux`,
//! `ns2`) in [`super::profiles`].

use super::*;
use serde::de;
use serde::Deserializer;
use spikelab_core::units::Bytes;

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

fn default_fwd() -> String {
    "fwd".into()
}
fn default_rev() -> String {
    "rev".into()
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

impl FlowSpec {
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
            spikelab_sctp::schema::check_recv_buffer(r, &format!("{at}.rwnd"))?;
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
        self.tcp.validate(&format!("{at}.tcp"))?;
        self.validate_ns2(at)
    }
}
