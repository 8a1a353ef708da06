//! Endpoints: what the world drives for every flow, whatever its transport.
//!
//! A flow is a connection with two ends, each a sans-IO state machine: TCP's sender and
//! receiver ([`super::tcp`]), SCTP's endpoints A and B ([`super::sctp`]). The world hands an
//! endpoint its start, its timers and the packets that reach it, then polls it for the packets
//! it sends now, one at a time (a packet's entering its path may answer at once: a sender's own
//! queue refuses it, a stage drops it), and re-arms its timer. The endpoint keeps its own
//! ground truth, delivery bookkeeping and time series, and writes its row of the runs table
//! at the end. Connections live in one arena, [`Conn`], dispatched by a `match` (no `dyn`
//! call per event).

use super::sctp::SctpPkt;
use super::*;
use crate::scenario::TraceLevel;
use spikelab_core::{ArenaId, SimDuration, SimTime};

/// One end of a connection: the one that sends the application's data (TCP's sender, SCTP's
/// endpoint A) or the one that receives it (TCP's receiver, SCTP's endpoint B). Data packets
/// go to `Rcv`; acknowledgments (and all B sends) go to `Snd`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Snd = 0,
    Rcv = 1,
}

impl Side {
    /// The direction of the packets this side sends.
    fn sends(self) -> Dir {
        match self {
            Side::Snd => Dir::Data,
            Side::Rcv => Dir::Ack,
        }
    }
}

impl Pkt {
    /// The side the packet goes to.
    fn to(&self) -> Side {
        match self.dir {
            Dir::Data => Side::Rcv,
            Dir::Ack => Side::Snd,
        }
    }
}

/// A connection's timer events: each side's own timer (lazy, [`arm_timer`]), and the wake of a
/// TCP sender held back by TCP Small Queues (which pumps the sending side).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Timer {
    Snd,
    Rcv,
    Wake,
}

impl Timer {
    /// The side it wakes.
    pub(super) fn side(self) -> Side {
        match self {
            Timer::Rcv => Side::Rcv,
            Timer::Snd | Timer::Wake => Side::Snd,
        }
    }
}

/// What the world lends an endpoint while it handles an event: three words, so that building
/// it for every packet and timer costs next to nothing.
pub(super) struct Cx<'a> {
    pub(super) now: SimTime,
    /// The connection's index in the arena (its events carry it).
    pub(super) conn: u32,
    /// The time series are recorded (`--trace timeseries` or more).
    pub(super) series_on: bool,
    /// The heap (for wake-ups of an endpoint's own, TCP Small Queues), the packets
    /// ([`Cx::send`]) and the time series.
    pub(super) io: &'a mut Io,
}

impl Cx<'_> {
    /// The receiving application's in-order data reached `bytes`: the flow's progress, and
    /// its `rcv_nxt` series when it advanced.
    pub(super) fn delivered(&mut self, progress: &mut Progress, flow: u32, bytes: u64) {
        if progress.delivered(self.now, bytes) && self.series_on {
            self.io
                .series
                .push(self.now, flow, VAR_RCV_NXT, bytes as f64);
        }
    }

    /// An RTT sample taken at `at`: the flow's histogram and its `rtt_sample` series.
    pub(super) fn rtt_sample(
        &mut self,
        progress: &mut Progress,
        flow: u32,
        at: SimTime,
        r: SimDuration,
    ) {
        progress.rtt_sample(r);
        if self.series_on {
            self.io
                .series
                .push(at, flow, VAR_RTT_SAMPLE, r.as_secs_f64());
        }
    }
}

impl Cx<'_> {
    /// A packet that side `from` sends now on `path`, put in the world's arena (built in
    /// place: a packet handed back by value cost the dumbbell 15 % of its core time).
    /// `seg`: TCP's segment; for SCTP, what the traces show of the packet (first TSN,
    /// cumulative TSN ack, payload bytes) with its `chunks` kept aside (see `SCTP_FLOW`).
    /// `tx`: the data's transmission number (0 = original; -1 without data); `size`: bytes
    /// on the wire; `event`: its event in the packets trace (`crate::packet_event`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn send(
        &mut self,
        from: Side,
        path: u16,
        mut seg: Segment,
        tx: i32,
        size: u32,
        event: i32,
        chunks: Option<SctpPkt>,
    ) -> Transmit {
        let mut flow = self.conn;
        if let Some(chunks) = chunks {
            // The chunks' slot rides in the unused window field (see `SCTP_FLOW`).
            seg.window = self.io.sctp_pkts.insert(chunks).0 as u64;
            flow |= SCTP_FLOW;
        }
        let io = &mut *self.io;
        let id = io.packets.insert(Pkt {
            id: io.next_pkt,
            flow,
            dir: from.sends(),
            path,
            pseq: 0, // taken on entering the path
            size,
            seg,
            tx,
        });
        io.next_pkt += 1;
        Transmit { id, path, event }
    }
}

