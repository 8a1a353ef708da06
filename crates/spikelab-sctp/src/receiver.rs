//! The data-receiving half of an endpoint: cumulative TSN, out-of-order buffer, gap ack blocks,
//! duplicate TSNs, delayed SACK (RFC 9260 §6.2, §6.7) and a_rwnd.

use std::collections::BTreeMap;

use crate::config::SctpConfig;
use crate::packet::{DataChunk, SackChunk};
use spikelab_core::SimTime;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub data_packets_received: u64,
    pub chunks_received: u64,
    /// In-order payload bytes handed to the application.
    pub delivered_bytes: u64,
    pub delivered_chunks: u64,
    /// Chunks whose stream offset was not the next expected byte (must stay 0).
    pub order_violations: u64,
    pub duplicate_chunks: u64,
    /// Chunks dropped because the receive buffer was full.
    pub dropped_chunks: u64,
    pub sacks_sent: u64,
    pub sacks_delayed_timer: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct Receiver {
    /// Cumulative TSN received (0: nothing yet; the first TSN is 1).
    pub(crate) cum: u64,
    /// TSN -> (payload length, stream offset), for TSNs above `cum + 1` held out of order.
    ooo: BTreeMap<u64, (u32, u64)>,
    /// What the out-of-order chunks take of the buffer (payload, or whole chunks with
    /// `rwnd_counts_chunk_headers`).
    ooo_bytes: u64,
    dups: Vec<u64>,
    /// DATA packets received since the last SACK.
    unacked_packets: u32,
    pub(crate) sack_timer: Option<SimTime>,
    pub(crate) sack_now: bool,
    /// Where the next SACK goes: the arrival index of the latest DATA (§6.4).
    pub(crate) sack_dest: usize,
    pub(crate) stats: ReceiverStats,
}

impl Receiver {
    pub(crate) fn new() -> Receiver {
        Receiver {
            cum: 0,
            ooo: BTreeMap::new(),
            ooo_bytes: 0,
            dups: Vec::new(),
            unacked_packets: 0,
            sack_timer: None,
            sack_now: false,
            sack_dest: 0,
            stats: ReceiverStats::default(),
        }
    }

    pub(crate) fn has_received(&self, tsn: u64) -> bool {
        tsn <= self.cum || self.ooo.contains_key(&tsn)
    }

    pub(crate) fn a_rwnd(&self, cfg: &SctpConfig) -> u32 {
        (cfg.recv_buffer as u64).saturating_sub(self.ooo_bytes) as u32
    }

    /// One arriving packet's DATA chunks, in order; decides when the SACK goes.
    pub(crate) fn on_data_packet(
        &mut self,
        cfg: &SctpConfig,
        now: SimTime,
        idx: usize,
        chunks: &[&DataChunk],
    ) {
        self.stats.data_packets_received += 1;
        let had_gap = !self.ooo.is_empty();
        let mut dup = false;
        let mut dropped = false;
        for d in chunks {
            self.stats.chunks_received += 1;
            if self.has_received(d.tsn) {
                dup = true;
                self.stats.duplicate_chunks += 1;
                if self.dups.len() < cfg.max_dup_tsns as usize {
                    self.dups.push(d.tsn);
                }
                continue;
            }
            if d.tsn == self.cum + 1 {
                self.deliver(d.offset, d.payload_len as u64);
                self.cum += 1;
                // Drain what the new chunk made in order.
                while let Some((len, off)) = self.ooo.remove(&(self.cum + 1)) {
                    self.ooo_bytes -= cfg.rwnd_bytes(len as u64);
                    self.cum += 1;
                    self.deliver(off, len as u64);
                }
            } else if self.ooo_bytes + cfg.rwnd_bytes(d.payload_len as u64)
                <= cfg.recv_buffer as u64
            {
                self.ooo.insert(d.tsn, (d.payload_len, d.offset));
                self.ooo_bytes += cfg.rwnd_bytes(d.payload_len as u64);
            } else {
                // §6.2: a chunk beyond the window is dropped and a SACK goes at once.
                dropped = true;
                self.stats.dropped_chunks += 1;
            }
        }
        self.sack_dest = idx;
        self.unacked_packets += 1;
        let has_gap = !self.ooo.is_empty();
        // §6.7: SACK at once while a hole exists (and when it closes); §6.2: at once on a
        // duplicate, at least every `sack_freq` packets, else within SACK.Delay.
        // §5.1: the association's first DATA is SACKed at once.
        let first = self.stats.data_packets_received == 1;
        if first
            || dup
            || dropped
            || has_gap
            || (had_gap && cfg.sack_on_gap_close)
            || self.unacked_packets >= cfg.sack_freq
            || cfg.sack_delay == spikelab_core::SimDuration::ZERO
        {
            self.sack_now = true;
        } else if self.sack_timer.is_none() {
            self.sack_timer = Some(now + cfg.sack_delay);
        }
    }

    fn deliver(&mut self, offset: u64, len: u64) {
        if offset != self.stats.delivered_bytes {
            self.stats.order_violations += 1;
        }
        self.stats.delivered_bytes += len;
        self.stats.delivered_chunks += 1;
    }

    pub(crate) fn on_sack_timer(&mut self) {
        self.sack_timer = None;
        self.sack_now = true;
        self.stats.sacks_delayed_timer += 1;
    }

    /// Builds the SACK and resets the delayed-ack state.
    pub(crate) fn build_sack(&mut self, cfg: &SctpConfig) -> SackChunk {
        let limit = cfg.gap_block_limit() as usize;
        let mut blocks: Vec<(u32, u32)> = Vec::new();
        let mut run: Option<(u64, u64)> = None;
        for &t in self.ooo.keys() {
            run = match run {
                Some((s, e)) if t == e + 1 => Some((s, t)),
                Some((s, e)) => {
                    blocks.push(((s - self.cum) as u32, (e - self.cum) as u32));
                    Some((t, t))
                }
                None => Some((t, t)),
            };
        }
        if let Some((s, e)) = run {
            blocks.push(((s - self.cum) as u32, (e - self.cum) as u32));
        }
        blocks.truncate(limit);
        let sack = SackChunk {
            cum_tsn_ack: self.cum,
            a_rwnd: self.a_rwnd(cfg),
            gap_blocks: blocks,
            dup_tsns: std::mem::take(&mut self.dups),
        };
        self.unacked_packets = 0;
        self.sack_timer = None;
        self.sack_now = false;
        self.stats.sacks_sent += 1;
        sack
    }
}
