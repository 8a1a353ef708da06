//! The congestion-control modules ns-2.35 runs inside `Agent/TCP/Linux` (`select_ca`), as
//! ns-2.35 ships them in `tcp/linux/`: `tcp_cong.c` (Reno, `tcp_slow_start` with
//! `sysctl_tcp_abc` = 1 from `ns-linux-param.c`), `src/tcp_cubic.c` (CUBIC 2.1, from Linux
//! 2.6.22) and `src/tcp_hybla.c` (from Linux 2.6.22). They work on the agent's Linux socket
//! state ([`Sock`]) in packets, with `jiffies` in milliseconds (`JIFFY_RATIO` = `HZ` = 1000)
//! and ns-2's 64-bit `u32` (`unsigned long`). Re-implemented from their description; names
//! are the modules'.
//!
//! These differ from spikelab's own [`crate::cc`] algorithms, which follow RFC 9438 and
//! today's kernel:
//! * CUBIC 2.1: β = 819/1024, `bic_scale` 41, fast convergence, TCP friendliness with
//!   `beta_scale` = 8·(1024 + β)/3/(1024 − β) = 23, no HyStart; the cubic's K and target in
//!   1/1024 s from jiffies; `cnt = 50` (growth of one packet per 50 ACKs) while `loss_cwnd` is
//!   0, i.e. before the first loss and again after every timeout (`bictcp_state` resets on
//!   Loss); no `delay_min` without timestamps (so no `max_increment` bound); a per-ACK step
//!   (`snd_cwnd_cnt` counts ACKs, not packets), scaled by 16 over the measured packets per
//!   ACK (`delayed_ack`, an integer EWMA of 1/16 kept ×16, tracked in Open only: it starts at
//!   32 and settles at 31 with one packet per ACK and at 32 with two, so it hardly tells
//!   delayed ACKs apart and the ACKs per step are about halved either way). No undo (the
//!   agent never calls `undo_cwnd`).
//! * Hybla: rho = srtt/rtt0 from the agent's srtt in ticks (`tcpTick_`) << 3 over `rtt0` in
//!   jiffies (25), at least 1 (rho·8 ≥ 8), no cap on `1 << rho`; `hybla_init` (on the first
//!   ACK) sets cwnd to rho and lifts the clamp to 65535; on a loss `tcp_reno_ssthresh`
//!   (cwnd/2, at least 2) and `tcp_reno_min_cwnd` (ssthresh/2), which the agent applies as
//!   the cwnd of fast recovery: a quarter of the window.
//! * `tcp_slow_start` with `sysctl_tcp_abc` = 1: an ACK grows cwnd by one packet if it
//!   acknowledged at least one full packet since the last growth (`bytes_acked ≥ mss`), one
//!   whatever it covers; Reno's congestion avoidance counts bytes (one packet per cwnd of
//!   bytes acknowledged).

use crate::cc::{CcParams, CubicParams, HyblaParams, RenoParams};

/// The module state `Agent/TCP/Linux` shares with its congestion control (`struct tcp_sock`'s
/// fields that ns-2 keeps), in packets.
#[derive(Clone, Debug, Default)]
pub struct Sock {
    pub snd_cwnd: u64,
    pub snd_ssthresh: u64,
    pub snd_cwnd_cnt: u64,
    pub snd_cwnd_clamp: u64,
    /// Bytes acknowledged since the last slow-start step (`bytes_acked`).
    pub bytes_acked: u64,
    pub mss_cache: u64,
    /// 8·srtt in the agent's ticks (`linux_.srtt = t_srtt_`).
    pub srtt: u64,
    pub ca_state: CaStateLx,
    /// `tcp_time_stamp`: the last ACK's arrival in ms (`trunc(now · 1000)`).
    pub jiffies: u64,
}

/// `enum tcp_ca_state` as the agent uses it (no Disorder, no CWR).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum CaStateLx {
    #[default]
    Open,
    Recovery,
    Loss,
}

/// `HZ`, jiffies per second.
const HZ: u64 = 1000;

