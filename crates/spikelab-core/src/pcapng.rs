//! A small pcapng writer and reader (nanosecond timestamps, comments per packet), shared by the
//! emulator's capture and the simulator's `--pcap`.
//!
//! The emulator's capture is one section: a Section Header Block whose comment holds the run's
//! metadata as JSON, one Interface Description Block per veth (`if_tsresol` = 10^-9), and one
//! Enhanced Packet Block per frame event, with `epb_flags` giving the direction (inbound for a
//! frame arriving at the emulator, outbound for one leaving it) and a comment saying what the
//! emulator did:
//!
//! ```text
//! in pkt=12 flow=0 path=1                      frame 12 arrived (timestamp: kernel receive time)
//! out pkt=12 due=1234567 exits=1000,1234567    it left (timestamp: actual send time; due and
//!                                              the stage exit times are ns since t0)
//! drop pkt=12 stage=1 cause=profile at=99 exits=50   it was dropped (timestamp: t0 + at)
//! ```
//!
//! Wireshark and tshark read the file as it is. Format: draft-ietf-opsawg-pcapng.

use std::io::{self, Write};

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const LINKTYPE_ETHERNET: u16 = 1;
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;
const EPB_FLAGS: u16 = 2;
const SHB_USERAPPL: u16 = 4;

/// `epb_flags` direction bits.
pub const INBOUND: u32 = 1;
pub const OUTBOUND: u32 = 2;

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

fn push_opt(buf: &mut Vec<u8>, code: u16, value: &[u8]) {
    buf.extend_from_slice(&code.to_le_bytes());
    buf.extend_from_slice(&(value.len() as u16).to_le_bytes());
    buf.extend_from_slice(value);
    buf.resize(buf.len() + pad4(value.len()) - value.len(), 0);
}

/// Appends one block (type, body) with its two length fields.
fn push_block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
    let total = (12 + body.len()) as u32;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&total.to_le_bytes());
}

/// The section header and interface blocks.
pub fn header(meta_comment: &str, app: &str, ifaces: &[&str], snaplen: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut body = Vec::new();
    body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&(-1i64).to_le_bytes());
    push_opt(&mut body, OPT_COMMENT, meta_comment.as_bytes());
    push_opt(&mut body, SHB_USERAPPL, app.as_bytes());
    push_opt(&mut body, OPT_END, &[]);
    push_block(&mut out, SHB, &body);
    for name in ifaces {
        let mut body = Vec::new();
        body.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&snaplen.to_le_bytes());
        push_opt(&mut body, IF_NAME, name.as_bytes());
        push_opt(&mut body, IF_TSRESOL, &[9]);
        push_opt(&mut body, OPT_END, &[]);
        push_block(&mut out, IDB, &body);
    }
    out
}

/// Appends an Enhanced Packet Block to `out` without allocating (beyond `out` growing).
pub fn packet(
    out: &mut Vec<u8>,
    iface: u32,
    ts_ns: u64,
    frame: &[u8],
    snaplen: usize,
    flags: u32,
    comment: &str,
) {
    let cap = frame.len().min(snaplen);
    packet_block(
        out,
        iface,
        ts_ns,
        &frame[..cap],
        frame.len() as u32,
        Some(flags),
        comment.as_bytes(),
    );
}

/// Appends an Enhanced Packet Block of `captured` bytes of a frame of `orig_len` bytes, with
/// `epb_flags` if given and a comment if not empty.
pub fn packet_block(
    out: &mut Vec<u8>,
    iface: u32,
    ts_ns: u64,
    captured: &[u8],
    orig_len: u32,
    flags: Option<u32>,
    comment: &[u8],
) {
    let cap = captured.len();
    let opts_len = flags.map_or(0, |_| 8)
        + if comment.is_empty() {
            0
        } else {
            4 + pad4(comment.len())
        }
        + 4;
    let total = 12 + 20 + pad4(cap) + opts_len;
    out.reserve(total);
    out.extend_from_slice(&EPB.to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&iface.to_le_bytes());
    out.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
    out.extend_from_slice(&(ts_ns as u32).to_le_bytes());
    out.extend_from_slice(&(cap as u32).to_le_bytes());
    out.extend_from_slice(&orig_len.to_le_bytes());
    out.extend_from_slice(captured);
    out.resize(out.len() + pad4(cap) - cap, 0);
    if let Some(f) = flags {
        push_opt(out, EPB_FLAGS, &f.to_le_bytes());
    }
    if !comment.is_empty() {
        push_opt(out, OPT_COMMENT, comment);
    }
    push_opt(out, OPT_END, &[]);
    out.extend_from_slice(&(total as u32).to_le_bytes());
}

