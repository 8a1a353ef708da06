//! RACK: time-based loss detection, RFC 8985 §6 (as Linux `net/ipv4/tcp_recovery.c` runs it).
//!
//! * Every segment records the time of its latest transmission (`SegMeta::xmit_time`). For each
//!   segment newly delivered (cumulatively ACKed or SACKed), RFC 8985 §6.2 step 2
//!   (`RACK_update()`): an RTT sample `now − xmit_time`, skipped when the segment was
//!   retransmitted and the sample is below `RACK.min_RTT` (as Linux; not the RFC's TSecr test); `RACK.xmit_ts`, `RACK.end_seq`,
//!   `RACK.rtt` follow the most recently sent delivered segment (`RACK_sent_after()`).
//! * Reordering (step 3): a newly delivered segment that was never retransmitted and ends below
//!   `RACK.fack` (the highest delivered end before this ACK) sets `RACK.reordering_seen`.
//! * Reordering window (step 4, Linux `tcp_rack_reo_wnd`): 0 while no reordering was seen and
//!   the sender is in recovery or has at least `dupthresh` segments SACKed; otherwise
//!   `min(RACK.reo_wnd_mult · RACK.min_RTT / 4, SRTT)`. DSACK adaptation: the first DSACK in a
//!   round (`RACK.dsack_round`, until `snd_una` passes SND.NXT of that time) raises
//!   `reo_wnd_mult` by one and sets `reo_wnd_persist = 16`; each exit from a recovery
//!   decrements `reo_wnd_persist`, and at 0 the multiplier returns to 1.
//! * Loss marking (step 5, `RACK_detect_loss()`): every segment not SACKed, sent before
//!   RACK's segment and not already marked lost awaiting retransmission, is lost once
//!   `xmit_time + RACK.rtt + reo_wnd <= now`; otherwise the reordering timer is armed for the
//!   largest remaining wait (§6.3).
//!
//! Model decisions: `RACK.min_RTT` is the minimum over all of RACK's RTT samples (Linux uses a
//! windowed minimum over 5 minutes); the reordering timer fires exactly after the remaining
//! wait, or with `timer_hz` as Linux's (`TCP_TIMEOUT_MIN_US` = 2 ms added, whole jiffies, the
//! timer wheel's bucket: [`crate::jiffies`]). Detection runs in the
//! Open, Disorder and Recovery states; after a timeout the go-back-N of the Loss state
//! retransmits everything, as without RACK.

use super::*;

/// RFC 8985 §6.2: `RACK.reo_wnd_persist` is reset to this after a DSACK (Linux
/// `TCP_RACK_RECOVERY_THRESH`).
pub(super) const REO_WND_PERSIST: u32 = 16;

/// RACK's per-connection state, RFC 8985 §6.1 names.
#[derive(Clone, Debug)]
pub struct Rack {
    /// `RACK.xmit_ts`: transmit time of the most recently sent segment delivered.
    pub xmit_ts: Option<SimTime>,
    /// `RACK.end_seq`: its end, bytes (exclusive).
    pub end_seq: u64,
    /// `RACK.rtt`: its RTT sample.
    pub rtt: SimDuration,
    /// `RACK.min_RTT` (`None`: no sample yet).
    pub min_rtt: Option<SimDuration>,
    /// `RACK.fack`: highest end of a delivered segment, bytes.
    pub fack: u64,
    /// `RACK.reordering_seen`.
    pub reordering_seen: bool,
    /// `RACK.reo_wnd_mult`, units of `min_RTT/4`.
    pub reo_wnd_mult: u32,
    /// `RACK.reo_wnd_persist`: recoveries left before the multiplier resets.
    pub reo_wnd_persist: u32,
    /// `RACK.dsack_round`: SND.NXT when the multiplier was last raised (`None`: no round).
    pub dsack_round: Option<u64>,
    /// A segment was delivered since the last detection (Linux `rack.advanced`).
    pub advanced: bool,
    /// RACK's segment (`xmit_ts`, `end_seq`) was a retransmission.
    pub retransmitted: bool,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            xmit_ts: None,
            end_seq: 0,
            rtt: SimDuration::ZERO,
            min_rtt: None,
            fack: 0,
            reordering_seen: false,
            reo_wnd_mult: 1,
            reo_wnd_persist: 0,
            dsack_round: None,
            advanced: false,
            retransmitted: false,
        }
    }
}

