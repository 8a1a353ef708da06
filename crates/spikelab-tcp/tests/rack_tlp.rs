//! Scripted packet tests for RACK-TLP (RFC 8985) and PRR (RFC 6937), STYLE.md tier 2: MSS
//! 1000 bytes (segment `i` starts at byte `1000·i`), no timestamps (the first segment of a
//! flight is timed), no delayed ACK, RFC 6298 RTO (minimum 1 s).

use spikelab_core::{SimDuration, SimTime};
use spikelab_tcp::{
    CaState, EarlyTimer, RtoConfig, Segment, TcpConfig, TxKind, Variant, TLP_TIMEOUT_MIN,
    WC_DEL_ACK_T,
};

mod common;
use common::*;

/// SACK recovery with the given RACK/TLP/PRR switches.
fn cfg(initial_window: u32, rack: bool, tlp: bool, prr: bool) -> TcpConfig {
    TcpConfig {
        variant: Variant::Sack,
        mss: MSS as u32,
        initial_window,
        rwnd: RWND,
        timestamps: false,
        sack: true,
        dsack: true,
        delayed_ack: false,
        rack,
        tlp,
        prr,
        ..TcpConfig::default()
    }
}

fn with_window(seg: Segment, window: u64) -> Segment {
    Segment { window, ..seg }
}

fn ns(t: SimTime, minus: u64) -> SimTime {
    SimTime(t.as_nanos() - minus)
}

// ---- TLP: the probe timeout (RFC 8985 §7.2) --------------------------------------------------

#[test]
fn pto_with_one_segment_in_flight_is_two_srtt_plus_the_delayed_ack_allowance() {
    // One segment at 0; its ACK at 100 ms gives SRTT = 100 ms (RTO = 1 s, the RFC 6298
    // minimum); the next segment leaves at 100 ms, alone in flight.
    let mut s = Snd::new(cfg(1, false, true, false), Some(2 * MSS));
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 1));
    assert_eq!(kinds(&s.ack(ms(100), ack(MSS))), new_segments(MSS, 1));
    assert_eq!(s.rtt().srtt(), Some(dur(100)));
    assert_eq!(WC_DEL_ACK_T, dur(200));
    assert_eq!(s.pto(), dur(200) + WC_DEL_ACK_T);
    assert_eq!(s.early_timer(), Some(EarlyTimer::LossProbe(ms(500))));
    assert_eq!(s.rto_deadline(), Some(ms(1100)));
    assert_eq!(s.next_timer(), Some(ms(500)));
}

#[test]
fn pto_is_capped_so_the_probe_fires_no_later_than_the_rto() {
    // RTO minimum 300 ms: after the first sample (100 ms) RTO = 100 + 4·50 = 300 ms, below
    // the 400 ms PTO; the probe takes the RTO's place and the RTO restarts after it.
    let mut c = cfg(1, false, true, false);
    c.rto = RtoConfig {
        min: dur(300),
        ..RtoConfig::rfc6298()
    };
    let mut s = Snd::new(c, Some(2 * MSS));
    s.send(ms(0));
    s.ack(ms(100), ack(MSS));
    assert_eq!(s.rto(), dur(300));
    assert_eq!(s.early_timer(), Some(EarlyTimer::LossProbe(ms(400))));
    assert_eq!(s.rto_deadline(), Some(ms(400)));
    assert_eq!(kinds(&s.timer(ms(400))), vec![(MSS, TxKind::Tlp)]);
    assert_eq!(s.stats().rto_count, 0);
    assert_eq!(s.stats().tlp_count, 1);
    assert_eq!(s.rto_deadline(), Some(ms(700)));
}

#[test]
fn pto_with_several_segments_in_flight_is_two_srtt_plus_the_timer_slack() {
    let mut s = Snd::new(cfg(10, false, true, false), None);
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 10));
    // Before any RTT sample: 1 s (Linux TCP_TIMEOUT_INIT), capped by the running RTO (1 s).
    assert_eq!(s.early_timer(), Some(EarlyTimer::LossProbe(ms(1000))));
    // The ACK of segment 0 gives SRTT = 100 ms; slow start sends two more segments.
    assert_eq!(kinds(&s.ack(ms(100), ack(MSS))), new_segments(10 * MSS, 2));
    assert_eq!(TLP_TIMEOUT_MIN, dur(2));
    assert_eq!(s.pto(), dur(202));
    assert_eq!(s.early_timer(), Some(EarlyTimer::LossProbe(ms(302))));
}

