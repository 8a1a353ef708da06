//! TCP Westwood+ (Mascolo, Casetti, Gerla et al., MobiCom 2001; Grieco and Mascolo, CCR 2004),
//! as the Linux module `net/ipv4/tcp_westwood.c` implements its bandwidth estimate,
//! re-implemented from its description.
//!
//! Growth is Reno's (the sender's slow start and congestion avoidance). Every ACK adds the
//! bytes it acknowledges to `bk` (a duplicate ACK counts one MSS, and a later cumulative ACK
//! covering bytes already counted that way counts only the rest: the module's
//! `westwood_acked_count`); once per RTT window (longer than both the last RTT sample and
//! 50 ms) the sample `bk/Δt` goes through two 7/8 low-pass filters: `bw_ns_est = (7·bw_ns_est
//! + sample)/8`, `bw_est = (7·bw_est + bw_ns_est)/8` (the first sample fills both). `RTT_min` is
//! the lowest RTT sample, re-seeded by the first sample after a timeout. After a loss event
//! `ssthresh = max(bw_est·RTT_min/MSS, 2)` segments, on a fast retransmit as on a timeout
//! (where cwnd goes to 1 segment, the sender's loss window); when a fast recovery completes
//! `cwnd = ssthresh = bw_est·RTT_min` (the module's `CA_EVENT_COMPLETE_CWR`).
//!
//! Differs from the module: the module keeps Reno's halving as ssthresh while a fast recovery
//! lasts and applies the estimate only when it completes; here the estimate is ssthresh from
//! the fast retransmit on (Westwood+ as published, "cwnd = ssthresh on fast retransmit"). The
//! estimate is kept in floating point bytes/s (the module: bytes per jiffy, integer). The
//! module's initial RTT (20 s, until the first sample) and its "no estimate yet → 2 segments"
//! are kept.
//!
//! Maturity: unit-tested (filters, window, duplicate-ACK accounting) and checked in a whole
//! run against a bottleneck of known rate (ssthresh within 1 % of rate·RTT_min); not yet
//! validated against the kernel.

use super::*;

/// The shortest bandwidth-sampling window (the module's `TCP_WESTWOOD_RTT_MIN`, HZ/20).
const RTT_WINDOW_MIN: SimDuration = SimDuration(50_000_000);
/// RTT assumed before the first sample (`TCP_WESTWOOD_INIT_RTT`, 20 s).
const INIT_RTT: SimDuration = SimDuration(20_000_000_000);

#[derive(Clone, Debug, PartialEq)]
struct State {
    /// First-stage estimate, bytes/s.
    bw_ns_est: f64,
    /// The bandwidth estimate BWE, bytes/s.
    bw_est: f64,
    /// Start of the current sampling window (`None`: before the first ACK).
    rtt_win_sx: Option<SimTime>,
    /// Bytes acknowledged in the current window.
    bk: u64,
    /// snd_una when last seen.
    snd_una: u64,
    /// Bytes counted for duplicate ACKs and not yet covered by a cumulative ACK.
    accounted: u64,
    /// Last RTT sample.
    rtt: SimDuration,
    /// RTT_min.
    rtt_min: SimDuration,
    first_ack: bool,
    reset_rtt_min: bool,
    /// Reno's byte counter (RFC 3465).
    bytes_acked: u64,
}

/// Westwood+: no parameters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WestwoodParams;

impl CcParams for WestwoodParams {
    const NAME: &'static str = "westwood";
    fn build(&self, counting: AckCounting) -> Box<dyn CongestionControl> {
        Box::new(Westwood::new(counting))
    }
}

pub struct Westwood {
    counting: AckCounting,
    st: State,
}

impl Westwood {
    pub fn new(counting: AckCounting) -> Westwood {
        Westwood {
            counting,
            st: State {
                bw_ns_est: 0.0,
                bw_est: 0.0,
                rtt_win_sx: None,
                bk: 0,
                snd_una: 0,
                accounted: 0,
                rtt: INIT_RTT,
                rtt_min: INIT_RTT,
                first_ack: true,
                reset_rtt_min: true,
                bytes_acked: 0,
            },
        }
    }

    /// BWE, bytes/s.
    pub fn bw_est(&self) -> f64 {
        self.st.bw_est
    }

    /// RTT_min.
    pub fn rtt_min(&self) -> SimDuration {
        self.st.rtt_min
    }

    /// `tcp_westwood_bw_rttmin`: BWE·RTT_min in whole segments, at least 2, as bytes.
    fn bw_rttmin(&self, mss: u64) -> u64 {
        let segs = (self.st.bw_est * self.st.rtt_min.as_secs_f64() / mss as f64).floor() as u64;
        segs.max(2) * mss
    }

