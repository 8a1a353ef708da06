//! SCTP associations in the world: two `spikelab_sctp` endpoints per flow (A sends the app's
//! data, B receives it), each destination index mapped onto a forward path (A → B) and a
//! reverse path (B → A); packets go through the same stages, queues and traces as TCP's.
//!
//! Ground truth: every DATA copy carries a `tx_id` (increasing per sender). The world records,
//! per TSN, the smallest `tx_id` of a copy that reached B. A T3-rtx expiry is spurious when the
//! copy that timed out (or an earlier one) of its first marked TSN reached B; a retransmitted
//! chunk is spurious when an earlier copy of its TSN reached B; a fast retransmit likewise for
//! the chunk it retransmitted. As for TCP, "reached" counts a copy that arrives after the
//! retransmission was sent.

use super::*;
use crate::packet_event::{ACK as EV_ACK, RETX as EV_RETX, SEND as EV_SEND};
use crate::scenario::AppKind;
use spikelab_core::{Rng, SimDuration, SimTime};
use spikelab_sctp::{
    Chunk, DataSource, Endpoint as SctpEndpoint, Packet as SctpPacket, PathState, Role, SctpEvent,
    T3Record,
};

/// An SCTP packet in flight, with the destination index its path pair belongs to.
pub(super) struct SctpPkt {
    pub(super) pkt: SctpPacket,
    pub(super) dest: u16,
    /// The first DATA chunk's TSN (the deterministic loss model's `seqs`).
    pub(super) first_tsn: Option<u64>,
}

/// Per-destination variables in the time series (`dest` column = the destination index): the
/// names in `VAR_NAMES` from `VAR_DEST` on (`dest_cwnd` … `dest_flight`).
const N_DEST_VARS: usize = VAR_NAMES.len() - VAR_DEST as usize;

pub(super) struct AssocRt {
    /// The flow's index in the scenario.
    pub(super) id: u32,
    /// (forward, reverse) path of each destination.
    dests: Vec<(u16, u16)>,
    a: SctpEndpoint,
    b: SctpEndpoint,
    /// Per TSN (from 1): the smallest `tx_id` of a copy that reached B (`u64::MAX`: none).
    reached: Vec<u64>,
    t3: Vec<T3Record>,
    /// TSNs marked for fast retransmission whose retransmitted copy has not left yet.
    pending_fr: Vec<u64>,
    /// (time, TSN, tx_id) of each fast-retransmitted chunk.
    fr: Vec<(SimTime, u64, u64)>,
    /// (TSN, tx_id) of each retransmitted chunk copy.
    retx: Vec<(u64, u64)>,
    /// In-order deliveries, completion and RTT samples.
    progress: Progress,
    /// The RTT samples' count, sum and sum of squares (s, s²).
    rtt_n: u64,
    rtt_sum: f64,
    rtt_sumsq: f64,
    pub(super) drops: Vec<u64>,
    /// Last recorded value (bits) of each destination's variables.
    last_dest_vars: Vec<[u64; N_DEST_VARS]>,
    /// Last recorded value (bits) of the flow-level variables (those of the data destination).
    last_vars: [u64; N_VARS],
}

impl AssocRt {
    pub(super) fn new(
        id: u32,
        f: &crate::scenario::FlowSpec,
        start: SimTime,
        dests: Vec<(u16, u16)>,
        seed: u64,
        n_global: usize,
    ) -> AssocRt {
        let cfg = f.sctp_config().expect("an SCTP flow");
        let total = match f.app.kind {
            AppKind::Bulk => None,
            AppKind::File => f.app.size.map(|b| b.0),
        };
        // Each endpoint's randomness (heartbeat jitter) from its own stream of the run's seed.
        let stream = |side: &str| Rng::stream(seed, &format!("flow/{id}/sctp/{side}")).next_u64();
        let n = dests.len();
        AssocRt {
            id,
            dests,
            a: SctpEndpoint::new(
                cfg.clone(),
                Role::Client,
                DataSource::Bulk(total),
                stream("a"),
            ),
            b: SctpEndpoint::new(cfg, Role::Server, DataSource::None, stream("b")),
            reached: Vec::new(),
            t3: Vec::new(),
            pending_fr: Vec::new(),
            fr: Vec::new(),
            retx: Vec::new(),
            progress: Progress::new(start),
            rtt_n: 0,
            rtt_sum: 0.0,
            rtt_sumsq: 0.0,
            drops: vec![0; n_global],
            last_dest_vars: vec![[u64::MAX; N_DEST_VARS]; n],
            last_vars: [u64::MAX; N_VARS],
        }
    }

