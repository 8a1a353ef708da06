//! The TCP data receiver.
//!
//! * Cumulative ACK of `rcv_nxt`; out-of-order data kept as disjoint ranges.
//! * Delayed ACK (RFC 5681 §4.2, RFC 1122 §4.2.3.2): an ACK for at least every
//!   `delack_segments`-th full-sized segment, or when the timer (default 40 ms) expires; an
//!   immediate ACK for out-of-order data, for a segment that fills all or part of a gap, and for
//!   a duplicate segment.
//! * SACK (RFC 2018 §4): the first block holds the segment that triggered the ACK, the others
//!   repeat the most recently reported blocks; at most 3 blocks with timestamps, 4 without.
//! * DSACK (RFC 2883 §4): a duplicate segment is reported in the first block of the next ACK
//!   (once); if it lies inside a SACKed block, that block follows it.
//! * Timestamps (RFC 7323 §4.3): `TS.Recent = SEG.TSval` when `SEG.TSval >= TS.Recent` and
//!   `SEG.SEQ <= Last.ACK.sent`, so a delayed ACK echoes the earliest unacknowledged segment and
//!   an out-of-order segment does not move TS.Recent; every ACK echoes TS.Recent.
//! * PAWS (RFC 7323 §5.3 R1, optional, `paws`): before TS.Recent is updated, a data segment
//!   whose TSval lags TS.Recent by more than `paws_window` ticks is discarded and answered at
//!   once with a duplicate ACK, a DSACK for any part below `rcv_nxt` and quick-ACK mode, as
//!   Linux's `tcp_validate_incoming` and `tcp_send_dupack` do (Linux: a lag of 1 tick passes,
//!   `TCP_PAWS_WINDOW`; a TS.Recent of 0 is not checked). On a reordering path a
//!   retransmission that fills the left edge carries a fresh TSval, so the originals of later
//!   data still in flight arrive older than TS.Recent and are lost to the receiver.
//!
//! * Adaptive delayed-ACK timeout (optional, `delack_ato`; Linux `icsk_ack.ato`): the timer is
//!   armed for `ato`, which starts at `delack_timeout` (`TCP_ATO_MIN`) with the first data and
//!   follows the gap `m` between in-order segments (`tcp_event_data_recv`): `ato/2 + min/2` for
//!   `m <= min/2`, `ato/2 + m` (at most the receiver's RTO) for `m < ato`; it doubles (at most
//!   the RTO) when the timer fires with an ACK due (`tcp_delack_timer_handler`) and returns to
//!   the minimum with quick-ACK mode after a duplicate (`tcp_enter_quickack_mode`). Armed, it
//!   is bounded by the handshake's RTT (not below the minimum) when `ato` exceeds the minimum,
//!   and by 200 ms (`TCP_DELACK_MAX`; `tcp_send_delayed_ack`). With `timer_hz` all of it is in
//!   whole jiffies, as the kernel counts.
//!
//! * Quick-ACK mode (optional, `quickack`; Linux `tcp_incr_quickack`,
//!   `tcp_enter_quickack_mode`): the first `quickack` data segments of the connection, those
//!   after a receive gap longer than `quickack_idle` (Linux: the receiver's RTO), and those after
//!   a duplicate segment are acknowledged at once, one ACK each. Every data ACK sent uses up one
//!   of them (`tcp_dec_quickack_mode`), out-of-order and gap-filling ones too.
//!
//! * SACK compression (optional, `comp_sack`; Linux `__tcp_ack_snd_check`,
//!   `tcp_sack_new_ofo_skb`, since 4.19): out-of-order data outside quick-ACK mode is
//!   acknowledged at once only for the first three ACKs of each `rcv_nxt` (`dup_ack_counter`);
//!   later ones are held back until `comp_sack` segments wait (the next one then goes at once),
//!   or until a timer of min(`comp_sack_delay`, RTT / 20) + `comp_sack_slack` armed by the
//!   first held segment fires. A segment that lands outside the two most recent SACK blocks
//!   first sends the held ACK (without itself). Any ACK sent clears what was held.
//!
//! * Receive-window autotuning (optional, `rcv_autotune`; Linux `tcp_grow_window`,
//!   `tcp_rcv_space_adjust`): the window starts at 64 KB rounded down to whole segments and
//!   grows by two segments per in-order full segment up to a clamp (a segment that grows it is
//!   ACKed at once: Linux sets `icsk_ack.quick` there); once per receiver RTT (measured from
//!   the timestamps it gets echoed) the clamp follows the bytes the application read in that
//!   RTT, as dynamic right-sizing does. Without it the window is the configured `rwnd`.
//!
//! The receive buffer is drained by the application at once.

