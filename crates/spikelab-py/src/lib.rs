//! `spikelab._core`: the Rust simulator for Python.
//!
//! Results cross the boundary as columnar buffers (little-endian bytes per column, dictionary
//! codes for strings), never as one Python object per value. Rust → Python errors are mapped
//! in [`scenario_err`] and [`run_err`] (scenarios, runs) and in `capture::capture_err` (captures).

use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use spikelab_sctp::rto_study::{Alignment, StudyParams};
use spikelab_sim::{schema, ColumnData, RunControl, Scenario, ScenarioError, Table, TraceLevel};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

mod capture;
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
        table_to_py(py, "runs", w.unstarted().runs)
    }

    /// Takes the trace chunks streamed so far: a list of (table name, table), oldest first.
    /// Safe to call from another thread while `run()` executes.
    fn take_chunks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for c in self.ctl.take_chunks() {
            out.append((c.table, table_to_py(py, c.table, c.data)?))?;
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
            out.append((c.table, table_to_py(py, c.table, c.data)?))?;
        }
        Ok(out)
    }

    /// Runs the simulation (once) and returns the result tables as columnar buffers. With
    /// `stream_rows` > 0, the timeseries and packets rows leave in chunks of that many rows
    /// through `take_chunks()` while the run goes (the run waits if a few chunks are left
    /// untaken); the returned tables then hold only the rows after the last chunk. With
    /// `pcap_dir`, the captures of `sim.pcap` are written there (`pcaps` lists them).
    #[pyo3(signature = (stream_rows=0, pcap_dir=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        stream_rows: u64,
        pcap_dir: Option<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
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
            .detach(move || match pcap_dir {
                Some(dir) => spikelab_sim::run_scenario_pcap(
                    &sc,
                    Some(seed),
                    Some(level),
                    Some(&ctl),
                    Path::new(&dir),
                ),
                None => spikelab_sim::run_scenario(&sc, Some(seed), Some(level), Some(&ctl)),
            })
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
            pcaps,
            ..
        } = result;
        let pcaps: Vec<String> = pcaps
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        out.set_item("pcaps", pcaps)?;
        out.set_item("runs", table_to_py(py, "runs", runs)?)?;
        out.set_item("timeseries", table_to_py(py, "timeseries", timeseries)?)?;
        out.set_item("packets", table_to_py(py, "packets", packets)?)?;
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

/// Hands table `name` (`runs`, `timeseries`, `packets`; the emulator's `series`) over column
/// by column, freeing each Rust column once Python holds its bytes, so a long trace exists at
/// most once (plus one column) in memory. Each column carries its unit and description and,
/// where a value does not apply in some row, a validity bitmap (`spikelab_sim::schema`); a
/// column without a schema entry is an error (every column the core writes has one).
fn table_to_py<'py>(py: Python<'py>, name: &str, t: Table) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("num_rows", t.num_rows())?;
    let cols = PyList::empty(py);
    for c in t.columns {
        let spec = schema::column(name, &c.name).ok_or_else(|| {
            PyRuntimeError::new_err(format!(
                "column {name}.{} has no entry in the core's schema",
                c.name
            ))
        })?;
        if spec.spec.ty != schema::Type::of(&c.data) {
            return Err(PyRuntimeError::new_err(format!(
                "column {name}.{}: the schema says {}, the core wrote {}",
                c.name,
                spec.spec.ty.name(),
                schema::Type::of(&c.data).name()
            )));
        }
        let cd = PyDict::new(py);
        cd.set_item("name", &c.name)?;
        cd.set_item("unit", spec.spec.unit)?;
        cd.set_item("description", &spec.description)?;
        if let Some(bits) = schema::validity(&c.data, spec.spec.null) {
            cd.set_item("validity", PyBytes::new(py, &bits))?;
        }
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

/// The columns of table `name` (`runs`, `timeseries`, `packets`, or `sweep`: the columns a
/// sweep adds) as the core's schema describes them: a list of dicts with `name` (placeholders
/// `<d>`, `<path>_<stage>` in patterns), `type`, `unit`, `description` and `nullable`.
#[pyfunction]
fn table_schema<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyList>> {
    let specs = schema::table(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "table: must be runs, timeseries, packets or sweep, got {name:?}"
        ))
    })?;
    let out = PyList::empty(py);
    for s in specs {
        let d = PyDict::new(py);
        d.set_item("name", s.name)?;
        d.set_item("type", s.ty.name())?;
        d.set_item("unit", s.unit)?;
        d.set_item("description", s.description)?;
        d.set_item("nullable", s.null != schema::Null::Never)?;
        out.append(d)?;
    }
    Ok(out)
}

