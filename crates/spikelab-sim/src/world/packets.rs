//! Packet events: their rows in the packets trace and their frames in the captures.

use super::*;
use crate::packet_event::{
    DELIVER as EV_DELIVER, DROP as EV_DROP, ENTER as EV_ENTER, EXIT as EV_EXIT,
};
use crate::pcap::Seen;
use crate::scenario::TraceLevel;
use crate::table::Table;
use spikelab_core::ArenaId;
use spikelab_net::DropCause;

impl World {
    #[inline(always)]
    pub(super) fn trace_pkt(&mut self, id: ArenaId, event: i32, stage: i32, cause: i32) {
        if self.observe {
            self.observe_pkt(id, event, stage, cause);
        }
    }

    /// A packet event's row in the packets trace and its frame in the captures.
    #[inline(never)]
    fn observe_pkt(&mut self, id: ArenaId, event: i32, stage: i32, cause: i32) {
        if self.pcap.is_some() {
            self.capture_pkt(id, event, stage);
        }
        if self.level < TraceLevel::Packets {
            return;
        }
        let p = self.io.packets.get(id);
        let stage_code = if stage >= 0 {
            self.paths[p.path as usize].stage_code[stage as usize]
        } else {
            -1
        };
        if self.ptrace.t.len() as u64 >= self.max_packets_rows {
            if self.failure.is_none() {
                self.failure = Some((
                    "sim.max_packets_rows".into(),
                    format!(
                        "the packets trace reached its bound of {} rows; record less \
                         (--trace timeseries), simulate less time, or raise sim.max_packets_rows",
                        self.max_packets_rows
                    ),
                ));
            }
            return;
        }
        let tr = &mut self.ptrace;
        tr.reserve_row();
        tr.t.push(self.now.as_nanos() as i64);
        // -1 where a value does not apply (null in the table, crate::schema): no data, no
        // ACK, no destination.
        let (flow, dest, seq, ack) = match p.sctp() {
            Some(s) => {
                let sp = self.io.sctp_pkts.get(s);
                (
                    self.conns[p.conn() as usize].id(),
                    sp.dest as i32,
                    sp.first_tsn.map_or(-1, |t| t as i64),
                    sp.pkt.sack().map_or(-1, |s| s.cum_tsn_ack as i64),
                )
            }
            None => {
                let data = p.dir == Dir::Data;
                (
                    self.conns[p.conn() as usize].id(),
                    -1,
                    if data { p.seg.seq as i64 } else { -1 },
                    if data { -1 } else { p.seg.ack as i64 },
                )
            }
        };
        tr.flow.push(flow as i32);
        tr.dest.push(dest);
        tr.pkt.push(p.id as i64);
        tr.event.push(event);
        tr.path.push(p.path as i32);
        tr.stage.push(stage_code);
        tr.kind.push((p.dir == Dir::Ack) as i32);
        tr.seq.push(seq);
        tr.ack.push(ack);
        tr.len.push(p.seg.len as i32);
        tr.size.push(p.size as i32);
        tr.tx.push(p.tx);
        tr.cause.push(cause);
        let fate = if (event == EV_EXIT || event == EV_DROP) && !self.harq_fates.is_empty() {
            self.harq_fates.remove(&(p.id, stage as usize))
        } else {
            None
        };
        let (harq_tx, harq_delay_us) = fate.unwrap_or((-1, -1));
        tr.harq_tx.push(harq_tx);
        tr.harq_delay_us.push(harq_delay_us);
    }

    /// Hands a packet event to the captures: leaving its endpoint, reaching the other, or
    /// crossing a stage boundary (entering a stage; leaving the path's last one).
    #[cold]
    #[inline(never)]
    fn capture_pkt(&mut self, id: ArenaId, event: i32, stage: i32) {
        let p = self.io.packets.get(id);
        let seen = match event {
            EV_DELIVER => Seen::Deliver,
            EV_ENTER => Seen::Boundary(p.path, stage as usize),
            EV_EXIT if stage as usize + 1 == self.paths[p.path as usize].stages.len() => {
                Seen::Boundary(p.path, stage as usize + 1)
            }
            EV_EXIT | EV_DROP => return,
            _ => Seen::Launch,
        };
        let Some(w) = self.pcap.as_mut() else { return };
        match p.sctp() {
            Some(s) => {
                let sp = self.io.sctp_pkts.get(s);
                w.observe_sctp(
                    self.now.as_nanos(),
                    seen,
                    ((p.conn() - self.first_assoc) as usize, sp.dest as usize),
                    p.dir == Dir::Data,
                    p.id,
                    &sp.pkt,
                );
            }
            None => w.observe(
                self.now.as_nanos(),
                seen,
                p.conn() as usize,
                p.dir == Dir::Data,
                p.id,
                &p.seg,
            ),
        }
        if let (Some(e), None) = (w.error(), &self.failure) {
            self.failure = Some((
                "sim.pcap".into(),
                format!("could not write the capture: {e}"),
            ));
        }
    }

    pub(super) fn packets_table(&mut self) -> Table {
        let causes = DropCause::ALL
            .iter()
            .map(|c| c.as_str().to_string())
            .collect();
        std::mem::take(&mut self.ptrace).into_table(
            self.path_names.clone(),
            self.stage_names.clone(),
            causes,
        )
    }
}
