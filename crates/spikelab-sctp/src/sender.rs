//! The data-sending half: SACK processing (RFC 9260 §6.2.1), congestion control per
//! destination (§7.2), fast retransmit and fast recovery (§7.2.4), T3-rtx (§6.3.2, §6.3.3)
//! and the choice of what goes where (§6.1, §6.4).

use crate::config::{MaxBurstMode, MissRule};
use crate::endpoint::{Endpoint, Mark, MarkedTsn, PathState, SctpEvent, T3Record, TxChunk};
use crate::packet::{Chunk, DataChunk, Packet, SackChunk, COMMON_HEADER, IPV4_HEADER};
use spikelab_core::SimTime;

/// How many acknowledged, retransmitted chunks the sender remembers for Duplicate TSN reports.
const DUP_ORIGINS: usize = 4096;

impl Endpoint {
    fn idx_of(&self, tsn: u64) -> Option<usize> {
        if tsn <= self.cum_ack {
            return None;
        }
        let i = (tsn - self.cum_ack - 1) as usize;
        (i < self.queue.len()).then_some(i)
    }

    /// Room for chunks in one packet: MTU - IPv4 - common header.
    fn packet_room(&self) -> usize {
        self.cfg.mtu as usize - IPV4_HEADER - COMMON_HEADER
    }

