//! Packet captures read as a stream, one frame at a time from a buffered reader, so memory
//! stays that of one frame whatever the file's size: classic pcap (either byte order,
//! micro- or nanosecond timestamps; pcap-savefile(5), draft-ietf-opsawg-pcap) and pcapng
//! (Section Header, Interface Description, Enhanced and Simple Packet Blocks, each section in
//! its own byte order, `if_tsresol`, `if_name`, `epb_flags` and comments;
//! draft-ietf-opsawg-pcapng). [`transport`] reduces a capture to the TCP and SCTP header
//! columns a trace import reads.
//!
//! A file cut short (a copy, or a capture stopped mid-write) yields its complete frames and
//! reports where its incomplete last record starts ([`Reader::truncated_at`]); anything else
//! malformed is an [`Error`] naming the byte. Maturity: read back against the captures of
//! `spikelab run --pcap`, the emulator, and Wireshark's editcap (tests/test_traces.py).

use std::fmt;
use std::io::{self, Read};

pub mod decode;
pub mod transport;

pub const LINKTYPE_ETHERNET: u32 = 1;
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_IPV6: u32 = 229;
pub const LINKTYPE_LINUX_SLL2: u32 = 276;
/// Link types whose frames are bare IP packets (12 and 14: raw IP on some systems).
pub const LINKTYPES_RAW_IP: [u32; 5] = [LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6, 12, 14];

/// Whether frames of `linktype` are read (Ethernet, Linux cooked SLL and SLL2, raw IP).
pub fn linktype_read(linktype: u32) -> bool {
    matches!(
        linktype,
        LINKTYPE_ETHERNET | LINKTYPE_LINUX_SLL | LINKTYPE_LINUX_SLL2
    ) || LINKTYPES_RAW_IP.contains(&linktype)
}

const PCAPNG_SHB: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];
const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const SPB: u32 = 0x0000_0003;
const EPB: u32 = 0x0000_0006;
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const IF_NAME: u16 = 2;
const EPB_FLAGS: u16 = 2;
const IF_TSRESOL: u16 = 9;
/// Classic pcap magic numbers: microsecond and nanosecond timestamps.
const PCAP_US: u32 = 0xA1B2_C3D4;
const PCAP_NS: u32 = 0xA1B2_3C4D;

/// A capture that cannot be read.
#[derive(Debug)]
pub enum Error {
    /// The file could not be read.
    Io(io::Error),
    /// Malformed content, at a byte of the file if known; the message is one line.
    Format { at: Option<u64>, what: String },
}

impl Error {
    fn at(at: u64, what: impl Into<String>) -> Error {
        Error::Format {
            at: Some(at),
            what: what.into(),
        }
    }

