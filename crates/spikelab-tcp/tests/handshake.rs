//! The optional handshake (`handshake = true`): SYN first, data after the SYN-ACK; the SYN on
//! the RTO timer (RFC 6298 (2.1): 1 s, backed off); Karn's rule for the SYN-ACK's sample;
//! one segment of cwnd after a lost SYN (Linux `tcp_init_transfer`).

use spikelab_core::SimDuration;
use spikelab_tcp::{Segment, TcpConfig, TcpReceiver, TxKind};

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
    // Karn: no sample from a retransmitted SYN; one segment of cwnd.
    assert_eq!(s.rtt().srtt(), None);
    assert_eq!(s.cwnd(), MSS);
    assert_eq!(kinds(&out), new_segments(0, 1));
    assert_eq!(s.stats().rto_count, 0, "SYN timeouts are not data timeouts");
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