    fn filter(&mut self, delta: SimDuration) {
        let s = &mut self.st;
        let sample = s.bk as f64 / delta.as_secs_f64();
        if s.bw_ns_est == 0.0 && s.bw_est == 0.0 {
            s.bw_ns_est = sample;
            s.bw_est = sample;
        } else {
            s.bw_ns_est = (7.0 * s.bw_ns_est + sample) / 8.0;
            s.bw_est = (7.0 * s.bw_est + s.bw_ns_est) / 8.0;
        }
    }
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        WestwoodParams::NAME
    }
    fn ssthresh(&mut self, w: &Window, _flight_size: u64) -> u64 {
        self.st.bytes_acked = 0;
        self.bw_rttmin(w.mss)
    }
    fn cong_avoid(&mut self, w: &mut Window, acked: u64) {
        if w.cwnd < w.ssthresh {
            slow_start(w, acked, self.counting);
        } else {
            cong_avoid_ai(w, acked, self.counting, &mut self.st.bytes_acked);
        }
    }
    fn pkts_acked(&mut self, w: &mut Window, a: &AckSample) {
        if let Some(r) = a.rtt {
            self.st.rtt = r;
        }
        // westwood_update_window
        let win = *self.st.rtt_win_sx.get_or_insert(a.now);
        if self.st.first_ack {
            self.st.snd_una = a.snd_una;
            self.st.first_ack = false;
        }
        let delta = a.now.since(win);
        if delta > self.st.rtt.max(RTT_WINDOW_MIN) {
            self.filter(delta);
            self.st.bk = 0;
            self.st.rtt_win_sx = Some(a.now);
        }
        // westwood_acked_count
        let s = &mut self.st;
        let mut cumul = a.snd_una.saturating_sub(s.snd_una);
        if cumul == 0 {
            s.accounted += w.mss;
            cumul = w.mss;
        }
        if cumul > w.mss {
            if s.accounted >= cumul {
                s.accounted -= cumul;
                cumul = w.mss;
            } else {
                cumul -= s.accounted;
                s.accounted = 0;
            }
        }
        s.snd_una = a.snd_una;
        s.bk += cumul;
        // update_rtt_min
        if s.reset_rtt_min {
            s.rtt_min = s.rtt;
            s.reset_rtt_min = false;
        } else {
            s.rtt_min = s.rtt_min.min(s.rtt);
        }
    }
    fn cwnd_event(&mut self, w: &mut Window, _now: SimTime, ev: CaEvent) {
        match ev {
            CaEvent::CompleteCwr => {
                let v = self.bw_rttmin(w.mss);
                w.cwnd = v;
                w.ssthresh = v;
            }
            CaEvent::Loss => {
                w.ssthresh = self.bw_rttmin(w.mss);
                self.st.reset_rtt_min = true;
            }
        }
    }
    fn save_state(&self) -> CcState {
        CcState::of(&self.st)
    }
    fn restore_state(&mut self, saved: CcState) {
        saved.restore_into(&mut self.st);
    }
    fn vars(&self) -> CcVars {
        let s = &self.st;
        vec![
            ("bw_est_bytes_per_s", s.bw_est),
            ("bw_ns_est_bytes_per_s", s.bw_ns_est),
            ("rtt_min_s", s.rtt_min.as_secs_f64()),
            ("rtt_s", s.rtt.as_secs_f64()),
            ("bk_bytes", s.bk as f64),
            ("accounted_bytes", s.accounted as f64),
            (
                "rtt_win_sx_s",
                s.rtt_win_sx.map_or(f64::NAN, |t| t.as_secs_f64()),
            ),
            ("reset_rtt_min", s.reset_rtt_min as u8 as f64),
        ]
    }
}

