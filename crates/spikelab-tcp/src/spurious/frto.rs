//! F-RTO, RFC 5682: the basic algorithm (§2) and the SACK-enhanced one (§3).
//!
//! After a timeout the sender retransmits the first unacknowledged segment (step 1) and, instead
//! of going back N, waits for the first ACK (step 2). If that ACK advances the window without
//! covering everything sent before the timeout, the sender transmits up to two *new* segments
//! (step 2b) and the next ACK decides (step 3): an ACK of data that was never retransmitted
//! means the originals were only delayed (spurious, step 3b); a duplicate ACK (or, with SACK, a
//! SACK of the new segments) means they were lost (step 3a: cwnd at most 3 MSS, conventional
//! recovery). Every other outcome returns to the conventional recovery (step 2a; step 2b without
//! new data to send), without a spurious verdict.
//!
//! When F-RTO must not run (step 1): a timeout during an RTO recovery whose `recover` point is
//! not yet acknowledged (§2; §3 with RecoveryPoint, which fast recovery sets too). During fast
//! recovery the SACK-enhanced algorithm is not applied (§3.1: "SHOULD NOT be applied if the TCP
//! sender is already in loss recovery"), and the basic one only when the loss recovery is Reno
//! or NewReno (§2.1: with another loss recovery it "SHOULD NOT be entered when earlier fast
//! recovery is underway"); Linux `tcp_enter_loss` bars both. A timeout that recurs before the
//! first ACK after the previous one arrived restarts at step 1 (§2.1, §3.1 step 2; Linux keeps
//! F-RTO for recurring timeouts on the same `snd_una`); one that recurs in step 3 finds `recover`
//! above `snd_una` and runs the conventional recovery.
//!
//! This module decides; the sender transmits: it sends the new segments this module grants and
//! holds back go-back-N retransmissions while [`Frto::holds_retransmissions`] is true.
//! `recover` is kept exclusive (one past the highest byte), like the sender's.
//!
//! Maturity: scripted packet tests pin steps 2a, 2b, 3a, 3b of both variants; not validated
//! against Linux (which checks step 3b before 3a and counts SACKed never-retransmitted data).

use super::{Evidence, FrtoStep, FrtoVariant, Verdict};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// Step 2: waiting for the first new ACK after the RTO retransmission, which ended at
    /// `retransmitted_end`.
    Step2 {
        retransmitted_end: u64,
    },
    /// Step 3: up to two new segments sent; waiting for the next ACK.
    Step3,
}

/// The sender's situation when the timer expires.
#[derive(Copy, Clone, Debug)]
pub struct Timeout {
    /// The sender was already in RTO recovery (Loss state).
    pub in_rto_recovery: bool,
    /// The sender was in fast recovery.
    pub in_fast_recovery: bool,
    /// The sender's loss recovery is SACK-based (RFC 6675) rather than Reno or NewReno.
    pub sack_loss_recovery: bool,
    pub snd_una: u64,
    pub snd_max: u64,
    /// End of the segment the timeout retransmits.
    pub retransmitted_end: u64,
}

/// What F-RTO needs from an ACK.
#[derive(Copy, Clone, Debug)]
pub struct FrtoAck {
    pub ack: u64,
    /// `snd_una` before this ACK.
    pub prior_snd_una: u64,
    /// Highest sequence number sent plus one.
    pub snd_max: u64,
    /// A duplicate ACK (RFC 5681 / RFC 6675 definition, as the sender counts them).
    pub is_dupack: bool,
    /// Some SACK block ends above `recover` (SACK-enhanced step 3a).
    pub sack_above_recover: bool,
    /// Data below `recover` not acknowledged before is acknowledged, cumulatively or by SACK.
    pub newly_acked_below_recover: bool,
    /// New data can be sent now (application data left and the receive window open).
    pub can_send_new: bool,
}

/// What the sender must do after an ACK.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Action {
    pub verdict: Option<Verdict>,
    /// New segments to transmit now (step 2b).
    pub send_new: u32,
    /// Cap cwnd at this many MSS (step 2a of §3: 2; step 3a: 3).
    pub cwnd_cap_segments: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct Frto {
    variant: FrtoVariant,
    state: State,
    /// RFC 5682 `recover` (§2) / `RecoveryPoint` (§3), exclusive.
    recover: Option<u64>,
}