/// `tcp_is_cwnd_limited(sk, in_flight)`: `in_flight ≥ snd_cwnd`.
fn cwnd_limited(tp: &Sock, in_flight: i64) -> bool {
    in_flight >= tp.snd_cwnd as i64
}

/// `tcp_slow_start` with `sysctl_tcp_abc` = 1 and no `sysctl_tcp_max_ssthresh`.
fn tcp_slow_start(tp: &mut Sock) {
    if tp.bytes_acked < tp.mss_cache {
        return;
    }
    let cnt = tp.snd_cwnd;
    tp.bytes_acked = 0;
    tp.snd_cwnd_cnt += cnt;
    while tp.snd_cwnd_cnt >= tp.snd_cwnd {
        tp.snd_cwnd_cnt -= tp.snd_cwnd;
        if tp.snd_cwnd < tp.snd_cwnd_clamp {
            tp.snd_cwnd += 1;
        }
    }
}

/// `tcp_reno_cong_avoid` with `sysctl_tcp_abc` = 1.
fn tcp_reno_cong_avoid(tp: &mut Sock, in_flight: i64) {
    if !cwnd_limited(tp, in_flight) {
        return;
    }
    if tp.snd_cwnd <= tp.snd_ssthresh {
        tcp_slow_start(tp);
    } else if tp.bytes_acked >= tp.snd_cwnd * tp.mss_cache {
        tp.bytes_acked -= tp.snd_cwnd * tp.mss_cache;
        if tp.snd_cwnd < tp.snd_cwnd_clamp {
            tp.snd_cwnd += 1;
        }
    }
}

fn tcp_reno_ssthresh(tp: &Sock) -> u64 {
    (tp.snd_cwnd >> 1).max(2)
}

/// The module `select_ca` installed.
#[derive(Clone, Debug)]
pub enum LinuxCc {
    Cubic(Bictcp),
    Hybla(Hybla),
    Reno,
}

impl LinuxCc {
    pub fn name(&self) -> &'static str {
        match self {
            LinuxCc::Cubic(_) => CubicParams::NAME,
            LinuxCc::Hybla(_) => HyblaParams::NAME,
            LinuxCc::Reno => RenoParams::NAME,
        }
    }
    /// `init`, on the first ACK the agent processes.
    pub fn init(&mut self, tp: &mut Sock) {
        match self {
            LinuxCc::Cubic(c) => c.reset(),
            LinuxCc::Hybla(h) => h.init(tp),
            LinuxCc::Reno => {}
        }
    }
    /// `ssthresh`.
    pub fn ssthresh(&mut self, tp: &Sock) -> u64 {
        match self {
            LinuxCc::Cubic(c) => c.recalc_ssthresh(tp),
            LinuxCc::Hybla(_) | LinuxCc::Reno => tcp_reno_ssthresh(tp),
        }
    }
    /// `min_cwnd`, when the module has one.
    pub fn min_cwnd(&self, tp: &Sock) -> Option<u64> {
        match self {
            LinuxCc::Cubic(_) => None,
            LinuxCc::Hybla(_) | LinuxCc::Reno => Some(tp.snd_ssthresh / 2),
        }
    }
    /// `cong_avoid(sk, ack, rtt, in_flight, good)`.
    pub fn cong_avoid(&mut self, tp: &mut Sock, in_flight: i64) {
        match self {
            LinuxCc::Cubic(c) => c.cong_avoid(tp, in_flight),
            LinuxCc::Hybla(h) => h.cong_avoid(tp, in_flight),
            LinuxCc::Reno => tcp_reno_cong_avoid(tp, in_flight),
        }
    }
    /// `set_state`, before the agent changes `icsk_ca_state`.
    pub fn set_state(&mut self, new: CaStateLx) {
        match self {
            LinuxCc::Cubic(c) => {
                if new == CaStateLx::Loss {
                    c.reset()
                }
            }
            LinuxCc::Hybla(h) => h.hybla_en = new == CaStateLx::Open,
            LinuxCc::Reno => {}
        }
    }
    /// `pkts_acked(sk, cnt, last)`: `cnt` packets newly acknowledged.
    pub fn pkts_acked(&mut self, tp: &Sock, cnt: u64) {
        if let LinuxCc::Cubic(c) = self {
            c.acked(tp, cnt)
        }
    }
}

