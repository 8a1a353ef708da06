//! Scripted packet tests: hand-written chunks into one endpoint, assertions on what comes out.

mod common;
use common::ms;

use spikelab_core::SimTime;
use spikelab_sctp::{
    Chunk, DataChunk, DataSource, Endpoint, Packet, Role, SackChunk, SctpConfig, SctpEvent,
};

/// A client (bulk sender, unlimited) established by hand at 20 ms (handshake RTT 10 ms).
fn client(cfg: SctpConfig) -> Endpoint {
    let mut a = Endpoint::new(cfg, Role::Client, DataSource::Bulk(None), 1);
    a.connect(ms(0));
    let (d, p) = a.poll_transmit(ms(0)).unwrap();
    assert!(matches!(p.chunks[0], Chunk::Init { .. }));
    let ia = Chunk::InitAck {
        n_addrs: 2,
        extra: 0,
        cookie_len: 8,
    };
    a.on_packet(ms(10), d, &Packet::single(ia));
    let (d, p) = a.poll_transmit(ms(10)).unwrap();
    assert!(matches!(p.chunks[0], Chunk::CookieEcho { .. }));
    a.on_packet(ms(20), d, &Packet::single(Chunk::CookieAck));
    assert_eq!(a.state(), spikelab_sctp::AssocState::Established);
    assert_eq!(
        a.stats().setup_time,
        Some(spikelab_core::SimDuration::from_millis(20))
    );
    a
}

fn server(cfg: SctpConfig) -> Endpoint {
    let mut b = Endpoint::new(cfg, Role::Server, DataSource::None, 2);
    b.on_packet(
        ms(0),
        0,
        &Packet::single(Chunk::CookieEcho { cookie_len: 8 }),
    );
    let (_, p) = b.poll_transmit(ms(0)).unwrap();
    assert_eq!(p.chunks[0], Chunk::CookieAck);
    assert!(b.poll_transmit(ms(0)).is_none());
    b
}

fn data(tsn: u64) -> Packet {
    Packet::single(Chunk::Data(DataChunk {
        tsn,
        stream: 0,
        ssn: 0,
        ppid: 0,
        payload_len: 100,
        offset: (tsn - 1) * 100,
        tx_id: tsn,
        retransmission: 0,
    }))
}

fn sack(cum: u64, gaps: &[(u32, u32)]) -> Packet {
    Packet::single(Chunk::Sack(SackChunk {
        cum_tsn_ack: cum,
        a_rwnd: 1 << 20,
        gap_blocks: gaps.to_vec(),
        dup_tsns: vec![],
    }))
}

/// Feeds one DATA packet; returns the SACK sent at once, if any.
fn feed(b: &mut Endpoint, t: SimTime, tsn: u64) -> Option<SackChunk> {
    b.on_packet(t, 1, &data(tsn));
    b.poll_transmit(t).map(|(d, p)| {
        assert_eq!(d, 1, "the SACK goes back where the DATA came from");
        p.sack().unwrap().clone()
    })
}

