//! ns-2.35's `Agent/TCP/Linux` with `select_ca cubic` or `select_ca hybla` (ns-2's
//! `tcp/tcp-linux.cc`, `tcp/scoreboard1.cc`, `tcp/linux/`), the agent an ns-2 paper ran CUBIC
//! and Hybla with, under `ns-default.tcl`'s defaults. Names in comments are ns-2's.
//!
//! * Installing the congestion control (`install_congestion_control`) sets `tcpTick_` to 1 ms
//!   (`1/JIFFY_RATIO`): the RTT is timed in 1 ms ticks unless the script sets `tcpTick_` after
//!   `select_ca` (the scenario's `rto.granularity`, which the `ns2` profile fills with 1 ms for
//!   these agents). cwnd starts at `windowInit_` (2), ssthresh at `window_`, and the clamp
//!   `snd_cwnd_clamp` at `window_` (CUBIC; Hybla lifts it to 65535 in `hybla_init`). The
//!   window is cwnd alone (`window()`): `window_` acts only through the clamp.
//! * The SYN (packet 0, 40 bytes) goes with the first data packet: the agent has no
//!   handshake window of one.
//! * Per ACK (`recv`): ACKs above the next packet to send or below the cumulative point are
//!   ignored; the SACK scoreboard is updated ([`super::scoreboard1`]: FACK loss marking); the
//!   timed packet gives an RTT sample (Linux's mean deviation,
//!   [`super::rtt::Ns2Rtt::update_linux`]); the retransmission timer restarts on every ACK
//!   (`timerfix_`, `renew_timer`: duplicate ACKs included); the module's `init` runs on the
//!   first ACK, `pkts_acked` on every ACK that acknowledges new data, `cong_avoid` on those
//!   ACKs unless in Recovery, with the packets in flight before the ACK
//!   (`tcp_is_cwnd_limited`). Then `tcp_fastretrans_alert`: Recovery or Loss ends when the
//!   cumulative ACK reaches `recover_` (the highest packet sent when it began): the scoreboard
//!   is cleared, a cwnd below ssthresh is raised to it and then held at the packets in flight
//!   plus 3 (`tcp_moderate_cwnd`), and the state is Open; a newly lost packet in Open or Loss
//!   starts Recovery: `recover_` = the highest packet sent, ssthresh from the module, cwnd to
//!   the module's `min_cwnd` (Hybla: ssthresh/2) or to ssthresh (CUBIC).
//! * Sending (`send_much`): lost packets first, lowest first, then new ones, while the packets
//!   in flight are below cwnd; entering Recovery, the allowance starts at the old cwnd and one
//!   packet leaves per two packets that leave the network (`next_pkts_in_flight_`: rate
//!   halving) until the flight is down to cwnd. No `maxburst_`, no limited transmit, no
//!   duplicate-ACK counting: without SACK blocks no loss is ever detected but by a timeout.
//! * A timeout (`enter_loss`): ssthresh from the module, cwnd 1, `recover_` = the highest
//!   packet sent, every packet not SACKed marked lost (the scoreboard is kept), the timer backed
//!   off; the next packet is not reset to the cumulative point (retransmissions come from the
//!   scoreboard). CUBIC forgets its state on entering Loss (`bictcp_reset`).
//! * No undo, no F-RTO, no DSACK, no timestamps (`timestamps_` false), no ECN.
//!
//! Statistics as the other ns-2 agents keep them: a timeout with data outstanding counts in
//! `rto_count` (`nrexmit_`), an entry into Recovery in `fast_retx_count`, an ACK that
//! acknowledges nothing new in `dupacks_rcvd`.

use super::linux_cc::{Bictcp, CaStateLx, Hybla, LinuxCc, Sock};
use super::rtt::Ns2Rtt;
use super::scoreboard1::{ScoreBoard1, FLAG_DATA_LOST, FLAG_DATA_SACKED};
use crate::cc::{CcConfig, CcParams, CubicParams, HyblaParams};
use crate::spurious::EpisodeKind;
use crate::{CaState, Episode, Segment, SenderStats, SpuriousEvent, TcpConfig, Transmit, TxKind};
#[cfg(feature = "serde")]
use spikelab_core::config::ConfigError;
use spikelab_core::{SimDuration, SimTime};
use std::collections::VecDeque;

