//! Just enough Ethernet / IPv4 / TCP and SCTP parsing to classify a frame and describe it.
//!
//! Nothing here allocates; a frame that is neither IPv4 + TCP nor IPv4 + SCTP (ARP, IPv6,
//! anything else) parses to `None` and the emulator forwards it untouched.

/// TCP flag bits.
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const ACK: u8 = 0x10;

const ETH_HDR: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_SCTP: u8 = 132;

/// DATA chunks of one SCTP packet that [`SctpInfo`] keeps (a full-sized DATA packet has one).
pub const SCTP_MAX_DATA: usize = 8;

/// The chunks of one SCTP packet that spikelab uses (RFC 9260 §3).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SctpInfo {
    /// TSN and payload bytes of each DATA chunk, in packet order (the first [`SCTP_MAX_DATA`]).
    pub tsn: [u32; SCTP_MAX_DATA],
    pub data_len: [u32; SCTP_MAX_DATA],
    pub n_data: u8,
    /// A SACK's cumulative TSN ack.
    pub cum_tsn: Option<u32>,
    /// A SACK's first gap ack block (start, end offsets from the cumulative TSN ack) and its
    /// number of duplicate TSN reports.
    pub first_gap: Option<(u16, u16)>,
    pub dup_tsns: u16,
    /// The Initial TSN of an INIT (the client's) or INIT ACK (the server's).
    pub init_tsn: Option<u32>,
    /// INIT, INIT ACK, COOKIE ECHO, COOKIE ACK, ABORT, SHUTDOWN*, ERROR.
    pub control: bool,
    /// A HEARTBEAT (a HEARTBEAT ACK is neither this nor `control`).
    pub heartbeat: bool,
}

impl SctpInfo {
    pub fn data(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let n = self.n_data as usize;
        self.tsn[..n]
            .iter()
            .copied()
            .zip(self.data_len[..n].iter().copied())
    }
}

/// The fields of one IPv4 + TCP (or SCTP) frame that spikelab uses. For SCTP, `sctp` holds the
/// chunks, `payload` is the DATA payload bytes, `seq` the first DATA chunk's TSN and `ack` a
/// SACK's cumulative TSN ack; the TCP-only fields are zero.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpFrame {
    /// IPv4 total length: the "wire size" the path stages see (IP + TCP headers + payload), as
    /// in the simulator.
    pub ip_len: u32,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    /// Receive window field as sent (unscaled).
    pub window: u16,
    /// Payload bytes (from the IP total length, so a truncated capture still knows it).
    pub payload: u32,
    /// TCP timestamps option (TSval, TSecr), if present and captured.
    pub ts: Option<(u32, u32)>,
    /// SACK blocks (left, right), up to 4, if present and captured.
    pub sack: [(u32, u32); 4],
    pub sack_n: u8,
    pub sctp: Option<SctpInfo>,
    /// IPv4 source and destination addresses.
    pub src: [u8; 4],
    pub dst: [u8; 4],
}

impl TcpFrame {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    /// From the sender: the value the flow's relative numbers count from, for a frame that
    /// starts the connection (TCP: the SYN's ISN, the first data byte being ISN + 1; SCTP: the
    /// INIT's Initial TSN minus one).
    pub fn origin(&self) -> Option<u32> {
        match &self.sctp {
            Some(s) => s.init_tsn.filter(|_| s.control).map(|t| t.wrapping_sub(1)),
            None => (self.has(SYN) && !self.has(ACK)).then_some(self.seq),
        }
    }
    /// Carries data: a TCP segment with payload (not a SYN), an SCTP packet with DATA chunks.
    pub fn is_data(&self) -> bool {
        match &self.sctp {
            Some(s) => s.n_data > 0,
            None => self.payload > 0 && !self.has(SYN),
        }
    }
    /// What a deterministic loss stage's `seqs` count, as in the simulator: TCP bytes from 0
    /// (`rel` is the relative sequence number), SCTP TSNs from 1.
    pub fn data_seq(&self, rel: u64) -> u64 {
        rel + self.sctp.is_some() as u64
    }
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.sack_n as usize]
    }
}

fn be16(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]))
}

fn be32(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(i)?,
        *b.get(i + 1)?,
        *b.get(i + 2)?,
        *b.get(i + 3)?,
    ]))
}

