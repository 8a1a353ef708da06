//! Captures of simulated runs (`sim.pcap`, `spikelab run --pcap`): one pcapng file per
//! observation point, each frame an Ethernet/IPv4/TCP packet synthesised from the simulated
//! segment, so Wireshark, tshark and tcptrace read a simulation as they read the kernel.
//!
//! What a frame carries, exactly as the model had it:
//! - sequence and ACK numbers: the model counts bytes from 0; on the wire they are offset by
//!   each side's initial sequence number (ISN), drawn from the RNG stream `flow/<i>/isn`, so a
//!   seed gives the same bytes every time. The SYN takes ISN, the first data byte ISN + 1 (as
//!   after a handshake, whether or not the flow models one); SACK blocks are offset the same way.
//! - the window: the model's advertised bytes, shifted right by the flow's window scale, which
//!   is the smallest shift that fits the flow's `rwnd` in 16 bits (SYNs carry it unscaled,
//!   RFC 7323 §2.2).
//! - options in Linux's layout: SYN and SYN-ACK MSS, SACK-permitted (folded in front of the
//!   timestamps when both are on), timestamps, NOP + window scale; other segments NOP NOP TS,
//!   then NOP NOP SACK with the model's blocks (a DSACK block first, RFC 2883).
//! - flags: SYN, SYN|ACK, ACK (the model has no FIN or RST);
//! - IPv4 (DF set, ID 0 as Linux sends atomic datagrams, TTL 64) and TCP checksums, correct;
//! - a payload of zeros of the segment's length, cut at `sim.pcap_snaplen` bytes of frame
//!   (the original length is always recorded, so every tool sees the true lengths);
//! - the simulated time in nanoseconds (`if_tsresol` = 9) from t = 0 (the Unix epoch);
//! - a comment `pkt=N`: the packet's id in packets.parquet.
//!
//! Flow `i` (its index in the scenario) runs from 10.1.x.y port 40000 + i mod 20000 to
//! 10.2.x.y port 5001, with x.y = i + 1 in two bytes. A file is written under a temporary name
//! and renamed when the run completes; a failed or cancelled run leaves none.
//!
//! SCTP associations (RFC 9260) get IPv4/SCTP frames the same way: endpoint A (the client) at
//! 10.(100 + d).x.y and B at 10.(200 + d).x.y for destination d, ports as TCP's; verification
//! tags from the RNG stream `flow/<i>/vtag`; TSNs as the model numbers them (from 1, the
//! Initial TSN of both INITs); DATA (unfragmented, payload zeros), SACK (gap blocks, duplicate
//! TSNs), INIT and INIT-ACK (IPv4 address parameters, a Padding parameter for the other
//! parameter bytes, the State Cookie), COOKIE-ECHO, COOKIE-ACK, HEARTBEAT and HEARTBEAT-ACK
//! (the send time and nonce in the Heartbeat Info), ABORT; the CRC32c checksum over the whole
//! packet, zero payload included. SCTP frames are kept whole whatever the snap length:
//! Wireshark dissects a chunk only when all of it was captured.

use crate::scenario::PcapPoint;
use spikelab_core::pcapng;
use spikelab_core::Rng;
use spikelab_tcp::Segment;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

const ETH: usize = 14;
const IPV4: usize = 20;
const TCP: usize = 20;

const FLAG_SYN: u16 = 0x02;
const FLAG_ACK: u16 = 0x10;

/// The wire identity of one TCP flow.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FlowWire {
    /// Sender (client) and receiver (server) IPv4 addresses.
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    /// Initial sequence numbers of the sender and of the receiver.
    pub isn_snd: u32,
    pub isn_rcv: u32,
    /// Window scale shift both sides advertise.
    pub wscale: u8,
    pub mss: u16,
    pub sack_ok: bool,
}

impl FlowWire {
    /// Flow `i` of the scenario under `seed`.
    pub fn new(seed: u64, i: usize, mss: u32, rwnd: u64, sack_ok: bool) -> FlowWire {
        let n = (i + 1) as u32;
        let hi = (2 * ((n >> 16) & 0x3f)) as u8;
        let isn = Rng::stream(seed, &format!("flow/{i}/isn")).next_u64();
        let wscale = (0..14u8).find(|&s| rwnd >> s <= 0xFFFF).unwrap_or(14);
        FlowWire {
            src_ip: [10, 1 + hi, (n >> 8) as u8, n as u8],
            dst_ip: [10, 2 + hi, (n >> 8) as u8, n as u8],
            sport: 40000 + (i % 20000) as u16,
            dport: 5001,
            isn_snd: (isn >> 32) as u32,
            isn_rcv: isn as u32,
            wscale,
            mss: mss.min(0xFFFF) as u16,
            sack_ok,
        }
    }

