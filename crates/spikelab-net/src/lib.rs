//! Paths and their stages.
//!
//! A path is an ordered pipeline of stages. Each stage is analytical: given a packet's arrival
//! time it answers at once when the packet leaves (or that it is dropped, and when), with no
//! per-packet state inside the stage beyond a departure record. Stages see packets in
//! arrival-time order (the simulator guarantees it), which is what makes the analytical queue
//! exact. On a path whose stages all keep order ([`Stage::keeps_order`]) the arrival order at
//! every stage is the path's entry order, so the simulator may compute a packet's whole passage
//! when it enters the path (one event per packet instead of one per stage hop).

#[cfg(feature = "serde")]
pub mod config;
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

#[cfg(feature = "serde")]
pub use {
    config::StageSchema,
    delay::DelayConfig,
    harq::HarqConfig,
    loss::{LossConfig, LossKind},
    rate::{
        check_up_reachable, check_up_reachable_packets, stall_follows, AdaptConfig, RateConfig,
        SwitchingConfig, MIN_ADAPT_UP_BYTES,
    },
    rlc::RlcConfig,
    stall::StallConfig,
};

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

/// What the engine asks of every stage's model.
pub trait StageModel {
    /// The packet `pkt` arrives at time `now`; arrivals must come in non-decreasing time order.
    fn on_arrival(&mut self, now: SimTime, pkt: &PacketInfo) -> Outcome;

    /// Whether packets leave in the order they arrived. A path whose stages all keep order can
    /// be computed for a packet at once, on entry.
    fn keeps_order(&self) -> bool {
        true
    }
}

/// The stage types: each a model ([`StageModel`]) and, with the `serde` feature, its
/// configuration in a scenario ([`StageSchema`]), both in the type's own module. Adding a stage
/// type is a module and a line in the list at the end of this file (docs/adding-a-model.md).
macro_rules! stage_types {
    ($( $(#[$doc:meta])* $variant:ident($stage:ty, $config:ty) ),+ $(,)?) => {
        /// One stage of a path.
        #[derive(Debug)]
        pub enum Stage {
            $( $(#[$doc])* $variant($stage), )+
        }

        impl Stage {
            /// Whether packets leave in the order they arrived (every stage but a reordering
            /// delay and a HARQ link without its reordering buffer).
            pub fn keeps_order(&self) -> bool {
                match self {
                    $( Stage::$variant(s) => StageModel::keeps_order(s), )+
                }
            }

            /// The packet `pkt` arrives at time `now`; arrivals must come in non-decreasing
            /// time order.
            #[inline]
            pub fn on_arrival(&mut self, now: SimTime, pkt: &PacketInfo) -> Outcome {
                match self {
                    $( Stage::$variant(s) => StageModel::on_arrival(s, now, pkt), )+
                }
            }
        }

        /// A stage as a scenario gives it: one stage type's own configuration. Written back
        /// as its fields (the scenario's stage adds `type` and `name`).
        #[cfg(feature = "serde")]
        #[derive(Clone, Debug)]
        pub enum StageConfig {
            $( $variant($config), )+
        }

        #[cfg(feature = "serde")]
        impl StageConfig {
            /// Every stage type's `type`.
            pub const TYPES: &'static [&'static str] = &[$( <$config as StageSchema>::TYPE ),+];

            /// Its `type`.
            pub fn type_name(&self) -> &'static str {
                match self {
                    $( StageConfig::$variant(_) => <$config as StageSchema>::TYPE, )+
                }
            }

            /// The fields of the stage type `type_name`, if there is one.
            pub fn fields_of(type_name: &str) -> Option<&'static [&'static str]> {
                $( if type_name == <$config as StageSchema>::TYPE {
                    return Some(<$config as StageSchema>::FIELDS);
                } )+
                None
            }

            /// What the stage type owning `field` says when a stage of type `on` is given it.
            pub fn misplaced(field: &str, on: &str) -> Option<String> {
                $( if <$config as StageSchema>::FIELDS.contains(&field) {
                    if let Some(m) = <$config as StageSchema>::misplaced(field, on) {
                        return Some(m);
                    }
                } )+
                None
            }

            /// Reads the configuration of a stage of type `type_name` from `d` (`None`: no
            /// such type).
            pub fn deserialize_as<'de, D: serde::Deserializer<'de>>(
                type_name: &str,
                d: D,
            ) -> Result<Option<StageConfig>, D::Error> {
                $( if type_name == <$config as StageSchema>::TYPE {
                    let c = <$config as serde::Deserialize>::deserialize(d)?;
                    return Ok(Some(StageConfig::$variant(c)));
                } )+
                Ok(None)
            }

            /// Checks the fields and fills in the defaults ([`StageSchema::resolve`]).
            pub fn resolve(&mut self, at: &str, ctx: &config::ResolveCtx) -> config::Result<()> {
                match self {
                    $( StageConfig::$variant(c) => c.resolve(at, ctx), )+
                }
            }

            /// Checks what depends on the path's other stages ([`StageSchema::check_in_path`]).
            pub fn check_in_path(&self, at: &str, ctx: &config::PathCtx) -> config::Result<()> {
                match self {
                    $( StageConfig::$variant(c) => c.check_in_path(at, ctx), )+
                }
            }

            /// The stage ([`StageSchema::build`]).
            pub fn build(&self, ctx: &config::PathCtx) -> Stage {
                match self {
                    $( StageConfig::$variant(c) => c.build(ctx), )+
                }
            }
        }

        #[cfg(feature = "serde")]
        impl serde::Serialize for StageConfig {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( StageConfig::$variant(c) => c.serialize(s), )+
                }
            }
        }
    };
}

impl Stage {
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
}

#[cfg(feature = "serde")]
impl StageConfig {
    /// The stage is a sender's own queue that pushes back when full (`backpressure`).
    pub fn own_queue(&self) -> bool {
        matches!(self, StageConfig::Rate(r) if r.backpressure == Some(true))
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

stage_types! {
    /// Serialisation at a bit rate behind a drop-tail queue.
    Rate(RateStage, RateConfig),
    /// A fixed or time-varying delay.
    Delay(DelayStage, DelayConfig),
    /// Random, profile-driven or deterministic loss.
    Loss(LossStage, LossConfig),
    /// Hybrid ARQ over a land-mobile-satellite channel (paper 001).
    Harq(HarqStage, HarqConfig),
    /// UMTS RLC acknowledged mode (paper 003).
    Rlc(RlcStage, RlcConfig),
    /// Delivery stalls of a radio bearer (paper 003).
    Stall(StallStage, StallConfig),
}
