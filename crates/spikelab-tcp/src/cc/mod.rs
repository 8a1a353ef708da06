//! Congestion control as Linux-like hooks.
//!
//! The sender owns `cwnd` and `ssthresh`; an algorithm answers what ssthresh should become on a
//! congestion event (`ssthresh`) and how cwnd grows on an ACK (`cong_avoid`). Shared building
//! blocks ([`slow_start`], [`cong_avoid_ai`]) are composed by the algorithms, as in Linux's
//! `tcp_slow_start` / `tcp_cong_avoid_ai`.
//!
//! Undo (a loss episode found spurious): when an episode starts the sender saves the
//! algorithm's internal state ([`CongestionControl::save_state`]) next to the prior cwnd and
//! ssthresh in its undo ledger; a full undo restores that copy ([`restore_state`]) and asks the
//! algorithm which cwnd to restore ([`undo_cwnd`], Linux `undo_cwnd`), so no field is forgotten
//! (quinn's CUBIC undoes the same way).
//!
//! Beyond those two, Linux-like hooks with default no-ops, for the algorithms that need them:
//! [`pkts_acked`] on every ACK (Linux `pkts_acked` + `in_ack_event`: the time, the RTT sample,
//! srtt, the bytes acknowledged), [`set_state`] when the congestion state changes (Linux
//! `set_state` / `cwnd_event`: entering Recovery or Loss, returning to Open). Both may change
//! cwnd and ssthresh (HyStart sets ssthresh; Westwood+ sets both when a recovery completes).
//! The sender calls `pkts_acked` before `cong_avoid` for the same ACK, as the kernel does.
//!
//! One module per algorithm: [`reno`] (RFC 5681 AIMD), [`cubic`] (RFC 9438, and the Linux
//! module), [`bic`], [`westwood`] (Westwood+) and [`hybla`] (the Linux modules). Each owns its
//! name and parameters ([`CcParams`]: the factory of its model) and, with the `serde` feature,
//! its configuration in a scenario ([`CcSchema`]: the parameters a scenario may give, their
//! defaults and checks). The list at the end of this file is the registry: one line per
//! algorithm makes [`CcConfig`] (which the sender builds from) and, with `serde`, [`CcTable`]
//! (which a scenario reads, checks and writes back; `algo` picks the variant). Adding an
//! algorithm is its module and a line there (docs/adding-a-model.md).
//!
//! [`pkts_acked`]: CongestionControl::pkts_acked
//! [`set_state`]: CongestionControl::set_state
//! [`restore_state`]: CongestionControl::restore_state
//! [`undo_cwnd`]: CongestionControl::undo_cwnd

pub mod bic;
pub mod cubic;
pub mod hybla;
pub mod reno;
#[cfg(feature = "serde")]
pub mod schema;
pub mod westwood;

pub use bic::{Bic, BicParams};
pub use cubic::{Cubic, CubicFlavor, CubicParams};
pub use hybla::{Hybla, HyblaParams};
pub use reno::{NewRenoParams, Reno, RenoParams};
pub use westwood::{Westwood, WestwoodParams};

#[cfg(feature = "serde")]
pub use {
    bic::BicConfig,
    cubic::CubicConfig,
    hybla::HyblaConfig,
    reno::{NewRenoConfig, RenoConfig},
    schema::{CcFields, CcSchema},
    westwood::WestwoodConfig,
};

use crate::CaState;
use spikelab_core::{SimDuration, SimTime};
use std::any::Any;

/// What the algorithm may read and change.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// Sender MSS, bytes.
    pub mss: u64,
}

/// An opaque copy of an algorithm's internal state (`None`: the algorithm keeps none).
#[derive(Default)]
pub struct CcState(pub Option<Box<dyn Any + Send>>);

impl CcState {
    /// A copy of an algorithm's state struct (the whole struct, so no field is forgotten).
    pub fn of<T: Clone + Send + 'static>(state: &T) -> CcState {
        CcState(Some(Box::new(state.clone())))
    }

    /// Puts a copy taken by [`CcState::of`] back into `state` (nothing when none was taken).
    pub fn restore_into<T: 'static>(self, state: &mut T) {
        if let Some(s) = self.0.and_then(|b| b.downcast::<T>().ok()) {
            *state = *s;
        }
    }
}

impl std::fmt::Debug for CcState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "CcState(saved)"
        } else {
            "CcState(none)"
        })
    }
}