    /// The flow as JSON (for the capture's section comment).
    fn json(&self, flow: u32) -> String {
        let ip = |a: [u8; 4]| format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        format!(
            "{{\"flow\":{flow},\"src\":\"{}:{}\",\"dst\":\"{}:{}\",\"isn_snd\":{},\"isn_rcv\":{},\"wscale\":{}}}",
            ip(self.src_ip),
            self.sport,
            ip(self.dst_ip),
            self.dport,
            self.isn_snd,
            self.isn_rcv,
            self.wscale
        )
    }
}

/// Ones' complement sum of `b` (big-endian 16-bit words) added to `acc`.
fn sum16(mut acc: u32, b: &[u8]) -> u32 {
    let mut chunks = b.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u32) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    !(acc as u16)
}

/// Writes the Ethernet, IPv4 and TCP headers of `seg` into `buf` (cleared first) and returns
/// the frame's whole length (headers and payload). `from_sender`: the segment goes from the
/// flow's sender to its receiver.
pub fn tcp_frame(buf: &mut Vec<u8>, w: &FlowWire, from_sender: bool, seg: &Segment) -> usize {
    buf.clear();
    // TCP options first (their length sets the header's).
    let mut opts = [0u8; 40];
    let mut o = 0;
    let mut put = |bytes: &[u8], o: &mut usize| {
        opts[*o..*o + bytes.len()].copy_from_slice(bytes);
        *o += bytes.len();
    };
    let base_snd = w.isn_snd.wrapping_add(1);
    if seg.syn {
        put(&[2, 4], &mut o);
        put(&w.mss.to_be_bytes(), &mut o);
        match (seg.ts, w.sack_ok) {
            (Some(ts), sack) => {
                put(if sack { &[4, 2] } else { &[1, 1] }, &mut o);
                put(&[8, 10], &mut o);
                put(&ts.val.to_be_bytes(), &mut o);
                put(&ts.ecr.to_be_bytes(), &mut o);
            }
            (None, true) => put(&[1, 1, 4, 2], &mut o),
            (None, false) => {}
        }
        put(&[1, 3, 3, w.wscale], &mut o);
    } else {
        if let Some(ts) = seg.ts {
            put(&[1, 1, 8, 10], &mut o);
            put(&ts.val.to_be_bytes(), &mut o);
            put(&ts.ecr.to_be_bytes(), &mut o);
        }
        let blocks = seg.sack.as_slice();
        // Three blocks fit beside timestamps, four without (the model never sends more).
        let room = (40 - o).saturating_sub(4) / 8;
        let blocks = &blocks[..blocks.len().min(room)];
        if !blocks.is_empty() {
            put(&[1, 1, 5, 2 + 8 * blocks.len() as u8], &mut o);
            for &(a, b) in blocks {
                put(&base_snd.wrapping_add(a as u32).to_be_bytes(), &mut o);
                put(&base_snd.wrapping_add(b as u32).to_be_bytes(), &mut o);
            }
        }
    }
    debug_assert!(o % 4 == 0);
    let tcp_len = TCP + o;
    let ip_total = (IPV4 + tcp_len + seg.len as usize).min(0xFFFF);
    let (src, dst, sport, dport) = if from_sender {
        (w.src_ip, w.dst_ip, w.sport, w.dport)
    } else {
        (w.dst_ip, w.src_ip, w.dport, w.sport)
    };
    let (seq, ack, flags) = match (from_sender, seg.syn) {
        (true, true) => (w.isn_snd, 0, FLAG_SYN),
        (true, false) => (
            base_snd.wrapping_add(seg.seq as u32),
            w.isn_rcv.wrapping_add(1),
            FLAG_ACK,
        ),
        (false, true) => (w.isn_rcv, base_snd, FLAG_SYN | FLAG_ACK),
        (false, false) => (
            w.isn_rcv.wrapping_add(1),
            base_snd.wrapping_add(seg.ack as u32),
            FLAG_ACK,
        ),
    };
    let window = if seg.syn {
        seg.window.min(0xFFFF)
    } else {
        (seg.window >> w.wscale).min(0xFFFF)
    } as u16;
    // Ethernet: sender 02:00:00:00:00:01, receiver 02:00:00:00:00:02, IPv4.
    let (mac_s, mac_r) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let (smac, dmac) = if from_sender {
        (mac_s, mac_r)
    } else {
        (mac_r, mac_s)
    };
    buf.extend_from_slice(&dmac);
    buf.extend_from_slice(&smac);
    buf.extend_from_slice(&[0x08, 0x00]);
    // IPv4.
    let ip_at = buf.len();
    buf.extend_from_slice(&[0x45, 0]);
    buf.extend_from_slice(&(ip_total as u16).to_be_bytes());
    buf.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    buf.extend_from_slice(&src);
    buf.extend_from_slice(&dst);
    let ip_sum = fold(sum16(0, &buf[ip_at..ip_at + IPV4]));
    buf[ip_at + 10..ip_at + 12].copy_from_slice(&ip_sum.to_be_bytes());
    // TCP.
    let tcp_at = buf.len();
    buf.extend_from_slice(&sport.to_be_bytes());
    buf.extend_from_slice(&dport.to_be_bytes());
    buf.extend_from_slice(&seq.to_be_bytes());
    buf.extend_from_slice(&ack.to_be_bytes());
    buf.extend_from_slice(&((((tcp_len / 4) as u16) << 12) | flags).to_be_bytes());
    buf.extend_from_slice(&window.to_be_bytes());
    buf.extend_from_slice(&[0, 0, 0, 0]);
    buf.extend_from_slice(&opts[..o]);
    // Pseudo-header (addresses, protocol, TCP length) and the header; the zero payload adds 0.
    let seg_len = ip_total - IPV4;
    let mut acc = sum16(0, &src);
    acc = sum16(acc, &dst);
    acc += 6 + seg_len as u32;
    acc = sum16(acc, &buf[tcp_at..]);
    let tcp_sum = fold(acc);
    buf[tcp_at + 16..tcp_at + 18].copy_from_slice(&tcp_sum.to_be_bytes());
    ETH + ip_total
}

