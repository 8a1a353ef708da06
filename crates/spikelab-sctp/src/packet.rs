//! SCTP packets as chunk lists with their RFC 9260 §3 wire sizes. Payload bytes are counted,
//! never carried.
//!
//! TSNs are `u64` from 1 upwards and never wrap (the wire's 32-bit serial arithmetic is not
//! modelled). Fields marked *metadata* are simulator bookkeeping, not on the wire.

/// IPv4 header without options.
pub const IPV4_HEADER: usize = 20;
/// SCTP common header (§3.1): ports, verification tag, checksum.
pub const COMMON_HEADER: usize = 12;
/// DATA chunk header (§3.3.1): type/flags/length, TSN, stream id, SSN, PPID.
pub const DATA_HEADER: usize = 16;
/// SACK chunk fixed part (§3.3.4): header, cum TSN ack, a_rwnd, #gap blocks, #dup TSNs.
pub const SACK_FIXED: usize = 16;
/// INIT / INIT-ACK fixed part (§3.3.2, §3.3.3).
pub const INIT_FIXED: usize = 20;
/// A chunk header (type, flags, length).
pub const CHUNK_HEADER: usize = 4;
/// A parameter TLV header.
pub const PARAM_HEADER: usize = 4;
/// IPv4 Address parameter (§3.3.2.1).
pub const IPV4_ADDR_PARAM: usize = 8;

pub fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataChunk {
    pub tsn: u64,
    pub stream: u16,
    pub ssn: u16,
    pub ppid: u32,
    pub payload_len: u32,
    /// Metadata: byte offset of the payload in the stream (for delivery checks).
    pub offset: u64,
    /// Metadata: the sender's transmission number of this copy, unique per endpoint; lets the
    /// caller tell which transmission of a TSN arrived (ground truth for spurious timeouts).
    pub tx_id: u64,
    /// Metadata: 0 for the first transmission, k for the k-th retransmission.
    pub retransmission: u32,
}