    pub(crate) fn on_sack(&mut self, now: SimTime, s: &SackChunk) {
        // §6.2.1 D i): a SACK whose cumulative ack is behind the ack point is stale.
        if s.cum_tsn_ack < self.cum_ack || s.cum_tsn_ack >= self.next_tsn {
            return;
        }
        let n = self.paths.len();
        let flight_before: Vec<u64> = self.paths.iter().map(|p| p.flight).collect();
        let mut lowest_before: Vec<Option<u64>> = vec![None; n];
        let mut to_find = self.paths.iter().filter(|p| p.flight_chunks > 0).count();
        for c in &self.queue {
            if to_find == 0 {
                break;
            }
            if c.in_flight && lowest_before[c.dest].is_none() {
                lowest_before[c.dest] = Some(c.tsn);
                to_find -= 1;
            }
        }
        let cum_advanced = s.cum_tsn_ack > self.cum_ack;
        let needs_cum = self.cfg.growth_needs_cum_ack;
        let in_fr_at_arrival = self.fast_recovery.is_some();
        // ns-2.35: no cwnd change until the Cumulative TSN Ack reaches the recovery point.
        let frozen = self.cfg.no_growth_in_fast_recovery
            && self.fast_recovery.is_some_and(|x| s.cum_tsn_ack < x);
        let ss_blocked = if self.cfg.no_growth_in_fast_recovery {
            frozen
        } else {
            in_fr_at_arrival
        };
        let mut acked_bytes = vec![0u64; n];
        let mut htna: Option<u64> = None;
        let mut newly: Vec<usize> = Vec::new();

        // Newly acknowledged chunks: by the cumulative ack, then by gap blocks.
        let upto = (s.cum_tsn_ack - self.cum_ack) as usize;
        for i in 0..upto.min(self.queue.len()) {
            if !self.queue[i].acked {
                newly.push(i);
            }
        }
        for t in s.gap_tsns() {
            if let Some(i) = self.idx_of(t) {
                if i >= upto && !self.queue[i].acked {
                    newly.push(i);
                }
            }
        }
        // Chunks a T3 expiry marked that had not gone out again: their acknowledgement may be
        // a late one (see `marked_ack_keeps_errors`).
        let mut t3_marked = vec![false; newly.len()];
        for (k, &i) in newly.iter().enumerate() {
            let c = &mut self.queue[i];
            t3_marked[k] = c.mark == Mark::T3;
            if c.fast_rtx_done && i < upto {
                self.fast_rtx_acked = true;
            }
            c.acked = true;
            set_mark(&mut self.n_marked, c, Mark::None);
            let (d, size, tsn, tx_count) = (c.dest, c.size(), c.tsn, c.tx_count);
            if c.in_flight {
                c.in_flight = false;
                self.inflight_payload -= c.len as u64;
                self.paths[d].flight -= size;
                self.paths[d].flight_chunks -= 1;
            }
            acked_bytes[d] += size;
            self.stats.bytes_acked += c.len as u64;
            htna = Some(htna.map_or(tsn, |h: u64| h.max(tsn)));
            // C4/C5: one timed chunk per round trip; Karn: never a retransmitted one (the probe
            // is dropped when a TSN at or below it is retransmitted).
            if let Some((pt, sent)) = self.paths[d].rtt_probe {
                if pt == tsn && tx_count == 1 {
                    self.rtt_sample(now, d, now - sent);
                    self.paths[d].rtt_probe = None;
                }
            }
        }
        if !newly.is_empty() {
            // §8.1: the association counter resets when DATA is acknowledged.
            self.assoc_errors = 0;
        }
        // §8.2: clear the error counter of the destination each acked TSN was last sent to.
        // RFC 7829 §3.2 rules 9-10 (with PF on): a TSN sent to more than one destination
        // clears an active destination's counter only; it neither clears an inactive one's
        // nor brings a PF one back (which copy arrived is unknown).
        let pf_on = self.cfg.pf_max_retrans.is_some();
        let mut cleared = vec![false; n];
        let keep = self.cfg.marked_ack_keeps_errors;
        for (k, &i) in newly.iter().enumerate() {
            let c = &self.queue[i];
            if keep && t3_marked[k] {
                continue;
            }
            if !(pf_on && c.multi_dest && self.paths[c.dest].state != PathState::Active) {
                cleared[c.dest] = true;
            }
        }
        for (d, &c) in cleared.iter().enumerate() {
            if c {
                self.clear_path_errors(now, d);
            }
        }
        // Bytes of the Duplicate TSNs reported, by the destination their last copy went to
        // (RFC 9260 §7.2.2: they count towards partial_bytes_acked; RFC 4960's text counts
        // newly acknowledged chunks only). Looked up before the acked prefix leaves the
        // queue. Which copy arrived second is not known: the bytes go to the last copy's
        // destination. Only chunks sent more than once are remembered once acknowledged, so a
        // duplicate the network itself made is counted only while its chunk is queued.
        let dups: &[u64] = if needs_cum { &[] } else { &s.dup_tsns };
        let mut dup_bytes = vec![0u64; if dups.is_empty() { 0 } else { n }];
        for &t in dups {
            let found = match self.idx_of(t) {
                Some(i) => Some((self.queue[i].dest, self.queue[i].size())),
                None => self.dup_origin.get(&t).copied(),
            };
            if let Some((d, size)) = found {
                dup_bytes[d] += size;
            }
        }
        // Drop the cumulatively acked prefix, remembering where the chunks sent more than
        // once went: their duplicates may be reported later.
        for _ in 0..upto.min(self.queue.len()) {
            if let Some(c) = self.queue.pop_front() {
                if c.tx_count > 1 {
                    self.dup_origin.insert(c.tsn, (c.dest, c.size()));
                }
            }
        }
        while self.dup_origin.len() > DUP_ORIGINS {
            self.dup_origin.pop_first();
        }
        self.cum_ack = s.cum_tsn_ack;
        // A probe whose chunk left the queue unsampled (it was retransmitted) is stale.
        for p in &mut self.paths {
            if p.rtt_probe.is_some_and(|(t, _)| t <= self.cum_ack) {
                p.rtt_probe = None;
            }
        }

        // §6.2.1: rwnd = a_rwnd - bytes in flight.
        let outstanding = self.inflight_payload;
        debug_assert_eq!(
            outstanding,
            self.queue
                .iter()
                .filter(|c| c.in_flight)
                .map(|c| c.len as u64)
                .sum::<u64>()
        );
        let outstanding = if self.cfg.rwnd_counts_chunk_headers {
            let chunks: u64 = self.paths.iter().map(|p| p.flight_chunks).sum();
            outstanding + crate::packet::DATA_HEADER as u64 * chunks
        } else {
            outstanding
        };
        self.peer_rwnd = (s.a_rwnd as u64).saturating_sub(outstanding);

        // §7.2.1 / §7.2.2: per-destination window growth.
        let unit = self.cfg.unit();
        for d in 0..n {
            let a = acked_bytes[d];
            if a > 0 {
                self.paths[d].one_packet = false;
            }
            let dup = dup_bytes.get(d).copied().unwrap_or(0);
            if (a == 0 && dup == 0) || (needs_cum && !cum_advanced) || frozen {
                continue;
            }
            let p = &mut self.paths[d];
            let full = flight_before[d] >= p.cwnd;
            if p.cwnd <= p.ssthresh {
                if a > 0 && full && !ss_blocked {
                    p.cwnd += a.min(unit);
                }
            } else {
                p.pba += a + dup;
                if p.pba >= p.cwnd && full {
                    p.pba -= p.cwnd;
                    p.cwnd += unit;
                } else if p.pba > p.cwnd && !full {
                    p.pba = p.cwnd;
                }
            }
        }
        if self.paths.iter().all(|p| p.flight == 0)
            && self.queue.iter().all(|c| c.mark == Mark::None)
        {
            for p in &mut self.paths {
                p.pba = 0;
            }
        }

        // §7.2.4 Fast Recovery exit point.
        if self.fast_recovery.is_some_and(|x| self.cum_ack >= x) {
            self.fast_recovery = None;
        }

        // §7.2.4 miss indications (HTNA): below the highest newly acked TSN; in Fast Recovery
        // with the cumulative ack advancing, every TSN reported missing.
        let highest_gap = s.gap_tsns().max();
        // ns-2.35 keeps the highest newly acknowledged TSN of the last SACK that acknowledged
        // something: a SACK acknowledging nothing new counts misses below it again.
        let htna = match (self.cfg.miss_rule, htna) {
            (MissRule::Outstanding, None) if !s.gap_blocks.is_empty() => self.last_htna,
            (_, h) => h,
        };
        if htna.is_some() {
            self.last_htna = htna;
        }
        let limit = if in_fr_at_arrival && cum_advanced {
            highest_gap
        } else {
            htna
        };
        let in_flight_only = self.cfg.miss_rule == MissRule::InFlight;
        let mut fast: Vec<usize> = Vec::new();
        if let Some(lim) = limit {
            for (i, c) in self.queue.iter_mut().enumerate() {
                if c.tsn >= lim {
                    break;
                }
                if c.acked || (in_flight_only && !c.in_flight) || c.fast_rtx_done {
                    continue;
                }
                c.miss += 1;
                if c.miss >= 3 {
                    fast.push(i);
                }
            }
        }
        if !fast.is_empty() {
            self.fast_retransmit(now, &fast);
        }

        // §6.3.2 R2 / R3.
        for (d, lb) in lowest_before.into_iter().enumerate() {
            if self.paths[d].flight_chunks == 0 {
                if !self.marked_hold(d) {
                    self.paths[d].t3 = None;
                } else if self.paths[d].t3.is_none() {
                    self.restart_t3(now, d);
                }
            } else if let Some(t) = lb {
                if t <= self.cum_ack || self.idx_of(t).is_some_and(|i| self.queue[i].acked) {
                    self.restart_t3(now, d);
                }
            }
        }

        // ns-2.35: Max.Burst applies from a SACK that acknowledges a fast-retransmitted chunk
        // until one send opportunity has used it up.
        if let (Some(mb), MaxBurstMode::AfterFastRetransmit) =
            (self.cfg.max_burst, self.cfg.max_burst_mode)
        {
            if self.fast_rtx_acked {
                for x in &mut self.burst_left {
                    *x = mb;
                }
            }
        }

        // §6.1 D, RFC 4960 reading: clamp cwnd to flightsize + Max.Burst·unit.
        if let (Some(mb), MaxBurstMode::ClampCwnd) = (self.cfg.max_burst, self.cfg.max_burst_mode) {
            for p in &mut self.paths {
                let lim = p.flight + mb as u64 * unit;
                if lim < p.cwnd {
                    p.cwnd = lim;
                }
            }
        }
    }

