//! The `ns2` profile's rules, one scripted test each: every test fails when its switch in
//! `SctpConfig` is turned back to the RFC 9260 behaviour.

mod common;
use common::ms;

use spikelab_core::{SimDuration, SimTime};
use spikelab_sctp::{
    Chunk, DataChunk, DataSource, Endpoint, MaxBurstMode, MissRule, Packet, Role, SackChunk,
    SctpConfig, SctpEvent,
};

/// A client established by hand at 20 ms whose destinations are confirmed by HEARTBEAT-ACKs
/// at 30 ms (`confirm_destinations`).
fn client(cfg: SctpConfig) -> Endpoint {
    let mut a = Endpoint::new(cfg, Role::Client, DataSource::Bulk(None), 1);
    a.connect(ms(0));
    let (d, _) = a.poll_transmit(ms(0)).unwrap();
    let ia = Chunk::InitAck {
        n_addrs: 1,
        extra: 0,
        cookie_len: 0,
    };
    a.on_packet(ms(10), d, &Packet::single(ia));
    let (d, _) = a.poll_transmit(ms(10)).unwrap();
    a.on_packet(ms(20), d, &Packet::single(Chunk::CookieAck));
    let mut hbs = Vec::new();
    while let Some((d, p)) = a.poll_transmit(ms(20)) {
        match &p.chunks[0] {
            Chunk::Heartbeat(h) => hbs.push((d, h.clone())),
            c => assert!(
                !a.config().confirm_destinations,
                "{c:?} before confirmation"
            ),
        }
    }
    for (d, h) in hbs {
        a.on_packet(ms(30), d, &Packet::single(Chunk::HeartbeatAck(h)));
    }
    a
}

fn drain(a: &mut Endpoint, t: SimTime) -> Vec<Vec<u64>> {
    let mut v = Vec::new();
    while let Some((_, p)) = a.poll_transmit(t) {
        if p.has_data() {
            v.push(p.data().map(|c| c.tsn).collect());
        }
    }
    v
}

fn sack(cum: u64, gaps: &[(u32, u32)], a_rwnd: u32) -> Packet {
    Packet::single(Chunk::Sack(SackChunk {
        cum_tsn_ack: cum,
        a_rwnd,
        gap_blocks: gaps.to_vec(),
        dup_tsns: vec![],
    }))
}

fn data(tsn: u64) -> Packet {
    Packet::single(Chunk::Data(DataChunk {
        tsn,
        stream: 0,
        ssn: 0,
        ppid: 0,
        payload_len: 1452,
        offset: (tsn - 1) * 1452,
        tx_id: tsn,
        retransmission: 0,
    }))
}

#[test]
fn ns2_defaults_are_those_of_ns_default_tcl() {
    let c = SctpConfig::ns2(1);
    assert!(c.validate().is_ok());
    assert_eq!(c.unit(), 1468, "uiMaxDataSize = mtu_ - 12 - ipHeaderSize_");
    assert_eq!(
        c.initial_cwnd(),
        4380,
        "min(4·1468, max(4380, 2·1468)) in Reset()"
    );
    assert_eq!(c.initial_ssthresh, Some(65536));
    assert_eq!(c.recv_buffer, 65536);
    assert_eq!(c.max_payload(), 1452, "dataChunkSize_ 1468 with its header");
    assert_eq!(c.rto_initial, SimDuration::from_secs(3));
    assert_eq!(c.rto_min, SimDuration::from_secs(1));
    assert_eq!(c.rto_max, SimDuration::from_secs(60));
    assert_eq!((c.path_max_retrans, c.assoc_max_retrans), (5, 10));
    assert_eq!(c.hb_interval, SimDuration::from_secs(30));
    assert_eq!(
        (c.sack_delay, c.sack_freq),
        (SimDuration::from_millis(200), 2)
    );
    assert_eq!(c.max_burst, Some(4));
    let a = Endpoint::new(c, Role::Client, DataSource::None, 1);
    assert_eq!(a.path(0).ssthresh, 65536);
}

