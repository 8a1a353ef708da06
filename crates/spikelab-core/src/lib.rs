//! Engine primitives shared by every spikelab crate.
//!
//! * [`SimTime`] / [`SimDuration`]: integer nanoseconds; floats appear only inside formulas.
//! * [`EventQueue`]: a min-heap ordered by (time, tie key); the key says what an event is, so ties do not depend on insertion order.
//! * [`Rng`]: a xoshiro256** stream derived from (master seed, label), so adding a component
//!   never changes another component's random numbers.
//! * [`Arena`]: a slab with a free list; events carry [`ArenaId`]s instead of owned packets.
//! * [`pcapng`]: a small pcapng writer and reader (the emulator's capture, the simulator's `--pcap`).
//! * [`config`]: the one-line errors of a model's configuration, naming the field; with the
//!   `serde` feature, [`units`]: the scenario's values with units (durations, rates, bytes).
//! * [`table`]: the columnar result tables; [`packet_event`]: the packets table's rows and
//!   event codes (the simulator's and the emulator's capture analysis alike).
//! * [`capture`]: a streamed reader of pcap and pcapng files (any byte order and resolution) and
//!   the TCP/SCTP header columns a trace import reads.

mod arena;
pub mod capture;
pub mod config;
pub mod packet_event;
pub mod pcapng;
mod queue;
mod rng;
pub mod table;
mod time;
#[cfg(feature = "serde")]
pub mod units;

pub use arena::{Arena, ArenaId};
pub use queue::EventQueue;
pub use rng::Rng;
pub use time::{SimDuration, SimTime};