/// What one ACK tells the algorithm ([`CongestionControl::pkts_acked`]).
#[derive(Clone, Copy, Debug)]
pub struct AckSample {
    /// When the ACK arrived.
    pub now: SimTime,
    /// Bytes newly acknowledged by the cumulative ACK (0: a duplicate ACK or a window update).
    pub acked: u64,
    /// Whether the sender counted it as a duplicate ACK.
    pub dupack: bool,
    /// The RTT sample this ACK gave, if any.
    pub rtt: Option<SimDuration>,
    /// The RTT of the newest segment this ACK delivered, from its send time (Linux
    /// `ack_sample.rtt_us`, `ca_rtt_us`): what the kernel's congestion controls see; the
    /// timestamp sample when no original was delivered.
    pub ca_rtt: Option<SimDuration>,
    /// The smoothed RTT after that sample (`None` before the first sample).
    pub srtt: Option<SimDuration>,
    /// `snd_una` after the ACK, bytes.
    pub snd_una: u64,
    /// The highest sequence number sent plus one, bytes.
    pub snd_max: u64,
    /// The congestion state the ACK found (before this ACK changes it).
    pub state: CaState,
}

/// Events of [`CongestionControl::cwnd_event`] (Linux `enum tcp_ca_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// A fast recovery ended with the cumulative ACK reaching `recover` (not by an undo):
    /// Linux `CA_EVENT_COMPLETE_CWR`, raised by `tcp_end_cwnd_reduction`.
    CompleteCwr,
    /// A retransmission timeout, after ssthresh and cwnd were set (Linux `CA_EVENT_LOSS`).
    Loss,
}

/// Named internal variables of an algorithm (units in the name), for tests and traces.
pub type CcVars = Vec<(&'static str, f64)>;

pub trait CongestionControl: Send {
    fn name(&self) -> &'static str;
    /// The new ssthresh after a congestion event with `flight_size` bytes outstanding.
    fn ssthresh(&mut self, w: &Window, flight_size: u64) -> u64;
    /// Grow cwnd for an ACK that newly acknowledged `acked` bytes.
    fn cong_avoid(&mut self, w: &mut Window, acked: u64);
    /// A copy of the internal state, taken when a loss episode starts (before `ssthresh`).
    fn save_state(&self) -> CcState {
        CcState(None)
    }
    /// Puts back a copy taken by `save_state` (a full undo).
    fn restore_state(&mut self, _saved: CcState) {}
    /// The cwnd a full undo restores, given the cwnd before the episode (Linux
    /// `tcp_reno_undo_cwnd`: the larger of the current and the prior cwnd).
    fn undo_cwnd(&mut self, w: &Window, prior_cwnd: u64) -> u64 {
        w.cwnd.max(prior_cwnd)
    }
    /// Every ACK, before `cong_avoid` (Linux `pkts_acked` and `in_ack_event`).
    fn pkts_acked(&mut self, _w: &mut Window, _s: &AckSample) {}
    /// The congestion state changed from `from` to `to` at `now` (Linux `set_state`;
    /// `Loss` is also Linux's `CA_EVENT_LOSS`, `Recovery → Open` its `CA_EVENT_COMPLETE_CWR`).
    /// Called after the sender has set cwnd and ssthresh for the new state; an undo's return to
    /// Open comes after `restore_state`.
    fn set_state(&mut self, _w: &mut Window, _now: SimTime, _from: CaState, _to: CaState) {}
    /// An event outside the state changes (Linux `cwnd_event`).
    fn cwnd_event(&mut self, _w: &mut Window, _now: SimTime, _ev: CaEvent) {}
    /// The algorithm's internal variables by name (empty: none).
    fn vars(&self) -> CcVars {
        Vec::new()
    }
}

/// How slow start and congestion avoidance count ACKs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AckCounting {
    /// RFC 5681: per ACK, `cwnd += min(N, SMSS)` in slow start and `SMSS·SMSS/cwnd` in CA.
    PerAck,
    /// RFC 3465: `cwnd += min(N, L·SMSS)` in slow start; in CA one SMSS per cwnd of bytes acked.
    ByteCounting { limit_segments: u32 },
}

