//! The optional handshake (`handshake = true`): SYN first, data after the SYN-ACK; the SYN on
//! the RTO timer (RFC 6298 (2.1): 1 s, backed off); Karn's rule for the SYN-ACK's sample, or
//! the timestamp echo's sample; a 3 s RTO when a lost SYN left no sample (RFC 6298 (5.7));
//! one segment of cwnd after a lost SYN (RFC 5681 §3.1), after two with the `linux` estimator
//! (Linux `tcp_init_transfer`).

use spikelab_core::SimDuration;
use spikelab_tcp::{RtoConfig, Segment, TcpConfig, TcpReceiver, Timestamps, TxKind};

mod common;
use common::*;

fn cfg() -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        initial_window: 4,
        handshake: true,
        delayed_ack: false,
        ..TcpConfig::default()
    }
}

fn synack() -> Segment {
    Segment {
        syn: true,
        ..ack(0)
    }
}

#[test]
fn syn_first_then_data_after_the_synack_with_its_rtt_sample() {
    let mut s = Snd::new(cfg(), None);
    let out = s.send(ms(0));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].kind, TxKind::Syn);
    assert!(out[0].seg.syn && out[0].seg.len == 0);
    assert_eq!(out[0].seg.wire_size(), 60);
    assert!(!s.established());
    assert_eq!(
        s.next_timer(),
        Some(ms(1000)),
        "RFC 6298 (2.1): initial RTO 1 s"
    );
    // No data before the SYN-ACK, whatever the ACKs say.
    assert!(s.ack(ms(10), ack(0)).is_empty());
    let out = s.ack(ms(50), synack());
    assert!(s.established());
    assert_eq!(kinds(&out), new_segments(0, 4));
    assert_eq!(s.rtt().srtt(), Some(SimDuration::from_millis(50)));
}

#[test]
fn a_lost_syn_is_sent_again_at_1_s_then_2_s_later_and_data_starts_with_one_segment() {
    let mut s = Snd::new(cfg(), None);
    s.send(ms(0));
    let out = s.timer(ms(1000));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].kind, TxKind::Syn);
    assert_eq!(s.next_timer(), Some(ms(3000)), "backed off to 2 s");
    assert_eq!(kinds(&s.timer(ms(3000))), vec![(0, TxKind::Syn)]);
    assert_eq!(s.next_timer(), Some(ms(7000)));
    let out = s.ack(ms(3050), synack());
    // Karn: no sample from a retransmitted SYN (this SYN-ACK echoes no timestamp); one
    // segment of cwnd.
    assert_eq!(s.rtt().srtt(), None);
    assert_eq!(s.cwnd(), MSS);
    assert_eq!(kinds(&out), new_segments(0, 1));
    assert_eq!(s.stats().rto_count, 0, "SYN timeouts are not data timeouts");
    // RFC 6298 (5.7): the data's RTO is 3 s, not the SYN's backed-off 4 s.
    assert_eq!(s.rtt().backoff_count(), 0);
    assert_eq!(s.next_timer(), Some(ms(6050)));
}

fn synack_echoing(ecr: u32) -> Segment {
    Segment {
        ts: Some(Timestamps { val: 1, ecr }),
        ..synack()
    }
}

#[test]
fn a_synack_echoing_the_retransmitted_syn_gives_the_first_sample() {
    // RFC 7323 RTTM (Linux tcp_ack_update_rtt): the echo names the SYN that was answered, the
    // one sent at 1 s (TSval 1000 at the 1 ms tick), so its RTT is a valid sample.
    let mut s = Snd::new(cfg(), None);
    s.send(ms(0));
    s.timer(ms(1000));
    s.ack(ms(1080), synack_echoing(1000));
    assert_eq!(s.rtt().srtt(), Some(SimDuration::from_millis(80)));
    assert_eq!(s.rtt().backoff_count(), 0);
    // RFC 6298 (2.2): 80 + 4·40 = 240 ms, below the 1 s minimum.
    assert_eq!(s.next_timer(), Some(ms(2080)));
    assert_eq!(s.cwnd(), MSS, "RFC 5681 §3.1: one segment after a lost SYN");
}

#[test]
fn with_the_linux_estimator_one_segment_of_cwnd_only_after_two_syn_retransmissions() {
    let linux = || TcpConfig {
        rto: RtoConfig::linux(),
        timestamps: false,
        ..cfg()
    };
    let mut once = Snd::new(linux(), None);
    once.send(ms(0));
    once.timer(ms(1000));
    let out = once.ack(ms(1050), synack());
    assert_eq!(
        kinds(&out),
        new_segments(0, 4),
        "one SYN retransmission keeps IW"
    );
    // No sample: tcp_init_metrics' TCP_TIMEOUT_FALLBACK.
    assert_eq!(once.next_timer(), Some(ms(4050)));

    let mut twice = Snd::new(linux(), None);
    twice.send(ms(0));
    twice.timer(ms(1000));
    twice.timer(ms(2000));
    let out = twice.ack(ms(2050), synack());
    assert_eq!(kinds(&out), new_segments(0, 1));
    assert_eq!(twice.next_timer(), Some(ms(5050)));
}

#[test]
fn with_the_linux_estimator_the_first_five_syn_retransmissions_come_1_s_apart() {
    // Linux 6.5+ tcp_retransmit_timer: in SYN-SENT the RTO doubles only once the backoff
    // exceeds tcp_syn_linear_timeouts (4): SYNs at 0, 1, 2, 3, 4, 5 s, then 7 and 11 s (the
    // kernel's 131 s to give up with tcp_syn_retries = 6: five 1 s waits, then 2 to 64 s).
    let mut s = Snd::new(
        TcpConfig {
            rto: RtoConfig::linux(),
            ..cfg()
        },
        None,
    );
    s.send(ms(0));
    let mut sent = vec![0];
    for _ in 0..6 {
        let at = s.next_timer().unwrap();
        assert_eq!(kinds(&s.timer(at)), vec![(0, TxKind::Syn)]);
        sent.push(at.as_nanos() / 1_000_000);
    }
    assert_eq!(sent, vec![0, 1000, 2000, 3000, 4000, 5000, 7000]);
}

#[test]
fn the_receiver_answers_every_syn_with_a_synack_echoing_its_timestamp() {
    let mut r = TcpReceiver::new(TcpConfig {
        handshake: true,
        ..TcpConfig::default()
    });
    let syn = Segment {
        syn: true,
        ts: Some(spikelab_tcp::Timestamps { val: 7, ecr: 0 }),
        ..Segment::default()
    };
    for _ in 0..2 {
        r.on_segment(ms(5), &syn);
        let a = r.poll_transmit(ms(5)).expect("a SYN-ACK");
        assert!(a.syn);
        assert_eq!(a.ts.unwrap().ecr, 7);
        assert!(r.poll_transmit(ms(5)).is_none());
    }
    assert_eq!(r.rcv_nxt(), 0);
}