// ---- CUBIC 2.1 ---------------------------------------------------------------------------

const BICTCP_BETA_SCALE: u64 = 1024;
const BICTCP_HZ: u32 = 10;
const BETA: u64 = 819;
const BIC_SCALE: u64 = 41;
const ACK_RATIO_SHIFT: u32 = 4;
/// `cube_rtt_scale = bic_scale · 10`.
const CUBE_RTT_SCALE: u64 = BIC_SCALE * 10;
/// `beta_scale = 8·(1024 + beta)/3/(1024 − beta)`, integer steps: 23.
const BETA_SCALE: u64 = 8 * (BICTCP_BETA_SCALE + BETA) / 3 / (BICTCP_BETA_SCALE - BETA);
/// `cube_factor = 2^40 / (bic_scale · 10)`.
const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE * 10);

/// `struct bictcp`.
#[derive(Clone, Debug, Default)]
pub struct Bictcp {
    cnt: u64,
    last_max_cwnd: u64,
    loss_cwnd: u64,
    last_cwnd: u64,
    last_time: u64,
    bic_origin_point: u64,
    bic_k: u64,
    epoch_start: u64,
    ack_cnt: u64,
    tcp_cwnd: u64,
    delayed_ack: u64,
}

/// `fls64`: the position of the highest bit set (0 for 0).
fn fls64(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// `cubic_root`: a table lookup and one Newton-Raphson step, as the module computes it.
fn cubic_root(a: u64) -> u64 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164,
        168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209,
        211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240,
        242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    let b = fls64(a);
    if b < 7 {
        return (V[a as usize] as u64 + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let mut x = ((V[shift] as u64 + 10) << b) >> 6;
    x = 2 * x + div64_64(a, x.wrapping_mul(x.wrapping_sub(1)));
    (x * 341) >> 10
}

/// ns-2's `div64_64`: a 64-bit division through a 32-bit divisor.
fn div64_64(mut dividend: u64, divisor: u64) -> u64 {
    let high = divisor >> 32;
    let d = if high != 0 {
        let shift = fls64(high);
        dividend >>= shift;
        (divisor >> shift) as u32
    } else {
        divisor as u32
    };
    dividend / d as u64
}

impl Bictcp {
    /// `bictcp_reset`.
    fn reset(&mut self) {
        *self = Bictcp {
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            ..Bictcp::default()
        };
    }

    /// `bictcp_update`: `cnt`, the ACKs per one packet of growth.
    fn update(&mut self, cwnd: u64, now: u64) {
        self.ack_cnt += 1;
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i64) <= (HZ / 32) as i64 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;
        if self.epoch_start == 0 {
            self.epoch_start = now;
            self.ack_cnt = 1;
            self.tcp_cwnd = cwnd;
            if self.last_max_cwnd <= cwnd {
                self.bic_k = 0;
                self.bic_origin_point = cwnd;
            } else {
                self.bic_k = cubic_root(CUBE_FACTOR.wrapping_mul(self.last_max_cwnd - cwnd));
                self.bic_origin_point = self.last_max_cwnd;
            }
        }
        // No delay_min without timestamps.
        let t = (now.wrapping_sub(self.epoch_start) << BICTCP_HZ) / HZ;
        let offs = t.abs_diff(self.bic_k);
        let delta = CUBE_RTT_SCALE
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            >> (10 + 3 * BICTCP_HZ);
        let bic_target = if t < self.bic_k {
            self.bic_origin_point.wrapping_sub(delta)
        } else {
            self.bic_origin_point.wrapping_add(delta)
        };
        self.cnt = if bic_target > cwnd {
            cwnd / (bic_target - cwnd)
        } else {
            100 * cwnd
        };
        if self.loss_cwnd == 0 {
            self.cnt = 50;
        }
        // TCP friendliness.
        let delta = (cwnd * BETA_SCALE) >> 3;
        while self.ack_cnt > delta {
            self.ack_cnt -= delta;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            if self.cnt > max_cnt {
                self.cnt = max_cnt;
            }
        }
        self.cnt = (self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack;
        if self.cnt == 0 {
            self.cnt = 1;
        }
    }

    /// `bictcp_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut Sock, in_flight: i64) {
        if !cwnd_limited(tp, in_flight) {
            return;
        }
        if tp.snd_cwnd <= tp.snd_ssthresh {
            tcp_slow_start(tp);
        } else {
            self.update(tp.snd_cwnd, tp.jiffies);
            if tp.snd_cwnd_cnt >= self.cnt {
                if tp.snd_cwnd < tp.snd_cwnd_clamp {
                    tp.snd_cwnd += 1;
                }
                tp.snd_cwnd_cnt = 0;
            } else {
                tp.snd_cwnd_cnt += 1;
            }
        }
    }

    /// `bictcp_recalc_ssthresh`.
    fn recalc_ssthresh(&mut self, tp: &Sock) -> u64 {
        self.epoch_start = 0;
        if tp.snd_cwnd < self.last_max_cwnd {
            self.last_max_cwnd =
                (tp.snd_cwnd * (BICTCP_BETA_SCALE + BETA)) / (2 * BICTCP_BETA_SCALE);
        } else {
            self.last_max_cwnd = tp.snd_cwnd;
        }
        self.loss_cwnd = tp.snd_cwnd;
        ((tp.snd_cwnd * BETA) / BICTCP_BETA_SCALE).max(2)
    }

    /// `bictcp_acked`: packets per ACK, an EWMA of 1/16, in Open only.
    fn acked(&mut self, tp: &Sock, cnt: u64) {
        if cnt > 0 && tp.ca_state == CaStateLx::Open {
            let cnt = cnt.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT);
            self.delayed_ack = self.delayed_ack.wrapping_add(cnt);
        }
    }

    /// (cnt, last_max_cwnd, loss_cwnd, delayed_ack), for tests.
    #[cfg(test)]
    pub(crate) fn vars(&self) -> (u64, u64, u64, u64) {
        (
            self.cnt,
            self.last_max_cwnd,
            self.loss_cwnd,
            self.delayed_ack,
        )
    }
}

