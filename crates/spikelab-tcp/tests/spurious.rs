//! Scripted packet tests for spurious-retransmission detection and response (STYLE.md tier 2).
//!
//! Same conventions as `scripted.rs`: MSS 1000 bytes (segment `i` starts at byte `1000·i`),
//! explicit times, ACKs written by hand, timestamps in 1 ms ticks (TSval = ms since start).
//! Each test is named after the rule it pins: RFC 3522 (Eifel detection), RFC 4015 (Eifel
//! response), RFC 3708 (DSACK), RFC 5682 §2/§3 (F-RTO), Linux `tcp_undo_cwnd_reduction`.

use spikelab_core::SimDuration;
use spikelab_tcp::spurious::{DetectorKind, Evidence, FrtoStep, Response, Verdict};
use spikelab_tcp::{
    CaState, Segment, SpuriousEvent, TcpConfig, Timestamps, Transmit, TxKind, Variant,
};

mod common;
use common::*;

/// MSS 1000, RTO min 200 ms, no delayed ACK; timestamps and SACK as asked.
fn cfg(
    variant: Variant,
    iw: u32,
    timestamps: bool,
    sack: bool,
    detectors: &[DetectorKind],
    response: Response,
) -> TcpConfig {
    detector_cfg(variant, iw, timestamps, sack, detectors, response)
}

/// An ACK echoing TSecr `ecr`.
fn ack_ts(n: u64, ecr: u32) -> Segment {
    echo(ack(n), ecr)
}

impl Snd {
    /// Verdicts recorded so far: (detector, spurious?, evidence).
    fn verdicts(&self) -> Vec<(DetectorKind, Verdict)> {
        self.s
            .spurious_events()
            .iter()
            .filter_map(|e| match e {
                SpuriousEvent::Verdict {
                    detector, verdict, ..
                } => Some((*detector, *verdict)),
                _ => None,
            })
            .collect()
    }
    fn undos(&self) -> usize {
        self.s
            .spurious_events()
            .iter()
            .filter(|e| matches!(e, SpuriousEvent::Undo { .. }))
            .count()
    }
}

fn no_retransmissions(txs: &[Transmit]) -> bool {
    txs.iter().all(|t| t.kind == TxKind::New)
}

// ---- Eifel detection (RFC 3522) and response (RFC 4015) -------------------------------------

/// Two segments at 0 ms, ACKed at 100 ms (RTT 100 ms: SRTT 100, RTTVAR 50, RTO 300 ms);
/// slow start sends segments 2-4 at 100 ms (TSval 100); a delay spike holds them; the RTO
/// fires at 400 ms and retransmits segment 2 with TSval 400.
fn eifel_spike(response: Response) -> Snd {
    let mut c = cfg(
        Variant::Reno,
        2,
        true,
        false,
        &[DetectorKind::Eifel],
        response,
    );
    c.initial_ssthresh = Some(2500);
    let mut s = Snd::new(c, None);
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 2));
    assert_eq!(
        kinds(&s.ack(ms(100), ack_ts(2000, 0))),
        new_segments(2000, 3)
    );
    assert_eq!(s.s.rto(), SimDuration::from_millis(300));
    assert_eq!(s.s.next_timer(), Some(ms(400)));
    assert_eq!(
        kinds(&s.timer(ms(400))),
        vec![(2000, TxKind::RtoRetransmit)]
    );
    // RFC 5681 eq. 4: ssthresh = max(3000 / 2, 2·SMSS); loss window 1 SMSS.
    assert_eq!(s.s.ssthresh(), 2000);
    assert_eq!(s.s.cwnd(), MSS);
    // RFC 4015 step (0): pipe_prev = max(FlightSize 3000, ssthresh 2500); SRTT_prev = 100 + 2G.
    assert_eq!(s.s.ledger().pipe_prev, 3000);
    assert_eq!(s.s.ledger().srtt_prev, Some(SimDuration::from_millis(102)));
    assert_eq!(s.s.ledger().prior_cwnd, 3000);
    s
}

