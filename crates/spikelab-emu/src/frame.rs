//! Just enough Ethernet / IPv4 / TCP parsing to classify a frame and describe it.
//!
//! Nothing here allocates; a frame that is not IPv4 + TCP (ARP, IPv6, anything else) parses to
//! `None` and the emulator forwards it untouched.

/// TCP flag bits.
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const ACK: u8 = 0x10;

const ETH_HDR: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const IPPROTO_TCP: u8 = 6;

/// The fields of one IPv4 + TCP frame that spikelab uses.
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
}

impl TcpFrame {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
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
    if ihl < 20 || *ip.get(9)? != IPPROTO_TCP {
        return None;
    }
    // A fragment other than the first carries no TCP header.
    if be16(ip, 6)? & 0x1fff != 0 {
        return None;
    }
    let ip_len = be16(ip, 2)? as usize;
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
