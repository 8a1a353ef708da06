//! Scripted tests: a spurious timeout undone on F-RTO's evidence gives every congestion
//! control its whole state back (RFC 9438 CUBIC's W_max and epoch, BIC's W_max, Westwood+'s
//! bandwidth estimate and RTT_min, Hybla's rho), as the sender's undo ledger promises; Linux
//! CUBIC gets cwnd and ssthresh back but not its state, as in the kernel.
//!
//! Same conventions as `spurious.rs`: MSS 1000 bytes, explicit times, ACKs written by hand.

use spikelab_tcp::cc::{
    BicParams, CcConfig, CcVars, CubicParams, HyblaParams, RenoParams, WestwoodParams,
};
use spikelab_tcp::spurious::{DetectorKind, Response};
use spikelab_tcp::{CaState, SpuriousEvent, TcpConfig, TxKind, Variant};

mod common;
use common::*;

fn cfg(cc: CcConfig) -> TcpConfig {
    TcpConfig {
        initial_ssthresh: Some(6 * MSS),
        abc: true,
        cc,
        ..detector_cfg(
            Variant::NewReno,
            4,
            false,
            false,
            &[DetectorKind::Frto],
            Response::Undo,
        )
    }
}

/// NaN-safe comparable form of an algorithm's variables.
fn shown(v: &CcVars) -> Vec<String> {
    v.iter().map(|(n, x)| format!("{n}={x:?}")).collect()
}

/// Rounds of 100 ms: every outstanding segment acknowledged, one ACK per segment 1 ms apart,
/// so the algorithm has grown, sampled RTTs and (in avoidance) started an epoch. Returns the
/// sender with a window outstanding and unacknowledged.
fn warmed_up(cc: CcConfig, rounds: u64) -> Snd {
    let mut s = Snd::new(cfg(cc), None);
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 4));
    for r in 1..=rounds {
        let base = r * 100;
        let (una, max) = (s.snd_una(), s.snd_max());
        for (i, end) in (una / MSS + 1..=max / MSS).enumerate() {
            s.ack(ms(base + i as u64), ack(end * MSS));
        }
        assert!(s.snd_max() > max, "round {r} sent new data");
    }
    assert_eq!(s.state(), CaState::Open);
    s
}

/// A spurious timeout detected by F-RTO (RFC 5682 §2 step 3b) and undone: the variables after
/// the undo are the ones before the timeout, and the timeout had changed them.
fn undo_restores_the_whole_state(cc: CcConfig, key_vars: &[&str]) {
    let name = format!("{cc:?}");
    let mut s = warmed_up(cc, 12);
    let before = s.cc().vars();
    let prior_cwnd = s.cwnd();
    let una = s.snd_una();
    let t = s.next_timer().expect("the RTO is armed");
    assert_eq!(kinds(&s.timer(t)), vec![(una, TxKind::RtoRetransmit)]);
    assert!(s.frto_active());
    // F-RTO step 2b: the first ACK acknowledges the retransmitted segment: two new segments.
    let out = s.ack(t + dur(100), ack(una + MSS));
    assert!(out.iter().all(|x| x.kind == TxKind::New), "{name}: {out:?}");
    let during = s.cc().vars();
    // Step 3b: the next ACK acknowledges a segment that was never retransmitted: spurious.
    s.ack(t + dur(101), ack(una + 2 * MSS));
    assert!(
        s.spurious_events()
            .iter()
            .any(|e| matches!(e, SpuriousEvent::Undo { .. })),
        "{name}: undone"
    );
    let after = s.cc().vars();
    assert_ne!(
        shown(&before),
        shown(&during),
        "{name}: the timeout changed the state (or the test proves nothing)"
    );
    assert_eq!(shown(&after), shown(&before), "{name}: state restored");
    for k in key_vars {
        let get = |v: &CcVars| v.iter().find(|(n, _)| n == k).map(|(_, x)| *x);
        let b = get(&before).unwrap_or_else(|| panic!("{name}: no var {k}"));
        assert!(!b.is_nan() && b != 0.0, "{name}: {k} was set before: {b}");
        assert_eq!(get(&after), Some(b), "{name}: {k}");
    }
    assert!(s.cwnd() >= prior_cwnd, "{name}: cwnd undone");
    assert_eq!(s.state(), CaState::Open);
}

#[test]
fn frto_undo_restores_cubic_w_max_and_epoch_rfc9438() {
    undo_restores_the_whole_state(
        CcConfig::Cubic(CubicParams::rfc9438()),
        &["w_max_segments", "epoch_start_s", "w_est_segments"],
    );
}

#[test]
fn frto_undo_restores_cwnd_but_not_the_state_of_linux_cubic() {
    // The kernel's cubictcp_state clears everything on entering Loss, and its undo_cwnd
    // (tcp_reno_undo_cwnd) restores cwnd and ssthresh only: CUBIC starts a new epoch from the
    // restored cwnd.
    let mut s = warmed_up(CcConfig::Cubic(CubicParams::linux()), 12);
    let before = s.cc().vars();
    let prior_cwnd = s.cwnd();
    let una = s.snd_una();
    let t = s.next_timer().expect("the RTO is armed");
    s.timer(t);
    s.ack(t + dur(100), ack(una + MSS));
    let during = shown(&s.cc().vars());
    s.ack(t + dur(101), ack(una + 2 * MSS));
    assert!(s
        .spurious_events()
        .iter()
        .any(|e| matches!(e, SpuriousEvent::Undo { .. })));
    assert_ne!(shown(&before), during);
    let get = |k: &str| s.cc().vars().iter().find(|(n, _)| *n == k).map(|(_, x)| *x);
    assert_eq!(get("last_max_cwnd_segments"), Some(0.0), "not restored");
    // HyStart's delay_min was cleared at the timeout and is measured afresh from the ACK
    // after it (the RTT of a segment sent before the timeout), not restored.
    let delay_min_before = before
        .iter()
        .find(|(n, _)| *n == "delay_min_s")
        .map(|v| v.1);
    let delay_min_after = get("delay_min_s");
    assert!(delay_min_before.is_some_and(|b| b > 0.0));
    assert!(
        delay_min_after.is_some_and(|a| a > delay_min_before.unwrap()),
        "HyStart's state not restored: {delay_min_before:?} -> {delay_min_after:?}"
    );
    assert!(s.cwnd() >= prior_cwnd, "cwnd undone");
    assert_eq!(s.state(), CaState::Open);
}

#[test]
fn frto_undo_restores_bic_state() {
    undo_restores_the_whole_state(CcConfig::Bic(BicParams::default()), &["epoch_start_s"]);
}

#[test]
fn frto_undo_restores_westwood_bandwidth_estimate_and_rtt_min() {
    undo_restores_the_whole_state(
        CcConfig::Westwood(WestwoodParams),
        &["bw_est_bytes_per_s", "rtt_min_s"],
    );
}

#[test]
fn frto_undo_restores_hybla_rho() {
    undo_restores_the_whole_state(CcConfig::Hybla(HyblaParams::default()), &["rho"]);
}

#[test]
fn frto_undo_restores_reno_byte_counter() {
    undo_restores_the_whole_state(CcConfig::Reno(RenoParams), &[]);
}