impl Frto {
    pub fn new(variant: FrtoVariant) -> Frto {
        Frto {
            variant,
            state: State::Idle,
            recover: None,
        }
    }

    pub fn variant(&self) -> FrtoVariant {
        self.variant
    }

    /// F-RTO runs (step 2 or 3): the sender must not go back N.
    pub fn holds_retransmissions(&self) -> bool {
        self.state != State::Idle
    }

    /// Whether F-RTO is at step 2 or 3 (it may still give a verdict on this episode).
    pub fn is_active(&self) -> bool {
        self.state != State::Idle
    }

    pub fn recover(&self) -> Option<u64> {
        self.recover
    }

    /// Step 1. Returns whether F-RTO handles this timeout.
    pub fn on_timeout(&mut self, t: &Timeout) -> bool {
        if let State::Step2 { .. } = self.state {
            // A recurring timeout before any new ACK: step 1 again (same snd_una).
            self.state = State::Step2 {
                retransmitted_end: t.retransmitted_end,
            };
            return true;
        }
        let recovery_open = self.recover.is_some_and(|r| r > t.snd_una);
        let barred = match self.variant {
            FrtoVariant::Basic => {
                (t.in_rto_recovery && recovery_open) || (t.in_fast_recovery && t.sack_loss_recovery)
            }
            FrtoVariant::SackEnhanced => t.in_fast_recovery || recovery_open,
        };
        if barred {
            self.recover = Some(t.snd_max);
            self.state = State::Idle;
            return false;
        }
        self.state = State::Step2 {
            retransmitted_end: t.retransmitted_end,
        };
        true
    }

    /// A fast retransmit sets RecoveryPoint (RFC 6675), which §3 step 1 consults.
    pub fn on_fast_retransmit(&mut self, recovery_point: u64) {
        self.recover = Some(recovery_point);
        self.state = State::Idle;
    }

    /// The episode was decided by another detector (or ended): stop.
    pub fn reset(&mut self) {
        self.state = State::Idle;
    }

    /// Steps 2 and 3 on an ACK.
    pub fn on_ack(&mut self, a: &FrtoAck) -> Action {
        let advanced = a.ack > a.prior_snd_una;
        match self.state {
            State::Idle => Action::default(),
            State::Step2 { retransmitted_end } => {
                if !advanced {
                    if a.is_dupack && self.variant == FrtoVariant::Basic {
                        // §2 step 2 stores recover on the first ACK, a duplicate one too.
                        self.recover = Some(a.snd_max);
                        return self.conventional(FrtoStep::Step2a, a.ack, None);
                    }
                    // §3 step 2: duplicate ACKs only update the scoreboard; stay.
                    return Action::default();
                }
                self.recover = Some(a.snd_max);
                let covers_recover = a.ack >= a.snd_max;
                let partial_retransmission = a.ack < retransmitted_end;
                match self.variant {
                    FrtoVariant::Basic if covers_recover || partial_retransmission => {
                        self.conventional(FrtoStep::Step2a, a.ack, None)
                    }
                    FrtoVariant::SackEnhanced if covers_recover => {
                        self.conventional(FrtoStep::Step2a, a.ack, Some(2))
                    }
                    _ if !a.can_send_new => {
                        self.conventional(FrtoStep::Step2bNoNewData, a.ack, None)
                    }
                    _ => {
                        self.state = State::Step3;
                        Action {
                            send_new: 2,
                            ..Action::default()
                        }
                    }
                }
            }
            State::Step3 => {
                let recover = self.recover.unwrap_or(a.snd_max);
                match self.variant {
                    FrtoVariant::Basic => {
                        if advanced {
                            self.spurious(a.ack)
                        } else if a.is_dupack {
                            self.conventional(FrtoStep::Step3a, a.ack, Some(3))
                        } else {
                            Action::default()
                        }
                    }
                    FrtoVariant::SackEnhanced => {
                        if !advanced && !a.is_dupack {
                            return Action::default();
                        }
                        let beyond = a.ack > recover || a.sack_above_recover;
                        if beyond || (a.is_dupack && !a.newly_acked_below_recover) {
                            self.conventional(FrtoStep::Step3a, a.ack, Some(3))
                        } else if a.newly_acked_below_recover {
                            self.spurious(a.ack)
                        } else {
                            Action::default()
                        }
                    }
                }
            }
        }
    }

