//! Failover through the real endpoint: paper 004 §5 arithmetic (docs/models.md, SCTP), the §8.2
//! counter reset by a SACK, RFC 7829 PF and PSMR, the return to the primary.

mod common;
use common::*;

use spikelab_core::SimTime;
use spikelab_sctp::{PathState, SctpConfig, SctpEvent, T3Record};

const TOL: f64 = 1e-3;

/// Two paths (10 ms one way each); A warms up with 20 kB, then at `t0` the primary's RTO is set
/// to 2.802 s (SRTT 0.802 + 4·0.5), its forward path dies for `down_for` seconds (None:
/// forever) and the application writes 1 MB. Heartbeats off unless `hb`: 004's arithmetic
/// has only T3-rtx expiries.
fn scenario(cfg: SctpConfig, down_for: Option<f64>, hb: bool) -> (Net, SimTime) {
    let cfg = SctpConfig {
        heartbeats: hb,
        ..cfg
    };
    let mut net = Net::new(cfg, Some(20_000), &[10, 10], 7);
    net.connect();
    assert!(net.run_while(secs(30.0), |n| n.a.all_data_acked()));
    let t0 = net.now + dur_ms(100);
    net.run_until(t0);
    net.a.rto_estimator_mut(0).set_state_secs(0.802, 0.5);
    assert_eq!(
        net.a.path(0).rto,
        spikelab_core::SimDuration::from_millis(2802)
    );
    let end = down_for.map_or(SimTime::MAX, |d| {
        t0 + spikelab_core::SimDuration::from_secs_f64(d)
    });
    net.fwd[0].down.push((t0, end));
    net.a.send_more(1_000_000);
    net.flush();
    (net, t0)
}