// ---- Hybla -------------------------------------------------------------------------------

/// `struct hybla`, with the module parameter `rtt0` (ms, as jiffies).
#[derive(Clone, Debug)]
pub struct Hybla {
    rtt0: u64,
    hybla_en: bool,
    snd_cwnd_cents: u64,
    rho: u64,
    rho2: u64,
    rho_3ls: u64,
    rho2_7ls: u64,
    minrtt: u64,
}

impl Hybla {
    /// `rtt0` in ms (the module's default is 25).
    pub fn new(rtt0_ms: u64) -> Hybla {
        Hybla {
            rtt0: rtt0_ms.max(1),
            hybla_en: true,
            snd_cwnd_cents: 0,
            rho: 0,
            rho2: 0,
            rho_3ls: 0,
            rho2_7ls: 0,
            minrtt: 0,
        }
    }

    /// rho and rho² (integer parts).
    pub fn rho(&self) -> (u64, u64) {
        (self.rho, self.rho2)
    }

    /// `hybla_recalc_param`.
    fn recalc(&mut self, tp: &Sock) {
        self.rho_3ls = (tp.srtt / self.rtt0).max(8);
        self.rho = self.rho_3ls >> 3;
        self.rho2_7ls = (self.rho_3ls * self.rho_3ls) << 1;
        self.rho2 = self.rho2_7ls >> 7;
    }

    /// `hybla_init`.
    fn init(&mut self, tp: &mut Sock) {
        self.rho = 0;
        self.rho2 = 0;
        self.rho_3ls = 0;
        self.rho2_7ls = 0;
        self.snd_cwnd_cents = 0;
        self.hybla_en = true;
        tp.snd_cwnd = 2;
        tp.snd_cwnd_clamp = 65535;
        self.recalc(tp);
        self.minrtt = tp.srtt;
        tp.snd_cwnd = self.rho;
    }

