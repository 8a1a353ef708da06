//! The harness shared by the scripted packet tests (`scripted.rs`, `spurious.rs`, ...): MSS 1000
//! bytes (segment `i` starts at byte `1000·i`), hand-written ACKs, and a sender under script.
#![allow(dead_code)] // each test binary uses a different part

use std::ops::Deref;

use spikelab_core::{SimDuration, SimTime};
use spikelab_tcp::cc::CongestionControl;
use spikelab_tcp::spurious::{DetectorKind, DetectorSet, FrtoVariant, Response, SpuriousConfig};
use spikelab_tcp::{
    RtoConfig, SackBlocks, Segment, TcpConfig, TcpSender, Timestamps, Transmit, TxKind, Variant,
};

pub const MSS: u64 = 1000;
/// The receive window every scripted ACK advertises (the default `rwnd`).
pub const RWND: u64 = 3 * 1024 * 1024;

pub fn ms(x: u64) -> SimTime {
    SimTime::from_millis(x)
}

pub fn dur(x: u64) -> SimDuration {
    SimDuration::from_millis(x)
}

/// Data segment `k` of `mss` bytes with timestamps (1, 1): what the receiver tests feed.
pub fn data_seg(k: u64, mss: u64) -> Segment {
    Segment {
        seq: k * mss,
        len: mss as u32,
        ts: Some(Timestamps { val: 1, ecr: 1 }),
        ..Segment::default()
    }
}

/// The receiver tests' configuration: segments of `mss` bytes, timestamps, SACK with DSACK,
/// delayed ACK every second segment; each test adds what it is about.
pub fn sack_receiver_cfg(mss: u64) -> TcpConfig {
    TcpConfig {
        mss: mss as u32,
        timestamps: true,
        sack: true,
        dsack: true,
        delayed_ack: true,
        delack_segments: 2,
        ..TcpConfig::default()
    }
}

/// A pure ACK.
pub fn ack(n: u64) -> Segment {
    Segment {
        ack: n,
        window: RWND,
        ..Segment::default()
    }
}

/// A pure ACK carrying SACK blocks `[start, end)`, first block first.
pub fn sack(n: u64, blocks: &[(u64, u64)]) -> Segment {
    Segment {
        sack: SackBlocks::from_slice(blocks),
        ..ack(n)
    }
}

/// `seg` with a timestamps option echoing TSecr `ecr`.
pub fn echo(seg: Segment, ecr: u32) -> Segment {
    Segment {
        ts: Some(Timestamps { val: 0, ecr }),
        ..seg
    }
}

/// MSS 1000, no timestamps, no delayed ACK; SACK (and DSACK) only for the SACK variant.
pub fn plain_cfg(variant: Variant, initial_window: u32) -> TcpConfig {
    let sack = variant == Variant::Sack;
    TcpConfig {
        variant,
        mss: MSS as u32,
        initial_window,
        rwnd: RWND,
        timestamps: false,
        sack,
        dsack: sack,
        delayed_ack: false,
        ..TcpConfig::default()
    }
}

/// The detector tests' sender: MSS 1000, RTO min 200 ms, no delayed ACK; timestamps and SACK
/// (with DSACK) as asked; these detectors and this response, F-RTO SACK-enhanced with SACK and
/// basic without.
pub fn detector_cfg(
    variant: Variant,
    iw: u32,
    timestamps: bool,
    sack: bool,
    detectors: &[DetectorKind],
    response: Response,
) -> TcpConfig {
    TcpConfig {
        variant,
        mss: MSS as u32,
        initial_window: iw,
        rwnd: RWND,
        timestamps,
        sack,
        dsack: sack,
        delayed_ack: false,
        rto: RtoConfig {
            min: SimDuration::from_millis(200),
            ..RtoConfig::rfc6298()
        },
        spurious: SpuriousConfig {
            detectors: detectors.iter().fold(DetectorSet::EMPTY, |s, d| s.with(*d)),
            frto: if sack {
                FrtoVariant::SackEnhanced
            } else {
                FrtoVariant::Basic
            },
            linux_frto: true,
            response,
        },
        ..TcpConfig::default()
    }
}

/// (first byte, kind) of each transmission, the shape most assertions compare.
pub fn kinds(txs: &[Transmit]) -> Vec<(u64, TxKind)> {
    txs.iter().map(|t| (t.seg.seq, t.kind)).collect()
}

/// `n` new segments from `from` on.
pub fn new_segments(from: u64, n: u64) -> Vec<(u64, TxKind)> {
    (0..n).map(|i| (from + i * MSS, TxKind::New)).collect()
}

/// A sender under script. Every step drains `poll_transmit` at the same instant (the sender only
/// sends when polled) and checks cwnd ≥ 1 MSS.
pub struct Snd {
    pub s: TcpSender,
}

impl Deref for Snd {
    type Target = TcpSender;
    fn deref(&self) -> &TcpSender {
        &self.s
    }
}

impl Snd {
    pub fn new(cfg: TcpConfig, app_total: Option<u64>) -> Snd {
        Snd {
            s: TcpSender::new(cfg, app_total),
        }
    }

    pub fn with_cc(cfg: TcpConfig, app_total: Option<u64>, cc: Box<dyn CongestionControl>) -> Snd {
        Snd {
            s: TcpSender::with_cc(cfg, app_total, cc),
        }
    }

    pub fn check(&self) {
        assert!(
            self.s.cwnd() >= MSS,
            "cwnd {} fell below one MSS",
            self.s.cwnd()
        );
    }

    pub fn send(&mut self, now: SimTime) -> Vec<Transmit> {
        let mut out = Vec::new();
        while let Some(t) = self.s.poll_transmit(now) {
            out.push(t);
            assert!(out.len() < 10_000, "poll_transmit never returned None");
        }
        self.check();
        out
    }

    pub fn ack(&mut self, now: SimTime, seg: Segment) -> Vec<Transmit> {
        self.s.on_ack(now, &seg);
        self.check();
        self.send(now)
    }

    /// `count` duplicate ACKs of `n`, one per millisecond from `from`; all transmissions.
    pub fn dupack_train(&mut self, from: SimTime, n: u64, count: u64) -> Vec<Transmit> {
        let mut out = Vec::new();
        for i in 0..count {
            out.extend(self.ack(from + dur(i), ack(n)));
        }
        out
    }

    pub fn timer(&mut self, now: SimTime) -> Vec<Transmit> {
        self.s.on_timer(now);
        self.check();
        self.send(now)
    }
}
