//! The receiver's SACK compression (`comp_sack`, Linux `__tcp_ack_snd_check` and
//! `tcp_sack_new_ofo_skb`, since 4.19) and its quick-ACK accounting for out-of-order data.
//!
//! With out-of-order data held and quick-ACK mode over, the kernel ACKs the first three
//! segments of each `rcv_nxt` at once (`dup_ack_counter`), then holds ACKs back: until 44
//! (`tcp_comp_sack_nr`) wait, when the next goes at once, or until a timer of
//! min(1 ms, RTT / 20) plus 100 µs of slack fires. The numbers below are those of the kernel
//! 6.18 captures of the fidelity suite (`spike-1p5s`): after the 1.5 s spike the receiver sent
//! one ACK for 45 segments, one for the next 37 plus the hole's repair, then 18 ACKs one per
//! segment.

use spikelab_core::SimTime;
use spikelab_tcp::{Segment, TcpConfig, TcpReceiver, Timestamps};

mod common;

const MSS: u64 = 1448;

fn cfg(quickack: u32) -> TcpConfig {
    TcpConfig {
        quickack,
        comp_sack: 44,
        ..common::sack_receiver_cfg(MSS)
    }
}

fn us(x: u64) -> SimTime {
    SimTime(x * 1000)
}

fn data(k: u64) -> Segment {
    common::data_seg(k, MSS)
}

/// An ACK as (cumulative ACK, right edge of its first SACK block), in segments.
type Ack = (u64, Option<u64>);

fn acks_now(r: &mut TcpReceiver, now: SimTime) -> Vec<Ack> {
    let mut out = Vec::new();
    while let Some(a) = r.poll_transmit(now) {
        out.push((
            a.ack / MSS,
            a.sack.as_slice().first().map(|&(_, e)| e / MSS),
        ));
    }
    out
}

/// Delivers segment `k` at `now` (firing any timer due first) and returns the ACKs sent.
fn deliver(r: &mut TcpReceiver, now: SimTime, k: u64) -> Vec<Ack> {
    let mut out = fire_due(r, now);
    r.on_segment(now, &data(k));
    out.extend(acks_now(r, now));
    out
}

fn fire_due(r: &mut TcpReceiver, now: SimTime) -> Vec<Ack> {
    match r.next_timer() {
        Some(t) if t <= now => {
            r.on_timer(t);
            acks_now(r, t)
        }
        _ => Vec::new(),
    }
}

#[test]
fn three_acks_per_rcv_nxt_go_at_once_then_each_waits_for_the_timer() {
    let mut r = TcpReceiver::new(cfg(0));
    deliver(&mut r, us(0), 0);
    r.on_timer(us(40_000));
    assert_eq!(acks_now(&mut r, us(40_000)), vec![(1, None)]);
    // Segment 1 is lost; 2..8 arrive 1.2 ms apart (10 Mbit/s).
    let mut sent = Vec::new();
    for k in 2..8 {
        let now = us(100_000 + (k - 2) * 1200);
        sent.push((now.0 / 1000, deliver(&mut r, now, k)));
    }
    // The first three at once; the fourth waits 1 ms (no receiver RTT known) + 100 µs slack,
    // and its ACK (SACK up to 6) leaves before segment 6 arrives.
    assert_eq!(sent[0].1, vec![(1, Some(3))]);
    assert_eq!(sent[1].1, vec![(1, Some(4))]);
    assert_eq!(sent[2].1, vec![(1, Some(5))]);
    assert_eq!(sent[3].1, vec![], "held back");
    // Each later ACK is the timer's, 1.1 ms after the segment, before the next one arrives.
    assert_eq!(sent[4].1, vec![(1, Some(6))]);
    assert_eq!(sent[5].1, vec![(1, Some(7))]);
    assert_eq!(r.next_timer(), Some(us(100_000 + 5 * 1200 + 1100)));
    let held = fire_due(&mut r, us(200_000));
    assert_eq!(held, vec![(1, Some(8))]);
}