    /// Whether chunks last sent to `d` wait for their retransmission and hold its T3-rtx
    /// (`marked_chunks_hold_t3`).
    fn marked_hold(&self, d: usize) -> bool {
        self.cfg.marked_chunks_hold_t3
            && self.n_marked > 0
            && self
                .queue
                .iter()
                .any(|c| c.mark != Mark::None && !c.acked && c.dest == d)
    }

    fn restart_t3(&mut self, now: SimTime, d: usize) {
        let p = &mut self.paths[d];
        p.t3 = Some(now + p.rto.rto());
        p.t3_armed_at = now;
    }

    /// §7.2.4 on the third miss indication of the chunks at queue indices `fast`.
    fn fast_retransmit(&mut self, now: SimTime, fast: &[usize]) {
        let unit = self.cfg.unit();
        let mut dests = Vec::new();
        let mut tsns = Vec::new();
        for &i in fast {
            let c = &mut self.queue[i];
            set_mark(&mut self.n_marked, c, Mark::Fast);
            c.fast_rtx_done = true;
            let d = c.dest;
            // With `MissRule::Outstanding` a chunk a T3 expiry marked can get here unsent.
            if c.in_flight {
                c.in_flight = false;
                self.inflight_payload -= c.len as u64;
                self.paths[d].flight -= c.size();
                self.paths[d].flight_chunks -= 1;
            }
            tsns.push(c.tsn);
            if !dests.contains(&d) {
                dests.push(d);
            }
        }
        let first_dest = self.queue[fast[0]].dest;
        self.stats.fast_retransmits += 1;
        self.events.push(SctpEvent::FastRetransmit {
            at: now,
            dest: first_dest,
            tsns,
        });
        if self.fast_recovery.is_none() {
            for d in dests {
                let p = &mut self.paths[d];
                p.ssthresh = (p.cwnd / 2).max(4 * unit);
                p.cwnd = p.ssthresh;
                p.pba = 0;
            }
            // The highest outstanding TSN is the exit point.
            self.fast_recovery = Some(self.next_tsn - 1);
            let target = self.fast_target(first_dest);
            self.forced.push_back((target, Mark::Fast));
        }
    }

