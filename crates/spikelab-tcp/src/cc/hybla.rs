//! TCP Hybla (Caini, Firrincieli, Int. J. Satellite Communications 2004), as the Linux module
//! `net/ipv4/tcp_hybla.c` implements it, re-implemented from its description.
//!
//! Hybla makes a long-RTT flow grow as a flow with the reference RTT `rtt0` (25 ms) would:
//! `rho = srtt/rtt0` (at least 1), kept in fixed point with 3 fractional bits and recomputed
//! whenever srtt falls below the lowest srtt seen. Per ACK (not per packet acknowledged), slow
//! start adds `2^rho − 1` packets (`2^int(rho)` times a table of `2^(k/8)` in 1/128 units, the
//! integer part capped at 16) and congestion avoidance `rho²/cwnd`; increments are kept in
//! 1/128 of a packet (`snd_cwnd_cents`), so fractions add up across ACKs. Limits as in the
//! module: slow start never takes cwnd above ssthresh, cwnd is clamped at 65535 packets, and
//! outside the Open state (Disorder, Recovery, Loss) growth is Reno's. The loss response is
//! Reno's (`ssthresh = max(FlightSize/2, 2·SMSS)`).
//!
//! Simplified: the module sets cwnd to rho packets when the connection starts (from the
//! handshake's RTT); here the handshake's RTT is not handed to the module, so the initial
//! window stays the sender's and rho is first computed at the first srtt. No
//! `tcp_is_cwnd_limited` check. The Reno
//! growth outside Open follows the sender's ACK counting.
//!
//! Maturity: unit-tested against the module's arithmetic (rho = 10 at srtt = 250 ms, the slow
//! start step and its limits, the fraction carry); not yet validated against the kernel.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HyblaParams {
    /// Reference RTT (the module's `rtt0`, 25 ms).
    pub rtt0: SimDuration,
}

impl Default for HyblaParams {
    fn default() -> Self {
        HyblaParams {
            rtt0: SimDuration::from_millis(25),
        }
    }
}

impl CcParams for HyblaParams {
    const NAME: &'static str = "hybla";
    fn build(&self, counting: AckCounting) -> Box<dyn CongestionControl> {
        Box::new(Hybla::new(*self, counting))
    }
}

/// The module's cwnd clamp, packets.
const CWND_CLAMP: u64 = 65535;
/// `2^rho`'s integer part is capped at this shift.
const MAX_RHO_SHIFT: u32 = 16;

/// `128·2^(k/8)` for k = 0..7: the fractional part of `2^rho` in 1/128 units.
fn fraction(k: u32) -> u32 {
    if k < 8 {
        (128.0 * 2f64.powf(k as f64 / 8.0)).floor() as u32
    } else {
        128
    }
}

#[derive(Clone, Debug, PartialEq)]
struct State {
    hybla_en: bool,
    /// Increments below one packet, 1/128 packet.
    snd_cwnd_cents: u32,
    rho: u32,
    rho2: u32,
    /// rho · 8.
    rho_3ls: u32,
    /// rho² · 128.
    rho2_7ls: u32,
    /// Lowest srtt seen.
    minrtt: Option<SimDuration>,
    /// The socket's `snd_cwnd_cnt`.
    snd_cwnd_cnt: u64,
    /// Byte counter of the Reno fallback (RFC 3465).
    reno_bytes_acked: u64,
}

pub struct Hybla {
    p: HyblaParams,
    counting: AckCounting,
    st: State,
    /// srtt at the last ACK (input, not state).
    srtt: Option<SimDuration>,
}

impl Hybla {
    pub fn new(p: HyblaParams, counting: AckCounting) -> Hybla {
        Hybla {
            p,
            counting,
            st: State {
                hybla_en: true,
                snd_cwnd_cents: 0,
                rho: 0,
                rho2: 0,
                rho_3ls: 0,
                rho2_7ls: 0,
                minrtt: None,
                snd_cwnd_cnt: 0,
                reno_bytes_acked: 0,
            },
            srtt: None,
        }
    }

    /// `hybla_recalc_param` for `srtt`.
    fn recalc(&mut self, srtt: SimDuration) {
        let s = &mut self.st;
        let rtt0 = self.p.rtt0.as_nanos().max(1);
        s.rho_3ls = ((srtt.as_nanos().saturating_mul(8) / rtt0).min(u32::MAX as u64) as u32).max(8);
        s.rho = s.rho_3ls >> 3;
        s.rho2_7ls = s.rho_3ls.saturating_mul(s.rho_3ls).saturating_mul(2);
        s.rho2 = s.rho2_7ls >> 7;
    }