/// Slow start (RFC 5681 §3.1 / RFC 3465 §2.2). Returns the bytes it used.
pub fn slow_start(w: &mut Window, acked: u64, counting: AckCounting) {
    let inc = match counting {
        AckCounting::PerAck => acked.min(w.mss),
        AckCounting::ByteCounting { limit_segments } => acked.min(limit_segments as u64 * w.mss),
    };
    w.cwnd += inc;
}

/// Additive increase (RFC 5681 eq. 3 / RFC 3465 §2.1). `bytes_acked` is the byte counter of
/// appropriate byte counting, kept by the caller between ACKs.
pub fn cong_avoid_ai(w: &mut Window, acked: u64, counting: AckCounting, bytes_acked: &mut u64) {
    match counting {
        AckCounting::PerAck => {
            let inc = (w.mss * w.mss / w.cwnd.max(1)).max(1);
            w.cwnd += inc;
        }
        AckCounting::ByteCounting { .. } => {
            *bytes_acked += acked;
            if *bytes_acked >= w.cwnd {
                *bytes_acked -= w.cwnd;
                w.cwnd += w.mss;
            }
        }
    }
}

/// An algorithm's parameters: its name and the factory of its model. One type per algorithm,
/// in the algorithm's module (a unit struct when it has none).
pub trait CcParams: Copy + std::fmt::Debug + PartialEq {
    /// The algorithm's name, as `cc = "..."` spells it and the runs table reports it.
    const NAME: &'static str;
    /// A fresh algorithm; `counting` is the sender's ACK counting (RFC 5681 per ACK or RFC
    /// 3465 byte counting), which the algorithms that follow an RFC respect.
    fn build(&self, counting: AckCounting) -> Box<dyn CongestionControl>;
}

/// The congestion controls: each its parameters ([`CcParams`]) and, with the `serde` feature,
/// its configuration in a scenario ([`CcSchema`]), both in the algorithm's own module. Adding
/// one is a module and a line in the list at the end of this file (docs/adding-a-model.md).
macro_rules! cc_algorithms {
    ($( $(#[$doc:meta])* $variant:ident($params:ty, $config:ty) ),+ $(,)?) => {
        /// Which algorithm a flow runs, with its parameters: the factory of
        /// [`CongestionControl`]s.
        #[derive(Clone, Debug, PartialEq)]
        pub enum CcConfig {
            $( $(#[$doc])* $variant($params), )+
        }

        impl CcConfig {
            /// Every algorithm's name, as `cc = "..."` spells it (in the registry's order).
            pub const NAMES: &'static [&'static str] = &[$( <$params as CcParams>::NAME ),+];

            pub fn name(&self) -> &'static str {
                match self {
                    $( CcConfig::$variant(_) => <$params as CcParams>::NAME, )+
                }
            }

            /// A fresh algorithm ([`CcParams::build`]).
            pub fn build(&self, counting: AckCounting) -> Box<dyn CongestionControl> {
                match self {
                    $( CcConfig::$variant(p) => p.build(counting), )+
                }
            }
        }

        /// A congestion control as a scenario gives it: one algorithm's own configuration
        /// (`algo` picks the variant). Written back as its parameters (the scenario's `cc`
        /// adds `algo`).
        #[cfg(feature = "serde")]
        #[derive(Clone, Debug, PartialEq)]
        pub enum CcTable {
            $( $variant($config), )+
        }

        #[cfg(feature = "serde")]
        impl CcTable {
            /// Its algorithm's name.
            pub fn algo(&self) -> &'static str {
                match self {
                    $( CcTable::$variant(_) => <$params as CcParams>::NAME, )+
                }
            }

            /// The parameters of the algorithm `algo`, if there is one.
            pub fn fields_of(algo: &str) -> Option<&'static [&'static str]> {
                $( if algo == <$params as CcParams>::NAME {
                    return Some(<$config as CcFields>::FIELDS);
                } )+
                None
            }

            /// The algorithm `algo` with no parameter given (`cc = "NAME"`), if there is one.
            pub fn named(algo: &str) -> Option<CcTable> {
                $( if algo == <$params as CcParams>::NAME {
                    return Some(CcTable::$variant(<$config>::default()));
                } )+
                None
            }

            /// The parameters given, in the order of the algorithm's fields.
            pub fn set_fields(&self) -> Vec<&'static str> {
                match self {
                    $( CcTable::$variant(c) => CcFields::set_fields(c), )+
                }
            }

            /// Reads the parameters of the algorithm `algo` from `d` (`None`: no such
            /// algorithm).
            pub fn deserialize_as<'de, D: serde::Deserializer<'de>>(
                algo: &str,
                d: D,
            ) -> Result<Option<CcTable>, D::Error> {
                $( if algo == <$params as CcParams>::NAME {
                    let c = <$config as serde::Deserialize>::deserialize(d)?;
                    return Ok(Some(CcTable::$variant(c)));
                } )+
                Ok(None)
            }

            /// Checks the parameters given (errors name `{at}.FIELD`) and fills in the
            /// algorithm's defaults for the others ([`CcSchema::params`]).
            pub fn config(&self, at: &str) -> schema::Result<CcConfig> {
                match self {
                    $( CcTable::$variant(c) => Ok(CcConfig::$variant(CcSchema::params(c, at)?)), )+
                }
            }
        }

        #[cfg(feature = "serde")]
        impl serde::Serialize for CcTable {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( CcTable::$variant(c) => c.serialize(s), )+
                }
            }
        }
    };
}