#[test]
fn eifel_spurious_rto_resumes_with_new_data_and_restores_pipe_prev_rfc4015() {
    let mut s = eifel_spike(Response::Eifel);
    // The original segment 2 (TSval 100) arrives late: its ACK echoes 100 < RetransmitTS 400.
    let out = s.ack(ms(600), ack_ts(3000, 100));
    assert_eq!(
        s.verdicts(),
        vec![(
            DetectorKind::Eifel,
            Verdict::Spurious(Evidence::Timestamp {
                ts_ecr: 100,
                retransmit_ts: 400
            })
        )]
    );
    // Step (8): SND.NXT = SND.MAX, so no go-back-N. Step (9): cwnd = FlightSize 2000 +
    // min(bytes_acked 1000, IW 2000); ssthresh = pipe_prev.
    assert_eq!(s.s.cwnd(), 3000);
    assert_eq!(s.s.ssthresh(), 3000);
    assert_eq!(s.s.state(), CaState::Open);
    assert_eq!(kinds(&out), new_segments(5000, 1));
    assert_eq!(s.undos(), 1);
    assert_eq!(s.s.stats().undo_count, 1);
    // The rest of the delayed window: only new data follows.
    let out = s.ack(ms(601), ack_ts(4000, 100));
    assert!(no_retransmissions(&out), "{out:?}");
    let out = s.ack(ms(602), ack_ts(5000, 100));
    assert!(no_retransmissions(&out), "{out:?}");
    assert_eq!(s.s.stats().retx_segments, 1, "only the RTO retransmission");
}

#[test]
fn eifel_response_restarts_the_rtt_estimator_on_the_first_sample_from_new_data_rfc4015_step11() {
    let mut s = eifel_spike(Response::Eifel);
    // Detection on the late ACK of segment 2: its sample (600 − 100 = 500 ms) comes from an
    // original transmission and goes to the RFC 6298 estimator as usual (§3.6: the delay
    // spike is factored in until step (11)): SRTT = 7/8·100 + 500/8, RTTVAR = 3/4·50 + 400/4.
    s.ack(ms(600), ack_ts(3000, 100));
    assert_eq!(s.s.rtt().srtt(), Some(SimDuration::from_millis(150)));
    assert_eq!(s.s.rtt().rttvar(), SimDuration::from_micros(137_500));
    assert_eq!(s.s.rto(), SimDuration::from_millis(700));
    // The rest of the delayed window (data outstanding at the timeout, up to SND.MAX 5000):
    // still ordinary samples.
    s.ack(ms(601), ack_ts(4000, 100));
    s.ack(ms(602), ack_ts(5000, 100));
    assert!(s.s.rtt().srtt() > Some(SimDuration::from_millis(200)));
    // Segment 5 (sent at 600 ms, after the timeout) is ACKed 100 ms later: step (11),
    // SRTT = max(SRTT_prev 102, 100), RTTVAR = max(RTTVAR_prev 50, 100/2), RTO = SRTT +
    // max(G, 4·RTTVAR).
    s.ack(ms(700), ack_ts(6000, 600));
    assert_eq!(s.s.rtt().srtt(), Some(SimDuration::from_millis(102)));
    assert_eq!(s.s.rtt().rttvar(), SimDuration::from_millis(50));
    assert_eq!(s.s.rto(), SimDuration::from_millis(302));
    // Only once: the next sample updates the estimator as usual.
    s.ack(ms(701), ack_ts(7000, 600));
    assert_ne!(s.s.rtt().srtt(), Some(SimDuration::from_millis(102)));
}

#[test]
fn eifel_spur_to_response_lets_three_dupacks_fast_retransmit_at_once_rfc4015_s4() {
    let mut s = eifel_spike(Response::Eifel);
    s.ack(ms(600), ack_ts(3000, 100));
    assert_eq!(s.undos(), 1);
    // Segment 3 was lost after all: three duplicate ACKs below the timeout's recover (5000).
    // §4: after SPUR_TO, NewReno's step 1 goes straight to fast retransmit (step 1B, the
    // "bugfix" check against recover, is obsolete since step (8) sent no go-back-N).
    assert!(s.ack(ms(650), ack_ts(3000, 100)).is_empty());
    assert!(s.ack(ms(651), ack_ts(3000, 100)).is_empty());
    let out = s.ack(ms(652), ack_ts(3000, 100));
    assert_eq!(
        out.first().map(|t| (t.seg.seq, t.kind)),
        Some((3000, TxKind::FastRetransmit))
    );
}

#[test]
fn eifel_detection_without_response_keeps_go_back_n() {
    let mut s = eifel_spike(Response::None);
    let out = s.ack(ms(600), ack_ts(3000, 100));
    assert!(s.verdicts()[0].1.is_spurious());
    assert_eq!(s.undos(), 0);
    // Conventional recovery: slow start from the loss window, go-back-N from snd_una.
    assert_eq!(s.s.cwnd(), 2000);
    assert_eq!(s.s.ssthresh(), 2000);
    assert_eq!(
        kinds(&out),
        vec![(3000, TxKind::Retransmit), (4000, TxKind::Retransmit)]
    );
}

