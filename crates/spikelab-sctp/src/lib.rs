//! SCTP as a sans-IO endpoint model (RFC 9260; RFC 4960 defaults selectable; RFC 7829
//! potentially-failed state and primary switchover as options).
//!
//! An [`Endpoint`] never sees a clock, a scheduler or a link: the caller hands it packets with
//! the destination index they arrived on (`on_packet`), the current time (`on_timer`), asks what
//! to send and where (`poll_transmit`) and when to wake it (`next_timer`). See `README.md` for
//! the RFC clause table and what is simplified.
//!
//! [`rto`] (the §6.3.1 estimator with arbitrary gains) and [`rto_study`] (the alpha/beta study
//! of Fallon et al., paper 004 §6.2) are public for analytic use.
//!
//! With the `serde` feature, [`schema`]: the `[flow.sctp]` table of a scenario ([`SctpSpec`]),
//! its defaults from the profile and its checks, beside the model.
//!
//! Maturity: unit-tested against the RFC rules and the paper arithmetic; the endpoints, driven
//! by spikelab-sim, are compared with usrsctp and with ns-2.35's Agent/SCTP by `spikelab
//! fidelity` (docs/fidelity.md).

mod config;
mod endpoint;
pub mod packet;
mod receiver;
pub mod rto;
pub mod rto_study;
#[cfg(feature = "serde")]
pub mod schema;
mod sender;

pub use config::{CcUnit, MaxBurstMode, MissRule, Profile, SctpConfig};
pub use endpoint::{
    AssocState, DataSource, DestStats, Endpoint, EndpointStats, Failover, MarkedTsn, PathState,
    PathView, Role, SctpEvent, T3Record, SSTHRESH_UNSET,
};
pub use packet::{Chunk, DataChunk, HeartbeatInfo, Packet, SackChunk};
pub use receiver::ReceiverStats;
pub use rto::{RtoEstimator, RtoParams};
#[cfg(feature = "serde")]
pub use schema::{SctpSpec, SCTP_PROFILES};
