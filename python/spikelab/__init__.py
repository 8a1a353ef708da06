"""spikelab: TCP over paths whose delay moves (deterministic simulation front end).

    import spikelab
    res = spikelab.run("examples/lte-handover.toml", seed=1, out="out/lte")
    res.summary                     # pandas DataFrame, one row per flow
    res.packets                     # pyarrow.Table of packet events
    spikelab.plot("out/lte", zoom=(10, 13))

    sw = spikelab.sweep("study.toml-or-scenario-with-[sweep].toml", "out/sweep", jobs=2)
    sw.runs.to_pandas()             # one row per run × flow, parameters as columns
    spikelab.query("out/sweep", "SELECT variant, avg(goodput_bps) FROM runs GROUP BY 1")
    spikelab.study.run("lte-handover-basic", "out/study")
"""

import sys

from ._core import ScenarioError, SimulationError, __version__
from .scenario import validate

__all__ = [
    "RunResult",
    "ScenarioError",
    "SimulationError",
    "SweepResult",
    "__version__",
    "load",
    "plot",
    "query",
    "run",
    "study",
    "sweep",
    "sweep_plan",
    "validate",
]

# Everything else loads on first use, so the command line (and sweep workers, which only
# simulate) start without pyarrow, pandas or matplotlib until a command needs them.
_LAZY = {
    "RunResult": ("store.run", "RunResult"),
    "run": ("run", "run"),
    "load": ("store", "load"),
    "plot": ("figures", "plot"),
    "query": ("analysis.query", "query"),
    "SweepResult": ("store.sweep", "SweepResult"),
    "sweep": ("sweep", "sweep"),
    "sweep_plan": ("sweep", "plan"),
}


def _load(name: str):
    import importlib

    module, attr = _LAZY[name]
    return getattr(importlib.import_module(f".{module}", __name__), attr)


class _Package(type(sys)):
    """``spikelab.run`` and ``spikelab.sweep`` are the functions even after the submodules
    ``spikelab.run`` and ``spikelab.sweep`` load (the import system would otherwise rebind
    the names to the modules)."""

    @property
    def run(self):
        return _load("run")

    @run.setter
    def run(self, value) -> None:
        pass  # the submodule stays reachable as sys.modules["spikelab.run"]

    @property
    def sweep(self):
        return _load("sweep")

    @sweep.setter
    def sweep(self, value) -> None:
        pass  # the submodule stays reachable as sys.modules["spikelab.sweep"]


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    import importlib

    if name == "study":
        return importlib.import_module(".study", __name__)
    if name in _LAZY:
        value = _load(name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'spikelab' has no attribute {name!r}")
