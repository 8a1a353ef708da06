//! A LEO constellation's one-way delay as a delay profile: paper 001 (Tauran et al., §III.A:
//! 66 satellites at 800 km; "due to the movement of the satellite and route changes, the
//! transmission delay varies from 70 ms to 90 ms").
//!
//! 001 replayed ns-2 traces recorded on an Iridium-like constellation (SaVi geometry). Without
//! an orbit propagator this generator draws a seeded trace with the same ingredients, on the
//! geometry of ns-2's `sat-iridium.tcl` (6 planes × 11 satellites, inclination 86.4°, 31.6°
//! between planes, 8.2° elevation mask, inter-plane links off above 60° latitude, here crossing within ±30°):
//!
//! `D(t) = [d_feed + 5·L_intra + m·L_inter(lat(t)) + d_down(t)] / c`, clipped to
//! [70, 90] ms, where
//! - `d_down(t)`: slant range from the last satellite to the mobile. A pass has a closest-
//!   approach central angle γ0 ~ U(0°, 15°) and an along-track angle θ advancing at the orbital
//!   rate `2π/T` (Earth rotation neglected); the central angle is `acos(cos γ0·cos θ)`. When the
//!   satellite sinks below the mask the mobile hands over to another visible satellite, still
//!   rising (new γ0, θ ~ U(−θ_set, 0)): a step down of 0–5.7 ms;
//! - the route from the sender to the last satellite: held for Exp(mean 180 s), then redrawn
//!   (a route change, a step): five intra-plane hops (m = 0), or six of which one crosses
//!   planes (m = 1), with equal probability; an intra-plane hop is `L_intra = 2r·sin(π/11)`, an inter-plane one
//!   `L_inter = 2r·sin(31.6°/2)·cos(lat)` at the latitude of the crossing, which moves with the
//!   orbit (the route changes when it leaves ±30°); the sender's gateway sees its satellite at
//!   an elevation ~ U(40°, 90°), constant per route (an assumption: a gateway tracks a high
//!   satellite, so its range drift is left out).
//!
//! Between steps the delay drifts by at most 0.022 ms/s (downlink range rate ≤ 6.6 km/s) plus
//! 0.007 ms/s (the inter-plane hop at 30°): < 0.03 ms/s by construction. The trace is sampled every 100 ms, with two rows
//! at each step (paper 000's profile form, linearly interpolated).
//!
//! **Maturity.** The geometry is ns-2's constellation; the route structure (hop counts, holding
//! time, gateway elevation) and the handover policy are assumptions chosen to reproduce 001's
//! 70–90 ms, not a propagated constellation.

use spikelab_core::Rng;

/// Earth radius, km.
pub const RE_KM: f64 = 6371.0;
/// Gravitational parameter of the Earth, km³/s².
pub const MU_KM3_S2: f64 = 398_600.441_8;
/// Speed of light, km/s.
pub const C_KM_S: f64 = 299_792.458;
/// Elevation mask, degrees (ns-2 `sat-iridium.tcl`).
pub const MASK_DEG: f64 = 8.2;
/// Orbit inclination, degrees.
pub const INCLINATION_DEG: f64 = 86.4;
/// Angle between adjacent planes, degrees.
pub const PLANE_SPACING_DEG: f64 = 31.6;
/// Satellites per plane.
pub const PER_PLANE: f64 = 11.0;
/// Latitude band within which a route crosses planes, degrees. ns-2 switches inter-plane
/// links off above 60°; routes here cross within ±30° (an assumption) so that the crossing's
/// drift (≤ 0.007 ms/s) plus the downlink's (≤ 0.022 ms/s) stays below 0.03 ms/s.
pub const CROSSING_LATITUDE_DEG: f64 = 30.0;
/// Mean holding time of a route, s.
pub const ROUTE_HOLD_S: f64 = 180.0;
/// Sample spacing of the trace, s.
pub const STEP_S: f64 = 0.1;
/// Bounds of the one-way delay, ms (paper 001).
pub const MIN_MS: f64 = 70.0;
pub const MAX_MS: f64 = 90.0;

/// Slant range (km) to a satellite at `alt_km` seen at elevation `elev_deg`.
pub fn slant_range_km(alt_km: f64, elev_deg: f64) -> f64 {
    let r = RE_KM + alt_km;
    let e = elev_deg.to_radians();
    (r * r - (RE_KM * e.cos()).powi(2)).sqrt() - RE_KM * e.sin()
}

/// Slant range (km) at Earth central angle `gamma` (rad) between user and sub-satellite point.
fn range_at(alt_km: f64, gamma: f64) -> f64 {
    let r = RE_KM + alt_km;
    (RE_KM * RE_KM + r * r - 2.0 * RE_KM * r * gamma.cos()).sqrt()
}

/// Two-body orbital period, s.
pub fn period_s(alt_km: f64) -> f64 {
    let r = RE_KM + alt_km;
    2.0 * std::f64::consts::PI * (r * r * r / MU_KM3_S2).sqrt()
}

