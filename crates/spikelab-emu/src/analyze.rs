//! From the emulator's capture to the simulator's result tables.
//!
//! The capture has every frame that entered the emulator, every departure (with its intended
//! time) and every drop. Because the veths between the hosts and the emulator add no delay, a
//! frame's arrival at the emulator is its departure from the sending host and its departure
//! from the emulator is its arrival at the other host. That gives the `packets` table in the
//! simulator's vocabulary:
//!
//! | capture | `packets` rows |
//! |---|---|
//! | data frame in (sender side) | `send` or `retransmit` at its kernel receive time |
//! | ACK frame in (receiver side) | `ack` |
//! | each stage passed | `stage_enter` / `stage_exit` at the emulator's intended (virtual) times |
//! | drop | `drop` at the intended drop time, with stage and cause |
//! | out | `deliver` at the actual send time |
//!
//! Handshake and teardown frames (SYN, FIN, RST) and the sender's pure ACKs are not rows (the
//! simulator has none); they are counted in [`FlowSummary::control_frames`]. Sequence numbers are
//! relative to the sender's SYN (the first data byte is 0) and unwrapped past 2^32.
//!
//! Derived, as the simulator derives them: in-order delivery at the receiver (`rcv_nxt`, the
//! longest stall), RTT samples (an ACK reaching the sender for data sent once: Karn's rule),
//! duplicate ACKs and DSACKs that reach the sender, and the ground truth of each retransmission
//! (did an earlier copy of the same bytes leave the emulator towards the receiver?).

use crate::frame::{self, TcpFrame};
use crate::notes::{CaptureMeta, Note};
use crate::pcapng::Capture;
use crate::pipeline::unwrap_seq;
use serde::Serialize;
use spikelab_core::table::{ColumnData, Table};
use spikelab_net::DropCause;
use std::collections::{BTreeMap, HashMap};

use spikelab_core::packet_event::{
    PacketRows, ACK as EV_ACK, DELIVER as EV_DELIVER, DROP as EV_DROP, ENTER as EV_ENTER,
    EXIT as EV_EXIT, RETX as EV_RETX, SEND as EV_SEND,
};

/// The drop cause of a frame the emulator could not send (the veth refused it).
pub const TX_ERROR: &str = "tx_error";

/// Variables of the derived time series (the rest come from the kernel's TCP_INFO).
pub const SERIES_VARS: [&str; 2] = ["rtt_sample", "rcv_nxt"];

/// One retransmission seen at the emulator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Retransmission {
    /// When it left the sender, ns since t0.
    pub t_ns: u64,
    pub seq: u64,
    pub len: u32,
    /// Transmission number of these bytes (1 = first retransmission).
    pub tx: u32,
    /// An earlier copy of these bytes left the emulator towards the receiver (ground truth).
    pub spurious: bool,
}

/// Per-flow figures derived from the capture, for the `runs` table.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowSummary {
    pub flow: i32,
    /// In-order bytes that reached the receiver by the end of the run.
    pub bytes_delivered: u64,
    /// Data segments sent, retransmissions included.
    pub segments_sent: u64,
    pub retx_segments: u64,
    pub spurious_retx_true: u64,
    pub dupacks_rcvd: u64,
    pub dsacks_rcvd: u64,
    pub rtt_mean_s: f64,
    pub rtt_sd_s: f64,
    pub rtt_samples: u64,
    pub longest_stall_s: f64,
    /// When the last in-order byte reached the receiver, ns since t0 (0: never).
    pub last_delivery_ns: u64,
    /// When the first data segment left the sender, ns since t0 (0: never).
    pub first_send_ns: u64,
    /// The sender's initial sequence number (from its SYN), if the capture has it.
    pub isn: Option<u32>,
    /// This flow's drops per stage, in the order of [`Analysis::stages`].
    pub drops: Vec<u64>,
    /// SYN / FIN / RST frames and the sender's pure ACKs (not rows of `packets`).
    pub control_frames: u64,
    /// The sender's SYNs, retransmissions included (each after the first is a SYN timeout,
    /// which the kernel's `tcpi_total_rto` counts and the simulator's `rto_count` does not).
    pub syns_sent: u64,
    /// SCTP: HEARTBEAT chunks from the sender.
    pub heartbeats_sent: u64,
    /// SCTP: wire bytes of every packet the sender sent to each destination (DATA with its
    /// retransmissions, INIT, COOKIE ECHO, HEARTBEATs), in the scenario's destination order.
    pub bytes_by_dest: Vec<u64>,
    /// SCTP: changes of the destination new DATA goes to, and when the first one happened
    /// (the first new DATA to another destination than the one before it; 0: never).
    pub failovers: u64,
    pub first_failover_ns: u64,
    pub retransmissions: Vec<Retransmission>,
}

/// The emulator's departure timing error (actual − intended), over every departure.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timing {
    pub departures: u64,
    pub mean_ns: f64,
    pub p50_ns: i64,
    pub p90_ns: i64,
    pub p99_ns: i64,
    pub p999_ns: i64,
    pub max_ns: i64,
    pub min_ns: i64,
    /// Share of departures within 1 ms of their intended time.
    pub within_1ms: f64,
    /// Share within 100 µs.
    pub within_100us: f64,
}

impl Timing {
    pub fn from_errors(mut errs: Vec<i64>) -> Timing {
        if errs.is_empty() {
            return Timing::default();
        }
        errs.sort_unstable();
        let n = errs.len();
        let q = |p: f64| errs[((p * (n - 1) as f64).round() as usize).min(n - 1)];
        let within = |lim: i64| errs.iter().filter(|e| e.abs() <= lim).count() as f64 / n as f64;
        Timing {
            departures: n as u64,
            mean_ns: errs.iter().map(|&e| e as f64).sum::<f64>() / n as f64,
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            max_ns: errs[n - 1],
            min_ns: errs[0],
            within_1ms: within(1_000_000),
            within_100us: within(100_000),
        }
    }
}