cc_algorithms! {
    /// RFC 5681 AIMD.
    Reno(RenoParams, RenoConfig),
    /// The same AIMD growth as `Reno` under another name (NewReno is a recovery variant,
    /// `TcpConfig::variant`); kept so results say what the scenario asked for.
    NewReno(NewRenoParams, NewRenoConfig),
    /// CUBIC: RFC 9438 or the Linux module.
    Cubic(CubicParams, CubicConfig),
    /// BIC (the Linux module).
    Bic(BicParams, BicConfig),
    /// Westwood+ (the Linux module).
    Westwood(WestwoodParams, WestwoodConfig),
    /// Hybla (the Linux module).
    Hybla(HyblaParams, HyblaConfig),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssthresh_is_half_flight_but_at_least_two_segments() {
        let mut r = Reno::new(AckCounting::PerAck);
        let w = Window {
            cwnd: 10_000,
            ssthresh: u64::MAX,
            mss: 1000,
        };
        assert_eq!(r.ssthresh(&w, 10_000), 5_000);
        assert_eq!(r.ssthresh(&w, 3_000), 2_000);
    }

    #[test]
    fn reno_restores_its_byte_counter_and_undo_keeps_the_larger_cwnd() {
        let mut r = Reno::new(AckCounting::ByteCounting { limit_segments: 2 });
        let mut w = Window {
            cwnd: 10_000,
            ssthresh: 5_000,
            mss: 1000,
        };
        r.cong_avoid(&mut w, 3000);
        let saved = r.save_state();
        r.ssthresh(&w, 10_000); // clears the counter
        r.restore_state(saved);
        r.cong_avoid(&mut w, 7000);
        assert_eq!(w.cwnd, 11_000, "3000 + 7000 bytes counted = one cwnd");
        let w = Window { cwnd: 2000, ..w };
        assert_eq!(r.undo_cwnd(&w, 8000), 8000);
    }

    #[test]
    fn delayed_acks_halve_slow_start_growth_without_abc() {
        // Each ACK covers two segments (delayed ACK).
        let mut w = Window {
            cwnd: 2000,
            ssthresh: u64::MAX,
            mss: 1000,
        };
        let mut per_ack = Reno::new(AckCounting::PerAck);
        per_ack.cong_avoid(&mut w, 2000);
        assert_eq!(w.cwnd, 3000, "RFC 5681: min(N, SMSS)");
        let mut w2 = Window { cwnd: 2000, ..w };
        let mut abc = Reno::new(AckCounting::ByteCounting { limit_segments: 2 });
        abc.cong_avoid(&mut w2, 2000);
        assert_eq!(w2.cwnd, 4000, "RFC 3465: min(N, L*SMSS), L = 2");
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window() {
        let mut w = Window {
            cwnd: 10_000,
            ssthresh: 5_000,
            mss: 1000,
        };
        let mut abc = Reno::new(AckCounting::ByteCounting { limit_segments: 2 });
        for _ in 0..10 {
            abc.cong_avoid(&mut w, 1000);
        }
        assert_eq!(w.cwnd, 11_000);
        let mut w = Window {
            cwnd: 10_000,
            ssthresh: 5_000,
            mss: 1000,
        };
        let mut per_ack = Reno::new(AckCounting::PerAck);
        per_ack.cong_avoid(&mut w, 1000);
        assert_eq!(w.cwnd, 10_100, "MSS*MSS/cwnd");
    }
}
