//! Retransmission timeout estimation.
//!
//! * RFC 6298 §2 with configurable alpha, beta, K and clock granularity G:
//!   first sample `SRTT = R, RTTVAR = R/2`; later `RTTVAR = (1−β)·RTTVAR + β·|SRTT − R'|`,
//!   `SRTT = (1−α)·SRTT + α·R'`; `RTO = SRTT + max(G, K·RTTVAR)`, then clamped to [min, max].
//!   §5.5 backoff doubles the RTO (capped at max) on every expiry; a new RTT sample recomputes
//!   the RTO from SRTT and RTTVAR, which removes the backoff (the note after RFC 6298 (5.7),
//!   and Karn's rule: samples are only taken from segments that were not retransmitted, or
//!   from timestamps).
//! * `linux`: the kernel's `tcp_rtt_estimator` and `__tcp_set_rto` (see [`RtoAlgorithm::Linux`]).
//!   `mdev` is kept scaled by 4 as the kernel keeps it; `RTO = srtt + rttvar` where
//!   `rttvar >= rto_min`, so the RTO is never below one RTT plus 200 ms.
//!
//! Maturity: unit tests pin the RFC 6298 equations and the kernel's update rules; the `linux`
//! mode follows the kernel's integer arithmetic in nanoseconds rather than microseconds.

use crate::{RtoAlgorithm, RtoConfig};
use spikelab_core::SimDuration;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    cfg: RtoConfig,
    /// Smoothed RTT, ns (`None` before the first sample).
    srtt: Option<f64>,
    /// RFC 6298 RTTVAR, ns; in `linux` mode the kernel's `rttvar_us` (already ×4 scaled).
    rttvar: f64,
    /// Linux: `mdev_us` (4 × mean deviation), ns.
    mdev4: i64,
    /// Linux: the largest `mdev4` seen in the current window of data, ns.
    mdev_max: i64,
    /// Linux: `rtt_seq`, the highest sequence sent when the current measurement window began
    /// (the kernel's `snd_nxt`, which a timeout does not rewind); the window ends when
    /// `snd_una` passes it.
    rtt_seq: u64,
    /// RTO before backoff.
    base_rto: SimDuration,
    /// Timer expiries since the last RTT sample (the doubling itself stops at `max`).
    backoff: u32,
}

impl RttEstimator {
    pub fn new(cfg: RtoConfig) -> RttEstimator {
        RttEstimator {
            cfg,
            srtt: None,
            rttvar: 0.0,
            mdev4: 0,
            mdev_max: 0,
            rtt_seq: 0,
            base_rto: cfg.initial,
            backoff: 0,
        }
    }

    /// Feeds one RTT measurement `r`. `snd_una` is the sender's value after the ACK and
    /// `snd_max` the highest sequence sent (the kernel's `snd_nxt`, which is never rewound);
    /// both serve the `linux` mode's per-window `mdev_max`.
    pub fn on_sample(&mut self, r: SimDuration, snd_una: u64, snd_max: u64) {
        let m = r.as_nanos() as f64;
        match self.cfg.algorithm.rfc_fallback() {
            RtoAlgorithm::Rfc6298 {
                alpha,
                beta,
                k,
                granularity,
            } => {
                match self.srtt {
                    None => {
                        self.srtt = Some(m);
                        self.rttvar = m / 2.0;
                    }
                    Some(srtt) => {
                        // (2.3): RTTVAR first, using the old SRTT.
                        self.rttvar = (1.0 - beta) * self.rttvar + beta * (srtt - m).abs();
                        self.srtt = Some((1.0 - alpha) * srtt + alpha * m);
                    }
                }
                let srtt = self.srtt.unwrap_or(m);
                let rto = srtt + (granularity.as_nanos() as f64).max(k * self.rttvar);
                self.base_rto = ns(rto);
            }
            RtoAlgorithm::Linux => self.linux_sample(r.as_nanos().max(1) as i64, snd_una, snd_max),
            RtoAlgorithm::Ns2 { .. } => unreachable!("rfc_fallback maps the ns-2 timer"),
        }
        self.base_rto = self.base_rto.max(self.cfg.min).min(self.cfg.max);
        self.backoff = 0;
    }

