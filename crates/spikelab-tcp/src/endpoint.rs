//! The two TCP implementations behind one face: this crate's RFC and Linux sender and receiver
//! ([`TcpSender`], [`TcpReceiver`]) and ns-2.35's agents and sink ([`Ns2Agent`],
//! [`Ns2LinuxAgent`], [`Ns2Sink`]),
//! chosen by [`TcpConfig::ns2`]. The simulator drives a flow through [`Sender`] and
//! [`Receiver`] whichever it runs.

use crate::ns2::{self, Ns2Agent, Ns2LinuxAgent, Ns2Sink};
use crate::{CaState, Segment, SenderStats, SpuriousEvent, TcpConfig, TcpReceiver, TcpSender};
use crate::{Transmit, TxKind};
use spikelab_core::{SimDuration, SimTime};

/// A flow's data sender.
#[allow(clippy::large_enum_variant)]
pub enum Sender {
    Tcp(TcpSender),
    Ns2(Ns2Agent),
    Ns2Linux(Ns2LinuxAgent),
}

/// A flow's receiver.
#[allow(clippy::large_enum_variant)]
pub enum Receiver {
    Tcp(TcpReceiver),
    Ns2(Ns2Sink),
}

/// Forwards a call to whichever implementation runs.
macro_rules! either {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            Self::Tcp($s) => $e,
            Self::Ns2($s) => $e,
            Self::Ns2Linux($s) => $e,
        }
    };
}

/// [`either!`] for the receiver (one ns-2 sink family).
macro_rules! either_rcv {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            Self::Tcp($s) => $e,
            Self::Ns2($s) => $e,
        }
    };
}

impl Sender {
    /// The sender `cfg` asks for; `app_total` bytes to send (`None`: bulk).
    pub fn new(cfg: TcpConfig, app_total: Option<u64>) -> Sender {
        if Ns2LinuxAgent::wanted(&cfg) {
            Sender::Ns2Linux(Ns2LinuxAgent::new(cfg, app_total))
        } else if cfg.ns2 {
            Sender::Ns2(Ns2Agent::new(cfg, app_total))
        } else {
            Sender::Tcp(TcpSender::new(cfg, app_total))
        }
    }
    /// This crate's sender, when it runs.
    pub fn tcp(&self) -> Option<&TcpSender> {
        match self {
            Sender::Tcp(s) => Some(s),
            Sender::Ns2(_) | Sender::Ns2Linux(_) => None,
        }
    }
    /// The congestion control's name (ns-2's Reno, NewReno and Sack1 agents grow as Reno).
    pub fn cc_name(&self) -> &'static str {
        match self {
            Sender::Tcp(s) => s.cc().name(),
            Sender::Ns2(_) => <crate::cc::RenoParams as crate::cc::CcParams>::NAME,
            Sender::Ns2Linux(s) => s.cc_name(),
        }
    }
    pub fn on_ack(&mut self, now: SimTime, seg: &Segment) {
        either!(self, s => s.on_ack(now, seg))
    }
    pub fn on_timer(&mut self, now: SimTime) {
        either!(self, s => s.on_timer(now))
    }
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Transmit> {
        either!(self, s => s.poll_transmit(now))
    }
    pub fn next_timer(&self) -> Option<SimTime> {
        either!(self, s => s.next_timer())
    }
    /// The sender's own queue is full: hold back (ns-2's agents have no such queue).
    pub fn pause(&mut self, now: SimTime) {
        if let Sender::Tcp(s) = self {
            s.pause(now)
        }
    }
    pub fn local_congestion(&mut self, now: SimTime) {
        if let Sender::Tcp(s) = self {
            s.local_congestion(now)
        }
    }
    pub fn is_done(&self) -> bool {
        either!(self, s => s.is_done())
    }
    pub fn config(&self) -> &TcpConfig {
        either!(self, s => s.config())
    }
    pub fn stats(&self) -> &SenderStats {
        either!(self, s => s.stats())
    }
    pub fn last_rtt_sample(&self) -> Option<SimDuration> {
        either!(self, s => s.last_rtt_sample())
    }
    pub fn snd_una(&self) -> u64 {
        either!(self, s => s.snd_una())
    }
    pub fn snd_nxt(&self) -> u64 {
        either!(self, s => s.snd_nxt())
    }
    pub fn snd_max(&self) -> u64 {
        either!(self, s => s.snd_max())
    }
    pub fn cwnd(&self) -> u64 {
        either!(self, s => s.cwnd())
    }
    pub fn ssthresh(&self) -> u64 {
        either!(self, s => s.ssthresh())
    }
    pub fn inflight(&self) -> u64 {
        either!(self, s => s.inflight())
    }
    pub fn state(&self) -> CaState {
        either!(self, s => s.state())
    }
    pub fn pending_kind(&self) -> Option<TxKind> {
        either!(self, s => s.pending_kind())
    }
    pub fn srtt(&self) -> Option<SimDuration> {
        match self {
            Sender::Tcp(s) => s.rtt().srtt(),
            Sender::Ns2(s) => s.srtt(),
            Sender::Ns2Linux(s) => s.srtt(),
        }
    }
    pub fn rttvar(&self) -> SimDuration {
        match self {
            Sender::Tcp(s) => s.rtt().rttvar(),
            Sender::Ns2(s) => s.rttvar(),
            Sender::Ns2Linux(s) => s.rttvar(),
        }
    }
    pub fn rto(&self) -> SimDuration {
        either!(self, s => s.rto())
    }
    pub fn timeout_time(&self, now: SimTime) -> SimDuration {
        either!(self, s => s.timeout_time(now))
    }
    pub fn spurious_events(&self) -> &[SpuriousEvent] {
        either!(self, s => s.spurious_events())
    }
    pub fn clear_spurious_events(&mut self) {
        either!(self, s => s.clear_spurious_events())
    }
}

impl Receiver {
    /// The receiver `cfg` asks for.
    pub fn new(cfg: TcpConfig) -> Receiver {
        if cfg.ns2 {
            Receiver::Ns2(Ns2Sink::new(&cfg))
        } else {
            Receiver::Tcp(TcpReceiver::new(cfg))
        }
    }
    /// A data segment arrives; false when the receiver discarded it unread (PAWS: ns-2's sinks
    /// accept every segment).
    pub fn on_segment(&mut self, now: SimTime, seg: &Segment) -> bool {
        match self {
            Self::Tcp(r) => r.on_segment(now, seg),
            Self::Ns2(r) => {
                r.on_segment(now, seg);
                true
            }
        }
    }
    pub fn on_timer(&mut self, now: SimTime) {
        either_rcv!(self, r => r.on_timer(now))
    }
    /// Data segments PAWS discarded (RFC 7323 §5.3; ns-2's sinks: none).
    pub fn paws_rejected(&self) -> u64 {
        match self {
            Self::Tcp(r) => r.stats().paws_rejected,
            Self::Ns2(_) => 0,
        }
    }
    pub fn poll_transmit(&mut self, now: SimTime) -> Option<Segment> {
        either_rcv!(self, r => r.poll_transmit(now))
    }
    pub fn next_timer(&self) -> Option<SimTime> {
        either_rcv!(self, r => r.next_timer())
    }
    pub fn rcv_nxt(&self) -> u64 {
        either_rcv!(self, r => r.rcv_nxt())
    }
}

/// A segment's bytes on the wire as the implementation that sent it counts them.
pub fn segment_wire_size(ns2: bool, seg: &Segment) -> u32 {
    if ns2 {
        ns2::wire_size(seg)
    } else {
        seg.wire_size()
    }
}
