//! The `ns2` SCTP profile against ns-2.35's Agent/SCTP: the scenarios of docs/models.md's
//! "The ns2 SCTP profile" table, their counts measured with ns-2.35 itself.

use spikelab_sim::{parse, ColumnData, Table, TraceLevel, World};
use std::path::Path;

fn path(name: &str, delay: &str, queue: u32) -> String {
    format!(
        "[path.{name}]\n[[path.{name}.stage]]\ntype = \"rate\"\nrate = \"10Mbps\"\n\
         queue = {queue}\n[[path.{name}.stage]]\ntype = \"delay\"\n{delay}\n"
    )
}

struct Counts {
    t3: i64,
    fr: i64,
    /// Packets the sender put on each forward path, and those of them the queue dropped.
    launched: Vec<i64>,
    dropped: Vec<i64>,
    failovers: i64,
    delivered: i64,
    /// (time in s, variable) of the rto_expiry, fast_retx and failover markers.
    marks: Vec<(f64, String)>,
}

fn dict(t: &Table, name: &str) -> (Vec<i32>, Vec<String>) {
    match t.column(name) {
        Some(ColumnData::Dict(c, n)) => (c.clone(), n.clone()),
        _ => panic!("{name}"),
    }
}

fn run(text: &str, fwd: &[&str]) -> Counts {
    let sc = parse(text, &[], Path::new(".")).unwrap();
    let r = World::new(&sc, sc.sim.seed, TraceLevel::Packets)
        .run(None)
        .unwrap();
    let i64s = |t: &Table, n: &str| match t.column(n) {
        Some(ColumnData::I64(v)) => v.clone(),
        Some(ColumnData::I32(v)) => v.iter().map(|&x| x as i64).collect(),
        _ => panic!("{n}"),
    };
    let (ev, evn) = dict(&r.packets, "event");
    let (pa, pan) = dict(&r.packets, "path");
    let code = |names: &[String], s: &str| names.iter().position(|n| n == s).unwrap() as i32;
    let launch: Vec<i32> = ["send", "retransmit", "heartbeat", "control"]
        .iter()
        .map(|s| code(&evn, s))
        .collect();
    let drop = code(&evn, "drop");
    let mut launched = Vec::new();
    let mut dropped = Vec::new();
    for f in fwd {
        let p = code(&pan, f);
        let on = |e: &dyn Fn(i32) -> bool| {
            ev.iter().zip(&pa).filter(|(&x, &y)| y == p && e(x)).count() as i64
        };
        launched.push(on(&|x| launch.contains(&x)));
        dropped.push(on(&|x| x == drop));
    }
    let (var, varn) = dict(&r.timeseries, "var");
    let t = i64s(&r.timeseries, "t_ns");
    let marks = var
        .iter()
        .zip(&t)
        .map(|(&v, &t)| (t as f64 / 1e9, varn[v as usize].clone()))
        .filter(|(_, v)| ["rto_expiry", "fast_retx", "failover"].contains(&v.as_str()))
        .collect();
    Counts {
        marks,
        t3: i64s(&r.runs, "rto_count")[0],
        fr: i64s(&r.runs, "fast_retx_count")[0],
        launched,
        dropped,
        failovers: i64s(&r.runs, "failovers")[0],
        delivered: i64s(&r.runs, "bytes_delivered")[0],
    }
}

fn single(profile: &str, queue: u32, delay: &str) -> String {
    format!(
        "[sim]\nduration = \"20s\"\nseed = 1\n{}{}[[flow]]\nprotocol = \"sctp\"\n\
         paths = [{{ fwd = \"fwd\", rev = \"rev\" }}]\nstart = \"0.5s\"\n[flow.sctp]\n\
         profile = \"{profile}\"\n",
        path("fwd", delay, queue),
        path("rev", "delay = \"20ms\"", 99),
    )
}

const SPIKE: &str = "profile = [[0, 20, 0], [5000, 20, 0], [5000, 1500, 0], [5500, 1500, 0], \
                     [5500, 20, 0]]\nreorder = true";

fn multi(profile: &str) -> String {
    format!(
        "[sim]\nduration = \"100s\"\nseed = 1\n{}{}{}{}[[flow]]\nprotocol = \"sctp\"\n\
         paths = [{{ fwd = \"a_fwd\", rev = \"a_rev\" }}, {{ fwd = \"b_fwd\", rev = \"b_rev\" }}]\n\
         start = \"0.5s\"\n[flow.sctp]\nprofile = \"{profile}\"\n",
        path("a_fwd", BLACKHOLE, 99),
        path("a_rev", "delay = \"20ms\"", 99),
        path("b_fwd", "delay = \"30ms\"", 99),
        path("b_rev", "delay = \"30ms\"", 99),
    )
}