/// The wire identity of one SCTP association.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AssocWire {
    /// A's and B's address on each destination's path pair.
    pub a_ips: Vec<[u8; 4]>,
    pub b_ips: Vec<[u8; 4]>,
    pub sport: u16,
    pub dport: u16,
    /// Verification tags: A's (carried by B's packets) and B's (carried by A's).
    pub vtag_a: u32,
    pub vtag_b: u32,
}

impl AssocWire {
    /// Association of scenario flow `i` with `dests` destinations under `seed`.
    pub fn new(seed: u64, i: usize, dests: usize) -> AssocWire {
        let n = (i + 1) as u32;
        let (x, y) = ((n >> 8) as u8, n as u8);
        let mut r = Rng::stream(seed, &format!("flow/{i}/vtag"));
        let mut tag = || (r.next_u64() as u32).max(1);
        let (vtag_a, vtag_b) = (tag(), tag());
        AssocWire {
            a_ips: (0..dests).map(|d| [10, 100 + d as u8, x, y]).collect(),
            b_ips: (0..dests).map(|d| [10, 200 + d as u8, x, y]).collect(),
            sport: 40000 + (i % 20000) as u16,
            dport: 5001,
            vtag_a,
            vtag_b,
        }
    }

    fn json(&self, flow: u32) -> String {
        let ips = |v: &[[u8; 4]]| {
            v.iter()
                .map(|a| format!("\"{}.{}.{}.{}\"", a[0], a[1], a[2], a[3]))
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "{{\"flow\":{flow},\"protocol\":\"sctp\",\"a\":[{}],\"b\":[{}],\"sport\":{},\"dport\":{},\"vtag_a\":{},\"vtag_b\":{}}}",
            ips(&self.a_ips),
            ips(&self.b_ips),
            self.sport,
            self.dport,
            self.vtag_a,
            self.vtag_b
        )
    }
}

/// CRC32c (Castagnoli, reflected 0x82F63B78), the SCTP checksum (RFC 9260 Appendix A).
struct Crc32c([u32; 256]);

impl Crc32c {
    const fn new() -> Crc32c {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x82F6_3B78
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        Crc32c(t)
    }

    fn update(&self, mut crc: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            crc = self.0[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8);
        }
        crc
    }

    /// `n` zero bytes.
    fn zeros(&self, mut crc: u32, n: usize) -> u32 {
        for _ in 0..n {
            crc = self.0[(crc & 0xFF) as usize] ^ (crc >> 8);
        }
        crc
    }
}

static CRC32C: Crc32c = Crc32c::new();

fn chunk_header(buf: &mut Vec<u8>, kind: u8, flags: u8, len: usize) {
    buf.push(kind);
    buf.push(flags);
    buf.extend_from_slice(&(len as u16).to_be_bytes());
}

