//! The IP, TCP and SCTP headers of a captured frame, as a trace import needs them: Ethernet
//! (with 802.1Q / 802.1ad tags), Linux cooked SLL and SLL2 and raw IP link types; IPv4 (first
//! fragments only) and IPv6 (no extension headers); TCP's timestamps (RFC 7323) and SACK
//! blocks (RFC 2018); SCTP's DATA and SACK chunks (RFC 9260 §3.3.1, §3.3.4). A frame cut by
//! the capture's snap length gives what its bytes hold: lengths come from the IP header.

use super::{LINKTYPES_RAW_IP, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2};
use std::fmt;

/// IP protocol numbers.
pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_SCTP: u8 = 132;

/// An IP address as it appears in a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Addr {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl fmt::Display for Addr {
    /// IPv4 dotted; IPv6 as its 32 hexadecimal digits (an import's connection name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::V4(a) => write!(f, "{}.{}.{}.{}", a[0], a[1], a[2], a[3]),
            Addr::V6(a) => a.iter().try_for_each(|b| write!(f, "{b:02x}")),
        }
    }
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The IP packet a frame carries: (version 4 or 6, its bytes), or None.
pub fn ip_payload(linktype: u32, d: &[u8]) -> Option<(u8, &[u8])> {
    let (etype, off) = match linktype {
        LINKTYPE_ETHERNET => {
            if d.len() < 14 {
                return None;
            }
            let (mut etype, mut off) = (be16(&d[12..]), 14);
            while (etype == 0x8100 || etype == 0x88A8) && d.len() >= off + 4 {
                etype = be16(&d[off + 2..]);
                off += 4;
            }
            (etype, off)
        }
        LINKTYPE_LINUX_SLL => {
            if d.len() < 16 {
                return None;
            }
            (be16(&d[14..]), 16)
        }
        LINKTYPE_LINUX_SLL2 => {
            if d.len() < 20 {
                return None;
            }
            (be16(d), 20)
        }
        lt if LINKTYPES_RAW_IP.contains(&lt) => {
            let first = *d.first()?;
            (if first >> 4 == 4 { 0x0800 } else { 0x86DD }, 0)
        }
        _ => return None,
    };
    match etype {
        0x0800 => Some((4, &d[off..])),
        0x86DD => Some((6, &d[off..])),
        _ => None,
    }
}

/// The transport layer of a frame carrying IP protocol `proto`.
#[derive(Clone, Copy, Debug)]
pub struct Transport<'a> {
    pub src: Addr,
    pub dst: Addr,
    /// The transport header and what follows of it in the frame.
    pub bytes: &'a [u8],
    /// Its length by the IP header (may exceed `bytes` in a frame cut short).
    pub len: i64,
    /// The IP packet's bytes (headers and payload): its size on a link.
    pub wire: i64,
}

/// The transport layer of a frame carrying IP protocol `proto`, or None (another protocol, a
/// later fragment, or too short to tell).
pub fn transport(linktype: u32, frame: &[u8], proto: u8) -> Option<Transport<'_>> {
    let (version, p) = ip_payload(linktype, frame)?;
    if version == 4 {
        if p.len() < 20 || p[9] != proto {
            return None;
        }
        if be16(&p[6..]) & 0x1FFF != 0 {
            return None; // a later fragment
        }
        let ihl = (p[0] & 0x0F) as usize * 4;
        let total = be16(&p[2..]) as i64;
        let src = Addr::V4(p[12..16].try_into().ok()?);
        let dst = Addr::V4(p[16..20].try_into().ok()?);
        return Some(Transport {
            src,
            dst,
            bytes: p.get(ihl..).unwrap_or(&[]),
            len: total - ihl as i64,
            wire: total,
        });
    }
    if p.len() < 40 || p[6] != proto {
        return None;
    }
    let len = be16(&p[4..]) as i64;
    Some(Transport {
        src: Addr::V6(p[8..24].try_into().ok()?),
        dst: Addr::V6(p[24..40].try_into().ok()?),
        bytes: &p[40..],
        len,
        wire: len + 40,
    })
}

/// The TCP header fields of a frame (numbers as on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tcp {
    pub src: Addr,
    pub dst: Addr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    /// The six classic flag bits (FIN 0x01 … URG 0x20).
    pub flags: u8,
    pub window: u16,
    /// Payload bytes, from the IP length (a frame cut at a snap length still counts).
    pub length: i64,
    /// The IP packet's bytes.
    pub wire: i64,
    /// (TSval, TSecr) of the timestamps option (RFC 7323), if any.
    pub ts: Option<(u32, u32)>,
    /// How many blocks the (last) SACK option holds (RFC 2018), and the first two.
    pub sack_count: u8,
    pub sack: [(u32, u32); 2],
}