    fn conventional(&mut self, step: FrtoStep, ack: u64, cap: Option<u64>) -> Action {
        self.state = State::Idle;
        Action {
            verdict: Some(Verdict::Genuine(Evidence::Frto { step, ack })),
            send_new: 0,
            cwnd_cap_segments: cap,
        }
    }

    fn spurious(&mut self, ack: u64) -> Action {
        self.state = State::Idle;
        // §2 step 3b: recover = SND.UNA (the recovery is over).
        self.recover = Some(ack);
        Action {
            verdict: Some(Verdict::Spurious(Evidence::Frto {
                step: FrtoStep::Step3b,
                ack,
            })),
            ..Action::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeout(snd_una: u64, snd_max: u64) -> Timeout {
        Timeout {
            in_rto_recovery: false,
            in_fast_recovery: false,
            sack_loss_recovery: false,
            snd_una,
            snd_max,
            retransmitted_end: snd_una + 1000,
        }
    }

    fn ack(ack: u64, prior: u64) -> FrtoAck {
        FrtoAck {
            ack,
            prior_snd_una: prior,
            snd_max: 10_000,
            is_dupack: ack == prior,
            sack_above_recover: false,
            newly_acked_below_recover: ack > prior,
            can_send_new: true,
        }
    }

    #[test]
    fn fast_recovery_bars_the_sack_variant_and_the_basic_one_only_with_sack_recovery() {
        let reno = Timeout {
            in_fast_recovery: true,
            ..timeout(0, 10_000)
        };
        let sack = Timeout {
            sack_loss_recovery: true,
            ..reno
        };
        assert!(Frto::new(FrtoVariant::Basic).on_timeout(&reno), "§2.1");
        let mut f = Frto::new(FrtoVariant::Basic);
        assert!(!f.on_timeout(&sack), "§2.1: SHOULD NOT with SACK recovery");
        assert_eq!(f.recover(), Some(10_000));
        assert!(
            !Frto::new(FrtoVariant::SackEnhanced).on_timeout(&sack),
            "§3.1"
        );
    }

    #[test]
    fn basic_step2_duplicate_ack_stores_recover() {
        let mut f = Frto::new(FrtoVariant::Basic);
        f.on_timeout(&timeout(0, 10_000));
        let a = f.on_ack(&ack(0, 0));
        assert!(matches!(
            a.verdict,
            Some(Verdict::Genuine(Evidence::Frto {
                step: FrtoStep::Step2a,
                ..
            }))
        ));
        assert_eq!(f.recover(), Some(10_000));
    }

    #[test]
    fn recurring_timeout_in_step2_restarts_but_in_step3_falls_back() {
        let mut f = Frto::new(FrtoVariant::Basic);
        assert!(f.on_timeout(&timeout(0, 10_000)));
        let again = Timeout {
            in_rto_recovery: true,
            ..timeout(0, 10_000)
        };
        assert!(f.on_timeout(&again), "no ACK yet: step 1 again");
        assert_eq!(f.on_ack(&ack(1000, 0)).send_new, 2);
        assert_eq!(f.recover(), Some(10_000));
        let again = Timeout {
            in_rto_recovery: true,
            ..timeout(1000, 12_000)
        };
        assert!(!f.on_timeout(&again), "recover 10000 >= snd_una 1000");
        assert_eq!(f.recover(), Some(12_000));
    }

    #[test]
    fn basic_step2a_when_the_first_ack_covers_recover() {
        let mut f = Frto::new(FrtoVariant::Basic);
        f.on_timeout(&timeout(0, 10_000));
        let a = f.on_ack(&ack(10_000, 0));
        assert!(matches!(
            a.verdict,
            Some(Verdict::Genuine(Evidence::Frto {
                step: FrtoStep::Step2a,
                ..
            }))
        ));
        assert!(!f.holds_retransmissions());
    }
}