use crate::jiffies::{self, tick_at, ticks_of};
use crate::{SackBlocks, Segment, TcpConfig, Timestamps};
use spikelab_core::{SimDuration, SimTime};

#[derive(Clone, Debug, Default)]
pub struct ReceiverStats {
    pub segments_rcvd: u64,
    pub duplicate_segments: u64,
    pub acks_sent: u64,
    /// Data segments discarded by PAWS (Linux `PAWSEstab`).
    pub paws_rejected: u64,
}

pub struct TcpReceiver {
    cfg: TcpConfig,
    rcv_nxt: u64,
    /// Out-of-order ranges `[start, end)`, sorted and disjoint, all above `rcv_nxt`.
    ooo: Vec<(u64, u64)>,
    /// A byte of each recently reported SACK block, most recent first.
    recent: Vec<u64>,
    dsack: Option<(u64, u64)>,
    ts_recent: u32,
    last_ack_sent: u64,
    unacked_bytes: u64,
    delack_deadline: Option<SimTime>,
    ack_now: bool,
    /// A SYN-ACK is due.
    syn_ack: bool,
    /// Segments still to acknowledge at once (Linux `icsk_ack.quick`).
    quick: u32,
    /// When the last data segment arrived (`None`: none yet).
    last_rcv: Option<SimTime>,
    /// When the last SYN-ACK left and how many were sent (the handshake's RTT sample).
    syn_ack_at: Option<SimTime>,
    syn_acks: u32,
    /// The receive gap that re-enters quick-ACK mode: longer than `idle_gap` and, on the
    /// kernel's clock, more than `idle_ticks` jiffies (a gap up to `idle_gap` is never more).
    /// With `quickack_idle_rto` it follows the receiver's own RTO (Linux `icsk_rto` of the
    /// passive side): `rto.initial` until the handshake gives its sample.
    idle_gap: SimDuration,
    idle_ticks: Option<u64>,
    /// The adaptive delayed-ACK timeout (`delack_ato`), in ticks (jiffies with `timer_hz`,
    /// else nanoseconds; 0 before the first data), and the receiver's RTO and handshake RTT in
    /// the same ticks.
    ato: u64,
    rto_ticks: u64,
    srtt_ticks: Option<u64>,
    /// Receive-window autotuning (`rcv_autotune`), else `None`.
    tune: Option<Autotune>,
    /// SACK compression: segments whose ACK is held back (Linux `compressed_ack`), the
    /// `rcv_nxt` the immediate ones were counted for and their count (`dup_ack_counter`), the
    /// held ACK's deadline, and an ACK built before the segment that forced it out.
    compressed: u32,
    comp_rcv_nxt: u64,
    dup_acks: u32,
    comp_deadline: Option<SimTime>,
    flushed: Option<Segment>,
    stats: ReceiverStats,
}

/// The default receive buffer (`tcp_rmem[1]`) and the maximum one (`tcp_rmem[2]`), bytes.
const RMEM_DEFAULT: f64 = 131_072.0;
const RMEM_MAX: f64 = 6_291_456.0;
/// The share of a receive buffer the kernel advertises as window (its `scaling_ratio`: payload
/// over buffer truesize; 0.61 reproduces the 79.6 KB first clamp seen on kernel 6.18 over veth).
const WINDOW_SHARE: f64 = 0.61;