fn t3s(net: &Net, dest: usize) -> Vec<T3Record> {
    net.events_a
        .iter()
        .filter_map(|e| match e {
            SctpEvent::T3Expiry(r) if r.dest == dest => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn became(net: &Net, dest: usize, to: PathState) -> Option<SimTime> {
    net.events_a.iter().find_map(|e| match e {
        SctpEvent::PathStateChange {
            at, dest: d, to: s, ..
        } if *d == dest && *s == to => Some(*at),
        _ => None,
    })
}

fn inactive_after(pmr: u32) -> (f64, Vec<T3Record>, Net) {
    let cfg = SctpConfig {
        path_max_retrans: pmr,
        ..SctpConfig::rfc4960(2)
    };
    let (mut net, t0) = scenario(cfg, None, false);
    assert!(
        net.run_while(t0 + dur_ms(400_000), |n| became(n, 0, PathState::Inactive)
            .is_some())
    );
    let r = t3s(&net, 0);
    let first = &r[0];
    assert_eq!(
        first.armed_at, t0,
        "the first T3 starts with the first write after the failure"
    );
    let at = became(&net, 0, PathState::Inactive).unwrap();
    ((at - first.armed_at).as_secs_f64(), r, net)
}

#[test]
fn paper_004_failover_pmr5_takes_146_862_s_on_the_sixth_timeout() {
    let (t, r, net) = inactive_after(5);
    assert!((t - 146.862).abs() < TOL, "inactive after {t} s");
    assert_eq!(r.len(), 6, "inactive on timeout PMR + 1 = 6, not 5");
    let rtos: Vec<f64> = r.iter().map(|x| x.rto.as_secs_f64()).collect();
    let want = [2.802, 5.604, 11.208, 22.416, 44.832, 60.0];
    for (a, b) in rtos.iter().zip(want) {
        assert!((a - b).abs() < TOL, "{rtos:?}");
    }
    let errs: Vec<u32> = r.iter().map(|x| x.errors).collect();
    assert_eq!(errs, vec![1, 2, 3, 4, 5, 6]);
    // Retransmissions went to the alternate; new data kept going to the primary until then.
    assert!(r.iter().all(|x| x.rtx_dest == 1));
    let inactive_at = became(&net, 0, PathState::Inactive).unwrap();
    let before: Vec<_> = net
        .new_data_since(r[0].armed_at)
        .into_iter()
        .filter(|x| x.0 < inactive_at)
        .collect();
    assert!(!before.is_empty() && before.iter().all(|x| x.1 == 0));
    // Then the failover: new data to the alternate.
    let f = &net.a.stats().failovers;
    assert_eq!((f[0].from, f[0].to, f[0].at), (0, 1, inactive_at));
    let after = net.new_data_since(inactive_at);
    assert!(!after.is_empty() && after.iter().all(|x| x.1 == 1));
    assert_eq!(net.a.state(), spikelab_sctp::AssocState::Established);
}

#[test]
fn paper_004_failover_pmr_0_1_2() {
    for (pmr, want) in [(0, 2.802), (1, 8.406), (2, 19.614)] {
        let (t, r, _) = inactive_after(pmr);
        assert!((t - want).abs() < TOL, "PMR {pmr}: {t} s");
        assert_eq!(r.len() as u32, pmr + 1);
    }
}

#[test]
fn a_sack_for_primary_data_between_timeouts_clears_the_counter() {
    // Down for 9 s: timeouts at +2.802 and +8.406 (data sent then is lost); the new data sent
    // at the third timeout (+19.614) gets through and its SACK clears the counter (§8.2).
    let (mut net, t0) = scenario(SctpConfig::rfc4960(2), Some(9.0), false);
    net.run_until(t0 + dur_ms(19_700));
    let r = t3s(&net, 0);
    assert_eq!(
        r.iter().map(|x| x.errors).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(
        net.a.path(0).errors,
        0,
        "cleared by the SACK of primary data"
    );
    assert_eq!(net.a.path(0).state, PathState::Active);
    net.run_until(t0 + dur_ms(400_000));
    assert!(became(&net, 0, PathState::Inactive).is_none());
    assert!(net.a.stats().failovers.is_empty());
}

#[test]
fn pf_with_pfmr_0_moves_new_data_after_the_first_timeout() {
    let cfg = SctpConfig {
        pf_max_retrans: Some(0),
        ..SctpConfig::rfc4960(2)
    };
    let (mut net, t0) = scenario(cfg, None, true);
    let first = t0 + dur_ms(2802);
    net.run_until(first + dur_ms(500));
    assert_eq!(became(&net, 0, PathState::PotentiallyFailed), Some(first));
    assert_eq!(net.a.data_destination(), 1);
    let after = net.new_data_since(first);
    assert!(
        !after.is_empty() && after.iter().all(|x| x.1 == 1),
        "{after:?}"
    );
    // Without PF the same moment leaves new data on the primary.
    let (mut plain, p0) = scenario(SctpConfig::rfc4960(2), None, false);
    plain.run_until(p0 + dur_ms(3300));
    assert!(plain
        .new_data_since(p0 + dur_ms(2802))
        .iter()
        .all(|x| x.1 == 0));
    // PF heartbeats once per (backed-off) RTO: inactive after the same 146.862 s.
    net.run_while(t0 + dur_ms(400_000), |n| {
        became(n, 0, PathState::Inactive).is_some()
    });
    let at = became(&net, 0, PathState::Inactive).unwrap();
    assert!(
        ((at - t0).as_secs_f64() - 146.862).abs() < TOL,
        "{}",
        at - t0
    );
}

/// The primary's forward path is down for 20 s; PFMR 0. A PF HEARTBEAT after the outage is
/// acknowledged.
fn return_scenario(psmr: Option<u32>) -> (Net, SimTime) {
    let cfg = SctpConfig {
        pf_max_retrans: Some(0),
        psmr,
        ..SctpConfig::rfc4960(2)
    };
    let (mut net, t0) = scenario(cfg, Some(20.0), true);
    net.run_until(t0 + dur_ms(60_000));
    (net, t0)
}

#[test]
fn heartbeat_ack_returns_traffic_to_the_primary_without_psmr() {
    let (net, t0) = return_scenario(None);
    let f = &net.a.stats().failovers;
    assert_eq!((f[0].from, f[0].to), (0, 1));
    assert_eq!((f[1].from, f[1].to), (1, 0), "{f:?}");
    // The return is triggered by a HEARTBEAT-ACK: the first one after the outage (HBs at
    // +2.802, +8.406, +19.614 are lost; the one at +42.030 is answered 20 ms later).
    assert!(
        ((f[1].at - t0).as_secs_f64() - 42.05).abs() < 0.01,
        "{}",
        f[1].at - t0
    );
    assert_eq!(net.a.primary(), 0);
    assert_eq!(net.a.data_destination(), 0);
    assert!(net.new_data_since(f[1].at).iter().all(|x| x.1 == 0));
}

#[test]
fn with_psmr_the_switchover_is_permanent() {
    let (net, _) = return_scenario(Some(0));
    assert_eq!(net.a.primary(), 1);
    assert_eq!(net.a.data_destination(), 1);
    assert_eq!(
        net.a.path(0).state,
        PathState::Active,
        "the old primary is back"
    );
    assert_eq!(net.a.stats().failovers.len(), 1);
    assert!(net
        .events_a
        .iter()
        .any(|e| matches!(e, SctpEvent::PrimaryChange { from: 0, to: 1, .. })));
}

/// RFC 7829 §3.2 rule 4: with the primary inactive and the alternate just gone PF (its first
/// T3 expiry, PFMR 0), the alternate is the only PF destination, and the retransmission MUST
/// go to it, not back to the inactive primary.
#[test]
fn with_no_active_destination_a_timeout_retransmits_to_the_pf_one() {
    let cfg = SctpConfig {
        pf_max_retrans: Some(0),
        path_max_retrans: 2,
        ..SctpConfig::rfc4960(2)
    };
    let (mut net, t0) = scenario(cfg, None, true);
    assert!(
        net.run_while(t0 + dur_ms(200_000), |n| became(n, 0, PathState::Inactive)
            .is_some())
    );
    let dead = became(&net, 0, PathState::Inactive).unwrap();
    assert_eq!(net.a.data_destination(), 1);
    net.fwd[1].down.push((net.now, SimTime::MAX));
    net.a.send_more(1_000_000);
    net.flush();
    assert!(net.run_while(dead + dur_ms(100_000), |n| !t3s(n, 1).is_empty()));
    let r = &t3s(&net, 1)[0];
    assert_eq!(net.a.path(1).state, PathState::PotentiallyFailed);
    assert_eq!(net.a.path(0).state, PathState::Inactive);
    assert_eq!(
        r.rtx_dest, 1,
        "to the PF alternate, not the inactive primary"
    );
}

/// RFC 7829 §3.2 rules 5-6: an idle alternate whose HEARTBEAT goes unanswered becomes PF
/// (PFMR 0) and is probed with one HEARTBEAT at once, not two.
#[test]
fn a_destination_that_goes_pf_on_a_heartbeat_timeout_gets_one_heartbeat() {
    let cfg = SctpConfig {
        pf_max_retrans: Some(0),
        ..SctpConfig::rfc4960(2)
    };
    let mut net = Net::new(cfg, Some(20_000), &[10, 10], 7);
    net.fwd[1].down.push((SimTime::ZERO, SimTime::MAX));
    net.connect();
    assert!(
        net.run_while(secs(300.0), |n| became(n, 1, PathState::PotentiallyFailed)
            .is_some())
    );
    let pf_at = became(&net, 1, PathState::PotentiallyFailed).unwrap();
    net.run_until(pf_at + dur_ms(1));
    // The first HEARTBEAT timed out (the PF transition), the second went at once.
    assert_eq!(net.a.stats().per_dest[1].heartbeats_sent, 2);
    assert_eq!(net.a.path(1).errors, 1);
}
