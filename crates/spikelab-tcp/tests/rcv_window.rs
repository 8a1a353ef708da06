//! The receiver's window with Linux receive-buffer autotuning (`rcv_autotune`): it starts at
//! 64 KB in whole segments, grows two segments per in-order full segment up to its clamp and
//! ACKs each segment that grows it at once (`tcp_grow_window` sets `icsk_ack.quick`); once per
//! receiver RTT the clamp follows the bytes read (`tcp_rcv_space_adjust`). Without it the
//! window is `rwnd` and delayed ACK covers every second segment.

use spikelab_core::SimTime;
use spikelab_tcp::{Segment, TcpConfig, TcpReceiver, Timestamps};

const MSS: u64 = 1448;

fn cfg(autotune: bool) -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        timestamps: true,
        delayed_ack: true,
        delack_segments: 2,
        quickack: 0,
        rcv_autotune: autotune,
        ..TcpConfig::default()
    }
}

fn us(x: u64) -> SimTime {
    SimTime(x * 1000)
}

/// Data segment `k` (whole segments from 0), sent with `ecr` echoed.
fn data(k: u64, ecr: u32) -> Segment {
    Segment {
        seq: k * MSS,
        len: MSS as u32,
        ts: Some(Timestamps { val: 1, ecr }),
        ..Segment::default()
    }
}

/// Feeds segments `from..to` 1 ms apart from `t0_us` and returns (ACKs sent, last window).
fn feed(r: &mut TcpReceiver, from: u64, to: u64, t0_us: u64, ecr: u32) -> (Vec<u64>, u64) {
    let mut acks = Vec::new();
    let mut window = 0;
    for k in from..to {
        let now = us(t0_us + (k - from) * 1000);
        r.on_segment(now, &data(k, ecr));
        if let Some(a) = r.poll_transmit(now) {
            acks.push(a.ack / MSS);
            window = a.window;
        }
    }
    (acks, window)
}

#[test]
fn the_window_grows_two_segments_per_segment_up_to_its_first_clamp_acking_each_at_once() {
    let mut r = TcpReceiver::new(cfg(true));
    // 65535 rounded down to whole segments: 45 of 1448 B, the kernel's SYN-ACK window.
    let (acks, window) = feed(&mut r, 0, 1, 0, 0);
    assert_eq!(acks, vec![1]);
    assert_eq!(window, 45 * MSS + 2 * MSS);
    // Clamp: tcp_rmem[1] = 131072 B times the advertised share 0.61 = 79953 B, reached after
    // the 6th segment (65160 + 6 * 2896 > 79953); every growing segment is ACKed at once.
    let (acks, window) = feed(&mut r, 1, 6, 1000, 0);
    assert_eq!(acks, vec![2, 3, 4, 5, 6]);
    assert_eq!(window, 79_953);
    // Then the clamp holds and delayed ACK covers every second segment.
    let (acks, window) = feed(&mut r, 6, 12, 6000, 0);
    assert_eq!(acks, vec![8, 10, 12]);
    assert_eq!(window, 79_953);
}

#[test]
fn once_a_receiver_rtt_the_clamp_follows_what_was_read_as_dynamic_right_sizing_does() {
    let mut r = TcpReceiver::new(cfg(true));
    // 20 segments over the first 50 ms (ts ticks are 1 ms: echoes of 0 at 50 ms are 50 ms RTT
    // samples once the segments carry the receiver's later values).
    feed(&mut r, 0, 20, 0, 0);
    // The next segments echo tick 20 from 70 ms on: RTT samples of 50 ms and more. The first
    // measurement window began with the first segment (t = 0) and ends at the first segment
    // at least one receiver RTT later, at 70 ms: 21 segments read, more than the initial
    // space of 10, so rcvwin = 2·copied + 16·MSS plus twice its growth share
    // rcvwin·(copied − space)/space.
    let (_, window) = feed(&mut r, 20, 40, 70_000, 20);
    let (copied, space) = (21 * MSS, 10 * MSS);
    let base = 2 * copied + 16 * MSS;
    let clamp = base + 2 * (base * (copied - space) / space);
    assert_eq!(clamp, 268_748);
    // Until 70 ms the window sat at the first clamp; since then it grows two segments per
    // segment (19 segments after the one that moved the clamp, and that one).
    assert_eq!(window, 79_953 + 20 * 2 * MSS);
    // It grows on to the new clamp and stops there.
    let (_, later) = feed(&mut r, 40, 140, 90_000, 40);
    assert!(later.abs_diff(clamp) <= 1, "{later} vs {clamp}");
}

#[test]
fn without_autotuning_the_window_is_rwnd_and_every_second_segment_is_acked() {
    let mut r = TcpReceiver::new(cfg(false));
    let (acks, window) = feed(&mut r, 0, 12, 0, 0);
    assert_eq!(acks, vec![2, 4, 6, 8, 10, 12]);
    assert_eq!(window, TcpConfig::default().rwnd);
}