    fn linux_sample(&mut self, m: i64, snd_una: u64, snd_max: u64) {
        let rto_min = self.cfg.min.as_nanos() as i64;
        match self.srtt {
            None => {
                self.srtt = Some(m as f64);
                self.mdev4 = 2 * m;
                self.mdev_max = self.mdev4.max(rto_min);
                self.rttvar = self.mdev_max as f64;
                self.rtt_seq = snd_max;
            }
            Some(srtt_f) => {
                let mut srtt = srtt_f as i64;
                let err = m - srtt;
                srtt += err / 8;
                if err < 0 {
                    // A falling RTT moves mdev at 1/32 instead of 1/4 (the kernel's damping).
                    let mut a = -err - self.mdev4 / 4;
                    if a > 0 {
                        a /= 8;
                    }
                    self.mdev4 += a;
                } else {
                    self.mdev4 += err - self.mdev4 / 4;
                }
                if self.mdev4 > self.mdev_max {
                    self.mdev_max = self.mdev4;
                    if self.mdev_max as f64 > self.rttvar {
                        self.rttvar = self.mdev_max as f64;
                    }
                }
                if snd_una > self.rtt_seq {
                    if (self.mdev_max as f64) < self.rttvar {
                        self.rttvar -= (self.rttvar - self.mdev_max as f64) / 4.0;
                    }
                    self.rtt_seq = snd_max;
                    self.mdev_max = rto_min;
                }
                self.srtt = Some(srtt as f64);
            }
        }
        let rto = self.srtt.unwrap_or(0.0) + self.rttvar;
        self.base_rto = ns(rto);
    }

    /// RFC 4015 §3.1 step (11), on the first RTT sample `r` taken from data sent after a
    /// spurious timeout: `SRTT = max(SRTT_prev, R)`, `RTTVAR = max(RTTVAR_prev, R/2)`, `RTO =
    /// SRTT + max(G, K·RTTVAR)` (K = 4 in the RFC), bounded by the minimum and maximum RTO.
    /// `srtt_prev` is `None` when there was no sample before the timeout: then `r` is the first
    /// sample. In `linux` mode the same rule is applied to the kernel's variables (`rttvar` is
    /// four mean deviations there, so `R/2` becomes `2R`; not an RFC rule).
    pub fn restart_after_spurious_timeout(
        &mut self,
        srtt_prev: Option<SimDuration>,
        rttvar_prev: SimDuration,
        r: SimDuration,
    ) {
        let Some(srtt_prev) = srtt_prev else {
            // No history: RFC 6298 (2.2) from this sample.
            self.srtt = None;
            self.on_sample(r, self.rtt_seq, self.rtt_seq);
            return;
        };
        let m = r.as_nanos() as f64;
        let srtt = (srtt_prev.as_nanos() as f64).max(m);
        self.srtt = Some(srtt);
        match self.cfg.algorithm.rfc_fallback() {
            RtoAlgorithm::Rfc6298 { k, granularity, .. } => {
                self.rttvar = (rttvar_prev.as_nanos() as f64).max(m / 2.0);
                let rto = srtt + (granularity.as_nanos() as f64).max(k * self.rttvar);
                self.base_rto = ns(rto);
            }
            RtoAlgorithm::Linux => {
                let rto_min = self.cfg.min.as_nanos() as f64;
                let var = (rttvar_prev.as_nanos() as f64).max(2.0 * m);
                self.mdev4 = var as i64;
                self.mdev_max = self.mdev4;
                self.rttvar = var.max(rto_min);
                self.base_rto = ns(srtt + self.rttvar);
            }
            RtoAlgorithm::Ns2 { .. } => unreachable!("rfc_fallback maps the ns-2 timer"),
        }
        self.base_rto = self.base_rto.max(self.cfg.min).min(self.cfg.max);
        self.backoff = 0;
    }

