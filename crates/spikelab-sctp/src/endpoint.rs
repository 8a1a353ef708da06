//! A sans-IO SCTP endpoint: association set-up, the sender and receiver halves, per-destination
//! path management (RFC 9260 §8, RFC 7829 PF and primary switchover) and timers.
//!
//! Destination indices: the association has `n_destinations` indices; a packet the endpoint
//! sends to index `i` travels on the caller's path pair `i`; a packet the caller hands to
//! `on_packet(now, i, ..)` arrived on the reverse of pair `i`, and replies to it (INIT-ACK,
//! COOKIE-ACK, HEARTBEAT-ACK, SACK) go back on index `i` (RFC 9260 §6.4: the SACK goes to the
//! source address of the DATA it acknowledges).

use std::collections::{BTreeMap, VecDeque};

use crate::config::{MaxBurstMode, SctpConfig};
use crate::packet::{Chunk, HeartbeatInfo, Packet};
use crate::receiver::{Receiver, ReceiverStats};
use crate::rto::RtoEstimator;
use spikelab_core::{Rng, SimDuration, SimTime};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Sends INIT on `connect`.
    Client,
    /// Answers INIT statelessly, established on COOKIE-ECHO.
    Server,
}

/// What the endpoint's application sends.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DataSource {
    None,
    /// A bulk transfer of this many bytes (`None`: unlimited). `Endpoint::send_more` adds bytes.
    Bulk(Option<u64>),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AssocState {
    Closed,
    CookieWait,
    CookieEchoed,
    Established,
    /// Association.Max.Retrans or Max.Init.Retransmits exceeded (RFC 9260 §8.1, §5.1).
    Failed,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PathState {
    Active,
    /// RFC 7829 Potentially Failed.
    PotentiallyFailed,
    Inactive,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    None,
    T3,
    Fast,
}

/// One unacknowledged DATA chunk on the sender side.
#[derive(Clone, Debug)]
pub(crate) struct TxChunk {
    pub(crate) tsn: u64,
    pub(crate) len: u32,
    pub(crate) offset: u64,
    /// Destination of the latest transmission.
    pub(crate) dest: usize,
    pub(crate) tx_count: u32,
    pub(crate) last_tx_id: u64,
    pub(crate) sent_at: SimTime,
    pub(crate) acked: bool,
    pub(crate) in_flight: bool,
    pub(crate) mark: Mark,
    pub(crate) miss: u32,
    pub(crate) fast_rtx_done: bool,
    /// Sent to more than one destination (RFC 7829 §3.2 rule 9: its acknowledgement cannot
    /// tell which copy arrived).
    pub(crate) multi_dest: bool,
}

impl TxChunk {
    pub(crate) fn size(&self) -> u64 {
        crate::packet::DATA_HEADER as u64 + crate::packet::pad4(self.len as usize) as u64
    }
}

/// Per-destination statistics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DestStats {
    pub t3_expiries: u64,
    pub packets_sent: u64,
    /// Bytes on the wire including the IPv4 header, every packet type.
    pub bytes_sent: u64,
    pub data_chunks_sent: u64,
    pub retransmitted_chunks: u64,
    pub heartbeats_sent: u64,
    pub heartbeats_acked: u64,
    pub rtt_samples: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Failover {
    pub at: SimTime,
    pub from: usize,
    pub to: usize,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct EndpointStats {
    pub init_sent: u64,
    pub init_retransmits: u64,
    pub cookie_echo_sent: u64,
    pub cookie_echo_retransmits: u64,
    pub established_at: Option<SimTime>,
    /// From `connect` to COOKIE-ACK (client) or from the first INIT to COOKIE-ECHO (server).
    pub setup_time: Option<SimDuration>,
    pub data_packets_sent: u64,
    pub data_chunks_sent: u64,
    pub payload_bytes_sent: u64,
    pub retransmitted_chunks: u64,
    pub t3_retransmitted_chunks: u64,
    pub fast_retransmitted_chunks: u64,
    pub t3_expiries: u64,
    pub fast_retransmits: u64,
    pub sacks_received: u64,
    pub bytes_acked: u64,
    pub heartbeats_sent: u64,
    pub heartbeats_acked: u64,
    /// Changes of the destination new data goes to, in time order.
    pub failovers: Vec<Failover>,
    pub failed_at: Option<SimTime>,
    pub per_dest: Vec<DestStats>,
}

/// A TSN marked for retransmission by a T3-rtx expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkedTsn {
    pub tsn: u64,
    /// Transmission number of the copy that timed out (see `DataChunk::tx_id`).
    pub tx_id: u64,
    pub sent_at: SimTime,
}

/// One T3-rtx expiry: enough for the caller to label it spurious or genuine from ground truth
/// (e.g. whether `tx_id` of the earliest TSN had reached the receiver by `at`).
#[derive(Clone, Debug, PartialEq)]
pub struct T3Record {
    pub at: SimTime,
    pub dest: usize,
    /// When the expired timer was (re)started, and with which RTO.
    pub armed_at: SimTime,
    pub rto: SimDuration,
    /// Where the E3 retransmission goes.
    pub rtx_dest: usize,
    /// Every TSN marked, ascending; the first `k` go in the E3 packet.
    pub tsns: Vec<MarkedTsn>,
    pub k: usize,
    /// The path's error counter after this expiry.
    pub errors: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SctpEvent {
    Established {
        at: SimTime,
    },
    T3Expiry(T3Record),
    FastRetransmit {
        at: SimTime,
        dest: usize,
        tsns: Vec<u64>,
    },
    PathStateChange {
        at: SimTime,
        dest: usize,
        from: PathState,
        to: PathState,
    },
    /// RFC 7829 §5 permanent primary switchover.
    PrimaryChange {
        at: SimTime,
        from: usize,
        to: usize,
    },
    Failover(Failover),
    AssociationFailed {
        at: SimTime,
    },
    /// An RTT measurement on `dest` (DATA, HEARTBEAT or handshake), after Karn's rule.
    RttSample {
        at: SimTime,
        dest: usize,
        rtt: SimDuration,
    },
}

/// A destination's ssthresh before its first loss: "arbitrarily high" (RFC 9260 §7.2.1), a
/// value no window reaches.
pub const SSTHRESH_UNSET: u64 = u64::MAX / 4;

/// A read-only view of one destination.
#[derive(Clone, Debug, PartialEq)]
pub struct PathView {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub partial_bytes_acked: u64,
    /// Bytes of DATA chunks (header + padded payload) in flight.
    pub flight: u64,
    pub srtt: Option<SimDuration>,
    pub rttvar: Option<SimDuration>,
    pub rto: SimDuration,
    pub errors: u32,
    pub state: PathState,
    pub is_primary: bool,
    pub t3: Option<SimTime>,
}

#[derive(Clone, Debug)]
pub(crate) struct Path {
    pub(crate) rto: RtoEstimator,
    pub(crate) cwnd: u64,
    pub(crate) ssthresh: u64,
    pub(crate) pba: u64,
    pub(crate) flight: u64,
    pub(crate) flight_chunks: u64,
    pub(crate) t3: Option<SimTime>,
    pub(crate) t3_armed_at: SimTime,
    pub(crate) errors: u32,
    pub(crate) state: PathState,
    pub(crate) hb_timer: Option<SimTime>,
    pub(crate) hb_armed_at: SimTime,
    /// (nonce, send time) of the unanswered HEARTBEAT.
    pub(crate) hb_out: Option<(u64, SimTime)>,
    /// (TSN, send time) of the chunk timing this round trip (C5: one per round trip).
    pub(crate) rtt_probe: Option<(u64, SimTime)>,
    pub(crate) last_data_sent: Option<SimTime>,
    pub(crate) idle_adjusted: bool,
    /// Set by a T3-rtx expiry: one packet in flight on this destination until data sent
    /// there is acknowledged (RFC 9260 §7.2.1).
    pub(crate) one_packet: bool,
}

/// The endpoint. See the module docs for the destination-index model.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub(crate) cfg: SctpConfig,
    pub(crate) role: Role,
    pub(crate) state: AssocState,
    pub(crate) rng: Rng,
    pub(crate) paths: Vec<Path>,
    pub(crate) primary: usize,
    pub(crate) data_dest: usize,
    // Handshake.
    pub(crate) t1: Option<SimTime>,
    pub(crate) init_tries: u32,
    pub(crate) hs_sent_at: SimTime,
    pub(crate) hs_dest: usize,
    pub(crate) hs_rto: SimDuration,
    pub(crate) hs_retransmitted: bool,
    pub(crate) connect_at: Option<SimTime>,
    pub(crate) control: VecDeque<(usize, Packet)>,
    // Sender half.
    pub(crate) app_total: Option<u64>,
    pub(crate) has_source: bool,
    pub(crate) app_chunked: u64,
    pub(crate) next_tsn: u64,
    pub(crate) cum_ack: u64,
    pub(crate) queue: VecDeque<TxChunk>,
    pub(crate) peer_rwnd: u64,
    pub(crate) fast_recovery: Option<u64>,
    pub(crate) forced: VecDeque<(usize, Mark)>,
    /// Chunks in `queue` marked for retransmission (`mark != None`): lets the send path skip
    /// the search for them when there are none.
    pub(crate) n_marked: usize,
    /// Payload bytes of the chunks in flight (§6.2.1's "outstanding" for the peer's rwnd).
    pub(crate) inflight_payload: u64,
    /// (destination, size) of recently acknowledged chunks that were sent more than once, by
    /// TSN: the peer may still report them as Duplicate TSNs, whose bytes count towards
    /// partial_bytes_acked (RFC 9260 §7.2.2). At most `DUP_ORIGINS` entries.
    pub(crate) dup_origin: BTreeMap<u64, (usize, u64)>,
    pub(crate) assoc_errors: u32,
    pub(crate) burst_left: Vec<u32>,
    /// A SACK acknowledged a fast-retransmitted chunk and Max.Burst has not stopped a burst
    /// since (`MaxBurstMode::AfterFastRetransmit`).
    pub(crate) fast_rtx_acked: bool,
    /// The highest TSN newly acknowledged by the last SACK that acknowledged anything
    /// (`MissRule::Outstanding`).
    pub(crate) last_htna: Option<u64>,
    /// Destinations not yet confirmed by a HEARTBEAT-ACK (`confirm_destinations`): no DATA
    /// leaves while any is.
    pub(crate) unconfirmed: Vec<bool>,
    /// This send opportunity came from a T3-rtx expiry (`t3_sends_only_e3`).
    pub(crate) t3_opportunity: bool,
    pub(crate) next_tx_id: u64,
    pub(crate) next_nonce: u64,
    // Receiver half.
    pub(crate) rcv: Receiver,
    pub(crate) stats: EndpointStats,
    pub(crate) events: Vec<SctpEvent>,
}

impl Endpoint {
    /// A new endpoint. `seed` feeds the heartbeat jitter stream. Panics on an invalid config
    /// (call [`SctpConfig::validate`] first to get the error).
    pub fn new(cfg: SctpConfig, role: Role, source: DataSource, seed: u64) -> Endpoint {
        if let Err((f, m)) = cfg.validate() {
            panic!("invalid SctpConfig: {f}: {m}");
        }
        let n = cfg.n_destinations;
        let label = match role {
            Role::Client => "sctp/client/hb",
            Role::Server => "sctp/server/hb",
        };
        let path = Path {
            rto: RtoEstimator::new(cfg.rto_params()),
            cwnd: cfg.initial_cwnd(),
            ssthresh: cfg.initial_ssthresh.unwrap_or(SSTHRESH_UNSET),
            pba: 0,
            flight: 0,
            flight_chunks: 0,
            t3: None,
            t3_armed_at: SimTime::ZERO,
            errors: 0,
            state: PathState::Active,
            hb_timer: None,
            hb_armed_at: SimTime::ZERO,
            hb_out: None,
            rtt_probe: None,
            last_data_sent: None,
            idle_adjusted: false,
            one_packet: false,
        };
        let (app_total, has_source) = match source {
            DataSource::None => (Some(0), false),
            DataSource::Bulk(t) => (t, true),
        };
        Endpoint {
            primary: cfg.primary,
            data_dest: cfg.primary,
            rng: Rng::stream(seed, label),
            paths: vec![path; n],
            role,
            state: AssocState::Closed,
            t1: None,
            init_tries: 0,
            hs_sent_at: SimTime::ZERO,
            hs_dest: 0,
            hs_rto: SimDuration::ZERO,
            hs_retransmitted: false,
            connect_at: None,
            control: VecDeque::new(),
            app_total,
            has_source,
            app_chunked: 0,
            next_tsn: 1,
            cum_ack: 0,
            queue: VecDeque::new(),
            peer_rwnd: cfg.recv_buffer as u64,
            fast_recovery: None,
            forced: VecDeque::new(),
            n_marked: 0,
            inflight_payload: 0,
            dup_origin: BTreeMap::new(),
            assoc_errors: 0,
            burst_left: vec![0; n],
            fast_rtx_acked: false,
            last_htna: None,
            unconfirmed: vec![false; n],
            t3_opportunity: false,
            next_tx_id: 0,
            next_nonce: 0,
            rcv: Receiver::new(),
            stats: EndpointStats {
                per_dest: vec![DestStats::default(); n],
                ..EndpointStats::default()
            },
            events: Vec::new(),
            cfg,
        }
    }

    // ---------------------------------------------------------------- accessors

    pub fn config(&self) -> &SctpConfig {
        &self.cfg
    }
    pub fn role(&self) -> Role {
        self.role
    }
    pub fn state(&self) -> AssocState {
        self.state
    }
    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }
    pub fn receiver_stats(&self) -> &ReceiverStats {
        &self.rcv.stats
    }
    /// In-order payload bytes delivered to this endpoint's application.
    pub fn delivered_bytes(&self) -> u64 {
        self.rcv.stats.delivered_bytes
    }
    /// Whether the receiver half holds `tsn` (cumulatively or out of order): ground truth for
    /// labelling a peer's T3-rtx expiry spurious.
    pub fn has_received(&self, tsn: u64) -> bool {
        self.rcv.has_received(tsn)
    }
    pub fn primary(&self) -> usize {
        self.primary
    }
    /// The destination new data currently goes to.
    pub fn data_destination(&self) -> usize {
        self.data_dest
    }
    pub fn n_destinations(&self) -> usize {
        self.paths.len()
    }
    pub fn cum_ack(&self) -> u64 {
        self.cum_ack
    }
    pub fn peer_rwnd(&self) -> u64 {
        self.peer_rwnd
    }
    pub fn in_fast_recovery(&self) -> bool {
        self.fast_recovery.is_some()
    }
    pub fn association_errors(&self) -> u32 {
        self.assoc_errors
    }
    pub fn path(&self, d: usize) -> PathView {
        let p = &self.paths[d];
        PathView {
            cwnd: p.cwnd,
            ssthresh: p.ssthresh,
            partial_bytes_acked: p.pba,
            flight: p.flight,
            srtt: p.rto.srtt(),
            rttvar: p.rto.rttvar(),
            rto: p.rto.rto(),
            errors: p.errors,
            state: p.state,
            is_primary: d == self.primary,
            t3: p.t3,
        }
    }
    /// The destination's RTO estimator, mutable: a warm start for scenarios and tests.
    pub fn rto_estimator_mut(&mut self, d: usize) -> &mut RtoEstimator {
        &mut self.paths[d].rto
    }
    /// Events since the last drain, in time order.
    pub fn events(&self) -> &[SctpEvent] {
        &self.events
    }
    pub fn drain_events(&mut self) -> Vec<SctpEvent> {
        std::mem::take(&mut self.events)
    }
    /// Adds `bytes` to a finite bulk source (no effect on an unlimited one).
    /// An application write is a send opportunity (resets the Max.Burst budget).
    pub fn send_more(&mut self, bytes: u64) {
        self.has_source = true;
        self.new_send_opportunity();
        if let Some(t) = self.app_total.as_mut() {
            *t += bytes;
        }
    }
    /// Every byte of a finite source acknowledged.
    pub fn all_data_acked(&self) -> bool {
        self.app_total.is_some_and(|t| self.app_chunked >= t) && self.queue.is_empty()
    }
    /// The association failed, or this endpoint had finite data and all of it is acknowledged.
    /// An endpoint with no data is done only on failure (shutdown is not modelled).
    pub fn is_done(&self) -> bool {
        self.state == AssocState::Failed
            || (self.has_source && self.state == AssocState::Established && self.all_data_acked())
    }

    // ---------------------------------------------------------------- set-up (RFC 9260 §5.1)

    /// Client: sends INIT to the primary and starts T1-init with RTO.Initial.
    pub fn connect(&mut self, now: SimTime) {
        assert_eq!(self.role, Role::Client, "only the client connects");
        if self.state != AssocState::Closed {
            return;
        }
        self.connect_at = Some(now);
        self.state = AssocState::CookieWait;
        self.init_tries = 0;
        self.hs_rto = self.paths[self.primary].rto.rto();
        self.send_init(now, false);
    }

    /// Destination of an INIT or COOKIE-ECHO: the primary first, then (on T1 expiry) the
    /// next destination index in turn (§6.4: a timed-out chunk to another address).
    fn handshake_dest(&self) -> usize {
        (self.primary + self.init_tries as usize) % self.paths.len()
    }

    fn send_init(&mut self, now: SimTime, retransmission: bool) {
        let d = self.handshake_dest();
        self.stats.init_sent += 1;
        if retransmission {
            self.stats.init_retransmits += 1;
        }
        self.hs_sent_at = now;
        self.hs_dest = d;
        self.hs_retransmitted = retransmission;
        let c = Chunk::Init {
            n_addrs: self.paths.len() as u32,
            extra: self.cfg.init_extra_params,
        };
        self.control.push_back((d, Packet::single(c)));
        self.t1 = Some(now + self.hs_rto);
    }

    fn send_cookie_echo(&mut self, now: SimTime, retransmission: bool) {
        let d = self.handshake_dest();
        self.stats.cookie_echo_sent += 1;
        if retransmission {
            self.stats.cookie_echo_retransmits += 1;
        }
        self.hs_sent_at = now;
        self.hs_dest = d;
        self.hs_retransmitted = retransmission;
        let c = Chunk::CookieEcho {
            cookie_len: self.cfg.cookie_len,
        };
        self.control.push_back((d, Packet::single(c)));
        self.t1 = Some(now + self.hs_rto);
    }

    /// T1-init / T1-cookie expiry: back off, resend, or fail after Max.Init.Retransmits.
    fn on_t1(&mut self, now: SimTime) {
        self.t1 = None;
        self.init_tries += 1;
        if self.init_tries > self.cfg.max_init_retransmits {
            self.fail(now);
            return;
        }
        // T1 backs off like E2, across whichever destinations the retries use.
        self.hs_rto = (self.hs_rto.saturating_mul(2)).min(self.cfg.rto_max);
        match self.state {
            AssocState::CookieWait => self.send_init(now, true),
            AssocState::CookieEchoed => self.send_cookie_echo(now, true),
            _ => {}
        }
    }

    fn establish(&mut self, now: SimTime) {
        self.state = AssocState::Established;
        self.stats.established_at = Some(now);
        if let Some(c) = self.connect_at {
            self.stats.setup_time = Some(now - c);
        }
        self.events.push(SctpEvent::Established { at: now });
        if self.cfg.confirm_destinations && self.role == Role::Client {
            // ns-2.35: a HEARTBEAT to every destination, DATA once all are answered.
            for d in 0..self.paths.len() {
                self.unconfirmed[d] = true;
                self.send_heartbeat(d, now);
                self.arm_hb(d, now);
            }
        } else if self.cfg.heartbeats {
            for d in 0..self.paths.len() {
                self.arm_hb(d, now);
            }
        }
    }

    pub(crate) fn fail(&mut self, now: SimTime) {
        if self.state == AssocState::Failed {
            return;
        }
        self.state = AssocState::Failed;
        self.stats.failed_at = Some(now);
        self.events.push(SctpEvent::AssociationFailed { at: now });
        self.t1 = None;
        self.control.clear();
        self.forced.clear();
        self.rcv.sack_timer = None;
        self.rcv.sack_now = false;
        for p in &mut self.paths {
            p.t3 = None;
            p.hb_timer = None;
        }
    }

    // ---------------------------------------------------------------- input

    /// A packet arrived on the reverse path of destination index `idx`.
    pub fn on_packet(&mut self, now: SimTime, idx: usize, pkt: &Packet) {
        assert!(idx < self.paths.len(), "arrival index {idx} out of range");
        if self.state == AssocState::Failed {
            return;
        }
        self.new_send_opportunity();
        let mut data = Vec::new();
        for c in &pkt.chunks {
            match c {
                Chunk::Init { .. } => {
                    if self.role == Role::Server {
                        if self.connect_at.is_none() {
                            self.connect_at = Some(now);
                        }
                        let c = Chunk::InitAck {
                            n_addrs: self.paths.len() as u32,
                            extra: self.cfg.init_extra_params,
                            cookie_len: self.cfg.cookie_len,
                        };
                        self.control.push_back((idx, Packet::single(c)));
                    }
                }
                Chunk::InitAck { .. } => {
                    if self.state == AssocState::CookieWait {
                        self.handshake_sample(now);
                        self.state = AssocState::CookieEchoed;
                        self.init_tries = 0;
                        self.hs_rto = self.paths[self.primary].rto.rto();
                        self.send_cookie_echo(now, false);
                    }
                }
                Chunk::CookieEcho { .. } => {
                    if self.role == Role::Server {
                        self.control
                            .push_back((idx, Packet::single(Chunk::CookieAck)));
                        if self.state == AssocState::Closed {
                            self.establish(now);
                        }
                    }
                }
                Chunk::CookieAck => {
                    if self.state == AssocState::CookieEchoed {
                        self.handshake_sample(now);
                        self.t1 = None;
                        self.establish(now);
                    }
                }
                Chunk::Heartbeat(h) => {
                    if self.state != AssocState::Closed && self.state != AssocState::CookieWait {
                        self.control
                            .push_back((idx, Packet::single(Chunk::HeartbeatAck(h.clone()))));
                    }
                }
                Chunk::HeartbeatAck(h) => self.on_hb_ack(now, h),
                Chunk::Sack(s) => {
                    if self.state == AssocState::Established {
                        self.stats.sacks_received += 1;
                        self.on_sack(now, s);
                    }
                }
                Chunk::Data(d) => {
                    if self.state == AssocState::Established {
                        data.push(d);
                    }
                }
                Chunk::Abort => self.fail(now),
            }
        }
        if !data.is_empty() {
            self.rcv.on_data_packet(&self.cfg, now, idx, &data);
        }
    }

    fn handshake_sample(&mut self, now: SimTime) {
        if self.cfg.handshake_rtt_samples && !self.hs_retransmitted {
            let d = self.hs_dest;
            self.rtt_sample(now, d, now - self.hs_sent_at);
        }
    }

    /// Feeds one RTT measurement to destination `d`'s estimator and records it.
    pub(crate) fn rtt_sample(&mut self, now: SimTime, d: usize, rtt: SimDuration) {
        self.paths[d].rto.sample(rtt);
        self.stats.per_dest[d].rtt_samples += 1;
        self.events.push(SctpEvent::RttSample {
            at: now,
            dest: d,
            rtt,
        });
    }

    pub(crate) fn new_send_opportunity(&mut self) {
        self.t3_opportunity = false;
        let b = match self.cfg.max_burst_mode {
            MaxBurstMode::AfterFastRetransmit if !self.fast_rtx_acked => u32::MAX,
            _ => self.cfg.max_burst.unwrap_or(u32::MAX),
        };
        for x in &mut self.burst_left {
            *x = b;
        }
    }

    // ---------------------------------------------------------------- timers

    /// The earliest pending timer.
    pub fn next_timer(&self) -> Option<SimTime> {
        let mut t = self.t1;
        let mut take = |x: Option<SimTime>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y: SimTime| y.min(x)));
            }
        };
        take(self.rcv.sack_timer);
        for p in &self.paths {
            take(p.t3);
            take(p.hb_timer);
        }
        t
    }

    /// Runs every timer due at `now`: T1, the delayed SACK, T3-rtx and heartbeats, in that
    /// order and by destination index.
    pub fn on_timer(&mut self, now: SimTime) {
        if self.state == AssocState::Failed {
            return;
        }
        self.new_send_opportunity();
        if self.t1.is_some_and(|t| t <= now) {
            self.on_t1(now);
        }
        if self.rcv.sack_timer.is_some_and(|t| t <= now) {
            self.rcv.on_sack_timer();
        }
        for d in 0..self.paths.len() {
            if self.state == AssocState::Failed {
                return;
            }
            if self.paths[d].t3.is_some_and(|t| t <= now) {
                self.on_t3(now, d);
            }
        }
        for d in 0..self.paths.len() {
            if self.state == AssocState::Failed {
                return;
            }
            if self.paths[d].hb_timer.is_some_and(|t| t <= now) {
                self.on_hb_timer(now, d);
            }
        }
    }

    // ---------------------------------------------------------------- path management (§8)

    /// Next heartbeat time: RTO + HB.interval ± 50 % RTO (§8.3); PF destinations every RTO
    /// (RFC 7829).
    fn arm_hb(&mut self, d: usize, now: SimTime) {
        let rto = self.paths[d].rto.rto();
        let t = if self.paths[d].state == PathState::PotentiallyFailed || self.unconfirmed[d] {
            now + rto
        } else {
            let jitter = (self.rng.next_f64() - 0.5) * rto.as_secs_f64();
            let base = rto.as_secs_f64() + self.cfg.hb_interval.as_secs_f64() + jitter;
            now + SimDuration::from_secs_f64(base.max(0.0))
        };
        self.paths[d].hb_timer = Some(t);
        self.paths[d].hb_armed_at = now;
    }

    fn send_heartbeat(&mut self, d: usize, now: SimTime) {
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        self.paths[d].hb_out = Some((nonce, now));
        self.stats.heartbeats_sent += 1;
        self.stats.per_dest[d].heartbeats_sent += 1;
        let h = HeartbeatInfo {
            sent_ns: now.as_nanos(),
            dest: d,
            nonce,
            info_len: self.cfg.hb_info_len,
        };
        self.control
            .push_back((d, Packet::single(Chunk::Heartbeat(h))));
    }

    fn on_hb_timer(&mut self, now: SimTime, d: usize) {
        self.paths[d].hb_timer = None;
        if self.paths[d].hb_out.take().is_some() {
            // §8.3: an unanswered HEARTBEAT counts one error and backs the RTO off; §8.1: it
            // counts for the association only on the path used for data.
            self.paths[d].rto.backoff();
            let before = self.paths[d].state;
            if before != PathState::Inactive {
                let assoc = d == self.data_dest;
                self.path_error(now, d, assoc);
                if self.state == AssocState::Failed {
                    return;
                }
            }
            let after = self.paths[d].state;
            if after == PathState::PotentiallyFailed && before != after {
                // Entering PF sent its HEARTBEAT and armed the timer (set_path_state).
                return;
            }
            if after == PathState::Inactive && before == PathState::PotentiallyFailed {
                // RFC 7829 §3.2 rule 8: an inactive destination is probed at the HB.interval
                // pace again, not at once.
                self.arm_hb(d, now);
                return;
            }
        }
        let p = &self.paths[d];
        let idle = p.last_data_sent.is_none_or(|t| t < p.hb_armed_at);
        if p.state != PathState::Active || idle {
            self.send_heartbeat(d, now);
        }
        self.arm_hb(d, now);
    }

    fn on_hb_ack(&mut self, now: SimTime, h: &HeartbeatInfo) {
        let d = h.dest;
        if d >= self.paths.len() || self.state == AssocState::Failed {
            return;
        }
        // §8.3: RTT sample from the carried time; clear the counters; mark active.
        self.rtt_sample(now, d, now.since(SimTime(h.sent_ns)));
        self.stats.heartbeats_acked += 1;
        self.stats.per_dest[d].heartbeats_acked += 1;
        if self.paths[d].hb_out.is_some_and(|(n, _)| n == h.nonce) {
            self.paths[d].hb_out = None;
        }
        if self.unconfirmed[d] {
            self.unconfirmed[d] = false;
            if !self.unconfirmed.iter().any(|&u| u) {
                // All confirmed: ns-2.35 starts its heartbeat timer now.
                self.new_send_opportunity();
                if self.cfg.heartbeats {
                    for e in 0..self.paths.len() {
                        if e != d {
                            self.arm_hb(e, now);
                        }
                    }
                }
            } else if !self.cfg.heartbeats {
                self.paths[d].hb_timer = None;
            }
        }
        self.assoc_errors = 0;
        self.clear_path_errors(now, d);
        if self.cfg.heartbeats {
            self.arm_hb(d, now);
        }
    }

    pub(crate) fn set_path_state(&mut self, now: SimTime, d: usize, to: PathState) {
        let from = self.paths[d].state;
        if from == to {
            return;
        }
        self.paths[d].state = to;
        self.events.push(SctpEvent::PathStateChange {
            at: now,
            dest: d,
            from,
            to,
        });
        if to == PathState::PotentiallyFailed && self.cfg.heartbeats {
            // RFC 7829: probe a PF destination at once, then once per RTO.
            self.send_heartbeat(d, now);
            self.arm_hb(d, now);
        }
        self.update_data_dest(now);
    }

    /// §8.2: a TSN last sent to `d` was acknowledged, or a HEARTBEAT to `d` was.
    pub(crate) fn clear_path_errors(&mut self, now: SimTime, d: usize) {
        self.paths[d].errors = 0;
        if self.paths[d].state != PathState::Active {
            self.set_path_state(now, d, PathState::Active);
            if self.cfg.heartbeats {
                self.arm_hb(d, now);
            }
        }
    }

    /// One error on `d` (T3-rtx expiry or unanswered HEARTBEAT): §8.2 inactive when the count
    /// exceeds Path.Max.Retrans; RFC 7829 PF when it exceeds PFMR; RFC 7829 §5 switchover when
    /// the primary's exceeds PSMR; §8.1 association failure.
    pub(crate) fn path_error(&mut self, now: SimTime, d: usize, assoc: bool) {
        self.paths[d].errors += 1;
        let e = self.paths[d].errors;
        if assoc {
            self.assoc_errors += 1;
            if self.assoc_errors > self.cfg.assoc_max_retrans {
                self.fail(now);
                return;
            }
        }
        let st = self.paths[d].state;
        if e > self.cfg.path_max_retrans {
            if st != PathState::Inactive {
                self.set_path_state(now, d, PathState::Inactive);
            }
        } else if self.cfg.pf_max_retrans.is_some_and(|pf| e > pf) && st == PathState::Active {
            self.set_path_state(now, d, PathState::PotentiallyFailed);
        }
        if d == self.primary && self.cfg.psmr.is_some_and(|p| e > p) {
            let to = self.choose_data_dest(Some(d));
            if to != d {
                self.primary = to;
                self.events.push(SctpEvent::PrimaryChange {
                    at: now,
                    from: d,
                    to,
                });
                self.update_data_dest(now);
            }
        }
    }

    /// §6.4, §8.2, RFC 7829 §3/§4: the primary while active; else one active alternate (the
    /// current one if still active, else the lowest index); else the PF destination with the
    /// fewest errors; all inactive: the primary (dormant).
    pub(crate) fn choose_data_dest(&self, exclude: Option<usize>) -> usize {
        let ok = |d: usize| Some(d) != exclude;
        if ok(self.primary) && self.paths[self.primary].state == PathState::Active {
            return self.primary;
        }
        let cur = self.data_dest;
        if ok(cur) && self.paths[cur].state == PathState::Active {
            return cur;
        }
        if let Some(d) =
            (0..self.paths.len()).find(|&d| ok(d) && self.paths[d].state == PathState::Active)
        {
            return d;
        }
        let mut pf: Option<usize> = None;
        for d in std::iter::once(self.primary).chain(0..self.paths.len()) {
            if ok(d)
                && self.paths[d].state == PathState::PotentiallyFailed
                && pf.is_none_or(|b| self.paths[d].errors < self.paths[b].errors)
            {
                pf = Some(d);
            }
        }
        pf.unwrap_or(self.primary)
    }

    pub(crate) fn update_data_dest(&mut self, now: SimTime) {
        let to = self.choose_data_dest(None);
        if to != self.data_dest {
            let f = Failover {
                at: now,
                from: self.data_dest,
                to,
            };
            self.stats.failovers.push(f.clone());
            self.events.push(SctpEvent::Failover(f));
            self.data_dest = to;
        }
    }

    /// §6.4: a timed-out chunk last sent to `last` goes to an active destination other than
    /// `last` (the data destination if it qualifies), else a PF one, else the data destination.
    pub(crate) fn rtx_target(&self, last: usize) -> usize {
        if self.data_dest != last && self.paths[self.data_dest].state == PathState::Active {
            return self.data_dest;
        }
        let d = self.choose_data_dest(Some(last));
        // RFC 7829 §3.2 rule 4: with no active destination a PF one MUST carry the data,
        // `last` itself when it is the only one.
        if self.paths[d].state == PathState::Inactive
            && self.paths[last].state == PathState::PotentiallyFailed
        {
            return last;
        }
        d
    }

    // ---------------------------------------------------------------- output

    /// The next packet to send and its destination index; call until `None`.
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<(usize, Packet)> {
        let out = self.next_packet(now);
        if let Some((d, p)) = &out {
            self.stats.per_dest[*d].packets_sent += 1;
            self.stats.per_dest[*d].bytes_sent += p.wire_size_ip() as u64;
        }
        out
    }

    fn next_packet(&mut self, now: SimTime) -> Option<(usize, Packet)> {
        if self.state == AssocState::Failed {
            return None;
        }
        if let Some(x) = self.control.pop_front() {
            return Some(x);
        }
        if self.rcv.sack_now {
            let s = self.rcv.build_sack(&self.cfg);
            return Some((self.rcv.sack_dest, Packet::single(Chunk::Sack(s))));
        }
        if self.state == AssocState::Established && !self.unconfirmed.iter().any(|&u| u) {
            return self.next_data_packet(now);
        }
        None
    }
}