/// Sends, acknowledges everything sent 40 ms later, again and again: once cwnd is past
/// 64 KB, each round is limited by the peer's 64 KB window alone.
fn largest_round(cfg: SctpConfig) -> usize {
    let mut a = client(cfg);
    let mut t = ms(30);
    let mut best = 0;
    for _ in 0..60 {
        let sent = drain(&mut a, t);
        best = best.max(sent.len());
        let high = sent.iter().flatten().max().copied().unwrap_or(a.cum_ack());
        t += SimDuration::from_millis(40);
        a.on_packet(t, 0, &sack(high, &[], 65536));
    }
    best
}

#[test]
fn the_flight_never_exceeds_the_64_kb_window_counted_in_whole_chunks() {
    // ns-2.35 counts a_rwnd in chunk bytes (16-byte header + 1452 payload = 1468):
    // 65536 / 1468 = 44 chunks; counting payload alone would let 45 (65340 B) out.
    assert_eq!(largest_round(SctpConfig::ns2(1)), 44);
    let payload_only = SctpConfig {
        rwnd_counts_chunk_headers: false,
        ..SctpConfig::ns2(1)
    };
    assert_eq!(largest_round(payload_only), 45);
}

#[test]
fn no_data_before_every_destination_answers_its_heartbeat() {
    let mut a = Endpoint::new(SctpConfig::ns2(2), Role::Client, DataSource::Bulk(None), 1);
    a.connect(ms(0));
    let (d, _) = a.poll_transmit(ms(0)).unwrap();
    let ia = Chunk::InitAck {
        n_addrs: 2,
        extra: 0,
        cookie_len: 0,
    };
    a.on_packet(ms(10), d, &Packet::single(ia));
    let (d, _) = a.poll_transmit(ms(10)).unwrap();
    a.on_packet(ms(20), d, &Packet::single(Chunk::CookieAck));
    let mut hbs = Vec::new();
    while let Some((d, p)) = a.poll_transmit(ms(20)) {
        match &p.chunks[0] {
            Chunk::Heartbeat(h) => hbs.push((d, h.clone())),
            c => panic!("{c:?} before confirmation"),
        }
    }
    assert_eq!(hbs.iter().map(|h| h.0).collect::<Vec<_>>(), vec![0, 1]);
    a.on_packet(
        ms(30),
        0,
        &Packet::single(Chunk::HeartbeatAck(hbs[0].1.clone())),
    );
    assert!(
        drain(&mut a, ms(30)).is_empty(),
        "destination 1 unconfirmed"
    );
    a.on_packet(
        ms(35),
        1,
        &Packet::single(Chunk::HeartbeatAck(hbs[1].1.clone())),
    );
    assert_eq!(
        drain(&mut a, ms(35)).len(),
        3,
        "IW 4380: three 1468-byte chunks"
    );
    // The HEARTBEAT round trips are the RTT samples (none from the handshake).
    assert_eq!(a.path(0).srtt, Some(SimDuration::from_millis(10)));
    assert_eq!(a.path(1).srtt, Some(SimDuration::from_millis(15)));
}

#[test]
fn a_timeout_at_one_unit_of_cwnd_leaves_ssthresh() {
    let run = |keep: bool| {
        let mut a = client(SctpConfig {
            t3_keeps_ssthresh_at_one_unit: keep,
            ..SctpConfig::ns2(1)
        });
        // Slow start past 3 · 4 units, acknowledging every round.
        let mut t = ms(30);
        while a.path(0).cwnd < 12 * 1468 {
            let sent = drain(&mut a, t);
            let high = sent.iter().flatten().max().copied().unwrap_or(a.cum_ack());
            t += SimDuration::from_millis(40);
            a.on_packet(t, 0, &sack(high, &[], 65536));
        }
        drain(&mut a, t);
        let cwnd = a.path(0).cwnd;
        let t3 = a.path(0).t3.unwrap();
        a.on_timer(t3);
        drain(&mut a, t3);
        let first = a.path(0).ssthresh;
        let t3b = a.path(0).t3.unwrap();
        a.on_timer(t3b);
        (cwnd, first, a.path(0).ssthresh, a.path(0).cwnd)
    };
    // The first expiry halves cwnd into ssthresh; the second finds cwnd at one unit:
    // ns-2.35 (Timeout()) leaves ssthresh, RFC 9260 E1 sets max(1468/2, 4·1468) = 5872.
    let (cwnd, first, second, c) = run(true);
    assert!(cwnd / 2 > 5872, "{cwnd}");
    assert_eq!((first, second, c), (cwnd / 2, cwnd / 2, 1468));
    let (_, _, second, _) = run(false);
    assert_eq!(second, 5872);
}