/// The TCP header of a frame, or None when the frame is not TCP (or too short to tell).
pub fn tcp(linktype: u32, frame: &[u8]) -> Option<Tcp> {
    let tr = transport(linktype, frame, IPPROTO_TCP)?;
    let t = tr.bytes;
    if t.len() < 20 {
        return None;
    }
    let off_flags = be16(&t[12..]);
    let hlen = (off_flags >> 12) as usize * 4;
    let mut out = Tcp {
        src: tr.src,
        dst: tr.dst,
        sport: be16(t),
        dport: be16(&t[2..]),
        seq: be32(&t[4..]),
        ack: be32(&t[8..]),
        flags: (off_flags & 0x3F) as u8,
        window: be16(&t[14..]),
        length: (tr.len - hlen as i64).max(0),
        wire: tr.wire,
        ts: None,
        sack_count: 0,
        sack: [(0, 0); 2],
    };
    let opts = t.get(20..hlen.min(t.len())).unwrap_or(&[]);
    let mut j = 0;
    while j < opts.len() {
        let kind = opts[j];
        if kind == 0 {
            break;
        }
        if kind == 1 {
            j += 1;
            continue;
        }
        if j + 1 >= opts.len() || opts[j + 1] < 2 {
            break;
        }
        let length = opts[j + 1] as usize;
        let body = &opts[(j + 2).min(opts.len())..(j + length).min(opts.len())];
        if kind == 8 && body.len() == 8 {
            out.ts = Some((be32(body), be32(&body[4..])));
        } else if kind == 5 && body.len() % 8 == 0 {
            out.sack_count = (body.len() / 8) as u8;
            out.sack = [(0, 0); 2];
            for (k, b) in body.chunks_exact(8).take(2).enumerate() {
                out.sack[k] = (be32(b), be32(&b[4..]));
            }
        }
        j += length;
    }
    Some(out)
}

/// The SCTP common header and the SACK of a frame; its DATA chunks and duplicate TSNs go to
/// the vectors [`sctp`] is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sctp {
    pub src: Addr,
    pub dst: Addr,
    pub sport: u16,
    pub dport: u16,
    /// The (last) SACK chunk's cumulative TSN ack, if the packet has one.
    pub cum_tsn: Option<u32>,
    /// The IP packet's bytes.
    pub wire: i64,
}