/// What one path saw: frames entering its first stage and the drops among them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PathSummary {
    pub name: String,
    /// Frames that entered the path (all of them: data, ACKs, handshake) by the end.
    pub frames: u64,
    /// 1-based position, among the path's frames, of each frame the path dropped (the
    /// numbering of a deterministic loss stage's `nth`): a seed's loss pattern.
    pub dropped: Vec<u64>,
}

/// Everything read from one capture.
pub struct Analysis {
    pub meta: CaptureMeta,
    pub packets: Table,
    /// Long format (t_ns, flow, var, value) with [`SERIES_VARS`].
    pub series: Table,
    pub flows: Vec<FlowSummary>,
    pub timing: Timing,
    /// (path, stage) names of every stage, in the order of the `drops_<path>_<stage>` columns.
    pub stages: Vec<(String, String)>,
    pub paths: Vec<PathSummary>,
    /// Frames the capture holds that belong to no flow.
    pub unclassified: u64,
}

#[derive(Default)]
struct PktRec {
    /// 1-based position among the frames of its path (0: no path).
    ordinal: u64,
    t_in: u64,
    side_a: bool,
    flow: i32,
    path: i32,
    tcp: Option<TcpFrame>,
    out: Option<(u64, u64, Vec<u64>)>,
    drop: Option<(u64, u16, String, Vec<u64>)>,
}

/// Packet rows in the order they are produced; sorted by time when the table is built.
#[derive(Default)]
struct Rows(PacketRows);

struct RowCtx {
    flow: i32,
    pkt: i64,
    path: i32,
    kind: i32,
    seq: i64,
    ack: i64,
    len: i32,
    size: i32,
    tx: i32,
    /// SCTP: the destination index; -1 for TCP.
    dest: i32,
}

impl Rows {
    fn push(&mut self, t: u64, c: &RowCtx, event: i32, stage: i32, cause: i32) {
        let r = &mut self.0;
        r.t.push(t as i64);
        r.flow.push(c.flow);
        r.pkt.push(c.pkt);
        r.event.push(event);
        r.path.push(c.path);
        r.stage.push(stage);
        r.kind.push(c.kind);
        r.seq.push(c.seq);
        r.ack.push(c.ack);
        r.len.push(c.len);
        r.size.push(c.size);
        r.tx.push(c.tx);
        r.cause.push(cause);
        r.dest.push(c.dest);
        r.harq_tx.push(-1);
        r.harq_delay_us.push(-1);
    }
}

#[derive(Default)]
struct Series {
    t: Vec<i64>,
    flow: Vec<i32>,
    var: Vec<i32>,
    value: Vec<f64>,
}

impl Series {
    fn push(&mut self, t: u64, flow: i32, var: i32, value: f64) {
        self.t.push(t as i64);
        self.flow.push(flow);
        self.var.push(var);
        self.value.push(value);
    }
}

struct DataTx {
    seq: u64,
    end: u64,
    delivered: bool,
}

#[derive(Default)]
struct FlowState {
    isn: Option<u32>,
    last_rel: u64,
    snd_max: u64,
    /// Transmissions of data, in the order they left the sender.
    txs: Vec<DataTx>,
    /// Index into `txs` of the first transmissions (tx = 0), in sequence order.
    originals: Vec<usize>,
    /// Retransmissions by first byte: their indices into `txs`.
    retx_by_seq: HashMap<u64, Vec<usize>>,
    /// Segment end -> (send time, sent more than once) for RTT samples.
    by_end: HashMap<u64, (u64, bool)>,
    /// Delivered but not yet in order: start -> end.
    ooo: BTreeMap<u64, u64>,
    rcv_nxt: u64,
    last_progress: u64,
    longest_stall: u64,
    last_delivery: u64,
    snd_una: u64,
    last_ack: Option<(u64, u16)>,
    rtts: Vec<f64>,
    /// SCTP: the destination the last new DATA went to.
    new_data_dest: Option<usize>,
    /// SCTP: payload bytes of each TSN (relative, from 0), to count delivered bytes.
    tsn_bytes: Option<HashMap<u64, u32>>,
    delivered_bytes: u64,
    s: FlowSummary,
}

impl FlowState {
    fn rel(&mut self, seq: u32) -> Option<u64> {
        let isn = self.isn?;
        let r = unwrap_seq(self.last_rel, seq.wrapping_sub(isn.wrapping_add(1)));
        self.last_rel = self.last_rel.max(r);
        Some(r)
    }

    /// The relative value of a sequence number on the ACK side (no update of the reference).
    fn rel_ack(&self, seq: u32) -> Option<u64> {
        let isn = self.isn?;
        Some(unwrap_seq(
            self.last_rel,
            seq.wrapping_sub(isn.wrapping_add(1)),
        ))
    }

    /// The acknowledged end on the sender's scale: TCP's cumulative ACK; for SCTP the TSN
    /// after the cumulative TSN ack (on the relative scale from 0), which the rows show as
    /// the cumulative TSN ack itself counted from 1.
    fn ack_of(&self, f: &TcpFrame) -> Option<u64> {
        match &f.sctp {
            // The origin is the Initial TSN - 1: a cumulative TSN ack of Initial TSN - 1
            // (nothing received in order yet) is 0.
            Some(s) => Some(unwrap_seq(
                self.last_rel,
                s.cum_tsn?.wrapping_sub(self.isn?),
            )),
            None => self.rel_ack(f.ack),
        }
    }

