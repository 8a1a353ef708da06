//! Scripted packet tests (STYLE.md tier 2, smoltcp / packetdrill style).
//!
//! Every test drives [`TcpSender`] and [`TcpReceiver`] by hand: segments in and out at explicit
//! times, deterministic drops chosen by sequence number, and assertions on the segments sent,
//! their [`TxKind`], cwnd, ssthresh, [`CaState`], `recover` and the RTO. Each test is named
//! after the RFC rule it pins. Numbers are kept easy: MSS 1000 bytes, so segment `i` starts at
//! byte `1000·i`.
//!
//! Every sender step also checks the invariant cwnd ≥ 1 MSS (the loss window of RFC 5681 §3.1
//! is the floor).

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use spikelab_core::{SimDuration, SimTime};
use spikelab_tcp::cc::{AckCounting, CongestionControl, Reno, Window};
use spikelab_tcp::{
    CaState, RtoConfig, Segment, TcpConfig, TcpReceiver, Timestamps, Transmit, TxKind, Variant,
};

// ---- harness (shared parts in common/mod.rs) --------------------------------------------

mod common;
use common::*;

fn cfg(variant: Variant, initial_window: u32) -> TcpConfig {
    plain_cfg(variant, initial_window)
}

/// A segment with the timestamps option.
fn ts(seg: Segment, val: u32, ecr: u32) -> Segment {
    Segment {
        ts: Some(Timestamps { val, ecr }),
        ..seg
    }
}

/// A full-sized data segment starting at `seq`.
fn data(seq: u64) -> Segment {
    Segment {
        seq,
        len: MSS as u32,
        window: RWND,
        ..Segment::default()
    }
}

/// Reno whose `ssthresh` hook counts its calls, to see whether a congestion event recomputed
/// ssthresh at all (RFC 5681 §3.1: a repeated timeout holds it).
struct CountingReno {
    inner: Reno,
    calls: Arc<AtomicUsize>,
}

impl CongestionControl for CountingReno {
    fn name(&self) -> &'static str {
        "counting-reno"
    }
    fn ssthresh(&mut self, w: &Window, flight_size: u64) -> u64 {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.ssthresh(w, flight_size)
    }
    fn cong_avoid(&mut self, w: &mut Window, acked: u64) {
        self.inner.cong_avoid(w, acked)
    }
}

fn counting_reno() -> (Box<dyn CongestionControl>, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let cc = CountingReno {
        inner: Reno::new(AckCounting::PerAck),
        calls: calls.clone(),
    };
    (Box::new(cc), calls)
}

// ---- 1. fast retransmit and fast recovery (RFC 5681 §3.2) ------------------------------------

#[test]
fn third_dupack_triggers_fast_retransmit_and_halves_flight() {
    for variant in [Variant::Reno, Variant::NewReno] {
        let mut s = Snd::new(cfg(variant, 10), None);
        assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 10), "{variant:?}");

        // Segment 0 is lost; segments 1.. each elicit a duplicate ACK of 0.
        assert!(s.dupack_train(ms(100), 0, 2).is_empty(), "{variant:?}");
        assert_eq!(s.state(), CaState::Disorder, "{variant:?}");
        assert_eq!(s.dupacks(), 2);
        assert_eq!(s.ssthresh(), u64::MAX, "two duplicate ACKs are not a loss");
        assert_eq!(s.cwnd(), 10 * MSS);
        assert_eq!(s.stats().fast_retx_count, 0);

        let out = s.ack(ms(102), ack(0));
        assert_eq!(
            kinds(&out),
            vec![(0, TxKind::FastRetransmit)],
            "{variant:?}"
        );
        assert_eq!(s.state(), CaState::Recovery);
        // Eq. 4: ssthresh = max(FlightSize / 2, 2·SMSS) = max(10000 / 2, 2000).
        assert_eq!(s.ssthresh(), 5000, "{variant:?}");
        // Step 3: cwnd = ssthresh + 3·SMSS.
        assert_eq!(s.cwnd(), 8000, "{variant:?}");
        assert_eq!(s.stats().fast_retx_count, 1);
        let expect_recover = (variant == Variant::NewReno).then_some(10 * MSS);
        assert_eq!(
            s.recover(),
            expect_recover,
            "RFC 6582 step 2: recover = HighData"
        );

        // Step 4: every further duplicate ACK inflates cwnd by one SMSS; new data goes out once
        // cwnd covers snd_nxt + SMSS − snd_una = 11000.
        assert!(s.ack(ms(103), ack(0)).is_empty());
        assert_eq!(s.cwnd(), 9000);
        assert!(s.ack(ms(104), ack(0)).is_empty());
        assert_eq!(s.cwnd(), 10_000);
        let out = s.ack(ms(105), ack(0));
        assert_eq!(s.cwnd(), 11_000);
        assert_eq!(kinds(&out), new_segments(10 * MSS, 1), "{variant:?}");
        assert_eq!(
            s.stats().fast_retx_count,
            1,
            "one loss event, one reduction"
        );
        assert_eq!(s.ssthresh(), 5000);
    }
}

#[test]
fn limited_transmit_is_left_out_of_flightsize_and_ssthresh_floor_is_two_segments() {
    // RFC 3042 §2: the first two duplicate ACKs each release one new segment, cwnd unchanged.
    // RFC 5681 §3.2 step 2: those segments are not counted in FlightSize for eq. 4.
    let mut s = Snd::new(
        TcpConfig {
            limited_transmit: true,
            ..cfg(Variant::NewReno, 3)
        },
        None,
    );
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 3));
    assert_eq!(kinds(&s.ack(ms(100), ack(0))), new_segments(3000, 1));
    assert_eq!(kinds(&s.ack(ms(101), ack(0))), new_segments(4000, 1));
    assert_eq!(s.cwnd(), 3000, "limited transmit does not change cwnd");
    let out = s.ack(ms(102), ack(0));
    assert_eq!(kinds(&out), vec![(0, TxKind::FastRetransmit)]);
    // FlightSize = 5000 − 2000 (limited transmit) = 3000; max(1500, 2·SMSS) = 2000.
    assert_eq!(s.ssthresh(), 2000);
    assert_eq!(s.cwnd(), 5000);
}

