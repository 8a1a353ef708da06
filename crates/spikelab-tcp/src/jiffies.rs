//! The kernel's timer clock: jiffies and the timer wheel (Linux `kernel/time/timer.c`).
//!
//! A TCP timer in Linux is armed for a whole number of jiffies (`usecs_to_jiffies` rounds
//! up) from the current jiffy, and the timer wheel files it in a level by how far away it is:
//! level 0 (1-jiffy buckets) below 63 jiffies, level 1 (8-jiffy buckets) below 504, level 2
//! (64) below 4032, and so on by factors of 8 (`LVL_START`, `LVL_CLK_SHIFT` = 3). The bucket
//! is the one after the expiry truncated to the level's granule (`calc_index`: `(expires >>
//! shift) + 1`), so the timer never fires early and fires up to one granule late: at
//! `CONFIG_HZ` = 250 a 372 ms RTO (93 jiffies, level 1) fires on the next 32 ms boundary after
//! 372 ms. Jiffies count here from time zero (a real host's tick phase is arbitrary).

use spikelab_core::{SimDuration, SimTime};

const NS: u64 = 1_000_000_000;

/// `a · b / NS`, rounded up or down; in u64 while the product fits (every simulated time
/// below 21 days at HZ 10000), which keeps this off the 128-bit division on every ACK.
fn mul_div(a: u64, b: u64, up: bool) -> u64 {
    match a.checked_mul(b) {
        Some(p) if up => p.div_ceil(NS),
        Some(p) => p / NS,
        None => {
            let p = a as u128 * b as u128;
            (if up {
                p.div_ceil(NS as u128)
            } else {
                p / NS as u128
            }) as u64
        }
    }
}

/// Whole jiffies covering `d` (Linux `usecs_to_jiffies`: rounded up).
#[inline]
pub fn ticks_ceil(d: SimDuration, hz: u32) -> u64 {
    match hz {
        // The common rates as constants: the divisions become multiplications (this runs
        // several times per ACK).
        250 => d.as_nanos().div_ceil(4_000_000),
        1000 => d.as_nanos().div_ceil(1_000_000),
        _ => mul_div(d.as_nanos(), hz as u64, true),
    }
}

/// When a timer armed at `now` for `delay` fires: exactly with `hz` = 0, else in whole
/// jiffies on the timer wheel.
#[inline]
pub fn timer_at(now: SimTime, delay: SimDuration, hz: u32) -> SimTime {
    fires_after(now, ticks_of(delay, hz), hz)
}

/// `d` in a clock's ticks: whole jiffies (rounded up, as `usecs_to_jiffies`) with `hz`,
/// nanoseconds with `hz` = 0 (exact timers).
#[inline]
pub fn ticks_of(d: SimDuration, hz: u32) -> u64 {
    match hz {
        0 => d.as_nanos(),
        hz => ticks_ceil(d, hz),
    }
}

/// The tick counter at `t` in the same ticks as [`ticks_of`].
#[inline]
pub fn tick_at(t: SimTime, hz: u32) -> u64 {
    match hz {
        0 => t.0,
        hz => jiffies_at(t, hz),
    }
}

/// When a timer armed at `now` for `ticks` (of [`ticks_of`]) fires.
#[inline]
pub fn fires_after(now: SimTime, ticks: u64, hz: u32) -> SimTime {
    match hz {
        0 => now + SimDuration(ticks),
        hz => timer_fires(now, ticks, hz),
    }
}

/// The jiffy counter at `t` (jiffies count from time zero).
#[inline]
pub fn jiffies_at(t: SimTime, hz: u32) -> u64 {
    match hz {
        250 => t.0 / 4_000_000,
        1000 => t.0 / 1_000_000,
        _ => mul_div(t.0, hz as u64, false),
    }
}

/// The duration of `ticks` jiffies, rounded down to the nanosecond (so [`ticks_ceil`] of it
/// gives `ticks` back).
pub fn ticks_duration(ticks: u64, hz: u32) -> SimDuration {
    SimDuration((ticks as u128 * NS as u128 / hz as u128) as u64)
}

/// The bucket a timer of `ticks` jiffies expiring at jiffy `expires` fires in (Linux
/// `calc_wheel_index`, `calc_index`).
#[inline]
fn bucket(expires: u64, ticks: u64) -> u64 {
    let (mut shift, mut start) = (0u32, 63u64);
    // LVL_DEPTH is 9 at HZ > 100; the deepest level takes everything beyond.
    while ticks >= start && shift < 24 {
        shift += 3;
        start <<= 3;
    }
    ((expires >> shift) + 1) << shift
}