    /// Whether a copy of `tsn` with `tx_id` at most `upto` reached B.
    fn reached_by(&self, tsn: u64, upto: u64) -> bool {
        tsn >= 1
            && self
                .reached
                .get(tsn as usize - 1)
                .is_some_and(|&m| m <= upto)
    }

    /// The payload's first TSN, for the packets trace.
    fn first_tsn(p: &SctpPacket) -> Option<u64> {
        p.data().next().map(|d| d.tsn)
    }
}

/// The packets-trace event of an SCTP packet: DATA → send or retransmit (any retransmitted
/// chunk), SACK → ack, HEARTBEAT(-ACK) → heartbeat, set-up and ABORT → control.
fn trace_event(p: &SctpPacket) -> i32 {
    if p.data().next().is_some() {
        if p.data().any(|d| d.retransmission > 0) {
            EV_RETX
        } else {
            EV_SEND
        }
    } else {
        match p.chunks.first() {
            Some(Chunk::Sack(_)) => EV_ACK,
            Some(Chunk::Heartbeat(_)) | Some(Chunk::HeartbeatAck(_)) => EV_HEARTBEAT,
            _ => EV_CONTROL,
        }
    }
}

impl Endpoint for AssocRt {
    /// The client (A) sends its INIT.
    fn start(&mut self, cx: &mut Cx) {
        self.a.connect(cx.now);
        self.progress.started(cx.now);
        self.take_events(Side::Snd, cx);
    }

    fn on_timer(&mut self, timer: Timer, cx: &mut Cx) {
        let side = timer.side();
        let ep = self.ep(side);
        if ep.next_timer().is_some_and(|t| t <= cx.now) {
            ep.on_timer(cx.now);
        }
        self.take_events(side, cx);
    }

    /// B records which copy of each TSN reached it first (the ground truth).
    fn on_packet(&mut self, to: Side, pkt: &Pkt, cx: &mut Cx) {
        let slot = pkt.sctp().expect("an SCTP packet has its chunks");
        let sp = cx.io.sctp_pkts.remove(slot);
        let now = cx.now;
        if to == Side::Rcv {
            for d in sp.pkt.data() {
                let i = d.tsn as usize - 1;
                if self.reached.len() <= i {
                    self.reached.resize(i + 1, u64::MAX);
                }
                self.reached[i] = self.reached[i].min(d.tx_id);
            }
            self.b.on_packet(now, sp.dest as usize, &sp.pkt);
            cx.delivered(&mut self.progress, self.id, self.b.delivered_bytes());
        } else {
            self.a.on_packet(now, sp.dest as usize, &sp.pkt);
        }
        self.take_events(to, cx);
    }

    /// The next packet of A (on a destination's forward path) or B (on its reverse path); A's
    /// retransmitted chunks are noted for the ground truth.
    fn poll_transmit(&mut self, side: Side, cx: &mut Cx) -> Option<Transmit> {
        let now = cx.now;
        let (dest, pkt) = self.ep(side).poll_transmit(now)?;
        let (fwd, rev) = self.dests[dest];
        let mut tx = -1;
        if side == Side::Snd {
            for d in pkt.data() {
                tx = tx.max(d.retransmission as i32);
                if d.retransmission > 0 {
                    self.retx.push((d.tsn, d.tx_id));
                    if let Some(k) = self.pending_fr.iter().position(|&t| t == d.tsn) {
                        self.pending_fr.swap_remove(k);
                        self.fr.push((now, d.tsn, d.tx_id));
                    }
                }
            }
        }
        let event = trace_event(&pkt);
        let first_tsn = AssocRt::first_tsn(&pkt);
        let size = pkt.wire_size_ip() as u32;
        let seg = Segment {
            seq: first_tsn.unwrap_or(0),
            ack: pkt
                .chunks
                .iter()
                .find_map(|c| match c {
                    Chunk::Sack(s) => Some(s.cum_tsn_ack),
                    _ => None,
                })
                .unwrap_or(0),
            len: pkt.data().map(|d| d.payload_len).sum(),
            ..Segment::default()
        };
        let chunks = SctpPkt {
            pkt,
            dest: dest as u16,
            first_tsn,
        };
        let path = [fwd, rev][side as usize];
        Some(cx.send(side, path, seg, tx, size, event, Some(chunks)))
    }

    /// Takes the endpoint's events; A's completion and variables.
    fn pumped(&mut self, side: Side, cx: &mut Cx) {
        self.take_events(side, cx);
        if side == Side::Snd {
            self.progress.done(cx.now, self.a.is_done());
            if cx.series_on {
                self.record_vars(cx);
            }
        }
    }

