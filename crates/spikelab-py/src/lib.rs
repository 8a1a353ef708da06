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

create_exception!(
    _core,
    PySimulationError,
    PyRuntimeError,
    "A run that could not finish: simulated time stopped advancing, a trace outgrew its bound, or the core failed; the message says when (simulated time) and why."
);

fn scenario_err(e: ScenarioError) -> PyErr {
    PyScenarioError::new_err(e.to_string())
}

fn run_err(e: spikelab_sim::RunError) -> PyErr {
    PySimulationError::new_err(e.to_string())
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

/// What each flow's profile resolved to, key by key, as JSON (a list of notes).
#[pyfunction]
#[pyo3(signature = (text, overrides=Vec::new()))]
fn profile_notes(text: &str, overrides: Vec<String>) -> PyResult<String> {
    let notes = spikelab_sim::profile_notes(text, &overrides).map_err(scenario_err)?;
    serde_json::to_string(&notes).map_err(|e| PyRuntimeError::new_err(e.to_string()))
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
        if let Some(s) = seed {
            if s > i64::MAX as u64 {
                return Err(scenario_err(ScenarioError::new(
                    "seed",
                    format!("must be <= {}, got {s}", i64::MAX),
                )));
            }
        }
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

    /// The runs table of this scenario before any event (columns and settings, counters zero),
    /// without simulating: the schema an emulated run fills in.
    fn runs_template<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let w = spikelab_sim::World::new(&self.scenario, self.seed, TraceLevel::Summary);
        table_to_py(py, w.unstarted().runs)
    }

    /// Takes the trace chunks streamed so far: a list of (table name, table), oldest first.
    /// Safe to call from another thread while `run()` executes.
    fn take_chunks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for c in self.ctl.take_chunks() {
            out.append((c.table, table_to_py(py, c.data)?))?;
        }
        Ok(out)
    }

    /// Whether `run()` has ended (no more chunks will be streamed).
    fn finished(&self) -> bool {
        self.ctl.is_finished()
    }

    /// Waits up to `timeout_s` seconds (without the GIL) for trace chunks, returning as soon
    /// as one is streamed or the run ends, and takes them as `take_chunks()` does.
    fn wait_chunks<'py>(&self, py: Python<'py>, timeout_s: f64) -> PyResult<Bound<'py, PyList>> {
        let timeout = std::time::Duration::from_secs_f64(timeout_s.clamp(0.0, 3600.0));
        let ctl = self.ctl.clone();
        let chunks = py.detach(move || ctl.wait_chunks(timeout));
        let out = PyList::empty(py);
        for c in chunks {
            out.append((c.table, table_to_py(py, c.data)?))?;
        }
        Ok(out)
    }

    /// Runs the simulation (once) and returns the result tables as columnar buffers. With
    /// `stream_rows` > 0, the timeseries and packets rows leave in chunks of that many rows
    /// through `take_chunks()` while the run goes (the run waits if a few chunks are left
    /// untaken); the returned tables then hold only the rows after the last chunk.
    #[pyo3(signature = (stream_rows=0))]
    fn run<'py>(&self, py: Python<'py>, stream_rows: u64) -> PyResult<Bound<'py, PyDict>> {
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
        ctl.stream_rows.store(stream_rows, Ordering::Relaxed);
        let (seed, level) = (self.seed, self.level);
        let started = std::time::Instant::now();
        let result = py
            .detach(move || spikelab_sim::run_scenario(&sc, Some(seed), Some(level), Some(&ctl)))
            .map_err(run_err)?;
        if result.cancelled {
            return Err(PyKeyboardInterrupt::new_err("simulation cancelled"));
        }
        let wall = started.elapsed().as_secs_f64();
        let out = PyDict::new(py);
        let events = result.events;
        let spikelab_sim::RunResult {
            runs,
            timeseries,
            packets,
            ..
        } = result;
        out.set_item("runs", table_to_py(py, runs)?)?;
        out.set_item("timeseries", table_to_py(py, timeseries)?)?;
        out.set_item("packets", table_to_py(py, packets)?)?;
        out.set_item("wall_s", wall)?;
        out.set_item("events", events)?;
        Ok(out)
    }
}

/// The column's values as little-endian bytes: on little-endian hosts a view of the vector
/// itself (no copy), elsewhere a converted copy.
fn le_view<T: Copy, const N: usize>(
    v: &[T],
    f: impl Fn(T) -> [u8; N],
) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: T is a plain numeric type (i32/i64/f64) of size N without padding; the byte
        // view covers exactly the vector's initialised elements and lives as long as `v`.
        let bytes = unsafe {
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v))
        };
        std::borrow::Cow::Borrowed(bytes)
    } else {
        let mut out = Vec::with_capacity(v.len() * N);
        for &x in v {
            out.extend_from_slice(&f(x));
        }
        std::borrow::Cow::Owned(out)
    }
}

/// Hands a table over column by column, freeing each Rust column once Python holds its bytes,
/// so a long trace exists at most once (plus one column) in memory.
fn table_to_py<'py>(py: Python<'py>, t: Table) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("num_rows", t.num_rows())?;
    let cols = PyList::empty(py);
    for c in t.columns {
        let cd = PyDict::new(py);
        cd.set_item("name", &c.name)?;
        let (ty, bytes) = match &c.data {
            ColumnData::I64(v) => ("int64", PyBytes::new(py, &le_view(v, i64::to_le_bytes))),
            ColumnData::I32(v) => ("int32", PyBytes::new(py, &le_view(v, i32::to_le_bytes))),
            ColumnData::F64(v) => ("float64", PyBytes::new(py, &le_view(v, f64::to_le_bytes))),
            ColumnData::Dict(codes, dict) => {
                cd.set_item("dictionary", dict.clone())?;
                ("dict", PyBytes::new(py, &le_view(codes, i32::to_le_bytes)))
            }
        };
        drop(c);
        cd.set_item("type", ty)?;
        cd.set_item("data", bytes)?;
        cols.append(cd)?;
    }
    d.set_item("columns", cols)?;
    Ok(d)
}

/// A panic in the core is caught and reported as an exception with its message (the run
/// loop adds the simulated time); the default hook would also print a Rust backtrace hint to
/// stderr, which is noise to a user. `SPIKELAB_DEBUG=1` keeps the default report.
fn quiet_panics() {
    if std::env::var_os("SPIKELAB_DEBUG").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let py = m.py();
    // Importable names, so the errors pickle (a Dask or process-pool worker's error reaches
    // the parent intact).
    for (name, ty) in [
        ("ScenarioError", py.get_type::<PyScenarioError>()),
        ("SimulationError", py.get_type::<PySimulationError>()),
    ] {
        ty.setattr("__module__", "spikelab._core")?;
        ty.setattr("__name__", name)?;
        ty.setattr("__qualname__", name)?;
        m.add(name, ty)?;
    }
    quiet_panics();
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(profile_notes, m)?)?;
    m.add_class::<Simulation>()?;
    emu::register(m)?;
    Ok(())
}
