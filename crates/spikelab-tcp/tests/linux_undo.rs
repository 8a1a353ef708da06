//! Scripted packet tests for the linux detector (`spurious = ["linux"]`): the kernel's undo
//! rules of `net/ipv4/tcp_input.c` (`tcp_try_undo_loss`, `tcp_try_undo_recovery`,
//! `tcp_try_undo_partial`, `tcp_try_undo_dsack`, F-RTO's `FLAG_ORIG_SACK_ACKED`), with the
//! Linux-style undo response (`tcp_undo_cwnd_reduction`).
//!
//! Conventions of `scripted.rs`: MSS 1000 bytes (segment `i` starts at byte `1000·i`), explicit
//! times, hand-written ACKs, timestamps in 1 ms ticks (TSval = ms since start). Data is first
//! sent at 10 ms so that echoed timestamps are non-zero (the kernel ignores a zero TSecr).

use spikelab_tcp::spurious::{DetectorKind, Evidence, LinuxRule, Response, Verdict};
use spikelab_tcp::{CaState, Segment, SpuriousEvent, TcpConfig, TxKind, Variant};

mod common;
use common::*;

/// MSS 1000, initial ssthresh 3000, RTO min 200 ms, no delayed ACK, the linux detector.
fn cfg(variant: Variant, iw: u32, timestamps: bool, response: Response) -> TcpConfig {
    let sack = variant == Variant::Sack;
    TcpConfig {
        initial_ssthresh: Some(3000),
        block_fr_after_rto: true,
        ..detector_cfg(
            variant,
            iw,
            timestamps,
            sack,
            &[DetectorKind::Linux],
            response,
        )
    }
}

/// An ACK echoing TSecr `ecr`.
fn ts(seg: Segment, ecr: u32) -> Segment {
    echo(seg, ecr)
}

fn linux_verdicts(s: &Snd) -> Vec<LinuxRule> {
    s.s.spurious_events()
        .iter()
        .filter_map(|e| match e {
            SpuriousEvent::Verdict {
                detector: DetectorKind::Linux,
                verdict: Verdict::Spurious(Evidence::Linux(rule)),
                ..
            } => Some(*rule),
            _ => None,
        })
        .collect()
}

/// Six segments at 10 ms (TSval 10); segment 0 is held back, segments 1-3 are SACKed at
/// 110-112 ms (echoing 10): the third duplicate ACK fast-retransmits segment 0 at 112 ms
/// (TSval 112, the episode's `retrans_stamp`).
fn spurious_fast_retransmit() -> Snd {
    let mut s = Snd::new(cfg(Variant::Sack, 6, true, Response::Undo), None);
    assert_eq!(kinds(&s.send(ms(10))), new_segments(0, 6));
    s.ack(ms(110), ts(sack(0, &[(1000, 2000)]), 10));
    s.ack(ms(111), ts(sack(0, &[(1000, 3000)]), 10));
    let out = s.ack(ms(112), ts(sack(0, &[(1000, 4000)]), 10));
    assert_eq!(kinds(&out)[0], (0, TxKind::FastRetransmit));
    assert_eq!(s.state(), CaState::Recovery);
    // ssthresh = FlightSize/2 = 3000; the ledger holds prior_cwnd 6000 and prior_ssthresh =
    // max(ssthresh 3000, 3/4·cwnd 4500).
    assert_eq!(s.ssthresh(), 3000);
    assert_eq!(s.ledger().prior_cwnd, 6000);
    assert_eq!(s.ledger().prior_ssthresh, 4500);
    s
}

#[test]
fn timestamp_undo_when_recovery_completes_tcp_try_undo_recovery() {
    let mut s = spurious_fast_retransmit();
    // The delayed original of segment 0 arrives: the ACK of everything echoes TSval 10, older
    // than the retransmission's 112 (`tcp_packet_delayed`): full undo.
    s.ack(ms(120), ts(ack(6000), 10));
    assert_eq!(linux_verdicts(&s), vec![LinuxRule::Full]);
    assert_eq!(s.cwnd(), 6000, "cwnd = max(cwnd, prior_cwnd)");
    assert_eq!(s.ssthresh(), 4500, "ssthresh = prior_ssthresh");
    assert_eq!(s.state(), CaState::Open);
}

