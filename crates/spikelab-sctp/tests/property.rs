//! Whole-run properties over many seeds: a finite transfer over random loss (data and SACK
//! paths), reordering, delay spikes and a primary path failure at a random time delivers every
//! byte exactly once and in order, and the association ends; identical seeds give identical
//! runs.

mod common;
use common::*;

use spikelab_core::{Rng, SimDuration};
use spikelab_sctp::{AssocState, SctpConfig};

const BYTES: u64 = 400_000;

fn build(seed: u64) -> Net {
    let mut r = Rng::stream(seed, "scenario");
    let profile4960 = r.chance(0.5);
    let mut cfg = if profile4960 {
        SctpConfig::rfc4960(2)
    } else {
        SctpConfig::rfc9260(2)
    };
    cfg.pf_max_retrans = r.chance(0.5).then_some(0);
    cfg.recv_buffer = if r.chance(0.5) { 8_000 } else { 256_000 };
    cfg.message_size = r.chance(0.3).then_some(400);
    // Generous so that a run of random losses cannot end the association.
    cfg.assoc_max_retrans = 40;
    cfg.max_init_retransmits = 20;
    let delays = [
        5 + (r.next_f64() * 60.0) as u64,
        5 + (r.next_f64() * 60.0) as u64,
    ];
    let mut net = Net::new(cfg, Some(BYTES), &delays, seed);
    for l in net.fwd.iter_mut().chain(net.rev.iter_mut()) {
        l.loss = r.next_f64() * 0.05;
        l.jitter = SimDuration::from_millis((r.next_f64() * 30.0) as u64);
    }
    // A delay spike on the primary.
    let s = secs(r.next_f64() * 3.0);
    let extra = SimDuration::from_secs_f64(0.5 + r.next_f64() * 3.0);
    net.fwd[0]
        .spikes
        .push((s, s + SimDuration::from_secs(2), extra));
    // The primary fails (both ways) at a random time, for good or for a while.
    let f = secs(0.05 + r.next_f64() * 3.0);
    let end = if r.chance(0.5) {
        spikelab_core::SimTime::MAX
    } else {
        f + SimDuration::from_secs_f64(5.0 + r.next_f64() * 100.0)
    };
    net.fwd[0].down.push((f, end));
    net.rev[0].down.push((f, end));
    net
}

fn run(seed: u64) -> Net {
    let mut net = build(seed);
    net.connect();
    let ok = net.run_while(secs(5000.0), |n| n.a.is_done());
    assert!(
        ok,
        "seed {seed}: not done; delivered {}",
        net.b.delivered_bytes()
    );
    net
}

#[test]
fn every_byte_exactly_once_in_order_over_many_seeds() {
    let (mut t3, mut fr, mut failovers, mut dups) = (0, 0, 0, 0);
    for seed in 0..120 {
        let net = run(seed);
        assert_eq!(net.a.state(), AssocState::Established, "seed {seed}");
        let r = net.b.receiver_stats();
        assert_eq!(r.delivered_bytes, BYTES, "seed {seed}");
        assert_eq!(r.order_violations, 0, "seed {seed}");
        // Exactly once: every chunk delivered once, the rest counted as duplicates.
        let chunks = net.a.stats().data_chunks_sent - net.a.stats().retransmitted_chunks;
        assert_eq!(r.delivered_chunks, chunks, "seed {seed}");
        assert!(net.a.all_data_acked());
        t3 += net.a.stats().t3_expiries;
        fr += net.a.stats().fast_retransmits;
        failovers += net.a.stats().failovers.len() as u64;
        dups += r.duplicate_chunks;
    }
    eprintln!("T3 {t3}, fast rtx {fr}, failovers {failovers}, dup chunks {dups}");
    // The scenarios do exercise recovery and failover.
    assert!(
        t3 > 100 && fr > 100 && failovers > 60 && dups > 50,
        "{t3} {fr} {failovers} {dups}"
    );
}

#[test]
fn same_seed_same_run() {
    for seed in [3, 17, 99] {
        let x = run(seed);
        let y = run(seed);
        assert_eq!(x.a.stats(), y.a.stats());
        assert_eq!(x.b.stats(), y.b.stats());
        assert_eq!(x.b.receiver_stats(), y.b.receiver_stats());
        assert_eq!(x.events_a, y.events_a);
        assert_eq!(x.now, y.now);
    }
    // And different seeds differ.
    assert_ne!(run(3).a.stats(), run(4).a.stats());
}