#[test]
fn eifel_genuine_loss_echoes_retransmit_ts_and_recovers_conventionally() {
    let mut s = eifel_spike(Response::Eifel);
    // Segments 2 and 3 were lost: the retransmission of 2 (TSval 400) is ACKed, echoing 400.
    let out = s.ack(ms(500), ack_ts(3000, 400));
    assert_eq!(
        s.verdicts(),
        vec![(
            DetectorKind::Eifel,
            Verdict::Genuine(Evidence::Timestamp {
                ts_ecr: 400,
                retransmit_ts: 400
            })
        )]
    );
    assert_eq!(s.undos(), 0);
    assert_eq!(s.s.state(), CaState::Loss);
    assert_eq!(s.s.ssthresh(), 2000);
    assert_eq!(s.s.cwnd(), 2000);
    assert_eq!(
        kinds(&out),
        vec![(3000, TxKind::Retransmit), (4000, TxKind::Retransmit)]
    );
}

#[test]
fn eifel_recurring_timeout_keeps_the_first_retransmit_ts() {
    let mut s = eifel_spike(Response::Eifel);
    // The spike outlasts the backed-off RTO (600 ms): a second expiry, same episode.
    assert_eq!(
        kinds(&s.timer(ms(1000))),
        vec![(2000, TxKind::RtoRetransmit)]
    );
    let starts =
        s.s.spurious_events()
            .iter()
            .filter(|e| matches!(e, SpuriousEvent::EpisodeStart(_)))
            .count();
    assert_eq!(starts, 1, "RFC 3522 step 2: one episode, RetransmitTS kept");
    // The echo is compared with the first retransmission's TSval (400), not the second's.
    s.ack(ms(1100), ack_ts(3000, 100));
    assert!(s.verdicts()[0].1.is_spurious());
}

fn episode_starts(s: &Snd) -> usize {
    s.s.spurious_events()
        .iter()
        .filter(|e| matches!(e, SpuriousEvent::EpisodeStart(_)))
        .count()
}

#[test]
fn eifel_not_reinitiated_by_a_timeout_during_fast_recovery_rfc3522() {
    let mut c = cfg(
        Variant::NewReno,
        10,
        true,
        false,
        &[DetectorKind::Eifel],
        Response::Undo,
    );
    c.initial_ssthresh = Some(20_000);
    let mut s = Snd::new(c, None);
    s.send(ms(0));
    for i in 0..3 {
        s.ack(ms(100 + i), ack_ts(0, 0));
    }
    // Fast retransmit of segment 0 at 102 ms: RetransmitTS 102.
    assert_eq!(s.s.state(), CaState::Recovery);
    // No acceptable ACK before the timer expires for the same segment (1 s initial RTO).
    assert_eq!(kinds(&s.timer(ms(1000))), vec![(0, TxKind::RtoRetransmit)]);
    assert_eq!(episode_starts(&s), 2);
    // The fast retransmission had arrived: the ACK echoes its TSval 102. §3.2: the detection
    // "MUST NOT be reinitiated ... upon subsequent timeouts for the same segment", so the
    // echo is not compared with the timeout's TSval (1000), which would call it spurious.
    s.ack(ms(1100), ack_ts(10_000, 102));
    assert!(s.verdicts().is_empty(), "{:?}", s.verdicts());
    assert_eq!(s.undos(), 0);
}

#[test]
fn eifel_not_reinitiated_by_a_timeout_in_an_unfinished_rto_recovery_rfc3522() {
    let mut s = eifel_spike(Response::Eifel);
    // Segments 2 and 3 lost: the retransmission of 2 is ACKed (genuine); RTO recovery goes on
    // until recover (5000) is acknowledged.
    s.ack(ms(500), ack_ts(3000, 400));
    assert_eq!(s.verdicts().len(), 1);
    assert_eq!(s.s.state(), CaState::Loss);
    // The go-back-N retransmissions get no answer; the timer expires again after progress.
    let t = s.s.next_timer().unwrap();
    assert_eq!(kinds(&s.timer(t)), vec![(3000, TxKind::RtoRetransmit)]);
    assert_eq!(episode_starts(&s), 2);
    // A late ACK of an original (TSval 100) does not make the second timeout spurious.
    s.ack(t + SimDuration::from_millis(50), ack_ts(4000, 100));
    assert_eq!(s.verdicts().len(), 1);
    assert_eq!(s.undos(), 0);
}