    /// §6.4: fast retransmissions go where the original went, unless it is inactive (or to
    /// an alternate as T3 ones do, with `fast_rtx_to_alternate`).
    fn fast_target(&self, last: usize) -> usize {
        if self.cfg.fast_rtx_to_alternate {
            self.rtx_target(last)
        } else if self.paths[last].state == PathState::Inactive {
            self.data_dest
        } else {
            last
        }
    }

    /// §6.3.3 E1-E3 for destination `d`.
    pub(crate) fn on_t3(&mut self, now: SimTime, d: usize) {
        self.paths[d].t3 = None;
        let hold = self.marked_hold(d);
        if self.paths[d].flight_chunks == 0 && !hold {
            return;
        }
        let unit = self.cfg.unit();
        let rto = self.paths[d].rto.rto();
        let armed_at = self.paths[d].t3_armed_at;
        self.stats.t3_expiries += 1;
        self.stats.per_dest[d].t3_expiries += 1;
        {
            let p = &mut self.paths[d];
            // E1, and §7.2.1: one packet in flight until an acknowledgement. ns-2.35 changes
            // nothing when cwnd is one unit already (Timeout()).
            if !(self.cfg.t3_keeps_ssthresh_at_one_unit && p.cwnd <= unit) {
                p.ssthresh = (p.cwnd / 2).max(4 * unit);
                p.cwnd = unit;
                p.pba = 0;
            }
            p.one_packet = self.cfg.t3_one_packet;
            // E2.
            p.rto.backoff();
            p.rtt_probe = None;
        }
        // Not in the RFC: a timeout ends Fast Recovery (as usrsctp and Linux do).
        if self.cfg.t3_ends_fast_recovery {
            self.fast_recovery = None;
        }
        let mut marked = Vec::new();
        for c in self.queue.iter_mut() {
            if c.in_flight && c.dest == d {
                c.in_flight = false;
                self.inflight_payload -= c.len as u64;
                set_mark(&mut self.n_marked, c, Mark::T3);
                marked.push(MarkedTsn {
                    tsn: c.tsn,
                    tx_id: c.last_tx_id,
                    sent_at: c.sent_at,
                });
            } else if hold && c.mark == Mark::T3 && !c.acked && c.dest == d {
                // Marked again (ns-2.35's TimeoutRtx()).
                marked.push(MarkedTsn {
                    tsn: c.tsn,
                    tx_id: c.last_tx_id,
                    sent_at: c.sent_at,
                });
            }
        }
        self.paths[d].flight = 0;
        self.paths[d].flight_chunks = 0;
        // §8.2 / §8.1 error counters, which may fail the path, switch the primary or end the
        // association.
        self.path_error(now, d, true);
        if self.state == crate::endpoint::AssocState::Failed {
            return;
        }
        // E3: the earliest chunks that fit one packet, to an alternate destination.
        let rtx_dest = self.rtx_target(d);
        let room = self.packet_room();
        let mut used = 0;
        let mut k = 0;
        for m in &marked {
            let sz = self.queue[self.idx_of(m.tsn).unwrap()].size() as usize;
            if used + sz > room {
                break;
            }
            used += sz;
            k += 1;
        }
        self.forced.push_back((rtx_dest, Mark::T3));
        if self.cfg.t3_sends_only_e3 {
            self.t3_opportunity = true;
        }
        self.events.push(SctpEvent::T3Expiry(T3Record {
            at: now,
            dest: d,
            armed_at,
            rto,
            rtx_dest,
            tsns: marked,
            k,
            errors: self.paths[d].errors,
        }));
    }