/// Writes the Ethernet, IPv4 and SCTP headers and chunks of `pkt` into `buf` (cleared first),
/// a DATA chunk's zero payload included (`buf` is the whole frame), and returns its length.
/// `from_a`: the packet goes from A to B; `dest`: its destination's path pair.
pub fn sctp_frame(
    buf: &mut Vec<u8>,
    w: &AssocWire,
    from_a: bool,
    dest: usize,
    pkt: &spikelab_sctp::Packet,
) -> usize {
    use spikelab_sctp::Chunk;
    buf.clear();
    let d = dest.min(w.a_ips.len().saturating_sub(1));
    let (src, dst, sport, dport) = if from_a {
        (w.a_ips[d], w.b_ips[d], w.sport, w.dport)
    } else {
        (w.b_ips[d], w.a_ips[d], w.dport, w.sport)
    };
    let is_init = pkt.chunks.iter().any(|c| matches!(c, Chunk::Init { .. }));
    let vtag = match (is_init, from_a) {
        (true, _) => 0,
        (false, true) => w.vtag_b,
        (false, false) => w.vtag_a,
    };
    let (mac_a, mac_b) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let (smac, dmac) = if from_a {
        (mac_a, mac_b)
    } else {
        (mac_b, mac_a)
    };
    buf.extend_from_slice(&dmac);
    buf.extend_from_slice(&smac);
    buf.extend_from_slice(&[0x08, 0x00]);
    let ip_at = buf.len();
    buf.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 132, 0, 0]);
    buf.extend_from_slice(&src);
    buf.extend_from_slice(&dst);
    let sctp_at = buf.len();
    buf.extend_from_slice(&sport.to_be_bytes());
    buf.extend_from_slice(&dport.to_be_bytes());
    buf.extend_from_slice(&vtag.to_be_bytes());
    buf.extend_from_slice(&[0, 0, 0, 0]);
    let own_tag = if from_a { w.vtag_a } else { w.vtag_b };
    let own_ips = if from_a { &w.a_ips } else { &w.b_ips };
    let init_body = |buf: &mut Vec<u8>, n_addrs: u32, extra: u32| {
        buf.extend_from_slice(&own_tag.to_be_bytes());
        buf.extend_from_slice(&(1u32 << 20).to_be_bytes()); // a_rwnd
        buf.extend_from_slice(&10u16.to_be_bytes()); // outbound streams
        buf.extend_from_slice(&10u16.to_be_bytes()); // inbound streams
        buf.extend_from_slice(&1u32.to_be_bytes()); // Initial TSN: the model's first
        for k in 0..n_addrs as usize {
            buf.extend_from_slice(&[0, 5, 0, 8]);
            let ip = own_ips.get(k).copied().unwrap_or(own_ips[0]);
            buf.extend_from_slice(&ip);
        }
        let extra = (extra as usize + 3) & !3;
        if extra >= 4 {
            // RFC 4820 Padding parameter standing for the model's other parameter bytes.
            buf.extend_from_slice(&0x8005u16.to_be_bytes());
            buf.extend_from_slice(&(extra as u16).to_be_bytes());
            buf.resize(buf.len() + extra - 4, 0);
        }
    };
    let mut payload_zeros = 0usize; // zero bytes after the headers (DATA payload, last chunk)
    let n = pkt.chunks.len();
    for (ci, c) in pkt.chunks.iter().enumerate() {
        match c {
            Chunk::Data(dc) => {
                let len = 16 + dc.payload_len as usize;
                chunk_header(buf, 0, 0x03, len);
                buf.extend_from_slice(&(dc.tsn as u32).to_be_bytes());
                buf.extend_from_slice(&dc.stream.to_be_bytes());
                buf.extend_from_slice(&dc.ssn.to_be_bytes());
                buf.extend_from_slice(&dc.ppid.to_be_bytes());
                let padded = (dc.payload_len as usize + 3) & !3;
                if ci + 1 == n {
                    payload_zeros = padded; // kept out of `buf` until the snap length says
                } else {
                    buf.resize(buf.len() + padded, 0);
                }
            }
            Chunk::Sack(sc) => {
                let len = 16 + 4 * sc.gap_blocks.len() + 4 * sc.dup_tsns.len();
                chunk_header(buf, 3, 0, len);
                buf.extend_from_slice(&(sc.cum_tsn_ack as u32).to_be_bytes());
                buf.extend_from_slice(&sc.a_rwnd.to_be_bytes());
                buf.extend_from_slice(&(sc.gap_blocks.len() as u16).to_be_bytes());
                buf.extend_from_slice(&(sc.dup_tsns.len() as u16).to_be_bytes());
                for &(a, b) in &sc.gap_blocks {
                    buf.extend_from_slice(&(a as u16).to_be_bytes());
                    buf.extend_from_slice(&(b as u16).to_be_bytes());
                }
                for &t in &sc.dup_tsns {
                    buf.extend_from_slice(&(t as u32).to_be_bytes());
                }
            }
            Chunk::Init { n_addrs, extra } => {
                let len = c.wire_size();
                chunk_header(buf, 1, 0, len);
                init_body(buf, *n_addrs, *extra);
            }
            Chunk::InitAck {
                n_addrs,
                extra,
                cookie_len,
            } => {
                chunk_header(buf, 2, 0, c.wire_size());
                init_body(buf, *n_addrs, *extra);
                buf.extend_from_slice(&7u16.to_be_bytes());
                buf.extend_from_slice(&((4 + *cookie_len) as u16).to_be_bytes());
                buf.resize(buf.len() + ((*cookie_len as usize + 3) & !3), 0);
            }
            Chunk::CookieEcho { cookie_len } => {
                chunk_header(buf, 10, 0, 4 + *cookie_len as usize);
                buf.resize(buf.len() + ((*cookie_len as usize + 3) & !3), 0);
            }
            Chunk::CookieAck => chunk_header(buf, 11, 0, 4),
            Chunk::Abort => chunk_header(buf, 6, 0, 4),
            Chunk::Heartbeat(h) | Chunk::HeartbeatAck(h) => {
                let kind = if matches!(c, Chunk::Heartbeat(_)) {
                    4
                } else {
                    5
                };
                let info = h.info_len as usize;
                chunk_header(buf, kind, 0, 8 + info);
                buf.extend_from_slice(&1u16.to_be_bytes());
                buf.extend_from_slice(&((4 + info) as u16).to_be_bytes());
                let at = buf.len();
                buf.resize(at + ((info + 3) & !3), 0);
                let mut body = [0u8; 20];
                body[..8].copy_from_slice(&h.sent_ns.to_be_bytes());
                body[8..16].copy_from_slice(&h.nonce.to_be_bytes());
                body[16..20].copy_from_slice(&(h.dest as u32).to_be_bytes());
                let k = info.min(20);
                buf[at..at + k].copy_from_slice(&body[..k]);
            }
        }
    }
    let total = buf.len() - ip_at + payload_zeros;
    let ip_total = total.min(0xFFFF);
    buf[ip_at + 2..ip_at + 4].copy_from_slice(&(ip_total as u16).to_be_bytes());
    let ip_sum = fold(sum16(0, &buf[ip_at..ip_at + IPV4]));
    buf[ip_at + 10..ip_at + 12].copy_from_slice(&ip_sum.to_be_bytes());
    let crc = CRC32C.zeros(CRC32C.update(!0, &buf[sctp_at..]), payload_zeros);
    buf[sctp_at + 8..sctp_at + 12].copy_from_slice(&(!crc).to_le_bytes());
    ETH + ip_total
}