#[test]
fn eifel_spurious_fast_retransmit_from_reordering_is_undone() {
    // NewReno with timestamps; segment 0 is overtaken by 1..3 (reordering, no loss).
    let mut c = cfg(
        Variant::NewReno,
        10,
        true,
        false,
        &[DetectorKind::Eifel],
        Response::Undo,
    );
    c.initial_ssthresh = Some(20_000);
    let mut s = Snd::new(c, None);
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 10));
    assert!(s.ack(ms(100), ack_ts(0, 0)).is_empty());
    assert!(s.ack(ms(101), ack_ts(0, 0)).is_empty());
    let out = s.ack(ms(102), ack_ts(0, 0));
    assert_eq!(kinds(&out), vec![(0, TxKind::FastRetransmit)]);
    assert_eq!(s.s.ssthresh(), 5000);
    assert_eq!(s.s.cwnd(), 8000);
    // Linux prior_ssthresh = max(ssthresh, 3/4 cwnd) = 20000; prior_cwnd = 10000.
    assert_eq!(s.s.ledger().prior_ssthresh, 20_000);
    // The reordered original arrives: ACK 4000 echoes its TSval 0 < RetransmitTS 102.
    let out = s.ack(ms(103), ack_ts(4000, 0));
    assert!(s.verdicts()[0].1.is_spurious());
    assert_eq!(s.undos(), 1);
    // Full undo: cwnd = max(cwnd, prior_cwnd), ssthresh = prior_ssthresh; the partial ACK's
    // retransmission of 4000 (RFC 6582) is not sent.
    assert_eq!(s.s.cwnd(), 10_000);
    assert_eq!(s.s.ssthresh(), 20_000);
    assert_eq!(s.s.state(), CaState::Open);
    assert_eq!(kinds(&out), new_segments(10_000, 4));
}

// ---- DSACK-based detection (RFC 3708) --------------------------------------------------------

/// A 4-segment file sent at 0 ms; nothing comes back before the RTO (1 s initial). After it
/// the ACKs return one by one and go-back-N retransmits segments 1..3.
fn dsack_rto(response: Response) -> Snd {
    let mut c = cfg(
        Variant::Reno,
        4,
        false,
        true,
        &[DetectorKind::Dsack],
        response,
    );
    c.initial_ssthresh = Some(3000);
    let mut s = Snd::new(c, Some(4000));
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 4));
    assert_eq!(kinds(&s.timer(ms(1000))), vec![(0, TxKind::RtoRetransmit)]);
    assert_eq!(s.s.ledger().prior_cwnd, 4000);
    assert_eq!(s.s.ledger().prior_ssthresh, 3000);
    assert_eq!(
        kinds(&s.ack(ms(1100), ack(1000))),
        vec![(1000, TxKind::Retransmit), (2000, TxKind::Retransmit)]
    );
    assert_eq!(
        kinds(&s.ack(ms(1101), ack(2000))),
        vec![(3000, TxKind::Retransmit)]
    );
    assert!(s.ack(ms(1102), ack(3000)).is_empty());
    assert!(s.ack(ms(1103), ack(4000)).is_empty());
    assert_eq!(s.s.state(), CaState::Open);
    assert_eq!(s.s.ledger().undo_retrans, 4);
    s
}

#[test]
fn dsack_declares_spurious_only_when_every_retransmission_is_reported() {
    let mut s = dsack_rto(Response::Undo);
    let cwnd = s.s.cwnd();
    // The four retransmissions reach a receiver that already had the originals: four DSACKs.
    for i in 0..3 {
        s.ack(ms(1150 + i), sack(4000, &[(i * MSS, (i + 1) * MSS)]));
        assert!(s.verdicts().is_empty(), "{} of 4 reported", i + 1);
    }
    assert_eq!(s.s.stats().dsacks_rcvd, 3);
    s.ack(ms(1153), sack(4000, &[(3000, 4000)]));
    assert_eq!(
        s.verdicts(),
        vec![(
            DetectorKind::Dsack,
            Verdict::Spurious(Evidence::Dsack { retransmissions: 4 })
        )]
    );
    // Full undo (late): cwnd = max(cwnd, prior_cwnd), ssthresh = max(ssthresh, prior).
    assert_eq!(s.s.cwnd(), cwnd.max(4000));
    assert_eq!(s.s.ssthresh(), 3000);
    assert_eq!(s.undos(), 1);
}

#[test]
fn dsack_genuine_loss_leaves_the_episode_undecided() {
    let mut s = dsack_rto(Response::Undo);
    let (cwnd, ssthresh) = (s.s.cwnd(), s.s.ssthresh());
    // Segment 0's original was lost: only the go-back-N retransmissions 1..3 are duplicates.
    for i in 1..4 {
        s.ack(ms(1150 + i), sack(4000, &[(i * MSS, (i + 1) * MSS)]));
    }
    assert!(s.verdicts().is_empty());
    assert_eq!(s.undos(), 0);
    assert_eq!(s.s.ledger().undo_retrans, 1);
    assert_eq!((s.s.cwnd(), s.s.ssthresh()), (cwnd, ssthresh));
}