#[test]
fn no_timestamp_undo_when_the_ack_echoes_the_retransmission() {
    let mut s = spurious_fast_retransmit();
    // The retransmission itself repaired the hole: TSecr 112 is not older than retrans_stamp.
    s.ack(ms(212), ts(ack(6000), 112));
    assert!(linux_verdicts(&s).is_empty());
    assert_eq!(s.ssthresh(), 3000);
    assert!(s.cwnd() <= 3000 + MSS, "cwnd {} stays reduced", s.cwnd());
}

#[test]
fn partial_undo_needs_an_old_echo_and_no_retransmission_in_flight_tcp_try_undo_partial() {
    let mut s = spurious_fast_retransmit();
    // A partial ACK (segment 0's delayed original) echoing 10: the retransmission of segment
    // 0 is acknowledged with it, so none is left in flight: partial undo.
    s.ack(ms(120), ts(sack(1000, &[(1000, 4000)]), 10));
    assert_eq!(linux_verdicts(&s), vec![LinuxRule::Partial]);
    assert_eq!(s.cwnd(), 6000);
    assert_eq!(s.ssthresh(), 4500);
    assert_eq!(s.state(), CaState::Open);
}

#[test]
fn late_dsack_undoes_a_finished_fast_recovery_tcp_try_undo_dsack() {
    let mut s = spurious_fast_retransmit();
    // Without the timestamp evidence (the ACK echoes the retransmission) recovery completes
    // with the window reduced ...
    s.ack(ms(120), ts(ack(6000), 112));
    assert_eq!(s.state(), CaState::Open);
    assert!(linux_verdicts(&s).is_empty());
    let reduced = (s.cwnd(), s.ssthresh());
    assert_eq!(reduced.1, 3000);
    // ... then the DSACK for the retransmitted segment 0 arrives in Open state: every
    // retransmission since the undo marker is reported (undo_retrans = 0): undo, although the
    // recovery has ended (RFC 3708 would have needed it during the episode).
    s.ack(ms(121), ts(sack(6000, &[(0, 1000)]), 112));
    assert_eq!(linux_verdicts(&s), vec![LinuxRule::Dsack]);
    assert_eq!(s.cwnd(), 6000.max(reduced.0));
    assert_eq!(s.ssthresh(), 4500);
}

/// Four segments at 10 ms; the RTO (initial 1 s) fires at 1010 ms and retransmits segment 0.
fn spurious_timeout(variant: Variant, timestamps: bool, response: Response) -> Snd {
    let mut s = Snd::new(cfg(variant, 4, timestamps, response), None);
    assert_eq!(kinds(&s.send(ms(10))), new_segments(0, 4));
    assert_eq!(kinds(&s.timer(ms(1010))), vec![(0, TxKind::RtoRetransmit)]);
    assert_eq!(s.state(), CaState::Loss);
    assert_eq!(s.cwnd(), MSS);
    s
}

