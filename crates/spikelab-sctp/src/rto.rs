//! The per-destination RTO estimator of RFC 9260 §6.3.1 (C1-C7; RFC 4960 has the same rules)
//! with arbitrary gains, and the E2 backoff of §6.3.3.
//!
//! SRTT and RTTVAR are kept as `f64` seconds so that any real alpha and beta in [0, 1] works;
//! the RTO is rounded to whole nanoseconds. Karn's rule (C5) and the one-sample-per-round-trip
//! rule are the caller's business: this type takes every sample it is given.

use spikelab_core::SimDuration;

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RtoParams {
    pub initial: SimDuration,
    pub min: SimDuration,
    pub max: SimDuration,
    pub alpha: f64,
    pub beta: f64,
    /// C6 clock granularity: RTTVAR == 0 becomes G. `None`: left at 0.
    pub granularity: Option<SimDuration>,
    /// Cap the E2 doubling at `max` (E2: MAY).
    pub cap_backoff: bool,
}

impl RtoParams {
    /// RFC 4960 §15: initial 3 s, min 1 s, max 60 s, alpha 1/8, beta 1/4.
    pub fn rfc4960() -> RtoParams {
        RtoParams {
            initial: SimDuration::from_secs(3),
            min: SimDuration::from_secs(1),
            max: SimDuration::from_secs(60),
            alpha: 0.125,
            beta: 0.25,
            granularity: None,
            cap_backoff: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct RtoEstimator {
    params: RtoParams,
    /// (SRTT, RTTVAR) in seconds, once a first sample was taken.
    state: Option<(f64, f64)>,
    rto: SimDuration,
    samples: u64,
}

impl RtoEstimator {
    /// C1: RTO = RTO.Initial until the first measurement.
    pub fn new(params: RtoParams) -> RtoEstimator {
        RtoEstimator {
            params,
            state: None,
            rto: params.initial,
            samples: 0,
        }
    }

    pub fn params(&self) -> &RtoParams {
        &self.params
    }

    /// The current RTO (after any backoff).
    pub fn rto(&self) -> SimDuration {
        self.rto
    }

    pub fn srtt(&self) -> Option<SimDuration> {
        self.state.map(|(s, _)| SimDuration::from_secs_f64(s))
    }

    pub fn rttvar(&self) -> Option<SimDuration> {
        self.state.map(|(_, v)| SimDuration::from_secs_f64(v))
    }

    /// SRTT and RTTVAR in seconds, unrounded.
    pub fn state_secs(&self) -> Option<(f64, f64)> {
        self.state
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// C2 (first sample) or C3 (later samples), then C4 and the C6/C7 clamps.
    pub fn sample(&mut self, r: SimDuration) {
        let r = r.as_secs_f64();
        let (a, b) = (self.params.alpha, self.params.beta);
        let (srtt, mut rttvar) = match self.state {
            None => (r, r / 2.0),
            Some((srtt, rttvar)) => {
                // C3: RTTVAR uses the SRTT before its own update.
                let v = (1.0 - b) * rttvar + b * (srtt - r).abs();
                ((1.0 - a) * srtt + a * r, v)
            }
        };
        if rttvar == 0.0 {
            if let Some(g) = self.params.granularity {
                rttvar = g.as_secs_f64();
            }
        }
        self.set_state_secs(srtt, rttvar);
        self.samples += 1;
    }

    /// Sets SRTT and RTTVAR (seconds) directly and recomputes the RTO: a warm start for
    /// scenarios and tests (e.g. paper 004 §5's measured RTO of 2.802 s).
    pub fn set_state_secs(&mut self, srtt: f64, rttvar: f64) {
        self.state = Some((srtt, rttvar));
        self.rto = self.clamp(srtt + 4.0 * rttvar);
    }

    /// SRTT + 4·RTTVAR before the clamp (seconds), if measured.
    pub fn unclamped_rto_secs(&self) -> Option<f64> {
        self.state.map(|(s, v)| s + 4.0 * v)
    }

    fn clamp(&self, secs: f64) -> SimDuration {
        let d = SimDuration::from_secs_f64(secs.max(0.0));
        d.max(self.params.min).min(self.params.max)
    }

    /// E2: RTO = 2·RTO, capped at RTO.Max when `cap_backoff`.
    pub fn backoff(&mut self) {
        let d = self.rto.saturating_mul(2);
        self.rto = if self.params.cap_backoff {
            d.min(self.params.max)
        } else {
            d
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> SimDuration {
        SimDuration::from_millis(x)
    }

    #[test]
    fn first_and_later_samples_follow_c2_c3() {
        let mut e = RtoEstimator::new(RtoParams::rfc4960());
        assert_eq!(e.rto(), SimDuration::from_secs(3));
        e.sample(ms(400));
        // SRTT 400, RTTVAR 200, RTO 1200 ms.
        assert_eq!(e.rto(), ms(1200));
        e.sample(ms(800));
        // RTTVAR = 0.75·200 + 0.25·400 = 250; SRTT = 0.875·400 + 0.125·800 = 450; RTO 1450.
        assert_eq!(e.rttvar(), Some(ms(250)));
        assert_eq!(e.srtt(), Some(ms(450)));
        assert_eq!(e.rto(), ms(1450));
    }

    #[test]
    fn clamps_backoff_and_collapse() {
        let mut e = RtoEstimator::new(RtoParams::rfc4960());
        e.sample(ms(10));
        assert_eq!(e.rto(), SimDuration::from_secs(1), "raised to RTO.Min");
        for _ in 0..10 {
            e.backoff();
        }
        assert_eq!(e.rto(), SimDuration::from_secs(60), "E2 capped at RTO.Max");
        e.sample(ms(10));
        assert_eq!(
            e.rto(),
            SimDuration::from_secs(1),
            "a new sample collapses the backoff"
        );
        let mut u = RtoEstimator::new(RtoParams {
            cap_backoff: false,
            ..RtoParams::rfc4960()
        });
        for _ in 0..6 {
            u.backoff();
        }
        assert_eq!(u.rto(), SimDuration::from_secs(192));
    }

    #[test]
    fn arbitrary_real_gains_and_granularity() {
        let p = RtoParams {
            alpha: 0.37,
            beta: 0.91,
            min: SimDuration::from_millis(1),
            ..RtoParams::rfc4960()
        };
        let mut e = RtoEstimator::new(p);
        e.sample(ms(100));
        e.sample(ms(300));
        let (s, v) = e.state_secs().unwrap();
        let v_exp = 0.09 * 0.05 + 0.91 * 0.2;
        let s_exp = 0.63 * 0.1 + 0.37 * 0.3;
        assert!((s - s_exp).abs() < 1e-12 && (v - v_exp).abs() < 1e-12);
        // alpha = 1, beta = 0: SRTT follows the sample, RTTVAR stays; with G, RTTVAR 0 -> G.
        let mut g = RtoEstimator::new(RtoParams {
            alpha: 1.0,
            beta: 1.0,
            min: SimDuration::from_millis(1),
            granularity: Some(ms(5)),
            ..RtoParams::rfc4960()
        });
        g.sample(ms(100));
        g.sample(ms(100));
        assert_eq!(g.rttvar(), Some(ms(5)));
        assert_eq!(g.rto(), ms(120));
    }
}
