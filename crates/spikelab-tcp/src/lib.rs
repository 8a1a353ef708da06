//! TCP as sans-IO state machines.
//!
//! [`TcpSender`] and [`TcpReceiver`] never see the scheduler, a clock or another component: the
//! caller hands them segments and the current time (`on_ack`, `on_segment`, `on_timer`), asks
//! what to send (`poll_transmit`) and when to wake them (`next_timer`).
//!
//! Sequence numbers are byte offsets from 0 in a `u64` space (no wrap-around); the data stream
//! is cut into segments of `mss` bytes at fixed boundaries, so a segment is identified by its
//! first byte. There is no handshake: connections start established, with the initial RTO.
//!
//! Maturity: scripted-packet and whole-run tests pin the RFC rules named in each module; the
//! model has not been validated packet-for-packet against a real stack yet.

pub mod cc;
mod config;
pub mod jiffies;
mod receiver;
pub mod rtt;
mod scoreboard;
mod segment;
mod sender;
pub mod spurious;

pub use config::{RtoAlgorithm, RtoConfig, SsthreshBasis, TcpConfig, Variant};
pub use receiver::{ReceiverStats, TcpReceiver};
pub use segment::{SackBlocks, Segment, Timestamps, IP_TCP_HEADER};
pub use sender::{
    CaState, EarlyTimer, Episode, Prr, Rack, SenderStats, SpuriousEvent, TcpSender, Transmit,
    TxKind, UndoLedger, TLP_TIMEOUT_INIT, TLP_TIMEOUT_MIN, WC_DEL_ACK_T,
};