/// A 4-segment file sent at 0 ms; the RTO (1 s) retransmits segment 0.
fn dsack_timeout() -> Snd {
    let c = cfg(
        Variant::Reno,
        4,
        false,
        true,
        &[DetectorKind::Dsack],
        Response::Undo,
    );
    let mut s = Snd::new(c, Some(4000));
    s.send(ms(0));
    assert_eq!(kinds(&s.timer(ms(1000))), vec![(0, TxKind::RtoRetransmit)]);
    s
}

#[test]
fn dsack_of_a_segment_retransmitted_twice_never_reverts_the_episode_rfc3708_a3() {
    let mut s = dsack_timeout();
    // The spike outlasts the backed-off RTO: segment 0 is retransmitted a second time.
    assert_eq!(kinds(&s.timer(ms(3000))), vec![(0, TxKind::RtoRetransmit)]);
    // The originals arrive, then both copies of segment 0 as duplicates: two DSACKs for one
    // segment. (A.3): retransmitted more than once, so no reversal in this window.
    s.ack(ms(3100), ack(4000));
    s.ack(ms(3101), sack(4000, &[(0, 1000)]));
    s.ack(ms(3102), sack(4000, &[(0, 1000)]));
    assert!(s.verdicts().is_empty(), "{:?}", s.verdicts());
    assert_eq!(s.undos(), 0);
}

#[test]
fn dsack_of_a_segment_never_retransmitted_turns_the_detector_off_rfc3708_a4() {
    let mut s = dsack_timeout();
    s.ack(ms(1100), ack(4000));
    // Segment 1 was never retransmitted: the network duplicated it (A.4), and DSACKs are not
    // used for the rest of the connection; the report of segment 0 that follows is ignored.
    s.ack(ms(1101), sack(4000, &[(1000, 2000)]));
    s.ack(ms(1102), sack(4000, &[(0, 1000)]));
    assert!(s.verdicts().is_empty(), "{:?}", s.verdicts());
    assert_eq!(s.undos(), 0);
}

#[test]
fn dsack_at_snd_una_without_sack_information_never_reverts_the_episode_rfc3708_a1() {
    let mut s = dsack_timeout();
    // Every ACK of the window was lost: the first ACK after the timeout reports the
    // retransmission of segment 0 as a duplicate, starting at SND.UNA, with no SACK
    // information held. (A.1): reverse path congested, keep the reduction.
    s.ack(ms(1100), sack(4000, &[(0, 1000)]));
    assert!(s.verdicts().is_empty(), "{:?}", s.verdicts());
    assert_eq!(s.undos(), 0);
}

#[test]
fn dsack_detection_with_eifel_response_is_late_step9_without_step8_rfc4015() {
    let mut s = dsack_rto(Response::Eifel);
    // RFC 4015 step (0) at the timeout: pipe_prev = max(FlightSize 4000, ssthresh 3000).
    assert_eq!(s.s.ledger().pipe_prev, 4000);
    assert!(s.s.cwnd() > MSS);
    for i in 0..4 {
        s.ack(ms(1150 + i), sack(4000, &[(i * MSS, (i + 1) * MSS)]));
    }
    assert!(s.verdicts()[0].1.is_spurious());
    assert_eq!(s.undos(), 1);
    // LATE_SPUR_TO: step (7) skips step (8); step (9) sets cwnd = FlightSize (0) +
    // min(bytes_acked (0), IW), whatever cwnd had grown to (kept at 1 SMSS), and ssthresh =
    // pipe_prev: slow start revalidates the window (§3.2).
    assert_eq!(s.s.cwnd(), MSS);
    assert_eq!(s.s.ssthresh(), 4000);
}

#[test]
fn eifel_response_not_reinitiated_before_the_rto_recovery_completes_rfc4015() {
    let run = |response| {
        let mut c = cfg(
            Variant::Reno,
            4,
            false,
            true,
            &[DetectorKind::Dsack],
            response,
        );
        c.initial_ssthresh = Some(3000);
        let mut s = Snd::new(c, Some(4000));
        s.send(ms(0));
        assert_eq!(kinds(&s.timer(ms(1000))), vec![(0, TxKind::RtoRetransmit)]);
        // Progress, but the receiver's window closes: no go-back-N; RTO recovery goes on
        // (recover 4000).
        s.ack(
            ms(1100),
            Segment {
                window: 0,
                ..ack(3000)
            },
        );
        assert_eq!(s.s.state(), CaState::Loss);
        // The timer expires again after progress: a new episode inside the RTO recovery.
        let t = s.s.next_timer().unwrap();
        assert_eq!(kinds(&s.timer(t)), vec![(3000, TxKind::RtoRetransmit)]);
        // Step (0) is not taken again.
        assert_eq!(s.s.ledger().pipe_prev, 4000);
        // The original of segment 3 arrives, then the retransmission as a duplicate: every
        // retransmission of the second episode is DSACKed.
        s.ack(t + SimDuration::from_millis(50), ack(4000));
        s.ack(
            t + SimDuration::from_millis(51),
            sack(4000, &[(3000, 4000)]),
        );
        assert!(s.verdicts().last().unwrap().1.is_spurious());
        s.undos()
    };
    // §3.1: the algorithm "MUST NOT be reinitiated after a timeout-based loss recovery has
    // already been started but not completed".
    assert_eq!(run(Response::Eifel), 0);
    assert_eq!(
        run(Response::Undo),
        1,
        "Linux re-arms its undo (tcp_enter_loss)"
    );
}