    /// rho, rho² (integer parts), for tests and traces.
    pub fn rho(&self) -> (u32, u32) {
        (self.st.rho, self.st.rho2)
    }
}

impl CongestionControl for Hybla {
    fn name(&self) -> &'static str {
        HyblaParams::NAME
    }
    fn ssthresh(&mut self, w: &Window, flight_size: u64) -> u64 {
        self.st.reno_bytes_acked = 0;
        (flight_size / 2).max(2 * w.mss)
    }
    fn cong_avoid(&mut self, w: &mut Window, acked: u64) {
        if let Some(srtt) = self.srtt {
            if self.st.minrtt.is_none_or(|m| srtt < m) {
                self.recalc(srtt);
                self.st.minrtt = Some(srtt);
            }
        }
        if !self.st.hybla_en {
            if w.cwnd < w.ssthresh {
                slow_start(w, acked, self.counting);
            } else {
                cong_avoid_ai(w, acked, self.counting, &mut self.st.reno_bytes_acked);
            }
            return;
        }
        if self.st.rho == 0 {
            self.recalc(self.srtt.unwrap_or(SimDuration::ZERO));
        }
        let s = &mut self.st;
        let rho_fractions = s.rho_3ls - (s.rho << 3);
        let mss = w.mss;
        let rem = w.cwnd % mss;
        let mut cwnd = w.cwnd / mss;
        let slow_start = w.cwnd < w.ssthresh;
        let increment: u64 = if slow_start {
            // INC = 2^rho − 1, in 1/128 packet.
            (1u64 << s.rho.min(MAX_RHO_SHIFT)) * fraction(rho_fractions) as u64 - 128
        } else {
            // INC = rho² / cwnd, in 1/128 packet.
            let inc = s.rho2_7ls as u64 / cwnd.max(1);
            if inc < 128 {
                s.snd_cwnd_cnt += 1;
            }
            inc
        };
        let odd = (increment % 128) as u32;
        cwnd += increment >> 7;
        s.snd_cwnd_cents += odd;
        while s.snd_cwnd_cents >= 128 {
            cwnd += 1;
            s.snd_cwnd_cents -= 128;
            s.snd_cwnd_cnt = 0;
        }
        // No increase for a whole window: one packet.
        if increment == 0 && odd == 0 && s.snd_cwnd_cnt >= cwnd {
            cwnd += 1;
            s.snd_cwnd_cnt = 0;
        }
        let mut bytes = cwnd * mss + rem;
        if slow_start {
            bytes = bytes.min(w.ssthresh.max(w.cwnd));
        }
        w.cwnd = bytes.min(CWND_CLAMP * mss);
    }
    fn pkts_acked(&mut self, _w: &mut Window, a: &AckSample) {
        self.srtt = a.srtt;
    }
    fn set_state(&mut self, _w: &mut Window, _now: SimTime, _from: CaState, to: CaState) {
        self.st.hybla_en = to == CaState::Open;
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
            ("rho", s.rho_3ls as f64 / 8.0),
            ("snd_cwnd_cents", s.snd_cwnd_cents as f64),
            ("minrtt_s", s.minrtt.map_or(f64::NAN, |d| d.as_secs_f64())),
            ("hybla_en", s.hybla_en as u8 as f64),
            ("snd_cwnd_cnt", s.snd_cwnd_cnt as f64),
        ]
    }
}

