"""spikelab: TCP over paths whose delay moves (deterministic simulation front end).

    import spikelab
    res = spikelab.run("examples/lte-handover.toml", seed=1, out="out/lte")
    res.summary                     # pandas DataFrame, one row per flow
    res.packets                     # pyarrow.Table of packet events
    spikelab.plot("out/lte", zoom=(10, 13))
"""

from ._core import ScenarioError, __version__
from .results import load, plot
from .simulate import RunResult, run, validate

__all__ = [
    "RunResult",
    "ScenarioError",
    "__version__",
    "load",
    "plot",
    "run",
    "validate",
]