    fn whole(what: impl Into<String>) -> Error {
        Error::Format {
            at: None,
            what: what.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Format { at: Some(at), what } => write!(f, "byte {at}: {what}"),
            Error::Format { at: None, what } => f.write_str(what),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

/// One frame, borrowed from the reader until the next call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Absolute timestamp, ns.
    pub ts_ns: u64,
    pub linktype: u32,
    /// The pcapng interface (0 in a classic pcap).
    pub iface: u32,
    /// Its `if_name`, "" without one.
    pub iface_name: &'a str,
    /// `epb_flags` direction: 1 inbound, 2 outbound, 0 unknown.
    pub direction: u8,
    /// The whole `epb_flags` word (0 without one).
    pub flags: u32,
    /// The frame's length on the wire (bytes); `data` may be shorter (the snap length).
    pub orig_len: u32,
    pub data: &'a [u8],
    /// The packet's comment (the last `opt_comment`), raw bytes; empty without one.
    pub comment: &'a [u8],
}

/// A timestamp unit: 10^-k s or 2^-k s (`if_tsresol`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolution {
    Decimal(u32),
    Binary(u32),
}

impl Resolution {
    /// `ticks` in ns (sub-ns units rounded down), or None past 2^63 - 1 ns.
    fn ns(self, ticks: u64) -> Option<u64> {
        let ns: u128 = match self {
            Resolution::Decimal(k) if k <= 9 => ticks as u128 * 10u128.pow(9 - k),
            Resolution::Decimal(k) => 10u128.checked_pow(k - 9).map_or(0, |d| ticks as u128 / d),
            Resolution::Binary(k) => (ticks as u128 * 1_000_000_000) >> k.min(127),
        };
        u64::try_from(ns).ok().filter(|&v| v <= i64::MAX as u64)
    }
}

#[derive(Clone, Debug)]
struct Interface {
    linktype: u32,
    resolution: Resolution,
    name: String,
}

#[derive(Clone, Copy, Debug)]
enum Format {
    Pcap {
        big: bool,
        nano: bool,
        linktype: u32,
    },
    Pcapng {
        big: bool,
    },
}

fn u16_of(b: &[u8], big: bool) -> u16 {
    let a = [b[0], b[1]];
    if big {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

fn u32_of(b: &[u8], big: bool) -> u32 {
    let a = [b[0], b[1], b[2], b[3]];
    if big {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// A block's options as (code, value): up to `opt_endofopt`, a value cut at the block's end.
fn options(mut b: &[u8], big: bool) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let code = u16_of(b, big);
        let len = u16_of(&b[2..], big) as usize;
        if code == OPT_END {
            return None;
        }
        let value = &b[4..(4 + len).min(b.len())];
        b = &b[(4 + pad4(len)).min(b.len())..];
        Some((code, value))
    })
}

/// A streamed reader of a pcap or pcapng file of `size` bytes.
pub struct Reader<R> {
    r: R,
    size: u64,
    pos: u64,
    format: Format,
    ifaces: Vec<Interface>,
    section_comment: Option<String>,
    truncated_at: Option<u64>,
    block: Vec<u8>,
    /// `block` holds the first bytes of the next block (the magic read by [`Reader::new`]).
    keep_head: bool,
    done: bool,
}

impl Reader<io::BufReader<std::fs::File>> {
    /// Opens a capture file (buffered reads of 1 MiB).
    pub fn open(path: &std::path::Path) -> Result<Self, Error> {
        let f = std::fs::File::open(path)?;
        let size = f.metadata()?.len();
        Reader::new(io::BufReader::with_capacity(1 << 20, f), size)
    }
}

impl<R: Read> Reader<R> {
    /// A reader of the `size` bytes `r` yields: the file's header is read and checked here.
    pub fn new(mut r: R, size: u64) -> Result<Self, Error> {
        if size < 4 {
            return Err(Error::whole("not a packet capture (too short)"));
        }
        let mut magic = [0u8; 4];
        r.read_exact(&mut magic)?;
        let mut reader = Reader {
            r,
            size,
            pos: 4,
            format: Format::Pcapng { big: false },
            ifaces: Vec::new(),
            section_comment: None,
            truncated_at: None,
            block: Vec::new(),
            keep_head: false,
            done: false,
        };
        if magic == PCAPNG_SHB {
            reader.block.extend_from_slice(&magic);
            reader.keep_head = true;
            return Ok(reader);
        }
        let big = match (u32::from_le_bytes(magic), u32::from_be_bytes(magic)) {
            (PCAP_US | PCAP_NS, _) => false,
            (_, PCAP_US | PCAP_NS) => true,
            _ => {
                let hex: String = magic.iter().map(|b| format!("{b:02x}")).collect();
                return Err(Error::whole(format!(
                    "not a pcap or pcapng file (magic {hex})"
                )));
            }
        };
        if size < 24 {
            return Err(Error::whole("pcap header cut short"));
        }
        let mut head = [0u8; 20];
        reader.r.read_exact(&mut head)?;
        reader.pos = 24;
        reader.format = Format::Pcap {
            big,
            nano: u32_of(&magic, big) == PCAP_NS,
            linktype: u32_of(&head[16..], big) & 0x0FFF_FFFF,
        };
        Ok(reader)
    }

    /// The first section's comment (`spikelab run --pcap` puts its flows' ISNs there), once
    /// the section header has been read; empty for a classic pcap or without one.
    pub fn section_comment(&self) -> &str {
        self.section_comment.as_deref().unwrap_or("")
    }

    /// Where the incomplete last block or record of a capture cut short starts (the frames
    /// before it were read), once the reader has reached it.
    pub fn truncated_at(&self) -> Option<u64> {
        self.truncated_at
    }

    /// The `if_name` of each interface of the current section ("" for one without).
    pub fn iface_names(&self) -> impl Iterator<Item = &str> {
        self.ifaces.iter().map(|i| i.name.as_str())
    }

    /// The capture's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Reads `n` more bytes into `self.block` (after what it holds).
    fn read_more(&mut self, n: usize) -> Result<(), Error> {
        let have = self.block.len();
        self.block.resize(have + n, 0);
        self.r.read_exact(&mut self.block[have..])?;
        self.pos += n as u64;
        Ok(())
    }

    fn cut_short(&mut self, at: u64) {
        if at < self.size {
            self.truncated_at = Some(at);
        }
        self.done = true;
    }

    /// The next frame, or None at the end (or at a capture's cut-short tail).
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, Error> {
        if self.done {
            return Ok(None);
        }
        match self.format {
            Format::Pcap {
                big,
                nano,
                linktype,
            } => self.next_pcap(big, nano, linktype),
            Format::Pcapng { .. } => self.next_pcapng(),
        }
    }

    fn next_pcap(
        &mut self,
        big: bool,
        nano: bool,
        linktype: u32,
    ) -> Result<Option<Frame<'_>>, Error> {
        let at = self.pos;
        if at + 16 > self.size {
            self.cut_short(at);
            return Ok(None);
        }
        self.block.clear();
        self.read_more(16)?;
        let h = &self.block;
        let (sec, frac) = (u32_of(h, big) as u64, u32_of(&h[4..], big) as u64);
        let (incl, orig) = (u32_of(&h[8..], big), u32_of(&h[12..], big));
        if at + 16 + incl as u64 > self.size {
            self.cut_short(at);
            return Ok(None);
        }
        self.read_more(incl as usize)?;
        let ts_ns = sec * 1_000_000_000 + frac * if nano { 1 } else { 1000 };
        Ok(Some(Frame {
            ts_ns,
            linktype,
            iface: 0,
            iface_name: "",
            direction: 0,
            flags: 0,
            orig_len: orig,
            data: &self.block[16..],
            comment: &[],
        }))
    }

    fn next_pcapng(&mut self) -> Result<Option<Frame<'_>>, Error> {
        loop {
            // The block starts at `at`; `self.block` holds what of it was read already: the
            // file's first four bytes before the first block, else nothing (the last frame's
            // block is dropped here).
            if !std::mem::take(&mut self.keep_head) {
                self.block.clear();
            }
            let at = self.pos - self.block.len() as u64;
            if at + 12 > self.size {
                self.cut_short(at);
                return Ok(None);
            }
            let have = self.block.len();
            self.read_more(8 - have)?;
            let mut big = match self.format {
                Format::Pcapng { big } => big,
                Format::Pcap { .. } => unreachable!(),
            };
            if self.block[..4] == PCAPNG_SHB {
                // A new section: its own byte order and interfaces.
                self.read_more(4)?;
                big = match self.block[8..12] {
                    [0x4D, 0x3C, 0x2B, 0x1A] => false,
                    [0x1A, 0x2B, 0x3C, 0x4D] => true,
                    _ => return Err(Error::at(at, "bad pcapng byte-order magic")),
                };
                self.format = Format::Pcapng { big };
                self.ifaces.clear();
            }
            let kind = u32_of(&self.block, big);
            let total = u32_of(&self.block[4..], big) as u64;
            if total < 12 || !total.is_multiple_of(4) {
                return Err(Error::at(at, format!("bad pcapng block length {total}")));
            }
            if at + total > self.size {
                self.cut_short(at);
                return Ok(None);
            }
            let read = self.block.len();
            self.read_more(total as usize - read)?;
            let body_end = total as usize - 4;
            match kind {
                // The first section with a comment gives it.
                SHB if self.section_comment.is_none() => {
                    let body = &self.block[8..body_end];
                    self.section_comment = options(body.get(16..).unwrap_or(&[]), big)
                        .filter(|&(code, _)| code == OPT_COMMENT)
                        .last()
                        .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
                }
                IDB => {
                    let body = &self.block[8..body_end];
                    if body.len() < 8 {
                        return Err(Error::at(at, "interface block too short"));
                    }
                    let mut iface = Interface {
                        linktype: u16_of(body, big) as u32,
                        resolution: Resolution::Decimal(6),
                        name: String::new(),
                    };
                    for (code, v) in options(&body[8..], big) {
                        match code {
                            IF_TSRESOL if !v.is_empty() => {
                                let r = v[0];
                                iface.resolution = if r & 0x80 == 0 {
                                    Resolution::Decimal(r as u32)
                                } else {
                                    Resolution::Binary((r & 0x7F) as u32)
                                };
                            }
                            IF_NAME => iface.name = String::from_utf8_lossy(v).into_owned(),
                            _ => {}
                        }
                    }
                    self.ifaces.push(iface);
                }
                EPB | SPB => return self.packet(at, kind, big).map(Some),
                _ => {}
            }
        }
    }

