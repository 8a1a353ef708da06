//! The per-frame comments of the capture (see [`crate::pcapng`]) and the capture's metadata.

use crate::pipeline::{FlowMeta, PathMeta};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Version of the capture layout (metadata and comments).
pub const CAPTURE_FORMAT: u32 = 1;

/// The section comment: everything needed to read the capture without the scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaptureMeta {
    pub format: u32,
    /// CLOCK_REALTIME ns of the run's time 0 (the scenario's t = 0).
    pub t0_ns: u64,
    pub seed: u64,
    pub paths: Vec<PathMeta>,
    pub flows: Vec<FlowMeta>,
    /// Interface 0 is the sender's side, interface 1 the receiver's.
    pub ifaces: Vec<String>,
}

/// What one packet record says the emulator did.
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    In {
        pkt: u64,
        flow: i32,
        path: i32,
    },
    Out {
        pkt: u64,
        /// Intended departure, ns since t0.
        due: u64,
        exits: Vec<u64>,
    },
    Drop {
        pkt: u64,
        stage: u16,
        cause: String,
        /// Intended drop time, ns since t0.
        at: u64,
        exits: Vec<u64>,
    },
}

pub fn write_in(s: &mut String, pkt: u64, flow: i32, path: i32) {
    s.clear();
    let _ = write!(s, "in pkt={pkt} flow={flow} path={path}");
}

fn write_exits(s: &mut String, exits: &[u64]) {
    s.push_str(" exits=");
    for (i, e) in exits.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{e}");
    }
}

pub fn write_out(s: &mut String, pkt: u64, due: u64, exits: &[u64]) {
    s.clear();
    let _ = write!(s, "out pkt={pkt} due={due}");
    write_exits(s, exits);
}

pub fn write_drop(s: &mut String, pkt: u64, stage: u16, cause: &str, at: u64, exits: &[u64]) {
    s.clear();
    let _ = write!(s, "drop pkt={pkt} stage={stage} cause={cause} at={at}");
    write_exits(s, exits);
}

impl Note {
    pub fn parse(s: &str) -> Option<Note> {
        let mut words = s.split_ascii_whitespace();
        let kind = words.next()?;
        let mut pkt = None;
        let (mut flow, mut path, mut stage) = (-1i32, -1i32, 0u16);
        let (mut due, mut at) = (0u64, 0u64);
        let mut cause = String::new();
        let mut exits = Vec::new();
        for w in words {
            let (k, v) = w.split_once('=')?;
            match k {
                "pkt" => pkt = v.parse().ok(),
                "flow" => flow = v.parse().ok()?,
                "path" => path = v.parse().ok()?,
                "stage" => stage = v.parse().ok()?,
                "due" => due = v.parse().ok()?,
                "at" => at = v.parse().ok()?,
                "cause" => cause = v.to_string(),
                "exits" => {
                    exits = v
                        .split(',')
                        .filter(|x| !x.is_empty())
                        .map(|x| x.parse())
                        .collect::<Result<_, _>>()
                        .ok()?
                }
                _ => {}
            }
        }
        let pkt = pkt?;
        match kind {
            "in" => Some(Note::In { pkt, flow, path }),
            "out" => Some(Note::Out { pkt, due, exits }),
            "drop" => Some(Note::Drop {
                pkt,
                stage,
                cause,
                at,
                exits,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_round_trip() {
        let mut s = String::new();
        write_in(&mut s, 3, 0, 1);
        assert_eq!(
            Note::parse(&s),
            Some(Note::In {
                pkt: 3,
                flow: 0,
                path: 1
            })
        );
        write_out(&mut s, 3, 99, &[5, 99]);
        assert_eq!(s, "out pkt=3 due=99 exits=5,99");
        assert_eq!(
            Note::parse(&s),
            Some(Note::Out {
                pkt: 3,
                due: 99,
                exits: vec![5, 99]
            })
        );
        write_drop(&mut s, 4, 1, "profile", 7, &[2]);
        assert_eq!(
            Note::parse(&s),
            Some(Note::Drop {
                pkt: 4,
                stage: 1,
                cause: "profile".into(),
                at: 7,
                exits: vec![2]
            })
        );
        write_out(&mut s, 5, 6, &[]);
        assert_eq!(
            Note::parse(&s),
            Some(Note::Out {
                pkt: 5,
                due: 6,
                exits: vec![]
            })
        );
        assert_eq!(Note::parse("bogus"), None);
        assert_eq!(Note::parse("in flow=1"), None);
    }
}