/// `TCP_MAXSEQ`: what an unlimited application offers.
const MAXSEQ: i64 = 1 << 40;
/// `tcp_max_burst` (`ns-linux-param.c`).
const TCP_MAX_BURST: i64 = 3;

/// Why a packet is sent (`reason`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Reason {
    Normal,
    Timeout,
}

/// ns-2.35's `Agent/TCP/Linux`.
#[derive(Clone, Debug)]
pub struct Ns2LinuxAgent {
    cfg: TcpConfig,
    mss: u64,
    total: u64,
    /// Number of the first data packet: 1 after a SYN, else 0.
    base: i64,
    syn: bool,
    wnd_init: u64,
    t_seqno: i64,
    maxseq: i64,
    highest_ack: i64,
    curseq: i64,
    recover: i64,
    next_pkts_in_flight: i64,
    lx: Sock,
    cc: LinuxCc,
    initialized: bool,
    scb: ScoreBoard1,
    rtt: Ns2Rtt,
    rtt_active: bool,
    rtt_seq: i64,
    rtt_ts: f64,
    rtx: Option<SimTime>,
    rtx_len: SimDuration,
    started: bool,
    now: SimTime,
    out: VecDeque<Transmit>,
    stats: SenderStats,
    events: Vec<SpuriousEvent>,
    next_episode: u32,
    rto_without_progress: bool,
    /// The next retransmission is the first of a Recovery.
    first_fr: bool,
    /// Since when, and up to which packet, the sender is in timeout recovery.
    loss: Option<(SimTime, i64)>,
    last_rtt_sample: Option<SimDuration>,
}

impl Ns2LinuxAgent {
    /// Whether `cfg` asks for this agent: the `ns2` profile with a congestion control that
    /// ns-2.35 runs through `Agent/TCP/Linux` only (CUBIC, Hybla), or with Reno and
    /// `ns2_linux_agent` (`select_ca reno`).
    pub fn wanted(cfg: &TcpConfig) -> bool {
        cfg.ns2 && (cfg.ns2_linux_agent || Self::runs(cfg.cc.name()))
    }

    /// Whether ns-2.35 runs the congestion control `algo` through `Agent/TCP/Linux`
    /// (`select_ca`): CUBIC and Hybla.
    pub fn runs(algo: &str) -> bool {
        Self::MODULES.contains(&algo)
    }

