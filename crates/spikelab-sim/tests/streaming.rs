//! Streamed traces: chunks handed over while the run goes, then the result's remaining rows,
//! concatenate to exactly the table a run without streaming returns; a slow consumer holds the
//! run back instead of letting chunks pile up.

use spikelab_sim::{parse, ColumnData, RunControl, Table, TraceLevel, World, MAX_PENDING_CHUNKS};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn concat(parts: &[Table]) -> Table {
    let mut out = parts[0].clone();
    for p in &parts[1..] {
        for (c, add) in out.columns.iter_mut().zip(&p.columns) {
            assert_eq!(c.name, add.name);
            match (&mut c.data, &add.data) {
                (ColumnData::I64(a), ColumnData::I64(b)) => a.extend_from_slice(b),
                (ColumnData::I32(a), ColumnData::I32(b)) => a.extend_from_slice(b),
                (ColumnData::F64(a), ColumnData::F64(b)) => a.extend_from_slice(b),
                (ColumnData::Dict(a, da), ColumnData::Dict(b, db)) => {
                    assert_eq!(da, db, "chunks share one dictionary");
                    a.extend_from_slice(b)
                }
                _ => panic!("column {} changed type", c.name),
            }
        }
    }
    out
}

fn same(a: &Table, b: &Table) -> bool {
    a.columns.len() == b.columns.len()
        && a.columns.iter().zip(&b.columns).all(|(x, y)| {
            x.name == y.name
                && match (&x.data, &y.data) {
                    (ColumnData::F64(p), ColumnData::F64(q)) => {
                        p.len() == q.len()
                            && p.iter().zip(q).all(|(u, v)| u.to_bits() == v.to_bits())
                    }
                    (p, q) => p == q,
                }
        })
}

#[test]
fn streamed_chunks_and_the_rest_are_the_whole_table() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lte-handover.toml"),
    )
    .unwrap();
    let sc = parse(&text, &[], Path::new(".")).unwrap();
    let whole = World::new(&sc, 1, TraceLevel::Packets).run(None).unwrap();

    let ctl = Arc::new(RunControl::default());
    ctl.stream_rows.store(5000, Ordering::Relaxed);
    let (sc2, ctl2) = (sc.clone(), ctl.clone());
    let run = std::thread::spawn(move || World::new(&sc2, 1, TraceLevel::Packets).run(Some(&ctl2)));
    let (mut ts, mut pk) = (Vec::new(), Vec::new());
    let mut most_pending = 0;
    while !run.is_finished() {
        // A slow consumer: the run must wait rather than pile chunks up.
        std::thread::sleep(std::time::Duration::from_millis(5));
        let chunks = ctl.take_chunks();
        most_pending = most_pending.max(chunks.len());
        for c in chunks {
            match c.table {
                "timeseries" => ts.push(c.data),
                _ => pk.push(c.data),
            }
        }
    }
    let rest = run.join().unwrap().unwrap();
    for c in ctl.take_chunks() {
        match c.table {
            "timeseries" => ts.push(c.data),
            _ => pk.push(c.data),
        }
    }
    assert!(pk.len() >= 10, "{} packet chunks", pk.len());
    assert!(
        most_pending <= 2 * MAX_PENDING_CHUNKS,
        "{most_pending} chunks pending"
    );
    // A chunk is flushed after the event that filled it: a few rows over the mark at most.
    assert!(pk.iter().all(|t| (5000..5100).contains(&t.num_rows())));
    ts.push(rest.timeseries);
    pk.push(rest.packets);
    assert!(same(&concat(&ts), &whole.timeseries));
    assert!(same(&concat(&pk), &whole.packets));
    assert!(same(&rest.runs, &whole.runs));
}