/// Where a packet event is seen, for [`PcapWriter::observe`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Leaves its sending endpoint.
    Launch,
    /// Reaches its receiving endpoint.
    Deliver,
    /// Crosses the boundary before stage `.1` of path `.0` (the path's stage count: its exit).
    Boundary(u16, usize),
}

struct Out {
    point: PcapPoint,
    /// Boundary points: the path index.
    path: Option<u16>,
    tmp: PathBuf,
    dest: PathBuf,
    file: Option<BufWriter<File>>,
}

/// The captures of one run, streamed to disk through a buffer each (bounded memory).
pub struct PcapWriter {
    outs: Vec<Out>,
    /// Per TCP flow (local index).
    flows: Vec<FlowWire>,
    /// Per SCTP association (local index).
    assocs: Vec<AssocWire>,
    snaplen: usize,
    frame: Vec<u8>,
    block: Vec<u8>,
    /// The first write error; the run stops with it.
    error: Option<String>,
}

/// Capture file names: `<dir>/<stem>.pcapng`.
pub fn capture_path(dir: &Path, point: &PcapPoint) -> PathBuf {
    dir.join(format!("{}.pcapng", point.file_stem()))
}

impl PcapWriter {
    /// Opens one temporary file per point in `dir` (created if missing) and writes its header.
    /// `flows` are the TCP flows' wire identities with their scenario flow indices;
    /// `path_index` maps a path name to its index.
    pub fn create(
        dir: &Path,
        points: &[PcapPoint],
        flows: Vec<(u32, FlowWire)>,
        assocs: Vec<(u32, AssocWire)>,
        snaplen: u32,
        meta: &str,
        path_index: impl Fn(&str) -> Option<u16>,
    ) -> io::Result<PcapWriter> {
        std::fs::create_dir_all(dir)?;
        let mut flows_json: Vec<String> = flows.iter().map(|(i, w)| w.json(*i)).collect();
        flows_json.extend(assocs.iter().map(|(i, w)| w.json(*i)));
        let mut w = PcapWriter {
            outs: Vec::new(),
            flows: flows.into_iter().map(|(_, w)| w).collect(),
            assocs: assocs.into_iter().map(|(_, w)| w).collect(),
            snaplen: snaplen as usize,
            frame: Vec::with_capacity(2048),
            block: Vec::with_capacity(4096),
            error: None,
        };
        for point in points {
            let dest = capture_path(dir, point);
            let name = dest
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // `.NAME.PID-HEX.tmp`, the results store's temporary names.
            let salt = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
                ^ (w.outs.len() as u32).wrapping_mul(0x9E37_79B9);
            let tmp = dir.join(format!(".{name}.{}-{salt:08x}.tmp", std::process::id()));
            let label = match point {
                PcapPoint::Sender => "sender".to_string(),
                PcapPoint::Receiver => "receiver".to_string(),
                PcapPoint::Boundary { path, stage } => format!("path.{path}.stage[{stage}]"),
            };
            let path = match point {
                PcapPoint::Boundary { path, .. } => path_index(path),
                _ => None,
            };
            let comment = format!(
                "{{\"point\":\"{label}\",{meta},\"flows\":[{}]}}",
                flows_json.join(",")
            );
            let file = File::create(&tmp)?;
            let mut file = BufWriter::with_capacity(1 << 20, file);
            // SCTP frames are whole: the interface then declares no limit (0).
            let limit = if w.assocs.is_empty() { snaplen } else { 0 };
            let header = pcapng::header(&comment, "spikelab simulator", &[&label], limit);
            file.write_all(&header)?;
            w.outs.push(Out {
                point: point.clone(),
                path,
                tmp,
                dest,
                file: Some(file),
            });
        }
        Ok(w)
    }

