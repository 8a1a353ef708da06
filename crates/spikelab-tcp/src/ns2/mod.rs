//! ns-2.35's one-way TCP agents and sinks (`[flow.tcp] profile = "ns2"`): the behaviour of the
//! simulator three of the source papers used (001, 002, 004), with `ns-default.tcl`'s defaults,
//! so that a study can run a paper's experiment as its authors ran it. ns-2 counts packets, not
//! bytes: the agent numbers them as ns-2 does and hands [`Segment`]s of the byte stream to the
//! world, `mss` bytes each (ns-2's `packetSize_`), 40 bytes of headers on the wire.
//!
//! * [`Ns2Agent`]: `Agent/TCP/Reno`, `/Newreno` and `/Sack1` ([`agent`]).
//! * [`Ns2LinuxAgent`]: `Agent/TCP/Linux` with `select_ca cubic` or `hybla` ([`linux`]), its
//!   scoreboard ([`scoreboard1`]) and ns-2.35's congestion-control modules ([`linux_cc`]).
//! * [`Ns2Sink`]: `Agent/TCPSink`, `/DelAck`, `/Sack1`, `/Sack1/DelAck` ([`sink`]).
//! * [`Ns2Rtt`]: the tick-based retransmission timer ([`rtt`]).
//!
//! Validation: `spikelab fidelity --against ns2` runs each scenario of its suite in ns-2.35 and
//! here (docs/fidelity.md, "Against ns-2.35"); docs/models.md, "The ns2 TCP profile", lists
//! every rule with the ns-2 function it comes from.

pub mod agent;
pub mod eifel;
pub mod linux;
pub mod linux_cc;
pub mod rtt;
pub mod scoreboard;
pub mod scoreboard1;
pub mod sink;

pub use agent::Ns2Agent;
pub use linux::Ns2LinuxAgent;
pub use rtt::Ns2Rtt;
pub use sink::Ns2Sink;

use crate::{Segment, IP_TCP_HEADER};

/// Bytes on the wire as ns-2 counts them: 40 bytes of IP and TCP header on every packet (the
/// SYN is header only), 8 per SACK block on an ACK (`Sacker::append_ack`), and on a data
/// packet of an agent with the timestamps option (Eifel) its `ts_option_size_`, 10 bytes
/// (`TcpAgent::headersize`; the sink's ACKs stay 40 bytes).
pub fn wire_size(seg: &Segment) -> u32 {
    let ts = if seg.ts.is_some() && seg.len > 0 {
        10
    } else {
        0
    };
    IP_TCP_HEADER + ts + seg.len + 8 * seg.sack.len() as u32
}