/// Earth central angle (rad) at which a satellite sits on the elevation mask.
fn coverage_angle(alt_km: f64) -> f64 {
    let r = RE_KM + alt_km;
    let e = MASK_DEG.to_radians();
    (RE_KM * e.cos() / r).acos() - e
}

#[derive(Copy, Clone, Debug)]
struct Pass {
    t0: f64,
    theta0: f64,
    gamma0: f64,
    /// Along-track angle at which the satellite sets.
    theta_set: f64,
}

#[derive(Copy, Clone, Debug)]
struct Route {
    hops: u32,
    inter: u32,
    feed_km: f64,
    t0: f64,
    u0: f64,
    dir: f64,
    end: f64,
}

struct Gen {
    alt: f64,
    omega: f64,
    rng: Rng,
    pass: Pass,
    route: Route,
}

impl Gen {
    fn new_pass(&mut self, t0: f64, handover: bool) -> Pass {
        let gamma0 = self.rng.next_f64() * 15f64.to_radians();
        let theta_set = (coverage_angle(self.alt).cos() / gamma0.cos()).acos();
        let u = self.rng.next_f64();
        let theta0 = if handover {
            // Another visible satellite, still rising.
            -u * theta_set
        } else {
            (2.0 * u - 1.0) * theta_set
        };
        Pass {
            t0,
            theta0,
            gamma0,
            theta_set,
        }
    }

    fn new_route(&mut self, t0: f64) -> Route {
        // Five intra-plane hops, or six of which one crosses planes.
        let inter = (self.rng.next_f64() < 0.5) as u32;
        let hops = 5 + inter;
        let elev = 40.0 + 50.0 * self.rng.next_f64();
        let feed_km = slant_range_km(self.alt, elev);
        let hold = -(1.0 - self.rng.next_f64()).ln() * ROUTE_HOLD_S;
        let i = INCLINATION_DEG.to_radians();
        let u_lim = (CROSSING_LATITUDE_DEG.to_radians().sin() / i.sin()).asin();
        let u0 = (2.0 * self.rng.next_f64() - 1.0) * u_lim;
        let dir = if self.rng.next_f64() < 0.5 { 1.0 } else { -1.0 };
        let mut end = t0 + hold;
        if inter == 1 {
            // The crossing leaves its latitude band: the route changes.
            let to_limit = if dir > 0.0 { u_lim - u0 } else { u0 + u_lim };
            end = end.min(t0 + to_limit / self.omega);
        }
        Route {
            hops,
            inter,
            feed_km,
            t0,
            u0,
            dir,
            end,
        }
    }

    fn handover_time(&self) -> f64 {
        self.pass.t0 + (self.pass.theta_set - self.pass.theta0) / self.omega
    }

    /// The unclipped one-way delay at `t`, ms.
    fn delay_ms(&self, t: f64) -> f64 {
        let r = RE_KM + self.alt;
        let p = &self.pass;
        let theta = p.theta0 + self.omega * (t - p.t0);
        let gamma = (p.gamma0.cos() * theta.cos()).clamp(-1.0, 1.0).acos();
        let down = range_at(self.alt, gamma);
        let q = &self.route;
        let intra = 2.0 * r * (std::f64::consts::PI / PER_PLANE).sin();
        let mut isl = (q.hops - q.inter) as f64 * intra;
        if q.inter == 1 {
            let u = q.u0 + q.dir * self.omega * (t - q.t0);
            let lat = (INCLINATION_DEG.to_radians().sin() * u.sin()).asin();
            isl += 2.0 * r * (PLANE_SPACING_DEG.to_radians() / 2.0).sin() * lat.cos();
        }
        (q.feed_km + isl + down) / C_KM_S * 1e3
    }
}

/// One-way delay samples `(time_ms, delay_ms)` over `[0, duration_s]` for an 800 km (or
/// `alt_km`) constellation, every 100 ms plus two rows at each handover or route change.
/// The same seed gives the same rows.
pub fn delay_trace(seed: u64, duration_s: f64, alt_km: f64) -> Vec<(f64, f64)> {
    let mut g = Gen {
        alt: alt_km,
        omega: 2.0 * std::f64::consts::PI / period_s(alt_km),
        rng: Rng::stream(seed, "leo"),
        pass: Pass {
            t0: 0.0,
            theta0: 0.0,
            gamma0: 0.0,
            theta_set: 0.0,
        },
        route: Route {
            hops: 5,
            inter: 0,
            feed_km: 0.0,
            t0: 0.0,
            u0: 0.0,
            dir: 1.0,
            end: 0.0,
        },
    };
    g.pass = g.new_pass(0.0, false);
    g.route = g.new_route(0.0);
    let clip = |d: f64| d.clamp(MIN_MS, MAX_MS);
    let mut rows = Vec::new();
    let mut k: u64 = 0;
    loop {
        let event = g.handover_time().min(g.route.end);
        while (k as f64) * STEP_S < event && (k as f64) * STEP_S <= duration_s {
            let t = k as f64 * STEP_S;
            rows.push((t * 1e3, clip(g.delay_ms(t))));
            k += 1;
        }
        if event > duration_s {
            break;
        }
        let before = clip(g.delay_ms(event));
        if g.handover_time() <= event {
            g.pass = g.new_pass(event, true);
        }
        if g.route.end <= event {
            g.route = g.new_route(event);
        }
        let after = clip(g.delay_ms(event));
        rows.push((event * 1e3, before));
        rows.push((event * 1e3, after));
        // A grid point at exactly the step would make a third row at one time.
        while (k as f64) * STEP_S <= event {
            k += 1;
        }
    }
    rows
}