    /// Where a chunk marked for retransmission goes.
    fn target_of(&self, c: &TxChunk) -> usize {
        match c.mark {
            Mark::Fast => self.fast_target(c.dest),
            _ => self.rtx_target(c.dest),
        }
    }

    /// §6.1: forced retransmissions (E3, the first fast-retransmit packet) ignore cwnd; other
    /// marked chunks go as cwnd allows; then new data to the data destination.
    pub(crate) fn next_data_packet(&mut self, now: SimTime) -> Option<(usize, Packet)> {
        while let Some((dest, kind)) = self.forced.pop_front() {
            let idxs = self.collect_marked(|c| c.mark == kind, None);
            if !idxs.is_empty() {
                return Some((dest, self.transmit(now, dest, &idxs)));
            }
        }
        if self.t3_opportunity {
            return None;
        }
        // Marked chunks, as cwnd allows (rule B: one packet may overbook by < 1 chunk).
        debug_assert_eq!(
            self.n_marked,
            self.queue.iter().filter(|c| c.mark != Mark::None).count()
        );
        let mut blocked = vec![false; self.paths.len()];
        let first = if self.n_marked == 0 {
            Vec::new()
        } else {
            self.queue
                .iter()
                .filter(|c| c.mark != Mark::None)
                .map(|c| (c.tsn, self.target_of(c)))
                .collect::<Vec<_>>()
        };
        for (tsn, t) in first {
            if blocked[t] {
                continue;
            }
            if self.paths[t].flight < self.paths[t].cwnd && self.room_for_a_packet(t) {
                let idxs = self.collect_marked(|c| c.mark != Mark::None, Some((t, tsn)));
                return Some((t, self.transmit(now, t, &idxs)));
            }
            blocked[t] = true;
        }
        // New data.
        let d = self.data_dest;
        if blocked[d] || (self.cfg.new_data_after_marked && self.n_marked > 0) {
            return None;
        }
        self.idle_cwnd_validation(now, d);
        let p = &self.paths[d];
        if p.flight >= p.cwnd || !self.room_for_a_packet(d) {
            return None;
        }
        if self.burst_left[d] == 0 {
            // ns-2.35 lifts its Max.Burst once it has stopped one burst.
            if self.cfg.max_burst_mode == MaxBurstMode::AfterFastRetransmit {
                self.fast_rtx_acked = false;
            }
            return None;
        }
        let room = self.packet_room();
        let payload = self.cfg.chunk_payload() as u64;
        let total_flight: u64 = self.paths.iter().map(|p| p.flight).sum();
        let mut used = 0usize;
        let mut n = 0;
        let mut rwnd = self.peer_rwnd;
        let mut chunked = self.app_chunked;
        loop {
            let left = self
                .app_total
                .map_or(u64::MAX, |t| t.saturating_sub(chunked));
            if left == 0 {
                break;
            }
            let len = left.min(payload);
            let sz = crate::packet::DATA_HEADER + crate::packet::pad4(len as usize);
            if used + sz > room {
                break;
            }
            // §6.1 A: within the peer's rwnd, except one chunk when nothing is in flight.
            let wlen = self.cfg.rwnd_bytes(len);
            if wlen > rwnd && !(n == 0 && total_flight == 0) {
                break;
            }
            rwnd = rwnd.saturating_sub(wlen);
            used += sz;
            chunked += len;
            n += 1;
        }
        if n == 0 {
            return None;
        }
        let mut idxs = Vec::with_capacity(n);
        for _ in 0..n {
            let left = self.app_total.map_or(u64::MAX, |t| t - self.app_chunked);
            let len = left.min(payload) as u32;
            self.queue.push_back(TxChunk {
                tsn: self.next_tsn,
                len,
                offset: self.app_chunked,
                dest: d,
                tx_count: 0,
                last_tx_id: 0,
                sent_at: now,
                acked: false,
                in_flight: false,
                mark: Mark::None,
                miss: 0,
                fast_rtx_done: false,
                multi_dest: false,
            });
            self.next_tsn += 1;
            self.app_chunked += len as u64;
            idxs.push(self.queue.len() - 1);
        }
        self.burst_left[d] -= 1;
        Some((d, self.transmit(now, d, &idxs)))
    }