#[test]
fn without_compression_every_out_of_order_segment_is_acked_at_once() {
    let mut r = TcpReceiver::new(TcpConfig {
        comp_sack: 0,
        ..cfg(0)
    });
    deliver(&mut r, us(0), 0);
    fire_due(&mut r, us(50_000));
    let n: usize = (2..30).map(|k| deliver(&mut r, us(100_000), k).len()).sum();
    assert_eq!(n, 28);
}

#[test]
fn a_burst_after_a_spike_is_acked_as_the_kernel_acks_it() {
    // In-order 0..40, then holes at 40 and 60: 41..59 and 61..65 arrive before the spike
    // (1.2 ms apart), the rest is held by the spike and arrives at once at T, the repair of 40
    // among it. Quick-ACK budget 16 at the start, the receiver's RTO 1 s.
    let mut r = TcpReceiver::new(cfg(16));
    for k in 0..40 {
        deliver(&mut r, us(k * 1200), k);
    }
    fire_due(&mut r, us(60_000));
    let mut t = 100_000;
    for k in (41..60).chain(61..66) {
        deliver(&mut r, us(t), k);
        t += 1200;
    }
    fire_due(&mut r, us(t + 5000));
    let at = us(1_700_000);
    let mut acks = Vec::new();
    // 45 segments: 44 held, the 45th sends one ACK for all of them.
    for k in 66..111 {
        acks.push(deliver(&mut r, at, k));
    }
    assert!(acks[..44].iter().all(|a| a.is_empty()), "{acks:?}");
    assert_eq!(acks[44], vec![(40, Some(111))]);
    // Ten more held, then the hole at 40 is repaired: the first in-order data after a 1.6 s
    // gap re-enters quick-ACK mode, which sends its ACK at once (up to the next hole, 60).
    for k in 111..121 {
        assert!(deliver(&mut r, at, k).is_empty());
    }
    assert_eq!(deliver(&mut r, at, 40), vec![(60, Some(121))]);
    // Quick-ACK mode ACKs the next 15 out-of-order segments one by one (16 with the repair),
    // then the first three for the new rcv_nxt go at once, then ACKs are held again.
    let singles: Vec<usize> = (121..145).map(|k| deliver(&mut r, at, k).len()).collect();
    assert_eq!(singles, [vec![1; 18], vec![0; 6]].concat());
}

#[test]
fn the_timer_is_a_twentieth_of_the_receiver_rtt_when_that_is_shorter() {
    // Autotuning measures the receiver's RTT from the echoed timestamps: 10 ms here, so the
    // timer is 10 ms / 20 = 0.5 ms (+ 100 µs slack) instead of 1 ms.
    let mut r = TcpReceiver::new(TcpConfig {
        rcv_autotune: true,
        ts_tick: spikelab_core::SimDuration::from_millis(1),
        ..cfg(0)
    });
    let seg = |k: u64, ecr: u32| Segment {
        ts: Some(Timestamps { val: 1, ecr }),
        ..data(k)
    };
    // Segment 0 at 20 ms echoing tick 10: a 10 ms sample.
    r.on_segment(us(20_000), &seg(0, 10));
    acks_now(&mut r, us(20_000));
    for k in 2..6 {
        r.on_segment(us(30_000), &seg(k, 10));
        acks_now(&mut r, us(30_000));
    }
    assert_eq!(r.next_timer(), Some(us(30_000 + 500 + 100)));
}

#[test]
fn a_segment_beyond_the_two_newest_sack_blocks_first_sends_what_was_held() {
    // Holes at 1, 10 and 20; blocks 11.. and 21.. are the two newest. With ACKs held, a segment
    // at 5 starts a block outside them: the held ACK leaves before it is recorded (its first
    // SACK block is the newest before it), then segment 5 is held in turn.
    let mut r = TcpReceiver::new(cfg(0));
    deliver(&mut r, us(0), 0);
    fire_due(&mut r, us(50_000));
    let at = us(100_000);
    for k in [2, 3, 4, 11, 12, 21, 22, 23] {
        deliver(&mut r, at, k);
    }
    // 2, 3, 4 went at once; 11, 12, 21, 22, 23 are held.
    assert_eq!(deliver(&mut r, at, 6), vec![(1, Some(24))]);
    assert_eq!(fire_due(&mut r, us(200_000)), vec![(1, Some(7))]);
}
