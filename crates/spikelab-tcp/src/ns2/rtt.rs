//! ns-2.35's retransmission timer: RTT samples counted in clock ticks (`tcpTick_`, 10 ms by
//! default) and smoothed in scaled integers, as the BSD-derived code of `TcpAgent` does
//! (`rtt_init`, `rtt_update`, `rtt_timeout`, `rtt_backoff` in ns-2's `tcp/tcp.cc`; defaults
//! from `tcl/lib/ns-default.tcl`). docs/models.md, "The ns2 TCP profile", has the table.
//!
//! * `srtt` is kept as 8·srtt and `rttvar` as 4·rttvar, both in ticks (`T_SRTT_BITS` = 3,
//!   `T_RTTVAR_BITS` = 2); the first sample sets srtt = m and rttvar = m/2; later ones move
//!   srtt by (m − srtt)/8 and rttvar by (|m − srtt| − rttvar)/4 in those integers, each held
//!   at ≥ 1.
//! * A sample is the number of tick boundaries the segment's round trip crossed, at least 1:
//!   the clock ticks at `boot + k·tick` (ns-2 draws `boot` uniformly in one tick per agent).
//! * `RTO = (srtt + 4·rttvar)` ticks (`rttvar_exp_` = 2); before the first sample 3 s
//!   (`rtxcur_init_`). The timer runs for `RTO·backoff`, or `minrto·backoff` when the RTO is
//!   below `minrto` (RFC 2988's clamp before the backoff, `rfc2988_` = true), at most `maxrto`
//!   and at least two ticks.
//! * A backoff doubles the multiplier while it is below 64 or the timer is below `maxrto`; past
//!   8 the smoothed RTT is folded into rttvar and cleared, so the next sample starts afresh.

/// The estimator's state, in ns-2's units (ticks, scaled integers) and seconds.
#[derive(Clone, Debug)]
pub struct Ns2Rtt {
    tick: f64,
    boot: f64,
    minrto: f64,
    maxrto: f64,
    /// 8·srtt, ticks (0: no sample yet, or cleared by a long backoff).
    t_srtt: i64,
    /// 4·rttvar, ticks.
    t_rttvar: i64,
    /// The current RTO before the backoff, seconds.
    t_rtxcur: f64,
    /// The backoff multiplier.
    pub(crate) t_backoff: i64,
    /// The last sample, ticks.
    pub(crate) t_rtt: i64,
}

impl Ns2Rtt {
    /// `tick`: `tcpTick_`; `boot`: where in a tick the agent's clock started, `[0, tick)`;
    /// `initial`: `rtxcur_init_`; all in seconds.
    pub fn new(tick: f64, boot: f64, minrto: f64, maxrto: f64, initial: f64) -> Ns2Rtt {
        Ns2Rtt {
            tick,
            boot,
            minrto,
            maxrto,
            // srtt_init_ = 0, rttvar_init_ = 12 s (only read before a first sample, where the
            // RTO is rtxcur_init_ anyway).
            t_srtt: 0,
            t_rttvar: ((12.0 / tick) as i64) << 2,
            t_rtxcur: initial,
            t_backoff: 1,
            t_rtt: 0,
        }
    }

    /// Smoothed RTT, seconds (`None` before a sample or after a clearing backoff).
    pub fn srtt(&self) -> Option<f64> {
        (self.t_srtt != 0).then(|| (self.t_srtt as f64 / 8.0) * self.tick)
    }
    /// RTT variation, seconds.
    pub fn rttvar(&self) -> f64 {
        (self.t_rttvar as f64 / 4.0) * self.tick
    }

    /// One sample: the segment sent `tao` seconds before `now` came back.
    pub fn update(&mut self, now: f64, tao: f64) {
        let sendtime = now - tao + self.boot;
        let tickoff = sendtime % self.tick;
        self.t_rtt = (((tao + tickoff) / self.tick) as i64).max(1);
        if self.t_srtt != 0 {
            // ns-2 keeps the difference in a 16-bit short.
            let mut delta = (self.t_rtt - (self.t_srtt >> 3)) as i16 as i64;
            self.t_srtt += delta;
            if self.t_srtt <= 0 {
                self.t_srtt = 1;
            }
            delta = delta.abs();
            delta -= self.t_rttvar >> 2;
            self.t_rttvar += delta;
            if self.t_rttvar <= 0 {
                self.t_rttvar = 1;
            }
        } else {
            self.t_srtt = self.t_rtt << 3;
            self.t_rttvar = self.t_rtt << 1;
        }
        self.t_rtxcur = (((self.t_rttvar << 3) + self.t_srtt) >> 3) as f64 * self.tick;
    }