#[test]
fn receiver_reports_gap_blocks_and_duplicates() {
    let mut b = server(SctpConfig::rfc9260(2));
    let s = feed(&mut b, ms(90), 1).expect("§5.1: the first DATA is SACKed at once");
    assert_eq!((s.cum_tsn_ack, s.gap_blocks.len()), (1, 0));
    b.on_packet(ms(100), 1, &data(1));
    b.poll_transmit(ms(100)).expect("a duplicate: SACK at once");
    assert!(feed(&mut b, ms(100), 2).is_none(), "later DATA is delayed");
    assert_eq!(b.next_timer(), Some(ms(300)), "within SACK.Delay 200 ms");
    let s = feed(&mut b, ms(110), 4).expect("a gap: SACK at once");
    assert_eq!((s.cum_tsn_ack, s.gap_blocks.clone()), (2, vec![(2, 2)]));
    // Renumber the rest of the script from the gap at TSN 3.
    let s = feed(&mut b, ms(112), 3).expect("the hole closes: SACK at once");
    assert_eq!((s.cum_tsn_ack, s.gap_blocks.len()), (4, 0));
    let mut b = server(SctpConfig::rfc9260(2));
    feed(&mut b, ms(90), 1);
    let s = feed(&mut b, ms(110), 3).expect("a gap: SACK at once");
    assert_eq!((s.cum_tsn_ack, s.gap_blocks.clone()), (1, vec![(2, 2)]));
    let s = feed(&mut b, ms(120), 4).unwrap();
    assert_eq!(s.gap_blocks, vec![(2, 3)]);
    let s = feed(&mut b, ms(130), 6).unwrap();
    assert_eq!(s.gap_blocks, vec![(2, 3), (5, 5)]);
    assert!(s.dup_tsns.is_empty());
    let s = feed(&mut b, ms(140), 3).expect("a duplicate: SACK at once");
    assert_eq!(s.gap_blocks, vec![(2, 3), (5, 5)]);
    assert_eq!(s.dup_tsns, vec![3]);
    let p = Packet::single(Chunk::Sack(s.clone()));
    assert_eq!(p.wire_size(), 12 + 16 + 8 + 4);
    assert_eq!(p.wire_size_ip(), 12 + 16 + 8 + 4 + 20);
    let s = feed(&mut b, ms(150), 2).unwrap();
    assert_eq!((s.cum_tsn_ack, s.gap_blocks.clone()), (4, vec![(2, 2)]));
    assert!(s.dup_tsns.is_empty(), "reported once");
    let s = feed(&mut b, ms(160), 5).expect("the hole closes: SACK at once");
    assert_eq!((s.cum_tsn_ack, s.gap_blocks.len()), (6, 0));
    assert_eq!(s.a_rwnd, b.config().recv_buffer);
    // Back to every second packet.
    assert!(feed(&mut b, ms(170), 7).is_none());
    assert_eq!(feed(&mut b, ms(180), 8).unwrap().cum_tsn_ack, 8);
    // And the timer.
    assert!(feed(&mut b, ms(200), 9).is_none());
    b.on_timer(ms(400));
    let (_, p) = b.poll_transmit(ms(400)).unwrap();
    assert_eq!(p.sack().unwrap().cum_tsn_ack, 9);
    let r = b.receiver_stats();
    assert_eq!(
        (r.delivered_bytes, r.order_violations, r.duplicate_chunks),
        (900, 0, 1)
    );
    assert!(b.has_received(9) && !b.has_received(10));
}

#[test]
fn a_rwnd_shrinks_with_out_of_order_data_and_full_buffer_drops() {
    let cfg = SctpConfig {
        recv_buffer: 250,
        message_size: Some(100),
        ..SctpConfig::rfc9260(2)
    };
    let mut b = server(cfg);
    let s = feed(&mut b, ms(1), 2).unwrap();
    assert_eq!(s.a_rwnd, 150);
    let s = feed(&mut b, ms(2), 3).unwrap();
    assert_eq!(s.a_rwnd, 50);
    let s = feed(&mut b, ms(3), 4).unwrap();
    assert_eq!(s.gap_blocks, vec![(2, 3)], "TSN 4 dropped: no room");
    assert_eq!(b.receiver_stats().dropped_chunks, 1);
}

/// Sends everything the client may send now; returns (dest, tsns, retransmission flags).
fn drain(a: &mut Endpoint, t: SimTime) -> Vec<(usize, Vec<(u64, u32)>)> {
    let mut v = Vec::new();
    while let Some((d, p)) = a.poll_transmit(t) {
        v.push((d, p.data().map(|c| (c.tsn, c.retransmission)).collect()));
    }
    v
}

/// From `t`, sends what `a` may send and, 30 ms later, acknowledges every TSN sent, until
/// `done` holds after a send; returns that time and the highest TSN sent.
fn ack_all_until(
    a: &mut Endpoint,
    mut t: SimTime,
    done: impl Fn(&Endpoint) -> bool,
) -> (SimTime, u64) {
    let mut top = 0;
    for _ in 0..200 {
        for (_, c) in drain(a, t) {
            top = c.iter().map(|x| x.0).fold(top, u64::max);
        }
        if done(a) {
            return (t, top);
        }
        t += spikelab_core::SimDuration::from_millis(30);
        a.on_packet(t, 0, &sack(top, &[]));
    }
    panic!("not reached in 200 round trips");
}