#[test]
fn no_loss_probe_without_tlp_or_in_recovery() {
    let mut s = Snd::new(cfg(10, false, false, false), None);
    s.send(ms(0));
    assert_eq!(s.early_timer(), None);
    assert_eq!(s.next_timer(), s.rto_deadline());

    let mut s = Snd::new(cfg(10, true, true, false), None);
    s.send(ms(0));
    s.ack(ms(100), ack(MSS));
    // Segment 1 lost; SACKs of 2, 3, 4: RACK (reordering window 0 once dupthresh segments
    // are SACKed) marks it lost and recovery starts; the probe timer is cancelled.
    for i in 2..5 {
        s.ack(ms(100 + i), sack(MSS, &[(2 * MSS, (i + 1) * MSS)]));
    }
    assert_eq!(s.state(), CaState::Recovery);
    assert!(!matches!(s.early_timer(), Some(EarlyTimer::LossProbe(_))));
}

// ---- TLP: the probe and its loss detection (RFC 8985 §7.3-7.4) -------------------------------

#[test]
fn a_tail_loss_is_repaired_by_the_probe_before_the_rto() {
    // Ten segments, the last one lost: the ACK of 0..8 at 100 ms leaves one segment in flight,
    // PTO = 2·100 + 200 ms; there is no new data, so the probe retransmits segment 9.
    let mut s = Snd::new(cfg(10, true, true, false), Some(10 * MSS));
    s.send(ms(0));
    assert!(s.ack(ms(100), ack(9 * MSS)).is_empty());
    assert_eq!(s.next_timer(), Some(ms(500)));
    assert_eq!(s.rto_deadline(), Some(ms(1100)));
    assert_eq!(kinds(&s.timer(ms(500))), vec![(9 * MSS, TxKind::Tlp)]);
    assert_eq!(s.tlp_high_seq(), Some(10 * MSS));
    // The RTO restarts after the probe.
    assert_eq!(s.rto_deadline(), Some(ms(1500)));
    assert!(s.ack(ms(600), ack(10 * MSS)).is_empty());
    assert!(s.is_done());
    assert_eq!(s.next_timer(), None);
    assert_eq!(s.stats().tlp_count, 1);
    assert_eq!(s.stats().rto_count, 0);
    assert_eq!(s.stats().fast_retx_count, 0);
}

#[test]
fn a_probe_sends_new_data_when_the_window_allows() {
    // A full cwnd and no ACK: before any RTT sample PTO = 1 s, the same instant as the RTO;
    // the probe goes first, as new data beyond cwnd, and the RTO restarts.
    let mut s = Snd::new(cfg(10, true, true, false), Some(20 * MSS));
    s.send(ms(0));
    assert_eq!(s.early_timer(), Some(EarlyTimer::LossProbe(ms(1000))));
    assert_eq!(s.rto_deadline(), Some(ms(1000)));
    assert_eq!(kinds(&s.timer(ms(1000))), vec![(10 * MSS, TxKind::Tlp)]);
    assert_eq!(s.tlp_high_seq(), Some(11 * MSS));
    assert_eq!(s.stats().rto_count, 0);
    assert_eq!(s.rto_deadline(), Some(ms(2000)));
    // At most one probe per episode: the next PTO expiry sends nothing.
    s.s.on_timer(ms(1500));
    assert_eq!(s.stats().tlp_count, 1);
}

#[test]
fn an_ack_beyond_a_retransmitted_probe_means_it_repaired_a_loss_and_reduces_cwnd() {
    // Linux tcp_process_tlp_ack: ACK after TLP.end_seq, no DSACK for the probe.
    let mut s = Snd::new(cfg(10, true, true, false), None);
    s.send(ms(0));
    assert!(s.ack(ms(100), with_window(ack(9 * MSS), MSS)).is_empty());
    assert_eq!(kinds(&s.timer(ms(500))), vec![(9 * MSS, TxKind::Tlp)]);
    // The probe is ACKed (ACK = TLP.end_seq: no verdict yet), new data follows.
    let out = s.ack(ms(600), with_window(ack(10 * MSS), 100 * MSS));
    assert!(!out.is_empty());
    assert_eq!(s.stats().tlp_recoveries, 0);
    let cwnd = s.cwnd();
    s.ack(ms(700), ack(11 * MSS));
    assert_eq!(s.stats().tlp_recoveries, 1);
    assert_eq!(s.tlp_high_seq(), None);
    // Reno: ssthresh = cwnd / 2, cwnd = ssthresh (then congestion avoidance: + MSS²/cwnd).
    assert_eq!(s.ssthresh(), cwnd / 2);
    assert!(s.cwnd() >= s.ssthresh() && s.cwnd() < s.ssthresh() + MSS);
}