/// The unit and description of column `column` of table `table` (a pattern's placeholders
/// filled), or None when the schema has no such column.
#[pyfunction]
fn column_meta(table: &str, column: &str) -> Option<(String, String)> {
    schema::column(table, column).map(|r| (r.spec.unit.to_string(), r.description))
}

// ---- paper 004 §6.2: the analytic SCTP RTO alpha/beta study (spikelab-sctp::rto_study) ----

/// The study's parameters, checked: one-line `ValueError`s name the offending argument.
fn rto_study_params(
    rto_initial: f64,
    rto_min: f64,
    rto_max: f64,
    alignment: &str,
    grade_base: u32,
) -> PyResult<StudyParams> {
    // SimDuration holds u64 nanoseconds: about 584 years; a day is plenty for an RTO bound.
    for (name, v) in [
        ("rto_initial", rto_initial),
        ("rto_min", rto_min),
        ("rto_max", rto_max),
    ] {
        if !(v.is_finite() && (0.0..=86_400.0).contains(&v)) {
            return Err(PyValueError::new_err(format!(
                "{name}: must be a time between 0 and 86400 s, got {v} s"
            )));
        }
    }
    if rto_max < rto_min {
        return Err(PyValueError::new_err(format!(
            "rto_max: must be >= rto_min ({rto_min} s), got {rto_max} s"
        )));
    }
    let alignment = match alignment {
        "after" => Alignment::AfterSample,
        "before" => Alignment::BeforeSample,
        other => {
            return Err(PyValueError::new_err(format!(
                "alignment: must be 'after' or 'before', got {other:?}"
            )))
        }
    };
    if grade_base > 1 {
        return Err(PyValueError::new_err(format!(
            "grade_base: must be 0 or 1, got {grade_base}"
        )));
    }
    Ok(StudyParams {
        rto_initial,
        rto_min,
        rto_max,
        alignment,
        grade_base,
    })
}

/// RTT samples must be finite, non-negative milliseconds (at most a day).
fn check_rtt_ms(rtt_ms: &[f64]) -> PyResult<()> {
    if rtt_ms.is_empty() {
        return Err(PyValueError::new_err("the RTT trace is empty"));
    }
    if let Some((i, v)) = rtt_ms
        .iter()
        .enumerate()
        .find(|(_, v)| !(v.is_finite() && (0.0..=86_400_000.0).contains(*v)))
    {
        return Err(PyValueError::new_err(format!(
            "RTT sample {i}: must be between 0 and 86400000 ms, got {v}"
        )));
    }
    Ok(())
}

fn check_gain(name: &str, v: f64) -> PyResult<()> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "{name}: must be in [0, 1], got {v}"
        )))
    }
}

/// Paper 004 §6.2 over `rtt_ms` (one sample a second) for each (alpha, beta) of `pairs`: the
/// columns alpha, beta, delay_sum_s, spurious_s, grade_delay, grade_spurious, distance, rank,
/// one row per pair in the order given.
#[pyfunction]
#[pyo3(signature = (rtt_ms, pairs, rto_initial=3.0, rto_min=1.0, rto_max=60.0,
                    alignment="after", grade_base=1))]