    /// Whether any point is a stage boundary (the run must then see each stage hop).
    pub fn needs_stages(&self) -> bool {
        self.outs.iter().any(|o| o.path.is_some())
    }

    /// Records one TCP packet event at `t_ns`: `flow` is the TCP flow's local index, `data`
    /// whether it goes from sender to receiver, `pkt` its id.
    pub fn observe(
        &mut self,
        t_ns: u64,
        seen: Seen,
        flow: usize,
        data: bool,
        pkt: u64,
        seg: &Segment,
    ) {
        let w = self.flows[flow];
        self.observe_with(t_ns, seen, data, pkt, false, |buf| {
            tcp_frame(buf, &w, data, seg)
        });
    }

    /// Records one SCTP packet event: `assoc` is the association's local index and `dest` the
    /// packet's destination, `from_a` whether it goes from A to B.
    pub fn observe_sctp(
        &mut self,
        t_ns: u64,
        seen: Seen,
        (assoc, dest): (usize, usize),
        from_a: bool,
        pkt: u64,
        packet: &spikelab_sctp::Packet,
    ) {
        // Lent out while the frame is built (no copy of its address lists).
        let w = std::mem::take(&mut self.assocs[assoc]);
        self.observe_with(t_ns, seen, from_a, pkt, true, |buf| {
            sctp_frame(buf, &w, from_a, dest, packet)
        });
        self.assocs[assoc] = w;
    }

    #[inline(never)]
    fn observe_with(
        &mut self,
        t_ns: u64,
        seen: Seen,
        data: bool,
        pkt: u64,
        whole: bool,
        build: impl FnOnce(&mut Vec<u8>) -> usize,
    ) {
        if self.error.is_some() {
            return;
        }
        let mut build = Some(build);
        let mut frame_len = 0;
        for i in 0..self.outs.len() {
            let out = &self.outs[i];
            let flags = match (&out.point, seen) {
                (PcapPoint::Sender, Seen::Launch) if data => pcapng::OUTBOUND,
                (PcapPoint::Sender, Seen::Deliver) if !data => pcapng::INBOUND,
                (PcapPoint::Receiver, Seen::Launch) if !data => pcapng::OUTBOUND,
                (PcapPoint::Receiver, Seen::Deliver) if data => pcapng::INBOUND,
                (PcapPoint::Boundary { stage, .. }, Seen::Boundary(p, k))
                    if out.path == Some(p) && *stage == k =>
                {
                    0
                }
                _ => continue,
            };
            if let Some(b) = build.take() {
                frame_len = b(&mut self.frame);
                // The headers are built; the zero payload up to the snap length.
                let keep = if whole {
                    frame_len
                } else {
                    frame_len.min(self.snaplen)
                };
                self.frame.resize(keep.max(self.frame.len()), 0);
                self.frame.truncate(keep);
            }
            self.block.clear();
            let digits = itoa(pkt);
            let d = digits.as_slice();
            let mut comment = [0u8; 24];
            comment[..4].copy_from_slice(b"pkt=");
            comment[4..4 + d.len()].copy_from_slice(d);
            pcapng::packet_block(
                &mut self.block,
                0,
                t_ns,
                &self.frame,
                frame_len as u32,
                (flags != 0).then_some(flags),
                &comment[..4 + d.len()],
            );
            let out = &mut self.outs[i];
            if let Some(f) = out.file.as_mut() {
                if let Err(e) = f.write_all(&self.block) {
                    self.error = Some(format!("{}: {e}", out.tmp.display()));
                }
            }
        }
    }