    /// RFC 6298 (5.7): the SYN's timer expired and the handshake gave no RTT sample, so the
    /// data transfer starts with an RTO of 3 s (or the initial RTO, if larger) and no backoff;
    /// Linux `tcp_init_metrics` (`TCP_TIMEOUT_FALLBACK`). The first sample then starts the
    /// estimator as usual.
    pub fn syn_lost_without_sample(&mut self) {
        let fallback = SimDuration::from_secs(3).max(self.cfg.initial);
        self.base_rto = fallback.max(self.cfg.min).min(self.cfg.max);
        self.backoff = 0;
    }

    /// Doubles the RTO after an expiry (RFC 6298 (5.5)), capped at the maximum. The count of
    /// backoffs grows even at the cap: it records that the timer expired since the last sample
    /// (the sender holds ssthresh on a repeated timeout, RFC 5681 §3.1).
    pub fn backoff(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    /// The current RTO including backoff.
    pub fn rto(&self) -> SimDuration {
        let shift = self.backoff.min(40);
        self.base_rto
            .saturating_mul(1u64 << shift)
            .min(self.cfg.max)
    }

    /// The current RTO as the kernel holds it at `hz` ticks per second: the base RTO in whole
    /// jiffies (`__tcp_set_rto`: `usecs_to_jiffies`), shifted by the backoff
    /// (`inet_csk_rto_backoff`), capped at the maximum.
    pub fn rto_ticks(&self, hz: u32) -> u64 {
        let shift = self.backoff.min(40);
        let base = crate::jiffies::ticks_ceil(self.base_rto, hz);
        base.saturating_mul(1u64 << shift)
            .min(crate::jiffies::ticks_ceil(self.cfg.max, hz))
    }

    pub fn backoff_count(&self) -> u32 {
        self.backoff
    }

    pub fn srtt(&self) -> Option<SimDuration> {
        self.srtt.map(ns)
    }

    /// RFC 6298 RTTVAR, or the kernel's `rttvar` in `linux` mode.
    pub fn rttvar(&self) -> SimDuration {
        ns(self.rttvar)
    }
}

/// Nanoseconds (non-negative, below 2^52) rounded half up to a duration: `f64::round` is a
/// libm call on the baseline x86-64 target, and this runs on every RTT sample.
fn ns(x: f64) -> SimDuration {
    SimDuration((x + 0.5) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }

    #[test]
    fn rfc6298_first_and_second_sample() {
        let mut cfg = RtoConfig::rfc6298();
        cfg.min = ms(1);
        let mut e = RttEstimator::new(cfg);
        assert_eq!(e.rto(), ms(1000), "(2.1) initial RTO 1 s");
        e.on_sample(ms(100), 0, 0);
        // (2.2) SRTT = 100, RTTVAR = 50, RTO = 100 + 4*50 = 300 ms.
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.rto(), ms(300));
        e.on_sample(ms(200), 0, 0);
        // (2.3) RTTVAR = 3/4*50 + 1/4*100 = 62.5; SRTT = 7/8*100 + 1/8*200 = 112.5;
        // RTO = 112.5 + 250 = 362.5 ms.
        assert_eq!(e.rttvar(), SimDuration(62_500_000));
        assert_eq!(e.srtt(), Some(SimDuration(112_500_000)));
        assert_eq!(e.rto(), SimDuration(362_500_000));
    }

    #[test]
    fn rfc6298_minimum_is_one_second_by_default() {
        let mut e = RttEstimator::new(RtoConfig::rfc6298());
        e.on_sample(ms(50), 0, 0);
        assert_eq!(e.rto(), ms(1000));
    }

    #[test]
    fn granularity_floors_the_variance_term() {
        let mut cfg = RtoConfig::rfc6298();
        cfg.min = SimDuration(1);
        if let RtoAlgorithm::Rfc6298 {
            ref mut granularity,
            ..
        } = cfg.algorithm
        {
            *granularity = ms(100);
        }
        let mut e = RttEstimator::new(cfg);
        e.on_sample(ms(10), 0, 0);
        e.on_sample(ms(10), 0, 0);
        e.on_sample(ms(10), 0, 0);
        // K*RTTVAR = 4 * (9/16 * 5) ms < G, so RTO = SRTT + G = 110 ms.
        assert_eq!(e.rto(), ms(110));
    }

