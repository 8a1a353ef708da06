//! Helpers shared by the whole-run tests: run a scenario, read its tables' columns.
#![allow(dead_code)]

use spikelab_sim::{ColumnData, Scenario, Table, TraceLevel, World};

/// The runs and packets tables of one run at `level`.
pub fn run(sc: &Scenario, level: TraceLevel) -> (Table, Table) {
    let r = World::new(sc, sc.sim.seed, level).run(None).unwrap();
    (r.runs, r.packets)
}

pub fn col<'a>(t: &'a Table, name: &str) -> &'a ColumnData {
    &t.columns
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .data
}

/// An integer column (int64 or int32) as i64.
pub fn i64s(t: &Table, name: &str) -> Vec<i64> {
    match col(t, name) {
        ColumnData::I64(v) => v.clone(),
        ColumnData::I32(v) => v.iter().map(|&x| x as i64).collect(),
        c => panic!("{name}: {c:?}"),
    }
}

/// A numeric column as f64.
pub fn f64s(t: &Table, name: &str) -> Vec<f64> {
    match col(t, name) {
        ColumnData::F64(v) => v.clone(),
        ColumnData::I64(v) => v.iter().map(|&x| x as f64).collect(),
        ColumnData::I32(v) => v.iter().map(|&x| x as f64).collect(),
        c => panic!("{name}: {c:?}"),
    }
}

/// The first row's value of a float column.
pub fn f64_of(t: &Table, name: &str) -> f64 {
    match col(t, name) {
        ColumnData::F64(v) => v[0],
        c => panic!("{name}: {c:?}"),
    }
}

/// The dictionary strings of a column, row by row ("" for null).
pub fn strs(t: &Table, name: &str) -> Vec<String> {
    match col(t, name) {
        ColumnData::Dict(codes, names) => codes
            .iter()
            .map(|&c| {
                if c < 0 {
                    String::new()
                } else {
                    names[c as usize].clone()
                }
            })
            .collect(),
        c => panic!("{name}: {c:?}"),
    }
}

/// Equal values, NaN equal to NaN (bit for bit).
pub fn same(a: &ColumnData, b: &ColumnData) -> bool {
    match (a, b) {
        (ColumnData::F64(x), ColumnData::F64(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        _ => a == b,
    }
}
