//! The emulator for Python: `Emulator` (runs in the emulator's network namespace, without the
//! GIL) and `emu_analyze` (a capture to result tables). Registered by [`register`].

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

/// The real-time emulator: `Emulator(config_json)` opens its sockets in the calling process's
/// network namespace; `run(t0_ns)` emulates until the scenario's end (or SIGINT / SIGTERM)
/// and returns its statistics as JSON.
#[pyclass(module = "spikelab._core")]
struct Emulator {
    #[cfg(target_os = "linux")]
    engine: Mutex<Option<spikelab_emu::rt::Engine>>,
}

#[pymethods]
impl Emulator {
    #[new]
    fn new(config_json: &str) -> PyResult<Emulator> {
        let cfg = spikelab_emu::EmuConfig::from_json(config_json).map_err(PyValueError::new_err)?;
        #[cfg(target_os = "linux")]
        {
            let engine = spikelab_emu::rt::Engine::open(cfg).map_err(PyOSError::new_err)?;
            Ok(Emulator {
                engine: Mutex::new(Some(engine)),
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = cfg;
            Err(PyOSError::new_err("the emulator needs Linux"))
        }
    }

    /// Runs once from `t0_ns` (CLOCK_REALTIME ns) without holding the GIL.
    fn run(&self, py: Python<'_>, t0_ns: u64) -> PyResult<String> {
        #[cfg(target_os = "linux")]
        {
            let engine = self
                .engine
                .lock()
                .map_err(|_| PyRuntimeError::new_err("poisoned"))?
                .take()
                .ok_or_else(|| PyRuntimeError::new_err("an Emulator runs only once"))?;
            let stats = py
                .detach(move || engine.run(t0_ns))
                .map_err(PyOSError::new_err)?;
            serde_json::to_string(&stats).map_err(|e| PyRuntimeError::new_err(e.to_string()))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (py, t0_ns);
            Err(PyOSError::new_err("the emulator needs Linux"))
        }
    }
}

/// Reads an emulator capture: the `packets` table, the derived series (rtt_sample,
/// rcv_nxt), and per-flow figures, the timing error and metadata as JSON.
#[pyfunction]
fn emu_analyze<'py>(
    py: Python<'py>,
    pcap: String,
    duration_ns: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let a = py
        .detach(move || spikelab_emu::analyze_file(std::path::Path::new(&pcap), duration_ns))
        .map_err(PyValueError::new_err)?;
    let out = PyDict::new(py);
    let mut a = a;
    out.set_item(
        "packets",
        super::table_to_py(py, "packets", std::mem::take(&mut a.packets))?,
    )?;
    out.set_item(
        "series",
        super::table_to_py(py, "series", std::mem::take(&mut a.series))?,
    )?;
    let js = |v: &dyn erased::Ser| v.json().map_err(|e| PyRuntimeError::new_err(e.to_string()));
    out.set_item("flows", js(&a.flows)?)?;
    out.set_item("timing", js(&a.timing)?)?;
    out.set_item("meta", js(&a.meta)?)?;
    out.set_item("stages", a.stages.clone())?;
    out.set_item("paths", js(&a.paths)?)?;
    out.set_item("unclassified", a.unclassified)?;
    Ok(out)
}

/// The kernel view of a scenario (`spikelab_emu::view::KernelView`: ns, bytes), as JSON.
#[pyfunction]
#[pyo3(signature = (text, overrides=Vec::new(), base_dir=".".to_string()))]
fn emu_scenario(text: &str, overrides: Vec<String>, base_dir: String) -> PyResult<String> {
    let sc = spikelab_sim::parse(text, &overrides, std::path::Path::new(&base_dir))
        .map_err(super::scenario_err)?;
    Ok(spikelab_emu::view::scenario_view(&sc).to_json())
}

/// The scenario for an emulation: (resolved scenario JSON, the emulator's view JSON, each
/// flow's congestion control that only the kernel has, or None). Such a flow is read as
/// `reno` (the simulator does not model it); the kernel runs the named one.
#[pyfunction]
fn emu_resolve(
    text: &str,
    overrides: Vec<String>,
    base_dir: String,
) -> PyResult<(String, String, Vec<Option<String>>)> {
    let (sc, kernel_only) =
        spikelab_sim::scenario::parse_for_kernel(text, &overrides, std::path::Path::new(&base_dir))
            .map_err(super::scenario_err)?;
    let resolved =
        serde_json::to_string(&sc).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((
        resolved,
        spikelab_emu::view::scenario_view(&sc).to_json(),
        kernel_only,
    ))
}

mod erased {
    pub trait Ser {
        fn json(&self) -> serde_json::Result<String>;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> serde_json::Result<String> {
            serde_json::to_string(self)
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Emulator>()?;
    m.add_function(wrap_pyfunction!(emu_analyze, m)?)?;
    m.add_function(wrap_pyfunction!(emu_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(emu_resolve, m)?)?;
    Ok(())
}