    /// §7.2.1: after a T3-rtx expiry only one packet may be in flight on `d` until data
    /// is acknowledged, whatever the unit of cwnd and the size of the chunks. The forced
    /// packets (E3's retransmission, the first fast-retransmission packet) do not ask: when
    /// another address's T3 expiry or fast retransmission picks `d` while its one packet is
    /// out, `d` carries two.
    fn room_for_a_packet(&self, d: usize) -> bool {
        let p = &self.paths[d];
        !p.one_packet || p.flight_chunks == 0
    }

    /// Queue indices of marked chunks matching `pred` that fit one packet, ascending; with
    /// `only = Some((dest, first_tsn))` just those targeted at `dest` from `first_tsn` on.
    fn collect_marked(
        &self,
        pred: impl Fn(&TxChunk) -> bool,
        only: Option<(usize, u64)>,
    ) -> Vec<usize> {
        let room = self.packet_room();
        let mut used = 0;
        let mut v = Vec::new();
        for (i, c) in self.queue.iter().enumerate() {
            if c.acked || !pred(c) {
                continue;
            }
            if let Some((t, first)) = only {
                if c.tsn < first || self.target_of(c) != t {
                    continue;
                }
            }
            let sz = c.size() as usize;
            if used + sz > room {
                break;
            }
            used += sz;
            v.push(i);
        }
        v
    }

    /// §7.2.1: while a destination sends nothing, halve its cwnd (floor 4 units) once per RTO,
    /// ssthresh = cwnd before the first halving. Applied lazily when data is next sent.
    fn idle_cwnd_validation(&mut self, now: SimTime, d: usize) {
        if !self.cfg.cwnd_validation {
            return;
        }
        let unit = self.cfg.unit();
        let p = &mut self.paths[d];
        let Some(last) = p.last_data_sent else {
            return;
        };
        if p.flight > 0 {
            return;
        }
        let rto = p.rto.rto().as_nanos().max(1);
        let k = (now - last).as_nanos() / rto;
        for _ in 0..k.min(64) {
            let floor = 4 * unit;
            if p.cwnd <= floor {
                break;
            }
            if !p.idle_adjusted {
                p.ssthresh = p.cwnd;
                p.idle_adjusted = true;
            }
            p.cwnd = (p.cwnd / 2).max(floor);
        }
    }