#[test]
fn a_dsack_for_the_probe_means_no_loss() {
    let mut s = Snd::new(cfg(10, true, true, false), None);
    s.send(ms(0));
    s.ack(ms(100), with_window(ack(9 * MSS), MSS));
    let cwnd = s.cwnd();
    s.timer(ms(500));
    // The original segment 9 arrived late; the probe's copy is reported as a duplicate.
    s.ack(ms(520), with_window(ack(10 * MSS), 100 * MSS));
    s.ack(ms(600), sack(10 * MSS, &[(9 * MSS, 10 * MSS)]));
    assert_eq!(s.tlp_high_seq(), None);
    s.ack(ms(700), ack(11 * MSS));
    assert_eq!(s.stats().tlp_recoveries, 0);
    assert!(s.cwnd() >= cwnd);
}

#[test]
fn two_tail_losses_a_probe_then_rack_recovery_and_no_rto() {
    let mut s = Snd::new(cfg(10, true, true, false), Some(10 * MSS));
    s.send(ms(0));
    s.ack(ms(100), ack(8 * MSS));
    assert_eq!(kinds(&s.timer(ms(502))), vec![(9 * MSS, TxKind::Tlp)]);
    // The probe is SACKed: segment 8, sent before it, is overdue and RACK marks it lost.
    let out = s.ack(ms(602), sack(8 * MSS, &[(9 * MSS, 10 * MSS)]));
    assert_eq!(kinds(&out), vec![(8 * MSS, TxKind::FastRetransmit)]);
    assert_eq!(s.stats().rack_loss_count, 1);
    assert!(s.ack(ms(702), ack(10 * MSS)).is_empty());
    assert!(s.is_done());
    assert_eq!(s.stats().rto_count, 0);
}

// ---- RACK (RFC 8985 §6) -----------------------------------------------------------------------

/// Segment 0 at 0 ms (ACKed at 100 ms: min_RTT = SRTT = 100 ms); segment 1 at 100 ms (lost),
/// segment 2 at 110 ms, SACKed at 210 ms: RACK.rtt = 100 ms, reordering window min_RTT/4 =
/// 25 ms, so segment 1 is lost at 100 + 100 + 25 = 225 ms.
fn one_segment_overtaken() -> Snd {
    one_segment_overtaken_at(0)
}

/// The same with the sender's timers on the kernel's clock at `timer_hz` (0: exact).
fn one_segment_overtaken_at(timer_hz: u32) -> Snd {
    let mut c = cfg(10, true, false, false);
    c.rwnd = MSS;
    c.timer_hz = timer_hz;
    let mut s = Snd::new(c, None);
    assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 1));
    assert_eq!(
        kinds(&s.ack(ms(100), with_window(ack(MSS), MSS))),
        new_segments(MSS, 1)
    );
    assert_eq!(
        kinds(&s.ack(ms(110), with_window(ack(MSS), 2 * MSS))),
        new_segments(2 * MSS, 1)
    );
    assert!(s
        .ack(
            ms(210),
            with_window(sack(MSS, &[(2 * MSS, 3 * MSS)]), 2 * MSS)
        )
        .is_empty());
    s
}

#[test]
fn rack_marks_a_segment_lost_after_min_rtt_over_four_and_not_before() {
    let mut s = one_segment_overtaken();
    let rack = s.rack().unwrap();
    assert_eq!(rack.min_rtt, Some(dur(100)));
    assert_eq!(rack.rtt, dur(100));
    assert_eq!(s.rack_reo_wnd(), dur(25));
    assert!(!s.is_marked_lost(MSS));
    assert_eq!(s.early_timer(), Some(EarlyTimer::Reorder(ms(225))));
    assert_eq!(s.next_timer(), Some(ms(225)));

    assert!(s.timer(ns(ms(225), 1)).is_empty());
    assert!(!s.is_marked_lost(MSS));
    assert_eq!(s.stats().rack_loss_count, 0);

    let out = s.timer(ms(225));
    assert!(s.is_marked_lost(MSS));
    assert_eq!(s.stats().rack_loss_count, 1);
    assert_eq!(s.state(), CaState::Recovery);
    assert_eq!(kinds(&out), vec![(MSS, TxKind::FastRetransmit)]);
}

