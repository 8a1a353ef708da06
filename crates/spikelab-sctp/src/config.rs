//! Every knob of the SCTP model, with the defaults of RFC 4960 §15 or RFC 9260 §16.

use crate::packet::{COMMON_HEADER, DATA_HEADER, IPV4_HEADER};
use crate::rto::RtoParams;
use spikelab_core::SimDuration;

/// Which RFC supplies the defaults.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Profile {
    /// RFC 4960: RTO.Initial 3 s; congestion control in units of the MTU (IW floor 4380 B);
    /// Max.Burst applied by clamping cwnd (§6.1 D).
    Rfc4960,
    /// RFC 9260: RTO.Initial 1 s; congestion control in units of the PMDCS (IW floor 4404 B
    /// for IPv4, §7.2.1); Max.Burst applied by limiting the packets of one send opportunity.
    Rfc9260,
    /// ns-2.35's Agent/SCTP with its Tcl defaults (`tcl/lib/ns-default.tcl`) and the rules of
    /// its `sctp/sctp.cc` where they differ from RFC 9260: see [`SctpConfig::ns2`] and
    /// docs/models.md, "The ns2 SCTP profile".
    Ns2,
}

impl Profile {
    /// Every profile, the default first (the order an error lists them).
    pub const ALL: [Profile; 3] = [Profile::Rfc9260, Profile::Rfc4960, Profile::Ns2];

    /// The name `[flow.sctp] profile` takes.
    pub const fn name(&self) -> &'static str {
        match self {
            Profile::Rfc4960 => "rfc4960",
            Profile::Rfc9260 => "rfc9260",
            Profile::Ns2 => "ns2",
        }
    }

    /// The profile called `name`, if any.
    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// The unit of cwnd arithmetic (IW, increase, ssthresh floor, cwnd after T3-rtx).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CcUnit {
    /// The IP MTU (RFC 4960 §7.2).
    Mtu,
    /// The Path Maximum DATA Chunk Size: MTU - IPv4 - common header (RFC 9260 §3 and §7.2).
    Pmdcs,
}

/// How Max.Burst is enforced (RFC 9260 §6.1 D offers both).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MaxBurstMode {
    /// At most Max.Burst packets of new data per destination per send opportunity (an incoming
    /// packet, a timer or `connect`); cwnd is not changed.
    LimitPackets,
    /// `if flightsize + Max.Burst·unit < cwnd { cwnd = flightsize + Max.Burst·unit }` on each
    /// incoming SACK, changing cwnd permanently as RFC 4960 §6.1 D reads.
    ClampCwnd,
    /// Only on a SACK that acknowledges a chunk sent by fast retransmit, at most Max.Burst
    /// packets of new data in that send opportunity (the implementer's-guide proposal ns-2.35
    /// follows with `useMaxBurst_ 1`; otherwise no limit).
    AfterFastRetransmit,
}

