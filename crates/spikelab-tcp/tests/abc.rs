//! Appropriate byte counting (RFC 3465): slow start grows by min(bytes acknowledged, L·SMSS)
//! per ACK, L = 2 allowed (§2.2), except in the slow start that follows a retransmission
//! timeout, where "a TCP MUST use L=1*SMSS" (§2.3): there one ACK often covers much data the
//! receiver held before the timeout. A limit above 2 (the `linux` profile's 1000, the kernel's
//! uncapped counting) is outside RFC 3465 and has no such rule. Review finding: the first ACK
//! after a timeout took cwnd from 1 to 3 segments.

mod common;
use common::*;
use spikelab_tcp::{TcpConfig, Variant};

fn cfg(limit: u32) -> TcpConfig {
    TcpConfig {
        abc: true,
        abc_limit: limit,
        ..plain_cfg(Variant::NewReno, 10)
    }
}

/// Ten segments out, no ACK, the timer fires at the initial RTO (1 s): cwnd 1 segment,
/// ssthresh max(FlightSize/2, 2·SMSS) = 5 segments, segment 0 sent again.
fn after_a_timeout(limit: u32) -> Snd {
    let mut s = Snd::new(cfg(limit), None);
    assert_eq!(s.send(ms(0)).len(), 10);
    let rtx = s.timer(ms(1000));
    assert_eq!(rtx.len(), 1);
    assert_eq!((s.cwnd(), s.ssthresh()), (MSS, 5 * MSS));
    s
}

#[test]
fn the_slow_start_after_a_timeout_grows_one_smss_per_ack_rfc3465_2_3() {
    let mut s = after_a_timeout(2);
    s.ack(ms(1100), ack(5 * MSS)); // the retransmission and four segments held at the receiver
    assert_eq!(s.cwnd(), 2 * MSS, "L = 1·SMSS after a timeout, not 2");
    s.ack(ms(1200), ack(7 * MSS));
    assert_eq!(s.cwnd(), 3 * MSS);
}

#[test]
fn outside_that_slow_start_l_is_two_segments() {
    let mut s = Snd::new(cfg(2), None);
    s.send(ms(0));
    s.ack(ms(100), ack(5 * MSS));
    assert_eq!(s.cwnd(), 12 * MSS, "L = 2·SMSS in the initial slow start");
    // After a timeout and once cwnd has reached ssthresh, the rule no longer applies.
    let mut s = after_a_timeout(2);
    for (i, acked) in [3u64, 5, 7, 9].into_iter().enumerate() {
        s.ack(ms(1100 + 100 * i as u64), ack(acked * MSS));
    }
    assert_eq!(s.cwnd(), 5 * MSS); // 1 → 2 → 3 → 4 → 5 = ssthresh: slow start is over
}

#[test]
fn the_uncapped_counting_of_the_linux_profile_has_no_such_rule() {
    let mut s = after_a_timeout(1000);
    s.ack(ms(1100), ack(5 * MSS));
    assert_eq!(s.cwnd(), 6 * MSS);
}