    fn next_timer(&self, side: Side) -> Option<SimTime> {
        [&self.a, &self.b][side as usize].next_timer()
    }

    /// After the TCP flows' timers of the same owner, A's before B's.
    fn timer_key(&self, side: Side) -> u128 {
        tie_key(KEY_TIMER, self.id, 0, 2 + side as u32)
    }

    fn dropped(&mut self, _pkt: &Pkt, g: usize) {
        self.drops[g] += 1;
    }

    fn id(&self) -> u32 {
        self.id
    }

    fn progress(&self) -> &Progress {
        &self.progress
    }

    /// The association's runs-table row, and its markers (T3 expiries with their ground
    /// truth, fast retransmits, failovers).
    fn rows(&mut self, end: SimTime, runs: &mut RunsBuilder, markers: &mut Markers) {
        let stop = self.progress.close(end);
        let st = self.a.stats().clone();
        let spurious_t3: Vec<bool> = self
            .t3
            .iter()
            .map(|r| {
                r.tsns
                    .first()
                    .is_some_and(|m| self.reached_by(m.tsn, m.tx_id))
            })
            .collect();
        let spurious_fr: Vec<bool> = self
            .fr
            .iter()
            .map(|&(_, tsn, tx)| self.reached_by(tsn, tx - 1))
            .collect();
        let spurious_retx = self
            .retx
            .iter()
            .filter(|&&(tsn, tx)| self.reached_by(tsn, tx - 1))
            .count();
        let mut ev: Vec<(SimTime, i32, f64, i64, i32, i32)> = Vec::new();
        for (r, &s) in self.t3.iter().zip(&spurious_t3) {
            let tsn = r.tsns.first().map_or(-1, |m| m.tsn as i64);
            ev.push((r.at, VAR_RTO_EXPIRY, s as u8 as f64, tsn, -1, r.dest as i32));
        }
        for (&(t, tsn, _), &s) in self.fr.iter().zip(&spurious_fr) {
            ev.push((t, VAR_FAST_RETX, s as u8 as f64, tsn as i64, -1, -1));
        }
        for f in &st.failovers {
            ev.push((f.at, VAR_FAILOVER, f.to as f64, -1, -1, f.from as i32));
        }
        ev.sort_by_key(|e| (e.0, e.1));
        for (t, var, value, seq, tx, dest) in ev {
            markers.mark_dest(t, self.id, var, value, seq, tx, dest);
        }
        let sent = st.data_chunks_sent;
        let per_pkt = |k: u64| ratio(k, sent);
        let t3_count = self.t3.len() as u64;
        let primary = self.a.config().primary;
        let data_primary = st.per_dest.get(primary).map_or(0, |d| d.bytes_sent);
        let data_total: u64 = st.per_dest.iter().map(|d| d.bytes_sent).sum();
        // Time to failover: from the start of the first timer of the run of consecutive
        // T3 expiries on the destination that failed to the failover itself.
        let time_to_failover = st.failovers.first().map_or(f64::NAN, |fo| {
            let first = self
                .t3
                .iter()
                .filter(|r| r.dest == fo.from && r.at <= fo.at && r.errors == 1)
                .map(|r| r.armed_at)
                .next_back();
            first.map_or(f64::NAN, |t| fo.at.since(t).as_secs_f64())
        });
        // When the first failover happened (paper 004 §5 conditions on when the RTO
        // inflation, so the episode, began: `failover_at_s - time_to_failover_s`).
        let failover_at = st
            .failovers
            .first()
            .map_or(f64::NAN, |fo| fo.at.as_secs_f64());
        let rtt = (self.rtt_n, self.rtt_sum, self.rtt_sumsq);
        let t3_spurious = spurious_t3.iter().filter(|s| **s).count() as i64;
        let fr_spurious = spurious_fr.iter().filter(|s| **s).count() as i64;
        runs.row(RunRow {
            flow: self.id as i32,
            protocol: "sctp",
            cc: "sctp",
            mss: self.a.config().chunk_payload() as i64,
            delivery: self.progress.columns(stop, self.b.delivered_bytes(), rtt),
            rto_count: t3_count as i64,
            rto_spurious_true: t3_spurious,
            fast_retx_count: st.fast_retransmits as i64,
            fast_retx_spurious_true: fr_spurious,
            retx_segments: st.retransmitted_chunks as i64,
            spurious_retx_true: spurious_retx as i64,
            segments_sent: sent as i64,
            rto_per_pkt: per_pkt(t3_count),
            spurious_retx_per_pkt: per_pkt(spurious_retx as u64),
            retx_per_pkt: per_pkt(st.retransmitted_chunks),
            rto_episodes: t3_count as i64,
            rto_episodes_spurious_true: t3_spurious,
            fr_episodes: st.fast_retransmits as i64,
            fr_episodes_spurious_true: fr_spurious,
            drops: self.drops.clone(),
            tcp: None,
            sctp: Some(SctpColumns {
                failovers: st.failovers.len() as i64,
                time_to_failover_s: time_to_failover,
                failover_at_s: failover_at,
                data_primary_bytes: data_primary as i64,
                data_other_bytes: (data_total - data_primary) as i64,
                heartbeats_sent: st.heartbeats_sent as i64,
                setup_time_s: st.setup_time.map_or(f64::NAN, |d| d.as_secs_f64()),
                assoc_failed: st.failed_at.is_some() as i64,
            }),
        });
    }
}

