//! Local congestion: the sender's own interface queue refused a segment (Linux 2.6
//! `tcp_transmit_skb` → `tcp_enter_cwr(sk, 1)`). The sender enters CWR: ssthresh as for a
//! loss, cwnd never above what is in flight, one segment less every second ACK down to ssthresh
//! (`tcp_cwnd_down`), `cwnd = min(cwnd, ssthresh)` once data above `high_seq` is acknowledged
//! (`tcp_complete_cwr`); nothing is retransmitted. MSS 1000, so segment `i` starts at `1000·i`.

use spikelab_tcp::{CaState, TcpConfig, TxKind, Variant};

mod common;
use common::*;

fn cfg(variant: Variant) -> TcpConfig {
    plain_cfg(variant, 10)
}

#[test]
fn a_local_drop_reduces_the_window_by_rate_halving_and_retransmits_nothing() {
    for variant in [Variant::NewReno, Variant::Sack] {
        let mut s = Snd::new(cfg(variant), None);
        assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 10));
        s.s.local_congestion(ms(0));
        assert_eq!(s.state(), CaState::Cwr);
        // RFC 5681 eq. 4 on the 10 segments in flight.
        assert_eq!(s.ssthresh(), 5 * MSS);
        assert_eq!(s.cwnd(), 10 * MSS);
        assert_eq!(s.stats().local_cwr_count, 1);
        // A second refusal while the reduction runs changes nothing.
        s.s.local_congestion(ms(1));
        assert_eq!((s.ssthresh(), s.stats().local_cwr_count), (5 * MSS, 1));

        let mut sent = Vec::new();
        let mut cwnds = vec![s.cwnd()];
        // ACKs of segments 0..9, one every 10 ms: no growth, one MSS less per second ACK.
        for k in 1..=10u64 {
            sent.extend(s.ack(ms(10 * k), ack(k * MSS)));
            cwnds.push(s.cwnd());
            if k < 10 {
                assert_eq!(s.state(), CaState::Cwr, "ACK {k}");
            }
        }
        assert!(
            cwnds.windows(2).all(|w| w[1] <= w[0]),
            "{variant:?}: {cwnds:?}"
        );
        assert!(
            cwnds.iter().all(|&c| c >= 5 * MSS),
            "{variant:?}: {cwnds:?}"
        );
        // Halved by the tenth ACK (decrements on ACKs 2, 4, 6, 8, 10).
        assert_eq!(cwnds[10], 5 * MSS, "{variant:?}: {cwnds:?}");
        // high_seq is 10000: the state ends when data above it is acknowledged.
        let first_new = sent[0].seg.seq;
        assert_eq!(first_new, 10 * MSS);
        let above = sent.iter().map(|t| t.seg.seq).max().unwrap() + MSS;
        s.ack(ms(200), ack(above));
        assert_eq!(s.state(), CaState::Open);
        assert!(s.cwnd() <= 5 * MSS + MSS, "{variant:?}: {}", s.cwnd());
        assert!(
            sent.iter().all(|t| t.kind == TxKind::New),
            "{variant:?}: {sent:?}"
        );
        assert_eq!(s.stats().retx_segments, 0);
        assert_eq!(s.stats().rto_count + s.stats().fast_retx_count, 0);
    }
}

#[test]
fn cwnd_never_exceeds_what_is_in_flight_plus_one_segment_during_cwr() {
    let mut s = Snd::new(cfg(Variant::NewReno), None);
    s.send(ms(0));
    // Half the window acknowledged before the refusal: 5 segments in flight.
    s.ack(ms(5), ack(5 * MSS));
    let in_flight = s.inflight();
    s.s.local_congestion(ms(6));
    assert!(s.cwnd() <= in_flight, "{} > {in_flight}", s.cwnd());
    let out = s.send(ms(6));
    assert!(out.is_empty(), "no room: {out:?}");
}

#[test]
fn three_duplicate_acks_in_cwr_keep_its_ssthresh() {
    // Linux `tcp_fastretrans_alert` computes ssthresh on entering Recovery only from a state
    // below CWR: the reduction already under way stands.
    let mut s = Snd::new(cfg(Variant::NewReno), None);
    s.send(ms(0));
    s.s.local_congestion(ms(0));
    assert_eq!(s.ssthresh(), 5 * MSS);
    s.ack(ms(10), ack(2 * MSS));
    let out = s.dupack_train(ms(20), 2 * MSS, 3);
    assert_eq!(s.state(), CaState::Recovery);
    assert!(out
        .iter()
        .any(|t| t.kind == TxKind::FastRetransmit && t.seg.seq == 2 * MSS));
    assert_eq!(s.ssthresh(), 5 * MSS);
}

#[test]
fn a_local_drop_after_a_timeout_changes_nothing() {
    let mut s = Snd::new(cfg(Variant::NewReno), None);
    s.send(ms(0));
    let at = s.next_timer().expect("the RTO is armed");
    s.timer(at);
    assert_eq!(s.state(), CaState::Loss);
    let (cwnd, ssthresh) = (s.cwnd(), s.ssthresh());
    s.s.local_congestion(at);
    assert_eq!(s.state(), CaState::Loss);
    assert_eq!(
        (s.cwnd(), s.ssthresh(), s.stats().local_cwr_count),
        (cwnd, ssthresh, 0)
    );
}
