//! A capture reduced to the columns a trace import reads: one row per TCP segment and one per
//! SCTP packet, in file order, with the connection (source, port, destination, port) of each
//! row as a code into a table in order of first appearance. Frames are filtered as the
//! import wants them: those of one interface if asked, never a frame the emulator's capture
//! records as dropped (comment `drop …`: that copy never left the emulator).

use super::decode::{self, Addr};
use super::{linktype_read, Error, Reader};
use std::collections::{BTreeSet, HashMap};
use std::io::Read;

/// One direction of a connection or association.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conn {
    /// IPv4 dotted, IPv6 as 32 hexadecimal digits.
    pub src: String,
    pub sport: u16,
    pub dst: String,
    pub dport: u16,
}

type Key = (Addr, u16, Addr, u16);

/// Connection codes in order of first appearance.
#[derive(Default)]
struct Conns {
    codes: HashMap<Key, i32>,
    keys: Vec<Key>,
    /// The last two codes looked up: a capture of one connection alternates between its
    /// two directions, which then cost no hashing.
    recent: [Option<(Key, i32)>; 2],
}

impl Conns {
    fn code(&mut self, key: Key) -> i32 {
        for (k, c) in self.recent.iter().flatten() {
            if *k == key {
                return *c;
            }
        }
        let code = *self.codes.entry(key).or_insert_with(|| {
            self.keys.push(key);
            (self.keys.len() - 1) as i32
        });
        self.recent = [Some((key, code)), self.recent[0]];
        code
    }

    fn table(self) -> Vec<Conn> {
        self.keys
            .into_iter()
            .map(|(s, sp, d, dp)| Conn {
                src: s.to_string(),
                sport: sp,
                dst: d.to_string(),
                dport: dp,
            })
            .collect()
    }
}

/// The TCP segments: one value per segment in each column.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpColumns {
    /// Capture time, ns.
    pub ts_ns: Vec<i64>,
    /// Code into [`Transport::tcp_conns`].
    pub conn: Vec<i32>,
    pub seq: Vec<u32>,
    pub ack: Vec<u32>,
    pub flags: Vec<u8>,
    pub window: Vec<u16>,
    /// Payload bytes (by the IP length).
    pub length: Vec<i64>,
    /// IP bytes.
    pub wire: Vec<i64>,
    /// 1 with a timestamps option (RFC 7323): then `tsval`, `tsecr` hold it, else 0.
    pub has_ts: Vec<u8>,
    pub tsval: Vec<u32>,
    pub tsecr: Vec<u32>,
    /// SACK blocks in the segment (0: none) and the first two (0 where absent).
    pub sack_count: Vec<u8>,
    pub sack_le0: Vec<u32>,
    pub sack_re0: Vec<u32>,
    pub sack_le1: Vec<u32>,
    pub sack_re1: Vec<u32>,
    pub iface: Vec<u32>,
    pub direction: Vec<u8>,
}

/// The SCTP packets: one value per packet, DATA chunks and duplicate TSNs as lists (offsets
/// of n + 1 values into the flat chunk and duplicate columns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SctpColumns {
    pub ts_ns: Vec<i64>,
    /// Code into [`Transport::sctp_conns`].
    pub conn: Vec<i32>,
    pub wire: Vec<i64>,
    /// 1 with a SACK chunk: then `cum_tsn` holds its cumulative TSN ack, else 0.
    pub has_cum: Vec<u8>,
    pub cum_tsn: Vec<u32>,
    /// Packet i's DATA chunks are `chunk_*[data_offsets[i]..data_offsets[i + 1]]`.
    pub data_offsets: Vec<i64>,
    pub chunk_tsn: Vec<u32>,
    /// User data bytes of each DATA chunk.
    pub chunk_bytes: Vec<i64>,
    /// Packet i's duplicate TSNs (RFC 9260 §3.3.4) are `dup_tsn[dup_offsets[i]..dup_offsets[i + 1]]`.
    pub dup_offsets: Vec<i64>,
    pub dup_tsn: Vec<u32>,
    pub iface: Vec<u32>,
    pub direction: Vec<u8>,
}