/// One packet record read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub iface: u32,
    /// Absolute timestamp, ns.
    pub ts_ns: u64,
    pub flags: u32,
    pub orig_len: u32,
    /// Captured bytes (up to the snap length).
    pub data: Vec<u8>,
    pub comment: String,
}

/// A capture read back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Capture {
    pub section_comment: String,
    pub ifaces: Vec<String>,
    pub records: Vec<Record>,
}

/// Reads a capture written by [`header`] and [`packet`] (any pcap or pcapng, through the
/// streamed reader of [`crate::capture`]). A file cut short (a killed run) yields the
/// complete blocks before the cut; an empty one no records.
pub fn read(bytes: &[u8]) -> io::Result<Capture> {
    fn bad(e: crate::capture::Error) -> io::Error {
        match e {
            crate::capture::Error::Io(e) => e,
            e => io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
        }
    }
    let mut cap = Capture::default();
    if bytes.is_empty() {
        return Ok(cap);
    }
    let mut r = crate::capture::Reader::new(bytes, bytes.len() as u64).map_err(bad)?;
    while let Some(f) = r.next_frame().map_err(bad)? {
        cap.records.push(Record {
            iface: f.iface,
            ts_ns: f.ts_ns,
            flags: f.flags,
            orig_len: f.orig_len,
            data: f.data.to_vec(),
            comment: String::from_utf8_lossy(f.comment).into_owned(),
        });
    }
    cap.section_comment = r.section_comment().to_string();
    cap.ifaces = r.iface_names().map(str::to_string).collect();
    Ok(cap)
}

/// Writes `bytes` to `w` (used by the engine's writer thread).
pub fn write_all(w: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    w.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back_records_with_ns_timestamps_flags_and_comments() {
        let mut buf = header("{\"t0_ns\":1}", "spikelab test", &["a", "b"], 96);
        let frame: Vec<u8> = (0..200u8).collect();
        packet(
            &mut buf,
            0,
            1_700_000_000_123_456_789,
            &frame,
            96,
            INBOUND,
            "in pkt=0",
        );
        packet(
            &mut buf,
            1,
            1_700_000_000_223_456_789,
            &frame[..7],
            96,
            OUTBOUND,
            "out pkt=0 due=5",
        );
        let cap = read(&buf).unwrap();
        assert_eq!(cap.section_comment, "{\"t0_ns\":1}");
        assert_eq!(cap.ifaces, vec!["a", "b"]);
        assert_eq!(cap.records.len(), 2);
        let r = &cap.records[0];
        assert_eq!(r.ts_ns, 1_700_000_000_123_456_789);
        assert_eq!((r.iface, r.flags, r.orig_len), (0, INBOUND, 200));
        assert_eq!(r.data, frame[..96].to_vec());
        assert_eq!(r.comment, "in pkt=0");
        let r = &cap.records[1];
        assert_eq!((r.iface, r.flags, r.data.len()), (1, OUTBOUND, 7));
        assert_eq!(r.comment, "out pkt=0 due=5");
    }

    #[test]
    fn a_file_cut_short_yields_its_complete_blocks() {
        let mut buf = header("", "t", &["a"], 64);
        packet(&mut buf, 0, 5, &[1, 2, 3], 64, INBOUND, "in pkt=0");
        let whole = buf.len();
        packet(&mut buf, 0, 6, &[1, 2, 3], 64, INBOUND, "in pkt=1");
        let cap = read(&buf[..whole + 10]).unwrap();
        assert_eq!(cap.records.len(), 1);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(read(&[0xff; 64]).is_err());
        assert_eq!(read(&[]).unwrap(), Capture::default());
    }
}