    /// Sends the chunks at queue indices `idxs` to `d` in one packet.
    fn transmit(&mut self, now: SimTime, d: usize, idxs: &[usize]) -> Packet {
        let mut chunks = Vec::with_capacity(idxs.len());
        let mut min_rtx: Option<u64> = None;
        // §7.2.4 step 4: a fast retransmission of the first outstanding chunk sent to `d`
        // restarts its T3-rtx (the lowest TSN not yet acked whose last copy went to `d` and
        // that `d`'s timer still guards: in flight there, or waiting for its fast
        // retransmission; a chunk a T3 expiry on `d` marked for another address is not).
        let fast_first = idxs.iter().any(|&i| self.queue[i].mark == Mark::Fast)
            && self
                .queue
                .iter()
                .position(|c| !c.acked && c.dest == d && (c.in_flight || c.mark == Mark::Fast))
                .is_some_and(|j| self.queue[j].mark == Mark::Fast && idxs.contains(&j));
        for &i in idxs {
            let tx_id = self.next_tx_id;
            self.next_tx_id += 1;
            let c = &mut self.queue[i];
            let rtx = c.tx_count > 0;
            if rtx {
                self.stats.retransmitted_chunks += 1;
                self.stats.per_dest[d].retransmitted_chunks += 1;
                match c.mark {
                    Mark::Fast => self.stats.fast_retransmitted_chunks += 1,
                    _ => self.stats.t3_retransmitted_chunks += 1,
                }
                min_rtx = Some(min_rtx.map_or(c.tsn, |m: u64| m.min(c.tsn)));
            }
            if rtx && c.dest != d {
                c.multi_dest = true;
            }
            c.dest = d;
            c.tx_count += 1;
            c.last_tx_id = tx_id;
            c.sent_at = now;
            c.in_flight = true;
            self.inflight_payload += c.len as u64;
            set_mark(&mut self.n_marked, c, Mark::None);
            c.miss = 0;
            let size = c.size();
            self.stats.data_chunks_sent += 1;
            self.stats.payload_bytes_sent += c.len as u64;
            self.stats.per_dest[d].data_chunks_sent += 1;
            if !rtx {
                self.peer_rwnd = self
                    .peer_rwnd
                    .saturating_sub(self.cfg.rwnd_bytes(c.len as u64));
            }
            chunks.push(Chunk::Data(DataChunk {
                tsn: c.tsn,
                stream: 0,
                ssn: (c.tsn.wrapping_sub(1) & 0xffff) as u16,
                ppid: 0,
                payload_len: c.len,
                offset: c.offset,
                tx_id,
                retransmission: c.tx_count - 1,
            }));
            let p = &mut self.paths[d];
            p.flight += size;
            p.flight_chunks += 1;
            if !rtx && p.rtt_probe.is_none() {
                p.rtt_probe = Some((self.queue[i].tsn, now));
            }
        }
        // C5 (second sentence): no sample from a TSN at or above a retransmitted one.
        if let Some(m) = min_rtx {
            for p in &mut self.paths {
                if p.rtt_probe.is_some_and(|(t, _)| t >= m) {
                    p.rtt_probe = None;
                }
            }
        }
        let p = &mut self.paths[d];
        p.last_data_sent = Some(now);
        p.idle_adjusted = false;
        // R1: start T3 if not running, with the (backed-off) RTO of this destination.
        if p.t3.is_none() || fast_first {
            p.t3 = Some(now + p.rto.rto());
            p.t3_armed_at = now;
        }
        self.stats.data_packets_sent += 1;
        Packet { chunks }
    }
}

/// Sets a chunk's retransmission mark, keeping the count of marked chunks.
fn set_mark(n_marked: &mut usize, c: &mut TxChunk, m: Mark) {
    match (c.mark == Mark::None, m == Mark::None) {
        (true, false) => *n_marked += 1,
        (false, true) => *n_marked -= 1,
        _ => {}
    }
    c.mark = m;
}