/// Which TSNs a SACK counts a miss indication for (RFC 9260 §7.2.4).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MissRule {
    /// Chunks in flight below the highest newly acknowledged TSN, not yet fast-retransmitted.
    InFlight,
    /// Every chunk neither acknowledged nor fast-retransmitted before, in flight or not: also
    /// one a T3 expiry marked and that still waits for its retransmission (ns-2.35).
    Outstanding,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SctpConfig {
    pub profile: Profile,
    /// Number of destination indices of the association (paths to the peer); at least 1.
    pub n_destinations: usize,
    /// The initial primary destination index.
    pub primary: usize,
    pub rto_initial: SimDuration,
    pub rto_min: SimDuration,
    pub rto_max: SimDuration,
    /// RTO.Alpha, any real in [0, 1].
    pub rto_alpha: f64,
    /// RTO.Beta, any real in [0, 1].
    pub rto_beta: f64,
    /// Clock granularity G: RTTVAR == 0 is replaced by G (RFC 9260 §6.3.1 C6). `None`: no
    /// adjustment.
    pub clock_granularity: Option<SimDuration>,
    /// Cap the E2 doubling at RTO.Max (RFC 9260 §6.3.3 E2 says MAY; 004's arithmetic uses it).
    pub rto_max_cap_on_backoff: bool,
    /// Max.Burst (`None`: unlimited).
    pub max_burst: Option<u32>,
    pub max_burst_mode: MaxBurstMode,
    pub assoc_max_retrans: u32,
    pub path_max_retrans: u32,
    pub max_init_retransmits: u32,
    pub heartbeats: bool,
    pub hb_interval: SimDuration,
    /// SACK.Delay (RFC 9260 §6.2: at most 500 ms).
    pub sack_delay: SimDuration,
    /// Acknowledge at least every `sack_freq`-th packet carrying DATA (§6.2: 2).
    pub sack_freq: u32,
    /// IP MTU in bytes (the PMTU of every destination).
    pub mtu: u32,
    pub cc_unit: CcUnit,
    /// The constant in IW = min(4·unit, max(2·unit, floor)): 4380 (RFC 4960), 4404 (RFC 9260, IPv4).
    pub iw_floor: u32,
    /// Receive buffer in payload bytes; a_rwnd = buffer - payload held out of order (the
    /// application drains in-order data at once).
    pub recv_buffer: u32,
    /// Most gap ack blocks per SACK (`None`: as many as fit the MTU, RFC 9260 §6.2).
    pub max_gap_blocks: Option<u32>,
    /// Most duplicate TSNs per SACK.
    pub max_dup_tsns: u32,
    /// RFC 7829 PotentiallyFailed.Max.Retrans; `None`: no PF state.
    pub pf_max_retrans: Option<u32>,
    /// RFC 7829 §5 Primary.Switchover.Max.Retrans; `None`: no permanent switchover.
    pub psmr: Option<u32>,
    /// Payload bytes per DATA chunk (user message size), at most [`SctpConfig::max_payload`]
    /// (a message is not fragmented); `None`: fill the MTU.
    pub message_size: Option<u32>,
    /// RFC 9260 §7.2.1/§7.2.2: halve an idle destination's cwnd (floor 4 units) once per RTO.
    pub cwnd_validation: bool,
    /// Take RTT samples from INIT/INIT-ACK and COOKIE-ECHO/COOKIE-ACK when not retransmitted
    /// (RFC 9260 §8.3 counts INIT and COOKIE ECHO as chunks that can update the path RTT).
    pub handshake_rtt_samples: bool,
    /// State cookie length in bytes (INIT-ACK parameter and COOKIE-ECHO body).
    pub cookie_len: u32,
    /// Heartbeat Info parameter body length in bytes.
    pub hb_info_len: u32,
    /// Extra optional-parameter bytes in INIT and INIT-ACK beyond the IPv4 address parameters.
    pub init_extra_params: u32,
    /// A destination's ssthresh before its first loss, bytes (`None`: arbitrarily high,
    /// RFC 9260 §7.2.1).
    pub initial_ssthresh: Option<u64>,
    /// cwnd grows only on a SACK that advances the Cumulative TSN Ack, counting newly
    /// acknowledged chunks (RFC 4960 §7.2.1-7.2.2); `false`: any SACK acknowledging new data,
    /// in congestion avoidance also counting the chunks reported in Duplicate TSNs (RFC 9260).
    pub growth_needs_cum_ack: bool,
    /// No cwnd growth at all while in Fast Recovery (ns-2.35: only once the Cumulative TSN
    /// Ack reaches the recovery point); `false`: slow start blocked, congestion avoidance not
    /// (RFC 9260 §7.2.2's text).
    pub no_growth_in_fast_recovery: bool,
    /// A T3-rtx expiry ends Fast Recovery (as usrsctp and Linux do; the RFC is silent).
    pub t3_ends_fast_recovery: bool,
    /// After a T3-rtx expiry one packet in flight on that destination until an
    /// acknowledgement (RFC 9260 §7.2.1).
    pub t3_one_packet: bool,
    /// A T3-rtx expiry on a destination whose cwnd is already one unit leaves ssthresh as it
    /// is (ns-2.35); `false`: ssthresh = max(cwnd/2, 4 units) at every expiry (§6.3.3 E1).
    pub t3_keeps_ssthresh_at_one_unit: bool,
    pub miss_rule: MissRule,
    /// Fast retransmissions go to an alternate destination like T3 ones (ns-2.35's
    /// `rtxToAlt_ 1`); `false`: to the original destination unless it is inactive (§6.4).
    pub fast_rtx_to_alternate: bool,
    /// The receiver SACKs at once the packet that fills the last hole (§6.7); `false`: that
    /// packet counts towards the delayed SACK like an in-order one (ns-2.35).
    pub sack_on_gap_close: bool,
    /// a_rwnd and the sender's view of it count whole DATA chunks (16-byte header + payload)
    /// instead of payload bytes (ns-2.35).
    pub rwnd_counts_chunk_headers: bool,
    /// The acknowledgement of a chunk a T3 expiry marked that waits for its retransmission
    /// clears no error counter (ns-2.35: the SACK may be a late one for a path that failed).
    pub marked_ack_keeps_errors: bool,
    /// After the handshake the client sends a HEARTBEAT to every destination and sends no DATA
    /// before all of them are answered (ns-2.35's destination confirmation).
    pub confirm_destinations: bool,
    /// A T3-rtx expiry sends E3's one packet and nothing else: the other marked chunks and
    /// new data wait for the next SACK (ns-2.35's Timeout()); `false`: whatever cwnd allows.
    pub t3_sends_only_e3: bool,
    /// No new DATA while any chunk waits for its retransmission, on any destination (ns-2.35's
    /// recv()); `false`: new data waits only for the marked chunks of its own destination
    /// (§6.1 C).
    pub new_data_after_marked: bool,
    /// Chunks last sent to a destination that wait for their retransmission keep its T3-rtx
    /// running (ns-2.35 counts them as outstanding there): a SACK starts the timer if it is
    /// not running, and its expiry marks them again and counts an error; `false`: the timer
    /// guards chunks in flight only (§6.3.2 R2).
    pub marked_chunks_hold_t3: bool,
}