/// What a capture holds for a trace import.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transport {
    pub tcp: TcpColumns,
    pub tcp_conns: Vec<Conn>,
    pub sctp: SctpColumns,
    pub sctp_conns: Vec<Conn>,
    /// Frames in the file (all interfaces, dropped copies included).
    pub frames: u64,
    /// Link types seen whose frames are not read, ascending.
    pub other_links: Vec<u32>,
    /// With an interface asked for: every interface seen (its name, else its number).
    pub iface_names: Vec<String>,
    /// Whether any frame was on the interface asked for (true without one).
    pub matched: bool,
    /// See [`Reader::truncated_at`].
    pub truncated_at: Option<u64>,
    pub section_comment: String,
    /// The file's size, bytes.
    pub size: u64,
}

/// Reads `reader` to its end into columns; with `iface`, only the frames of that pcapng
/// interface (its name or its number).
pub fn read<R: Read>(mut reader: Reader<R>, iface: Option<&str>) -> Result<Transport, Error> {
    let mut out = Transport {
        matched: iface.is_none(),
        ..Transport::default()
    };
    let (mut tcp_conns, mut sctp_conns) = (Conns::default(), Conns::default());
    let mut other_links = BTreeSet::new();
    let mut names = BTreeSet::new();
    let mut chunks: Vec<(u32, i64)> = Vec::new();
    let (t, s) = (&mut out.tcp, &mut out.sctp);
    s.data_offsets.push(0);
    s.dup_offsets.push(0);
    let mut number = String::new();
    while let Some(f) = reader.next_frame()? {
        out.frames += 1;
        if !linktype_read(f.linktype) {
            other_links.insert(f.linktype);
        }
        if let Some(want) = iface {
            number.clear();
            number.push_str(&f.iface.to_string());
            let shown = if f.iface_name.is_empty() {
                number.as_str()
            } else {
                f.iface_name
            };
            if !names.contains(shown) {
                names.insert(shown.to_string());
            }
            if want != f.iface_name && want != number {
                continue;
            }
            out.matched = true;
        }
        if f.comment.starts_with(b"drop ") {
            continue;
        }
        if let Some(h) = decode::tcp(f.linktype, f.data) {
            t.ts_ns.push(f.ts_ns as i64);
            t.conn
                .push(tcp_conns.code((h.src, h.sport, h.dst, h.dport)));
            t.seq.push(h.seq);
            t.ack.push(h.ack);
            t.flags.push(h.flags);
            t.window.push(h.window);
            t.length.push(h.length);
            t.wire.push(h.wire);
            let (tsval, tsecr) = h.ts.unwrap_or((0, 0));
            t.has_ts.push(h.ts.is_some() as u8);
            t.tsval.push(tsval);
            t.tsecr.push(tsecr);
            t.sack_count.push(h.sack_count);
            t.sack_le0.push(h.sack[0].0);
            t.sack_re0.push(h.sack[0].1);
            t.sack_le1.push(h.sack[1].0);
            t.sack_re1.push(h.sack[1].1);
            t.iface.push(f.iface);
            t.direction.push(f.direction);
            continue;
        }
        chunks.clear();
        if let Some(h) = decode::sctp(f.linktype, f.data, &mut chunks, &mut s.dup_tsn) {
            s.ts_ns.push(f.ts_ns as i64);
            s.conn
                .push(sctp_conns.code((h.src, h.sport, h.dst, h.dport)));
            s.wire.push(h.wire);
            s.has_cum.push(h.cum_tsn.is_some() as u8);
            s.cum_tsn.push(h.cum_tsn.unwrap_or(0));
            for &(tsn, bytes) in &chunks {
                s.chunk_tsn.push(tsn);
                s.chunk_bytes.push(bytes);
            }
            s.data_offsets.push(s.chunk_tsn.len() as i64);
            s.dup_offsets.push(s.dup_tsn.len() as i64);
            s.iface.push(f.iface);
            s.direction.push(f.direction);
        } else {
            // Not SCTP after all: any duplicate TSNs its walk pushed are not a packet's.
            s.dup_tsn
                .truncate(*s.dup_offsets.last().unwrap_or(&0) as usize);
        }
    }
    out.tcp_conns = tcp_conns.table();
    out.sctp_conns = sctp_conns.table();
    out.other_links = other_links.into_iter().collect();
    out.iface_names = names.into_iter().collect();
    out.truncated_at = reader.truncated_at();
    out.section_comment = reader.section_comment().to_string();
    out.size = reader.size();
    Ok(out)
}