#[test]
fn on_the_kernels_clock_the_reordering_timer_adds_2_ms_and_waits_for_its_jiffy() {
    // HZ 250 (4 ms jiffies). At 210 ms (jiffy 52) RACK waits 15 ms more; Linux arms
    // usecs_to_jiffies(15 + 2 ms) = 5 jiffies: expiry jiffy 57, fired on the tick that ends
    // it, jiffy 58 = 232 ms (exact timers: 225 ms).
    let mut s = one_segment_overtaken_at(250);
    assert_eq!(s.early_timer(), Some(EarlyTimer::Reorder(ms(232))));
    assert!(s.timer(ns(ms(232), 1)).is_empty());
    assert!(!s.is_marked_lost(MSS));
    assert_eq!(
        kinds(&s.timer(ms(232))),
        vec![(MSS, TxKind::FastRetransmit)]
    );
    assert!(s.is_marked_lost(MSS));
}

#[test]
fn on_the_kernels_clock_the_rto_waits_for_an_8_jiffy_bucket() {
    // The initial RTO of 1 s is 250 jiffies at HZ 250: timer-wheel level 1 (63 to 503
    // jiffies, 8-jiffy buckets), so it fires at jiffy (250 / 8 + 1) · 8 = 256, 1.024 s. At
    // HZ 1000 it is 1000 jiffies, level 2 (64-jiffy buckets): 1.024 s again; exact timers: 1 s.
    for (hz, at) in [(250, ms(1024)), (1000, ms(1024)), (0, ms(1000))] {
        let mut c = cfg(1, false, false, false);
        c.timer_hz = hz;
        let mut s = Snd::new(c, None);
        s.send(ms(0));
        assert_eq!(s.rto_deadline(), Some(at), "HZ {hz}");
    }
}

#[test]
fn rack_marks_on_an_ack_at_the_deadline_and_not_a_nanosecond_before() {
    // A SACK of nothing new does not advance RACK: no detection until the timer.
    for (t, lost) in [(ns(ms(225), 1), false), (ms(225), true)] {
        let mut s = one_segment_overtaken();
        s.timer(t);
        assert_eq!(s.is_marked_lost(MSS), lost, "{t}");
    }
}

#[test]
fn without_reordering_seen_dupthresh_sacks_make_the_window_zero() {
    // RFC 8985 §6.2 step 4: reo_wnd = 0 while no reordering was seen and at least dupthresh
    // segments are SACKed, so segment 0 is lost on the third SACK, as RFC 6675 would say.
    let mut s = Snd::new(cfg(10, true, false, false), None);
    s.send(ms(0));
    s.ack(ms(100), sack(0, &[(MSS, 2 * MSS)]));
    s.ack(ms(101), sack(0, &[(MSS, 3 * MSS)]));
    assert!(!s.is_marked_lost(0));
    assert_eq!(s.state(), CaState::Disorder);
    let out = s.ack(ms(102), sack(0, &[(MSS, 4 * MSS)]));
    assert_eq!(s.rack_reo_wnd(), SimDuration::ZERO);
    assert_eq!(kinds(&out), vec![(0, TxKind::FastRetransmit)]);
    assert_eq!(s.state(), CaState::Recovery);
}

#[test]
fn a_late_original_sets_reordering_seen_and_a_dsack_widens_the_window() {
    let mut s = one_segment_overtaken();
    // Segment 1 arrives after all (before its deadline): reordering.
    s.ack(ms(220), with_window(ack(3 * MSS), 4 * MSS));
    assert!(s.rack().unwrap().reordering_seen);
    assert_eq!(s.rack().unwrap().reo_wnd_mult, 1);
    // A DSACK raises the multiplier once per round: 2·min_RTT/4 = 50 ms.
    s.ack(ms(230), sack(3 * MSS, &[(MSS, 2 * MSS)]));
    assert_eq!(s.rack().unwrap().reo_wnd_mult, 2);
    s.ack(ms(231), sack(3 * MSS, &[(MSS, 2 * MSS)]));
    assert_eq!(s.rack().unwrap().reo_wnd_mult, 2);
    assert_eq!(s.rack_reo_wnd(), dur(50));
    assert_eq!(s.rack().unwrap().reo_wnd_persist, 16);
}

// ---- PRR (RFC 6937) ---------------------------------------------------------------------------