#[test]
fn dsack_undo_restores_cwnd_and_ssthresh_after_a_spurious_rto() {
    // No timestamps: only DSACK can show that segment 0's retransmission was needless.
    let mut s = spurious_timeout(Variant::Sack, false, Response::Undo);
    // Segment 0's delayed original is acknowledged: snd_una advances, but one retransmission
    // is unreported (undo_retrans = 1): no undo; F-RTO step 2b sends two new segments.
    let out = s.ack(ms(1100), ack(1000));
    assert!(linux_verdicts(&s).is_empty());
    assert_eq!(kinds(&out), new_segments(4000, 2));
    assert_eq!(s.ledger().undo_retrans, 1);
    // The retransmission arrives as a duplicate: DSACK below snd_una (undo_retrans = 0); no
    // advance, so the Loss state waits (`tcp_process_loss` undoes on FLAG_SND_UNA_ADVANCED).
    s.ack(ms(1101), sack(1000, &[(0, 1000)]));
    assert_eq!(s.ledger().undo_retrans, 0);
    assert!(linux_verdicts(&s).is_empty());
    // The next advancing ACK undoes (`tcp_try_undo_loss` with `tcp_may_undo`).
    s.ack(ms(1102), ack(2000));
    assert_eq!(linux_verdicts(&s), vec![LinuxRule::Loss]);
    assert_eq!(s.cwnd(), 4000, "prior_cwnd");
    assert_eq!(s.ssthresh(), 3000, "prior_ssthresh = max(3000, 3/4·4000)");
    assert_eq!(s.state(), CaState::Open);
}

#[test]
fn frto_undoes_on_the_first_ack_of_original_data_even_if_the_head_was_lost() {
    // The head (segment 0) was really lost; its retransmission and the delayed originals of
    // segments 1-3 arrive: the first ACK after the timeout covers never-retransmitted data
    // (`FLAG_ORIG_SACK_ACKED`) and the kernel undoes at once, where RFC 5682 needs a second
    // ACK after new data (step 3b).
    let mut s = spurious_timeout(Variant::Sack, false, Response::Undo);
    let out = s.ack(ms(1100), ack(4000));
    assert_eq!(linux_verdicts(&s), vec![LinuxRule::Frto]);
    assert_eq!(s.cwnd(), 4000);
    assert_eq!(s.state(), CaState::Open);
    assert!(out.iter().all(|t| t.kind == TxKind::New), "{out:?}");
}

#[test]
fn no_frto_undo_when_only_retransmitted_data_is_acknowledged() {
    let mut s = spurious_timeout(Variant::Sack, false, Response::Undo);
    // Only the retransmitted head is acknowledged, then the new segments of step 2b are SACKed
    // above a hole: the loss was real (step 3a) and F-RTO stops.
    s.ack(ms(1100), ack(1000));
    s.ack(ms(1200), sack(1000, &[(4000, 5000)]));
    assert!(linux_verdicts(&s).is_empty());
    assert!(!s.ledger().linux_frto);
    assert_eq!(s.state(), CaState::Loss);
}

/// After a spurious timeout undone on the first ACK (echoing TSval 10, older than the
/// retransmission's 1010), segment 2 (sent before the timeout) is lost: three duplicate ACKs
/// of 2000. Whether they fast-retransmit it.
fn third_dupack_retransmits_after_an_undo(mut s: Snd, undo_ack: Segment) -> bool {
    s.ack(ms(1100), undo_ack);
    let sent = s.send(ms(1100));
    assert!(sent.is_empty());
    let mut out = Vec::new();
    for i in 0..3 {
        out.extend(s.ack(ms(1150 + i), ts(ack(2000), 10)));
    }
    kinds(&out)
        .into_iter()
        .any(|k| k == (2000, TxKind::FastRetransmit))
}

#[test]
fn without_sack_a_timestamp_undo_keeps_the_loss_state_tcp_try_undo_loss() {
    // Linux `tcp_try_undo_loss` opens the state only for `frto_undo || tcp_is_sack`: a Reno
    // (non-SACK) connection undone by a timestamp stays in Loss, its loss marks cleared, until
    // something above `high_seq` (4000) is acknowledged, so the lost segment waits for the next
    // timeout, as without any undo.
    let s = spurious_timeout(Variant::NewReno, true, Response::Undo);
    assert!(!third_dupack_retransmits_after_an_undo(
        s,
        ts(ack(2000), 10)
    ));
    let s = spurious_timeout(Variant::NewReno, true, Response::None);
    assert!(!third_dupack_retransmits_after_an_undo(
        s,
        ts(ack(2000), 10)
    ));
    // The undo itself happened: cwnd and ssthresh restored.
    let mut s = spurious_timeout(Variant::NewReno, true, Response::Undo);
    s.ack(ms(1100), ts(ack(2000), 10));
    assert_eq!(linux_verdicts(&s), vec![LinuxRule::Loss]);
    assert_eq!(s.cwnd(), 4000);
}