    /// One transmission of [seq, end) that left the sender at `t` (`delivered`: it left the
    /// emulator towards the receiver): an original or the how-many-th retransmission, which
    /// it returns. `shown` is the number its [`Retransmission`] carries.
    fn push_tx(
        &mut self,
        seq: u64,
        end: u64,
        t: u64,
        len: u32,
        shown: u64,
        delivered: bool,
    ) -> u32 {
        let idx = self.txs.len();
        let tx = if seq >= self.snd_max {
            self.originals.push(idx);
            self.by_end.insert(end, (t, false));
            0
        } else {
            let same = self.retx_by_seq.entry(seq).or_default();
            same.push(idx);
            if let Some(e) = self.by_end.get_mut(&end) {
                e.1 = true;
            }
            same.len() as u32
        };
        self.snd_max = self.snd_max.max(end);
        self.txs.push(DataTx {
            seq,
            end,
            delivered,
        });
        self.s.segments_sent += 1;
        if self.s.first_send_ns == 0 {
            self.s.first_send_ns = t.max(1);
        }
        if tx > 0 {
            self.s.retx_segments += 1;
            self.s.retransmissions.push(Retransmission {
                t_ns: t,
                seq: shown,
                len,
                tx,
                spurious: false,
            });
        }
        tx
    }

    fn deliver_data(&mut self, t: u64, seq: u64, end: u64, flow: i32, series: &mut Series) {
        if end <= self.rcv_nxt {
            return;
        }
        let e = self.ooo.entry(seq.max(self.rcv_nxt)).or_insert(end);
        *e = (*e).max(end);
        let before = self.rcv_nxt;
        while let Some((&s, &e)) = self.ooo.first_key_value() {
            if s > self.rcv_nxt {
                break;
            }
            self.ooo.pop_first();
            self.rcv_nxt = self.rcv_nxt.max(e);
        }
        if self.rcv_nxt > before {
            self.longest_stall = self.longest_stall.max(t.saturating_sub(self.last_progress));
            self.last_progress = t;
            self.last_delivery = t;
            // SCTP counts TSNs: the series and the summary count their payload bytes.
            self.delivered_bytes = match &self.tsn_bytes {
                Some(b) => {
                    self.delivered_bytes
                        + (before..self.rcv_nxt)
                            .map(|k| b.get(&k).copied().unwrap_or(0) as u64)
                            .sum::<u64>()
                }
                None => self.rcv_nxt,
            };
            series.push(t, flow, 1, self.delivered_bytes as f64);
        }
    }
}