    /// The congestion controls ns-2.35 runs through `Agent/TCP/Linux`.
    pub const MODULES: [&'static str; 2] = [CubicParams::NAME, HyblaParams::NAME];

    /// The parameters of a scenario's `cc` (at `at`) that ns-2.35's modules take: none of
    /// CUBIC's (`tcp_cubic.c` runs CUBIC 2.1 at its own values), Hybla's `rtt0` in whole
    /// milliseconds (jiffies).
    #[cfg(feature = "serde")]
    pub fn check_cc(cc: &crate::cc::CcTable, at: &str) -> Result<(), ConfigError> {
        use spikelab_core::config::check;
        if let crate::cc::CcTable::Hybla(h) = cc {
            if let Some(r) = h.rtt0 {
                check(
                    r.0.as_nanos() % 1_000_000 == 0,
                    format!("{at}.rtt0"),
                    format!("tcp_hybla.c's rtt0 is whole milliseconds (jiffies), got {r}"),
                )?;
            }
            return Ok(());
        }
        match cc.set_fields().first() {
            None => Ok(()),
            Some(key) => Err(ConfigError::new(
                format!("{at}.{key}"),
                format!(
                    "ns-2.35's tcp_{}.c runs at its own values (CUBIC 2.1: beta 819/1024, \
                     bic_scale 41, fast convergence, TCP friendliness, no HyStart); drop the key",
                    cc.algo()
                ),
            )),
        }
    }

    /// An agent for `cfg` (`mss` as `packetSize_`, `rwnd` as `window_`, `initial_window` as
    /// `windowInit_`, `initial_ssthresh`, `handshake` as `syn_`, the RTO bounds, the tick and
    /// phase of the ns2 estimator, `cc`: CUBIC or Hybla with its `rtt0`); `app_total` bytes to
    /// send (`None`: bulk).
    pub fn new(cfg: TcpConfig, app_total: Option<u64>) -> Ns2LinuxAgent {
        let mss = cfg.mss as u64;
        let (tick, boot) = match cfg.rto.algorithm {
            crate::RtoAlgorithm::Ns2 { tick, phase } => (tick.as_secs_f64(), phase.as_secs_f64()),
            _ => (0.001, 0.0),
        };
        let wnd = (cfg.rwnd / mss).max(1);
        let syn = cfg.handshake;
        let curseq = match app_total {
            Some(t) => t.div_ceil(mss) as i64,
            None => MAXSEQ,
        };
        let cc = match cfg.cc {
            CcConfig::Hybla(p) => LinuxCc::Hybla(Hybla::new(p.rtt0.as_nanos() / 1_000_000)),
            CcConfig::Reno(_) => LinuxCc::Reno,
            _ => LinuxCc::Cubic(Bictcp::default()),
        };
        // install_congestion_control: load_to_linux_once (clamp and ssthresh window_, mss),
        // then load_to_linux (ssthresh_ and cwnd_ of the agent: window_ and windowInit_).
        let lx = Sock {
            snd_cwnd: cfg.initial_window as u64,
            snd_ssthresh: cfg.initial_ssthresh.map_or(wnd, |b| b / mss),
            snd_cwnd_clamp: wnd,
            mss_cache: mss,
            ..Sock::default()
        };
        Ns2LinuxAgent {
            mss,
            total: app_total.unwrap_or(u64::MAX),
            base: syn as i64,
            syn,
            wnd_init: cfg.initial_window as u64,
            t_seqno: 0,
            maxseq: -1,
            highest_ack: -1,
            curseq,
            recover: 0,
            next_pkts_in_flight: 0,
            lx,
            cc,
            initialized: false,
            scb: ScoreBoard1::new(),
            rtt: Ns2Rtt::new(
                tick,
                boot,
                cfg.rto.min.as_secs_f64(),
                cfg.rto.max.as_secs_f64(),
                cfg.rto.initial.as_secs_f64(),
            ),
            rtt_active: false,
            rtt_seq: -1,
            rtt_ts: 0.0,
            rtx: None,
            rtx_len: SimDuration::ZERO,
            started: false,
            now: SimTime::ZERO,
            out: VecDeque::new(),
            stats: SenderStats::default(),
            events: Vec::new(),
            next_episode: 0,
            rto_without_progress: false,
            first_fr: false,
            loss: None,
            last_rtt_sample: None,
            cfg,
        }
    }

    // ---- numbering ------------------------------------------------------------------------

    fn end_byte(&self, k: i64) -> u64 {
        ((k + 1 - self.base).max(0) as u64)
            .saturating_mul(self.mss)
            .min(self.total)
    }
    fn packet_of_ack(&self, ack: u64) -> i64 {
        ack.div_ceil(self.mss) as i64 + self.base - 1
    }

    // ---- observers ------------------------------------------------------------------------

    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    /// The module's name (`cubic`, `hybla`).
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }
    /// cwnd in bytes as ns-2's `cwnd_` shows it: the rate-halving allowance when above cwnd
    /// (`save_from_linux`).
    pub fn cwnd(&self) -> u64 {
        (self.lx.snd_cwnd as i64).max(self.next_pkts_in_flight) as u64 * self.mss
    }
    pub fn ssthresh(&self) -> u64 {
        self.lx.snd_ssthresh * self.mss
    }
    pub fn snd_una(&self) -> u64 {
        self.end_byte(self.highest_ack)
    }
    pub fn snd_nxt(&self) -> u64 {
        self.end_byte(self.t_seqno - 1)
    }
    pub fn snd_max(&self) -> u64 {
        self.end_byte(self.maxseq)
    }
    pub fn inflight(&self) -> u64 {
        self.packets_in_flight().max(0) as u64 * self.mss
    }
    pub fn state(&self) -> CaState {
        match self.lx.ca_state {
            CaStateLx::Recovery => CaState::Recovery,
            CaStateLx::Loss => CaState::Loss,
            CaStateLx::Open if self.scb.sack_out() > 0 => CaState::Disorder,
            CaStateLx::Open => CaState::Open,
        }
    }
    pub fn pending_kind(&self) -> Option<TxKind> {
        self.out.front().map(|t| t.kind)
    }
    pub fn srtt(&self) -> Option<SimDuration> {
        self.rtt.srtt().map(SimDuration::from_secs_f64)
    }
    pub fn rttvar(&self) -> SimDuration {
        SimDuration::from_secs_f64(self.rtt.rttvar().max(0.0))
    }
    pub fn rto(&self) -> SimDuration {
        SimDuration::from_secs_f64(self.rtt.timeout())
    }
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }
    pub fn timeout_time(&self, now: SimTime) -> SimDuration {
        let open = self.loss.map_or(0, |(t0, _)| now.0.saturating_sub(t0.0));
        SimDuration(self.stats.timeout_time_ns + open)
    }
    pub fn last_rtt_sample(&self) -> Option<SimDuration> {
        self.last_rtt_sample
    }
    pub fn spurious_events(&self) -> &[SpuriousEvent] {
        &self.events
    }
    pub fn clear_spurious_events(&mut self) {
        self.events.clear();
    }
    pub fn is_done(&self) -> bool {
        self.total != u64::MAX && self.snd_una() >= self.total
    }
    pub fn next_timer(&self) -> Option<SimTime> {
        self.rtx
    }

    // ---- the sans-IO surface --------------------------------------------------------------

    /// The next packet to send; the first call starts the transfer (`send_much`).
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Transmit> {
        self.now = now;
        if !self.started {
            self.started = true;
            self.send_much(Reason::Normal);
        }
        self.out.pop_front()
    }

    pub fn on_timer(&mut self, now: SimTime) {
        self.now = now;
        if self.rtx.is_some_and(|t| t <= now) {
            self.rtx = None;
            self.timeout();
        }
    }

    /// `LinuxTcpAgent::recv` (Linux's `tcp_ack`).
    pub fn on_ack(&mut self, now: SimTime, seg: &Segment) {
        self.now = now;
        self.last_rtt_sample = None;
        let a = self.packet_of_ack(seg.ack);
        let blocks: Vec<(i64, i64)> = seg
            .sack
            .as_slice()
            .iter()
            .map(|&(s, e)| {
                (
                    (s / self.mss) as i64 + self.base,
                    e.div_ceil(self.mss) as i64 + self.base,
                )
            })
            .collect();
        self.lx.jiffies = (now.as_secs_f64() * 1000.0).trunc() as u64;
        let prior_snd_una = self.highest_ack + 1;
        let ack = a + 1;
        if ack > self.t_seqno || ack < prior_snd_una {
            // uninteresting_ack / old_ack
            return;
        }
        let prior_in_flight = self.packets_in_flight();
        let acked = ack > prior_snd_una;
        let mut flag = 0u8;
        if acked {
            self.lx.bytes_acked += (ack - prior_snd_una) as u64 * self.mss;
            // ack_processing
            self.highest_ack = a;
            self.maxseq = self.maxseq.max(self.highest_ack);
            if self.t_seqno < self.highest_ack + 1 {
                self.t_seqno = self.highest_ack + 1;
            }
            self.rto_without_progress = false;
        } else {
            self.stats.dupacks_rcvd += 1;
        }
        if !blocks.is_empty() || !self.scb.is_empty() {
            flag |= self.scb.update(self.highest_ack, &blocks);
        }
        self.time_processing(a);
        if !self.initialized {
            self.cc.init(&mut self.lx);
            self.initialized = true;
        }
        if acked {
            let n = (ack - prior_snd_una) as u64;
            self.cc.pkts_acked(&self.lx, n);
        }
        let dubious = !acked || flag & FLAG_DATA_SACKED != 0 || self.lx.ca_state != CaStateLx::Open;
        if dubious {
            if acked && self.lx.ca_state != CaStateLx::Recovery {
                self.cc.cong_avoid(&mut self.lx, prior_in_flight);
            }
            self.fastretrans_alert(flag);
        } else if acked {
            self.cc.cong_avoid(&mut self.lx, prior_in_flight);
        }
        self.send_much(Reason::Normal);
        if self.highest_ack >= self.curseq - 1 && self.total != u64::MAX {
            // Everything acknowledged: ns-2 keeps the timer running to no effect; stop it.
            self.rtx = None;
        }
        if let Some((t0, upto)) = self.loss {
            if self.highest_ack >= upto {
                self.stats.timeout_time_ns += now.0.saturating_sub(t0.0);
                self.loss = None;
            }
        }
    }

    // ---- TcpAgent and LinuxTcpAgent -------------------------------------------------------

    fn now_s(&self) -> f64 {
        self.now.as_secs_f64()
    }

    fn packets_in_flight(&self) -> i64 {
        self.scb
            .packets_in_flight(self.highest_ack + 1, self.t_seqno)
    }

    fn set_rtx_timer(&mut self) {
        let d = SimDuration::from_secs_f64(self.rtt.timeout());
        self.rtx = Some(self.now + d);
        self.rtx_len = d;
    }

    /// `time_processing`: the RTT sample of the timed packet and the timer.
    fn time_processing(&mut self, a: i64) {
        if self.rtt_active && a >= self.rtt_seq {
            self.rtt.t_backoff = 1;
            self.rtt_active = false;
            let tao = self.now_s() - self.rtt_ts;
            self.lx.srtt = self.rtt.update_linux(self.now_s(), tao).max(0) as u64;
            self.last_rtt_sample = Some(SimDuration::from_secs_f64(tao));
            self.stats.rtt_samples += 1;
            self.stats.rtt_sum_s += tao;
            self.stats.rtt_sumsq_s += tao * tao;
        }
        // renew_timer (timerfix_): t_seqno_ > highest_ack_ always holds, so every ACK restarts
        // the timer.
        if self.t_seqno > self.highest_ack || self.highest_ack < self.maxseq || self.lx.snd_cwnd < 1
        {
            self.set_rtx_timer();
        } else {
            self.rtx = None;
        }
    }

    fn set_ca_state(&mut self, s: CaStateLx) {
        self.cc.set_state(s);
        self.lx.ca_state = s;
    }

    /// `tcp_fastretrans_alert`.
    fn fastretrans_alert(&mut self, flag: u8) {
        if self.lx.ca_state != CaStateLx::Open && self.highest_ack >= self.recover {
            self.scb.clear();
            if self.lx.snd_cwnd < self.lx.snd_ssthresh {
                self.lx.snd_cwnd = self.lx.snd_ssthresh;
                // tcp_moderate_cwnd
                let cap = self.packets_in_flight() + TCP_MAX_BURST;
                self.lx.snd_cwnd = (self.lx.snd_cwnd as i64).min(cap).max(0) as u64;
            }
            self.set_ca_state(CaStateLx::Open);
            self.next_pkts_in_flight = 0;
            return;
        }
        if self.lx.ca_state != CaStateLx::Recovery && flag & FLAG_DATA_LOST != 0 {
            self.recover = self.maxseq;
            self.next_pkts_in_flight = self.lx.snd_cwnd as i64;
            self.lx.snd_ssthresh = self.cc.ssthresh(&self.lx);
            self.lx.snd_cwnd_cnt = 0;
            self.lx.bytes_acked = 0;
            self.lx.snd_cwnd = self.cc.min_cwnd(&self.lx).unwrap_or(self.lx.snd_ssthresh);
            self.set_ca_state(CaStateLx::Recovery);
            self.stats.fast_retx_count += 1;
            self.first_fr = true;
            let first = self.scb.next_retran().unwrap_or(self.highest_ack + 1);
            self.start_episode(EpisodeKind::FastRetransmit, first);
        }
    }

    /// `enter_loss`.
    fn enter_loss(&mut self) {
        self.lx.snd_ssthresh = self.cc.ssthresh(&self.lx);
        self.lx.snd_cwnd = 1;
        self.lx.snd_cwnd_cnt = 0;
        self.lx.bytes_acked = 0;
        self.recover = self.maxseq;
        self.set_ca_state(CaStateLx::Loss);
        self.scb.mark_loss(self.highest_ack + 1, self.t_seqno);
    }

    /// `LinuxTcpAgent::timeout`.
    fn timeout(&mut self) {
        self.stats.rto_wait_ns += self.rtx_len.0;
        let outstanding = self.highest_ack != self.maxseq;
        if !outstanding {
            // Nothing outstanding (restart_bugfix_): cwnd back to windowInit_, no backoff.
            self.lx.snd_cwnd = self.wnd_init;
        } else {
            self.stats.rto_count += 1;
            if !self.rto_without_progress {
                self.start_episode(EpisodeKind::Timeout, self.highest_ack + 1);
                if self.loss.is_none() {
                    self.loss = Some((self.now, self.maxseq));
                }
            } else if let Some((_, upto)) = &mut self.loss {
                *upto = self.maxseq;
            }
            self.rto_without_progress = true;
            self.first_fr = false;
            self.enter_loss();
        }
        // reset_rtx_timer(TCP_REASON_TIMEOUT, backoff): mild, t_seqno_ stays.
        if outstanding {
            self.rtt.backoff();
        }
        self.set_rtx_timer();
        self.rtt_active = false;
        self.next_pkts_in_flight = 0;
        self.lx.bytes_acked = 0;
        self.send_much(Reason::Timeout);
    }

    fn start_episode(&mut self, kind: EpisodeKind, packet: i64) {
        let ep = Episode {
            id: self.next_episode,
            kind,
            seq: (packet - self.base).max(0) as u64 * self.mss,
            start: self.now,
            responded: false,
        };
        self.next_episode += 1;
        self.events.push(SpuriousEvent::EpisodeStart(ep));
    }

    fn output(&mut self, seqno: i64, reason: Reason) {
        let force = self.highest_ack == self.maxseq;
        let is_syn = self.syn && seqno == 0;
        if is_syn && self.maxseq == -1 {
            self.curseq += 1;
        }
        let kind = if is_syn {
            TxKind::Syn
        } else if seqno > self.maxseq {
            TxKind::New
        } else if reason == Reason::Timeout {
            TxKind::RtoRetransmit
        } else if std::mem::take(&mut self.first_fr) {
            TxKind::FastRetransmit
        } else {
            TxKind::Retransmit
        };
        let seg = if is_syn {
            Segment {
                window: self.cfg.rwnd,
                syn: true,
                ..Segment::default()
            }
        } else {
            let seq = (seqno - self.base) as u64 * self.mss;
            Segment {
                seq,
                len: self.mss.min(self.total - seq) as u32,
                window: self.cfg.rwnd,
                ..Segment::default()
            }
        };
        self.out.push_back(Transmit { seg, kind });
        self.stats.segments_sent += 1;
        if seqno > self.maxseq {
            self.maxseq = seqno;
            if !self.rtt_active {
                self.rtt_active = true;
                if seqno > self.rtt_seq {
                    self.rtt_seq = seqno;
                    self.rtt_ts = self.now_s();
                }
            }
        } else {
            self.stats.retx_segments += 1;
        }
        if self.rtx.is_none() || force {
            self.set_rtx_timer();
        }
    }

    /// `LinuxTcpAgent::send_much`.
    fn send_much(&mut self, reason: Reason) {
        let mut win = self.lx.snd_cwnd as i64;
        self.next_pkts_in_flight = self.next_pkts_in_flight.min(self.packets_in_flight() + 1);
        while self.packets_in_flight() < win.max(self.next_pkts_in_flight) {
            let xmit = match self.scb.next_retran() {
                None => {
                    if self.t_seqno >= self.curseq {
                        return;
                    }
                    self.t_seqno += 1;
                    self.t_seqno - 1
                }
                Some(s) => {
                    self.scb.mark_retran(s, self.t_seqno);
                    win = self.lx.snd_cwnd as i64;
                    s
                }
            };
            self.output(xmit, reason);
            self.next_pkts_in_flight = self
                .next_pkts_in_flight
                .min((self.packets_in_flight() - 1).max(1));
            if self.t_seqno <= xmit {
                self.t_seqno = xmit + 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CubicParams, HyblaParams};

    fn cfg(cc: CcConfig) -> TcpConfig {
        let mut c = super::super::agent::tests::cfg(crate::Variant::Sack);
        c.cc = cc;
        c.sack = true;
        c.rto.algorithm = crate::RtoAlgorithm::Ns2 {
            tick: SimDuration::from_millis(1),
            phase: SimDuration::ZERO,
        };
        c
    }

    fn drain(a: &mut Ns2LinuxAgent, now: SimTime) -> Vec<Transmit> {
        std::iter::from_fn(|| a.poll_transmit(now)).collect()
    }

    fn ack(a: &mut Ns2LinuxAgent, now: SimTime, bytes: u64, sack: &[(u64, u64)]) {
        let mut seg = Segment {
            ack: bytes,
            ..Segment::default()
        };
        for &(l, r) in sack {
            seg.sack.push(l, r);
        }
        a.on_ack(now, &seg);
    }

    #[test]
    fn the_syn_goes_with_the_first_data_packet_and_hybla_starts_at_rho() {
        let mut a = Ns2LinuxAgent::new(cfg(CcConfig::Hybla(HyblaParams::default())), None);
        assert!(Ns2LinuxAgent::wanted(a.config()));
        let out = drain(&mut a, SimTime::ZERO);
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].kind, out[1].kind), (TxKind::Syn, TxKind::New));
        // The SYN's ACK after 160 ms: srtt 1280 (1 ms ticks << 3), rho 6, cwnd 6, as ns-2.35
        // printed it (5 packets sent, t_seqno_ 7); 2 in flight < 6: no growth yet.
        let t = SimTime::from_millis(160);
        ack(&mut a, t, 0, &[]);
        assert_eq!(a.cwnd(), 6000);
        assert_eq!(drain(&mut a, t).len(), 5);
        // The DelAck sink's ACK of packet 1, 40 ms later: slow start to ssthresh (window_ 20).
        let t = SimTime::from_millis(200);
        ack(&mut a, t, 1000, &[]);
        assert_eq!(a.cwnd(), 20_000);
        assert_eq!(drain(&mut a, t).len(), 15);
    }

    #[test]
    fn cubic_is_clamped_at_window_and_recovers_from_a_fack_loss() {
        let mut a = Ns2LinuxAgent::new(cfg(CcConfig::Cubic(CubicParams::rfc9438())), None);
        let mut t = SimTime::ZERO;
        drain(&mut a, t);
        let mut acked = 0;
        t += SimDuration::from_millis(100);
        ack(&mut a, t, 0, &[]);
        for _ in 0..200 {
            drain(&mut a, t);
            t += SimDuration::from_millis(5);
            acked += 1000;
            ack(&mut a, t, acked, &[]);
        }
        assert_eq!(a.cwnd(), 20_000);
        drain(&mut a, t);
        // Packet `acked/1000 + 1` lost: SACKs of the next ones; the fourth SACKed above it
        // marks it lost (FACK) and starts Recovery with ssthresh 20·819/1024 = 15.
        for k in 1..=4u64 {
            drain(&mut a, t);
            ack(&mut a, t, acked, &[(acked + 1000, acked + 1000 + k * 1000)]);
        }
        assert_eq!(a.state(), CaState::Recovery);
        assert_eq!(a.ssthresh(), 15_000);
        assert_eq!(a.stats().fast_retx_count, 1);
        let out = drain(&mut a, t);
        assert_eq!(out[0].kind, TxKind::FastRetransmit);
        assert_eq!(out[0].seg.seq, acked);
    }
}