#[test]
fn without_sack_an_frto_undo_opens_the_state_and_a_third_duplicate_ack_fast_retransmits() {
    // No timestamps: the ACK of segment 1, sent once before the timeout, is F-RTO's evidence
    // (`FLAG_ORIG_SACK_ACKED`, `frto_undo`): the kernel opens the state even without SACK.
    let s = spurious_timeout(Variant::NewReno, false, Response::Undo);
    assert!(third_dupack_retransmits_after_an_undo(s, ack(2000)));
}

#[test]
fn with_frto_off_the_linux_detector_goes_back_n_and_does_not_undo_by_frto() {
    // Linux `tcp_frto = 0`: after the timeout the ACK of the delayed original of segment 0
    // clocks out retransmissions (go-back-N), not F-RTO's two new segments (compare
    // `dsack_undo_restores_cwnd_and_ssthresh_after_a_spurious_rto`), and an ACK of
    // never-retransmitted data is no evidence.
    let mut c = cfg(Variant::Sack, 4, false, Response::Undo);
    c.spurious.linux_frto = false;
    let mut s = Snd::new(c, None);
    assert_eq!(kinds(&s.send(ms(10))), new_segments(0, 4));
    assert_eq!(kinds(&s.timer(ms(1010))), vec![(0, TxKind::RtoRetransmit)]);
    let out = s.ack(ms(1100), ack(1000));
    assert!(out.iter().all(|t| t.kind != TxKind::New), "{out:?}");
    assert_eq!(kinds(&out)[0].0, 1000);
    s.ack(ms(1101), ack(3000));
    assert!(linux_verdicts(&s).is_empty());
    assert_eq!(s.state(), CaState::Loss);
}

#[test]
fn frto_is_off_for_a_timeout_in_fast_recovery_and_on_for_the_backed_off_one_after_it() {
    // Linux tcp_enter_loss: `frto = tcp_frto && (new_recovery || icsk_retransmits)`. The first
    // timeout of an episode that began in fast recovery runs without F-RTO; the next one, backed
    // off, runs with it, so an ACK of never-retransmitted data then undoes (kernel 6.18 after
    // the fidelity suite's 1.5 s and 3 s spikes).
    let mut s = spurious_fast_retransmit();
    let first = s.s.next_timer().expect("the retransmission timer runs");
    assert_eq!(kinds(&s.timer(first)), vec![(0, TxKind::RtoRetransmit)]);
    assert!(
        !s.ledger().linux_frto,
        "began in fast recovery, not backed off"
    );
    let second = s.s.next_timer().expect("re-armed, backed off");
    assert!(second > first);
    assert_eq!(kinds(&s.timer(second)), vec![(0, TxKind::RtoRetransmit)]);
    assert!(s.ledger().linux_frto, "backed off: icsk_retransmits = 1");
    // Segments 4 and 5, sent once before the timeouts, are SACKed: FLAG_ORIG_SACK_ACKED.
    s.ack(second + dur(50), ts(sack(0, &[(1000, 6000)]), 10));
    assert_eq!(linux_verdicts(&s), vec![LinuxRule::Frto]);
}