/// Reads a capture written by the engine. Events after `duration_ns` (the scenario's end) are
/// left out, as the simulator stops there.
pub fn analyze(cap: &Capture, duration_ns: u64) -> Result<Analysis, String> {
    let meta: CaptureMeta = serde_json::from_str(&cap.section_comment)
        .map_err(|e| format!("not a spikelab emulator capture (section comment: {e})"))?;
    let t0 = meta.t0_ns;
    let rel = |ts: u64| ts.saturating_sub(t0);

    // Gather each packet's records.
    let mut pkts: Vec<PktRec> = Vec::new();
    let mut errs = Vec::new();
    let mut paths: Vec<PathSummary> = meta
        .paths
        .iter()
        .map(|p| PathSummary {
            name: p.name.clone(),
            ..PathSummary::default()
        })
        .collect();
    for r in &cap.records {
        let Some(note) = Note::parse(&r.comment) else {
            continue;
        };
        let id = match &note {
            Note::In { pkt, .. } | Note::Out { pkt, .. } | Note::Drop { pkt, .. } => *pkt as usize,
        };
        if id >= cap.records.len() {
            continue; // ids count frames; a larger one is not from the engine
        }
        if id >= pkts.len() {
            pkts.resize_with(id + 1, PktRec::default);
        }
        let p = &mut pkts[id];
        match note {
            Note::In { flow, path, .. } => {
                p.t_in = rel(r.ts_ns);
                if path >= 0 && (path as usize) < paths.len() && p.t_in <= duration_ns {
                    let ps = &mut paths[path as usize];
                    ps.frames += 1;
                    p.ordinal = ps.frames;
                }
                p.side_a = r.iface == 0;
                p.flow = flow;
                p.path = path;
                // The IP length (so the payload length) is known even from a truncated capture.
                p.tcp = frame::parse(&r.data);
            }
            Note::Out { due, exits, .. } => {
                let actual = rel(r.ts_ns);
                errs.push(actual as i64 - due as i64);
                p.out = Some((actual, due, exits));
            }
            Note::Drop {
                stage,
                cause,
                at,
                exits,
                ..
            } => p.drop = Some((at, stage, cause, exits)),
        }
    }
    for p in &pkts {
        if let (Some((at, ..)), true) = (&p.drop, p.ordinal > 0) {
            if *at <= duration_ns {
                paths[p.path as usize].dropped.push(p.ordinal);
            }
        }
    }

    let mut stage_names: Vec<String> = Vec::new();
    let mut stage_code: Vec<Vec<i32>> = Vec::new();
    let mut stages = Vec::new();
    let mut first_global = Vec::new();
    for pm in &meta.paths {
        first_global.push(stages.len());
        let mut codes = Vec::new();
        for s in &pm.stages {
            let c = match stage_names.iter().position(|x| x == s) {
                Some(c) => c,
                None => {
                    stage_names.push(s.clone());
                    stage_names.len() - 1
                }
            };
            codes.push(c as i32);
            stages.push((pm.name.clone(), s.clone()));
        }
        stage_code.push(codes);
    }
    // The simulator's causes, then the emulator's own: a frame it could not send.
    let causes: Vec<String> = DropCause::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .chain([TX_ERROR.to_string()])
        .collect();

    let mut flows: Vec<FlowState> = (0..meta.flows.len())
        .map(|i| FlowState {
            s: FlowSummary {
                flow: i as i32,
                drops: vec![0; stages.len()],
                ..FlowSummary::default()
            },
            ..FlowState::default()
        })
        .collect();
    let mut rows = Rows::default();
    let mut series = Series::default();
    let mut unclassified = 0;

    // Departures and drops happen after arrivals; process every packet's arrival in arrival
    // order first (sequence numbers, transmissions), then the deliveries in time order.
    let mut deliveries: Vec<(u64, usize)> = Vec::new();
    for (id, p) in pkts.iter().enumerate() {
        if p.flow < 0 || p.flow as usize >= flows.len() {
            unclassified += 1;
            continue;
        }
        let Some(tcp) = p.tcp else { continue };
        let fl = &mut flows[p.flow as usize];
        let sctp = tcp.sctp;
        let control = tcp.has(frame::SYN) || tcp.has(frame::FIN) || tcp.has(frame::RST);
        let origin = if p.side_a { tcp.origin() } else { None };
        if let Some(o) = origin {
            fl.isn = Some(o);
            fl.last_rel = 0;
            if sctp.is_some() {
                fl.tsn_bytes.get_or_insert_with(HashMap::new);
            }
        }
        if p.t_in > duration_ns {
            continue;
        }
        if origin.is_some() && sctp.is_none() {
            fl.s.syns_sent += 1;
        }
        let dest = meta.flows[p.flow as usize].dest_of(p.side_a, &tcp);
        if p.side_a && sctp.is_some() {
            if fl.s.bytes_by_dest.len() <= dest {
                fl.s.bytes_by_dest.resize(dest + 1, 0);
            }
            fl.s.bytes_by_dest[dest] += tcp.ip_len as u64;
            if sctp.is_some_and(|s| s.heartbeat) {
                fl.s.heartbeats_sent += 1;
            }
        }
        // Drops of any frame of the flow count (handshake frames too). A frame the emulator
        // could not send (`tx_error`) was dropped by no stage.
        if p.path < 0 || p.path as usize >= stage_code.len() {
            continue;
        }
        let codes = &stage_code[p.path as usize];
        if let Some((at, stage, _, _)) = &p.drop {
            if *at <= duration_ns && (*stage as usize) < codes.len() {
                let g = first_global[p.path as usize] + *stage as usize;
                fl.s.drops[g] += 1;
            }
        }
        let is_data = p.side_a && tcp.is_data();
        let is_ack = !p.side_a
            && match &sctp {
                Some(s) => s.cum_tsn.is_some(),
                None => !control,
            };
        if !(is_data || is_ack) {
            fl.s.control_frames += 1;
            continue;
        }
        let mut ctx = RowCtx {
            flow: p.flow,
            pkt: id as i64,
            path: p.path,
            kind: if is_data { 0 } else { 1 },
            // -1: does not apply (null in the table, spikelab_sim::schema); a data row sets
            // `seq`, an ACK row `ack`.
            seq: -1,
            ack: -1,
            len: tcp.payload as i32,
            size: tcp.ip_len as i32,
            tx: -1,
            dest: if sctp.is_some() { dest as i32 } else { -1 },
        };
        let delivered = p.out.is_some();
        if is_data {
            let shown = |seq: u64| seq + sctp.is_some() as u64;
            let mut first = None;
            let mut top_tx = 0;
            match &sctp {
                // One transmission per DATA chunk; the row names the first TSN (from 1) and
                // the highest transmission number among the chunks, as the simulator's do.
                Some(s) => {
                    for (tsn, bytes) in s.data() {
                        let Some(seq) = fl.rel(tsn) else { continue };
                        first.get_or_insert(seq);
                        let tx = fl.push_tx(seq, seq + 1, p.t_in, bytes, shown(seq), delivered);
                        top_tx = top_tx.max(tx);
                        if let Some(b) = fl.tsn_bytes.as_mut() {
                            b.entry(seq).or_insert(bytes);
                        }
                    }
                }
                None => {
                    let Some(seq) = fl.rel(tcp.seq) else { continue };
                    first = Some(seq);
                    let end = seq + tcp.payload as u64;
                    top_tx = fl.push_tx(seq, end, p.t_in, tcp.payload, seq, delivered);
                }
            }
            let Some(first) = first else { continue };
            if sctp.is_some() && top_tx == 0 {
                if fl.new_data_dest.is_some_and(|d| d != dest) {
                    fl.s.failovers += 1;
                    if fl.s.first_failover_ns == 0 {
                        fl.s.first_failover_ns = p.t_in.max(1);
                    }
                }
                fl.new_data_dest = Some(dest);
            }
            ctx.seq = shown(first) as i64;
            ctx.tx = top_tx as i32;
            rows.push(
                p.t_in,
                &ctx,
                if top_tx == 0 { EV_SEND } else { EV_RETX },
                -1,
                -1,
            );
        } else {
            let Some(ack) = fl.ack_of(&tcp) else {
                continue;
            };
            ctx.ack = ack as i64;
            rows.push(p.t_in, &ctx, EV_ACK, -1, -1);
        }
        if let Some((actual, _, _)) = p.out {
            deliveries.push((actual, id));
        }
        // Stage rows at the emulator's intended times.
        let (exits, dropped) = match (&p.out, &p.drop) {
            (Some((_, _, ex)), _) => (ex.clone(), None),
            (None, Some((at, stage, cause, ex))) => (ex.clone(), Some((*at, *stage, cause))),
            (None, None) => (Vec::new(), None),
        };
        let code = |s: usize| codes.get(s).copied().unwrap_or(-1);
        let mut enter = p.t_in;
        for (s, &exit) in exits.iter().enumerate().take(codes.len()) {
            if enter <= duration_ns {
                rows.push(enter, &ctx, EV_ENTER, code(s), -1);
            }
            if exit <= duration_ns {
                rows.push(exit, &ctx, EV_EXIT, code(s), -1);
            }
            enter = exit;
        }
        if let Some((at, stage, cause)) = dropped {
            if at <= duration_ns {
                let stage = stage as usize;
                if stage < codes.len() && stage >= exits.len() {
                    rows.push(enter, &ctx, EV_ENTER, code(stage), -1);
                }
                let c = causes
                    .iter()
                    .position(|x| x == cause)
                    .map_or(-1, |c| c as i32);
                rows.push(at, &ctx, EV_DROP, code(stage), c);
            }
        }
        if let Some((actual, _, _)) = p.out {
            if actual <= duration_ns {
                rows.push(actual, &ctx, EV_DELIVER, -1, -1);
            }
        }
    }

    // Ground truth: was an earlier copy of a retransmission's first byte delivered?
    for fl in flows.iter_mut() {
        let mut k = 0;
        for (idx, tx) in fl.txs.iter().enumerate() {
            let Some(same) = fl.retx_by_seq.get(&tx.seq) else {
                continue;
            };
            let Some(pos) = same.iter().position(|&i| i == idx) else {
                continue;
            };
            // An original (first transmission) that contains the byte.
            let o = fl.originals.partition_point(|&i| fl.txs[i].seq <= tx.seq);
            let orig_delivered = o > 0 && {
                let t = &fl.txs[fl.originals[o - 1]];
                t.seq <= tx.seq && tx.seq < t.end && t.delivered
            };
            let earlier_retx_delivered = same[..pos].iter().any(|&i| fl.txs[i].delivered);
            let spurious = orig_delivered || earlier_retx_delivered;
            fl.s.retransmissions[k].spurious = spurious;
            fl.s.spurious_retx_true += spurious as u64;
            k += 1;
        }
    }

    // Deliveries in time order: in-order data at the receiver, ACKs at the sender. A stall is
    // counted from the flow's first data segment.
    for fl in flows.iter_mut() {
        fl.last_progress = fl.s.first_send_ns;
    }
    deliveries.sort_unstable();
    for (t, id) in deliveries {
        if t > duration_ns {
            break;
        }
        let p = &pkts[id];
        let tcp = p.tcp.expect("classified");
        let fl = &mut flows[p.flow as usize];
        if p.side_a {
            if let Some(s) = &tcp.sctp {
                for (tsn, _) in s.data() {
                    if let Some(seq) = fl.rel_ack(tsn) {
                        fl.deliver_data(t, seq, seq + 1, p.flow, &mut series);
                    }
                }
                continue;
            }
            let Some(seq) = fl.rel_ack(tcp.seq) else {
                continue;
            };
            fl.deliver_data(t, seq, seq + tcp.payload as u64, p.flow, &mut series);
        } else {
            let Some(ack) = fl.ack_of(&tcp) else {
                continue;
            };
            if ack > fl.snd_una {
                if let Some(&(sent, false)) = fl.by_end.get(&ack) {
                    let rtt = (t - sent) as f64 / 1e9;
                    fl.rtts.push(rtt);
                    series.push(t, p.flow, 0, rtt);
                }
                fl.snd_una = ack;
            } else if tcp.sctp.is_none()
                && tcp.payload == 0
                && fl.last_ack == Some((ack, tcp.window))
                && ack < fl.snd_max
            {
                fl.s.dupacks_rcvd += 1;
            }
            fl.last_ack = Some((ack, tcp.window));
            if let Some(&(l, r)) = tcp.sack_blocks().first() {
                let l = fl.rel_ack(l).unwrap_or(0);
                let r = fl.rel_ack(r).unwrap_or(0);
                let inside_second = tcp.sack_blocks().get(1).is_some_and(|&(l2, r2)| {
                    let (l2, r2) = (fl.rel_ack(l2).unwrap_or(0), fl.rel_ack(r2).unwrap_or(0));
                    l >= l2 && r <= r2
                });
                if l < ack || inside_second {
                    fl.s.dsacks_rcvd += 1;
                }
            }
        }
    }

    for fl in flows.iter_mut() {
        let n = fl.rtts.len();
        let (mean, sd) = if n > 0 {
            let m = fl.rtts.iter().sum::<f64>() / n as f64;
            let var = if n > 1 {
                fl.rtts.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64
            } else {
                0.0
            };
            (m, var.sqrt())
        } else {
            (f64::NAN, f64::NAN)
        };
        let stall = if fl.s.first_send_ns == 0 {
            0
        } else {
            fl.longest_stall
                .max(duration_ns.saturating_sub(fl.last_progress))
        };
        fl.s.bytes_delivered = fl.delivered_bytes;
        fl.s.isn = fl.isn;
        fl.s.last_delivery_ns = fl.last_delivery;
        fl.s.rtt_samples = n as u64;
        fl.s.rtt_mean_s = mean;
        fl.s.rtt_sd_s = sd;
        fl.s.longest_stall_s = stall as f64 / 1e9;
    }

    // Rows in time order (a stable sort: ties keep the order they were produced in).
    let mut idx: Vec<usize> = (0..rows.0.len()).collect();
    idx.sort_by_key(|&i| rows.0.t[i]);
    let packets = rows.0.permuted(&idx).into_table(
        meta.paths.iter().map(|p| p.name.clone()).collect(),
        stage_names,
        causes,
    );

    let mut sidx: Vec<usize> = (0..series.t.len()).collect();
    sidx.sort_by_key(|&i| series.t[i]);
    let mut st = Table::default();
    st.push(
        "t_ns",
        ColumnData::I64(sidx.iter().map(|&i| series.t[i]).collect()),
    );
    st.push(
        "flow",
        ColumnData::I32(sidx.iter().map(|&i| series.flow[i]).collect()),
    );
    st.push(
        "var",
        ColumnData::Dict(
            sidx.iter().map(|&i| series.var[i]).collect(),
            SERIES_VARS.iter().map(|s| s.to_string()).collect(),
        ),
    );
    st.push(
        "value",
        ColumnData::F64(sidx.iter().map(|&i| series.value[i]).collect()),
    );

    Ok(Analysis {
        meta,
        packets,
        series: st,
        flows: flows.into_iter().map(|f| f.s).collect(),
        timing: Timing::from_errors(errs),
        stages,
        paths,
        unclassified,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::tests::{build, sack_opt};
    use crate::frame::{ACK, SYN};
    use crate::notes::{write_drop, write_in, write_out, CAPTURE_FORMAT};
    use crate::pcapng::{self, INBOUND, OUTBOUND};
    use crate::pipeline::{FlowMeta, PathMeta};

    const T0: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;
    const ISN: u32 = 1000;

    struct Cap {
        buf: Vec<u8>,
        next: u64,
        s: String,
        snap: usize,
    }

    impl Cap {
        fn new() -> Cap {
            Cap::with_dests(Vec::new())
        }

        fn with_dests(dests: Vec<crate::pipeline::DestMeta>) -> Cap {
            let meta = CaptureMeta {
                format: CAPTURE_FORMAT,
                t0_ns: T0,
                seed: 1,
                paths: vec![
                    PathMeta {
                        name: "fwd".into(),
                        stages: vec!["delay".into()],
                    },
                    PathMeta {
                        name: "rev".into(),
                        stages: vec![],
                    },
                ],
                flows: vec![FlowMeta {
                    port: 5000,
                    fwd: 0,
                    rev: 1,
                    dests,
                }],
                ifaces: vec!["a".into(), "b".into()],
            };
            let meta = serde_json::to_string(&meta).unwrap();
            Cap {
                buf: pcapng::header(&meta, "test", &["a", "b"], 128),
                next: 0,
                s: String::new(),
                snap: 128,
            }
        }

        /// A frame in at `t_in`; out at `actual` (intended `due`) or dropped at `due`.
        fn frame(&mut self, side_a: bool, f: &[u8], t_in: u64, due: u64, actual: Option<u64>) {
            let pkt = self.next;
            self.next += 1;
            let (iface, path) = if side_a { (0, 0) } else { (1, 1) };
            write_in(&mut self.s, pkt, 0, path);
            pcapng::packet(
                &mut self.buf,
                iface,
                T0 + t_in,
                f,
                self.snap,
                INBOUND,
                &self.s,
            );
            let exits: Vec<u64> = if side_a { vec![due] } else { vec![] };
            match actual {
                Some(a) => {
                    write_out(&mut self.s, pkt, due, &exits);
                    let snap = self.snap;
                    pcapng::packet(&mut self.buf, 1 - iface, T0 + a, f, snap, OUTBOUND, &self.s);
                }
                None => {
                    write_drop(&mut self.s, pkt, 0, "random", due, &[]);
                    pcapng::packet(
                        &mut self.buf,
                        iface,
                        T0 + due,
                        f,
                        self.snap,
                        INBOUND,
                        &self.s,
                    );
                }
            }
        }

        fn analyze(&self, duration: u64) -> Analysis {
            analyze(&pcapng::read(&self.buf).unwrap(), duration).unwrap()
        }
    }

    fn data(k: u32) -> Vec<u8> {
        build(40000, 5000, ISN + 1 + 1000 * k, ISN2 + 1, ACK, &[], 1000)
    }
    const ISN2: u32 = 77;
    fn ack(k: u32, opts: &[u8]) -> Vec<u8> {
        build(5000, 40000, ISN2 + 1, ISN + 1 + 1000 * k, ACK, opts, 0)
    }

    /// Handshake, segments 0 and 1 sent at 10 and 11 ms with 50 ms delay; segment 1 is
    /// dropped; segment 0 is retransmitted spuriously at 30 ms; segment 1 properly at 70 ms.
    fn scripted() -> Cap {
        let mut c = Cap::new();
        c.frame(
            true,
            &build(40000, 5000, ISN, 0, SYN, &[], 0),
            0,
            50 * MS,
            Some(50 * MS),
        );
        c.frame(
            false,
            &build(5000, 40000, ISN2, ISN + 1, SYN | ACK, &[], 0),
            51 * MS,
            51 * MS,
            Some(51 * MS),
        );
        c.frame(true, &data(0), 60 * MS, 110 * MS, Some(110 * MS + 300_000));
        c.frame(true, &data(1), 61 * MS, 111 * MS, None);
        c.frame(true, &data(0), 80 * MS, 130 * MS, Some(130 * MS + 100_000));
        c.frame(false, &ack(1, &[]), 111 * MS, 111 * MS, Some(111 * MS));
        // The spurious copy arrives: a DSACK for segment 0.
        c.frame(
            false,
            &ack(1, &sack_opt(&[(ISN + 1, ISN + 1001)])),
            131 * MS,
            131 * MS,
            Some(131 * MS),
        );
        c.frame(true, &data(1), 140 * MS, 190 * MS, Some(190 * MS + 2 * MS));
        c.frame(false, &ack(2, &[]), 193 * MS, 193 * MS, Some(193 * MS));
        c
    }

    #[test]
    fn packets_rows_follow_the_simulators_vocabulary() {
        let a = scripted().analyze(10_000 * MS);
        let ev = a.packets.strings("event");
        let kinds = a.packets.strings("kind");
        let t = a.packets.i64s("t_ns");
        assert!(t.windows(2).all(|w| w[0] <= w[1]), "time order");
        // 4 data transmissions, 3 ACKs; handshake frames are not rows.
        assert_eq!(ev.iter().filter(|e| **e == "send").count(), 2);
        assert_eq!(ev.iter().filter(|e| **e == "retransmit").count(), 2);
        assert_eq!(ev.iter().filter(|e| **e == "ack").count(), 3);
        assert_eq!(ev.iter().filter(|e| **e == "drop").count(), 1);
        assert_eq!(ev.iter().filter(|e| **e == "deliver").count(), 6);
        assert_eq!(ev.iter().filter(|e| **e == "stage_enter").count(), 4);
        assert_eq!(ev.iter().filter(|e| **e == "stage_exit").count(), 3);
        let first_send = ev.iter().position(|e| *e == "send").unwrap();
        assert_eq!(t[first_send], 60 * MS as i64);
        assert_eq!(kinds[first_send], "data");
        // Relative sequence numbers; the drop names its stage and cause.
        let seqs = a.packets.i64s("seq");
        let retx: Vec<i64> = (0..ev.len())
            .filter(|&i| ev[i] == "retransmit")
            .map(|i| seqs[i])
            .collect();
        assert_eq!(retx, vec![0, 1000]);
        let d = ev.iter().position(|e| *e == "drop").unwrap();
        assert_eq!(a.packets.strings("stage")[d], "delay");
        assert_eq!(a.packets.strings("cause")[d], "random");
        assert_eq!(a.flows[0].control_frames, 2);
        assert_eq!(a.flows[0].syns_sent, 1);
    }

    #[test]
    fn ground_truth_rtt_dupacks_dsacks_and_delivery() {
        let a = scripted().analyze(10_000 * MS);
        let f = &a.flows[0];
        assert_eq!(f.segments_sent, 4);
        assert_eq!(f.retx_segments, 2);
        let spurious: Vec<bool> = f.retransmissions.iter().map(|r| r.spurious).collect();
        assert_eq!(spurious, vec![true, false]);
        assert_eq!(f.spurious_retx_true, 1);
        assert_eq!(f.dsacks_rcvd, 1);
        // The DSACK repeats the ACK number and window with data outstanding: a duplicate ACK.
        assert_eq!(f.dupacks_rcvd, 1);
        assert_eq!(f.bytes_delivered, 2000);
        // Both segments were sent twice, so Karn's rule leaves no RTT sample.
        assert_eq!(f.rtt_samples, 0);
        assert_eq!(f.last_delivery_ns, 192 * MS);
        // Longest stall: 110.3 ms (first delivery) to 192 ms, 81.7 ms, within a 200 ms run.
        let a = scripted().analyze(200 * MS);
        assert!((a.flows[0].longest_stall_s - 0.0817).abs() < 1e-9);
        assert_eq!(f.drops, vec![1]);
        // The fwd path saw 5 frames (SYN and 4 data); the 3rd was dropped.
        assert_eq!(a.paths[0].frames, 5);
        assert_eq!(a.paths[0].dropped, vec![3]);
        assert_eq!(a.paths[1].frames, 4);
        // Timing errors: 0.3 ms, 0, 0.1 ms, 0, 0, 2 ms, 0, 0 (SYN, SYN-ACK included).
        assert_eq!(a.timing.departures, 8);
        assert_eq!(a.timing.max_ns, 2 * MS as i64);
        assert!((a.timing.within_1ms - 7.0 / 8.0).abs() < 1e-9);
    }

    #[test]
    fn rtt_samples_come_from_segments_sent_once() {
        let mut c = Cap::new();
        c.frame(
            true,
            &build(40000, 5000, ISN, 0, SYN, &[], 0),
            0,
            0,
            Some(0),
        );
        c.frame(true, &data(0), 10 * MS, 60 * MS, Some(60 * MS));
        c.frame(false, &ack(1, &[]), 61 * MS, 61 * MS, Some(62 * MS));
        c.frame(false, &ack(1, &[]), 63 * MS, 63 * MS, Some(64 * MS));
        let a = c.analyze(10_000 * MS);
        assert_eq!(a.flows[0].rtt_samples, 1);
        assert!((a.flows[0].rtt_mean_s - 0.052).abs() < 1e-12);
        assert_eq!(
            a.flows[0].dupacks_rcvd, 0,
            "no data outstanding: not a dupack"
        );
        let vars = a.series.strings("var");
        assert_eq!(vars, vec!["rcv_nxt", "rtt_sample"]);
    }

    #[test]
    fn a_frame_the_emulator_could_not_send_is_a_drop_at_no_stage() {
        let mut c = Cap::new();
        c.frame(
            true,
            &build(40000, 5000, ISN, 0, SYN, &[], 0),
            0,
            0,
            Some(0),
        );
        c.frame(true, &data(0), MS, 51 * MS, Some(51 * MS));
        let pkt = c.next;
        c.next += 1;
        write_in(&mut c.s, pkt, 0, 0);
        pcapng::packet(&mut c.buf, 0, T0 + 2 * MS, &data(1), 128, INBOUND, &c.s);
        write_drop(&mut c.s, pkt, u16::MAX, TX_ERROR, 52 * MS, &[52 * MS]);
        pcapng::packet(&mut c.buf, 0, T0 + 52 * MS, &data(1), 128, INBOUND, &c.s);
        let a = c.analyze(10_000 * MS);
        let ev = a.packets.strings("event");
        let d = ev.iter().position(|e| *e == "drop").unwrap();
        assert_eq!(a.packets.strings("cause")[d], TX_ERROR);
        assert_eq!(a.packets.strings("stage")[d], "");
        assert_eq!(a.flows[0].drops, vec![0]);
    }

    #[test]
    fn events_after_the_end_are_left_out() {
        let a = scripted().analyze(100 * MS);
        let t = a.packets.i64s("t_ns");
        assert!(t.iter().all(|&x| x <= 100 * MS as i64));
        assert_eq!(a.flows[0].bytes_delivered, 0);
    }

    #[test]
    fn sctp_chunks_are_transmissions_and_tsns_count_from_one() {
        use crate::frame::tests::{build_sctp, chunk, data_chunk, init_chunk, sack_chunk};
        let up = |c: &[Vec<u8>]| build_sctp(40000, 5000, c);
        let down = |c: &[Vec<u8>]| build_sctp(5000, 40000, c);
        let mut c = Cap::new();
        c.snap = 65_535; // whole frames: a bundle's later chunks are past a short snap length
        c.frame(true, &up(&[init_chunk(1, 100)]), 0, 50 * MS, Some(50 * MS));
        c.frame(
            false,
            &down(&[init_chunk(2, 7)]),
            51 * MS,
            51 * MS,
            Some(51 * MS),
        );
        // TSN 100 arrives; 101 is dropped; 100 is resent needlessly, 101 properly.
        c.frame(
            true,
            &up(&[data_chunk(100, 1000)]),
            60 * MS,
            110 * MS,
            Some(110 * MS),
        );
        c.frame(true, &up(&[data_chunk(101, 1000)]), 61 * MS, 111 * MS, None);
        c.frame(
            true,
            &up(&[data_chunk(100, 1000)]),
            80 * MS,
            130 * MS,
            Some(130 * MS),
        );
        c.frame(
            false,
            &down(&[sack_chunk(100, &[], &[])]),
            111 * MS,
            111 * MS,
            Some(111 * MS),
        );
        // A SACK that acknowledges nothing in order yet (cumulative TSN ack = Initial TSN - 1):
        // its row says 0.
        c.frame(
            false,
            &down(&[sack_chunk(99, &[(2, 2)], &[])]),
            112 * MS,
            112 * MS,
            Some(112 * MS),
        );
        c.frame(
            true,
            &up(&[data_chunk(101, 1000)]),
            140 * MS,
            190 * MS,
            Some(192 * MS),
        );
        // Two chunks bundled in one packet.
        let two = up(&[data_chunk(102, 500), data_chunk(103, 500)]);
        c.frame(true, &two, 150 * MS, 200 * MS, Some(200 * MS));
        c.frame(
            false,
            &down(&[sack_chunk(101, &[], &[100])]),
            193 * MS,
            193 * MS,
            Some(193 * MS),
        );
        c.frame(
            false,
            &down(&[sack_chunk(103, &[], &[])]),
            205 * MS,
            205 * MS,
            Some(205 * MS),
        );
        let hb = up(&[chunk(4, &[0, 1, 0, 8, 1, 2, 3, 4])]);
        c.frame(true, &hb, 300 * MS, 350 * MS, Some(350 * MS));
        let a = c.analyze(10_000 * MS);
        let f = &a.flows[0];
        assert_eq!(f.segments_sent, 6, "DATA chunk transmissions");
        assert_eq!((f.retx_segments, f.spurious_retx_true), (2, 1));
        let r: Vec<(u64, u32, bool)> = f
            .retransmissions
            .iter()
            .map(|r| (r.seq, r.tx, r.spurious))
            .collect();
        assert_eq!(r, vec![(1, 1, true), (2, 1, false)]);
        assert_eq!(f.bytes_delivered, 3000, "payload bytes, not TSNs");
        assert_eq!(f.last_delivery_ns, 200 * MS);
        // Karn: only the bundle (sent once) gives a sample, its last TSN acked at 205 ms.
        assert_eq!(f.rtt_samples, 1);
        assert!((f.rtt_mean_s - 0.055).abs() < 1e-9);
        assert_eq!(
            (f.heartbeats_sent, f.dupacks_rcvd, f.dsacks_rcvd),
            (1, 0, 0)
        );
        assert_eq!(f.control_frames, 3, "INIT, INIT ACK, HEARTBEAT");
        let ev = a.packets.strings("event");
        let seq = a.packets.i64s("seq");
        let ack = a.packets.i64s("ack");
        let tx = match a.packets.column("tx") {
            Some(ColumnData::I32(v)) => v.clone(),
            _ => panic!("tx is an i32 column"),
        };
        let rows = |e: &str| -> Vec<usize> { (0..ev.len()).filter(|&i| ev[i] == e).collect() };
        let sends: Vec<(i64, i32)> = rows("send").iter().map(|&i| (seq[i], tx[i])).collect();
        assert_eq!(sends, vec![(1, 0), (2, 0), (3, 0)]);
        let retx: Vec<i64> = rows("retransmit").iter().map(|&i| seq[i]).collect();
        assert_eq!(retx, vec![1, 2]);
        let acks: Vec<i64> = rows("ack").iter().map(|&i| ack[i]).collect();
        assert_eq!(
            acks,
            vec![1, 0, 2, 4],
            "the cumulative TSN ack, counted from 1"
        );
        assert_eq!(rows("drop").len(), 1);
    }

    #[test]
    fn a_multihomed_senders_bytes_and_failovers_per_destination() {
        use crate::frame::tests::{build_sctp_between, data_chunk, init_chunk};
        use crate::pipeline::DestMeta;
        let (c, s0, s1) = ([10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 1, 2]);
        let dests = vec![
            DestMeta {
                addr: s0,
                fwd: 0,
                rev: 1,
            },
            DestMeta {
                addr: s1,
                fwd: 0,
                rev: 1,
            },
        ];
        let mut cap = Cap::with_dests(dests);
        let to = |d, chunks: &[Vec<u8>]| build_sctp_between(c, d, 40000, 5000, chunks);
        cap.frame(true, &to(s0, &[init_chunk(1, 1)]), 0, MS, Some(MS));
        // New data to destination 0, a retransmission to 1 (no failover), new data to 1 (a
        // failover at 30 ms), new data back to 0 (a second change).
        cap.frame(true, &to(s0, &[data_chunk(1, 100)]), 10 * MS, 11 * MS, None);
        cap.frame(
            true,
            &to(s1, &[data_chunk(1, 100)]),
            20 * MS,
            21 * MS,
            Some(21 * MS),
        );
        cap.frame(
            true,
            &to(s1, &[data_chunk(2, 100)]),
            30 * MS,
            31 * MS,
            Some(31 * MS),
        );
        cap.frame(
            true,
            &to(s0, &[data_chunk(3, 100)]),
            40 * MS,
            41 * MS,
            Some(41 * MS),
        );
        let a = cap.analyze(10_000 * MS);
        let f = &a.flows[0];
        // Wire bytes: the INIT (20 + 12 + 20) and two DATA packets (20 + 12 + 16 + 100) to
        // destination 0, two DATA packets to destination 1.
        assert_eq!(f.bytes_by_dest, vec![52 + 2 * 148, 2 * 148]);
        assert_eq!((f.failovers, f.first_failover_ns), (2, 30 * MS));
        let ev = a.packets.strings("event");
        let dest = match a.packets.column("dest") {
            Some(ColumnData::I32(v)) => v.clone(),
            _ => panic!("dest is an i32 column"),
        };
        let sends: Vec<i32> = (0..ev.len())
            .filter(|&i| ev[i] == "send" || ev[i] == "retransmit")
            .map(|i| dest[i])
            .collect();
        assert_eq!(sends, vec![0, 1, 1, 0]);
    }

    #[test]
    fn timing_quantiles() {
        let t = Timing::from_errors((0..1000).map(|i| i * 1000).collect());
        assert_eq!(t.departures, 1000);
        assert_eq!(t.p50_ns, 500_000);
        assert_eq!(t.max_ns, 999_000);
        assert!((t.within_100us - 0.101).abs() < 1e-9);
        assert_eq!(Timing::from_errors(vec![]), Timing::default());
    }
}