#[test]
fn full_data_packet_carries_1452_bytes_at_mtu_1500() {
    let mut a = client(SctpConfig::rfc9260(1));
    let (_, p) = a.poll_transmit(ms(20)).unwrap();
    assert_eq!(p.data().next().unwrap().payload_len, 1500 - 20 - 12 - 16);
    assert_eq!(p.wire_size_ip(), 1500);
    // IW (RFC 9260 §7.2.1) = min(4·1468, max(2·1468, 4404)) = 4404: three full chunks.
    assert_eq!(a.path(0).cwnd, 4404);
    assert_eq!(drain(&mut a, ms(20)).len(), 2);
}

#[test]
fn fast_retransmit_on_the_third_miss_indication_not_the_second() {
    let cfg = SctpConfig {
        iw_floor: 100_000, // IW = 4 PMDCS: four packets out
        max_burst: None,
        ..SctpConfig::rfc9260(2)
    };
    let mut a = client(cfg);
    let out = drain(&mut a, ms(20));
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|(d, _)| *d == 0));
    let cwnd0 = a.path(0).cwnd;
    let unit = 1468;
    for (k, gaps) in [vec![(2, 2)], vec![(2, 3)]].into_iter().enumerate() {
        a.on_packet(ms(40 + k as u64), 0, &sack(0, &gaps));
        let sent = drain(&mut a, ms(40 + k as u64));
        assert!(
            sent.iter().all(|(_, c)| c.iter().all(|x| x.1 == 0)),
            "no retransmission after {} miss indications",
            k + 1
        );
        assert!(!a.in_fast_recovery());
    }
    a.on_packet(ms(50), 0, &sack(0, &[(2, 4)]));
    let sent = drain(&mut a, ms(50));
    assert_eq!(
        sent[0],
        (0, vec![(1, 1)]),
        "TSN 1 again, to the same destination"
    );
    assert_eq!(a.stats().fast_retransmits, 1);
    assert!(a.in_fast_recovery());
    assert_eq!(a.path(0).ssthresh, (cwnd0 / 2).max(4 * unit));
    assert_eq!(a.path(0).cwnd, a.path(0).ssthresh);
    assert!(a
        .events()
        .iter()
        .any(|e| matches!(e, SctpEvent::FastRetransmit { dest: 0, tsns, .. } if tsns == &vec![1])));
    // One reduction per window: a further loss inside Fast Recovery does not cut again.
    let ss = a.path(0).ssthresh;
    a.on_packet(ms(60), 0, &sack(0, &[(2, 4), (6, 6)]));
    a.on_packet(ms(61), 0, &sack(0, &[(2, 4), (6, 7)]));
    a.on_packet(ms(62), 0, &sack(0, &[(2, 4), (6, 8)]));
    assert_eq!(a.path(0).ssthresh, ss);
}