// ---- F-RTO (RFC 5682) ------------------------------------------------------------------------

/// Four segments at 0 ms, RTO at 1 s retransmits segment 0 and F-RTO starts (step 1).
fn frto_rto(variant: Variant, sack_on: bool, response: Response) -> Snd {
    let mut c = cfg(variant, 4, false, sack_on, &[DetectorKind::Frto], response);
    c.initial_ssthresh = Some(3000);
    let mut s = Snd::new(c, None);
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 4));
    assert_eq!(kinds(&s.timer(ms(1000))), vec![(0, TxKind::RtoRetransmit)]);
    assert!(s.s.frto_active());
    s
}

#[test]
fn frto_basic_two_new_segments_then_ack_of_original_data_is_spurious() {
    let mut s = frto_rto(Variant::Reno, false, Response::Undo);
    // Step 2b: the first ACK advances but does not cover recover (4000): two new segments,
    // no retransmission of segment 1.
    let out = s.ack(ms(1100), ack(1000));
    assert_eq!(kinds(&out), new_segments(4000, 2));
    assert!(s.verdicts().is_empty());
    // In flight: the two new segments; 1000-4000 wait for go-back-N (the trace said 0).
    assert_eq!(s.s.inflight(), 2000);
    // Step 3b: the next ACK acknowledges segment 1, never retransmitted: spurious.
    let out = s.ack(ms(1101), ack(2000));
    assert_eq!(
        s.verdicts(),
        vec![(
            DetectorKind::Frto,
            Verdict::Spurious(Evidence::Frto {
                step: FrtoStep::Step3b,
                ack: 2000
            })
        )]
    );
    assert_eq!(s.s.recover(), Some(2000), "step 3b: recover = SND.UNA");
    // Undo: cwnd = max(cwnd, prior 4000), ssthresh = prior 3000.
    assert_eq!(s.s.cwnd(), 4000);
    assert_eq!(s.s.ssthresh(), 3000);
    assert_eq!(s.s.state(), CaState::Open);
    assert!(no_retransmissions(&out), "{out:?}");
    assert_eq!(s.s.stats().retx_segments, 1);
}

#[test]
fn frto_detection_with_eifel_response_sets_flightsize_plus_acked_and_pipe_prev() {
    let mut s = frto_rto(Variant::Reno, false, Response::Eifel);
    // RFC 4015 step (0) at the timeout: pipe_prev = max(FlightSize 4000, ssthresh 3000).
    assert_eq!(s.s.ledger().pipe_prev, 4000);
    assert_eq!(kinds(&s.ack(ms(1100), ack(1000))), new_segments(4000, 2));
    let out = s.ack(ms(1101), ack(2000));
    assert!(s.verdicts()[0].1.is_spurious());
    // Step (2): cwnd = FlightSize (6000 − 2000) + min(bytes_acked 1000, IW 4000).
    assert_eq!(s.s.cwnd(), 5000);
    assert_eq!(s.s.ssthresh(), 4000);
    assert_eq!(s.s.state(), CaState::Open);
    assert_eq!(kinds(&out), new_segments(6000, 1));
}

#[test]
fn frto_basic_duplicate_ack_after_new_segments_is_genuine_and_caps_cwnd_at_3() {
    let mut s = frto_rto(Variant::Reno, false, Response::Undo);
    // Segments 0 and 1 were lost; the retransmission of 0 is ACKed (step 2b).
    assert_eq!(kinds(&s.ack(ms(1100), ack(1000))), new_segments(4000, 2));
    // The new segment 4 arrives above the hole at 1: a duplicate ACK (step 3a).
    let out = s.ack(ms(1150), ack(1000));
    assert_eq!(
        s.verdicts(),
        vec![(
            DetectorKind::Frto,
            Verdict::Genuine(Evidence::Frto {
                step: FrtoStep::Step3a,
                ack: 1000
            })
        )]
    );
    assert!(s.s.cwnd() <= 3 * MSS);
    assert_eq!(s.s.state(), CaState::Loss);
    // Conventional recovery: slow-start retransmissions from snd_una.
    assert_eq!(
        out.first().map(|t| (t.seg.seq, t.kind)),
        Some((1000, TxKind::Retransmit))
    );
    assert_eq!(s.undos(), 0);
}

