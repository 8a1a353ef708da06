//! BIC (Binary Increase Congestion control), as the Linux module `net/ipv4/tcp_bic.c`
//! implements it (Xu, Harfoush, Rhee, INFOCOM 2004), re-implemented from its description.
//!
//! Below `low_window` (14) packets BIC is Reno (halve on loss, +1 per RTT). Above it, after a
//! loss at `W_max` the window is cut to `beta·cwnd` (`beta = 819/1024`) and grows in a binary
//! search toward `W_max`: by `(W_max − cwnd)/B` packets per RTT (`BICTCP_B = 4`: the kernel
//! moves to `(max + min)/4`-spaced points, so each RTT closes a quarter of the distance, not
//! the half of the paper's pure bisection), at most `max_increment` (16) per RTT when far, and
//! `B/smooth_part` (4/20) when within `B` packets; past `W_max` it probes slowly, then by up
//! to `max_increment` per RTT ("max probing"). Fast convergence lowers `W_max` to
//! `cwnd·(1 + beta)/2` when a loss comes below the previous `W_max`. The per-RTT increments
//! are spread over the ACKs of a window through `cnt` (one packet per `cnt` ACKs), corrected by
//! the kernel's packets-per-ACK estimate `delayed_ack` (a 15/16 moving average, scaled by 16,
//! starting at 2 packets per ACK). Congestion avoidance counts ACKs, slow start packets
//! acknowledged (`tcp_slow_start`), as the kernel does; the cubic function is re-evaluated at
//! most every `HZ/32` (31 ms) while cwnd is unchanged; entering Loss clears the state. While no
//! `W_max` is known (before the first loss, and after a timeout cleared it) the increase is at
//! least 5 % of the window per RTT (`cnt` at most 20), as in the kernel, so a large window is
//! not held to `max_increment` packets per RTT.
//!
//! Simplified: no `tcp_is_cwnd_limited` check, the module's `initial_ssthresh` is not applied
//! (the sender's `initial_ssthresh` is), jiffies are milliseconds (HZ = 1000).
//!
//! Maturity: unit-tested against the published constants (the increment bounds and the search
//! step); not yet validated against the kernel.

use super::*;

/// BIC's parameters (the module's parameters of the same names).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BicParams {
    /// Multiplicative decrease factor; the kernel's `beta/1024` with `beta = round(·1024)`.
    pub beta: f64,
    pub fast_convergence: bool,
    /// The largest increase per RTT in the binary search, packets.
    pub max_increment: u32,
    /// Below this window (packets) BIC behaves as Reno.
    pub low_window: u32,
    /// RTTs spent going the last `B` packets to `W_max` (`cnt = cwnd·smooth_part/B`).
    pub smooth_part: u32,
}

impl Default for BicParams {
    fn default() -> Self {
        BicParams {
            beta: 819.0 / 1024.0,
            fast_convergence: true,
            max_increment: 16,
            low_window: 14,
            smooth_part: 20,
        }
    }
}

impl CcParams for BicParams {
    const NAME: &'static str = "bic";
    fn build(&self, _counting: AckCounting) -> Box<dyn CongestionControl> {
        Box::new(Bic::new(*self))
    }
}

const BICTCP_BETA_SCALE: u32 = 1024;
/// The binary search goes to points `(max + min)/B`-spaced.
const BICTCP_B: u32 = 4;
const ACK_RATIO_SHIFT: u32 = 4;
const HZ: u32 = 1000;

/// The kernel's `struct bictcp` plus the socket's `snd_cwnd_cnt`.
#[derive(Clone, Debug, PartialEq)]
struct State {
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    /// Jiffies (ms).
    last_time: u32,
    epoch_start: Option<u32>,
    /// Packets per ACK, scaled by 16.
    delayed_ack: u32,
    snd_cwnd_cnt: u32,
}

impl State {
    fn reset() -> State {
        State {
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            epoch_start: None,
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            snd_cwnd_cnt: 0,
        }
    }
}

pub struct Bic {
    p: BicParams,
    beta: u32,
    st: State,
    /// Time of the last ACK (input, not state).
    now: SimTime,
}

impl Bic {
    pub fn new(p: BicParams) -> Bic {
        Bic {
            beta: ((p.beta * 1024.0).round() as u32).clamp(1, 1023),
            p,
            st: State::reset(),
            now: SimTime::ZERO,
        }
    }