#[test]
fn t3_rtx_sets_ssthresh_cwnd_backs_off_and_retransmits_to_the_alternate() {
    let cfg = SctpConfig {
        max_burst: None,
        ..SctpConfig::rfc9260(2)
    };
    let unit = 1468u64;
    let mut a = client(cfg);
    // Grow cwnd in slow start until it exceeds 8 units so the halving shows.
    ack_all_until(&mut a, ms(20), |a| a.path(0).cwnd > 8 * unit);
    let cwnd = a.path(0).cwnd;
    let rto = a.path(0).rto;
    let t3 = a.path(0).t3.unwrap();
    a.on_timer(t3);
    let p = a.path(0);
    assert_eq!(p.ssthresh, (cwnd / 2).max(4 * unit), "E1");
    assert_eq!(p.cwnd, unit, "E1: one PMDCS");
    assert_eq!(p.rto, rto.saturating_mul(2), "E2");
    assert_eq!(p.errors, 1);
    let first = a.cum_ack() + 1;
    let sent = drain(&mut a, t3);
    assert_eq!(
        sent[0],
        (1, vec![(first, 1)]),
        "E3: earliest TSN to the alternate"
    );
    assert!(a.path(1).t3.is_some(), "R1 on the alternate");
    let rec = a
        .events()
        .iter()
        .find_map(|e| match e {
            SctpEvent::T3Expiry(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!((rec.dest, rec.rtx_dest, rec.k, rec.rto), (0, 1, 1, rto));
    assert_eq!(rec.tsns[0].tsn, first);
    assert!(rec.tsns.windows(2).all(|w| w[0].tsn < w[1].tsn));
    // The new transmission of TSN `first` carries a new transmission number.
    assert_eq!(
        a.stats().t3_retransmitted_chunks as usize,
        sent.iter()
            .filter(|(d, _)| *d == 1)
            .map(|(_, c)| c.len())
            .sum::<usize>()
    );
    // New data stays on the primary (still active after one error), one PMDCS.
    assert!(sent
        .iter()
        .any(|(d, c)| *d == 0 && c.iter().all(|x| x.1 == 0)));
}

#[test]
fn rfc4960_profile_uses_mtu_units() {
    let mut a = client(SctpConfig::rfc4960(2));
    assert_eq!(a.path(0).cwnd, 4380);
    drain(&mut a, ms(20));
    let t3 = a.path(0).t3.unwrap();
    a.on_timer(t3);
    assert_eq!(a.path(0).cwnd, 1500);
    assert_eq!(a.path(0).ssthresh, 6000);
}

#[test]
fn karn_no_rtt_sample_from_a_retransmitted_chunk() {
    let mut a = client(SctpConfig::rfc9260(2));
    drain(&mut a, ms(20));
    let samples = a.stats().per_dest[0].rtt_samples;
    let t3 = a.path(0).t3.unwrap();
    a.on_timer(t3);
    drain(&mut a, t3);
    a.on_packet(
        t3 + spikelab_core::SimDuration::from_millis(5),
        1,
        &sack(3, &[]),
    );
    assert_eq!(a.stats().per_dest[0].rtt_samples, samples);
    assert_eq!(a.stats().per_dest[1].rtt_samples, 0);
}

#[test]
fn a_fast_retransmission_of_the_first_outstanding_chunk_restarts_t3() {
    // RFC 9260 §7.2.4 step 4.
    let cfg = SctpConfig {
        iw_floor: 100_000,
        max_burst: None,
        ..SctpConfig::rfc9260(2)
    };
    let mut a = client(cfg);
    drain(&mut a, ms(20));
    let armed = a.path(0).t3.unwrap();
    for (k, gaps) in [vec![(2, 2)], vec![(2, 3)]].into_iter().enumerate() {
        a.on_packet(ms(40 + k as u64), 0, &sack(0, &gaps));
        drain(&mut a, ms(40 + k as u64));
        assert_eq!(
            a.path(0).t3,
            Some(armed),
            "no restart without a retransmission"
        );
    }
    a.on_packet(ms(900), 0, &sack(0, &[(2, 4)]));
    let sent = drain(&mut a, ms(900));
    assert_eq!(sent[0], (0, vec![(1, 1)]));
    assert_eq!(a.path(0).t3, Some(ms(900) + a.path(0).rto));
    assert!(a.path(0).t3.unwrap() > armed);
}

#[test]
fn a_fast_retransmission_of_a_later_chunk_leaves_t3_alone() {
    let cfg = SctpConfig {
        iw_floor: 100_000,
        max_burst: None,
        ..SctpConfig::rfc9260(2)
    };
    let mut a = client(cfg);
    drain(&mut a, ms(20));
    for (k, gaps) in [vec![(2, 2)], vec![(2, 3)], vec![(2, 4)]]
        .into_iter()
        .enumerate()
    {
        a.on_packet(ms(40 + k as u64), 0, &sack(0, &gaps));
        drain(&mut a, ms(40 + k as u64));
    }
    let restarted = ms(42) + a.path(0).rto;
    assert_eq!(a.path(0).t3, Some(restarted), "TSN 1 fast retransmitted");
    // In Fast Recovery TSN 5 is lost too; TSN 1's retransmission is still the first
    // outstanding chunk, so retransmitting TSN 5 does not restart the timer.
    let mut resent = Vec::new();
    for (k, hi) in [6u32, 7, 8].into_iter().enumerate() {
        let t = ms(60 + k as u64);
        a.on_packet(t, 0, &sack(0, &[(2, 4), (6, hi)]));
        resent.extend(drain(&mut a, t).into_iter().flat_map(|(_, c)| c));
    }
    assert!(resent.contains(&(5, 1)), "{resent:?}");
    assert_eq!(a.path(0).t3, Some(restarted));
}

#[test]
fn after_a_t3_expiry_one_packet_is_in_flight_until_an_acknowledgement() {
    // RFC 9260 §7.2.1: with the rfc4960 profile cwnd is one MTU (1500 B), and rule B alone
    // would let a second 1468-byte chunk follow the first.
    let mut a = client(SctpConfig::rfc4960(1));
    let first = drain(&mut a, ms(20));
    assert_eq!(first.len(), 3);
    let t3 = a.path(0).t3.unwrap();
    a.on_timer(t3);
    assert_eq!(a.path(0).cwnd, 1500);
    let sent = drain(&mut a, t3);
    assert_eq!(
        sent,
        vec![(0, vec![(1, 1)])],
        "one packet, the earliest TSN"
    );
    assert!(drain(&mut a, t3 + spikelab_core::SimDuration::from_millis(5)).is_empty());
    // An acknowledgement of TSN 1 lifts the rule: cwnd rules again.
    let t = t3 + spikelab_core::SimDuration::from_millis(10);
    a.on_packet(t, 0, &sack(1, &[]));
    let sent = drain(&mut a, t);
    assert!(sent.len() >= 2, "{sent:?}");
    assert_eq!(sent[0].1, vec![(2, 1)]);
}

#[test]
fn duplicate_tsns_count_towards_partial_bytes_acked() {
    // RFC 9260 §7.2.2: in congestion avoidance partial_bytes_acked grows by the bytes of the
    // new chunks acknowledged and of the chunks reported in Duplicate TSNs. RFC 4960's text
    // (the rfc4960 profile) counts the new chunks only.
    for (cfg, dup_counts) in [
        (SctpConfig::rfc9260(1), true),
        (SctpConfig::rfc4960(1), false),
    ] {
        let mut a = client(SctpConfig {
            max_burst: None,
            ..cfg
        });
        drain(&mut a, ms(20));
        let t3 = a.path(0).t3.unwrap();
        a.on_timer(t3); // TSNs 1-3 are sent again: their duplicates may come back
                        // Acknowledge everything sent, round trip after round trip, until slow start ends.
        let (t, _) = ack_all_until(&mut a, t3, |a| {
            a.path(0).cwnd > a.path(0).ssthresh && a.cum_ack() > 3
        });
        let p = a.path(0);
        assert!(
            p.cwnd > p.ssthresh && a.cum_ack() > 3 && p.flight > 1468,
            "{p:?}"
        );
        assert_eq!(p.partial_bytes_acked, 0, "everything was acknowledged");
        // The next SACK acknowledges one more chunk, with and without TSN 2 reported again.
        let mut b = a.clone();
        let with_dup = Packet::single(Chunk::Sack(SackChunk {
            cum_tsn_ack: a.cum_ack() + 1,
            a_rwnd: 1 << 20,
            gap_blocks: vec![],
            dup_tsns: vec![2],
        }));
        let t = t + spikelab_core::SimDuration::from_millis(1);
        a.on_packet(t, 0, &with_dup);
        b.on_packet(t, 0, &sack(b.cum_ack() + 1, &[]));
        let (pa, pb) = (a.path(0), b.path(0));
        assert_eq!(
            pb.partial_bytes_acked, 1468,
            "one new chunk: 16 + 1452 bytes"
        );
        assert_eq!(pa.cwnd, pb.cwnd);
        let extra = if dup_counts { 1468 } else { 0 };
        assert_eq!(pa.partial_bytes_acked, pb.partial_bytes_acked + extra);
    }
}

#[test]
fn a_chunk_marked_for_another_address_is_not_the_first_outstanding_one() {
    // After a T3 expiry on address 0 most of its chunks wait for room on address 1 (their
    // last copy went to 0, but 0's timer no longer guards them). New data on 0 that is
    // fast-retransmitted there is the first outstanding chunk 0's T3-rtx guards: §7.2.4
    // step 4 restarts that timer.
    let cfg = SctpConfig {
        max_burst: None,
        ..SctpConfig::rfc9260(2)
    };
    let unit = 1468u64;
    let mut a = client(cfg);
    let (_, mut top) = ack_all_until(&mut a, ms(20), |a| a.path(0).cwnd > 30 * unit);
    let send = |a: &mut Endpoint, t: SimTime, top: &mut u64| {
        let out = drain(a, t);
        for (_, c) in &out {
            for x in c {
                *top = (*top).max(x.0);
            }
        }
        out
    };
    let cum = a.cum_ack();
    assert!(top - cum >= 30, "{top} {cum}");
    let t3 = a.path(0).t3.unwrap();
    a.on_timer(t3);
    let sent = send(&mut a, t3, &mut top);
    let to = |d: usize| -> Vec<u64> {
        sent.iter()
            .filter(|(x, _)| *x == d)
            .flat_map(|(_, c)| c.iter().map(|y| y.0))
            .collect()
    };
    assert_eq!(
        to(1),
        vec![cum + 1, cum + 2, cum + 3],
        "E3, then as 1's cwnd (4404 B) allows"
    );
    let new0 = top;
    assert_eq!(to(0), vec![new0], "one new packet on address 0 (§7.2.1)");
    // The chunk after `new0` is lost; the others sent to 0 arrive, the newest of them not yet
    // acknowledged once there are two (so 0's timer keeps running: with nothing in flight R2
    // would stop it and R1 start it afresh).
    let lost = new0 + 1;
    let off = |tsn: u64| (tsn - cum) as u32;
    let mut resent_at = None;
    for k in 1..12 {
        let t = t3 + spikelab_core::SimDuration::from_millis(50 * k);
        let mut gaps = vec![(off(new0), off(new0))];
        if top > lost + 1 {
            gaps.push((off(lost + 1), off(top - 1)));
        } else if top == lost + 1 {
            gaps.push((off(top), off(top)));
        }
        a.on_packet(t, 0, &sack(cum, &gaps));
        let out = send(&mut a, t, &mut top);
        if out.iter().any(|(d, c)| *d == 0 && c.contains(&(lost, 1))) {
            resent_at = Some(t);
            break;
        }
    }
    let t = resent_at.expect("the lost chunk fast-retransmitted to address 0");
    assert_eq!(a.path(0).t3, Some(t + a.path(0).rto));
}

#[test]
fn an_ack_of_a_chunk_sent_to_two_destinations_does_not_bring_a_pf_one_back() {
    // RFC 7829 §3.2 rules 9-10, PFMR 0: TSN 1 goes to 0, then (T3) to 1, then (T3 on 1, both
    // PF, 0 chosen) to 0 again. Its acknowledgement cannot tell which copy arrived: 0 stays
    // PF. New data sent to 0 alone and acknowledged brings it back.
    let cfg = SctpConfig {
        max_burst: None,
        heartbeats: false,
        pf_max_retrans: Some(0),
        ..SctpConfig::rfc9260(2)
    };
    let mut a = client(cfg);
    drain(&mut a, ms(20));
    let t3 = a.path(0).t3.unwrap();
    a.on_timer(t3);
    assert_eq!(a.path(0).state, spikelab_sctp::PathState::PotentiallyFailed);
    let sent = drain(&mut a, t3);
    assert_eq!(sent[0], (1, vec![(1, 1)]));
    let t3b = a.path(1).t3.unwrap();
    a.on_timer(t3b);
    assert_eq!(a.path(1).state, spikelab_sctp::PathState::PotentiallyFailed);
    let sent = drain(&mut a, t3b);
    assert_eq!(
        sent[0],
        (0, vec![(1, 2)]),
        "both PF, equal errors: the primary"
    );
    let t = t3b + spikelab_core::SimDuration::from_millis(10);
    a.on_packet(t, 0, &sack(1, &[]));
    assert_eq!(a.path(0).state, spikelab_sctp::PathState::PotentiallyFailed);
    assert_eq!(a.path(0).errors, 1);
    // TSNs 2 and 3 follow TSN 1's path (0, 1, 0): their acknowledgements leave 0 PF too. The
    // first new TSN, sent only to 0, brings it back.
    let mut t = t;
    let mut first_new = None;
    for _ in 0..20 {
        let mut top = 0;
        for (_, c) in drain(&mut a, t) {
            for x in c {
                top = top.max(x.0);
                if x.1 == 0 && first_new.is_none() {
                    first_new = Some(x.0);
                }
            }
        }
        t += spikelab_core::SimDuration::from_millis(10);
        let before_new = first_new.is_none_or(|f| top < f);
        a.on_packet(t, 0, &sack(top, &[]));
        if before_new {
            assert_eq!(a.path(0).state, spikelab_sctp::PathState::PotentiallyFailed);
        } else {
            break;
        }
    }
    assert!(first_new.is_some_and(|f| f > 3), "new data to 0");
    assert_eq!(a.path(0).state, spikelab_sctp::PathState::Active);
    assert_eq!(a.path(0).errors, 0);
}
