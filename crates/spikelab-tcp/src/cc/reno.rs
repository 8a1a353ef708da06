//! Reno congestion control: RFC 5681 §3.1 (slow start, congestion avoidance, eq. 4 on loss),
//! with RFC 3465 byte counting as an option. Mature: pinned by the scripted tests.

use super::*;

/// Reno AIMD: halve on loss (RFC 5681 eq. 4), slow start below ssthresh, +1 MSS per RTT above.
/// Its only internal state is the byte counter of appropriate byte counting.
pub struct Reno {
    name: &'static str,
    counting: AckCounting,
    bytes_acked: u64,
}

/// What [`Reno`] saves for an undo.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct RenoState {
    bytes_acked: u64,
}

/// Reno: no parameters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RenoParams;

impl CcParams for RenoParams {
    const NAME: &'static str = "reno";
    fn build(&self, counting: AckCounting) -> Box<dyn CongestionControl> {
        Box::new(Reno::new(counting))
    }
}

/// NewReno: Reno's growth under the name of the recovery variant (RFC 6582 changes recovery,
/// `TcpConfig::variant`, not the window's growth); no parameters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct NewRenoParams;

impl CcParams for NewRenoParams {
    const NAME: &'static str = "newreno";
    fn build(&self, counting: AckCounting) -> Box<dyn CongestionControl> {
        Box::new(Reno::named(counting, Self::NAME))
    }
}

impl Reno {
    pub fn new(counting: AckCounting) -> Reno {
        Self::named(counting, RenoParams::NAME)
    }

    /// The same algorithm reporting another name (`newreno`).
    pub fn named(counting: AckCounting, name: &'static str) -> Reno {
        Reno {
            name,
            counting,
            bytes_acked: 0,
        }
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        self.name
    }
    fn ssthresh(&mut self, w: &Window, flight_size: u64) -> u64 {
        self.bytes_acked = 0;
        (flight_size / 2).max(2 * w.mss)
    }
    fn cong_avoid(&mut self, w: &mut Window, acked: u64) {
        if w.cwnd < w.ssthresh {
            slow_start(w, acked, self.counting);
        } else {
            cong_avoid_ai(w, acked, self.counting, &mut self.bytes_acked);
        }
    }
    fn save_state(&self) -> CcState {
        CcState(Some(Box::new(RenoState {
            bytes_acked: self.bytes_acked,
        })))
    }
    fn restore_state(&mut self, saved: CcState) {
        if let Some(s) = saved.0.and_then(|b| b.downcast::<RenoState>().ok()) {
            self.bytes_acked = s.bytes_acked;
        }
    }
    fn vars(&self) -> CcVars {
        vec![("bytes_acked", self.bytes_acked as f64)]
    }
}

/// Reno's and NewReno's configuration in a scenario: no parameters.
#[cfg(feature = "serde")]
pub use schema::{NewRenoConfig, RenoConfig};

#[cfg(feature = "serde")]
mod schema {
    use super::*;
    use crate::cc::schema::prelude::*;

    cc_fields! {
        /// `cc = "reno"`: no parameters.
        pub struct RenoConfig {}
    }

    impl CcSchema for RenoConfig {
        type Params = RenoParams;
        fn params(&self, _at: &str) -> Result<RenoParams> {
            Ok(RenoParams)
        }
    }

    cc_fields! {
        /// `cc = "newreno"`: no parameters.
        pub struct NewRenoConfig {}
    }

    impl CcSchema for NewRenoConfig {
        type Params = NewRenoParams;
        fn params(&self, _at: &str) -> Result<NewRenoParams> {
            Ok(NewRenoParams)
        }
    }
}
