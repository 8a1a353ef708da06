//! The emulator's capture format: the shared pcapng writer and reader of
//! [`spikelab_core::pcapng`] (the simulator's `--pcap` writes the same blocks).

pub use spikelab_core::pcapng::*;