/// A delay stage's `leo = { ... }`: this constellation's delay as the stage's profile.
#[cfg(feature = "serde")]
pub use schema::{LeoConfig, MAX_LEO_SECONDS};

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::config::prelude::*;

    optional_fields! {
        /// A LEO constellation's delay (`leo = { seed = 3 }` on a delay stage).
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct LeoConfig {
            /// Seed of the trace (independent of the run's seed; default 1).
            seed: u64,
            /// How long the trace runs (default 3600 s); its last delay holds after that.
            duration: Duration,
            /// Orbit altitude, km (default 800).
            altitude_km: f64,
        }
    }

    /// The longest LEO trace, s (one day: 864 000 rows).
    pub const MAX_LEO_SECONDS: f64 = 86_400.0;

    impl LeoConfig {
        /// The trace as delay-profile rows `[time_ms, delay_ms, 0]`, after checking the knobs.
        pub fn rows(&self, at: &str) -> Result<Vec<Vec<f64>>> {
            let secs = self.duration.map_or(3600.0, |d| d.0.as_secs_f64());
            check(
                secs > 0.0 && secs <= MAX_LEO_SECONDS,
                format!("{at}.duration"),
                format!("must be in (0, {MAX_LEO_SECONDS}] s, got {secs} s"),
            )?;
            let alt = self.altitude_km.unwrap_or(800.0);
            check(
                alt.is_finite() && (500.0..=1500.0).contains(&alt),
                format!("{at}.altitude_km"),
                format!("must be in [500, 1500] km (a LEO orbit), got {}", num(alt)),
            )?;
            Ok(delay_trace(self.seed.unwrap_or(1), secs, alt)
                .into_iter()
                .map(|(t, d)| vec![t, d, 0.0])
                .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_matches_the_computed_values() {
        // docs/models.md (Re = 6371 km): 780 km at 90°, 2464 km at 8.2° for h = 780 km.
        assert!((slant_range_km(780.0, 90.0) - 780.0).abs() < 0.5);
        assert!((slant_range_km(780.0, 8.2) - 2464.0).abs() < 1.0);
        assert!((slant_range_km(800.0, 8.2) - 2506.0).abs() < 1.0);
        assert!((period_s(800.0) - 6043.0).abs() < 2.0);
        assert!((coverage_angle(800.0).to_degrees() - 20.2).abs() < 0.1);
    }

    fn steps(rows: &[(f64, f64)]) -> Vec<f64> {
        rows.windows(2)
            .filter(|w| w[0].0 == w[1].0)
            .map(|w| w[1].1 - w[0].1)
            .collect()
    }

    #[test]
    fn ten_minutes_stay_in_70_to_90_ms_drift_slowly_and_step_at_handovers() {
        let mut worst: f64 = 0.0;
        let mut big = 0;
        for seed in 1..=20 {
            let rows = delay_trace(seed, 600.0, 800.0);
            assert!(rows.last().unwrap().0 >= 599_900.0);
            assert!(rows.iter().all(|r| (MIN_MS..=MAX_MS).contains(&r.1)));
            for w in rows.windows(2) {
                assert!(w[1].0 >= w[0].0);
                if w[1].0 > w[0].0 {
                    let slope = (w[1].1 - w[0].1) / ((w[1].0 - w[0].0) / 1e3);
                    worst = worst.max(slope.abs());
                    assert!(
                        slope.abs() <= 0.03,
                        "seed {seed}: {slope} ms/s at {}",
                        w[0].0
                    );
                }
            }
            let s = steps(&rows);
            // At least one handover or route change per 10 minutes; its size can be small (the
            // new satellite just above the mask) or clipped away at 90 ms.
            assert!(!s.is_empty(), "seed {seed}: no step");
            big += s.iter().any(|d| d.abs() >= 2.0) as u32;
            let lo = rows.iter().map(|r| r.1).fold(f64::MAX, f64::min);
            let hi = rows.iter().map(|r| r.1).fold(f64::MIN, f64::max);
            println!("seed {seed}: {lo:.1}..{hi:.1} ms, {} steps", s.len());
        }
        println!("largest drift {worst:.4} ms/s; {big} of 20 seeds step by >= 2 ms");
        assert!(big >= 16, "{big}");
    }

    #[test]
    fn a_seed_reproduces_its_trace() {
        let a = delay_trace(3, 600.0, 800.0);
        assert_eq!(a, delay_trace(3, 600.0, 800.0));
        assert_ne!(a, delay_trace(4, 600.0, 800.0));
    }
}