#[test]
fn frto_basic_step2a_first_ack_covering_everything_is_conventional() {
    let mut s = frto_rto(Variant::Reno, false, Response::Undo);
    let out = s.ack(ms(1100), ack(4000));
    assert!(matches!(
        s.verdicts()[0].1,
        Verdict::Genuine(Evidence::Frto {
            step: FrtoStep::Step2a,
            ..
        })
    ));
    assert!(!s.s.frto_active());
    assert_eq!(s.undos(), 0);
    assert_eq!(s.s.state(), CaState::Open, "everything acknowledged");
    assert!(no_retransmissions(&out));
}

#[test]
fn frto_sack_not_used_for_a_timeout_during_fast_recovery_rfc5682_s3() {
    let mut c = cfg(
        Variant::Sack,
        10,
        false,
        true,
        &[DetectorKind::Frto],
        Response::Undo,
    );
    c.initial_ssthresh = Some(20_000);
    let mut s = Snd::new(c, None);
    s.send(ms(0));
    for i in 0..3 {
        s.ack(ms(100 + i), sack(0, &[(1000, 2000 + i * MSS)]));
    }
    assert_eq!(s.s.state(), CaState::Recovery);
    s.timer(s.s.next_timer().unwrap());
    assert!(
        !s.s.frto_active(),
        "RFC 5682 §3.1: not applied when already in loss recovery (Linux tcp_enter_loss too)"
    );
}

#[test]
fn frto_basic_runs_for_a_timeout_during_newreno_fast_recovery_rfc5682_s2() {
    // §2.1 bars the basic algorithm during fast recovery only for loss recoveries other than
    // Reno and NewReno.
    let mut c = cfg(
        Variant::NewReno,
        10,
        false,
        false,
        &[DetectorKind::Frto],
        Response::Undo,
    );
    c.initial_ssthresh = Some(20_000);
    let mut s = Snd::new(c, None);
    s.send(ms(0));
    for i in 0..3 {
        s.ack(ms(100 + i), ack(0));
    }
    assert_eq!(s.s.state(), CaState::Recovery);
    // The fast retransmission of segment 0 is lost too; the timer expires.
    let out = s.timer(s.s.next_timer().unwrap());
    assert_eq!(kinds(&out), vec![(0, TxKind::RtoRetransmit)]);
    assert!(
        s.s.frto_active(),
        "step 1: not in RTO recovery, step 2 entered"
    );
    // §2.2's example: the rest of the window had arrived, so the first ACK covers recover:
    // step 2a, conventional recovery, not spurious.
    s.ack(ms(1100), ack(10_000));
    assert!(matches!(
        s.verdicts()[..],
        [(
            DetectorKind::Frto,
            Verdict::Genuine(Evidence::Frto {
                step: FrtoStep::Step2a,
                ack: 10_000
            })
        )]
    ));
    assert_eq!(s.undos(), 0);
}

#[test]
fn frto_sack_two_new_segments_then_ack_below_recovery_point_is_spurious() {
    let mut s = frto_rto(Variant::Sack, true, Response::Undo);
    assert_eq!(kinds(&s.ack(ms(1100), ack(1000))), new_segments(4000, 2));
    let out = s.ack(ms(1101), ack(2000));
    assert_eq!(
        s.verdicts(),
        vec![(
            DetectorKind::Frto,
            Verdict::Spurious(Evidence::Frto {
                step: FrtoStep::Step3b,
                ack: 2000
            })
        )]
    );
    assert_eq!(s.s.cwnd(), 4000);
    assert!(no_retransmissions(&out));
}

#[test]
fn frto_sack_sack_of_new_segment_above_recovery_point_is_genuine() {
    let mut c = cfg(
        Variant::Sack,
        4,
        false,
        true,
        &[DetectorKind::Frto],
        Response::Undo,
    );
    c.initial_ssthresh = Some(3000);
    let mut s = Snd::new(c, None);
    s.send(ms(0));
    // Segments 0 and 1 lost; 2 and 3 SACKed (two duplicate ACKs, below the threshold).
    s.ack(ms(100), sack(0, &[(2000, 3000)]));
    s.ack(ms(101), sack(0, &[(2000, 4000)]));
    assert_eq!(s.s.state(), CaState::Disorder);
    assert_eq!(kinds(&s.timer(ms(1000))), vec![(0, TxKind::RtoRetransmit)]);
    assert!(s.s.frto_active());
    // Step 2b: the retransmission of 0 is ACKed (the receiver still holds 2 and 3).
    assert_eq!(
        kinds(&s.ack(ms(1100), sack(1000, &[(2000, 4000)]))),
        new_segments(4000, 2)
    );
    // Step 3a: the new segment 4 is SACKed, above RecoveryPoint.
    let out = s.ack(ms(1150), sack(1000, &[(4000, 5000), (2000, 4000)]));
    assert!(matches!(
        s.verdicts()[0].1,
        Verdict::Genuine(Evidence::Frto {
            step: FrtoStep::Step3a,
            ..
        })
    ));
    assert!(s.s.cwnd() <= 3 * MSS);
    assert_eq!(
        out.first().map(|t| (t.seg.seq, t.kind)),
        Some((1000, TxKind::Retransmit))
    );
    assert_eq!(s.undos(), 0);
}