/// Hybla's configuration in a scenario (docs/scenario.md, "Congestion control").
#[cfg(feature = "serde")]
pub use schema::HyblaConfig;

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::cc::schema::prelude::*;

    cc_fields! {
        /// `cc = { algo = "hybla", ... }`.
        pub struct HyblaConfig {
            /// The reference RTT (default 25 ms, the module's `rtt0`).
            rtt0: Duration,
        }
    }

    impl CcSchema for HyblaConfig {
        type Params = HyblaParams;
        fn params(&self, at: &str) -> Result<HyblaParams> {
            let d = HyblaParams::default();
            if let Some(r) = self.rtt0 {
                check(
                    r.0 >= SimDuration::from_micros(1),
                    format!("{at}.rtt0"),
                    format!("must be >= 1us, got {r}"),
                )?;
            }
            Ok(HyblaParams {
                rtt0: self.rtt0.map_or(d.rtt0, |r| r.0),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(h: &mut Hybla, w: &mut Window, srtt_ms: u64) {
        ack_srtt(h, w, SimDuration::from_millis(srtt_ms));
    }

    fn ack_srtt(h: &mut Hybla, w: &mut Window, srtt: SimDuration) {
        let a = AckSample {
            now: SimTime::from_millis(1000),
            acked: MSS,
            dupack: false,
            rtt: Some(srtt),
            ca_rtt: Some(srtt),
            srtt: Some(srtt),
            snd_una: 0,
            snd_max: 0,
            state: CaState::Open,
        };
        h.pkts_acked(w, &a);
        h.cong_avoid(w, MSS);
    }

    fn win(cwnd: u64, ssthresh: u64) -> Window {
        Window {
            cwnd: cwnd * MSS,
            ssthresh,
            mss: MSS,
        }
    }

    #[test]
    fn rho_is_srtt_over_rtt0_10_at_250_ms() {
        let mut h = Hybla::new(HyblaParams::default(), AckCounting::PerAck);
        let mut w = win(10, u64::MAX);
        ack(&mut h, &mut w, 250);
        assert_eq!(h.rho(), (10, 100));
    }

    #[test]
    fn slow_start_grows_by_2_pow_rho_minus_1_per_ack_at_rho_10() {
        let mut h = Hybla::new(HyblaParams::default(), AckCounting::PerAck);
        let mut w = win(10, u64::MAX);
        ack(&mut h, &mut w, 250);
        assert_eq!(w.cwnd, (10 + 1023) * MSS, "2^10 − 1 = 1023 packets per ACK");
        ack(&mut h, &mut w, 250);
        assert_eq!(w.cwnd, (10 + 2 * 1023) * MSS);
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_cwnd_at_the_65535_packet_clamp() {
        let mut h = Hybla::new(HyblaParams::default(), AckCounting::PerAck);
        let mut w = win(10, 100 * MSS);
        ack(&mut h, &mut w, 250);
        assert_eq!(w.cwnd, 100 * MSS, "clamped to ssthresh");
        let mut w = win(10, u64::MAX);
        for _ in 0..100 {
            ack(&mut h, &mut w, 250);
        }
        assert_eq!(w.cwnd, 65535 * MSS, "the module's snd_cwnd_clamp");
    }

    #[test]
    fn the_integer_part_of_rho_is_capped_at_16_in_slow_start() {
        // srtt 10 s: rho = 400; 2^rho is computed as 2^16 (a shift by 400 would not exist),
        // and the step lands on the clamp.
        let mut h = Hybla::new(HyblaParams::default(), AckCounting::PerAck);
        let mut w = win(10, u64::MAX);
        ack(&mut h, &mut w, 10_000);
        assert_eq!(h.rho().0, 400);
        assert_eq!(w.cwnd, 65535 * MSS);
    }

    #[test]
    fn fractional_rho_uses_the_2_pow_k_over_8_table() {
        // srtt 262.5 ms: rho_3ls = 84, rho = 10 + 4/8: 2^10·181/128 − 1 = 1447 packets + 0 cents
        // (1024·181 − 128 = 185216 = 1447·128).
        let mut h = Hybla::new(HyblaParams::default(), AckCounting::PerAck);
        let mut w = win(10, u64::MAX);
        ack_srtt(&mut h, &mut w, SimDuration::from_micros(262_500));
        assert_eq!(w.cwnd, (10 + 1447) * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_rho_squared_over_cwnd_keeping_fractions() {
        // rho = 10, cwnd 1000: 100/1000 packet per ACK = 12 cents (12800/1000); 128 cents
        // make a packet, so 11 ACKs give one packet (132 cents) and keep 4.
        let mut h = Hybla::new(HyblaParams::default(), AckCounting::PerAck);
        let mut w = win(1000, 10 * MSS);
        for _ in 0..10 {
            ack(&mut h, &mut w, 250);
        }
        assert_eq!(w.cwnd, 1000 * MSS);
        ack(&mut h, &mut w, 250);
        assert_eq!(w.cwnd, 1001 * MSS);
        assert_eq!(h.vars()[1], ("snd_cwnd_cents", 4.0));
    }

    #[test]
    fn outside_open_growth_is_renos() {
        let mut h = Hybla::new(HyblaParams::default(), AckCounting::PerAck);
        let mut w = win(10, u64::MAX);
        h.set_state(&mut w, SimTime::ZERO, CaState::Open, CaState::Loss);
        ack(&mut h, &mut w, 250);
        assert_eq!(w.cwnd, 11 * MSS, "Reno slow start: one MSS per ACK");
    }
}