    /// The first write error, if any.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Flushes, syncs and renames every capture to its final name.
    pub fn commit(mut self) -> io::Result<Vec<PathBuf>> {
        if let Some(e) = self.error.take() {
            return Err(io::Error::other(e));
        }
        let mut done = Vec::new();
        for out in self.outs.iter_mut() {
            if let Some(f) = out.file.take() {
                let file = f.into_inner().map_err(|e| e.into_error())?;
                file.sync_all()?;
                std::fs::rename(&out.tmp, &out.dest)?;
                done.push(out.dest.clone());
            }
        }
        Ok(done)
    }
}

impl Drop for PcapWriter {
    /// An uncommitted writer (a failed or cancelled run) removes its temporary files.
    fn drop(&mut self) {
        for out in self.outs.iter_mut() {
            if out.file.take().is_some() {
                let _ = std::fs::remove_file(&out.tmp);
            }
        }
    }
}

/// Decimal digits of a u64 without allocating.
struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn itoa(mut v: u64) -> Digits {
    let mut d = Digits {
        buf: [0; 20],
        start: 20,
    };
    loop {
        d.start -= 1;
        d.buf[d.start] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use spikelab_tcp::{SackBlocks, Timestamps};

    fn wire() -> FlowWire {
        FlowWire::new(7, 0, 1448, 3 * 1024 * 1024, true)
    }

    fn checksum_ok(frame: &[u8], seg_len: usize) -> (bool, bool) {
        let ip = &frame[ETH..ETH + IPV4];
        let ip_ok = fold(sum16(0, ip)) == 0;
        let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        let tcp = &frame[ETH + IPV4..];
        let mut acc = sum16(0, &ip[12..20]);
        acc += 6 + (total - IPV4) as u32;
        acc = sum16(acc, tcp);
        assert_eq!(tcp.len() + seg_len, total - IPV4);
        (ip_ok, fold(acc) == 0)
    }

    #[test]
    fn a_data_segment_carries_seq_ack_window_timestamps_and_valid_checksums() {
        let w = wire();
        assert_eq!(w.wscale, 6); // 3 MiB >> 6 = 49152 fits 16 bits, >> 5 does not
        let seg = Segment {
            seq: 14480,
            len: 1448,
            window: 3 * 1024 * 1024,
            ts: Some(Timestamps { val: 1234, ecr: 99 }),
            ..Segment::default()
        };
        let mut buf = Vec::new();
        let n = tcp_frame(&mut buf, &w, true, &seg);
        assert_eq!(n, 14 + 20 + 32 + 1448);
        assert_eq!(buf.len(), 14 + 20 + 32);
        let tcp = &buf[34..];
        let seq = u32::from_be_bytes(tcp[4..8].try_into().unwrap());
        assert_eq!(seq, w.isn_snd.wrapping_add(1 + 14480));
        let ack = u32::from_be_bytes(tcp[8..12].try_into().unwrap());
        assert_eq!(ack, w.isn_rcv.wrapping_add(1));
        assert_eq!(tcp[12] >> 4, 8); // 32-byte header
        assert_eq!(tcp[13], 0x10);
        assert_eq!(u16::from_be_bytes([tcp[14], tcp[15]]), 49152);
        assert_eq!(&tcp[20..24], &[1, 1, 8, 10]);
        assert_eq!(u32::from_be_bytes(tcp[24..28].try_into().unwrap()), 1234);
        assert_eq!(checksum_ok(&buf, 1448), (true, true));
    }

    #[test]
    fn an_ack_carries_dsack_then_sack_blocks_in_linux_layout() {
        let w = wire();
        let seg = Segment {
            ack: 1000,
            window: 65536,
            ts: Some(Timestamps { val: 5, ecr: 4 }),
            sack: SackBlocks::from_slice(&[(500, 600), (2000, 3000), (4000, 5000)]),
            ..Segment::default()
        };
        let mut buf = Vec::new();
        let n = tcp_frame(&mut buf, &w, false, &seg);
        assert_eq!(n, 14 + 20 + 20 + 12 + 28); // the model's wire size: 80 + Ethernet
        assert_eq!(n - 14, seg.wire_size() as usize);
        let tcp = &buf[34..];
        assert_eq!(&tcp[32..36], &[1, 1, 5, 26]);
        let left = u32::from_be_bytes(tcp[36..40].try_into().unwrap());
        assert_eq!(left, w.isn_snd.wrapping_add(501));
        assert_eq!(checksum_ok(&buf, 0), (true, true));
    }

    #[test]
    fn syns_carry_mss_sackok_timestamps_and_window_scale_in_60_bytes() {
        let w = wire();
        let seg = Segment {
            syn: true,
            window: 3 * 1024 * 1024,
            ts: Some(Timestamps { val: 0, ecr: 0 }),
            ..Segment::default()
        };
        let mut buf = Vec::new();
        assert_eq!(
            tcp_frame(&mut buf, &w, true, &seg) - 14,
            seg.wire_size() as usize
        );
        let tcp = &buf[34..];
        assert_eq!(tcp[13], 0x02);
        assert_eq!(&tcp[20..28], &[2, 4, 0x05, 0xa8, 4, 2, 8, 10]);
        assert_eq!(&tcp[36..40], &[1, 3, 3, 6]);
        assert_eq!(u16::from_be_bytes([tcp[14], tcp[15]]), 0xFFFF);
        tcp_frame(&mut buf, &w, false, &seg);
        assert_eq!(buf[34 + 13], 0x12);
        assert_eq!(checksum_ok(&buf, 0), (true, true));
    }

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // RFC 3720 B.4 / the CRC catalogue: CRC-32C("123456789") = 0xE3069283.
        assert_eq!(!CRC32C.update(!0, b"123456789"), 0xE306_9283);
        assert_eq!(
            CRC32C.zeros(CRC32C.update(!0, b"ab"), 5),
            CRC32C.update(!0, b"ab\0\0\0\0\0")
        );
    }

    #[test]
    fn sctp_frames_are_the_models_size_with_a_checksum_over_everything() {
        use spikelab_sctp::{Chunk, DataChunk, Packet, SackChunk};
        let w = AssocWire::new(3, 0, 2);
        let data = Packet::single(Chunk::Data(DataChunk {
            tsn: 7,
            stream: 0,
            ssn: 6,
            ppid: 0,
            payload_len: 1452,
            offset: 0,
            tx_id: 0,
            retransmission: 0,
        }));
        let mut buf = Vec::new();
        let n = sctp_frame(&mut buf, &w, true, 1, &data);
        assert_eq!(n, 14 + data.wire_size_ip());
        assert_eq!(buf.len(), 14 + 20 + 12 + 16); // the payload's zeros are left to the caller
        assert_eq!(&buf[26..30], &[10, 101, 0, 1]); // A's address on destination 1
        assert_eq!(
            u32::from_be_bytes(buf[38..42].try_into().unwrap()),
            w.vtag_b
        );
        assert_eq!(u32::from_be_bytes(buf[50..54].try_into().unwrap()), 7);
        // The checksum covers the zero payload: recompute it over the whole packet.
        let mut whole = buf[34..].to_vec();
        whole.resize(n - 34, 0);
        let stored = u32::from_le_bytes(whole[8..12].try_into().unwrap());
        whole[8..12].fill(0);
        assert_eq!(!CRC32C.update(!0, &whole), stored);
        let sack = Packet::single(Chunk::Sack(SackChunk {
            cum_tsn_ack: 10,
            a_rwnd: 1000,
            gap_blocks: vec![(2, 3)],
            dup_tsns: vec![9],
        }));
        let n = sctp_frame(&mut buf, &w, false, 0, &sack);
        assert_eq!((n, buf.len()), (14 + sack.wire_size_ip(), n));
        assert_eq!(&buf[46..48], &[3, 0]);
    }

    #[test]
    fn digits_without_allocating() {
        assert_eq!(itoa(0).as_slice(), b"0");
        assert_eq!(itoa(1234567890123).as_slice(), b"1234567890123");
        assert_eq!(itoa(u64::MAX).as_slice(), b"18446744073709551615");
    }
}