// ---- 2. Reno vs NewReno: two losses in one window --------------------------------------------

/// A 10-segment file, all sent at t = 0; segments 0 and 3 are lost. The eight other segments
/// each produce a duplicate ACK of 0 (t = 100..107 ms); the third starts fast retransmit.
fn two_losses_in_one_window(variant: Variant) -> Snd {
    let mut s = Snd::new(cfg(variant, 10), Some(10 * MSS));
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 10));
    let out = s.dupack_train(ms(100), 0, 8);
    assert_eq!(kinds(&out), vec![(0, TxKind::FastRetransmit)]);
    assert_eq!(s.state(), CaState::Recovery);
    assert_eq!(s.ssthresh(), 5000);
    // 5000 + 3·1000, inflated by 5 further duplicate ACKs; the file has no more new data.
    assert_eq!(s.cwnd(), 13_000);
    s
}

#[test]
fn reno_leaves_recovery_on_first_partial_ack() {
    let mut s = two_losses_in_one_window(Variant::Reno);
    // The retransmitted segment 0 arrives: the receiver holds 1 and 2, so ACK 3000.
    let out = s.ack(ms(200), ack(3000));
    // RFC 5681 §3.2 step 6: any ACK of new data deflates to ssthresh and ends recovery.
    assert_eq!(s.state(), CaState::Open);
    assert_eq!(s.cwnd(), 5000);
    assert_eq!(s.ssthresh(), 5000);
    assert!(
        out.is_empty(),
        "Reno does not repair the second hole: {out:?}"
    );
    // With no new data left there are no more duplicate ACKs: only the timer repairs segment 3.
    assert_eq!(
        s.next_timer(),
        Some(ms(1200)),
        "RTO restarted by the new ACK"
    );
    let out = s.timer(ms(1200));
    assert_eq!(kinds(&out), vec![(3000, TxKind::RtoRetransmit)]);
    assert_eq!(s.stats().rto_count, 1);
}

#[test]
fn newreno_partial_ack_retransmits_next_hole_and_full_ack_ends_recovery() {
    let mut s = two_losses_in_one_window(Variant::NewReno);
    assert_eq!(s.recover(), Some(10 * MSS));
    // Partial ACK (RFC 6582 §3.2 step 3): 3000 < recover.
    let out = s.ack(ms(200), ack(3000));
    assert_eq!(s.state(), CaState::Recovery);
    assert_eq!(
        kinds(&out),
        vec![(3000, TxKind::Retransmit)],
        "the first unacknowledged segment is retransmitted at once"
    );
    // Deflate by the 3000 bytes acknowledged, add back one SMSS: 13000 − 3000 + 1000.
    assert_eq!(s.cwnd(), 11_000);
    assert_eq!(s.ssthresh(), 5000);
    assert_eq!(s.recover(), Some(10 * MSS));
    // The first partial ACK resets the retransmit timer (§3.2 step 3, §4 "Impatient").
    assert_eq!(s.next_timer(), Some(ms(1200)));

    // The retransmitted segment 3 arrives: ACK 10000 covers recover (a full ACK).
    let out = s.ack(ms(300), ack(10 * MSS));
    assert!(out.is_empty());
    assert_eq!(s.state(), CaState::Open);
    // Option (1): min(ssthresh, max(FlightSize, SMSS) + SMSS) = min(5000, max(0, 1000) + 1000).
    assert_eq!(s.cwnd(), 2000);
    assert_eq!(s.stats().fast_retx_count, 1);
    assert_eq!(s.stats().rto_count, 0);
    assert!(s.is_done());
    assert_eq!(
        s.next_timer(),
        None,
        "RFC 6298 (5.2): all data acknowledged"
    );
}

// ---- 3. NewReno after a timeout: paper 002's "bug fix" (RFC 6582 §3.2 step 2, step 4) -------

/// IW 4, all sent at t = 0; the RTO (initial 1 s) expires at t = 1 s and retransmits 0.
fn newreno_after_rto(block_fr_after_rto: bool) -> Snd {
    let mut s = Snd::new(
        TcpConfig {
            block_fr_after_rto,
            ..cfg(Variant::NewReno, 4)
        },
        None,
    );
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 4));
    let out = s.timer(ms(1000));
    assert_eq!(kinds(&out), vec![(0, TxKind::RtoRetransmit)]);
    assert_eq!(s.state(), CaState::Loss);
    // Step 4: after a retransmit timeout, recover = highest sequence number transmitted.
    assert_eq!(s.recover(), Some(4000));
    assert_eq!(s.ssthresh(), 2000);
    assert_eq!(s.cwnd(), MSS);
    s
}

#[test]
fn dupacks_below_recover_after_rto_do_not_fast_retransmit_with_bug_fix() {
    let mut s = newreno_after_rto(true);
    // A delay spike: the originals 1..3 arrive late and each produces a duplicate ACK of 0,
    // whose cumulative ACK does not cover recover.
    let out = s.dupack_train(ms(1050), 0, 3);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(s.stats().dupacks_rcvd, 3);
    assert_eq!(s.stats().fast_retx_count, 0);
    assert_eq!(s.state(), CaState::Loss);
    assert_eq!(s.ssthresh(), 2000, "step 2: ssthresh is not reset either");
    assert_eq!(s.cwnd(), MSS);
}