#[test]
fn a_partial_ack_from_a_delayed_original_opens_racks_reordering_window() {
    // Linux tcp_try_undo_partial: a partial ACK in fast recovery that echoes a timestamp older
    // than the first retransmission (the hole was filled by the delayed original) calls
    // tcp_check_sack_reordering, which counts the reordering (`reord_seen`) even though the
    // original was retransmitted, so RACK's reordering window opens. RACK's own rule (a
    // never-retransmitted segment delivered below the highest SACK) does not see it.
    let run = |linux: bool| {
        let mut cfg = TcpConfig {
            rack: true,
            ..cfg(Variant::Sack, 8, true, Response::Undo)
        };
        if !linux {
            cfg.spurious.detectors = spikelab_tcp::spurious::DetectorSet::EMPTY;
        }
        let mut s = Snd::new(cfg, None);
        s.send(ms(10));
        s.ack(ms(110), ts(sack(0, &[(2000, 3000)]), 10));
        s.ack(ms(111), ts(sack(0, &[(2000, 4000)]), 10));
        let out = s.ack(ms(112), ts(sack(0, &[(2000, 5000)]), 10));
        assert!(
            kinds(&out).contains(&(0, TxKind::FastRetransmit)),
            "{out:?}"
        );
        assert_eq!(s.state(), CaState::Recovery);
        assert!(!s.rack().unwrap().reordering_seen);
        // Segment 0's delayed original arrives (segment 1 is still missing): a partial ACK
        // echoing TSval 10, older than the retransmission's 112.
        s.ack(ms(113), ts(sack(1000, &[(2000, 5000)]), 10));
        s.rack().unwrap().reordering_seen
    };
    assert!(run(true));
    assert!(
        !run(false),
        "without the linux rules only RACK's own test applies"
    );
}

/// `spurious_timeout` with `moderate_cwnd` and only the four segments to send (nothing new
/// after the undo): ACKs of 2000 (the timestamp undo, echoing 10), 3000 and 4000 (`high_seq`).
fn moderated(variant: Variant, moderate: bool) -> Snd {
    let mut c = cfg(variant, 4, true, Response::Undo);
    c.moderate_cwnd = moderate;
    let mut s = Snd::new(c, Some(4000));
    assert_eq!(kinds(&s.send(ms(10))), new_segments(0, 4));
    assert_eq!(kinds(&s.timer(ms(1010))), vec![(0, TxKind::RtoRetransmit)]);
    s.ack(ms(1100), ts(ack(2000), 10));
    assert_eq!(linux_verdicts(&s), vec![LinuxRule::Loss]);
    assert_eq!(s.cwnd(), 4000, "restored");
    s.ack(ms(1101), ts(ack(3000), 10));
    assert!(s.cwnd() >= 4000, "below high_seq no clamp: {}", s.cwnd());
    s.ack(ms(1102), ts(ack(4000), 10));
    s
}

#[test]
fn moderate_cwnd_clamps_to_the_flight_plus_three_at_high_seq_after_a_timestamp_undo() {
    // Linux 3.10-4.x `tcp_try_undo_recovery`: a connection without SACK, still in the Loss
    // state after the timestamp undo, reaches `high_seq` (4000) with nothing in flight:
    // `tcp_moderate_cwnd` sets cwnd = 0 + `tcp_max_burst` (3) segments, and this ACK's
    // congestion avoidance (after `tcp_fastretrans_alert`) adds at most MSS²/cwnd.
    let s = moderated(Variant::NewReno, true);
    assert!((3000..3000 + MSS / 2).contains(&s.cwnd()), "{}", s.cwnd());
    assert_eq!(s.stats().moderate_cwnd_cuts, 1);
    // Today's kernels (and the knob off): the restored cwnd stays and grows.
    let s = moderated(Variant::NewReno, false);
    assert!(
        s.cwnd() > 4000 && s.stats().moderate_cwnd_cuts == 0,
        "{}",
        s.cwnd()
    );
    // With SACK the undo opened the state: nothing to moderate.
    let mut c = cfg(Variant::Sack, 4, true, Response::Undo);
    c.moderate_cwnd = true;
    let mut s = Snd::new(c, Some(4000));
    s.send(ms(10));
    s.timer(ms(1010));
    for (t, a) in [(1100, 2000), (1101, 3000), (1102, 4000)] {
        s.ack(ms(t), ts(ack(a), 10));
    }
    assert_eq!(s.stats().moderate_cwnd_cuts, 0);
    assert!(s.cwnd() >= 4000, "{}", s.cwnd());
}