    /// `hybla_fraction`: 128·2^(k/8) for k < 8.
    fn fraction(odds: u64) -> u64 {
        const F: [u64; 8] = [128, 139, 152, 165, 181, 197, 215, 234];
        F.get(odds as usize).copied().unwrap_or(128)
    }

    /// `hybla_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut Sock, in_flight: i64) {
        if tp.srtt < self.minrtt {
            self.recalc(tp);
            self.minrtt = tp.srtt;
        }
        if !cwnd_limited(tp, in_flight) {
            return;
        }
        if !self.hybla_en {
            return tcp_reno_cong_avoid(tp, in_flight);
        }
        if self.rho == 0 {
            self.recalc(tp);
        }
        let rho_fractions = self.rho_3ls - (self.rho << 3);
        let slowstart = tp.snd_cwnd < tp.snd_ssthresh;
        let increment = if slowstart {
            // 2^rho − 1 in 1/128 packets (`1 << rho` is an int in the module).
            ((1u64 << self.rho.min(62)) * Self::fraction(rho_fractions)).wrapping_sub(128)
        } else {
            let inc = self.rho2_7ls / tp.snd_cwnd;
            if inc < 128 {
                tp.snd_cwnd_cnt += 1;
            }
            inc
        };
        let odd = increment % 128;
        tp.snd_cwnd += increment >> 7;
        self.snd_cwnd_cents += odd;
        while self.snd_cwnd_cents >= 128 {
            tp.snd_cwnd += 1;
            self.snd_cwnd_cents -= 128;
            tp.snd_cwnd_cnt = 0;
        }
        if slowstart {
            tp.snd_cwnd = tp.snd_cwnd.min(tp.snd_ssthresh);
        }
        tp.snd_cwnd = tp.snd_cwnd.min(tp.snd_cwnd_clamp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(cwnd: u64, ssthresh: u64) -> Sock {
        Sock {
            snd_cwnd: cwnd,
            snd_ssthresh: ssthresh,
            snd_cwnd_clamp: 20,
            mss_cache: 1000,
            ..Sock::default()
        }
    }

    #[test]
    fn reno_module_halves_to_a_quarter_and_counts_bytes_in_congestion_avoidance() {
        // tcp_cong.c's reno: ssthresh cwnd/2 (at least 2), the agent's recovery cwnd
        // ssthresh/2 (tcp_reno_min_cwnd), slow start one packet per ACK of at least one MSS,
        // congestion avoidance one packet per cwnd of bytes acknowledged (tcp_abc 1).
        let mut cc = LinuxCc::Reno;
        assert_eq!(cc.name(), RenoParams::NAME);
        let tp = sock(20, 30);
        assert_eq!(cc.ssthresh(&tp), 10);
        assert_eq!(cc.ssthresh(&sock(3, 30)), 2);
        assert_eq!(cc.min_cwnd(&sock(20, 10)), Some(5));
        let mut tp = sock(4, 8);
        tp.bytes_acked = 2000; // a delayed ACK of two packets: one packet of growth
        cc.cong_avoid(&mut tp, 4);
        assert_eq!((tp.snd_cwnd, tp.bytes_acked), (5, 0));
        tp.bytes_acked = 500; // less than an MSS: none
        cc.cong_avoid(&mut tp, 5);
        assert_eq!(tp.snd_cwnd, 5);
        let mut tp = sock(10, 8);
        for _ in 0..4 {
            tp.bytes_acked += 2000;
            cc.cong_avoid(&mut tp, 10);
        }
        assert_eq!(tp.snd_cwnd, 10); // 8000 of 10 × 1000 bytes
        tp.bytes_acked += 2000;
        cc.cong_avoid(&mut tp, 10);
        assert_eq!((tp.snd_cwnd, tp.bytes_acked), (11, 0));
        // Not cwnd-limited: no growth.
        tp.bytes_acked = 20_000;
        cc.cong_avoid(&mut tp, 5);
        assert_eq!(tp.snd_cwnd, 11);
    }

    #[test]
    fn cubic_constants_are_the_modules() {
        assert_eq!(BETA_SCALE, 23);
        assert_eq!(CUBE_FACTOR, 2_681_735_677);
        // The cube root of 2^30·27 is 3·1024 within the table's 0.2 %.
        let r = cubic_root(27 << 30) as f64;
        assert!((r / 3072.0 - 1.0).abs() < 0.01, "{r}");
        assert_eq!(cubic_root(8), 2);
    }

    #[test]
    fn cubic_loss_keeps_819_of_1024_and_fast_convergence_lowers_wmax() {
        let mut c = Bictcp::default();
        c.reset();
        let tp = sock(20, 20);
        assert_eq!(c.recalc_ssthresh(&tp), 15); // 20·819/1024 = 15.99
        assert_eq!(c.vars().1, 20);
        let tp = sock(10, 15);
        c.recalc_ssthresh(&tp);
        // Below the last maximum: Wmax = 10·(1024 + 819)/2048 = 8.
        assert_eq!(c.vars().1, 8);
        assert_eq!(c.vars().2, 10);
    }

    #[test]
    fn cubic_grows_one_packet_per_50_acks_until_a_loss_and_counts_packets_per_ack() {
        let mut c = Bictcp::default();
        c.reset();
        let mut tp = sock(10, 5);
        tp.snd_cwnd_clamp = 100;
        tp.jiffies = 1000;
        // loss_cwnd = 0: cnt = 50, scaled by 16/delayed_ack (32 at reset: two per ACK) = 25.
        c.cong_avoid(&mut tp, 10);
        assert_eq!(c.vars().0, 25);
        // One packet per ACK measured (Open): the integer EWMA stops at 31 (31 >> 4 = 1: the
        // sample equals the estimate), so a step per ACK stays nearly halved (16/31).
        for _ in 0..200 {
            c.acked(&tp, 1);
        }
        assert_eq!(c.vars().3, 31);
        // Two per ACK (delayed ACKs) move it to 32 only: the estimate hardly tells them apart.
        for _ in 0..200 {
            c.acked(&tp, 2);
        }
        assert_eq!(c.vars().3, 32);
    }

    #[test]
    fn slow_start_grows_one_per_ack_of_a_full_packet_whatever_it_covers() {
        let mut tp = sock(4, 10);
        tp.bytes_acked = 2000; // a delayed ACK of two packets
        tcp_slow_start(&mut tp);
        assert_eq!(tp.snd_cwnd, 5);
        tcp_slow_start(&mut tp); // nothing acknowledged since
        assert_eq!(tp.snd_cwnd, 5);
    }

    #[test]
    fn hybla_rho_from_srtt_in_ticks_and_its_first_window() {
        // 160 ms in 1 ms ticks: srtt·8 = 1280; rho·8 = 1280/25 = 51, rho = 6.
        let mut h = Hybla::new(25);
        let mut tp = sock(2, 20);
        tp.srtt = 1280;
        h.init(&mut tp);
        assert_eq!(h.rho(), (6, 40));
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_clamp), (6, 65535));
        // Slow start: 2^6·165/128 − 1 ≈ 81 packets, held at ssthresh.
        tp.bytes_acked = 1000;
        h.cong_avoid(&mut tp, 6);
        assert_eq!(tp.snd_cwnd, 20);
        // Congestion avoidance: rho²·128/cwnd = 5202/20 = 260 → 2 packets and 4/128.
        h.cong_avoid(&mut tp, 20);
        assert_eq!(tp.snd_cwnd, 22);
        // The same 160 ms in 10 ms ticks: srtt·8 = 128, rho·8 = 5 → held at 8: rho = 1.
        let mut h = Hybla::new(25);
        let mut tp = sock(2, 20);
        tp.srtt = 128;
        h.init(&mut tp);
        assert_eq!(h.rho(), (1, 1));
        // A loss: ssthresh = cwnd/2, and fast recovery's cwnd a quarter.
        let mut tp = sock(40, 20);
        let mut cc = LinuxCc::Hybla(h);
        tp.snd_ssthresh = cc.ssthresh(&tp);
        assert_eq!((tp.snd_ssthresh, cc.min_cwnd(&tp)), (20, Some(10)));
    }
}