/// RFC 8985 `RACK_sent_after(t1, seq1, t2, seq2)`.
fn sent_after(t1: SimTime, seq1: u64, t2: SimTime, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl Rack {
    /// RFC 8985 §6.2 steps 2 and 3 for one newly delivered segment `[.., end)`.
    pub(super) fn on_delivered(&mut self, now: SimTime, end: u64, m: &SegMeta, prior_fack: u64) {
        let retransmitted = m.tx_count > 1;
        if !retransmitted && end < prior_fack {
            self.reordering_seen = true;
        }
        self.fack = self.fack.max(end);
        let rtt = now - m.xmit_time;
        // A retransmission's sample is ambiguous if it is shorter than the minimum RTT. RFC 8985
        // step 2 also skips it when the ACK's TSecr predates the retransmission; Linux
        // (`tcp_rack_advance`) does not, and rightly for a probe above a hole: its SACK echoes
        // TS.Recent of the last in-order segment (RFC 7323 §4.3), always older.
        if retransmitted && self.min_rtt.is_some_and(|min| rtt < min) {
            return;
        }
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |min| min.min(rtt)));
        self.advanced = true;
        let newer = self
            .xmit_ts
            .is_none_or(|t| sent_after(m.xmit_time, end, t, self.end_seq));
        if newer {
            self.rtt = rtt;
            self.xmit_ts = Some(m.xmit_time);
            self.end_seq = end;
            self.retransmitted = retransmitted;
        }
    }
}

impl TcpSender {
    /// RACK's part of an ACK, before the scoreboard changes: the entries the cumulative ACK
    /// `ack` delivers. `ecr`: the ACK's TSecr, if it has one. A retransmitted entry whose ACK
    /// echoes a timestamp older than its last transmission was delivered by an earlier copy
    /// (the retransmission was spurious) and gives RACK no sample (Linux `tcp_clean_rtx_queue`
    /// with `tcp_skb_spurious_retrans`); without this, the late original of a timed-out head
    /// would date RACK's newest delivery at the retransmission and mark everything sent
    /// before it lost.
    pub(super) fn rack_on_cum_ack(
        &mut self,
        now: SimTime,
        ack: u64,
        prior_fack: u64,
        ecr: Option<u32>,
    ) {
        let tick = self.cfg.ts_tick.as_nanos().max(1);
        let Some(rack) = self.rack.as_mut() else {
            return;
        };
        for (seq, m) in self.board.iter() {
            if seq >= ack {
                break;
            }
            if m.sacked {
                continue;
            }
            let spurious = |e: u32| {
                let sent_ts = (m.xmit_time.as_nanos() / tick) as u32;
                (e.wrapping_sub(sent_ts) as i32) < 0
            };
            if m.tx_count > 1 && ecr.is_some_and(spurious) {
                continue;
            }
            rack.on_delivered(now, seq + m.len as u64, m, prior_fack);
        }
    }

    /// Marks `[s, e)` SACKed, feeding RACK with the newly SACKed entries; returns the newly
    /// SACKed bytes. `prior_fack`: `RACK.fack` before this ACK.
    pub(super) fn mark_sacked(&mut self, now: SimTime, s: u64, e: u64, prior_fack: u64) -> u64 {
        let mut rack = self.rack.as_mut();
        let ack_rtt = &mut self.ack_rtt;
        self.board.mark_sacked_visit(s, e, |seq, m| {
            // Linux tcp_sacktag_one: the send times of the oldest and the newest newly SACKed
            // originals.
            if m.tx_count == 1 {
                let t = m.xmit_time;
                ack_rtt.last_sackt = Some(ack_rtt.last_sackt.map_or(t, |l| l.max(t)));
                ack_rtt.first_sackt = Some(ack_rtt.first_sackt.map_or(t, |f| f.min(t)));
            }
            if let Some(rack) = rack.as_mut() {
                rack.on_delivered(now, seq + m.len as u64, m, prior_fack);
            }
        })
    }

    /// RFC 8985 §6.2 step 4, `RACK_update_reo_wnd()`'s DSACK part, once per ACK.
    pub(super) fn rack_update_reo_wnd(&mut self, dsack: bool) {
        let (snd_una, snd_nxt) = (self.snd_una, self.snd_nxt.max(self.snd_una));
        let Some(rack) = self.rack.as_mut() else {
            return;
        };
        if rack.dsack_round.is_some_and(|r| snd_una >= r) {
            rack.dsack_round = None;
        }
        if rack.dsack_round.is_none() && dsack {
            rack.dsack_round = Some(snd_nxt);
            rack.reo_wnd_mult = rack.reo_wnd_mult.saturating_add(1);
            rack.reo_wnd_persist = REO_WND_PERSIST;
        }
    }

    /// RFC 8985 §6.2 step 4: on leaving fast or RTO recovery.
    pub(super) fn rack_on_recovery_exit(&mut self) {
        if let Some(rack) = self.rack.as_mut() {
            rack.reo_wnd_persist = rack.reo_wnd_persist.saturating_sub(1);
            if rack.reo_wnd_persist == 0 {
                rack.reo_wnd_mult = 1;
            }
        }
    }

    /// RFC 8985 §6.2 step 4 `RACK_update_reo_wnd()` / Linux `tcp_rack_reo_wnd`.
    pub fn rack_reo_wnd(&self) -> SimDuration {
        let Some(rack) = self.rack.as_ref() else {
            return SimDuration::ZERO;
        };
        if !rack.reordering_seen {
            if matches!(self.state, CaState::Recovery | CaState::Loss) {
                return SimDuration::ZERO;
            }
            let sacked_segs = self.board.sacked_bytes().div_ceil(self.mss);
            if sacked_segs >= self.cfg.dupthresh as u64 {
                return SimDuration::ZERO;
            }
        }
        let Some(min_rtt) = rack.min_rtt else {
            return SimDuration::ZERO;
        };
        let wnd = SimDuration(min_rtt.0 / 4).saturating_mul(rack.reo_wnd_mult as u64);
        match self.rtt.srtt() {
            Some(srtt) => wnd.min(srtt),
            None => wnd,
        }
    }