#[test]
fn dupacks_below_recover_after_rto_fast_retransmit_without_bug_fix() {
    let mut s = newreno_after_rto(false);
    let out = s.dupack_train(ms(1050), 0, 3);
    // The same three duplicate ACKs now start a (spurious) fast retransmit of segment 0,
    // already retransmitted by the timer.
    assert_eq!(
        out.first().map(|t| (t.seg.seq, t.kind)),
        Some((0, TxKind::FastRetransmit))
    );
    assert_eq!(s.stats().fast_retx_count, 1);
    assert_eq!(s.state(), CaState::Recovery);
    assert_eq!(s.ssthresh(), 2000);
    assert_eq!(s.cwnd(), 5000, "ssthresh + 3·SMSS");
    assert_eq!(s.recover(), Some(4000));
}

#[test]
fn newreno_after_rto_fast_retransmit_needs_ack_beyond_recover() {
    // RFC 6582 §3.2 step 2 and its note: the cumulative ACK "covers more than recover" when
    // ack_number − 1 > recover. An ACK exactly at HighData + 1 covers recover but not more.
    let mut s = newreno_after_rto(true);
    // The retransmission of 0 is acknowledged: slow start to 2000, go-back-N resends 1 and 2.
    let out = s.ack(ms(1100), ack(1000));
    assert_eq!(
        kinds(&out),
        vec![(1000, TxKind::Retransmit), (2000, TxKind::Retransmit)]
    );
    // The late originals are acknowledged in one go: ACK 4000 = recover (exclusive).
    let out = s.ack(ms(1110), ack(4000));
    assert_eq!(s.state(), CaState::Open);
    assert_eq!(kinds(&out), new_segments(4000, 2));
    // Segment 4000 is lost; segment 5000 and the two go-back-N duplicates each produce a
    // duplicate ACK of 4000 (paper 002's spurious fast retransmit).
    let out = s.dupack_train(ms(1150), 4000, 3);
    assert!(
        out.is_empty(),
        "ack 4000 does not cover more than recover: {out:?}"
    );
    assert_eq!(s.stats().fast_retx_count, 0);

    // Once the cumulative ACK is beyond recover, three duplicate ACKs do start fast retransmit.
    let mut s = newreno_after_rto(true);
    s.ack(ms(1100), ack(1000));
    s.ack(ms(1110), ack(4000));
    s.ack(ms(1160), ack(5000));
    let out = s.dupack_train(ms(1170), 5000, 3);
    assert_eq!(
        out.first().map(|t| (t.seg.seq, t.kind)),
        Some((5000, TxKind::FastRetransmit))
    );
    assert_eq!(s.stats().fast_retx_count, 1);
}

// ---- 4. SACK recovery over a scripted path (RFC 6675) ----------------------------------------

/// One direction of a path: serialization time per data segment, then a fixed delay; FIFO.
struct Link {
    serialization: SimDuration,
    delay: SimDuration,
    free_at: SimTime,
    queue: VecDeque<(SimTime, Segment)>,
}

impl Link {
    fn new(serialization: SimDuration, delay: SimDuration) -> Link {
        Link {
            serialization,
            delay,
            free_at: SimTime::ZERO,
            queue: VecDeque::new(),
        }
    }
    fn send(&mut self, now: SimTime, seg: Segment) {
        let start = self.free_at.max(now);
        self.free_at = start
            + if seg.len > 0 {
                self.serialization
            } else {
                SimDuration::ZERO
            };
        self.queue.push_back((self.free_at + self.delay, seg));
    }
    fn next(&self) -> Option<SimTime> {
        self.queue.front().map(|&(t, _)| t)
    }
}

/// What the sender looked like around one ACK.
#[derive(Debug, Clone, Copy)]
struct AckEvent {
    ack: u64,
    snd_una_before: u64,
    snd_max_before: u64,
    state_before: CaState,
    state: CaState,
    cwnd: u64,
    ssthresh: u64,
    snd_una: u64,
}

/// A sender and a receiver joined by two links. Drops are chosen by sequence number: the first
/// transmission of each segment in `drop_first` is lost on the forward path.
struct Pair {
    snd: Snd,
    rcv: TcpReceiver,
    now: SimTime,
    fwd: Link,
    rev: Link,
    drop_first: HashSet<u64>,
    sent: Vec<(SimTime, Transmit)>,
    acks: Vec<AckEvent>,
}

impl Pair {
    fn new(cfg: TcpConfig, app_total: Option<u64>, drop_first: &[u64]) -> Pair {
        Pair {
            snd: Snd::new(cfg.clone(), app_total),
            rcv: TcpReceiver::new(cfg),
            now: SimTime::ZERO,
            // 1000-byte segments at 8 Mb/s, 50 ms one way.
            fwd: Link::new(dur(1), dur(50)),
            rev: Link::new(SimDuration::ZERO, dur(50)),
            drop_first: drop_first.iter().copied().collect(),
            sent: Vec::new(),
            acks: Vec::new(),
        }
    }

    fn flush(&mut self) {
        for t in self.snd.send(self.now) {
            self.sent.push((self.now, t));
            let lost = t.kind == TxKind::New && self.drop_first.contains(&t.seg.seq);
            if !lost {
                self.fwd.send(self.now, t.seg);
            }
        }
        while let Some(a) = self.rcv.poll_transmit(self.now) {
            self.rev.send(self.now, a);
        }
    }