impl SctpConfig {
    /// The defaults of `profile` with `n_destinations` paths, primary 0.
    pub fn new(profile: Profile, n_destinations: usize) -> SctpConfig {
        let (rto_initial, cc_unit, iw_floor, max_burst_mode) = match profile {
            // RFC 4960 §15; §7.2.1 IW = min(4·MTU, max(2·MTU, 4380)); §6.1 D.
            Profile::Rfc4960 => (3, CcUnit::Mtu, 4380, MaxBurstMode::ClampCwnd),
            // RFC 9260 §16; §7.2.1 IW = min(4·PMDCS, max(2·PMDCS, 4404)) for IPv4; §6.1 D.
            Profile::Rfc9260 => (1, CcUnit::Pmdcs, 4404, MaxBurstMode::LimitPackets),
            Profile::Ns2 => return SctpConfig::ns2(n_destinations),
        };
        SctpConfig {
            profile,
            n_destinations,
            primary: 0,
            rto_initial: SimDuration::from_secs(rto_initial),
            rto_min: SimDuration::from_secs(1),
            rto_max: SimDuration::from_secs(60),
            rto_alpha: 0.125,
            rto_beta: 0.25,
            clock_granularity: None,
            rto_max_cap_on_backoff: true,
            max_burst: Some(4),
            max_burst_mode,
            assoc_max_retrans: 10,
            path_max_retrans: 5,
            max_init_retransmits: 8,
            heartbeats: true,
            hb_interval: SimDuration::from_secs(30),
            sack_delay: SimDuration::from_millis(200),
            sack_freq: 2,
            mtu: 1500,
            cc_unit,
            iw_floor,
            recv_buffer: 128 * 1024,
            max_gap_blocks: None,
            max_dup_tsns: 16,
            pf_max_retrans: None,
            psmr: None,
            message_size: None,
            cwnd_validation: true,
            handshake_rtt_samples: true,
            cookie_len: 256,
            hb_info_len: 32,
            init_extra_params: 8,
            initial_ssthresh: None,
            growth_needs_cum_ack: profile == Profile::Rfc4960,
            no_growth_in_fast_recovery: false,
            t3_ends_fast_recovery: true,
            t3_one_packet: true,
            t3_keeps_ssthresh_at_one_unit: false,
            miss_rule: MissRule::InFlight,
            fast_rtx_to_alternate: false,
            sack_on_gap_close: true,
            rwnd_counts_chunk_headers: false,
            marked_ack_keeps_errors: false,
            confirm_destinations: false,
            t3_sends_only_e3: false,
            new_data_after_marked: false,
            marked_chunks_hold_t3: false,
        }
    }