    /// RFC 8985 §6.2 step 5, `RACK_detect_loss()`: marks the overdue segments lost and returns
    /// how many it marked and the longest remaining wait of the others (zero: none waits).
    pub(super) fn rack_detect_loss(&mut self, now: SimTime) -> (u32, SimDuration) {
        let Some(rack) = self.rack.as_mut() else {
            return (0, SimDuration::ZERO);
        };
        rack.advanced = false;
        let Some(rack_ts) = rack.xmit_ts else {
            return (0, SimDuration::ZERO);
        };
        let (rack_end, rack_rtt) = (rack.end_seq, rack.rtt);
        // When RACK's segment is an original transmission, nothing above it was sent before
        // it (originals leave in sequence order, retransmissions after their originals): the
        // walk stops there, as Linux's walk of its time-sorted queue stops at RACK.xmit_ts.
        let stop_at = (!rack.retransmitted).then_some(rack_end);
        if stop_at.is_some_and(|e| self.board.first_seq().is_none_or(|s| s >= e)) {
            // The walk would stop at once (a cumulative ACK of RACK's segment: most ACKs).
            return (0, SimDuration::ZERO);
        }
        let reo_wnd = self.rack_reo_wnd();
        let mut newly = 0;
        let mut wait = SimDuration::ZERO;
        for (seq, m) in self.board.iter_mut() {
            if stop_at.is_some_and(|e| seq >= e) {
                break;
            }
            if m.sacked || (m.lost && !m.retrans) {
                continue;
            }
            if !sent_after(rack_ts, rack_end, m.xmit_time, seq + m.len as u64) {
                continue;
            }
            let deadline = m.xmit_time + rack_rtt + reo_wnd;
            if deadline <= now {
                m.lost = true;
                m.retrans = false;
                newly += 1;
            } else {
                wait = wait.max(deadline - now);
            }
        }
        self.stats.rack_loss_count += newly as u64;
        (newly, wait)
    }

    /// RACK's loss detection on an ACK (Linux `tcp_rack_mark_lost`, called from
    /// `tcp_identify_packet_loss`): when a segment was delivered since the last detection.
    /// Enters fast recovery when a segment is newly lost outside recovery (Linux
    /// `tcp_time_to_recover`: `lost_out != 0`). Returns the segments newly marked lost and
    /// whether the reordering timer was armed.
    pub(super) fn rack_on_ack(&mut self, now: SimTime) -> (u32, bool) {
        if !self.rack.as_ref().is_some_and(|r| r.advanced) || self.state == CaState::Loss {
            return (0, false);
        }
        let (newly, wait) = self.rack_detect_loss(now);
        let armed = wait > SimDuration::ZERO;
        if armed {
            self.early_timer = Some(EarlyTimer::Reorder(self.reo_timer_at(now, wait)));
        } else if matches!(self.early_timer, Some(EarlyTimer::Reorder(_))) {
            self.early_timer = None;
        }
        if newly > 0 && matches!(self.state, CaState::Open | CaState::Disorder) && self.fr_allowed()
        {
            self.enter_recovery(now);
        }
        (newly, armed)
    }

    /// When the reordering timer armed now for `wait` fires: exactly, or as Linux
    /// `tcp_rack_mark_lost` arms it, `usecs_to_jiffies(wait + TCP_TIMEOUT_MIN_US)`.
    fn reo_timer_at(&self, now: SimTime, wait: SimDuration) -> SimTime {
        match self.cfg.timer_hz {
            0 => now + wait,
            _ => self.timer_at(now, wait + TLP_TIMEOUT_MIN),
        }
    }

    /// RFC 8985 §6.3 `RACK_reo_timeout()` / Linux `tcp_rack_reo_timeout`: detect losses again;
    /// if some are new, enter fast recovery unless in it, and let the window send.
    pub(super) fn on_reorder_timeout(&mut self, now: SimTime) {
        self.early_timer = None;
        if self.state == CaState::Loss {
            return;
        }
        let (newly, wait) = self.rack_detect_loss(now);
        if wait > SimDuration::ZERO {
            self.early_timer = Some(EarlyTimer::Reorder(self.reo_timer_at(now, wait)));
        }
        if newly == 0 {
            return;
        }
        if self.state != CaState::Recovery && self.fr_allowed() {
            self.enter_recovery(now);
        }
        if self.state == CaState::Recovery && self.cfg.variant == Variant::Sack {
            self.set_pipe();
            // Linux calls tcp_cwnd_reduction(sk, 1, newly_lost, 0): one segment "delivered".
            self.prr_on_ack(self.mss, false, true);
        }
    }
}