    /// Runs events in time order (data, then ACKs, then timers at equal times) until `end`.
    fn run_until(&mut self, end: SimTime) {
        self.flush();
        loop {
            let candidates = [
                self.fwd.next(),
                self.rev.next(),
                self.snd.next_timer(),
                self.rcv.next_timer(),
            ];
            let Some(next) = candidates.iter().flatten().min().copied() else {
                break;
            };
            if next > end {
                break;
            }
            self.now = next;
            if candidates[0] == Some(next) {
                let (_, seg) = self.fwd.queue.pop_front().unwrap();
                self.rcv.on_segment(next, &seg);
            } else if candidates[1] == Some(next) {
                let (_, seg) = self.rev.queue.pop_front().unwrap();
                let (snd_una_before, snd_max_before) = (self.snd.snd_una(), self.snd.snd_max());
                let state_before = self.snd.state();
                self.snd.s.on_ack(next, &seg);
                self.snd.check();
                self.acks.push(AckEvent {
                    ack: seg.ack,
                    snd_una_before,
                    snd_max_before,
                    state_before,
                    state: self.snd.state(),
                    cwnd: self.snd.cwnd(),
                    ssthresh: self.snd.ssthresh(),
                    snd_una: self.snd.snd_una(),
                });
            } else if candidates[2] == Some(next) {
                self.snd.s.on_timer(next);
                self.snd.check();
            } else {
                self.rcv.on_timer(next);
            }
            self.flush();
        }
    }

    fn retransmissions(&self) -> Vec<(u64, TxKind)> {
        self.sent
            .iter()
            .filter(|(_, t)| t.kind != TxKind::New)
            .map(|(_, t)| (t.seg.seq, t.kind))
            .collect()
    }
}

#[test]
fn sack_recovery_repairs_three_losses_in_one_window_without_rto() {
    let total = 40 * MSS;
    let lost = [2000, 4000, 6000];
    let mut p = Pair::new(cfg(Variant::Sack, 10), Some(total), &lost);
    p.run_until(ms(10_000));

    // All bytes arrive, in order, without a timeout.
    assert_eq!(p.rcv.rcv_nxt(), total);
    assert!(p.snd.is_done());
    assert_eq!(p.snd.stats().rto_count, 0);
    assert_eq!(p.snd.stats().fast_retx_count, 1, "one recovery episode");

    // Each lost segment is retransmitted exactly once, the first by fast retransmit, and nothing
    // else is retransmitted (so the receiver never reports a duplicate).
    assert_eq!(
        p.retransmissions(),
        vec![
            (2000, TxKind::FastRetransmit),
            (4000, TxKind::Retransmit),
            (6000, TxKind::Retransmit)
        ]
    );
    assert_eq!(p.snd.stats().retx_segments, 3);
    assert_eq!(p.snd.stats().dsacks_rcvd, 0);
    assert_eq!(p.rcv.stats().duplicate_segments, 0);

    // Entry (RFC 6675 §5 (4.1)-(4.2)): RecoveryPoint = HighData, cwnd = ssthresh = FlightSize/2.
    let entry = p
        .acks
        .iter()
        .position(|e| e.state == CaState::Recovery)
        .expect("recovery entered");
    let e = p.acks[entry];
    assert_eq!(e.state_before, CaState::Disorder);
    assert_eq!(e.ack, 2000, "the duplicate ACK of the first hole");
    let flight = e.snd_max_before - e.snd_una_before;
    assert_eq!(flight, 12_000, "segments 2..13 outstanding at entry");
    assert_eq!(e.ssthresh, flight / 2);
    assert_eq!(e.cwnd, flight / 2);
    let recovery_point = e.snd_max_before;

    // (A): recovery lasts exactly until a cumulative ACK passes RecoveryPoint.
    let exit = entry
        + p.acks[entry..]
            .iter()
            .position(|e| e.state != CaState::Recovery)
            .expect("recovery left");
    assert!(p.acks[entry..exit]
        .iter()
        .all(|e| e.snd_una < recovery_point));
    assert!(p.acks[exit].snd_una >= recovery_point, "{:?}", p.acks[exit]);
    assert_eq!(p.acks[exit].state, CaState::Open);
    assert!(p.acks[exit..].iter().all(|e| e.state == CaState::Open));
}

#[test]
fn sack_rescue_retransmission_waits_for_highack_beyond_rescuerxt() {
    // RFC 6675 §5 (4.3): HighRxt and RescueRxt are set to the highest sequence number of the
    // fast retransmission "to prevent ... a premature rescue retransmission"; NextSeg rule (4)
    // allows the rescue only once HighACK (the highest byte cumulatively ACKed) is greater than
    // RescueRxt.
    let mut s = Snd::new(cfg(Variant::Sack, 6), Some(6 * MSS));
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 6));
    // Segments 0, 1 and 5 are lost; 2, 3, 4 arrive.
    assert!(s.ack(ms(100), sack(0, &[(2000, 3000)])).is_empty());
    assert!(s.ack(ms(101), sack(0, &[(2000, 4000)])).is_empty());
    let out = s.ack(ms(102), sack(0, &[(2000, 5000)]));
    assert_eq!(s.state(), CaState::Recovery);
    assert_eq!(
        (s.cwnd(), s.ssthresh()),
        (3000, 3000),
        "FlightSize 6000 / 2"
    );
    // (4.3) the fast retransmission, then (C) NextSeg rule (1): segment 1 is lost (3 SACKed
    // segments above it). Segment 5 is above every SACK block, so no rule applies to it yet.
    assert_eq!(
        kinds(&out),
        vec![(0, TxKind::FastRetransmit), (1000, TxKind::Retransmit)]
    );
    // ACK 1000: HighACK = 999 = RescueRxt. Rules (1)-(3) find nothing and no new data exists,
    // but the rescue must still wait.
    let out = s.ack(ms(200), sack(1000, &[(2000, 5000)]));
    assert!(out.is_empty(), "premature rescue retransmission: {out:?}");
    // ACK 5000: HighACK = 4999 > RescueRxt: one rescue retransmission of the highest unSACKed
    // segment.
    let out = s.ack(ms(201), ack(5000));
    assert_eq!(kinds(&out), vec![(5000, TxKind::Retransmit)]);
    assert_eq!(s.state(), CaState::Recovery);
    let out = s.ack(ms(300), ack(6000));
    assert!(out.is_empty());
    assert_eq!(s.state(), CaState::Open);
    assert_eq!(s.stats().rto_count, 0);
    assert_eq!(s.stats().retx_segments, 3);
}

