//! The segment as the model sees it, and its size on the wire.

/// IPv4 (20) + TCP (20) header bytes without options.
pub const IP_TCP_HEADER: u32 = 40;

/// RFC 7323 timestamps option values, in ticks of the sender's timestamp clock.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Timestamps {
    pub val: u32,
    pub ecr: u32,
}

/// Up to four SACK blocks `[start, end)`; the first may be a DSACK block (RFC 2883).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    blocks: [(u64, u64); 4],
    n: u8,
}

impl SackBlocks {
    pub fn push(&mut self, start: u64, end: u64) -> bool {
        if (self.n as usize) < self.blocks.len() {
            self.blocks[self.n as usize] = (start, end);
            self.n += 1;
            true
        } else {
            false
        }
    }
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.n as usize]
    }
    pub fn len(&self) -> usize {
        self.n as usize
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub fn from_slice(blocks: &[(u64, u64)]) -> SackBlocks {
        let mut s = SackBlocks::default();
        for &(a, b) in blocks {
            s.push(a, b);
        }
        s
    }
}

/// One TCP segment (data, ACK, or both).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// First payload byte.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Cumulative acknowledgment: next byte expected.
    pub ack: u64,
    /// Advertised receive window, bytes.
    pub window: u64,
    pub ts: Option<Timestamps>,
    pub sack: SackBlocks,
    /// A SYN (from the sender) or SYN-ACK (from the receiver) of the optional handshake.
    pub syn: bool,
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }

    /// Bytes on the wire: IP and TCP headers, options padded to 32 bits as Linux lays them out
    /// (NOP, NOP, TS = 12 bytes; NOP, NOP, SACK = 4 + 8 per block), and the payload.
    pub fn wire_size(&self) -> u32 {
        if self.syn {
            // Linux's SYN and SYN-ACK options: MSS (4), SACK-permitted and timestamps (12),
            // NOP and window scale (4).
            return IP_TCP_HEADER + 20;
        }
        let mut opts = 0;
        if self.ts.is_some() {
            opts += 12;
        }
        if !self.sack.is_empty() {
            opts += 4 + 8 * self.sack.len() as u32;
        }
        IP_TCP_HEADER + opts + self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_size_counts_headers_and_options() {
        let mut s = Segment {
            len: 1448,
            ts: Some(Timestamps::default()),
            ..Segment::default()
        };
        // 1448 + 40 + 12 = 1500: a full Ethernet MTU with timestamps.
        assert_eq!(s.wire_size(), 1500);
        s.len = 0;
        s.sack = SackBlocks::from_slice(&[(1, 2), (3, 4), (5, 6)]);
        // Three blocks fill the 40-byte option space with timestamps: 12 + 28.
        assert_eq!(s.wire_size(), 80);
    }
}