    fn jiffies(&self) -> u32 {
        (self.now.as_nanos() / 1_000_000) as u32
    }

    /// `bictcp_update`: how many ACKs per one-packet increase.
    fn update(&mut self, cwnd: u32) {
        let jiffies = self.jiffies();
        let p = self.p;
        let s = &mut self.st;
        if s.last_cwnd == cwnd && jiffies.wrapping_sub(s.last_time) as i32 <= (HZ / 32) as i32 {
            return;
        }
        s.last_cwnd = cwnd;
        s.last_time = jiffies;
        s.epoch_start.get_or_insert(jiffies);
        if cwnd <= p.low_window {
            s.cnt = cwnd;
            return;
        }
        let (b, max_inc, smooth) = (BICTCP_B, p.max_increment, p.smooth_part);
        s.cnt = if cwnd < s.last_max_cwnd {
            // Binary increase toward W_max.
            let dist = (s.last_max_cwnd - cwnd) / b;
            if dist > max_inc {
                cwnd / max_inc
            } else if dist <= 1 {
                cwnd * smooth / b
            } else {
                cwnd / dist
            }
        } else if cwnd < s.last_max_cwnd + b {
            // Just past W_max: slow.
            cwnd * smooth / b
        } else if cwnd < s.last_max_cwnd + max_inc * (b - 1) {
            cwnd * (b - 1) / (cwnd - s.last_max_cwnd)
        } else {
            // Max probing: linear.
            cwnd / max_inc
        };
        // No loss seen yet, or none since a timeout cleared the state: at least 5 % per RTT
        // (one packet per 20 ACK-units), whatever max_increment would allow.
        if s.last_max_cwnd == 0 {
            s.cnt = s.cnt.min(20);
        }
        s.cnt = ((s.cnt << ACK_RATIO_SHIFT) / s.delayed_ack.max(1)).max(1);
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        BicParams::NAME
    }
    fn ssthresh(&mut self, w: &Window, _flight_size: u64) -> u64 {
        let cwnd = (w.cwnd / w.mss) as u32;
        let s = &mut self.st;
        s.epoch_start = None;
        s.snd_cwnd_cnt = 0;
        s.last_max_cwnd = if cwnd < s.last_max_cwnd && self.p.fast_convergence {
            cwnd * (BICTCP_BETA_SCALE + self.beta) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };
        let pkts = if cwnd <= self.p.low_window {
            (cwnd >> 1).max(2)
        } else {
            (cwnd * self.beta / BICTCP_BETA_SCALE).max(2)
        };
        pkts as u64 * w.mss
    }
    fn cong_avoid(&mut self, w: &mut Window, acked: u64) {
        if w.cwnd < w.ssthresh {
            // tcp_slow_start: packets acknowledged, up to ssthresh.
            let pkts = acked.div_ceil(w.mss).max(1);
            w.cwnd = (w.cwnd + pkts * w.mss).min(w.ssthresh);
            return;
        }
        self.update((w.cwnd / w.mss) as u32);
        // tcp_cong_avoid_ai(tp, cnt, 1)
        let s = &mut self.st;
        let cnt = s.cnt.max(1);
        if s.snd_cwnd_cnt >= cnt {
            s.snd_cwnd_cnt = 0;
            w.cwnd += w.mss;
        }
        s.snd_cwnd_cnt += 1;
        if s.snd_cwnd_cnt >= cnt {
            let delta = s.snd_cwnd_cnt / cnt;
            s.snd_cwnd_cnt -= delta * cnt;
            w.cwnd += delta as u64 * w.mss;
        }
    }
    fn pkts_acked(&mut self, w: &mut Window, a: &AckSample) {
        self.now = a.now;
        // bictcp_acked: the packets-per-ACK average, in the Open state.
        if a.acked > 0 && a.state == CaState::Open {
            let pkts = a.acked.div_ceil(w.mss) as u32;
            let s = &mut self.st;
            s.delayed_ack = (s.delayed_ack + pkts).saturating_sub(s.delayed_ack >> ACK_RATIO_SHIFT);
        }
    }
    fn set_state(&mut self, _w: &mut Window, now: SimTime, _from: CaState, to: CaState) {
        self.now = now;
        if to == CaState::Loss {
            self.st = State::reset();
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
            ("last_max_cwnd_segments", s.last_max_cwnd as f64),
            ("cnt", s.cnt as f64),
            (
                "epoch_start_s",
                s.epoch_start.map_or(f64::NAN, |j| j as f64 / HZ as f64),
            ),
            ("delayed_ack_x16", s.delayed_ack as f64),
            ("snd_cwnd_cnt", s.snd_cwnd_cnt as f64),
        ]
    }
}