    #[test]
    fn backoff_doubles_up_to_max_and_a_sample_resets_it() {
        let mut e = RttEstimator::new(RtoConfig::rfc6298());
        let mut seen = vec![e.rto()];
        for _ in 0..8 {
            e.backoff();
            seen.push(e.rto());
        }
        assert_eq!(
            seen,
            vec![1, 2, 4, 8, 16, 32, 60, 60, 60]
                .into_iter()
                .map(SimDuration::from_secs)
                .collect::<Vec<_>>()
        );
        e.on_sample(ms(100), 0, 0);
        assert_eq!(e.backoff_count(), 0);
        assert_eq!(e.rto(), ms(1000));
    }

    #[test]
    fn linux_rto_is_rtt_plus_200ms_on_a_steady_path() {
        let mut e = RttEstimator::new(RtoConfig::linux());
        e.on_sample(ms(50), 0, 10);
        // srtt 50, mdev4 = 100 ms < rto_min, rttvar = 200 ms: RTO = 250 ms.
        assert_eq!(e.rto(), ms(250));
        let mut una = 0;
        for i in 0..200 {
            una += 10;
            e.on_sample(ms(50), una, una + 10 + i);
        }
        assert_eq!(e.srtt(), Some(ms(50)));
        assert_eq!(e.rto(), ms(250));
    }

    #[test]
    fn linux_rttvar_follows_a_jump_at_once_and_decays_per_window() {
        let mut e = RttEstimator::new(RtoConfig::linux());
        e.on_sample(ms(100), 0, 100);
        // A 900 ms sample: err = 800, srtt = 200, mdev4 = 200 + 800 - 50 = 950 ms.
        e.on_sample(ms(900), 50, 150);
        assert_eq!(e.srtt(), Some(ms(200)));
        assert_eq!(e.rttvar(), ms(950));
        assert_eq!(e.rto(), ms(1150));
        // The window that saw the jump ends (snd_una passes rtt_seq = 100): mdev_max was the
        // jump itself, so rttvar holds, and mdev_max restarts from rto_min.
        e.on_sample(ms(200), 120, 300);
        assert_eq!(e.rttvar(), ms(950));
        // Next window: mdev4 = 3/4 * 712.5 = 534.375 ms is its maximum; at its end rttvar
        // decays by a quarter of the excess: 950 - (950 - 534.375) / 4 = 846.09375 ms.
        e.on_sample(ms(200), 310, 400);
        assert_eq!(e.rttvar(), SimDuration(846_093_750));
    }

    #[test]
    fn rfc4015_restart_takes_the_larger_of_history_and_sample() {
        let mut cfg = RtoConfig::rfc6298();
        cfg.min = ms(1);
        let mut e = RttEstimator::new(cfg);
        e.on_sample(ms(100), 0, 0);
        e.backoff();
        // A 1.5 s sample after a spike: SRTT = max(102, 1500), RTTVAR = max(50, 750).
        e.restart_after_spurious_timeout(Some(ms(102)), ms(50), ms(1500));
        assert_eq!(e.srtt(), Some(ms(1500)));
        assert_eq!(e.rttvar(), ms(750));
        assert_eq!(e.rto(), ms(4500));
        assert_eq!(e.backoff_count(), 0);
        // A small sample keeps the history.
        e.restart_after_spurious_timeout(Some(ms(102)), ms(50), ms(10));
        assert_eq!(e.srtt(), Some(ms(102)));
        assert_eq!(e.rto(), ms(302));
    }

    #[test]
    fn linux_caps_at_120s() {
        let mut e = RttEstimator::new(RtoConfig::linux());
        for _ in 0..20 {
            e.backoff();
        }
        assert_eq!(e.rto(), SimDuration::from_secs(120));
    }
}
