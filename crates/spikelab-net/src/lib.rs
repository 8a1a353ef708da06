//! Paths and their stages.
//!
//! A path is an ordered pipeline of stages. Each stage is analytical: given a packet's arrival
//! time it answers at once when the packet leaves (or that it is dropped, and when), with no
//! per-packet state inside the stage beyond a departure record. Stages see packets in
//! arrival-time order (the simulator guarantees it), which is what makes the analytical queue
//! exact. On a path whose stages all keep order ([`Stage::keeps_order`]) the arrival order at
//! every stage is the path's entry order, so the simulator may compute a packet's whole passage
//! when it enters the path (one event per packet instead of one per stage hop).

mod delay;
pub mod harq;
pub mod leo;
pub mod lms;
mod loss;
mod profile;
mod rate;
pub mod rlc;
pub mod stall;
pub mod walkaway;

pub use delay::DelayStage;
pub use harq::{Combining, HarqParams, HarqStage};
pub use lms::{LmsParams, LooParams};
pub use loss::{LossModel, LossStage};
pub use profile::{Profile, ProfileError, ProfileRow};
pub use rate::{Adapt, AdaptParams, QueueLimit, RateSchedule, RateStage, Switching};
pub use rlc::{RlcParams, RlcStage};
pub use stall::{StallParams, StallSchedule, StallStage};

use spikelab_core::SimTime;

/// Why a stage dropped a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DropCause {
    /// The rate stage's drop-tail queue was full.
    QueueFull,
    /// A random (Bernoulli or Gilbert-Elliott) loss.
    Random,
    /// A loss drawn from a time profile's loss column (paper 000 Eq. 2).
    Profile,
    /// A loss listed explicitly in the scenario (packet index or sequence number).
    Deterministic,
    /// A HARQ link could not decode the packet within its transmissions.
    Harq,
    /// An RLC acknowledged-mode link discarded the packet (its residual SDU loss).
    Rlc,
}

impl DropCause {
    pub const ALL: [DropCause; 6] = [
        DropCause::QueueFull,
        DropCause::Random,
        DropCause::Profile,
        DropCause::Deterministic,
        DropCause::Harq,
        DropCause::Rlc,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            DropCause::QueueFull => "queue_full",
            DropCause::Random => "random",
            DropCause::Profile => "profile",
            DropCause::Deterministic => "deterministic",
            DropCause::Harq => "harq",
            DropCause::Rlc => "rlc",
        }
    }
}

/// What a stage needs to know about a packet.
#[derive(Copy, Clone, Debug)]
pub struct PacketInfo {
    /// Bytes on the wire, headers and options included.
    pub wire_size: u32,
    /// First payload byte for a data segment; `None` for a pure ACK.
    pub data_seq: Option<u64>,
}

/// The fate of a packet at one stage.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The packet leaves the stage at this time.
    Pass(SimTime),
    /// The packet is dropped at this time.
    Drop(SimTime, DropCause),
}

/// One stage of a path.
#[derive(Debug)]
pub enum Stage {
    Rate(RateStage),
    Delay(DelayStage),
    Loss(LossStage),
    Harq(HarqStage),
    Rlc(RlcStage),
    Stall(StallStage),
}

impl Stage {
    /// Whether packets leave in the order they arrived (every stage but a reordering delay and
    /// a HARQ link without its reordering buffer). A path whose stages all keep order can be
    /// computed for a packet at once, on entry.
    pub fn keeps_order(&self) -> bool {
        match self {
            Stage::Delay(s) => !s.reorders(),
            Stage::Harq(s) => !s.reorders(),
            Stage::Rate(_) | Stage::Loss(_) | Stage::Rlc(_) | Stage::Stall(_) => true,
        }
    }

    /// The rate stage inside, if this is one.
    pub fn as_rate(&self) -> Option<&RateStage> {
        match self {
            Stage::Rate(s) => Some(s),
            _ => None,
        }
    }

    /// The rate stage inside, if this is one.
    pub fn as_rate_mut(&mut self) -> Option<&mut RateStage> {
        match self {
            Stage::Rate(s) => Some(s),
            _ => None,
        }
    }

    /// The packet `pkt` arrives at time `now`; arrivals must come in non-decreasing time order.
    pub fn on_arrival(&mut self, now: SimTime, pkt: &PacketInfo) -> Outcome {
        match self {
            Stage::Rate(s) => s.on_arrival(now, pkt),
            Stage::Delay(s) => s.on_arrival(now, pkt),
            Stage::Loss(s) => s.on_arrival(now, pkt),
            Stage::Harq(s) => s.on_arrival(now, pkt),
            Stage::Rlc(s) => s.on_arrival(now, pkt),
            Stage::Stall(s) => s.on_arrival(now, pkt),
        }
    }
}

/// A full-sized data packet (1500 bytes on the wire), for the stages' unit tests.
#[cfg(test)]
pub(crate) fn test_packet() -> PacketInfo {
    PacketInfo {
        wire_size: 1500,
        data_seq: Some(0),
    }
}