    /// ns-2.35's Agent/SCTP: the defaults of `tcl/lib/ns-default.tcl` and the rules of
    /// `sctp/sctp.cc` (Caro and Iyengar's module) where they differ from RFC 9260. The
    /// data table, one row per key, is docs/models.md's "The ns2 SCTP profile".
    pub fn ns2(n_destinations: usize) -> SctpConfig {
        SctpConfig {
            profile: Profile::Ns2,
            // initialRto_ 3, minRto_ 1, maxRto_ 60; RTO.Alpha/Beta 1/8, 1/4 (sctp.h).
            rto_initial: SimDuration::from_secs(3),
            // cwnd arithmetic in uiMaxDataSize = mtu_ - 12 - ipHeaderSize_ = 1468 (Reset()):
            // IW = min(4·1468, max(4380, 2·1468)) = 4380; initialCwnd_ only bounds the idle
            // decay.
            cc_unit: CcUnit::Pmdcs,
            iw_floor: 4380,
            // useMaxBurst_ 1 with MAX_BURST 4 (sctp.h), applied after fast retransmit only.
            max_burst: Some(4),
            max_burst_mode: MaxBurstMode::AfterFastRetransmit,
            // initialRwnd_ 65536, counted in chunk bytes (ProcessDataChunk).
            recv_buffer: 65536,
            rwnd_counts_chunk_headers: true,
            // initialSsthresh_ 65536.
            initial_ssthresh: Some(65536),
            // The idle decay runs on a timer that also fires with data outstanding
            // (CwndDegradeTimerExpiration); not modelled.
            cwnd_validation: false,
            // RTT samples from DATA and HEARTBEAT only.
            handshake_rtt_samples: false,
            growth_needs_cum_ack: true,
            no_growth_in_fast_recovery: true,
            t3_ends_fast_recovery: false,
            t3_one_packet: false,
            t3_keeps_ssthresh_at_one_unit: true,
            miss_rule: MissRule::Outstanding,
            fast_rtx_to_alternate: true,
            sack_on_gap_close: false,
            marked_ack_keeps_errors: true,
            confirm_destinations: true,
            t3_sends_only_e3: true,
            new_data_after_marked: true,
            marked_chunks_hold_t3: true,
            // Control chunks as ns-2.35 sizes them: a 24-byte HEARTBEAT (sctp.h), COOKIE-ECHO
            // without a cookie, no optional INIT parameters.
            hb_info_len: 16,
            cookie_len: 0,
            init_extra_params: 0,
            ..SctpConfig::new(Profile::Rfc9260, n_destinations)
        }
    }

    pub fn rfc4960(n_destinations: usize) -> SctpConfig {
        SctpConfig::new(Profile::Rfc4960, n_destinations)
    }

    pub fn rfc9260(n_destinations: usize) -> SctpConfig {
        SctpConfig::new(Profile::Rfc9260, n_destinations)
    }

    /// Bytes a chunk of `payload` bytes takes of a_rwnd.
    pub fn rwnd_bytes(&self, payload: u64) -> u64 {
        if self.rwnd_counts_chunk_headers {
            payload + DATA_HEADER as u64
        } else {
            payload
        }
    }

    /// Largest DATA payload in one packet: MTU - IPv4 20 - common header 12 - DATA header 16.
    pub fn max_payload(&self) -> u32 {
        self.mtu
            .saturating_sub((IPV4_HEADER + COMMON_HEADER + DATA_HEADER) as u32)
    }

    /// Why a `message_size` of `m` bytes, above [`SctpConfig::max_payload`], is refused: one
    /// message is one DATA chunk (fragmentation is not modelled).
    pub fn message_too_large(&self, m: u64) -> String {
        format!(
            "must be at most {} bytes, the DATA payload of one packet at mtu {} (messages are \
             not fragmented), got {m}",
            self.max_payload(),
            self.mtu
        )
    }

    /// Path Maximum DATA Chunk Size (RFC 9260 §3): MTU - IPv4 - common header.
    pub fn pmdcs(&self) -> u32 {
        self.mtu
            .saturating_sub((IPV4_HEADER + COMMON_HEADER) as u32)
    }

    /// Payload bytes per DATA chunk.
    pub fn chunk_payload(&self) -> u32 {
        self.message_size
            .unwrap_or(self.max_payload())
            .min(self.max_payload())
    }

    /// The cwnd unit in bytes.
    pub fn unit(&self) -> u64 {
        match self.cc_unit {
            CcUnit::Mtu => self.mtu as u64,
            CcUnit::Pmdcs => self.pmdcs() as u64,
        }
    }

    /// Initial cwnd (RFC 9260/4960 §7.2.1).
    pub fn initial_cwnd(&self) -> u64 {
        let u = self.unit();
        (4 * u).min((2 * u).max(self.iw_floor as u64))
    }

    /// Gap ack blocks that fit one SACK in the MTU (none when `max_gap_blocks` caps lower).
    pub fn gap_block_limit(&self) -> u32 {
        let fit = self
            .mtu
            .saturating_sub((IPV4_HEADER + COMMON_HEADER + 16) as u32)
            / 4;
        self.max_gap_blocks.map_or(fit, |m| m.min(fit))
    }