/// RFC 6937 §3's example: 20 segments in flight, the first lost, limited transmit on the first
/// two duplicate ACKs, ssthresh = 10: PRR sends one segment for every two delivered, the fast
/// retransmit on the third duplicate ACK, while pipe falls from 19 to ssthresh. On the 19th
/// ACK pipe (RFC 6675 `SetPipe()`, or Linux's count with RACK) already equals ssthresh, so the
/// slow-start reduction bound sends nothing (`min(ssthresh − pipe, ..) = 0`, Linux
/// `tcp_cwnd_reduction`), where the RFC's figure shows one more N.
#[test]
fn prr_sends_one_segment_per_two_delivered_when_ssthresh_is_half_of_cwnd() {
    for rack in [false, true] {
        let mut c = cfg(20, rack, false, true);
        c.limited_transmit = true;
        let mut s = Snd::new(c, None);
        assert_eq!(kinds(&s.send(ms(0))), new_segments(0, 20));
        let mut sent = Vec::new();
        for k in 1..20u64 {
            let out = s.ack(ms(100 + k), sack(0, &[(MSS, (k + 1) * MSS)]));
            sent.push(out.len());
            if k == 3 {
                assert_eq!(
                    kinds(&out),
                    vec![(0, TxKind::FastRetransmit)],
                    "rack {rack}"
                );
                assert_eq!(s.ssthresh(), 10 * MSS);
            }
        }
        // ACKs 1-2: limited transmit; 3: R; then N on ACKs 5, 7, ..., 17.
        let want: Vec<usize> = (1..20)
            .map(|k| (k < 3 || (k % 2 == 1 && k < 19)) as usize)
            .collect();
        assert_eq!(sent, want, "rack {rack}");
        assert_eq!(s.prr().prr_delivered, 17, "rack {rack}");
        assert_eq!(s.prr().prr_out, 8, "rack {rack}");
        // The ACK of everything ends recovery with cwnd = ssthresh.
        assert_eq!(s.inflight(), 10 * MSS, "rack {rack}");
        s.ack(ms(300), ack(s.snd_max()));
        assert_eq!(s.state(), CaState::Open);
        assert_eq!(s.cwnd(), 10 * MSS, "rack {rack}");
    }
}

#[test]
fn without_prr_sack_recovery_sets_cwnd_to_ssthresh_at_entry() {
    let mut s = Snd::new(cfg(20, false, false, false), None);
    s.send(ms(0));
    for k in 1..4u64 {
        s.ack(ms(100 + k), sack(0, &[(MSS, (k + 1) * MSS)]));
    }
    assert_eq!(s.state(), CaState::Recovery);
    assert_eq!(s.cwnd(), 10 * MSS);
}

// ---- The retransmission timer when fast retransmit resends the head ----------------------------

/// Ten segments at 0, the first ACKed at 100 ms (SRTT 100 ms), then SACKs of segments 2, 3, 4
/// at 300-302 ms: the third starts fast retransmit of segment 1, the head. Returns the sender
/// and the RTO deadline before the SACKs.
fn head_retransmitted(rearm: bool) -> (Snd, SimTime) {
    let mut c = cfg(10, false, false, false);
    c.rearm_rto_on_retransmit = rearm;
    let mut s = Snd::new(c, Some(11 * MSS));
    s.send(ms(0));
    s.ack(ms(100), ack(MSS));
    let before = s.rto_deadline().unwrap();
    let mut out = Vec::new();
    for (i, hi) in [3, 4, 5].into_iter().enumerate() {
        out.extend(s.ack(ms(300 + i as u64), sack(MSS, &[(2 * MSS, hi * MSS)])));
    }
    assert_eq!(kinds(&out), vec![(MSS, TxKind::FastRetransmit)]);
    (s, before)
}

#[test]
fn with_rearm_the_timer_restarts_when_fast_retransmit_resends_the_head_without_it_not() {
    // Linux tcp_xmit_retransmit_queue restarts the timer when it resends the first
    // unacknowledged segment; RFC 6298 (5.1) starts it only when it is not running.
    let (s, before) = head_retransmitted(false);
    assert_eq!(s.rto_deadline(), Some(before));
    let (s, before) = head_retransmitted(true);
    assert_eq!(s.rto_deadline(), Some(ms(302) + s.rto()));
    assert!(s.rto_deadline() > Some(before));
}

