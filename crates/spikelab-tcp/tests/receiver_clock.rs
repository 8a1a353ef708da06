//! The receiver on the kernel's clock (`linux` profile): the delayed-ACK timer in whole jiffies
//! on the timer wheel, and quick-ACK mode re-entered after a receive gap longer than the
//! receiver's own RTO, which Linux sets from the handshake's SYN-ACK round trip.
//!
//! Kernel evidence (6.18, HZ 250, fidelity suite captures at the receiver): lone segments were
//! ACKed 40-42 ms after they arrived (`loss-1pct`, `tail-loss`); on a 50 ms path
//! (`rate-1mbit`) data after a 672 ms gap was ACKed one segment per ACK, and on a 225 ms path
//! (`delay-step-down`, receiver RTO 675 ms) data after a 329 ms gap every second segment.

use spikelab_core::{SimDuration, SimTime};
use spikelab_tcp::{RtoConfig, Segment, TcpConfig, TcpReceiver, Timestamps};

mod common;

const MSS: u64 = 1448;

fn ms(x: u64) -> SimTime {
    SimTime(x * 1_000_000)
}

fn cfg(timer_hz: u32, idle_rto: bool) -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        timestamps: true,
        sack: true,
        delayed_ack: true,
        delack_timeout: SimDuration::from_millis(40),
        delack_segments: 2,
        quickack: 16,
        quickack_idle_rto: idle_rto,
        timer_hz,
        rto: RtoConfig {
            min: SimDuration::from_millis(200),
            initial: SimDuration::from_secs(1),
            ..TcpConfig::default().rto
        },
        ..TcpConfig::default()
    }
}

fn syn() -> Segment {
    Segment {
        syn: true,
        ts: Some(Timestamps { val: 1, ecr: 0 }),
        ..Segment::default()
    }
}

fn data(k: u64) -> Segment {
    common::data_seg(k, MSS)
}

fn acks(r: &mut TcpReceiver, now: SimTime) -> usize {
    let mut n = 0;
    while r.poll_transmit(now).is_some() {
        n += 1;
    }
    n
}

/// A receiver past its handshake (SYN-ACK at 0, first data after `rtt`; `None`: no handshake)
/// and past the 16 quick ACKs of the connection's start, with segments 0..20 received in order
/// every 10 ms.
fn steady(c: TcpConfig, rtt: Option<u64>) -> (TcpReceiver, SimTime) {
    let mut r = TcpReceiver::new(c);
    if rtt.is_some() {
        r.on_segment(ms(0), &syn());
        assert_eq!(acks(&mut r, ms(0)), 1, "the SYN-ACK");
    }
    let mut now = ms(rtt.unwrap_or(0));
    for k in 0..20 {
        r.on_segment(now, &data(k));
        acks(&mut r, now);
        now = SimTime(now.0 + 10_000_000);
    }
    (r, now)
}

/// After a gap, segments 20..26 arrive 1 ms apart; how many ACKs they draw at once.
fn acks_after_gap(r: &mut TcpReceiver, resume: SimTime) -> usize {
    (0..6)
        .map(|i| {
            let now = SimTime(resume.0 + i * 1_000_000);
            r.on_segment(now, &data(20 + i));
            acks(r, now)
        })
        .sum()
}

#[test]
fn delayed_ack_fires_on_the_jiffy_after_ten_jiffies_at_250_hz() {
    for (hz, arrive_us, fires_us) in [
        // Exact timers: 40 ms after the segment.
        (0, 1_001_000, 1_041_000),
        // HZ 250: jiffy 250 at 1.001 s, expiry jiffy 260, fired on the next tick, 1.044 s.
        (250, 1_001_000, 1_044_000),
        // On a tick boundary: still one tick after the expiry, 44 ms.
        (250, 1_000_000, 1_044_000),
        // HZ 1000: jiffy 1001, expiry 1041, fired at 1.042 s.
        (1000, 1_001_500, 1_042_000),
    ] {
        let mut r = TcpReceiver::new(TcpConfig {
            quickack: 0,
            ..cfg(hz, false)
        });
        let at = SimTime(arrive_us * 1000);
        r.on_segment(at, &data(0));
        assert_eq!(acks(&mut r, at), 0, "one segment waits for the timer");
        assert_eq!(r.next_timer(), Some(SimTime(fires_us * 1000)), "hz {hz}");
    }
}

#[test]
fn quick_ack_after_a_gap_longer_than_the_handshake_rto() {
    // 50 ms handshake: RTO = 50 + max(100, 200) = 250 ms (62.5 -> 63 jiffies at HZ 250).
    for hz in [0, 250] {
        let (mut r, now) = steady(cfg(hz, true), Some(50));
        // A 300 ms gap: quick-ACK mode, one ACK per segment.
        assert_eq!(
            acks_after_gap(&mut r, SimTime(now.0 + 290_000_000)),
            6,
            "hz {hz}"
        );
        let (mut r, now) = steady(cfg(hz, true), Some(50));
        // A 230 ms gap: below the RTO, every second segment.
        assert_eq!(
            acks_after_gap(&mut r, SimTime(now.0 + 220_000_000)),
            3,
            "hz {hz}"
        );
    }
}

#[test]
fn the_handshake_rtt_sets_the_gap_three_times_a_long_rtt() {
    // 225 ms handshake: RTO = 225 + 450 = 675 ms. A 330 ms gap (delay-step-down's) is not idle;
    // a 700 ms one is.
    let (mut r, now) = steady(cfg(250, true), Some(225));
    assert_eq!(acks_after_gap(&mut r, SimTime(now.0 + 320_000_000)), 3);
    let (mut r, now) = steady(cfg(250, true), Some(225));
    assert_eq!(acks_after_gap(&mut r, SimTime(now.0 + 690_000_000)), 6);
}

#[test]
fn without_the_rto_rule_the_fixed_gap_holds() {
    // quickack_idle = 1 s: a 600 ms gap is not idle, whatever the handshake measured.
    let (mut r, now) = steady(cfg(250, false), Some(50));
    assert_eq!(acks_after_gap(&mut r, SimTime(now.0 + 590_000_000)), 3);
    // No handshake: the receiver's RTO is rto.initial (1 s).
    let (mut r, now) = steady(cfg(0, true), None);
    assert_eq!(acks_after_gap(&mut r, SimTime(now.0 + 590_000_000)), 3);
    let (mut r, now) = steady(cfg(0, true), None);
    assert_eq!(acks_after_gap(&mut r, SimTime(now.0 + 1_000_000_000)), 6);
}
