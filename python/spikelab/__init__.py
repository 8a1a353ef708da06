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

from ._core import ScenarioError, SimulationError, __version__
from .results import load, plot
from .simulate import RunResult, run, validate
from .stats import query
from .sweep import SweepResult, sweep
from .sweep import plan as sweep_plan

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


def __getattr__(name: str):
    # `spikelab.study` (and its matplotlib) loads on first use, so sweep worker processes,
    # which only simulate, start quickly.
    if name == "study":
        import importlib

        return importlib.import_module(".study", __name__)
    raise AttributeError(f"module 'spikelab' has no attribute {name!r}")