// ---- 5. Retransmission timeout (RFC 6298 §5, RFC 5681 §3.1) ---------------------------------

#[test]
fn rto_expiry_retransmits_snd_una_with_loss_window_and_eq4_ssthresh() {
    let mut s = Snd::new(cfg(Variant::NewReno, 10), None);
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 10));
    // (5.1): the timer was started by the first transmission, with the initial RTO (2.1).
    assert_eq!(s.next_timer(), Some(ms(1000)));
    assert!(s.timer(ms(999)).is_empty(), "not before the deadline");
    let out = s.timer(ms(1000));
    // (5.4): retransmit the earliest unacknowledged segment; nothing else fits in LW.
    assert_eq!(kinds(&out), vec![(0, TxKind::RtoRetransmit)]);
    assert_eq!(s.cwnd(), MSS, "RFC 5681 §3.1: cwnd = LW = 1 SMSS");
    assert_eq!(s.ssthresh(), 5000, "eq. 4 with FlightSize 10000");
    assert_eq!(s.state(), CaState::Loss);
    assert_eq!(s.stats().rto_count, 1);
    // (5.5)-(5.6): RTO doubled and the timer restarted with it.
    assert_eq!(s.rto(), SimDuration::from_secs(2));
    assert_eq!(s.next_timer(), Some(ms(3000)));
}

#[test]
fn repeated_rto_holds_ssthresh_and_doubles_rto_up_to_max() {
    let (cc, calls) = counting_reno();
    let c = TcpConfig {
        rto: RtoConfig {
            max: SimDuration::from_secs(8),
            ..RtoConfig::rfc6298()
        },
        ..cfg(Variant::NewReno, 10)
    };
    let mut s = Snd::with_cc(c, None, cc);
    s.send(ms(0));
    let mut deadlines = Vec::new();
    let mut rtos = Vec::new();
    let mut now = s.next_timer().unwrap();
    for _ in 0..5 {
        let out = s.timer(now);
        assert_eq!(kinds(&out), vec![(0, TxKind::RtoRetransmit)]);
        assert_eq!(s.cwnd(), MSS);
        assert_eq!(s.ssthresh(), 5000);
        rtos.push(s.rto().as_nanos() / 1_000_000_000);
        now = s.next_timer().unwrap();
        deadlines.push(now.as_nanos() / 1_000_000_000);
    }
    assert_eq!(
        rtos,
        vec![2, 4, 8, 8, 8],
        "(5.5) doubling, capped at rto.max (2.5)"
    );
    assert_eq!(deadlines, vec![3, 7, 15, 23, 31]);
    assert_eq!(s.stats().rto_count, 5);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "RFC 5681 §3.1: ssthresh held on the repeated timeouts"
    );
}

#[test]
fn repeated_rto_holds_ssthresh_when_the_first_rto_is_already_at_max() {
    // The RTO cannot double (it already equals rto.max), but the segment has still been
    // retransmitted by the timer: the second expiry must not recompute ssthresh.
    let (cc, calls) = counting_reno();
    let c = TcpConfig {
        rto: RtoConfig {
            max: SimDuration::from_secs(1),
            ..RtoConfig::rfc6298()
        },
        ..cfg(Variant::NewReno, 10)
    };
    let mut s = Snd::with_cc(c, None, cc);
    s.send(ms(0));
    for k in 1..=3 {
        let out = s.timer(ms(1000 * k));
        assert_eq!(kinds(&out), vec![(0, TxKind::RtoRetransmit)]);
        assert_eq!(s.rto(), SimDuration::from_secs(1));
        assert_eq!(s.next_timer(), Some(ms(1000 * (k + 1))));
    }
    assert_eq!(s.ssthresh(), 5000);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn go_back_n_after_rto_resends_from_snd_una_in_slow_start() {
    let mut s = Snd::new(cfg(Variant::NewReno, 10), None);
    s.send(ms(0));
    s.timer(ms(1000));
    assert_eq!(s.ssthresh(), 5000);
    // Each ACK of the go-back-N round grows cwnd by one SMSS (slow start, cwnd < ssthresh) and
    // releases segments from snd_una upward as retransmissions.
    let out = s.ack(ms(1100), ack(1000));
    assert_eq!(s.cwnd(), 2000);
    assert_eq!(
        kinds(&out),
        vec![(1000, TxKind::Retransmit), (2000, TxKind::Retransmit)]
    );
    let out = s.ack(ms(1200), ack(2000));
    assert_eq!(s.cwnd(), 3000);
    assert_eq!(
        kinds(&out),
        vec![(3000, TxKind::Retransmit), (4000, TxKind::Retransmit)]
    );
    let out = s.ack(ms(1201), ack(3000));
    assert_eq!(s.cwnd(), 4000);
    assert_eq!(
        kinds(&out),
        vec![(5000, TxKind::Retransmit), (6000, TxKind::Retransmit)]
    );
    assert_eq!(s.state(), CaState::Loss);
    assert_eq!(s.snd_max(), 10_000, "nothing new yet");
    // A cumulative ACK of everything sent before the timeout ends the loss state; the window
    // then continues past snd_max with new data.
    let out = s.ack(ms(1300), ack(10_000));
    assert_eq!(s.state(), CaState::Open);
    assert_eq!(s.cwnd(), 5000);
    assert_eq!(kinds(&out), new_segments(10_000, 5));
    assert_eq!(s.stats().rto_count, 1);
}

#[test]
fn rtt_sample_after_backoff_collapses_rto_to_srtt_plus_4_rttvar() {
    let mut s = Snd::new(cfg(Variant::NewReno, 2), None);
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 2));
    s.timer(ms(1000));
    s.timer(ms(3000));
    assert_eq!(s.rto(), SimDuration::from_secs(4));
    // The ACK covers the retransmitted segment 0: no sample (Karn), the backoff stays. It ends
    // the loss state and slow start releases two new segments.
    assert_eq!(kinds(&s.ack(ms(3200), ack(2000))), new_segments(2000, 2));
    assert_eq!(s.last_rtt_sample(), None);
    assert_eq!(s.rto(), SimDuration::from_secs(4));
    assert_eq!(s.rtt().srtt(), None);
    // Segment 2 was sent at 3.2 s and never retransmitted; its ACK 500 ms later is a sample.
    s.ack(ms(3700), ack(3000));
    assert_eq!(s.last_rtt_sample(), Some(dur(500)));
    // RFC 6298 (2.2): SRTT = R, RTTVAR = R/2, RTO = SRTT + max(G, 4·RTTVAR) = 1500 ms (≥ min).
    assert_eq!(s.rtt().srtt(), Some(dur(500)));
    assert_eq!(s.rtt().rttvar(), dur(250));
    assert_eq!(
        s.rto(),
        dur(1500),
        "the backed-off RTO collapses (RFC 6298 §5)"
    );
    assert_eq!(s.rtt().backoff_count(), 0);
    assert_eq!(
        s.next_timer(),
        Some(ms(3700 + 1500)),
        "(5.3) restarted with it"
    );
}