/// BIC's configuration in a scenario (docs/scenario.md, "Congestion control").
#[cfg(feature = "serde")]
pub use schema::BicConfig;

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::cc::schema::prelude::*;

    cc_fields! {
        /// `cc = { algo = "bic", ... }`: the module's parameters of the same names.
        pub struct BicConfig {
            /// Multiplicative decrease factor (default 819/1024).
            beta: f64,
            /// Fast convergence (default on).
            fast_convergence: bool,
            /// The largest increase per RTT in the binary search, packets (default 16).
            max_increment: i64,
            /// Below this window (packets) BIC behaves as Reno (default 14).
            low_window: i64,
            /// RTTs spent going the last packets to `W_max` (default 20).
            smooth_part: i64,
        }
    }

    impl CcSchema for BicConfig {
        type Params = BicParams;
        fn params(&self, at: &str) -> Result<BicParams> {
            let f = |name: &str| format!("{at}.{name}");
            if let Some(b) = self.beta {
                check(
                    b.is_finite() && b > 0.0 && b < 1.0,
                    f("beta"),
                    format!("must be in (0, 1), got {b}"),
                )?;
                let scaled = (b * 1024.0).round();
                check(
                    (1.0..=1023.0).contains(&scaled),
                    f("beta"),
                    format!("must be in [1/1024, 1023/1024] for the kernel's beta/1024, got {b}"),
                )?;
            }
            for (name, v) in [
                ("max_increment", self.max_increment),
                ("low_window", self.low_window),
                ("smooth_part", self.smooth_part),
            ] {
                if let Some(v) = v {
                    positive_int(v, &f(name), 1_000_000)?;
                }
            }
            let d = BicParams::default();
            Ok(BicParams {
                beta: self.beta.unwrap_or(d.beta),
                fast_convergence: self.fast_convergence.unwrap_or(d.fast_convergence),
                max_increment: self.max_increment.map_or(d.max_increment, |v| v as u32),
                low_window: self.low_window.map_or(d.low_window, |v| v as u32),
                smooth_part: self.smooth_part.map_or(d.smooth_part, |v| v as u32),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn var(c: &Bic, name: &str) -> f64 {
        c.vars().into_iter().find(|(n, _)| *n == name).unwrap().1
    }

    /// One RTT of delayed ACKs (two packets each, the ratio the module starts from), every
    /// ACK `gap` apart; returns the growth in packets.
    fn one_rtt(c: &mut Bic, w: &mut Window, t: &mut SimTime, gap: SimDuration) -> u64 {
        let before = w.cwnd;
        let acks = (w.cwnd / MSS) / 2;
        for _ in 0..acks {
            *t += gap;
            let a = AckSample {
                now: *t,
                acked: 2 * MSS,
                dupack: false,
                rtt: None,
                ca_rtt: None,
                srtt: None,
                snd_una: 0,
                snd_max: 0,
                state: CaState::Open,
            };
            c.pkts_acked(w, &a);
            c.cong_avoid(w, 2 * MSS);
        }
        (w.cwnd - before) / MSS
    }

    /// After a loss at `w_max` packets, at `cwnd` packets in congestion avoidance.
    fn after_loss(w_max: u64, cwnd: u64) -> (Bic, Window) {
        let mut c = Bic::new(BicParams::default());
        let w = Window {
            cwnd: w_max * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
        };
        c.ssthresh(&w, 0);
        let w = Window {
            cwnd: cwnd * MSS,
            ssthresh: cwnd * MSS,
            mss: MSS,
        };
        (c, w)
    }

    #[test]
    fn ssthresh_is_beta_819_over_1024_above_low_window_and_half_below() {
        let mut c = Bic::new(BicParams::default());
        let w = |p: u64| Window {
            cwnd: p * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
        };
        assert_eq!(c.ssthresh(&w(100), 0), 79 * MSS, "100·819/1024 = 79.98");
        assert_eq!(c.ssthresh(&w(14), 0), 7 * MSS, "low_window: Reno halving");
        assert_eq!(c.ssthresh(&w(3), 0), 2 * MSS);
    }

    #[test]
    fn increments_are_bounded_by_max_increment_per_rtt() {
        // W_max 1000, cwnd 200: the distance/4 = 200 is far above max_increment = 16.
        let (mut c, mut w) = after_loss(1000, 200);
        let mut t = SimTime::from_millis(1000);
        // cnt = ⌊cwnd/16⌋ rounds down, so a window can gain one packet more than 16.
        for _ in 0..5 {
            let g = one_rtt(&mut c, &mut w, &mut t, SimDuration::from_millis(1));
            assert!((15..=17).contains(&g), "grew {g} packets in one RTT");
        }
        // A smaller max_increment binds lower.
        let mut c = Bic::new(BicParams {
            max_increment: 4,
            ..BicParams::default()
        });
        c.ssthresh(
            &Window {
                cwnd: 1000 * MSS,
                ssthresh: u64::MAX,
                mss: MSS,
            },
            0,
        );
        let mut w = Window {
            cwnd: 200 * MSS,
            ssthresh: 200 * MSS,
            mss: MSS,
        };
        let g = one_rtt(&mut c, &mut w, &mut t, SimDuration::from_millis(1));
        assert!(
            (3..=5).contains(&g),
            "grew {g} packets with max_increment 4"
        );
    }

    #[test]
    fn binary_search_closes_a_quarter_of_the_distance_to_w_max_per_rtt_bictcp_b_4() {
        // W_max 150, cwnd 100: distance 50, step 50/4 = 12; then 38/4 = 9; then 29/4 = 7 ...
        let (mut c, mut w) = after_loss(150, 100);
        assert_eq!(var(&c, "last_max_cwnd_segments"), 150.0);
        let mut t = SimTime::from_millis(1000);
        // RTT 100 ms: ACKs 2 ms apart are more than HZ/32 apart only in aggregate, so `cnt`
        // is re-evaluated whenever cwnd changes, as in the kernel.
        for _ in 0..4 {
            let dist = 150 - w.cwnd / MSS;
            let g = one_rtt(&mut c, &mut w, &mut t, SimDuration::from_millis(2));
            let step = dist / BICTCP_B as u64;
            assert!(
                g + 1 >= step && g <= step + 1,
                "distance {dist}: grew {g}, the search step is {step}"
            );
        }
        assert!(w.cwnd / MSS < 150, "W_max is approached, not passed");
    }

    #[test]
    fn without_a_w_max_a_large_window_grows_5_percent_per_rtt() {
        // No loss yet (W_max unknown), 1000 packets: cnt = min(1000/16, 20) = 20 packet-ACKs,
        // i.e. 50 packets per RTT of delayed ACKs, not max_increment's 16 (review finding).
        let mut c = Bic::new(BicParams::default());
        let mut w = Window {
            cwnd: 1000 * MSS,
            ssthresh: 1000 * MSS,
            mss: MSS,
        };
        let mut t = SimTime::from_millis(1000);
        let g = one_rtt(&mut c, &mut w, &mut t, SimDuration::from_millis(1));
        assert!((50..=53).contains(&g), "grew {g} packets in one RTT");
        // Below 320 packets the cap does not bind: 200/16 = 12 < 20, so 16 per RTT.
        let mut c = Bic::new(BicParams::default());
        let mut w = Window {
            cwnd: 200 * MSS,
            ssthresh: 200 * MSS,
            mss: MSS,
        };
        let g = one_rtt(&mut c, &mut w, &mut t, SimDuration::from_millis(1));
        assert!((15..=17).contains(&g), "grew {g} packets in one RTT");
    }

    #[test]
    fn fast_convergence_lowers_w_max_below_the_previous_one() {
        let mut c = Bic::new(BicParams::default());
        let w = |p: u64| Window {
            cwnd: p * MSS,
            ssthresh: u64::MAX,
            mss: MSS,
        };
        c.ssthresh(&w(100), 0);
        c.ssthresh(&w(90), 0);
        assert_eq!(
            var(&c, "last_max_cwnd_segments"),
            (90 * (1024 + 819) / 2048) as f64
        );
    }
}