impl DataChunk {
    /// Chunk header + payload, padded to 4 bytes.
    pub fn wire_size(&self) -> usize {
        DATA_HEADER + pad4(self.payload_len as usize)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SackChunk {
    pub cum_tsn_ack: u64,
    pub a_rwnd: u32,
    /// Gap ack blocks as (start, end) offsets from `cum_tsn_ack`, inclusive, ascending.
    pub gap_blocks: Vec<(u32, u32)>,
    pub dup_tsns: Vec<u64>,
}

impl SackChunk {
    pub fn wire_size(&self) -> usize {
        SACK_FIXED + 4 * self.gap_blocks.len() + 4 * self.dup_tsns.len()
    }

    /// The TSNs a gap block covers, absolute.
    pub fn gap_tsns(&self) -> impl Iterator<Item = u64> + '_ {
        self.gap_blocks
            .iter()
            .flat_map(move |&(s, e)| (self.cum_tsn_ack + s as u64)..=(self.cum_tsn_ack + e as u64))
    }
}

/// Heartbeat Information (§3.3.5): the sender's time and destination are all it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatInfo {
    /// Send time in ns (carried in the opaque info).
    pub sent_ns: u64,
    pub dest: usize,
    pub nonce: u64,
    /// Info body length in bytes.
    pub info_len: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chunk {
    Data(DataChunk),
    Sack(SackChunk),
    /// INIT with `n_addrs` IPv4 address parameters and `extra` other parameter bytes.
    Init {
        n_addrs: u32,
        extra: u32,
    },
    /// INIT-ACK: as INIT plus the State Cookie parameter.
    InitAck {
        n_addrs: u32,
        extra: u32,
        cookie_len: u32,
    },
    CookieEcho {
        cookie_len: u32,
    },
    CookieAck,
    Heartbeat(HeartbeatInfo),
    HeartbeatAck(HeartbeatInfo),
    Abort,
}

impl Chunk {
    pub fn wire_size(&self) -> usize {
        match self {
            Chunk::Data(d) => d.wire_size(),
            Chunk::Sack(s) => s.wire_size(),
            Chunk::Init { n_addrs, extra } => {
                INIT_FIXED + IPV4_ADDR_PARAM * *n_addrs as usize + pad4(*extra as usize)
            }
            Chunk::InitAck {
                n_addrs,
                extra,
                cookie_len,
            } => {
                INIT_FIXED
                    + IPV4_ADDR_PARAM * *n_addrs as usize
                    + pad4(*extra as usize)
                    + PARAM_HEADER
                    + pad4(*cookie_len as usize)
            }
            Chunk::CookieEcho { cookie_len } => CHUNK_HEADER + pad4(*cookie_len as usize),
            Chunk::CookieAck | Chunk::Abort => CHUNK_HEADER,
            Chunk::Heartbeat(h) | Chunk::HeartbeatAck(h) => {
                CHUNK_HEADER + PARAM_HEADER + pad4(h.info_len as usize)
            }
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    pub chunks: Vec<Chunk>,
}

impl Packet {
    pub fn single(c: Chunk) -> Packet {
        Packet { chunks: vec![c] }
    }

    /// SCTP packet size: common header + chunks.
    pub fn wire_size(&self) -> usize {
        COMMON_HEADER + self.chunks.iter().map(Chunk::wire_size).sum::<usize>()
    }

    /// Size on the link with an IPv4 header.
    pub fn wire_size_ip(&self) -> usize {
        IPV4_HEADER + self.wire_size()
    }

    pub fn data(&self) -> impl Iterator<Item = &DataChunk> {
        self.chunks.iter().filter_map(|c| match c {
            Chunk::Data(d) => Some(d),
            _ => None,
        })
    }

    pub fn has_data(&self) -> bool {
        self.data().next().is_some()
    }

    pub fn sack(&self) -> Option<&SackChunk> {
        self.chunks.iter().find_map(|c| match c {
            Chunk::Sack(s) => Some(s),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: u32) -> Chunk {
        Chunk::Data(DataChunk {
            tsn: 1,
            stream: 0,
            ssn: 0,
            ppid: 0,
            payload_len: len,
            offset: 0,
            tx_id: 0,
            retransmission: 0,
        })
    }

    #[test]
    fn full_data_packet_fits_mtu_1500_with_1452_payload_bytes() {
        let p = Packet::single(data(1500 - 20 - 12 - 16));
        assert_eq!(p.wire_size_ip(), 1500);
        assert_eq!(p.wire_size(), 1480);
        // Padding: 1 payload byte costs 4.
        assert_eq!(Packet::single(data(1)).wire_size(), 12 + 16 + 4);
    }

    #[test]
    fn sack_with_two_gaps_and_one_dup() {
        let s = SackChunk {
            cum_tsn_ack: 10,
            a_rwnd: 1000,
            gap_blocks: vec![(2, 3), (5, 5)],
            dup_tsns: vec![7],
        };
        let p = Packet::single(Chunk::Sack(s.clone()));
        assert_eq!(p.wire_size(), 12 + 16 + 8 + 4);
        assert_eq!(p.wire_size_ip(), 12 + 16 + 8 + 4 + 20);
        assert_eq!(s.gap_tsns().collect::<Vec<_>>(), vec![12, 13, 15]);
    }

    #[test]
    fn control_chunk_sizes() {
        assert_eq!(
            Chunk::Init {
                n_addrs: 2,
                extra: 0
            }
            .wire_size(),
            36
        );
        assert_eq!(
            Chunk::InitAck {
                n_addrs: 2,
                extra: 0,
                cookie_len: 10
            }
            .wire_size(),
            36 + 4 + 12
        );
        assert_eq!(Chunk::CookieEcho { cookie_len: 10 }.wire_size(), 16);
        assert_eq!(Chunk::CookieAck.wire_size(), 4);
        let hb = HeartbeatInfo {
            sent_ns: 0,
            dest: 0,
            nonce: 0,
            info_len: 30,
        };
        assert_eq!(Chunk::Heartbeat(hb).wire_size(), 4 + 4 + 32);
    }
}