/// Parses an Ethernet frame (possibly truncated by a snap length) carrying IPv4 + TCP.
pub fn parse(frame: &[u8]) -> Option<TcpFrame> {
    if be16(frame, 12)? != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = frame.get(ETH_HDR..)?;
    let ver_ihl = *ip.first()?;
    if ver_ihl >> 4 != 4 {
        return None;
    }
    let ihl = (ver_ihl & 0x0f) as usize * 4;
    let proto = *ip.get(9)?;
    if ihl < 20 || (proto != IPPROTO_TCP && proto != IPPROTO_SCTP) {
        return None;
    }
    // A fragment other than the first carries no TCP header.
    if be16(ip, 6)? & 0x1fff != 0 {
        return None;
    }
    let ip_len = be16(ip, 2)? as usize;
    let src: [u8; 4] = ip.get(12..16)?.try_into().ok()?;
    let dst: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
    if proto == IPPROTO_SCTP {
        let mut f = parse_sctp(ip.get(ihl..)?, ip_len.checked_sub(ihl)?, ip_len as u32)?;
        (f.src, f.dst) = (src, dst);
        return Some(f);
    }
    let tcp = ip.get(ihl..)?;
    let doff = (*tcp.get(12)? >> 4) as usize * 4;
    if doff < 20 || ip_len < ihl + doff {
        return None;
    }
    let mut f = TcpFrame {
        ip_len: ip_len as u32,
        sport: be16(tcp, 0)?,
        dport: be16(tcp, 2)?,
        seq: be32(tcp, 4)?,
        ack: be32(tcp, 8)?,
        flags: *tcp.get(13)?,
        window: be16(tcp, 14)?,
        payload: (ip_len - ihl - doff) as u32,
        src,
        dst,
        ..TcpFrame::default()
    };
    // Options: as far as they were captured.
    let opts = &tcp[20..doff.min(tcp.len())];
    let mut i = 0;
    while i < opts.len() {
        let kind = opts[i];
        match kind {
            0 => break,
            1 => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let Some(&len) = opts.get(i + 1) else { break };
        let len = len as usize;
        if len < 2 || i + len > opts.len() {
            break;
        }
        let body = &opts[i + 2..i + len];
        match kind {
            8 if len == 10 => f.ts = Some((be32(body, 0)?, be32(body, 4)?)),
            5 => {
                for block in body.chunks_exact(8).take(4) {
                    f.sack[f.sack_n as usize] = (be32(block, 0)?, be32(block, 4)?);
                    f.sack_n += 1;
                }
            }
            _ => {}
        }
        i += len;
    }
    Some(f)
}

/// An SCTP packet (common header and chunks, `len` bytes by the IP header, possibly truncated
/// by the capture): the chunks that were captured.
fn parse_sctp(pkt: &[u8], len: usize, ip_len: u32) -> Option<TcpFrame> {
    if len < 12 {
        return None;
    }
    let mut s = SctpInfo::default();
    let mut payload = 0u32;
    let mut i = 12;
    while i + 4 <= len {
        let (Some(&kind), Some(clen)) = (pkt.get(i), be16(pkt, i + 2)) else {
            break; // the rest was not captured
        };
        let clen = clen as usize;
        if clen < 4 || i + clen > len {
            break;
        }
        match kind {
            0 if clen >= 16 => {
                let Some(tsn) = be32(pkt, i + 4) else { break };
                let bytes = (clen - 16) as u32;
                payload += bytes;
                if (s.n_data as usize) < SCTP_MAX_DATA {
                    s.tsn[s.n_data as usize] = tsn;
                    s.data_len[s.n_data as usize] = bytes;
                    s.n_data += 1;
                }
            }
            1 | 2 => {
                s.control = true;
                s.init_tsn = be32(pkt, i + 16);
            }
            3 if clen >= 16 => {
                s.cum_tsn = be32(pkt, i + 4);
                let gaps = be16(pkt, i + 12).unwrap_or(0);
                s.dup_tsns = be16(pkt, i + 14).unwrap_or(0);
                if gaps > 0 {
                    if let (Some(a), Some(b)) = (be16(pkt, i + 16), be16(pkt, i + 18)) {
                        s.first_gap = Some((a, b));
                    }
                }
            }
            4 => s.heartbeat = true,
            6..=11 | 14 => s.control = true,
            _ => {}
        }
        i += clen.div_ceil(4) * 4;
    }
    Some(TcpFrame {
        ip_len,
        sport: be16(pkt, 0)?,
        dport: be16(pkt, 2)?,
        seq: s.tsn[0],
        ack: s.cum_tsn.unwrap_or(0),
        payload,
        sctp: Some(s),
        ..TcpFrame::default()
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An Ethernet + IPv4 + TCP frame with the given fields; `opts` must be a multiple of 4.
    pub fn build(
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        opts: &[u8],
        payload: usize,
    ) -> Vec<u8> {
        assert_eq!(opts.len() % 4, 0);
        let doff = 20 + opts.len();
        let ip_len = 20 + doff + payload;
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let mut ip = vec![0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = IPPROTO_TCP;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
        f.extend_from_slice(&ip);
        let mut tcp = vec![0u8; 20];
        tcp[0..2].copy_from_slice(&sport.to_be_bytes());
        tcp[2..4].copy_from_slice(&dport.to_be_bytes());
        tcp[4..8].copy_from_slice(&seq.to_be_bytes());
        tcp[8..12].copy_from_slice(&ack.to_be_bytes());
        tcp[12] = ((doff / 4) as u8) << 4;
        tcp[13] = flags;
        tcp[14..16].copy_from_slice(&1000u16.to_be_bytes());
        f.extend_from_slice(&tcp);
        f.extend_from_slice(opts);
        f.extend(std::iter::repeat_n(0xab, payload));
        f
    }

    /// One SCTP chunk: type, flags 0, the body padded to 4 bytes.
    pub fn chunk(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut c = vec![kind, 0];
        c.extend_from_slice(&((4 + body.len()) as u16).to_be_bytes());
        c.extend_from_slice(body);
        c.resize(c.len().div_ceil(4) * 4, 0);
        c
    }

    /// A DATA chunk with `tsn` and `payload` bytes.
    pub fn data_chunk(tsn: u32, payload: usize) -> Vec<u8> {
        let mut b = tsn.to_be_bytes().to_vec();
        b.extend_from_slice(&[0; 8]); // stream id, stream sequence number, PPID
        b.extend(std::iter::repeat_n(0xcd, payload));
        chunk(0, &b)
    }

    /// A SACK chunk with its cumulative TSN ack, gap blocks and duplicate TSNs.
    pub fn sack_chunk(cum: u32, gaps: &[(u16, u16)], dups: &[u32]) -> Vec<u8> {
        let mut b = cum.to_be_bytes().to_vec();
        b.extend_from_slice(&131_072u32.to_be_bytes());
        b.extend_from_slice(&(gaps.len() as u16).to_be_bytes());
        b.extend_from_slice(&(dups.len() as u16).to_be_bytes());
        for (s, e) in gaps {
            b.extend_from_slice(&s.to_be_bytes());
            b.extend_from_slice(&e.to_be_bytes());
        }
        for d in dups {
            b.extend_from_slice(&d.to_be_bytes());
        }
        chunk(3, &b)
    }

    /// An INIT (or INIT ACK with `kind` 2) with its Initial TSN.
    pub fn init_chunk(kind: u8, init_tsn: u32) -> Vec<u8> {
        let mut b = 0x1234_5678u32.to_be_bytes().to_vec(); // initiate tag
        b.extend_from_slice(&131_072u32.to_be_bytes());
        b.extend_from_slice(&[0, 10, 0, 10]); // streams
        b.extend_from_slice(&init_tsn.to_be_bytes());
        chunk(kind, &b)
    }

    /// [`build_sctp`] between these IPv4 addresses.
    pub fn build_sctp_between(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        chunks: &[Vec<u8>],
    ) -> Vec<u8> {
        let mut f = build_sctp(sport, dport, chunks);
        f[14 + 12..14 + 16].copy_from_slice(&src);
        f[14 + 16..14 + 20].copy_from_slice(&dst);
        f
    }

    /// An Ethernet + IPv4 + SCTP frame with these chunks (10.0.0.1 to 10.0.0.2).
    pub fn build_sctp(sport: u16, dport: u16, chunks: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = chunks.concat();
        let ip_len = 20 + 12 + body.len();
        let mut f = build(sport, dport, 0, 0, 0, &[], 0);
        f.truncate(14 + 20);
        f[14 + 2..14 + 4].copy_from_slice(&(ip_len as u16).to_be_bytes());
        f[14 + 9] = IPPROTO_SCTP;
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.extend_from_slice(&[0; 8]); // verification tag, checksum
        f.extend_from_slice(&body);
        f
    }

    #[test]
    fn parses_sctp_chunks() {
        let f = build_sctp(40000, 5000, &[init_chunk(1, 900)]);
        let p = parse(&f).unwrap();
        assert_eq!((p.sport, p.dport, p.ip_len), (40000, 5000, 20 + 12 + 20));
        assert_eq!((p.src, p.dst), ([10, 0, 0, 1], [10, 0, 0, 2]));
        let s = p.sctp.unwrap();
        assert!(s.control && !p.is_data());
        assert_eq!(
            p.origin(),
            Some(899),
            "the first DATA TSN is 900: relative 0"
        );
        // Two DATA chunks bundled (the second's padding too), then a SACK.
        let f = build_sctp(
            40000,
            5000,
            &[
                data_chunk(7, 1001),
                data_chunk(8, 300),
                sack_chunk(3, &[(2, 4)], &[1, 2]),
            ],
        );
        let p = parse(&f).unwrap();
        let s = p.sctp.unwrap();
        assert_eq!(s.data().collect::<Vec<_>>(), vec![(7, 1001), (8, 300)]);
        assert_eq!((p.payload, p.seq, p.ack), (1301, 7, 3));
        assert_eq!(
            (s.cum_tsn, s.first_gap, s.dup_tsns),
            (Some(3), Some((2, 4)), 2)
        );
        assert!(p.is_data() && p.origin().is_none() && !s.control && !s.heartbeat);
        assert_eq!(
            p.data_seq(6),
            7,
            "SCTP TSNs count from 1 as in the simulator"
        );
        // Truncated by the capture inside the first DATA chunk: its TSN and length are
        // known, the chunks after it are not.
        let p = parse(&f[..80]).unwrap();
        assert_eq!(p.sctp.unwrap().data().collect::<Vec<_>>(), vec![(7, 1001)]);
        // A HEARTBEAT; a HEARTBEAT ACK is not one.
        let hb = parse(&build_sctp(1, 2, &[chunk(4, &[0, 1, 0, 8, 1, 2, 3, 4])])).unwrap();
        assert!(hb.sctp.unwrap().heartbeat);
        let hb_ack = parse(&build_sctp(1, 2, &[chunk(5, &[0, 1, 0, 8, 1, 2, 3, 4])])).unwrap();
        assert!(!hb_ack.sctp.unwrap().heartbeat && !hb_ack.sctp.unwrap().control);
        // A chunk whose length runs past the packet ends the walk.
        let mut bad = build_sctp(1, 2, &[data_chunk(1, 10)]);
        bad[14 + 20 + 12 + 2] = 0x7f;
        assert_eq!(parse(&bad).unwrap().sctp.unwrap().n_data, 0);
    }

    /// NOP, NOP, timestamps.
    pub fn ts_opt(val: u32, ecr: u32) -> Vec<u8> {
        let mut o = vec![1, 1, 8, 10];
        o.extend_from_slice(&val.to_be_bytes());
        o.extend_from_slice(&ecr.to_be_bytes());
        o
    }

    /// NOP, NOP, SACK with the given blocks.
    pub fn sack_opt(blocks: &[(u32, u32)]) -> Vec<u8> {
        let mut o = vec![1, 1, 5, (2 + 8 * blocks.len()) as u8];
        for (l, r) in blocks {
            o.extend_from_slice(&l.to_be_bytes());
            o.extend_from_slice(&r.to_be_bytes());
        }
        o
    }

    #[test]
    fn parses_ports_sequence_numbers_payload_and_options() {
        let mut opts = ts_opt(7, 9);
        opts.extend(sack_opt(&[(100, 200), (300, 400)]));
        let f = build(40000, 5001, 123, 456, ACK, &opts, 1000);
        let p = parse(&f).unwrap();
        assert_eq!((p.sport, p.dport, p.seq, p.ack), (40000, 5001, 123, 456));
        assert_eq!(p.payload, 1000);
        assert_eq!(p.ip_len, 20 + 20 + opts.len() as u32 + 1000);
        assert_eq!(p.ts, Some((7, 9)));
        assert_eq!(p.sack_blocks(), &[(100, 200), (300, 400)]);
        assert!(p.has(ACK) && !p.has(SYN));
    }

    #[test]
    fn a_truncated_capture_still_knows_the_payload_length() {
        let f = build(1, 2, 3, 4, ACK, &ts_opt(1, 2), 1448);
        let p = parse(&f[..80]).unwrap();
        assert_eq!(p.payload, 1448);
        assert_eq!(p.ts, Some((1, 2)));
    }

    #[test]
    fn non_tcp_frames_are_not_parsed() {
        let mut f = build(1, 2, 3, 4, ACK, &[], 0);
        f[14 + 9] = 17; // UDP
        assert_eq!(parse(&f), None);
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(parse(&arp), None);
        assert_eq!(parse(&[0u8; 5]), None);
    }
}
