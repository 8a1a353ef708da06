//! RFC 5681 §3.1 on a timeout: ssthresh is set unless the segment at SND.UNA was already
//! retransmitted by the timer. Without timestamps Karn's rule can leave the timer backed off
//! after the recovery has made progress; the next timeout, on a segment the timer never sent,
//! must still set ssthresh (review finding: it was held because the timer was backed off).
//! The `linux` estimator's measurement window after a timeout is checked here too: it ends at
//! the highest sequence sent, which the timeout's go-back-N does not rewind.

use spikelab_core::{SimDuration, SimTime};
use spikelab_tcp::{RtoConfig, Segment, TcpConfig, TcpReceiver, TcpSender, Variant};
use std::collections::BTreeMap;

const MSS: u64 = 1000;

/// One flow over a path of `one_way(send time ms)` ms one way for data (ACKs back at once);
/// `drop(seq, nth transmission, send time ms)` loses a data segment; `on_ack` sees the sender
/// after each ACK. Returns, per timer expiry that fired a timeout, (SND.UNA, bytes in flight,
/// ssthresh after).
fn run(
    cfg: TcpConfig,
    until_ms: u64,
    one_way: &dyn Fn(u64) -> u64,
    drop: &dyn Fn(u64, u32, u64) -> bool,
    on_ack: &mut dyn FnMut(&TcpSender),
) -> Vec<(u64, u64, u64)> {
    let rcfg = TcpConfig {
        delayed_ack: false,
        ..cfg.clone()
    };
    let mut s = TcpSender::new(cfg, Some(1_500_000));
    let mut r = TcpReceiver::new(rcfg);
    let mut ev: BTreeMap<(u64, u64), (bool, Segment)> = BTreeMap::new();
    let mut serial = 0u64;
    let mut tx: BTreeMap<u64, u32> = BTreeMap::new();
    let mut timeouts = Vec::new();
    let mut now = SimTime::ZERO;
    loop {
        while let Some(t) = s.poll_transmit(now) {
            let n = tx.entry(t.seg.seq).or_insert(0);
            *n += 1;
            if drop(t.seg.seq, *n, now.as_nanos() / 1_000_000) {
                continue;
            }
            serial += 1;
            let at = now.as_nanos() + one_way(now.as_nanos() / 1_000_000) * 1_000_000;
            ev.insert((at, serial), (true, t.seg));
        }
        let next_ev = ev.keys().next().map(|k| k.0);
        let next_timer = s.next_timer().map(|t| t.as_nanos());
        let t = match (next_ev, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            _ => break,
        };
        if t > until_ms * 1_000_000 {
            break;
        }
        now = SimTime(t);
        if next_ev == Some(t) {
            let k = *ev.keys().next().unwrap();
            let (to_receiver, seg) = ev.remove(&k).unwrap();
            if to_receiver {
                r.on_segment(now, &seg);
                while let Some(a) = r.poll_transmit(now) {
                    serial += 1;
                    ev.insert((t, serial), (false, a));
                }
            } else {
                s.on_ack(now, &seg);
                on_ack(&s);
            }
        } else {
            let (una, flight, before) =
                (s.snd_una(), s.snd_max() - s.snd_una(), s.stats().rto_count);
            s.on_timer(now);
            if s.stats().rto_count > before {
                timeouts.push((una, flight, s.ssthresh()));
            }
        }
    }
    timeouts
}

#[test]
fn a_timeout_on_a_segment_the_timer_never_sent_sets_ssthresh_without_timestamps() {
    let cfg = TcpConfig {
        variant: Variant::NewReno,
        mss: MSS as u32,
        initial_window: 4,
        timestamps: false,
        sack: false,
        dsack: false,
        delayed_ack: false,
        rto: RtoConfig {
            min: SimDuration::from_millis(200),
            ..RtoConfig::rfc6298()
        },
        ..TcpConfig::default()
    };
    // A tail loss early on (one timeout, the timer backs off), then, later, the first
    // transmissions of a stretch of segments are lost: a second, independent timeout.
    let drop = |seq: u64, nth: u32, t: u64| {
        nth == 1 && ((250..270).contains(&t) || (252_000..400_000).contains(&seq))
    };
    let timeouts = run(cfg, 3000, &|_| 50, &drop, &mut |_| {});
    let later = timeouts
        .iter()
        .find(|&&(una, _, _)| una >= 252_000)
        .expect("a timeout on the later loss");
    let (una, flight, ssthresh) = *later;
    // The first timeout on this segment: RFC 5681 (4), ssthresh = max(FlightSize / 2, 2·SMSS).
    let first_on_it = timeouts.iter().position(|t| t.0 == una).unwrap();
    assert_eq!(timeouts[first_on_it], *later);
    assert_eq!(ssthresh, (flight / 2).max(2 * MSS), "timeouts {timeouts:?}");
    assert!(
        timeouts.len() >= 2 && timeouts[0].0 < 252_000,
        "timeouts {timeouts:?}"
    );
}

#[test]
fn after_a_timeout_the_linux_rttvar_decays_once_per_window_of_the_highest_sequence_sent() {
    // Linux `tcp_rtt_estimator`: rttvar falls towards the window's largest mdev only when
    // snd_una passes rtt_seq, the snd_nxt of the window's start, and the kernel's snd_nxt is
    // the highest sequence sent (a timeout retransmits from the queue without rewinding it).
    // While the flight outstanding at the timeout is acknowledged, snd_una passes the rewound
    // snd_nxt at almost every ACK; the window may close once there (rtt_seq predates the
    // timeout), not once per ACK round (5 decays before the fix).
    let cfg = TcpConfig {
        variant: Variant::NewReno,
        mss: MSS as u32,
        initial_window: 40,
        timestamps: true,
        sack: false,
        dsack: false,
        delayed_ack: false,
        rto: RtoConfig::linux(),
        ..TcpConfig::default()
    };
    // The one-way delay jumps from 50 to 300 ms at 150 ms: the RTO (RTT + 200 ms) expires, and
    // the samples of the jump have raised rttvar well above the 200 ms floor.
    let one_way = |t: u64| if t < 150 { 50 } else { 300 };
    let mut acks: Vec<(u64, u64, SimDuration)> = Vec::new();
    let timeouts = run(cfg, 3000, &one_way, &|_, _, _| false, &mut |s| {
        acks.push((s.snd_una(), s.snd_max(), s.rtt().rttvar()))
    });
    assert_eq!(timeouts.len(), 1, "timeouts {timeouts:?}");
    let (una, flight, _) = timeouts[0];
    let high = una + flight;
    assert!(flight >= 20 * MSS, "flight {flight}");
    // The ACKs of the recovery: from the timeout's SND.UNA until the flight is acknowledged.
    let recovery: Vec<_> = acks.iter().filter(|a| a.0 > una && a.0 <= high).collect();
    assert!(recovery.len() >= 4, "recovery ACKs {recovery:?}");
    let decays = recovery.windows(2).filter(|w| w[1].2 < w[0].2).count();
    assert!(
        decays <= 1,
        "rttvar fell {decays} times in one window: {recovery:?}"
    );
}
