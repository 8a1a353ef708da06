//! TCP as sans-IO state machines.
//!
//! [`TcpSender`] and [`TcpReceiver`] never see the scheduler, a clock or another component: the
//! caller hands them segments and the current time (`on_ack`, `on_segment`, `on_timer`), asks
//! what to send (`poll_transmit`) and when to wake them (`next_timer`).
//!
//! Sequence numbers are byte offsets from 0 in a `u64` space (no wrap-around); the data stream
//! is cut into segments of `mss` bytes at fixed boundaries, so a segment is identified by its
//! first byte. The handshake is optional (`handshake`); without it connections start
//! established, with the initial RTO.
//!
//! [`ns2`] holds a second implementation: ns-2.35's one-way agents and sinks, for the `ns2`
//! profile; [`Sender`] and [`Receiver`] are whichever of the two a flow runs.
//!
//! Maturity: scripted-packet and whole-run tests pin the RFC rules named in each module; with the
//! `linux` profile the sender is compared with the kernel scenario by scenario (docs/fidelity.md),
//! and the [`ns2`] agents agree with ns-2.35 packet for packet on the ns-2 suite; the RFC
//! behaviours themselves are not validated against another implementation.

pub mod cc;
mod config;
mod endpoint;
pub mod jiffies;
pub mod ns2;
mod receiver;
pub mod rtt;
mod scoreboard;
mod segment;
mod sender;
pub mod spurious;

pub use config::{RtoAlgorithm, RtoConfig, SsthreshBasis, TcpConfig, Variant};
pub use endpoint::{segment_wire_size, Receiver, Sender};
pub use receiver::{ReceiverStats, TcpReceiver};
pub use segment::{SackBlocks, Segment, Timestamps, IP_TCP_HEADER};
pub use sender::{
    CaState, EarlyTimer, Episode, Prr, Rack, SenderStats, SpuriousEvent, TcpSender, Transmit,
    TxKind, UndoLedger, TLP_TIMEOUT_INIT, TLP_TIMEOUT_MIN, WC_DEL_ACK_T,
};