#[test]
fn rtt_sample_below_min_is_clamped_to_rto_min() {
    let mut s = Snd::new(cfg(Variant::NewReno, 1), None);
    s.send(ms(0));
    s.ack(ms(100), ack(1000));
    // SRTT 100 ms, RTTVAR 50 ms: 100 + 200 = 300 ms, raised to the 1 s minimum (2.4).
    assert_eq!(s.last_rtt_sample(), Some(dur(100)));
    assert_eq!(s.rto(), SimDuration::from_secs(1));
}

// ---- 6. Receiver: delayed ACK (RFC 5681 §4.2, RFC 1122 §4.2.3.2) -----------------------------

fn receiver_cfg() -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        rwnd: RWND,
        timestamps: false,
        sack: true,
        dsack: true,
        delayed_ack: true,
        delack_timeout: dur(40),
        delack_segments: 2,
        ..TcpConfig::default()
    }
}

fn blocks(a: &Segment) -> Vec<(u64, u64)> {
    a.sack.as_slice().to_vec()
}

#[test]
fn delayed_ack_acks_every_second_full_segment() {
    let mut r = TcpReceiver::new(receiver_cfg());
    r.on_segment(ms(0), &data(0));
    assert_eq!(r.poll_transmit(ms(0)), None, "the first segment waits");
    r.on_segment(ms(10), &data(1000));
    let a = r
        .poll_transmit(ms(10))
        .expect("second full-sized segment is ACKed at once");
    assert_eq!(a.ack, 2000);
    assert!(a.sack.is_empty());
    assert_eq!(
        r.next_timer(),
        None,
        "the ACK cancels the delayed-ACK timer"
    );
    assert_eq!(r.poll_transmit(ms(10)), None, "one ACK for the pair");
    r.on_segment(ms(20), &data(2000));
    r.on_segment(ms(30), &data(3000));
    assert_eq!(r.poll_transmit(ms(30)).map(|a| a.ack), Some(4000));
    assert_eq!(r.stats().acks_sent, 2);
}

#[test]
fn delayed_ack_timer_acks_a_lone_segment_after_40ms() {
    let mut r = TcpReceiver::new(receiver_cfg());
    r.on_segment(ms(100), &data(0));
    assert_eq!(r.next_timer(), Some(ms(140)), "arrival + 40 ms");
    r.on_timer(ms(139));
    assert_eq!(r.poll_transmit(ms(139)), None, "not before the timer");
    r.on_timer(ms(140));
    let a = r.poll_transmit(ms(140)).expect("ACK when the timer fires");
    assert_eq!(a.ack, 1000);
    assert_eq!(r.next_timer(), None);
    assert_eq!(r.poll_transmit(ms(140)), None);
}

#[test]
fn out_of_order_segment_is_acked_at_once_with_sack_and_gap_fill_too() {
    let mut r = TcpReceiver::new(receiver_cfg());
    r.on_segment(ms(0), &data(0));
    r.on_segment(ms(1), &data(1000));
    assert_eq!(r.poll_transmit(ms(1)).map(|a| a.ack), Some(2000));
    // Segment 2000 is lost; 3000 arrives out of order: immediate duplicate ACK, SACK block for
    // it (RFC 2018 §4: the first block holds the segment that triggered the ACK).
    r.on_segment(ms(2), &data(3000));
    let a = r
        .poll_transmit(ms(2))
        .expect("out-of-order data is ACKed at once");
    assert_eq!(a.ack, 2000);
    assert_eq!(blocks(&a), vec![(3000, 4000)]);
    r.on_segment(ms(3), &data(5000));
    let a = r.poll_transmit(ms(3)).unwrap();
    assert_eq!(a.ack, 2000);
    assert_eq!(blocks(&a), vec![(5000, 6000), (3000, 4000)]);
    // The retransmission of 2000 fills the first gap: immediate ACK, with the remaining block.
    r.on_segment(ms(100), &data(2000));
    let a = r
        .poll_transmit(ms(100))
        .expect("a gap fill is ACKed at once");
    assert_eq!(a.ack, 4000);
    assert_eq!(blocks(&a), vec![(5000, 6000)]);
    // 4000 fills the last gap: immediate ACK, no blocks left.
    r.on_segment(ms(101), &data(4000));
    let a = r
        .poll_transmit(ms(101))
        .expect("a gap fill is ACKed at once");
    assert_eq!(a.ack, 6000);
    assert!(a.sack.is_empty());
    assert_eq!(r.next_timer(), None);
}

// ---- 7. DSACK (RFC 2883 §4) --------------------------------------------------------------------