/// Linux's receive-window state (`rcv_ssthresh`, `window_clamp`, `rcvq_space`, `rcv_rtt_est`).
#[derive(Clone, Debug)]
struct Autotune {
    /// The window advertised (grows towards `clamp`).
    ssthresh: u64,
    clamp: u64,
    /// Bytes the application read in the last measured receiver RTT.
    space: u64,
    /// `rcv_nxt` and the time when the current measurement began.
    space_seq: u64,
    space_time: Option<SimTime>,
    /// The receiver's RTT estimate (Linux `rcv_rtt_est`: the minimum of the timestamp samples,
    /// followed upwards by an EWMA of gain 1/8).
    rtt: Option<SimDuration>,
    /// The echoed timestamp of the last sample: one sample per distinct `TSecr`
    /// (`rcv_rtt_last_tsecr`).
    last_tsecr: Option<u32>,
}

impl Autotune {
    fn new(mss: u64) -> Autotune {
        let ssthresh = 65_535 / mss * mss;
        Autotune {
            ssthresh,
            clamp: (RMEM_DEFAULT * WINDOW_SHARE) as u64,
            space: ssthresh.min(10 * mss),
            space_seq: 0,
            space_time: None,
            rtt: None,
            last_tsecr: None,
        }
    }

    /// An in-order data segment of `len` bytes arrived (rcv_nxt is now `rcv_nxt`); true when it
    /// grew the window (Linux then ACKs it at once).
    fn on_data(
        &mut self,
        now: SimTime,
        rcv_nxt: u64,
        len: u64,
        mss: u64,
        rtt: Option<SimDuration>,
    ) -> bool {
        if let Some(sample) = rtt {
            // tcp_rcv_rtt_update (timestamp samples): a smaller sample is taken at once, a
            // larger one through an EWMA of gain 1/8.
            self.rtt = Some(match self.rtt {
                Some(r) if sample >= r => SimDuration((r.0 * 7 + sample.0) / 8),
                _ => sample,
            });
        }
        // tcp_grow_window, when the segment arrives: two segments per full segment, up to the
        // clamp.
        let grew = len >= 128 && self.ssthresh < self.clamp;
        if grew {
            self.ssthresh = (self.ssthresh + 2 * mss).min(self.clamp);
        }
        // tcp_rcv_space_adjust, when the application has read it (after the window check and
        // the ACK decision for this segment): once per receiver RTT, the clamp follows what was
        // read.
        let start = *self.space_time.get_or_insert(now);
        if self.rtt.is_some_and(|r| now.since(start) >= r) {
            let copied = rcv_nxt - self.space_seq;
            if copied > self.space {
                let mut win = 2 * copied + 16 * mss;
                let grow = win * (copied - self.space) / self.space.max(1);
                win += 2 * grow;
                let cap = (RMEM_MAX * WINDOW_SHARE) as u64;
                self.clamp = self.clamp.max(win.min(cap));
                self.space = copied;
            }
            self.space_seq = rcv_nxt;
            self.space_time = Some(now);
        }
        grew
    }
}

/// Linux's `TCP_DELACK_MAX`: the longest delayed-ACK timeout (`icsk_delack_max`'s default).
const DELACK_MAX: SimDuration = SimDuration(200_000_000);

/// The quick-ACK gap for a receiver whose own RTO is `rto` (see `TcpReceiver::idle_gap`).
fn idle_rule(cfg: &TcpConfig, rto: SimDuration) -> (SimDuration, Option<u64>) {
    match (cfg.quickack_idle_rto, cfg.timer_hz) {
        (false, _) => (cfg.quickack_idle, None),
        (true, 0) => (rto, None),
        // A gap of at most `r` jiffies' length spans at most `r` jiffy boundaries.
        (true, hz) => {
            let r = jiffies::ticks_ceil(rto, hz);
            (jiffies::ticks_duration(r, hz), Some(r))
        }
    }
}