/// The primary's forward path loses every packet from 5 s on.
const BLACKHOLE: &str = "profile = [[0, 20, 0], [4980, 20, 0], [4980, 20, 1]]";

#[test]
#[ignore = "prints the numbers of docs/models.md's ns-2 comparison"]
fn print_ns2_comparison() {
    for profile in ["rfc4960", "rfc9260", "ns2"] {
        let c = run(&single(profile, 99, SPIKE), &["fwd"]);
        println!(
            "{profile} spike: t3 {} fr {} launched {:?} dropped {:?} delivered {}",
            c.t3, c.fr, c.launched, c.dropped, c.delivered
        );
        let c = run(&single(profile, 7, "delay = \"20ms\""), &["fwd"]);
        println!(
            "{profile} overflow: t3 {} fr {} launched {:?} dropped {:?} delivered {}",
            c.t3, c.fr, c.launched, c.dropped, c.delivered
        );
        let m: Vec<String> = c.marks.iter().map(|(t, v)| format!("{t:.2} {v}")).collect();
        println!("  {}", m.join(", "));
        let c = run(&multi(profile), &["a_fwd", "b_fwd"]);
        println!(
            "{profile} failover: t3 {} fr {} launched {:?} dropped {:?} failovers {}",
            c.t3, c.fr, c.launched, c.dropped, c.failovers
        );
        let m: Vec<String> = c.marks.iter().map(|(t, v)| format!("{t:.2} {v}")).collect();
        println!("  {}", m.join(", "));
    }
}

/// Within 2 % of ns-2.35's count.
fn near(ours: i64, ns2: i64) -> bool {
    (ours - ns2).abs() as f64 <= 0.02 * ns2 as f64
}

/// 10 Mbit/s, 20 ms each way; the forward delay is 1.5 s from 5 s to 5.5 s (packets overtake
/// as on an ns-2 link whose `delay_` drops back). ns-2.35 (`$dl set delay_ 1.5` at 5 s,
/// `0.02` at 5.5 s, FTP from 0.5 s, 20 s): one timeout (`timeoutCount_` 2, whose first 1 is
/// Reset()'s trace trigger), no fast retransmit, 14731 packets into the link queue.
#[test]
fn ns2_profile_matches_ns2_on_a_delay_spike() {
    let c = run(&single("ns2", 99, SPIKE), &["fwd"]);
    assert_eq!((c.t3, c.fr), (1, 0));
    assert!(near(c.launched[0], 14731), "{:?}", c.launched);
    assert_eq!(c.dropped[0], 0);
}

/// The same link with ns-2's `queue-limit 8` (DropTail holds 7 waiting packets: it drops when
/// `length + 1 >= limit`, queue/drop-tail.cc) and no spike. ns-2.35: no timeout, 39 fast
/// retransmits, 10552 packets into the queue, 166 dropped there.
#[test]
fn ns2_profile_matches_ns2_on_a_queue_overflow() {
    let c = run(&single("ns2", 7, "delay = \"20ms\""), &["fwd"]);
    assert_eq!(c.t3, 0);
    assert!((c.fr - 39).abs() <= 1, "{}", c.fr);
    assert!(near(c.launched[0], 10552), "{:?}", c.launched);
    assert!(
        near(c.launched[0] - c.dropped[0], 10552 - 166),
        "{:?}",
        c.dropped
    );
}

/// Two destinations (20 ms and 30 ms, 10 Mbit/s each); from 5 s every packet on the primary's
/// forward link is lost (ns-2.35: an ErrorModel with `rate_ 1.0` put on the link with
/// `link-lossmodel`, so packets leaving the link from 5 s on). ns-2.35 (100 s): six timeouts at
/// 6.22, 8.49, 12.75, 21.01, 37.27 and 69.53 s, the failover with the last; 3522 packets on the
/// primary's link, 21160 on the alternate's.
#[test]
fn ns2_profile_matches_ns2_on_a_failover() {
    let c = run(&multi("ns2"), &["a_fwd", "b_fwd"]);
    assert_eq!((c.t3, c.fr, c.failovers), (6, 0, 1));
    let t3: Vec<f64> = c
        .marks
        .iter()
        .filter(|m| m.1 == "rto_expiry")
        .map(|m| m.0)
        .collect();
    let ns2 = [6.22, 8.49, 12.75, 21.01, 37.27, 69.53];
    for (ours, theirs) in t3.iter().zip(ns2) {
        assert!((ours - theirs).abs() < 0.05, "{t3:?}");
    }
    assert!(near(c.launched[0], 3522), "{:?}", c.launched);
    assert!(near(c.launched[1], 21160), "{:?}", c.launched);
}