/// Westwood+'s configuration in a scenario: no parameters.
#[cfg(feature = "serde")]
pub use schema::WestwoodConfig;

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::cc::schema::prelude::*;

    cc_fields! {
        /// `cc = "westwood"`: no parameters.
        pub struct WestwoodConfig {}
    }

    impl CcSchema for WestwoodConfig {
        type Params = WestwoodParams;
        fn params(&self, _at: &str) -> Result<WestwoodParams> {
            Ok(WestwoodParams)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(c: &mut Westwood, w: &mut Window, t_ms: u64, snd_una: u64, rtt_ms: u64) {
        let rtt = SimDuration::from_millis(rtt_ms);
        let a = AckSample {
            now: SimTime::from_millis(t_ms),
            acked: 0,
            dupack: false,
            rtt: Some(rtt),
            ca_rtt: Some(rtt),
            srtt: Some(rtt),
            snd_una,
            snd_max: u64::MAX,
            state: CaState::Open,
        };
        c.pkts_acked(w, &a);
    }

    #[test]
    fn bandwidth_is_sampled_once_per_rtt_through_two_seven_eighths_filters() {
        let mut c = Westwood::new(AckCounting::PerAck);
        let mut w = Window {
            cwnd: 10 * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
        };
        // 1000 bytes every ms (1 MB/s), RTT 100 ms.
        let mut una = 0;
        for t in 0..=101 {
            una += MSS;
            ack(&mut c, &mut w, 1000 + t, una, 100);
        }
        // The first window closes at the first ACK more than 100 ms after the first ACK.
        assert!((c.bw_est() - 1e6).abs() / 1e6 < 0.02, "{}", c.bw_est());
        // A second window at 2 MB/s: bw_ns = (7·1 + 2)/8, bw = (7·1 + bw_ns)/8.
        for t in 102..=203 {
            una += 2 * MSS;
            ack(&mut c, &mut w, 1000 + t, una, 100);
        }
        let s1 = c.vars()[1].1;
        assert!((s1 / 1e6 - 1.125).abs() < 0.03, "bw_ns_est {s1}");
        assert!((c.bw_est() / 1e6 - (7.0 + s1 / 1e6) / 8.0).abs() < 1e-9);
    }

    #[test]
    fn ssthresh_after_a_loss_is_bwe_times_rtt_min_in_segments() {
        let mut c = Westwood::new(AckCounting::PerAck);
        let mut w = Window {
            cwnd: 10 * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
        };
        assert_eq!(c.ssthresh(&w, 0), 2 * MSS, "no estimate yet: 2 segments");
        let mut una = 0;
        for t in 0..=300 {
            una += MSS;
            ack(&mut c, &mut w, 1000 + t, una, if t == 5 { 80 } else { 100 });
        }
        assert_eq!(c.rtt_min(), SimDuration::from_millis(80));
        let expected = (c.bw_est() * 0.080 / MSS as f64).floor() as u64 * MSS;
        assert_eq!(c.ssthresh(&w, 0), expected);
        assert!((expected as f64 - 80_000.0).abs() <= 2000.0, "{expected}");
        // A completed fast recovery sets cwnd = ssthresh = BWE·RTT_min.
        c.cwnd_event(&mut w, SimTime::ZERO, CaEvent::CompleteCwr);
        assert_eq!((w.cwnd, w.ssthresh), (expected, expected));
    }

    #[test]
    fn duplicate_acks_count_one_mss_and_the_cumulative_ack_only_the_rest() {
        let mut c = Westwood::new(AckCounting::PerAck);
        let mut w = Window {
            cwnd: 10 * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
        };
        // The first ACK sets snd_una and, moving nothing, counts as a duplicate (1 MSS); the
        // next cumulative ACK of 2000 bytes therefore counts 1000.
        ack(&mut c, &mut w, 1000, 5 * MSS, 100);
        ack(&mut c, &mut w, 1000, 7 * MSS, 100);
        assert_eq!(c.vars()[4].1, 2000.0);
        assert_eq!(c.vars()[5].1, 0.0, "nothing left accounted");
        let bk0 = c.vars()[4].1;
        for i in 0..3 {
            ack(&mut c, &mut w, 1001 + i, 7 * MSS, 100);
        }
        assert_eq!(c.vars()[4].1 - bk0, 3000.0, "three duplicate ACKs");
        ack(&mut c, &mut w, 1010, 12 * MSS, 100);
        assert_eq!(
            c.vars()[4].1 - bk0,
            5000.0,
            "5000 acked, 3000 already counted"
        );
    }

    #[test]
    fn a_timeout_reseeds_rtt_min_from_the_next_sample() {
        let mut c = Westwood::new(AckCounting::PerAck);
        let mut w = Window {
            cwnd: 10 * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
        };
        ack(&mut c, &mut w, 1000, MSS, 50);
        ack(&mut c, &mut w, 1001, 2 * MSS, 90);
        assert_eq!(c.rtt_min(), SimDuration::from_millis(50));
        c.cwnd_event(&mut w, SimTime::ZERO, CaEvent::Loss);
        ack(&mut c, &mut w, 1002, 3 * MSS, 90);
        assert_eq!(c.rtt_min(), SimDuration::from_millis(90));
    }
}