#[allow(clippy::too_many_arguments)] // the Python signature: keyword arguments with defaults
fn rto_study<'py>(
    py: Python<'py>,
    rtt_ms: Vec<f64>,
    pairs: Vec<(f64, f64)>,
    rto_initial: f64,
    rto_min: f64,
    rto_max: f64,
    alignment: &str,
    grade_base: u32,
) -> PyResult<Bound<'py, PyDict>> {
    let p = rto_study_params(rto_initial, rto_min, rto_max, alignment, grade_base)?;
    check_rtt_ms(&rtt_ms)?;
    if pairs.is_empty() {
        return Err(PyValueError::new_err("no (alpha, beta) pairs to study"));
    }
    for &(a, b) in &pairs {
        check_gain("alpha", a)?;
        check_gain("beta", b)?;
    }
    let res = py.detach(move || spikelab_sctp::rto_study::study(&rtt_ms, &pairs, &p));
    let out = PyDict::new(py);
    out.set_item("alpha", res.iter().map(|r| r.alpha).collect::<Vec<_>>())?;
    out.set_item("beta", res.iter().map(|r| r.beta).collect::<Vec<_>>())?;
    out.set_item(
        "delay_sum_s",
        res.iter().map(|r| r.delay_sum_s).collect::<Vec<_>>(),
    )?;
    out.set_item(
        "spurious_s",
        res.iter().map(|r| r.spurious).collect::<Vec<_>>(),
    )?;
    out.set_item(
        "grade_delay",
        res.iter().map(|r| r.grade_delay).collect::<Vec<_>>(),
    )?;
    out.set_item(
        "grade_spurious",
        res.iter().map(|r| r.grade_spurious).collect::<Vec<_>>(),
    )?;
    out.set_item(
        "distance",
        res.iter().map(|r| r.distance).collect::<Vec<_>>(),
    )?;
    out.set_item("rank", res.iter().map(|r| r.rank).collect::<Vec<_>>())?;
    Ok(out)
}

/// The RTO (ms) the RFC 4960 estimator with gains `alpha`, `beta` pairs with each RTT sample.
#[pyfunction]
#[pyo3(signature = (rtt_ms, alpha, beta, rto_initial=3.0, rto_min=1.0, rto_max=60.0,
                    alignment="after"))]
fn rto_series(
    rtt_ms: Vec<f64>,
    alpha: f64,
    beta: f64,
    rto_initial: f64,
    rto_min: f64,
    rto_max: f64,
    alignment: &str,
) -> PyResult<Vec<f64>> {
    let p = rto_study_params(rto_initial, rto_min, rto_max, alignment, 1)?;
    check_rtt_ms(&rtt_ms)?;
    check_gain("alpha", alpha)?;
    check_gain("beta", beta)?;
    Ok(spikelab_sctp::rto_study::rto_series(
        &rtt_ms, alpha, beta, &p,
    ))
}

/// The `wlan-walkaway` preset's RTT (ms), one sample a second for t = 0 .. seconds − 1: the
/// skeleton, or with `noise` σ > 0 each sample times LogNormal(0, σ) from stream `seed`.
#[pyfunction]
#[pyo3(signature = (seconds, noise=0.0, seed=1))]
fn walkaway_rtt_ms(seconds: u32, noise: f64, seed: u64) -> PyResult<Vec<f64>> {
    if seconds == 0 || seconds > 10_000_000 {
        return Err(PyValueError::new_err(format!(
            "seconds: must be between 1 and 10000000, got {seconds}"
        )));
    }
    if !(noise.is_finite() && (0.0..=10.0).contains(&noise)) {
        return Err(PyValueError::new_err(format!(
            "noise: must be between 0 and 10, got {noise}"
        )));
    }
    Ok(spikelab_net::walkaway::rtt_trace_ms(seconds, noise, seed))
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
    // The engine's build identity (build.rs): the package version and a digest of its sources.
    m.add(
        "__build__",
        concat!(
            env!("CARGO_PKG_VERSION"),
            "+",
            env!("SPIKELAB_ENGINE_BUILD")
        ),
    )?;
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
    m.add_function(wrap_pyfunction!(rto_study, m)?)?;
    m.add_function(wrap_pyfunction!(rto_series, m)?)?;
    m.add_function(wrap_pyfunction!(walkaway_rtt_ms, m)?)?;
    m.add_function(wrap_pyfunction!(table_schema, m)?)?;
    m.add_function(wrap_pyfunction!(column_meta, m)?)?;
    emu::register(m)?;
    capture::register(m)?;
    Ok(())
}
