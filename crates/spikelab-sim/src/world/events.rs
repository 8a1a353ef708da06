//! The events of the heap and the order of events at one instant (tie keys), and the
//! helpers that queue them.

use spikelab_core::{ArenaId, EventQueue, SimTime};
use spikelab_net::DropCause;

pub(super) enum Ev {
    /// A connection starts (`World::conns`; an SCTP association's client sends its INIT).
    Start(u32),
    /// The packet leaves stages `from..=to` of its path at this instant (their passage was
    /// computed when it entered them): their rows in the packets trace, and, when `cont`, the
    /// packet goes on through the stages after `to` (which does not keep order) from now.
    Hop {
        pkt: ArenaId,
        from: u8,
        to: u8,
        cont: bool,
    },
    DropAt {
        pkt: ArenaId,
        stage: u16,
        cause: DropCause,
    },
    /// The path's first stage (a sender's own queue, `backpressure`) may have room for the
    /// packets it refused.
    Held(u16),
    /// The packet at the head of the path's exit queue leaves the path.
    PathHead(u16),
    /// A timer of a connection.
    Timer(u32, super::endpoint::Timer),
}

// An event is 8 bytes, so a heap entry (time, key, event) stays 32: the heap's sift moves
// entries by plain loads and stores (a larger entry cost 15 % of the dumbbell's core time).
const _: () = assert!(std::mem::size_of::<Ev>() <= 8);

// ---- tie keys --------------------------------------------------------------------------------
//
// Events at one instant pop in the order of a key that says what they are, never when they were
// pushed: a traced run has events (stage-hop rows) that an untraced one does not, and the key
// keeps every event an endpoint sees in the same order whatever else is queued, so a run's
// summary is the same at every trace level. At one instant:
//   1. flow starts, by flow index;
//   2. packet events, by path index, then the packet's place in its path's entry order, then
//      the stage (a packet's stage hops before its leaving the path);
//   3. timers, by flow index, the sender's before the receiver's.
pub(super) const KEY_START: u128 = 0;
pub(super) const KEY_PKT: u128 = 1;
pub(super) const KEY_TIMER: u128 = 2;
/// The `stage` part of a packet's key when it leaves its path (after every stage).
pub(super) const KEY_PATH_EXIT: u32 = 0xFF_FFFF;

pub(super) fn tie_key(class: u128, owner: u32, seq: u64, part: u32) -> u128 {
    debug_assert!(part <= KEY_PATH_EXIT);
    (class << 120) | ((owner as u128) << 88) | ((seq as u128) << 24) | part as u128
}

/// Schedules a packet's drop at stage `stage` of its path at `at` (its own tie key).
pub(super) fn schedule_drop(
    queue: &mut EventQueue<Ev>,
    at: SimTime,
    path: usize,
    pseq: u64,
    stage: usize,
    pkt: ArenaId,
    cause: DropCause,
) {
    queue.push_keyed(
        at,
        tie_key(KEY_PKT, path as u32, pseq, stage as u32),
        Ev::DropAt {
            pkt,
            stage: stage as u16,
            cause,
        },
    );
}

/// A lazy timer's event fired at `now`: its slot is free again if it held this event's time
/// (an event that fires early finds a later time there, [`arm_timer`]).
pub(super) fn fired(scheduled: &mut Option<SimTime>, now: SimTime) {
    if *scheduled == Some(now) {
        *scheduled = None;
    }
}

/// Lazy timers: an endpoint's deadline moves on nearly every ACK, so an event is pushed only
/// when the deadline comes earlier than the earliest one already queued (`scheduled`). An event
/// that fires early finds the deadline later and the endpoint re-arms it then.
pub(super) fn arm_timer(
    queue: &mut EventQueue<Ev>,
    scheduled: &mut Option<SimTime>,
    want: Option<SimTime>,
    key: u128,
    ev: Ev,
) {
    if let Some(want) = want {
        if scheduled.is_none_or(|s| want < s) {
            *scheduled = Some(want);
            queue.push_keyed(want, key, ev);
        }
    }
}