    pub fn rto_params(&self) -> RtoParams {
        RtoParams {
            initial: self.rto_initial,
            min: self.rto_min,
            max: self.rto_max,
            alpha: self.rto_alpha,
            beta: self.rto_beta,
            granularity: self.clock_granularity,
            cap_backoff: self.rto_max_cap_on_backoff,
        }
    }

    /// Checks every knob; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let unit = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
        if !unit(self.rto_alpha) {
            return Err((
                "rto_alpha",
                format!("must be a real in [0, 1], got {}", self.rto_alpha),
            ));
        }
        if !unit(self.rto_beta) {
            return Err((
                "rto_beta",
                format!("must be a real in [0, 1], got {}", self.rto_beta),
            ));
        }
        if self.n_destinations == 0 {
            return Err((
                "n_destinations",
                "an association needs at least one destination".into(),
            ));
        }
        if self.primary >= self.n_destinations {
            return Err((
                "primary",
                format!(
                    "index {} out of range for {} destinations",
                    self.primary, self.n_destinations
                ),
            ));
        }
        if self.rto_min == SimDuration::ZERO {
            return Err(("rto_min", "must be positive".into()));
        }
        if self.rto_min > self.rto_max {
            return Err((
                "rto_min",
                format!(
                    "must not exceed rto_max ({} s), got {} s",
                    self.rto_max.as_secs_f64(),
                    self.rto_min.as_secs_f64()
                ),
            ));
        }
        if self.rto_initial == SimDuration::ZERO {
            return Err(("rto_initial", "must be positive".into()));
        }
        if self.rto_initial > self.rto_max {
            return Err((
                "rto_initial",
                format!(
                    "must be at most rto_max ({} s), got {} s",
                    self.rto_max.as_secs_f64(),
                    self.rto_initial.as_secs_f64()
                ),
            ));
        }
        if self.max_burst == Some(0) {
            return Err((
                "max_burst",
                "0 would forbid sending; use None for no limit".into(),
            ));
        }
        if self.sack_delay > SimDuration::from_millis(500) {
            return Err(("sack_delay", "RFC 9260 §6.2: MUST NOT exceed 500 ms".into()));
        }
        if self.sack_freq == 0 {
            return Err(("sack_freq", "must be at least 1".into()));
        }
        let min_mtu = (IPV4_HEADER + COMMON_HEADER + DATA_HEADER) as u32 + 4;
        if self.mtu < min_mtu.max(68) {
            return Err((
                "mtu",
                format!("{} too small (at least {})", self.mtu, min_mtu.max(68)),
            ));
        }
        if self.iw_floor == 0 {
            return Err(("iw_floor", "must be positive".into()));
        }
        if self.recv_buffer < self.chunk_payload() {
            return Err((
                "recv_buffer",
                "must hold at least one DATA chunk payload".into(),
            ));
        }
        if self.message_size == Some(0) {
            return Err(("message_size", "must be positive".into()));
        }
        if let Some(m) = self.message_size.filter(|&m| m > self.max_payload()) {
            return Err(("message_size", self.message_too_large(m.into())));
        }
        if let Some(ps) = self.psmr {
            let (floor, name) = match self.pf_max_retrans {
                Some(pf) => (pf, "pf_max_retrans"),
                None => (self.path_max_retrans, "path_max_retrans"),
            };
            if ps < floor {
                return Err((
                    "psmr",
                    format!(
                        "{ps} is below {name} {floor}: RFC 7829 §5 rule 1 requires \
                         Primary.Switchover.Max.Retrans >= PFMR with PF on, >= \
                         Path.Max.Retrans without"
                    ),
                ));
            }
        }
        if let Some(pf) = self.pf_max_retrans {
            if pf > self.path_max_retrans {
                return Err((
                    "pf_max_retrans",
                    format!(
                        "{pf} exceeds path_max_retrans {}: the destination would go inactive \
                         before it could be potentially failed (RFC 7829 §3.2 rule 1)",
                        self.path_max_retrans
                    ),
                ));
            }
        }
        if self.heartbeats && self.hb_interval == SimDuration::ZERO {
            // Allowed by the RFC, but a zero interval with jitter is a busy loop in a simulator.
            return Err((
                "hb_interval",
                "must be positive when heartbeats are on".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_differ_where_the_rfcs_differ() {
        let a = SctpConfig::rfc4960(2);
        let b = SctpConfig::rfc9260(2);
        assert_eq!(a.rto_initial, SimDuration::from_secs(3));
        assert_eq!(b.rto_initial, SimDuration::from_secs(1));
        assert_eq!(a.initial_cwnd(), 4380);
        assert_eq!(b.initial_cwnd(), 4404);
        assert_eq!(a.unit(), 1500);
        assert_eq!(b.unit(), 1468);
        assert_eq!(a.max_payload(), 1452);
        for c in [&a, &b] {
            assert_eq!(c.rto_min, SimDuration::from_secs(1));
            assert_eq!(c.rto_max, SimDuration::from_secs(60));
            assert_eq!((c.rto_alpha, c.rto_beta), (0.125, 0.25));
            assert_eq!(c.max_burst, Some(4));
            assert_eq!(
                (
                    c.assoc_max_retrans,
                    c.path_max_retrans,
                    c.max_init_retransmits
                ),
                (10, 5, 8)
            );
            assert_eq!(c.hb_interval, SimDuration::from_secs(30));
            assert_eq!(c.sack_delay, SimDuration::from_millis(200));
            assert_eq!(c.sack_freq, 2);
            assert!(c.validate().is_ok());
        }
    }

    #[test]
    fn validation_names_the_field() {
        let base = SctpConfig::rfc9260(2);
        let field = |c: SctpConfig| c.validate().unwrap_err().0;
        assert_eq!(
            field(SctpConfig {
                rto_alpha: 1.5,
                ..base.clone()
            }),
            "rto_alpha"
        );
        assert_eq!(
            field(SctpConfig {
                rto_alpha: f64::NAN,
                ..base.clone()
            }),
            "rto_alpha"
        );
        assert_eq!(
            field(SctpConfig {
                rto_beta: -0.1,
                ..base.clone()
            }),
            "rto_beta"
        );
        assert_eq!(
            field(SctpConfig {
                n_destinations: 0,
                primary: 0,
                ..base.clone()
            }),
            "n_destinations"
        );
        assert_eq!(
            field(SctpConfig {
                primary: 2,
                ..base.clone()
            }),
            "primary"
        );
        assert_eq!(
            field(SctpConfig {
                rto_min: SimDuration::from_secs(61),
                ..base.clone()
            }),
            "rto_min"
        );
        assert_eq!(
            field(SctpConfig {
                mtu: 40,
                ..base.clone()
            }),
            "mtu"
        );
        assert_eq!(
            field(SctpConfig {
                sack_delay: SimDuration::from_millis(600),
                ..base.clone()
            }),
            "sack_delay"
        );
        assert_eq!(
            field(SctpConfig {
                pf_max_retrans: Some(6),
                ..base.clone()
            }),
            "pf_max_retrans"
        );
        // RFC 7829 §5 rule 1: PSMR >= PFMR with PF, >= PMR without.
        for (pf, psmr, ok) in [
            (None, 4, false),
            (None, 5, true),
            (Some(2), 1, false),
            (Some(2), 2, true),
        ] {
            let c = SctpConfig {
                pf_max_retrans: pf,
                psmr: Some(psmr),
                ..base.clone()
            };
            assert_eq!(
                c.validate().map_err(|e| e.0),
                if ok { Ok(()) } else { Err("psmr") }
            );
        }
        assert_eq!(
            field(SctpConfig {
                max_burst: Some(0),
                ..base.clone()
            }),
            "max_burst"
        );
        // RTO.Initial at most RTO.Max (below RTO.Min is allowed: the floor applies to
        // computed RTOs).
        assert_eq!(
            field(SctpConfig {
                rto_initial: SimDuration::from_secs(100),
                ..base.clone()
            }),
            "rto_initial"
        );
        assert!(SctpConfig {
            rto_initial: SimDuration::from_millis(500),
            ..base.clone()
        }
        .validate()
        .is_ok());
        // A message is one DATA chunk: at most the payload one packet carries.
        assert_eq!(
            field(SctpConfig {
                message_size: Some(1453),
                ..base.clone()
            }),
            "message_size"
        );
        assert!(SctpConfig {
            message_size: Some(1452),
            ..base.clone()
        }
        .validate()
        .is_ok());
        // Any real in [0, 1] is fine.
        assert!(SctpConfig {
            rto_alpha: 0.37,
            rto_beta: 1.0,
            ..base.clone()
        }
        .validate()
        .is_ok());
        assert!(SctpConfig {
            rto_alpha: 0.0,
            rto_beta: 0.0,
            ..base
        }
        .validate()
        .is_ok());
    }
}
