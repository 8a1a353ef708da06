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

/// `cfg` with Linux's adaptive delayed-ACK timeout (`delack_timeout = "ato"`).
fn ato_cfg(timer_hz: u32, ato: bool) -> TcpConfig {
    TcpConfig {
        delack_ato: ato,
        ..cfg(timer_hz, true)
    }
}

/// Feeds segments `first..first + n` every `gap_ms` from `start`, firing the delayed-ACK timer
/// whenever it falls due before the next arrival (or within `gap_ms` after the last); returns,
/// per ACK, how long after the latest segment it left (0: at once).
fn spaced(
    r: &mut TcpReceiver,
    start: SimTime,
    first: u64,
    n: u64,
    gap_ms: u64,
) -> Vec<SimDuration> {
    let mut out = Vec::new();
    let mut last = start;
    for i in 0..=n {
        let arrive = SimTime(start.0 + i * gap_ms * 1_000_000);
        while let Some(t) = r.next_timer().filter(|&t| t <= arrive) {
            r.on_timer(t);
            for _ in 0..acks(r, t) {
                out.push(t.since(last));
            }
        }
        if i == n {
            break;
        }
        r.on_segment(arrive, &data(first + i));
        for _ in 0..acks(r, arrive) {
            out.push(SimDuration::ZERO);
        }
        last = arrive;
    }
    out
}

#[test]
fn a_missed_delayed_ack_doubles_ato_so_the_next_pair_is_acked_together() {
    // Segments every 48 ms (a 250 kbit/s link), 100 ms handshake. The fixed 40 ms timer
    // (40-44 ms on the wheel) fires before each next segment: one ACK per segment. Linux's
    // `ato` doubles when the timer fires (80 ms), then follows the spacing (ato/2 + m = 88,
    // armed for min(88, SRTT 100 ms, 200 ms)): after the first, one ACK per two segments. The
    // kernel's capture of that link (docs/fidelity.md) has 6 timer-fired ACKs in 30 s, 115
    // two-segment ACKs; the fixed timer gave 192 timer-fired ones.
    let (mut fixed, now) = steady(ato_cfg(250, false), Some(100));
    let f = spaced(&mut fixed, now, 20, 20, 48);
    assert_eq!(f.len(), 20, "{f:?}");
    assert!(
        f.iter().all(|&d| d >= SimDuration::from_millis(40)),
        "{f:?}"
    );

    let (mut ato, now) = steady(ato_cfg(250, true), Some(100));
    let a = spaced(&mut ato, now, 20, 20, 48);
    let timer: Vec<_> = a.iter().filter(|&&d| d > SimDuration::ZERO).collect();
    assert_eq!(
        timer.len(),
        1,
        "only the first lone segment waits for the timer: {a:?}"
    );
    assert!(*timer[0] <= SimDuration::from_millis(44));
    assert_eq!(a.len(), 1 + 19 / 2, "then one ACK per two segments: {a:?}");
}

#[test]
fn ato_follows_the_segment_spacing_and_bounds_the_next_timer() {
    // Segments every 36 ms (9 jiffies, between ATO_MIN/2 = 5 and ato): ato -> ato/2 + 9, from
    // 10 jiffies: 14, 16, 17, 17, ... A lone segment then waits 17 jiffies (68 ms, +1 tick on
    // the wheel), not 40 ms. Handshake 300 ms, so the SRTT bound (75 jiffies) does not bite.
    let (mut r, now) = steady(ato_cfg(250, true), Some(300));
    let a = spaced(&mut r, now, 20, 10, 36);
    assert!(
        a.iter().all(|&d| d == SimDuration::ZERO),
        "pairs ACKed at once: {a:?}"
    );
    // The 11th segment, 36 ms on, is alone.
    let lone = SimTime(now.0 + 10 * 36_000_000);
    r.on_segment(lone, &data(30));
    assert_eq!(acks(&mut r, lone), 0);
    assert_eq!(
        r.next_timer().map(|t| t.since(lone)),
        Some(SimDuration::from_millis(72)),
        "17 jiffies from a tick boundary fire on the 18th"
    );
    // Back-to-back data (m <= 5 jiffies) brings ato back to 10: 17 -> 13 -> 11 -> 10.
    let mut t = SimTime(lone.0 + 72_000_000);
    r.on_timer(t);
    acks(&mut r, t);
    for k in 31..39 {
        t = SimTime(t.0 + 4_000_000);
        r.on_segment(t, &data(k));
        acks(&mut r, t);
    }
    t = SimTime(t.0 + 4_000_000);
    r.on_segment(t, &data(39));
    assert_eq!(acks(&mut r, t), 0);
    assert_eq!(
        r.next_timer().map(|x| x.since(t)),
        Some(SimDuration::from_millis(44))
    );
}

#[test]
fn on_a_slow_uplink_the_timer_grows_to_200_ms() {
    // Segments every 208 ms (52 jiffies: a 58 kbit/s uplink), 1 s handshake (receiver RTO
    // 3 s, SRTT 250 jiffies). Each lone segment's timer fires and doubles ato: 10, 20, 40,
    // then the spacing pulls it in (40 + 52 = 92 > 80), and TCP_DELACK_MAX (50 jiffies)
    // bounds the timer. From tick boundaries each fires one tick after its expiry.
    let (mut r, now) = steady(ato_cfg(250, true), Some(1000));
    let a = spaced(&mut r, now, 20, 6, 208);
    let ms = |x| SimDuration::from_millis(x);
    assert_eq!(a, vec![ms(44), ms(84), ms(164), ms(204), ms(204), ms(204)]);
    // Exact timers (no jiffies): the same rule in nanoseconds.
    let (mut r, now) = steady(ato_cfg(0, true), Some(1000));
    let a = spaced(&mut r, now, 20, 4, 208);
    assert_eq!(a, vec![ms(40), ms(80), ms(160), ms(200)]);
}

#[test]
fn a_duplicate_segment_resets_ato_to_the_minimum() {
    let (mut r, now) = steady(ato_cfg(250, true), Some(1000));
    let a = spaced(&mut r, now, 20, 3, 208);
    assert_eq!(a.last(), Some(&SimDuration::from_millis(164)));
    let t = SimTime(now.0 + 3 * 208_000_000);
    r.on_segment(t, &data(5));
    assert_eq!(acks(&mut r, t), 1, "a duplicate is ACKed at once (DSACK)");
    // Quick-ACK mode (16 ACKs) runs first; after it, a lone segment waits 40 ms again.
    let mut t = t;
    for k in 23..40 {
        t = SimTime(t.0 + 4_000_000);
        r.on_segment(t, &data(k));
        acks(&mut r, t);
    }
    let lone = SimTime(t.0 + 8_000_000);
    r.on_segment(lone, &data(40));
    assert_eq!(acks(&mut r, lone), 0);
    assert_eq!(
        r.next_timer().map(|x| x.since(lone)),
        Some(SimDuration::from_millis(44))
    );
}
