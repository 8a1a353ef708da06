//! `spikelab._core`: the Rust simulator for Python.
//!
//! Results cross the boundary as columnar buffers (little-endian bytes per column, dictionary
//! codes for strings), never as one Python object per value. All Rust → Python error mapping
//! lives in [`scenario_err`].

use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use spikelab_sim::{ColumnData, RunControl, Scenario, ScenarioError, Table, TraceLevel};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

mod emu;

create_exception!(
    _core,
    PyScenarioError,
    PyValueError,
    "A malformed scenario; the message names the field: `flow[0].tcp.rto.min: must be > 0, got 0ms`."
);

fn scenario_err(e: ScenarioError) -> PyErr {
    PyScenarioError::new_err(e.to_string())
}

fn parse_trace(trace: Option<&str>) -> PyResult<Option<TraceLevel>> {
    trace
        .map(TraceLevel::parse)
        .transpose()
        .map_err(scenario_err)
}

/// Validates a scenario and returns it, resolved, as JSON.
#[pyfunction]
#[pyo3(signature = (text, overrides=Vec::new(), base_dir=".".to_string()))]
fn resolve(text: &str, overrides: Vec<String>, base_dir: String) -> PyResult<String> {
    let sc = spikelab_sim::parse(text, &overrides, Path::new(&base_dir)).map_err(scenario_err)?;
    serde_json::to_string(&sc).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// One simulation run, prepared; `run()` executes it without holding the GIL.
#[pyclass(module = "spikelab._core")]
struct Simulation {
    scenario: Arc<Scenario>,
    seed: u64,
    level: TraceLevel,
    ctl: Arc<RunControl>,
    used: Mutex<bool>,
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (text, overrides=Vec::new(), base_dir=".".to_string(), seed=None, trace=None))]
    fn new(
        text: &str,
        overrides: Vec<String>,
        base_dir: String,
        seed: Option<u64>,
        trace: Option<&str>,
    ) -> PyResult<Simulation> {
        let sc =
            spikelab_sim::parse(text, &overrides, Path::new(&base_dir)).map_err(scenario_err)?;
        let level = parse_trace(trace)?.unwrap_or(sc.sim.trace);
        Ok(Simulation {
            seed: seed.unwrap_or(sc.sim.seed),
            level,
            scenario: Arc::new(sc),
            ctl: Arc::new(RunControl::default()),
            used: Mutex::new(false),
        })
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.seed
    }

    #[getter]
    fn trace(&self) -> &'static str {
        match self.level {
            TraceLevel::Summary => "summary",
            TraceLevel::Timeseries => "timeseries",
            TraceLevel::Packets => "packets",
        }
    }

    #[getter]
    fn duration_s(&self) -> f64 {
        self.scenario.sim.duration.0.as_secs_f64()
    }

    #[getter]
    fn scenario_json(&self) -> PyResult<String> {
        serde_json::to_string(&*self.scenario).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Fraction of simulated time done, 0..1; safe to call while `run()` executes.
    fn progress(&self) -> f64 {
        let d = self.scenario.sim.duration.0.as_nanos().max(1) as f64;
        (self.ctl.progress_ns.load(Ordering::Relaxed) as f64 / d).min(1.0)
    }

    /// Asks a running `run()` (in another thread) to stop; it then raises KeyboardInterrupt.
    fn cancel(&self) {
        self.ctl.cancel.store(true, Ordering::Relaxed);
    }

    /// Runs the simulation (once) and returns the result tables as columnar buffers.
    fn run<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        {
            let mut used = self
                .used
                .lock()
                .map_err(|_| PyRuntimeError::new_err("poisoned"))?;
            if *used {
                return Err(PyRuntimeError::new_err("a Simulation runs only once"));
            }
            *used = true;
        }
        let sc = self.scenario.clone();
        let ctl = self.ctl.clone();
        let (seed, level) = (self.seed, self.level);
        let started = std::time::Instant::now();
        let result =
            py.detach(move || spikelab_sim::run_scenario(&sc, Some(seed), Some(level), Some(&ctl)));
        if result.cancelled {
            return Err(PyKeyboardInterrupt::new_err("simulation cancelled"));
        }
        let wall = started.elapsed().as_secs_f64();
        let out = PyDict::new(py);
        out.set_item("runs", table_to_py(py, &result.runs)?)?;
        out.set_item("timeseries", table_to_py(py, &result.timeseries)?)?;
        out.set_item("packets", table_to_py(py, &result.packets)?)?;
        out.set_item("wall_s", wall)?;
        out.set_item("events", result.events)?;
        Ok(out)
    }
}

fn le_bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&f(x));
    }
    out
}

fn table_to_py<'py>(py: Python<'py>, t: &Table) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("num_rows", t.num_rows())?;
    let cols = PyList::empty(py);
    for c in &t.columns {
        let cd = PyDict::new(py);
        cd.set_item("name", &c.name)?;
        let (ty, bytes) = match &c.data {
            ColumnData::I64(v) => ("int64", le_bytes(v, i64::to_le_bytes)),
            ColumnData::I32(v) => ("int32", le_bytes(v, i32::to_le_bytes)),
            ColumnData::F64(v) => ("float64", le_bytes(v, f64::to_le_bytes)),
            ColumnData::Dict(codes, dict) => {
                cd.set_item("dictionary", dict.clone())?;
                ("dict", le_bytes(codes, i32::to_le_bytes))
            }
        };
        cd.set_item("type", ty)?;
        cd.set_item("data", PyBytes::new(py, &bytes))?;
        cols.append(cd)?;
    }
    d.set_item("columns", cols)?;
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ScenarioError", m.py().get_type::<PyScenarioError>())?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_class::<Simulation>()?;
    emu::register(m)?;
    Ok(())
}