#[test]
fn the_late_original_of_a_timed_out_head_gives_rack_no_sample_the_retransmission_would() {
    // Four segments at 10 ms (TSval 10), the first ACKed at 110 ms; the RTO (1 s minimum)
    // resends segment 1 at 1110 ms. The ACK of segment 1 at 1250 ms echoes TSval 10: the
    // original arrived, the retransmission was spurious (Linux `tcp_skb_spurious_retrans`), so
    // RACK takes no sample from it. Dated at the retransmission (1110 ms), it would mark every
    // segment sent before 1110 ms − reo_wnd lost.
    for (ecr, sampled) in [(10, false), (1110, true)] {
        let mut c = cfg(4, true, false, false);
        c.timestamps = true;
        let mut s = Snd::new(c, Some(20 * MSS));
        assert_eq!(kinds(&s.send(ms(10))), new_segments(0, 4));
        s.ack(ms(110), echo(ack(MSS), 10));
        let deadline = s.rto_deadline().unwrap();
        let out = s.timer(deadline);
        assert_eq!(kinds(&out)[0], (MSS, TxKind::RtoRetransmit));
        let before = s.rack().unwrap().xmit_ts;
        s.ack(ms(1250), echo(ack(2 * MSS), ecr));
        let after = s.rack().unwrap().xmit_ts;
        if sampled {
            assert_eq!(
                after,
                Some(deadline),
                "the retransmission, echoed, is RACK's newest"
            );
        } else {
            assert_eq!(
                after, before,
                "no sample from a spuriously retransmitted segment"
            );
        }
    }
}

#[test]
fn a_sack_of_data_sent_before_the_head_retransmission_restarts_the_timer() {
    // Linux tcp_clean_rtx_queue: an ACK that only SACKs restarts the timer when its RTT sample
    // comes from data sent before the head was last (re)transmitted. After the fast retransmit
    // at 302 ms, a SACK at 340 ms of segment 5 (sent at 0 ms) moves the deadline to 340 ms +
    // RTO; without the rule it stays one RTO after the retransmission.
    let run = |rule: bool| {
        let mut c = cfg(10, false, false, false);
        c.rearm_rto_on_retransmit = true;
        c.rearm_rto_on_sack = rule;
        let mut s = Snd::new(c, Some(11 * MSS));
        s.send(ms(0));
        s.ack(ms(100), ack(MSS));
        for (i, hi) in [3, 4, 5].into_iter().enumerate() {
            s.ack(ms(300 + i as u64), sack(MSS, &[(2 * MSS, hi * MSS)]));
        }
        let after_fr = s.rto_deadline().unwrap();
        assert_eq!(after_fr, ms(302) + s.rto());
        s.ack(ms(340), sack(MSS, &[(2 * MSS, 6 * MSS)]));
        let after_sack = s.rto_deadline().unwrap();
        // A duplicate ACK that SACKs nothing new never restarts it.
        s.ack(ms(345), sack(MSS, &[(2 * MSS, 6 * MSS)]));
        assert_eq!(s.rto_deadline().unwrap(), after_sack);
        (after_fr, after_sack, s.rto())
    };
    let (after_fr, after_sack, rto) = run(true);
    assert_eq!(after_sack, ms(340) + rto);
    assert!(after_sack > after_fr);
    let (after_fr, after_sack, _) = run(false);
    assert_eq!(after_sack, after_fr);
}

#[test]
fn after_new_data_the_probe_waits_no_longer_than_one_rto_from_the_heads_transmission() {
    // Linux tcp_schedule_loss_probe from tcp_write_xmit caps the PTO by tcp_rto_delta_us: the
    // RTO the first unacknowledged segment would have, counted from when it was last sent.
    // Ten segments at 0 ms; ACKs of segments 0 and 1 at 100 and 150 ms send new data. At
    // 150 ms the head (segment 2) was sent 150 ms ago: the probe is due one RTO after 0 ms,
    // well before 150 ms + 2·SRTT + 2 ms.
    let mut c = cfg(10, false, true, false);
    c.rto = RtoConfig {
        min: dur(200),
        ..RtoConfig::rfc6298()
    };
    let mut s = Snd::new(c, None);
    s.send(ms(0));
    s.ack(ms(100), ack(MSS));
    let out = s.ack(ms(150), ack(2 * MSS));
    assert!(out.iter().any(|t| t.kind == TxKind::New), "{out:?}");
    let cap = ms(0) + s.rto();
    assert!(cap < ms(150) + s.pto(), "the cap binds: {cap:?}");
    assert_eq!(s.early_timer(), Some(EarlyTimer::LossProbe(cap)));
}