/// When a timer armed at `now` for `ticks` jiffies fires.
#[inline]
pub fn timer_fires(now: SimTime, ticks: u64, hz: u32) -> SimTime {
    match hz {
        250 => SimTime(bucket(now.0 / 4_000_000 + ticks, ticks) * 4_000_000),
        1000 => SimTime(bucket(now.0 / 1_000_000 + ticks, ticks) * 1_000_000),
        _ => {
            let b = bucket(mul_div(now.0, hz as u64, false) + ticks, ticks);
            let hz = hz as u64;
            // ceil(b · NS / hz), without overflow: whole seconds, then the remainder.
            SimTime((b / hz) * NS + ((b % hz) * NS).div_ceil(hz))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_short_timer_fires_on_the_tick_after_its_last_jiffy() {
        // HZ 250: 4 ms jiffies. 10 ms from 1 ms: 3 jiffies from jiffy 0, bucket 4 = 16 ms.
        let at = timer_fires(SimTime(MS), ticks_ceil(SimDuration(10 * MS), 250), 250);
        assert_eq!(at, SimTime(16 * MS));
        // Never early, at most one jiffy plus the rounding late.
        assert!(at >= SimTime(11 * MS));
    }

    #[test]
    fn a_timer_beyond_63_jiffies_waits_for_an_8_jiffy_bucket() {
        // 372 ms = 93 jiffies from jiffy 0: level 1, expires 93 -> bucket (93 >> 3) + 1 = 12,
        // i.e. jiffy 96 = 384 ms.
        let at = timer_fires(SimTime::ZERO, ticks_ceil(SimDuration(372 * MS), 250), 250);
        assert_eq!(at, SimTime(384 * MS));
        // 62 jiffies stays in level 0: 248 ms from zero fires at jiffy 63 = 252 ms.
        let at = timer_fires(SimTime::ZERO, 62, 250);
        assert_eq!(at, SimTime(252 * MS));
        // 2 s = 500 jiffies: level 1 still (below 504), bucket 504 = 2.016 s; 504 is level 2
        // (64-jiffy buckets): bucket (504 >> 6) + 1 = 8, jiffy 512 = 2.048 s.
        assert_eq!(timer_fires(SimTime::ZERO, 500, 250), SimTime(2016 * MS));
        assert_eq!(timer_fires(SimTime::ZERO, 504, 250), SimTime(2048 * MS));
    }

    #[test]
    fn the_constant_rates_agree_with_the_general_arithmetic() {
        let general = |now: SimTime, ticks: u64, hz: u64| {
            let b = bucket(mul_div(now.0, hz, false) + ticks, ticks);
            SimTime((b as u128 * NS as u128).div_ceil(hz as u128) as u64)
        };
        for hz in [250u32, 1000] {
            for now in [0, 1, 3_999_999, 4_000_000, 123_456_789, 987_654_321_012] {
                assert_eq!(jiffies_at(SimTime(now), hz), mul_div(now, hz as u64, false));
                for d in [0, 1, 2_000_000, 15_000_001, 372_000_000, 5_000_000_000] {
                    let ticks = ticks_ceil(SimDuration(d), hz);
                    assert_eq!(ticks, mul_div(d, hz as u64, true));
                    assert_eq!(
                        timer_fires(SimTime(now), ticks, hz),
                        general(SimTime(now), ticks, hz as u64)
                    );
                }
            }
        }
    }

    #[test]
    fn jiffies_round_up_and_convert_back() {
        assert_eq!(ticks_ceil(SimDuration(4 * MS), 250), 1);
        assert_eq!(ticks_ceil(SimDuration(4 * MS + 1), 250), 2);
        assert_eq!(ticks_ceil(SimDuration::ZERO, 250), 0);
        for hz in [100, 250, 300, 1000] {
            for t in [1, 7, 63, 1000] {
                assert_eq!(ticks_ceil(ticks_duration(t, hz), hz), t);
            }
        }
        // HZ 300: jiffy 1 ends at 3.333… ms; a timer of one jiffy from zero fires at jiffy 2.
        assert_eq!(timer_fires(SimTime::ZERO, 1, 300), SimTime(6_666_667));
    }
}