impl AssocRt {
    fn ep(&mut self, side: Side) -> &mut SctpEndpoint {
        match side {
            Side::Snd => &mut self.a,
            Side::Rcv => &mut self.b,
        }
    }

    /// Takes endpoint A's events into the association's records; B's are dropped. The events
    /// of what an endpoint just received are taken before it sends: a fast retransmit's TSNs
    /// must be known when its retransmission leaves, or the ground truth would pin the fast
    /// retransmit on a later copy of the TSN.
    fn take_events(&mut self, side: Side, cx: &mut Cx) {
        let events = self.ep(side).drain_events();
        if side == Side::Rcv {
            return;
        }
        for ev in events {
            match ev {
                SctpEvent::T3Expiry(r) => self.t3.push(r),
                // One fast retransmit, judged by its first (lowest) TSN, as a T3 expiry is.
                SctpEvent::FastRetransmit { tsns, .. } => self.pending_fr.extend(tsns.first()),
                SctpEvent::RttSample { at, rtt, .. } => {
                    cx.rtt_sample(&mut self.progress, self.id, at, rtt);
                    let s = rtt.as_secs_f64();
                    self.rtt_n += 1;
                    self.rtt_sum += s;
                    self.rtt_sumsq += s * s;
                }
                _ => {}
            }
        }
    }

    /// The flow-level variables (those of the destination new data goes to) and each
    /// destination's own.
    fn record_vars(&mut self, cx: &mut Cx) {
        let now = cx.now;
        let ep = &self.a;
        let cur = ep.path(ep.data_destination());
        let secs = |d: Option<SimDuration>| d.map_or(f64::NAN, |d| d.as_secs_f64());
        let acked = ep.stats().bytes_acked as f64;
        let vals: [f64; N_VARS] = [
            cur.cwnd as f64,
            ssthresh_value(cur.ssthresh),
            secs(cur.srtt),
            secs(cur.rttvar),
            cur.rto.as_secs_f64(),
            acked,
            ep.stats().payload_bytes_sent as f64,
            (0..ep.n_destinations())
                .map(|d| ep.path(d).flight)
                .sum::<u64>() as f64,
            ep.in_fast_recovery() as u8 as f64,
        ];
        let id = self.id;
        let series = &mut cx.io.series;
        each_change(&mut self.last_vars, &vals, |i, v| {
            series.push(now, id, i as i32, v)
        });
        for d in 0..ep.n_destinations() {
            let p = ep.path(d);
            let state = match p.state {
                PathState::Active => 0.0,
                PathState::PotentiallyFailed => 1.0,
                PathState::Inactive => 2.0,
            };
            let vals: [f64; N_DEST_VARS] = [
                p.cwnd as f64,
                ssthresh_value(p.ssthresh),
                secs(p.srtt),
                secs(p.rttvar),
                p.rto.as_secs_f64(),
                state,
                p.errors as f64,
                p.flight as f64,
            ];
            let dest_series = &mut cx.io.dest_series;
            each_change(&mut self.last_dest_vars[d], &vals, |i, v| {
                dest_series.mark_dest(now, id, VAR_DEST + i as i32, v, -1, -1, d as i32)
            });
        }
    }
}

/// Drawn from `packet_event`: the codes of the SCTP-only events.
use crate::packet_event::{CONTROL as EV_CONTROL, HEARTBEAT as EV_HEARTBEAT};

/// A destination's ssthresh as the time series holds it: `+inf` while it is unset, as TCP's
/// is before its first loss (docs/results.md), so figures and queries read both alike.
fn ssthresh_value(v: u64) -> f64 {
    if v >= spikelab_sctp::SSTHRESH_UNSET {
        f64::INFINITY
    } else {
        v as f64
    }
}