#[test]
fn duplicate_below_rcv_nxt_is_reported_as_first_sack_block() {
    // RFC 2883 §4.1.1, example 1: both segments arrive, the ACKs are lost, 0 is retransmitted.
    let mut r = TcpReceiver::new(receiver_cfg());
    r.on_segment(ms(0), &data(0));
    r.on_segment(ms(1), &data(1000));
    assert_eq!(r.poll_transmit(ms(1)).map(|a| a.ack), Some(2000));
    r.on_segment(ms(1000), &data(0));
    let a = r
        .poll_transmit(ms(1000))
        .expect("a duplicate is ACKed at once");
    assert_eq!(a.ack, 2000);
    assert_eq!(
        blocks(&a),
        vec![(0, 1000)],
        "D-SACK block = the duplicate segment"
    );
    assert_eq!(r.stats().duplicate_segments, 1);
    // Reported once only (§4: each duplicate is reported in at most one D-SACK block).
    r.on_segment(ms(1010), &data(2000));
    r.on_timer(ms(1050));
    let a = r.poll_transmit(ms(1050)).unwrap();
    assert_eq!(a.ack, 3000);
    assert!(a.sack.is_empty());
}

#[test]
fn duplicate_below_rcv_nxt_with_out_of_order_data_gives_dsack_then_sack() {
    // RFC 2883 §4.1.2, example 2: an out-of-order segment and a duplicate segment.
    let mut r = TcpReceiver::new(receiver_cfg());
    r.on_segment(ms(0), &data(0));
    r.on_segment(ms(1), &data(1000));
    r.poll_transmit(ms(1));
    r.on_segment(ms(3), &data(3000));
    assert_eq!(blocks(&r.poll_transmit(ms(3)).unwrap()), vec![(3000, 4000)]);
    r.on_segment(ms(1000), &data(0));
    let a = r.poll_transmit(ms(1000)).unwrap();
    assert_eq!(a.ack, 2000);
    assert_eq!(blocks(&a), vec![(0, 1000), (3000, 4000)]);
}

#[test]
fn duplicate_of_out_of_order_data_gives_dsack_then_containing_block() {
    // RFC 2883 §4.1.3, example 3: a duplicate of an out-of-order segment. The D-SACK block comes
    // first and the (larger) SACK block that contains it second (§4 rule 4).
    let mut r = TcpReceiver::new(receiver_cfg());
    r.on_segment(ms(0), &data(0));
    r.on_timer(ms(40));
    assert_eq!(r.poll_transmit(ms(40)).map(|a| a.ack), Some(1000));
    r.on_segment(ms(50), &data(2000));
    assert_eq!(
        blocks(&r.poll_transmit(ms(50)).unwrap()),
        vec![(2000, 3000)]
    );
    r.on_segment(ms(51), &data(3000));
    assert_eq!(
        blocks(&r.poll_transmit(ms(51)).unwrap()),
        vec![(2000, 4000)]
    );
    r.on_segment(ms(1000), &data(3000));
    let a = r
        .poll_transmit(ms(1000))
        .expect("a duplicate is ACKed at once");
    assert_eq!(a.ack, 1000);
    assert_eq!(blocks(&a), vec![(3000, 4000), (2000, 4000)]);
    assert_eq!(r.stats().duplicate_segments, 1);
}

#[test]
fn sender_counts_dsack_and_does_not_take_it_as_new_sack_information() {
    let mut s = Snd::new(cfg(Variant::Sack, 4), None);
    s.send(ms(0));
    // ACK 2000: slow start to 5000, segments 4..6 go out.
    assert_eq!(kinds(&s.ack(ms(100), ack(2000))), new_segments(4000, 3));
    // Segment 2 is lost; 3 and 4 arrive (SACK 3000-5000): one duplicate ACK.
    s.ack(ms(150), sack(2000, &[(3000, 5000)]));
    assert_eq!(s.dupacks(), 1);
    assert_eq!(s.stats().dupacks_rcvd, 1);
    let inflight = s.inflight();

    // A D-SACK below the cumulative ACK (RFC 2883 §4.1.2 shape).
    s.ack(ms(151), sack(2000, &[(0, 1000), (3000, 5000)]));
    assert_eq!(s.stats().dsacks_rcvd, 1);
    // A D-SACK inside the second block (§4.1.3 shape): a duplicate of segment 4.
    s.ack(ms(152), sack(2000, &[(4000, 5000), (3000, 5000)]));
    assert_eq!(s.stats().dsacks_rcvd, 2);

    // Neither carried new SACK information, so neither is a duplicate ACK (RFC 6675 §2) and
    // the scoreboard is unchanged.
    assert_eq!(s.dupacks(), 1);
    assert_eq!(s.stats().dupacks_rcvd, 1);
    assert_eq!(s.state(), CaState::Disorder);
    assert_eq!(s.inflight(), inflight);
}

#[test]
fn spurious_rto_retransmission_comes_back_as_dsack() {
    // A delay spike holds the ACKs of segments 0 and 1 past the RTO. The timeout retransmits 0,
    // the receiver reports the duplicate with a D-SACK block and the sender counts it.
    let c = TcpConfig {
        variant: Variant::Sack,
        initial_window: 2,
        delayed_ack: false,
        ..receiver_cfg()
    };
    let mut s = Snd::new(c.clone(), None);
    let mut r = TcpReceiver::new(c);
    let mut held = Vec::new();
    for t in s.send(ms(0)) {
        r.on_segment(ms(50), &t.seg);
        held.extend(r.poll_transmit(ms(50)));
    }
    assert_eq!(
        held.iter().map(|a| a.ack).collect::<Vec<_>>(),
        vec![1000, 2000]
    );
    let rtx = s.timer(ms(1000));
    assert_eq!(kinds(&rtx), vec![(0, TxKind::RtoRetransmit)]);
    r.on_segment(ms(1050), &rtx[0].seg);
    let dsack = r
        .poll_transmit(ms(1050))
        .expect("a duplicate is ACKed at once");
    assert_eq!((dsack.ack, blocks(&dsack)), (2000, vec![(0, 1000)]));
    for a in held {
        s.ack(ms(1060), a);
    }
    s.ack(ms(1100), dsack);
    assert_eq!(s.stats().dsacks_rcvd, 1);
    assert_eq!(s.stats().rto_count, 1);
}