#[test]
fn the_packet_that_fills_the_hole_waits_for_the_delayed_sack() {
    let server = |cfg: SctpConfig| {
        let mut b = Endpoint::new(cfg, Role::Server, DataSource::None, 2);
        b.on_packet(
            ms(0),
            0,
            &Packet::single(Chunk::CookieEcho { cookie_len: 0 }),
        );
        while b.poll_transmit(ms(0)).is_some() {}
        b
    };
    let run = |cfg: SctpConfig| {
        let mut b = server(cfg);
        let mut sacks = Vec::new();
        for (t, tsn) in [(10, 1), (11, 3), (12, 2)] {
            b.on_packet(ms(t), 0, &data(tsn));
            while let Some((_, p)) = b.poll_transmit(ms(t)) {
                if let Some(s) = p.sack() {
                    sacks.push((t, s.cum_tsn_ack));
                }
            }
        }
        (sacks, b.next_timer())
    };
    // TSN 1: SACKed at once (the first DATA); TSN 3: a hole, at once; TSN 2 closes it.
    let (sacks, timer) = run(SctpConfig::ns2(1));
    assert_eq!(sacks, vec![(10, 1), (11, 1)]);
    assert_eq!(timer, Some(ms(212)), "SACK.Delay after the hole closed");
    let rfc = SctpConfig {
        sack_on_gap_close: true,
        ..SctpConfig::ns2(1)
    };
    assert_eq!(run(rfc).0, vec![(10, 1), (11, 1), (12, 3)]);
}

#[test]
fn a_chunk_marked_by_a_timeout_counts_misses_and_is_fast_retransmitted() {
    // Three chunks out; T3 marks all three and resends TSN 1 alone (cwnd one unit); then
    // three SACKs report TSN 3 (its first copy arrived late) with TSNs 1 and 2 missing.
    // ns-2.35 counts a miss per SACK below the last highest newly acknowledged TSN, also for
    // TSN 2, marked and not yet resent, and fast-retransmits both.
    let run = |rule: MissRule| {
        let mut a = client(SctpConfig {
            miss_rule: rule,
            ..SctpConfig::ns2(1)
        });
        assert_eq!(drain(&mut a, ms(30)).len(), 3);
        let t3 = a.path(0).t3.unwrap();
        a.on_timer(t3);
        assert_eq!(drain(&mut a, t3), vec![vec![1]]);
        a.drain_events();
        let mut t = t3;
        for _ in 0..3 {
            t += SimDuration::from_millis(10);
            a.on_packet(t, 0, &sack(0, &[(3, 3)], 65536));
            drain(&mut a, t);
        }
        a.drain_events().into_iter().find_map(|e| match e {
            SctpEvent::FastRetransmit { tsns, .. } => Some(tsns),
            _ => None,
        })
    };
    assert_eq!(run(MissRule::Outstanding), Some(vec![1, 2]));
    // RFC 9260 §7.2.4: only SACKs that newly acknowledge a TSN count misses (the first one
    // here), and only for chunks in flight.
    assert_eq!(run(MissRule::InFlight), None);
}

#[test]
fn max_burst_limits_only_the_sends_after_a_fast_retransmission() {
    let c = SctpConfig::ns2(1);
    assert_eq!(c.max_burst_mode, MaxBurstMode::AfterFastRetransmit);
    // Without a fast retransmission, a SACK opening the window lets more than Max.Burst (4)
    // packets out at once.
    let mut a = client(c);
    let mut t = ms(30);
    let mut most = 0;
    for _ in 0..8 {
        let sent = drain(&mut a, t);
        most = most.max(sent.len());
        let high = sent.iter().flatten().max().copied().unwrap_or(a.cum_ack());
        t += SimDuration::from_millis(40);
        a.on_packet(t, 0, &sack(high, &[], 65536));
    }
    assert!(most > 4, "{most}");
}