/// A packet an endpoint sent ([`Cx::send`]): the world traces it and puts it on `path`.
pub(super) struct Transmit {
    id: ArenaId,
    path: u16,
    event: i32,
}

/// A transport's connection as the world drives it. Each event on a connection is one call
/// here, then [`World::pump`] of the side concerned: `poll_transmit` until it has nothing more
/// to send now, `pumped`, and its timer re-armed from `next_timer`.
pub(super) trait Endpoint {
    /// The flow's index in the scenario.
    fn id(&self) -> u32;
    fn progress(&self) -> &Progress;
    /// The connection starts (its sending side is pumped next).
    fn start(&mut self, cx: &mut Cx);
    /// A timer fired (a side's own slot is freed first, [`fired`]).
    fn on_timer(&mut self, timer: Timer, cx: &mut Cx);
    /// A packet reached side `to` (an SCTP packet's chunks are still in `cx.io.sctp_pkts`).
    fn on_packet(&mut self, to: Side, pkt: &Pkt, cx: &mut Cx);
    /// The next packet `side` sends now, if any.
    fn poll_transmit(&mut self, side: Side, cx: &mut Cx) -> Option<Transmit>;
    /// `side` has sent what it could: its records (variables, completion).
    fn pumped(&mut self, side: Side, cx: &mut Cx);
    /// When `side` wants its timer, and the tie key of that timer event.
    fn next_timer(&self, side: Side) -> Option<SimTime>;
    fn timer_key(&self, side: Side) -> u128;
    /// The packet was dropped at stage `g` of the flat list of stages.
    fn dropped(&mut self, pkt: &Pkt, g: usize);
    /// A sender's own queue (a path's first stage with `backpressure`) refused the packet, or
    /// took it after it waited (`was_held`); it will have left the queue at `leave`.
    fn own_queue_refused(&mut self, _pkt: &Pkt, _now: SimTime) {}
    fn own_queue_entered(&mut self, _dir: Dir, _leave: SimTime, _was_held: bool, _cx: &mut Cx) {}
    /// The runs-table row at the run's `end`, and the flow's markers.
    fn rows(&mut self, end: SimTime, runs: &mut RunsBuilder, markers: &mut Markers);
}

/// The connections of a run: TCP flows first, then SCTP associations, each in scenario order
/// (the order their markers have always been written in).
pub(super) enum Conn {
    Tcp(FlowRt),
    Sctp(sctp::AssocRt),
}

/// An endpoint type among [`Conn`]'s: the connection's endpoint once its type is known.
trait Variant: Endpoint {
    fn of(conn: &mut Conn) -> &mut Self;
}

impl Variant for FlowRt {
    #[inline(always)]
    fn of(conn: &mut Conn) -> &mut FlowRt {
        let Conn::Tcp(e) = conn else { unreachable!() };
        e
    }
}

impl Variant for sctp::AssocRt {
    #[inline(always)]
    fn of(conn: &mut Conn) -> &mut sctp::AssocRt {
        let Conn::Sctp(e) = conn else { unreachable!() };
        e
    }
}

/// Static dispatch over [`Conn`]: `$body` is compiled once per transport.
macro_rules! each {
    ($conn:expr, $e:ident => $body:expr) => {
        match $conn {
            Conn::Tcp($e) => $body,
            Conn::Sctp($e) => $body,
        }
    };
}

impl Endpoint for Conn {
    fn id(&self) -> u32 {
        each!(self, e => e.id())
    }
    fn progress(&self) -> &Progress {
        each!(self, e => e.progress())
    }
    #[inline]
    fn start(&mut self, cx: &mut Cx) {
        each!(self, e => e.start(cx))
    }
    #[inline]
    fn on_timer(&mut self, timer: Timer, cx: &mut Cx) {
        each!(self, e => e.on_timer(timer, cx))
    }
    #[inline]
    fn on_packet(&mut self, to: Side, pkt: &Pkt, cx: &mut Cx) {
        each!(self, e => e.on_packet(to, pkt, cx))
    }
    #[inline]
    fn poll_transmit(&mut self, side: Side, cx: &mut Cx) -> Option<Transmit> {
        each!(self, e => e.poll_transmit(side, cx))
    }
    #[inline]
    fn pumped(&mut self, side: Side, cx: &mut Cx) {
        each!(self, e => e.pumped(side, cx))
    }
    #[inline]
    fn next_timer(&self, side: Side) -> Option<SimTime> {
        each!(self, e => e.next_timer(side))
    }
    #[inline]
    fn timer_key(&self, side: Side) -> u128 {
        each!(self, e => e.timer_key(side))
    }
    #[inline]
    fn dropped(&mut self, pkt: &Pkt, g: usize) {
        each!(self, e => e.dropped(pkt, g))
    }
    fn own_queue_refused(&mut self, pkt: &Pkt, now: SimTime) {
        each!(self, e => e.own_queue_refused(pkt, now))
    }
    fn own_queue_entered(&mut self, dir: Dir, leave: SimTime, was_held: bool, cx: &mut Cx) {
        each!(self, e => e.own_queue_entered(dir, leave, was_held, cx))
    }
    fn rows(&mut self, end: SimTime, runs: &mut RunsBuilder, markers: &mut Markers) {
        each!(self, e => e.rows(end, runs, markers))
    }
}