impl TcpReceiver {
    pub fn new(cfg: TcpConfig) -> TcpReceiver {
        let (idle_gap, idle_ticks) = idle_rule(&cfg, cfg.rto.initial);
        let rto_ticks = ticks_of(cfg.rto.initial, cfg.timer_hz);
        TcpReceiver {
            ato: 0,
            rto_ticks,
            srtt_ticks: None,
            tune: cfg.rcv_autotune.then(|| Autotune::new(cfg.mss as u64)),
            cfg,
            rcv_nxt: 0,
            ooo: Vec::with_capacity(16),
            recent: Vec::with_capacity(8),
            dsack: None,
            ts_recent: 0,
            last_ack_sent: 0,
            unacked_bytes: 0,
            delack_deadline: None,
            ack_now: false,
            syn_ack: false,
            quick: 0,
            last_rcv: None,
            syn_ack_at: None,
            syn_acks: 0,
            idle_gap,
            idle_ticks,
            compressed: 0,
            comp_rcv_nxt: 0,
            dup_acks: 0,
            comp_deadline: None,
            flushed: None,
            stats: ReceiverStats::default(),
        }
    }

    /// Bytes delivered in order to the application.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }
    pub fn ooo_ranges(&self) -> &[(u64, u64)] {
        &self.ooo
    }
    pub fn next_timer(&self) -> Option<SimTime> {
        match (self.delack_deadline, self.comp_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Processes a data segment arriving at `now`; false when PAWS discarded it (the data did
    /// not reach the receiver).
    pub fn on_segment(&mut self, now: SimTime, seg: &Segment) -> bool {
        self.stats.segments_rcvd += 1;
        if seg.syn {
            // The handshake's SYN (again, if the SYN-ACK was lost): answer with a SYN-ACK.
            if let Some(ts) = seg.ts {
                self.ts_recent = ts.val;
            }
            self.syn_ack = true;
            return true;
        }
        if self.paws_rejects(seg) {
            self.stats.paws_rejected += 1;
            if seg.seq < self.rcv_nxt {
                // tcp_send_dupack: the old part is reported as a DSACK, in quick-ACK mode.
                self.enter_quickack();
                self.dsack = Some((seg.seq, seg.end().min(self.rcv_nxt)));
            }
            self.ack_now = true;
            return false;
        }
        if let Some(ts) = seg.ts {
            if ts.val.wrapping_sub(self.ts_recent) as i32 >= 0 && seg.seq <= self.last_ack_sent {
                self.ts_recent = ts.val;
            }
        }
        if let Some(sent) = self.syn_ack_at.take() {
            // The first segment after the SYN-ACK completes the handshake: the passive side's
            // RTT sample (Linux takes none after a retransmitted SYN-ACK without timestamps).
            if self.syn_acks == 1 || self.cfg.timestamps {
                let m = now.since(sent);
                let rto = (m + (m + m).max(self.cfg.rto.min)).min(self.cfg.rto.max);
                (self.idle_gap, self.idle_ticks) = idle_rule(&self.cfg, rto);
                self.rto_ticks = ticks_of(rto, self.cfg.timer_hz);
                self.srtt_ticks = Some(ticks_of(m, self.cfg.timer_hz));
            }
        }
        let (mut start, end) = (seg.seq, seg.end());
        if seg.len == 0 {
            return true;
        }
        if (self.cfg.quickack > 0 || self.cfg.delack_ato)
            && start <= self.rcv_nxt
            && end > self.rcv_nxt
        {
            // Linux tcp_event_data_recv, which only in-order data reaches. First data, or a
            // gap since the last in-order data longer than the receiver's RTO: quick-ACK mode.
            if self.cfg.delack_ato {
                self.adapt_ato(now);
            }
            if self.cfg.quickack > 0 && self.last_rcv.is_none_or(|t| self.idle_since(t, now)) {
                self.quick = self.quick.max(self.cfg.quickack);
            }
            self.last_rcv = Some(now);
        }
        if end <= self.rcv_nxt {
            // A duplicate: Linux enters quick-ACK mode (`tcp_data_queue`), which resets `ato`.
            self.enter_quickack();
            self.stats.duplicate_segments += 1;
            self.dsack = Some((start, end));
            self.ack_now = true;
            return true;
        }
        if start < self.rcv_nxt {
            self.dsack = Some((start, self.rcv_nxt));
            start = self.rcv_nxt;
        }
        if start == self.rcv_nxt {
            let had_gap = !self.ooo.is_empty();
            self.rcv_nxt = end;
            while let Some(&(s, e)) = self.ooo.first() {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.remove(0);
            }
            let rcv_nxt = self.rcv_nxt;
            self.recent.retain(|&b| b >= rcv_nxt);
            if self.tune.is_some() {
                self.autotune(now, seg);
            }
            if self.ack_at_once() {
                self.ack_now = true;
            } else if had_gap {
                // The gap closed: ACK at once (RFC 5681 §4.2); part of it: the ACK goes at once
                // as the first for the new rcv_nxt.
                if self.ooo.is_empty() {
                    self.ack_now = true;
                } else {
                    self.ack_ooo(now);
                }
            } else {
                self.unacked_bytes += seg.len as u64;
                if self.unacked_bytes
                    >= self.cfg.delack_segments.max(1) as u64 * self.cfg.mss as u64
                {
                    self.ack_now = true;
                } else if self.delack_deadline.is_none() {
                    self.delack_deadline = Some(self.delack_at(now));
                }
            }
        } else {
            // Out of order: store, remember for SACK, acknowledge at once.
            if let Some(&(s, e)) = self.ooo.iter().find(|&&(s, e)| s <= start && end <= e) {
                self.stats.duplicate_segments += 1;
                self.dsack = Some((start, end));
                self.recent.retain(|&b| !(s <= b && b < e));
                self.recent.insert(0, s);
            } else {
                if self.compressed > 0 && self.sack_slot(start, end) >= 2 {
                    // tcp_sack_new_ofo_skb: the held ACK goes before this segment is recorded.
                    self.flushed = Some(self.build_ack(now));
                }
                self.insert_ooo(start, end);
                self.recent.retain(|&b| !(start <= b && b < end));
                self.recent.insert(0, start);
                self.recent.truncate(8);
            }
            if self.ack_at_once() {
                self.ack_now = true;
            } else {
                self.ack_ooo(now);
            }
        }
        true
    }

    /// RFC 7323 §5.3 R1 (Linux `tcp_paws_discard` for data): the segment carries a TSval more
    /// than `paws_window` ticks older than a TS.Recent that is set.
    fn paws_rejects(&self, seg: &Segment) -> bool {
        match seg.ts {
            Some(ts) if self.cfg.paws && seg.len > 0 && self.ts_recent != 0 => {
                self.ts_recent.wrapping_sub(ts.val) as i32 > self.cfg.paws_window as i32
            }
            _ => false,
        }
    }

    /// Linux `tcp_enter_quickack_mode`: the next `quickack` segments are ACKed at once, and the
    /// adaptive timeout returns to its minimum.
    fn enter_quickack(&mut self) {
        self.quick = self.quick.max(self.cfg.quickack);
        if self.cfg.delack_ato {
            self.ato = ticks_of(self.cfg.delack_timeout, self.cfg.timer_hz);
        }
    }

    /// Data that is ACKed at once whatever else holds: quick-ACK mode, a DSACK to report, or
    /// no delayed ACK.
    fn ack_at_once(&self) -> bool {
        self.quick > 0 || self.dsack.is_some() || !self.cfg.delayed_ack
    }

    /// The ACK decision for data that leaves out-of-order data held, outside quick-ACK mode
    /// (Linux `__tcp_ack_snd_check`'s SACK-compression part).
    fn ack_ooo(&mut self, now: SimTime) {
        let nr = self.cfg.comp_sack;
        if nr == 0 || !self.cfg.sack || self.compressed >= nr {
            self.ack_now = true;
            return;
        }
        if self.comp_rcv_nxt != self.rcv_nxt {
            self.comp_rcv_nxt = self.rcv_nxt;
            self.dup_acks = 0;
        }
        if self.dup_acks < 3 {
            self.dup_acks += 1;
            self.ack_now = true;
            return;
        }
        self.compressed += 1;
        if self.comp_deadline.is_none() {
            let rtt = self.tune.as_ref().and_then(|t| t.rtt);
            let delay = match rtt {
                Some(r) => self.cfg.comp_sack_delay.min(SimDuration(r.0 / 20)),
                None => self.cfg.comp_sack_delay,
            };
            self.comp_deadline = Some(now + delay + self.cfg.comp_sack_slack);
        }
    }

    /// Where the block a new out-of-order segment `[start, end)` joins stands among the SACK
    /// blocks last reported, most recent first (at most four, as the kernel keeps); the count
    /// of those blocks when it starts a new one.
    fn sack_slot(&self, start: u64, end: u64) -> usize {
        let mut blocks = [(0u64, 0u64); 4];
        let mut n = 0;
        for &b in &self.recent {
            if let Some(&blk) = self.ooo.iter().find(|&&(s, e)| s <= b && b < e) {
                if !blocks[..n].contains(&blk) {
                    blocks[n] = blk;
                    n += 1;
                }
            }
            if n == blocks.len() {
                break;
            }
        }
        blocks[..n]
            .iter()
            .position(|&(s, e)| s <= end && start <= e)
            .unwrap_or(n)
    }

    fn insert_ooo(&mut self, start: u64, end: u64) {
        let i = self.ooo.partition_point(|&(_, e)| e < start);
        let mut s = start;
        let mut e = end;
        let mut j = i;
        while j < self.ooo.len() && self.ooo[j].0 <= e {
            s = s.min(self.ooo[j].0);
            e = e.max(self.ooo[j].1);
            j += 1;
        }
        self.ooo.splice(i..j, std::iter::once((s, e)));
    }

    /// Whether the gap from the last in-order data at `last` to `now` re-enters quick-ACK mode.
    #[inline]
    fn idle_since(&self, last: SimTime, now: SimTime) -> bool {
        if now.since(last) <= self.idle_gap {
            return false;
        }
        match self.idle_ticks {
            None => true,
            // Both ends in jiffies, as the kernel compares them.
            Some(r) => {
                let hz = self.cfg.timer_hz;
                jiffies::jiffies_at(now, hz) - jiffies::jiffies_at(last, hz) > r
            }
        }
    }

    /// `tcp_event_data_recv`'s part of the adaptive timeout, for in-order data at `now`
    /// (before `last_rcv` moves to it).
    fn adapt_ato(&mut self, now: SimTime) {
        let hz = self.cfg.timer_hz;
        let min = ticks_of(self.cfg.delack_timeout, hz);
        match self.last_rcv {
            None => self.ato = min,
            Some(last) => {
                let m = tick_at(now, hz) - tick_at(last, hz);
                if m <= min / 2 {
                    self.ato = self.ato / 2 + min / 2;
                } else if m < self.ato {
                    self.ato = (self.ato / 2 + m).min(self.rto_ticks);
                }
            }
        }
    }

    /// When a delayed-ACK timer armed at `now` fires: `delack_timeout` later, or with
    /// `delack_ato` Linux's `tcp_send_delayed_ack` bound of `ato`; on the timer wheel with
    /// `timer_hz` (Linux `__tcp_send_delayed_ack`: `jiffies + ato`).
    fn delack_at(&self, now: SimTime) -> SimTime {
        let hz = self.cfg.timer_hz;
        if !self.cfg.delack_ato {
            return jiffies::timer_at(now, self.cfg.delack_timeout, hz);
        }
        let min = ticks_of(self.cfg.delack_timeout, hz);
        let mut ato = self.ato.max(min);
        if let Some(rtt) = self.srtt_ticks.filter(|_| ato > min) {
            // Bounded by the RTT when one is known (the kernel's HZ/2 bound for a bulk
            // receiver lies beyond DELACK_MAX).
            ato = ato.min(rtt.max(min));
        }
        jiffies::fires_after(now, ato.min(ticks_of(DELACK_MAX, hz)), hz)
    }

    /// Fires the delayed-ACK timer if due.
    pub fn on_timer(&mut self, now: SimTime) {
        if self.delack_deadline.is_some_and(|d| now >= d) {
            self.delack_deadline = None;
            self.ack_now = true;
            if self.cfg.delack_ato {
                // tcp_delack_timer_handler: the delayed ACK was missed, inflate the timeout.
                self.ato = (self.ato * 2).min(self.rto_ticks);
            }
        }
        if self.comp_deadline.is_some_and(|d| now >= d) {
            self.comp_deadline = None;
            self.ack_now = self.ack_now || self.compressed > 0;
        }
    }

    /// Receive-window autotuning's part of an in-order data segment: the receiver's RTT
    /// sample from the timestamp it gets echoed, then the window's growth (a segment that grows
    /// it is ACKed at once).
    fn autotune(&mut self, now: SimTime, seg: &Segment) {
        let (rcv_nxt, mss) = (self.rcv_nxt, self.cfg.mss as u64);
        let ts_now = self.ts_now(now);
        let tick = self.cfg.ts_tick.as_nanos().max(1);
        if let Some(t) = self.tune.as_mut() {
            // tcp_rcv_rtt_measure_ts: once per new TSecr, from full-sized segments, and never
            // a zero sample.
            let fresh = seg
                .ts
                .filter(|ts| ts.ecr != 0 && t.last_tsecr != Some(ts.ecr));
            if let Some(ts) = fresh {
                t.last_tsecr = Some(ts.ecr);
            }
            let sample = fresh
                .filter(|_| seg.len >= self.cfg.mss)
                .map(|ts| ts_now.wrapping_sub(ts.ecr) as u64)
                .filter(|&ticks| ticks > 0 && ticks < 1 << 31)
                .map(|ticks| SimDuration(ticks * tick));
            if t.on_data(now, rcv_nxt, seg.len as u64, mss, sample) {
                // Linux `icsk_ack.quick |= 1`: an even count gains one.
                self.quick |= 1;
            }
        }
    }

    /// The window to advertise.
    fn window(&self) -> u64 {
        match &self.tune {
            Some(t) => t.ssthresh.min(self.cfg.rwnd),
            None => self.cfg.rwnd,
        }
    }

    fn ts_now(&self, now: SimTime) -> u32 {
        (now.as_nanos() / self.cfg.ts_tick.as_nanos().max(1)) as u32
    }

    /// The ACK to send now, if one is due.
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Segment> {
        if std::mem::take(&mut self.syn_ack) {
            self.stats.acks_sent += 1;
            self.syn_ack_at = Some(now);
            self.syn_acks += 1;
            return Some(Segment {
                window: self.window(),
                ts: self.cfg.timestamps.then(|| Timestamps {
                    val: self.ts_now(now),
                    ecr: self.ts_recent,
                }),
                syn: true,
                ..Segment::default()
            });
        }
        if let Some(seg) = self.flushed.take() {
            return Some(seg);
        }
        if !self.ack_now {
            return None;
        }
        self.ack_now = false;
        Some(self.build_ack(now))
    }

    /// The ACK of everything received so far; sending it clears the delayed and held ACKs and
    /// uses up one quick ACK.
    fn build_ack(&mut self, now: SimTime) -> Segment {
        self.delack_deadline = None;
        self.comp_deadline = None;
        self.compressed = 0;
        self.quick = self.quick.saturating_sub(1);
        self.unacked_bytes = 0;
        self.last_ack_sent = self.rcv_nxt;
        self.stats.acks_sent += 1;
        let mut sack = SackBlocks::default();
        if self.cfg.sack {
            let max = if self.cfg.timestamps { 3 } else { 4 };
            let dsack = self.dsack.take().filter(|_| self.cfg.dsack);
            if let Some((s, e)) = dsack {
                sack.push(s, e);
                let containing = self
                    .ooo
                    .iter()
                    .copied()
                    .find(|&(bs, be)| bs <= s && e <= be);
                if let Some((bs, be)) = containing {
                    sack.push(bs, be);
                }
            }
            for &b in &self.recent {
                if sack.len() >= max {
                    break;
                }
                if let Some(&(bs, be)) = self.ooo.iter().find(|&&(s, e)| s <= b && b < e) {
                    let listed = sack.as_slice()[dsack.is_some() as usize..].contains(&(bs, be));
                    if !listed {
                        sack.push(bs, be);
                    }
                }
            }
        } else {
            self.dsack = None;
        }
        Segment {
            seq: 0,
            len: 0,
            ack: self.rcv_nxt,
            window: self.window(),
            ts: self.cfg.timestamps.then(|| Timestamps {
                val: self.ts_now(now),
                ecr: self.ts_recent,
            }),
            sack,
            syn: false,
        }
    }
}
