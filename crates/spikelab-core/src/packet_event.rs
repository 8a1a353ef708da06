//! The `event` column of the packets table: its names and their dictionary codes, shared by
//! the simulator and the emulator's capture analysis so both tables read the same.

pub const NAMES: [&str; 10] = [
    "send",
    "retransmit",
    "ack",
    "stage_enter",
    "stage_exit",
    "drop",
    "deliver",
    "tlp",
    "heartbeat",
    "control",
];
pub const SEND: i32 = 0;
pub const RETX: i32 = 1;
pub const ACK: i32 = 2;
pub const ENTER: i32 = 3;
pub const EXIT: i32 = 4;
pub const DROP: i32 = 5;
pub const DELIVER: i32 = 6;
/// A tail loss probe (RFC 8985 §7.3): new data (`tx` = 0) or a retransmission.
pub const TLP: i32 = 7;
/// An SCTP HEARTBEAT or HEARTBEAT-ACK.
pub const HEARTBEAT: i32 = 8;
/// An SCTP association set-up chunk (INIT, INIT-ACK, COOKIE-ECHO, COOKIE-ACK) or ABORT.
pub const CONTROL: i32 = 9;

use crate::table::{ColumnData, Table};

/// The rows of a packets table, column by column, as the simulator and the emulator collect
/// them. Codes: `event` as above, `path`/`stage`/`cause` index the names given to
/// [`PacketRows::into_table`] (-1 = null), `kind` 0 = data, 1 = ack. In `seq`, `ack`, `tx`,
/// `dest`, `harq_tx` and `harq_delay_us`, -1 marks a value that does not apply: null in the
/// table (`spikelab_sim::schema`).
#[derive(Clone, Debug, Default)]
pub struct PacketRows {
    pub t: Vec<i64>,
    pub flow: Vec<i32>,
    pub pkt: Vec<i64>,
    pub event: Vec<i32>,
    pub path: Vec<i32>,
    pub stage: Vec<i32>,
    pub kind: Vec<i32>,
    pub seq: Vec<i64>,
    pub ack: Vec<i64>,
    pub len: Vec<i32>,
    pub size: Vec<i32>,
    pub tx: Vec<i32>,
    pub cause: Vec<i32>,
    /// SCTP: the destination index of the path pair (-1 for TCP).
    pub dest: Vec<i32>,
    /// On a HARQ stage's `stage_exit` or `drop` row: the transmissions the packet took (its
    /// slowest codeword's); -1 on every other row.
    pub harq_tx: Vec<i32>,
    /// On the same rows: from the packet's arrival at the HARQ stage until it was decoded (or
    /// its last transmission failed), in µs; -1 on every other row.
    pub harq_delay_us: Vec<i32>,
}

/// Grows a trace column by an eighth (at least 4096 rows) instead of doubling, so a long
/// trace holds at most ~12 % unused capacity; large blocks are remapped, not copied.
pub fn reserve_lean<T>(v: &mut Vec<T>) {
    if v.len() == v.capacity() {
        v.reserve_exact((v.len() / 8).max(4096));
    }
}

impl PacketRows {
    /// Makes room for one more row in every column (see [`reserve_lean`]).
    pub fn reserve_row(&mut self) {
        if self.t.len() == self.t.capacity() {
            reserve_lean(&mut self.t);
            let n = self.t.capacity() - self.t.len();
            self.flow.reserve_exact(n);
            self.pkt.reserve_exact(n);
            self.event.reserve_exact(n);
            self.path.reserve_exact(n);
            self.stage.reserve_exact(n);
            self.kind.reserve_exact(n);
            self.seq.reserve_exact(n);
            self.ack.reserve_exact(n);
            self.len.reserve_exact(n);
            self.size.reserve_exact(n);
            self.tx.reserve_exact(n);
            self.cause.reserve_exact(n);
            self.dest.reserve_exact(n);
            self.harq_tx.reserve_exact(n);
            self.harq_delay_us.reserve_exact(n);
        }
    }

    pub fn len(&self) -> usize {
        self.t.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    /// The rows in the order `idx` gives.
    pub fn permuted(&self, idx: &[usize]) -> PacketRows {
        fn pick<T: Copy>(v: &[T], idx: &[usize]) -> Vec<T> {
            idx.iter().map(|&i| v[i]).collect()
        }
        PacketRows {
            t: pick(&self.t, idx),
            flow: pick(&self.flow, idx),
            pkt: pick(&self.pkt, idx),
            event: pick(&self.event, idx),
            path: pick(&self.path, idx),
            stage: pick(&self.stage, idx),
            kind: pick(&self.kind, idx),
            seq: pick(&self.seq, idx),
            ack: pick(&self.ack, idx),
            len: pick(&self.len, idx),
            size: pick(&self.size, idx),
            tx: pick(&self.tx, idx),
            cause: pick(&self.cause, idx),
            dest: pick(&self.dest, idx),
            harq_tx: pick(&self.harq_tx, idx),
            harq_delay_us: pick(&self.harq_delay_us, idx),
        }
    }

    /// The packets table (columns documented in docs/results.md).
    pub fn into_table(self, paths: Vec<String>, stages: Vec<String>, causes: Vec<String>) -> Table {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut t = Table::default();
        t.push("t_ns", ColumnData::I64(self.t));
        t.push("flow", ColumnData::I32(self.flow));
        t.push("pkt", ColumnData::I64(self.pkt));
        t.push("event", ColumnData::Dict(self.event, strings(&NAMES)));
        t.push("path", ColumnData::Dict(self.path, paths));
        t.push("stage", ColumnData::Dict(self.stage, stages));
        t.push(
            "kind",
            ColumnData::Dict(self.kind, strings(&["data", "ack"])),
        );
        t.push("seq", ColumnData::I64(self.seq));
        t.push("ack", ColumnData::I64(self.ack));
        t.push("len", ColumnData::I32(self.len));
        t.push("size", ColumnData::I32(self.size));
        t.push("tx", ColumnData::I32(self.tx));
        t.push("cause", ColumnData::Dict(self.cause, causes));
        t.push("dest", ColumnData::I32(self.dest));
        t.push("harq_tx", ColumnData::I32(self.harq_tx));
        t.push("harq_delay_us", ColumnData::I32(self.harq_delay_us));
        t
    }
}
