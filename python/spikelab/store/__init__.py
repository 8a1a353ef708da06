"""Writing and reading results: tables and manifests (a bottom floor, beside scenario/).

- :mod:`.results`: a results directory: files written whole, the manifest, what it holds;
- :mod:`.run`: a run's tables and metadata (:class:`RunResult`), written and read back;
- :mod:`.sweep`: a sweep's part files and dataset (:class:`SweepResult`);
- :mod:`.arrow`: the core's columnar tables as pyarrow tables.
- :mod:`.schema`: each column's type, unit, description and nullability (the core's schema).
"""

from __future__ import annotations

import os

from .run import RunResult
from .run import load as load_run
from .sweep import SweepResult, is_sweep, load_sweep


def load(outdir: str | os.PathLike[str]) -> RunResult | SweepResult:
    """Read a results directory back: a run's tables, scenario, seed and manifest, or a
    sweep's dataset (``SweepResult``: its ``runs`` table, one row per run × flow)."""
    if is_sweep(outdir):
        return load_sweep(outdir)
    return load_run(outdir)