    /// The frame of the Enhanced or Simple Packet Block at `at`, held in `self.block`.
    fn packet(&mut self, at: u64, kind: u32, big: bool) -> Result<Frame<'_>, Error> {
        let body = &self.block[8..self.block.len() - 4];
        let (iface, ticks, data, orig_len, opts): (u32, u64, &[u8], u32, &[u8]) = if kind == EPB {
            if body.len() < 20 {
                return Err(Error::at(at, "packet block too short"));
            }
            let incl = u32_of(&body[12..], big) as usize;
            if incl > body.len() - 20 {
                return Err(Error::at(
                    at,
                    format!(
                        "packet block's captured length {incl} exceeds the {} bytes it holds",
                        body.len() - 20
                    ),
                ));
            }
            let ticks = ((u32_of(&body[4..], big) as u64) << 32) | u32_of(&body[8..], big) as u64;
            let opts = body.get(20 + pad4(incl)..).unwrap_or(&[]);
            (
                u32_of(body, big),
                ticks,
                &body[20..20 + incl],
                u32_of(&body[16..], big),
                opts,
            )
        } else {
            if body.len() < 4 {
                return Err(Error::at(at, "packet block too short"));
            }
            let orig = u32_of(body, big);
            let end = (4 + orig as usize).min(body.len());
            (0, 0, &body[4..end], orig, &[][..])
        };
        let Some(i) = self.ifaces.get(iface as usize) else {
            return Err(Error::at(
                at,
                format!("packet on undeclared interface {iface}"),
            ));
        };
        let ts_ns = i
            .resolution
            .ns(ticks)
            .ok_or_else(|| Error::at(at, format!("timestamp {ticks} out of range")))?;
        let (mut flags, mut comment): (u32, &[u8]) = (0, &[]);
        for (code, v) in options(opts, big) {
            match code {
                EPB_FLAGS if v.len() == 4 => flags = u32_of(v, big),
                OPT_COMMENT => comment = v,
                _ => {}
            }
        }
        Ok(Frame {
            ts_ns,
            linktype: i.linktype,
            iface,
            iface_name: &i.name,
            direction: (flags & 3) as u8,
            flags,
            orig_len,
            data,
            comment,
        })
    }
}

#[cfg(test)]
mod tests;