// ---- 8. Timestamps (RFC 7323 §4) --------------------------------------------------------------

fn ts_receiver() -> TcpReceiver {
    TcpReceiver::new(TcpConfig {
        timestamps: true,
        ..receiver_cfg()
    })
}

fn ecr(a: &Segment) -> u32 {
    a.ts.expect("timestamps option on every ACK").ecr
}

#[test]
fn delayed_ack_echoes_the_earliest_unacknowledged_tsval() {
    // RFC 7323 §4.3 (case A): TS.Recent is only taken from a segment with
    // SEG.SEQ <= Last.ACK.sent, so the delayed ACK echoes the first segment's TSval.
    let mut r = ts_receiver();
    r.on_segment(ms(100), &ts(data(0), 100, 0));
    r.on_segment(ms(101), &ts(data(1000), 101, 0));
    let a = r.poll_transmit(ms(101)).unwrap();
    assert_eq!(a.ack, 2000);
    assert_eq!(ecr(&a), 100);
    assert_eq!(
        a.ts.unwrap().val,
        101,
        "TSval is the receiver's clock in ms ticks"
    );
}

#[test]
fn out_of_order_segment_does_not_update_ts_recent_but_the_hole_filler_does() {
    let mut r = ts_receiver();
    r.on_segment(ms(100), &ts(data(0), 100, 0));
    r.on_segment(ms(101), &ts(data(1000), 101, 0));
    assert_eq!(r.poll_transmit(ms(101)).map(|a| ecr(&a)), Some(100));
    // Segment 2000 (TSval 102) is lost; 3000 and 4000 arrive out of order.
    r.on_segment(ms(103), &ts(data(3000), 103, 0));
    let a = r.poll_transmit(ms(103)).unwrap();
    assert_eq!((a.ack, ecr(&a)), (2000, 100), "TS.Recent unchanged");
    r.on_segment(ms(104), &ts(data(4000), 104, 0));
    let a = r.poll_transmit(ms(104)).unwrap();
    assert_eq!((a.ack, ecr(&a)), (2000, 100));
    // The retransmission of 2000 (TSval 300) has SEG.SEQ = Last.ACK.sent: TS.Recent = 300.
    r.on_segment(ms(300), &ts(data(2000), 300, 0));
    let a = r.poll_transmit(ms(300)).unwrap();
    assert_eq!((a.ack, ecr(&a)), (5000, 300));
}

#[test]
fn rtt_sample_is_taken_from_tsecr_even_for_a_retransmission() {
    let c = TcpConfig {
        timestamps: true,
        ts_tick: dur(1),
        ..cfg(Variant::NewReno, 2)
    };
    let mut s = Snd::new(c, None);
    let out = s.send(ms(0));
    assert_eq!(out[0].seg.ts.map(|t| t.val), Some(0));
    // A duplicate ACK never gives a sample (RFC 7323 §4.1 RTTM rule: only ACKs that advance
    // SND.UNA).
    s.ack(ms(80), ts(ack(0), 80, 0));
    assert_eq!(s.last_rtt_sample(), None);
    // ACK 2000 at 120 ms echoing TSval 0: R = 120 ms.
    s.ack(ms(120), ts(ack(2000), 120, 0));
    assert_eq!(s.last_rtt_sample(), Some(dur(120)));
    assert_eq!(s.rtt().srtt(), Some(dur(120)));
    // 2000.. go out at 120 ms; the RTO (1 s minimum) retransmits 2000 with TSval 1120.
    let rtx = s.timer(ms(1120));
    assert_eq!(kinds(&rtx), vec![(2000, TxKind::RtoRetransmit)]);
    assert_eq!(rtx[0].seg.ts.map(|t| t.val), Some(1120));
    // The ACK of the retransmission echoes 1120: the sample is 80 ms, not 1080 ms. Timestamps
    // remove the retransmission ambiguity that Karn's rule guards against.
    s.ack(ms(1200), ts(ack(3000), 1200, 1120));
    assert_eq!(s.last_rtt_sample(), Some(dur(80)));
    assert_eq!(s.rtt().backoff_count(), 0);
}

// ---- 9. Karn's rule (RFC 6298 §3) -------------------------------------------------------------

#[test]
fn karn_no_rtt_sample_from_ack_of_retransmitted_timed_segment() {
    let mut s = Snd::new(cfg(Variant::NewReno, 10), None);
    s.send(ms(0)); // segment 0 is the timed one
    let out = s.dupack_train(ms(100), 0, 3);
    assert_eq!(kinds(&out), vec![(0, TxKind::FastRetransmit)]);
    // The retransmission of 0 is acknowledged together with everything else at 200 ms. The
    // timed segment was retransmitted: the ACK is ambiguous and gives no sample.
    let out = s.ack(ms(200), ack(10_000));
    assert_eq!(s.last_rtt_sample(), None);
    assert_eq!(s.stats().rtt_samples, 0);
    assert_eq!(s.rtt().srtt(), None);
    assert_eq!(s.rto(), SimDuration::from_secs(1), "still the initial RTO");
    // The next segment sent after the retransmission is timed afresh.
    assert!(!out.is_empty());
    let first_new = out[0].seg.seq;
    s.ack(ms(290), ack(first_new + MSS));
    assert_eq!(s.last_rtt_sample(), Some(dur(90)));
    assert_eq!(s.stats().rtt_samples, 1);
}
