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
    // segment: the 19 segments after the one that moved the clamp (that one met the old clamp:
    // the kernel checks the window when a segment arrives and moves the clamp when the
    // application has read it).
    assert_eq!(window, 79_953 + 19 * 2 * MSS);
    // It grows on to the new clamp and stops there (100 segments 0.2 ms apart, all before
    // the next measurement ends at 120 ms).
    let mut later = 0;
    for k in 40..140 {
        let now = us(90_000 + (k - 40) * 200);
        r.on_segment(now, &data(k, 40));
        if let Some(a) = r.poll_transmit(now) {
            later = a.window;
        }
    }
    assert!(later.abs_diff(clamp) <= 1, "{later} vs {clamp}");
}

#[test]
fn without_autotuning_the_window_is_rwnd_and_every_second_segment_is_acked() {
    let mut r = TcpReceiver::new(cfg(false));
    let (acks, window) = feed(&mut r, 0, 12, 0, 0);
    assert_eq!(acks, vec![2, 4, 6, 8, 10, 12]);
    assert_eq!(window, TcpConfig::default().rwnd);
}

#[test]
fn quick_acks_as_the_kernel_counts_them_sixteen_then_one_per_growing_segment() {
    // Kernel 6.18 over a 50 ms path: the first 10-segment flight and the first 12 segments of
    // the next are ACKed one by one, then every second segment (the captures of the fidelity
    // suite). The quick-ACK budget is 16 at the first data; each segment that grows the window
    // sets `quick |= 1`, which gives an even count one more: the 6 growing segments of the
    // first flight keep it at 16, so 16 + 6 = 22 segments are ACKed at once.
    let mut r = TcpReceiver::new(TcpConfig {
        quickack: 16,
        ..cfg(true)
    });
    let mut acks = Vec::new();
    for k in 0..10 {
        let now = us(76_000 + k * 1200);
        r.on_segment(now, &data(k, 25));
        acks.extend(r.poll_transmit(now).map(|a| a.ack / MSS));
    }
    for k in 10..30 {
        // Each pair of the second flight echoes the ACK that released it.
        let now = us(127_000 + (k - 10) * 1200);
        r.on_segment(now, &data(k, 76 + ((k - 10) / 2) as u32));
        acks.extend(r.poll_transmit(now).map(|a| a.ack / MSS));
    }
    let expected: Vec<u64> = (1..=22).chain([24, 26, 28, 30]).collect();
    assert_eq!(acks, expected);
}

#[test]
fn the_receiver_rtt_takes_one_sample_per_echoed_timestamp_and_latches_a_smaller_one() {
    // Segments echoing the same timestamp give one sample (the first); a smaller sample
    // replaces the estimate at once. Measured through when the clamp moves: the measurement
    // that began with the first segment ends at the first segment one receiver RTT later.
    let run = |ecr_late: u32| {
        let mut r = TcpReceiver::new(cfg(true));
        // First segment at 60 ms echoing tick 10: a 50 ms sample. Then segments 1 ms apart
        // all echoing tick 10 (samples of 51, 52, ... ms if each were taken).
        r.on_segment(us(60_000), &data(0, 10));
        r.poll_transmit(us(60_000));
        let (_, w1) = feed(&mut r, 1, 30, 61_000, 10);
        // At 110 ms (50 ms after the first segment) a segment echoing `ecr_late`.
        r.on_segment(us(110_000), &data(30, ecr_late));
        r.poll_transmit(us(110_000));
        let (_, w2) = feed(&mut r, 31, 33, 111_000, ecr_late);
        (w1, w2)
    };
    // The estimate stayed 50 ms (one sample per TSecr): the clamp moves at 110 ms and the
    // next segments grow the window past the first clamp.
    let (w1, w2) = run(60);
    assert_eq!(w1, 79_953);
    assert!(w2 > 79_953, "the clamp moved after one receiver RTT: {w2}");
}
