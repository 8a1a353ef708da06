//! A TCP flow's knobs (`[flow.tcp]`): the sender's and receiver's options, the RTO estimator
//! (`[flow.tcp.rto]`), the spurious-retransmission detectors; their checks and the endpoint
//! configuration they make; what the `ns2` profile's agents take.

use super::*;
use spikelab_core::units::{Ato, Bytes, DurationOr, DurationOrAto, DurationOrRto, Rto};
use spikelab_tcp::cc::{CcConfig, RenoParams};
use spikelab_tcp::ns2::Ns2LinuxAgent;
use spikelab_tcp::spurious::{DetectorKind, DetectorSet, FrtoVariant, Response, SpuriousConfig};
use spikelab_tcp::{RtoAlgorithm, RtoConfig, SsthreshBasis, TcpConfig, Variant};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VariantSpec {
    Reno,
    NewReno,
    Sack,
}

/// Which of ns-2.35's one-way senders the `ns2` profile runs (`tcp.ns2_agent`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ns2AgentSpec {
    /// `Agent/TCP/Reno`, `/Newreno` or `/Sack1`, by `variant` (Reno only).
    Tcp,
    /// `Agent/TCP/Linux` with `select_ca` of the flow's `cc` (`reno`, `cubic`, `hybla`).
    Linux,
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

    /// The RTO's floor and ceiling when the file sets neither: RFC 6298 (2.4), (2.5) and
    /// Linux's `TCP_RTO_MIN`, `TCP_RTO_MAX` as spikelab-tcp's `RtoConfig` states them;
    /// ns-2.35's `minrto_` 0.2 s and `maxrto_` 60 s (`tcl/lib/ns-default.tcl`). The one place
    /// these defaults live for the scenario: validation fills them, `tcp_config` falls back
    /// on them.
    pub fn default_bounds(self) -> (SimDuration, SimDuration) {
        match self {
            EstimatorSpec::Rfc6298 => {
                let c = RtoConfig::rfc6298();
                (c.min, c.max)
            }
            EstimatorSpec::Linux => {
                let c = RtoConfig::linux();
                (c.min, c.max)
            }
            EstimatorSpec::Ns2 => (SimDuration::from_millis(200), SimDuration::from_secs(60)),
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
    /// The `ns2` profile's sender: `Agent/TCP/Linux` (`linux`) or the Reno family (`tcp`);
    /// unset: `linux` for CUBIC and Hybla, which ns-2.35 runs nowhere else, `tcp` for Reno.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns2_agent: Option<Ns2AgentSpec>,
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
    /// PAWS at the receiver (RFC 7323 §5.3): with timestamps, a segment with a TSval older than
    /// TS.Recent is discarded.
    pub paws: bool,
    /// Ticks of the sender's timestamp clock a TSval may lag TS.Recent and pass (Linux: 1).
    pub paws_window: i64,
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
    /// Linux 3.10-4.x: a sender without SACK clamps cwnd to the flight + 3 segments when an
    /// ACK reaches exactly the Loss state's `high_seq` (`tcp_moderate_cwnd`).
    pub moderate_cwnd: bool,
}

impl Default for TcpSpec {
    fn default() -> Self {
        let c = TcpConfig::default();
        TcpSpec {
            profile: None,
            ns2_agent: None,
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
            paws: c.paws,
            paws_window: c.paws_window as i64,
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
            moderate_cwnd: c.moderate_cwnd,
        }
    }
}

impl TcpSpec {
    /// Checks `[flow.tcp]` (at `at`) and fills in what depends on other keys.
    pub(super) fn validate(&mut self, at: &str) -> Result<()> {
        let t = self;
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
            (0..=1000).contains(&t.paws_window),
            format!("{at}.paws_window"),
            format!(
                "must be an integer from 0 (RFC 7323) to 1000 timestamp ticks (Linux: 1), got {}",
                t.paws_window
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
        let (min, max) = r.estimator.default_bounds();
        let min = *r.min.get_or_insert(Duration(min));
        let max = *r.max.get_or_insert(Duration(max));
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
        Ok(())
    }
}

impl FlowSpec {
    /// The `ns2` profile runs ns-2.35's agent and sink, which read only some keys: the others
    /// must keep their defaults, and the ns2 estimator goes with the profile and nothing else.
    pub(super) fn validate_ns2(&self, at: &str) -> Result<()> {
        let t = &self.tcp;
        if t.profile.as_deref() != Some("ns2") {
            return check(
                t.ns2_agent.is_none(),
                format!("{at}.tcp.ns2_agent"),
                "chooses one of ns-2.35's agents: only with profile = \"ns2\"",
            );
        }
        let d = TcpSpec::default();
        let unmodelled: [(&str, bool, &str); 17] = [
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
            ("paws", t.paws, "its sinks have no PAWS check"),
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
                "moderate_cwnd",
                t.moderate_cwnd,
                "its Reno and NewReno agents keep cwnd when recovery ends",
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
        let cc = self.cc_config();
        match (&cc, t.ns2_agent) {
            (_, Some(Ns2AgentSpec::Tcp)) if Ns2LinuxAgent::runs(cc.name()) => {
                Err(ScenarioError::new(
                    format!("{at}.tcp.ns2_agent"),
                    format!(
                    "ns-2.35 runs {} only in Agent/TCP/Linux (select_ca): ns2_agent = \"linux\" \
                     or drop the key",
                    cc.name()
                ),
                ))
            }
            _ if Ns2LinuxAgent::runs(cc.name()) => self.validate_ns2_linux(at),
            (CcConfig::Reno(_), Some(Ns2AgentSpec::Linux)) => self.validate_ns2_linux(at),
            (CcConfig::Reno(_), _) => Ok(()),
            _ => Err(ScenarioError::new(
                format!("{at}.cc"),
                format!(
                    "the ns2 profile's agents grow as Reno (Agent/TCP/Reno, /Newreno, /Sack1: \
                     cc = {:?}) or run ns-2.35's Linux modules (Agent/TCP/Linux: cc = {}, or \
                     \"reno\" with ns2_agent = \"linux\")",
                    CcConfig::Reno(RenoParams).name(),
                    Ns2LinuxAgent::MODULES
                        .map(|m| format!("{m:?}"))
                        .join(" or ")
                ),
            )),
        }
    }

    /// A congestion control ns-2.35 runs in `Agent/TCP/Linux` (CUBIC, Hybla) under the `ns2`
    /// profile: that agent with `select_ca` (spikelab-tcp `ns2/linux.rs`), which runs the
    /// modules at ns-2.35's values (Hybla's `rtt0` may be set, in whole ms) and recovers losses
    /// from SACK blocks alone.
    fn validate_ns2_linux(&self, at: &str) -> Result<()> {
        let t = &self.tcp;
        let algo = self.cc.algo();
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
        Ns2LinuxAgent::check_cc(&self.cc.table, &format!("{at}.cc"))
    }

    /// The TCP configuration this flow runs with.
    pub fn tcp_config(&self) -> TcpConfig {
        let t = &self.tcp;
        let r = &t.rto;
        let (default_min, default_max) = r.estimator.default_bounds();
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
                min: r.min.map_or(default_min, |d| d.0),
                max: r.max.map_or(default_max, |d| d.0),
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
            paws: t.paws,
            paws_window: t.paws_window as u32,
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
            moderate_cwnd: t.moderate_cwnd,
            handshake: t.handshake,
            spurious: self.spurious_config(),
            cc: self.cc_config(),
            rack: t.rack,
            tlp: t.tlp,
            prr: t.prr,
            ns2: t.profile.as_deref() == Some("ns2"),
            ns2_linux_agent: t.ns2_agent == Some(Ns2AgentSpec::Linux),
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
