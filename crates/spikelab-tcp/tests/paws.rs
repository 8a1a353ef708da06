//! PAWS at the receiver (RFC 7323 §5.3 R1; Linux `tcp_validate_incoming`, `tcp_paws_discard`,
//! `tcp_send_dupack`).
//!
//! A data segment whose TSval lags TS.Recent by more than `paws_window` ticks is discarded and
//! answered at once with a duplicate ACK. TS.Recent only moves at the left edge (RFC 7323 §4.3),
//! so what triggers it is a retransmission that fills the left edge while older originals of
//! later data are still in flight: the case of a path that reorders (HARQ), where the kernel's
//! receiver counts them in `PAWSEstab`.

use spikelab_core::SimTime;
use spikelab_tcp::{Segment, TcpConfig, TcpReceiver, Timestamps};

mod common;
use common::MSS;

fn cfg(paws: bool, paws_window: u32) -> TcpConfig {
    TcpConfig {
        paws,
        paws_window,
        ..common::sack_receiver_cfg(MSS)
    }
}

/// Segment `k` sent with TSval `tsval` (ticks of the sender's clock).
fn seg(k: u64, tsval: u32) -> Segment {
    Segment {
        ts: Some(Timestamps { val: tsval, ecr: 1 }),
        ..common::data_seg(k, MSS)
    }
}

fn t(ms: u64) -> SimTime {
    SimTime::from_millis(ms)
}

/// The ACKs due now as (cumulative ACK in segments, first SACK block in segments).
fn acks(r: &mut TcpReceiver, now: SimTime) -> Vec<(u64, Option<(u64, u64)>)> {
    let mut out = Vec::new();
    while let Some(a) = r.poll_transmit(now) {
        let first = a.sack.as_slice().first().map(|&(s, e)| (s / MSS, e / MSS));
        out.push((a.ack / MSS, first));
    }
    out
}

/// Segments 0-5 leave at TSval 10-15; 0 and 4 are held back (HARQ retransmissions), 1-3 and 5
/// arrive, the fast retransmission of 0 (TSval 60) fills the left edge, and then the late
/// original of 4 (TSval 14) arrives.
fn reordered(r: &mut TcpReceiver) -> bool {
    for (k, at) in [(1, 100), (2, 101), (3, 102), (5, 103)] {
        assert!(r.on_segment(t(at), &seg(k, 10 + k as u32)));
        acks(r, t(at));
    }
    assert!(
        r.on_segment(t(160), &seg(0, 60)),
        "the retransmission is accepted"
    );
    assert_eq!(r.rcv_nxt(), 4 * MSS);
    acks(r, t(160));
    r.on_segment(t(170), &seg(4, 14))
}

#[test]
fn a_late_original_behind_a_retransmission_fails_paws_and_is_answered_at_once() {
    let mut r = TcpReceiver::new(cfg(true, 1));
    assert!(
        !reordered(&mut r),
        "TSval 14 against TS.Recent 60: discarded"
    );
    assert_eq!(
        r.rcv_nxt(),
        4 * MSS,
        "the discarded data did not reach the receiver"
    );
    assert_eq!(r.stats().paws_rejected, 1);
    // A duplicate ACK at once, still asking for segment 4; no DSACK (the segment is above
    // rcv_nxt), and segment 5 is still reported.
    assert_eq!(acks(&mut r, t(170)), vec![(4, Some((5, 6)))]);
    // The sender's retransmission of 4 (TSval 80) is accepted and closes the gap.
    assert!(r.on_segment(t(250), &seg(4, 80)));
    assert_eq!(r.rcv_nxt(), 6 * MSS);
}

#[test]
fn without_paws_the_late_original_is_accepted() {
    let mut r = TcpReceiver::new(cfg(false, 0));
    assert!(reordered(&mut r));
    assert_eq!(r.rcv_nxt(), 6 * MSS);
    assert_eq!(r.stats().paws_rejected, 0);
}

#[test]
fn a_late_duplicate_that_fails_paws_is_reported_as_a_dsack() {
    let mut r = TcpReceiver::new(cfg(true, 1));
    reordered(&mut r);
    acks(&mut r, t(170));
    // The original of 0 (TSval 10) finally arrives: below rcv_nxt and older than TS.Recent.
    assert!(!r.on_segment(t(180), &seg(0, 10)));
    assert_eq!(r.stats().paws_rejected, 2);
    assert_eq!(acks(&mut r, t(180)), vec![(4, Some((0, 1)))]);
}

#[test]
fn the_window_is_strict_in_the_rfc_and_one_tick_in_linux() {
    // After segment 0 with TSval 100, TS.Recent is 100; segment 2 is out of order (it does
    // not move TS.Recent) with a TSval `lag` ticks older.
    let lagging = |window: u32, lag: u32| {
        let mut r = TcpReceiver::new(cfg(true, window));
        assert!(r.on_segment(t(10), &seg(0, 100)));
        acks(&mut r, t(10));
        r.on_segment(t(11), &seg(2, 100 - lag))
    };
    assert!(lagging(0, 0), "RFC 7323: SEG.TSval = TS.Recent passes");
    assert!(!lagging(0, 1), "RFC 7323: SEG.TSval < TS.Recent fails");
    assert!(lagging(1, 1), "Linux TCP_PAWS_WINDOW: one tick passes");
    assert!(!lagging(1, 2), "Linux: two ticks fail");
}

#[test]
fn no_check_before_ts_recent_is_set_nor_without_timestamps() {
    // A TS.Recent of 0 counts as unset (Linux `tcp_paws_check`): after a segment with TSval 0,
    // one 5 ticks older (the clock wrapped) still passes.
    let mut r = TcpReceiver::new(cfg(true, 0));
    assert!(r.on_segment(t(1), &seg(0, 0)));
    acks(&mut r, t(1));
    assert!(r.on_segment(t(2), &seg(2, 0u32.wrapping_sub(5))));
    let mut r = TcpReceiver::new(cfg(true, 0));
    assert!(r.on_segment(t(1), &seg(0, 50)));
    acks(&mut r, t(1));
    let mut no_ts = seg(1, 0);
    no_ts.ts = None;
    assert!(
        r.on_segment(t(2), &no_ts),
        "a segment without timestamps is not checked"
    );
    assert_eq!(r.rcv_nxt(), 2 * MSS);
}
