//! `kernel_rtt_samples`: RTT samples as Linux's `tcp_ack_update_rtt` takes them. The send-time
//! RTT of the oldest newly acknowledged original is preferred to the timestamp echo; an ACK
//! that only SACKs gives the send-time RTT of the oldest newly SACKed original, and every
//! sample clears the timer's backoff (`icsk_backoff = 0`). Without the option only ACKs that
//! advance snd_una give samples (RFC 7323 RTTM, RFC 6298 §3).

use spikelab_core::SimDuration;
use spikelab_tcp::{RtoConfig, TcpConfig, Variant};

mod common;
use common::*;

fn cfg(kernel: bool, timestamps: bool) -> TcpConfig {
    TcpConfig {
        kernel_rtt_samples: kernel,
        timestamps,
        rto: RtoConfig {
            min: dur(200),
            ..RtoConfig::rfc6298()
        },
        ..plain_cfg(Variant::Sack, 4)
    }
}

#[test]
fn the_send_time_sample_is_preferred_to_the_millisecond_timestamp_echo() {
    for (kernel, srtt) in [(true, 100_400_000), (false, 100_000_000)] {
        let mut s = Snd::new(cfg(kernel, true), None);
        s.send(ms(0)); // TSval 0 at the 1 ms tick
        s.ack(ms(100) + SimDuration(400_000), echo(ack(1000), 0));
        assert_eq!(s.rtt().srtt(), Some(SimDuration(srtt)), "kernel {kernel}");
    }
}

#[test]
fn an_ack_that_only_sacks_gives_a_sample_and_clears_the_backoff() {
    for kernel in [true, false] {
        let mut s = Snd::new(cfg(kernel, false), None);
        s.send(ms(0)); // segments 0-3
        s.ack(ms(100), ack(1000)); // sample 100 ms; segments 4 and 5 go out at 100 ms
        assert_eq!(s.rtt().srtt(), Some(dur(100)));
        let expiry = s.next_timer().expect("the RTO is armed");
        s.timer(expiry); // segment 1 again, the timer backed off
        assert_eq!(s.rtt().backoff_count(), 1);
        // Segment 2's original, sent at 0, is SACKed 50 ms after the expiry.
        let at = expiry + dur(50);
        s.ack(at, sack(1000, &[(2000, 3000)]));
        if kernel {
            let r = at.since(ms(0));
            // RFC 6298 (2.3) with the 100 ms history: SRTT = 7/8·100 + 1/8·R.
            let srtt = (0.875 * 100e6 + 0.125 * r.as_nanos() as f64).round() as u64;
            assert_eq!(s.rtt().srtt(), Some(SimDuration(srtt)));
            assert_eq!(
                s.rtt().backoff_count(),
                0,
                "tcp_ack_update_rtt clears the backoff"
            );
        } else {
            assert_eq!(
                s.rtt().srtt(),
                Some(dur(100)),
                "no sample without a cumulative ACK"
            );
            assert_eq!(s.rtt().backoff_count(), 1);
        }
    }
}

#[test]
fn an_ack_of_a_retransmitted_segment_gives_no_send_time_sample() {
    // Karn: the head was retransmitted, so the ACK covering it gives no sequence sample; no
    // SACK and no timestamps leave nothing, and the backoff stays.
    let mut s = Snd::new(cfg(true, false), None);
    s.send(ms(0));
    s.ack(ms(100), ack(1000));
    let expiry = s.next_timer().unwrap();
    s.timer(expiry);
    s.ack(expiry + dur(100), ack(2000));
    assert_eq!(s.rtt().srtt(), Some(dur(100)));
    assert_eq!(s.rtt().backoff_count(), 1);
    // With timestamps the echo of the retransmission is the sample (the kernel's fallback).
    let mut s = Snd::new(cfg(true, true), None);
    s.send(ms(0));
    s.ack(ms(100), echo(ack(1000), 0));
    let expiry = s.next_timer().unwrap();
    s.timer(expiry);
    let echoed = (expiry.as_nanos() / 1_000_000) as u32;
    s.ack(expiry + dur(80), echo(ack(2000), echoed));
    assert_eq!(s.rtt().backoff_count(), 0);
    let srtt = (0.875 * 100e6 + 0.125 * 80e6) as u64;
    assert_eq!(s.rtt().srtt(), Some(SimDuration(srtt)));
}
