//! Time profiles of (time, delay, loss): paper 000 §3.1, Eq. 1-2.
//!
//! Between two rows i and i+1 with `t[i] <= t < t[i+1]` the value is the linear interpolation
//! `(v[i+1]·(t − t[i]) + v[i]·(t[i+1] − t)) / (t[i+1] − t[i])`. Two rows with the same time make
//! a step: at exactly that time the later row applies (the profile is right-continuous). Before
//! the first row the first row's values hold; after the last row the last row's values hold.

use spikelab_core::{SimDuration, SimTime};

/// One row of a profile.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ProfileRow {
    /// Time since the start of the run, ns.
    pub t: SimTime,
    /// One-way delay added by the stage, ns.
    pub delay: SimDuration,
    /// Drop probability in [0, 1].
    pub loss: f64,
}

/// Why a list of rows is not a profile. `row` is the 0-based index of the offending row.
#[derive(Clone, Debug, PartialEq)]
pub enum ProfileError {
    Empty,
    Unsorted { row: usize },
    LossOutOfRange { row: usize, loss: f64 },
    TooManyAtOneTime { row: usize },
}

impl std::fmt::Display for ProfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProfileError::Empty => write!(f, "must have at least one row"),
            ProfileError::Unsorted { row } => {
                write!(f, "row {row}: times must be non-decreasing")
            }
            ProfileError::LossOutOfRange { row, loss } => {
                write!(f, "row {row}: loss must be in [0, 1], got {loss}")
            }
            ProfileError::TooManyAtOneTime { row } => write!(
                f,
                "row {row}: at most two rows may share one time (a step has a before and an after)"
            ),
        }
    }
}

/// A validated profile.
#[derive(Clone, Debug)]
pub struct Profile {
    rows: Vec<ProfileRow>,
    /// Index of the segment used for the previous lookup: arrivals are monotone, so lookups
    /// usually advance this cursor by zero or one.
    cursor: usize,
}

impl Profile {
    pub fn new(rows: Vec<ProfileRow>) -> Result<Profile, ProfileError> {
        if rows.is_empty() {
            return Err(ProfileError::Empty);
        }
        for (i, r) in rows.iter().enumerate() {
            if !(0.0..=1.0).contains(&r.loss) || r.loss.is_nan() {
                return Err(ProfileError::LossOutOfRange {
                    row: i,
                    loss: r.loss,
                });
            }
            if i > 0 && r.t < rows[i - 1].t {
                return Err(ProfileError::Unsorted { row: i });
            }
            if i > 1 && r.t == rows[i - 1].t && r.t == rows[i - 2].t {
                return Err(ProfileError::TooManyAtOneTime { row: i });
            }
        }
        Ok(Profile { rows, cursor: 0 })
    }

    pub fn rows(&self) -> &[ProfileRow] {
        &self.rows
    }

    /// Index of the last row with `t_row <= t`, or `None` if `t` is before the first row.
    fn locate(&mut self, t: SimTime) -> Option<usize> {
        let rows = &self.rows;
        if t < rows[0].t {
            return None;
        }
        // Fast path: monotone lookups walk the cursor forward.
        let mut i = self.cursor.min(rows.len() - 1);
        if rows[i].t > t {
            i = rows.partition_point(|r| r.t <= t) - 1;
        } else {
            while i + 1 < rows.len() && rows[i + 1].t <= t {
                i += 1;
            }
        }
        self.cursor = i;
        Some(i)
    }

    /// (delay, loss) for a packet arriving at `t`, Eq. 1 and Eq. 2 of paper 000.
    pub fn at(&mut self, t: SimTime) -> (SimDuration, f64) {
        let Some(i) = self.locate(t) else {
            let r = self.rows[0];
            return (r.delay, r.loss);
        };
        let a = self.rows[i];
        if i + 1 == self.rows.len() {
            return (a.delay, a.loss);
        }
        let b = self.rows[i + 1];
        debug_assert!(b.t > a.t, "locate returns the last row at a time");
        let span = (b.t.0 - a.t.0) as f64;
        let x = (t.0 - a.t.0) as f64;
        let y = (b.t.0 - t.0) as f64;
        let delay = (b.delay.0 as f64 * x + a.delay.0 as f64 * y) / span;
        let loss = (b.loss * x + a.loss * y) / span;
        (SimDuration(delay.round() as u64), loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t_ms: u64, d_ms: u64, loss: f64) -> ProfileRow {
        ProfileRow {
            t: SimTime::from_millis(t_ms),
            delay: SimDuration::from_millis(d_ms),
            loss,
        }
    }

    /// The table of paper 000 Fig. 2(a), loss 100 (1/100 %) = 0.01.
    pub(crate) fn kato() -> Profile {
        Profile::new(vec![
            row(0, 50, 0.0),
            row(10_000, 50, 0.0),
            row(10_000, 1500, 0.01),
            row(11_460, 50, 0.01),
            row(11_460, 50, 0.0),
            row(20_000, 50, 0.0),
        ])
        .unwrap()
    }

    #[test]
    fn eq1_interpolates_linearly_and_steps_are_right_continuous() {
        let mut p = kato();
        assert_eq!(
            p.at(SimTime::from_millis(5_000)).0,
            SimDuration::from_millis(50)
        );
        assert_eq!(
            p.at(SimTime(10_000_000_000 - 1)).0,
            SimDuration::from_millis(50)
        );
        assert_eq!(
            p.at(SimTime::from_millis(10_000)),
            (SimDuration::from_millis(1500), 0.01)
        );
        // Halfway through the ramp: (1500 + 50) / 2 = 775 ms.
        assert_eq!(
            p.at(SimTime::from_millis(10_730)).0,
            SimDuration::from_millis(775)
        );
        assert_eq!(
            p.at(SimTime::from_millis(11_460)),
            (SimDuration::from_millis(50), 0.0)
        );
        assert_eq!(
            p.at(SimTime::from_millis(30_000)).0,
            SimDuration::from_millis(50)
        );
    }

    #[test]
    fn departures_during_the_spike_bunch_between_11500_and_11510_ms() {
        let mut p = kato();
        for k in 0..=146 {
            let t = SimTime::from_millis(10_000 + 10 * k);
            let leave = t + p.at(t).0;
            assert!(leave >= SimTime::from_millis(11_500) && leave <= SimTime::from_millis(11_510));
        }
    }

    #[test]
    fn lookups_out_of_order_still_answer_correctly() {
        let mut p = kato();
        let _ = p.at(SimTime::from_millis(15_000));
        assert_eq!(
            p.at(SimTime::from_millis(10_000)).0,
            SimDuration::from_millis(1500)
        );
        assert_eq!(
            p.at(SimTime::from_millis(0)).0,
            SimDuration::from_millis(50)
        );
    }

    #[test]
    fn malformed_profiles_are_rejected() {
        assert_eq!(Profile::new(vec![]).unwrap_err(), ProfileError::Empty);
        assert_eq!(
            Profile::new(vec![row(10, 1, 0.0), row(5, 1, 0.0)]).unwrap_err(),
            ProfileError::Unsorted { row: 1 }
        );
        assert!(matches!(
            Profile::new(vec![row(0, 1, 1.5)]).unwrap_err(),
            ProfileError::LossOutOfRange { row: 0, .. }
        ));
        assert_eq!(
            Profile::new(vec![row(0, 1, 0.0), row(0, 2, 0.0), row(0, 3, 0.0)]).unwrap_err(),
            ProfileError::TooManyAtOneTime { row: 2 }
        );
    }
}