/// The SCTP chunks of a frame, or None when the frame is not SCTP (or too short to tell):
/// (TSN, user data bytes) of each DATA chunk are pushed to `data`, in packet order, and the
/// duplicate TSNs of the last SACK chunk to `dups`. A chunk cut off by the snap length ends
/// the walk.
pub fn sctp(
    linktype: u32,
    frame: &[u8],
    data: &mut Vec<(u32, i64)>,
    dups: &mut Vec<u32>,
) -> Option<Sctp> {
    let tr = transport(linktype, frame, IPPROTO_SCTP)?;
    // No link-layer padding: the packet's length by the IP header (a negative one counts
    // from the end, as a Python slice does).
    let n = tr.bytes.len() as i64;
    let keep = if tr.len >= 0 {
        tr.len.min(n)
    } else {
        (n + tr.len).max(0)
    };
    let s = &tr.bytes[..keep as usize];
    if s.len() < 12 {
        return None;
    }
    let mut out = Sctp {
        src: tr.src,
        dst: tr.dst,
        sport: be16(s),
        dport: be16(&s[2..]),
        cum_tsn: None,
        wire: tr.wire,
    };
    let dups_from = dups.len();
    let mut j = 12;
    while j + 4 <= s.len() {
        let ctype = s[j];
        let length = be16(&s[j + 2..]) as usize;
        if length < 4 {
            break;
        }
        let body = &s[j + 4..(j + length).min(s.len())];
        if ctype == 0 && body.len() >= 12 {
            // DATA: TSN, stream, SSN, PPID, user data.
            data.push((be32(body), length as i64 - 16));
        } else if ctype == 3 && body.len() >= 12 {
            // SACK: cumulative TSN ack, a_rwnd, gap blocks, duplicate TSNs.
            out.cum_tsn = Some(be32(body));
            let (n_gap, n_dup) = (be16(&body[8..]) as usize, be16(&body[10..]) as usize);
            let k = 12 + 4 * n_gap;
            dups.truncate(dups_from);
            for i in 0..n_dup {
                if let Some(d) = body.get(k + 4 * i..k + 4 * i + 4) {
                    dups.push(be32(d));
                }
            }
        }
        j += (length + 3) & !3;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::LINKTYPE_RAW;

    fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
        let mut ip = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let total = (20 + payload.len()) as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(payload);
        ip
    }

    fn chunk(ctype: u8, body: &[u8]) -> Vec<u8> {
        let mut c = vec![ctype, 3];
        c.extend_from_slice(&((4 + body.len()) as u16).to_be_bytes());
        c.extend_from_slice(body);
        c.resize(c.len().div_ceil(4) * 4, 0);
        c
    }

    #[test]
    fn sctp_chunks_are_read_from_a_bundled_packet() {
        let mut d1 = vec![];
        for v in [
            1000u32.to_be_bytes().to_vec(),
            vec![0, 0, 0, 0],
            vec![0; 4],
            b"xxxxx".to_vec(),
        ] {
            d1.extend(v);
        }
        let mut d2 = 1001u32.to_be_bytes().to_vec();
        d2.extend([0, 0, 0, 1, 0, 0, 0, 0]);
        d2.extend(vec![b'y'; 1200]);
        let mut sack = 77u32.to_be_bytes().to_vec();
        sack.extend(65536u32.to_be_bytes());
        sack.extend([0, 1, 0, 2, 0, 2, 0, 3]); // one gap block, two duplicate TSNs
        sack.extend(70u32.to_be_bytes());
        sack.extend(71u32.to_be_bytes());
        let mut s = vec![0x13, 0x88, 0x17, 0x70, 0, 0, 0, 1, 0, 0, 0, 0];
        s.extend(chunk(0, &d1));
        s.extend(chunk(3, &sack));
        s.extend(chunk(0, &d2));
        let ip = ipv4(132, &s);
        let (mut data, mut dups) = (vec![], vec![]);
        let c = sctp(LINKTYPE_RAW, &ip, &mut data, &mut dups).unwrap();
        assert_eq!(data, vec![(1000, 5), (1001, 1200)]);
        assert_eq!((c.cum_tsn, dups), (Some(77), vec![70, 71]));
        assert_eq!((c.sport, c.dport, c.wire), (5000, 6000, ip.len() as i64));
        assert_eq!(c.src.to_string(), "10.0.0.1");
        assert!(tcp(LINKTYPE_RAW, &ip).is_none()); // an SCTP frame is not TCP
    }

    #[test]
    fn tcp_options_give_timestamps_and_the_first_two_sack_blocks() {
        let mut t = vec![0x9c, 0x40, 0x13, 0x89];
        t.extend(7u32.to_be_bytes());
        t.extend(9u32.to_be_bytes());
        t.extend([0xF0, 0x10, 0xff, 0xff, 0, 0, 0, 0]); // 60-byte header, ACK
        t.extend([1, 1, 8, 10]);
        t.extend(5u32.to_be_bytes());
        t.extend(6u32.to_be_bytes());
        t.extend([1, 1, 5, 26]);
        for v in [100u32, 200, 300, 400, 500, 600] {
            t.extend(v.to_be_bytes());
        }
        t.extend(vec![0u8; 100]);
        let mut frame = vec![0u8; 12];
        frame.extend([0x08, 0x00]);
        frame.extend(ipv4(6, &t));
        let h = tcp(LINKTYPE_ETHERNET, &frame).unwrap();
        assert_eq!((h.seq, h.ack, h.flags, h.window), (7, 9, 0x10, 0xffff));
        assert_eq!((h.length, h.wire), (100, 20 + 60 + 100));
        assert_eq!(h.ts, Some((5, 6)));
        assert_eq!((h.sack_count, h.sack), (3, [(100, 200), (300, 400)]));
        // Cut at a snap length of 60 bytes: the lengths are the IP header's.
        let cut = tcp(LINKTYPE_ETHERNET, &frame[..60]).unwrap();
        assert_eq!((cut.length, cut.wire, cut.ts), (100, 180, None));
    }

    #[test]
    fn ipv6_addresses_are_hex_and_vlan_tags_are_skipped() {
        let mut ip = vec![0x60, 0, 0, 0, 0, 20, 6, 64];
        ip.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[1]));
        ip.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[2]));
        ip.extend([
            0, 1, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0, 0, 0, 0, 0, 0,
        ]);
        let mut frame = vec![0u8; 12];
        frame.extend([0x81, 0x00, 0, 5, 0x86, 0xDD]);
        frame.extend(&ip);
        let h = tcp(LINKTYPE_ETHERNET, &frame).unwrap();
        assert_eq!(h.src.to_string(), "20010db8000000000000000000000001");
        assert_eq!((h.flags, h.length, h.wire), (0x02, 0, 60));
    }
}