    /// One sample as `Agent/TCP/Linux` takes it (`LinuxTcpAgent::rtt_update`, ns-2.35's
    /// `tcp/tcp-linux.cc`): the same tick count as [`Ns2Rtt::update`], but Linux's mean
    /// deviation: a sample below srtt moves rttvar by an eighth of its excess only
    /// (`delta >>= 3`), and rttvar is not held at one tick. Returns 8·srtt in ticks, what the
    /// agent hands its congestion control as `srtt`.
    pub fn update_linux(&mut self, now: f64, tao: f64) -> i64 {
        let sendtime = now - tao + self.boot;
        let tickoff = sendtime % self.tick;
        self.t_rtt = (((tao + tickoff) / self.tick) as i64).max(1);
        if self.t_srtt != 0 {
            // `short delta`: every step is truncated to 16 bits.
            let mut delta = (self.t_rtt - (self.t_srtt >> 3)) as i16;
            self.t_srtt += delta as i64;
            if self.t_srtt <= 0 {
                self.t_srtt = 1;
            }
            if delta < 0 {
                delta = delta.wrapping_neg();
                delta = (delta as i64 - (self.t_rttvar >> 2)) as i16;
                if delta > 0 {
                    delta >>= 3;
                }
            } else {
                delta = (delta as i64 - (self.t_rttvar >> 2)) as i16;
            }
            self.t_rttvar += delta as i64;
        } else {
            self.t_srtt = self.t_rtt << 3;
            self.t_rttvar = self.t_rtt << 1;
        }
        self.t_rtxcur = (((self.t_rttvar << 3) + self.t_srtt) >> 3) as f64 * self.tick;
        self.t_srtt
    }

    /// How long the timer runs when set now, seconds.
    pub fn timeout(&self) -> f64 {
        let mut t = if self.t_rtxcur < self.minrto {
            self.minrto * self.t_backoff as f64
        } else {
            self.t_rtxcur * self.t_backoff as f64
        };
        if t > self.maxrto {
            t = self.maxrto;
        }
        if t < 2.0 * self.tick {
            t = 2.0 * self.tick;
        }
        t
    }

    /// A timeout backs the timer off.
    pub fn backoff(&mut self) {
        if self.t_backoff < 64 || self.timeout() < self.maxrto {
            self.t_backoff <<= 1;
        }
        if self.t_backoff > 8 {
            self.t_rttvar += self.t_srtt >> 3;
            self.t_srtt = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> Ns2Rtt {
        Ns2Rtt::new(0.01, 0.0, 0.2, 60.0, 3.0)
    }

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar_in_ticks() {
        let mut r = est();
        assert_eq!(r.timeout(), 3.0);
        // 45 ms sent at t = 1.003: 4 tick boundaries crossed.
        r.update(1.048, 0.045);
        assert_eq!(r.t_rtt, 4);
        // RTO = 4 + 4·2 = 12 ticks = 120 ms, below minrto: 200 ms.
        assert!((r.srtt().unwrap() - 0.04).abs() < 1e-12);
        assert!((r.rttvar() - 0.02).abs() < 1e-12);
        assert!((r.timeout() - 0.2).abs() < 1e-12);
    }

    #[test]
    fn samples_count_tick_boundaries_from_the_boot_phase() {
        // 15 ms sent 2 ms before a boundary of the agent's clock crosses two.
        let mut r = Ns2Rtt::new(0.01, 0.008, 0.2, 60.0, 3.0);
        r.update(1.0151, 0.015);
        assert_eq!(r.t_rtt, 2);
        // The same round trip 9 ms before a boundary crosses one.
        let mut r = est();
        r.update(1.0161, 0.015);
        assert_eq!(r.t_rtt, 1);
        // Less than one tick without a boundary: held at one tick.
        r.update(2.0061, 0.005);
        assert_eq!(r.t_rtt, 1);
    }

    #[test]
    fn rto_is_srtt_plus_four_rttvar_in_integer_ticks() {
        let mut r = est();
        r.update(1.503, 0.5); // 50 ticks: srtt 50, rttvar 25 → 150 ticks
        assert!((r.timeout() - 1.5).abs() < 1e-9);
        r.update(2.303, 0.3); // 30 ticks: delta −20 → srtt·8 = 380; rttvar·4 = 100 + (20 − 25) = 95
        assert_eq!((r.t_srtt, r.t_rttvar), (380, 95));
        // (95·8 + 380) >> 3 = 142 ticks.
        assert!((r.timeout() - 1.42).abs() < 1e-9);
    }

    #[test]
    fn backoff_doubles_and_clears_srtt_past_eight() {
        let mut r = est();
        r.update(1.503, 0.5);
        for _ in 0..3 {
            r.backoff();
        }
        assert_eq!(r.t_backoff, 8);
        assert!(r.srtt().is_some());
        assert!((r.timeout() - 12.0).abs() < 1e-9);
        r.backoff();
        assert_eq!(r.t_backoff, 16);
        assert!(r.srtt().is_none());
        // The RTO in force is unchanged by the clearing; the bound is maxrto.
        assert!((r.timeout() - 24.0).abs() < 1e-9);
        r.backoff();
        assert!((r.timeout() - 48.0).abs() < 1e-9);
        r.backoff();
        assert_eq!(r.timeout(), 60.0);
    }
}