/// What the world `$w` lends connection `$c` ([`Cx`]), borrowing only the fields it needs.
macro_rules! cx {
    ($w:expr, $c:expr) => {
        Cx {
            now: $w.now,
            conn: $c,
            series_on: $w.level >= TraceLevel::Timeseries,
            io: &mut $w.io,
        }
    };
}
pub(super) use cx;

impl World {
    /// Connection `c` and what it may use while it handles an event.
    #[inline]
    fn conn_cx(&mut self, c: u32) -> (&mut Conn, Cx<'_>) {
        let cx = cx!(self, c);
        (&mut self.conns[c as usize], cx)
    }

    /// Connection `c` starts: its sending side sends what it may.
    pub(super) fn conn_start(&mut self, c: u32) {
        let (conn, mut cx) = self.conn_cx(c);
        conn.start(&mut cx);
        self.pump(c, Side::Snd);
    }

    /// A timer of connection `c` fired.
    pub(super) fn conn_timer(&mut self, c: u32, timer: Timer) {
        let side = timer.side();
        if timer != Timer::Wake {
            fired(&mut self.timers[c as usize][side as usize], self.now);
        }
        let (conn, mut cx) = self.conn_cx(c);
        conn.on_timer(timer, &mut cx);
        self.pump(c, side);
    }

    /// A packet (removed from the arena) reached its endpoint.
    pub(super) fn conn_deliver(&mut self, p: &Pkt) {
        let (c, to) = (p.conn(), p.to());
        let (conn, mut cx) = self.conn_cx(c);
        conn.on_packet(to, p, &mut cx);
        self.pump(c, to);
    }

    /// Sends what side `side` of connection `c` has to send, one packet at a time, then lets
    /// it record and re-arms its timer. One `match` picks the transport and side; the loop is
    /// compiled for each, in a function of its own (as each transport's sender and receiver
    /// had theirs: one function holding the four loops ran the dumbbell 2-3 % slower).
    #[inline]
    fn pump(&mut self, c: u32, side: Side) {
        match (&self.conns[c as usize], side) {
            (Conn::Tcp(_), Side::Snd) => self.pump_snd::<FlowRt>(c),
            (Conn::Tcp(_), Side::Rcv) => self.pump_rcv::<FlowRt>(c),
            (Conn::Sctp(_), Side::Snd) => self.pump_snd::<sctp::AssocRt>(c),
            (Conn::Sctp(_), Side::Rcv) => self.pump_rcv::<sctp::AssocRt>(c),
        }
    }

    #[inline(never)]
    fn pump_snd<E: Variant>(&mut self, c: u32) {
        self.pump_as::<E>(c, Side::Snd)
    }

    #[inline(never)]
    fn pump_rcv<E: Variant>(&mut self, c: u32) {
        self.pump_as::<E>(c, Side::Rcv)
    }

    #[inline(always)]
    fn pump_as<E: Variant>(&mut self, c: u32, side: Side) {
        loop {
            let mut cx = cx!(self, c);
            let e = E::of(&mut self.conns[c as usize]);
            let Some(tx) = e.poll_transmit(side, &mut cx) else {
                break;
            };
            self.trace_pkt(tx.id, tx.event, -1, -1);
            self.offer(tx.id, tx.path);
        }
        let mut cx = cx!(self, c);
        let e = E::of(&mut self.conns[c as usize]);
        e.pumped(side, &mut cx);
        let (at, key) = (e.next_timer(side), e.timer_key(side));
        let slot = &mut self.timers[c as usize][side as usize];
        let ev = Ev::Timer(c, [Timer::Snd, Timer::Rcv][side as usize]);
        arm_timer(&mut self.io.queue, slot, at, key, ev);
    }
}