// ---- combinations -----------------------------------------------------------------------------

#[test]
fn eifel_and_frto_together_give_one_verdict_and_one_undo() {
    let mut c = cfg(
        Variant::Reno,
        4,
        true,
        false,
        &[DetectorKind::Eifel, DetectorKind::Frto],
        Response::Undo,
    );
    c.initial_ssthresh = Some(3000);
    let mut s = Snd::new(c, None);
    s.send(ms(0));
    s.timer(ms(1000));
    assert!(s.s.frto_active());
    // The first ACK echoes the original's TSval 0: Eifel decides at once; F-RTO stops.
    let out = s.ack(ms(1100), ack_ts(1000, 0));
    assert_eq!(s.verdicts().len(), 1);
    assert_eq!(s.verdicts()[0].0, DetectorKind::Eifel);
    assert_eq!(s.undos(), 1);
    assert!(!s.s.frto_active());
    assert_eq!(s.s.cwnd(), 4000);
    assert!(no_retransmissions(&out));
    for i in 0..3 {
        let out = s.ack(ms(1101 + i), ack_ts(2000 + i * MSS, 0));
        assert!(no_retransmissions(&out));
    }
    assert_eq!(s.verdicts().len(), 1);
    assert_eq!(s.s.stats().undo_count, 1);
}

#[test]
fn eifel_and_dsack_both_detect_but_the_response_happens_once() {
    let mut c = cfg(
        Variant::Reno,
        4,
        true,
        true,
        &[DetectorKind::Eifel, DetectorKind::Dsack],
        Response::Undo,
    );
    c.initial_ssthresh = Some(3000);
    let mut s = Snd::new(c, None);
    s.send(ms(0));
    s.timer(ms(1000));
    s.ack(ms(1100), ack_ts(1000, 0));
    assert_eq!(s.undos(), 1);
    // The retransmission of 0 comes back as a DSACK: DSACK agrees, nothing more happens.
    let cwnd = s.s.cwnd();
    s.ack(
        ms(1150),
        Segment {
            ts: Some(Timestamps { val: 0, ecr: 1000 }),
            ..sack(1000, &[(0, 1000)])
        },
    );
    let v = s.verdicts();
    assert_eq!(v.len(), 2);
    assert!(v.iter().all(|(_, v)| v.is_spurious()));
    assert_eq!(v[1].0, DetectorKind::Dsack);
    assert_eq!(s.undos(), 1);
    assert_eq!(s.s.cwnd(), cwnd);
}

#[test]
fn without_a_response_each_detector_goes_on_and_decides_for_itself() {
    let mut c = cfg(
        Variant::Reno,
        4,
        true,
        false,
        &[DetectorKind::Eifel, DetectorKind::Frto],
        Response::None,
    );
    c.initial_ssthresh = Some(3000);
    let mut s = Snd::new(c, None);
    s.send(ms(0));
    s.timer(ms(1000));
    // Eifel declares the timeout spurious; nothing changes, so F-RTO still runs step 2b.
    let out = s.ack(ms(1100), ack_ts(1000, 0));
    assert_eq!(kinds(&out), new_segments(4000, 2));
    assert_eq!(s.verdicts().len(), 1);
    // F-RTO's own step 3b: spurious too; the recovery ends without retransmissions, with the
    // reduced ssthresh and the cwnd of the conventional sender (1 → 2 MSS in slow start, then
    // congestion avoidance at cwnd = ssthresh: + SMSS·SMSS/cwnd = 500).
    let out = s.ack(ms(1101), ack_ts(2000, 0));
    let v = s.verdicts();
    assert_eq!(v.len(), 2);
    assert_eq!(v[1].0, DetectorKind::Frto);
    assert!(v[1].1.is_spurious());
    assert_eq!(s.undos(), 0);
    assert_eq!(s.s.state(), CaState::Open);
    assert_eq!(s.s.ssthresh(), 2000);
    assert_eq!(s.s.cwnd(), 2500);
    assert!(no_retransmissions(&out));
    assert_eq!(s.s.stats().retx_segments, 1);
}
