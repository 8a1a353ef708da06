"""Run one simulation: scenario in, columnar result tables out."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _core, results
from ._progress import ProgressBar
from ._tables import to_arrow

if TYPE_CHECKING:
    import pandas as pd

ScenarioSource = str | os.PathLike[str]

TRACE_LEVELS = ("summary", "timeseries", "packets")
POLL_S = 0.1


def read_scenario(scenario: ScenarioSource) -> tuple[str, str]:
    """Return (TOML text, base directory for relative paths) of a file path or TOML text.

    A ``str`` is TOML text if it contains a newline, or an ``=`` and names no existing file.
    """
    if isinstance(scenario, str) and (
        "\n" in scenario or ("=" in scenario and not os.path.isfile(scenario))
    ):
        return scenario, os.getcwd()
    path = Path(scenario)
    return path.read_text(encoding="utf-8"), str(path.resolve().parent)


def _overrides(overrides: Iterable[str]) -> list[str]:
    if isinstance(overrides, str):
        raise TypeError("overrides must be a sequence of 'key=value' strings, not one string")
    out = []
    for item in overrides:
        key, sep, _ = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad override {item!r}: expected key=value")
        out.append(item)
    return out


def validate(scenario: ScenarioSource, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Validate a scenario and return it resolved (all defaults filled) as a dict.

    Raises ``ScenarioError`` with a ``field.path: problem`` message when it is invalid.
    """
    text, base_dir = read_scenario(scenario)
    return json.loads(_core.resolve(text, _overrides(overrides), base_dir))


@dataclass(frozen=True)
class RunResult:
    """Tables and metadata of one run. ``runs`` has one row per flow.

    ``duration_s`` is simulated time, ``wall_s`` the wall-clock time of the core's run and
    ``events`` the number of events it processed.
    """

    runs: pa.Table
    timeseries: pa.Table
    packets: pa.Table
    scenario: dict[str, Any]
    seed: int
    trace: str
    duration_s: float
    wall_s: float
    events: int
    manifest: dict[str, Any] = field(default_factory=dict)
    """manifest.json contents; its ``files`` list is filled when the result is written."""

    @property
    def summary(self) -> pd.DataFrame:
        """The runs table as a pandas DataFrame (one row per flow)."""
        return self.runs.to_pandas()

    def table(self, name: str) -> pa.Table:
        if name not in results.TABLES:
            raise KeyError(f"no table {name!r}; tables are {', '.join(results.TABLES)}")
        return getattr(self, name)

    def to_pandas(self, name: str = "runs") -> pd.DataFrame:
        return self.table(name).to_pandas()

    def tables(self) -> dict[str, pa.Table]:
        return {name: self.table(name) for name in results.TABLES}


def _run_in_thread(sim: Any, progress: bool | None) -> dict[str, Any]:
    """Run ``sim.run()`` (which releases the GIL) in a worker; poll progress meanwhile."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["result"] = sim.run()
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="spikelab-run", daemon=True)
    bar = ProgressBar(sim.duration_s, progress)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL_S)
            bar.update(sim.progress())
    except KeyboardInterrupt:
        # Stop the Rust loop too, so an interrupted notebook cell does not keep a core busy.
        sim.cancel()
        worker.join()
        raise
    finally:
        bar.close(sim.progress() if "result" in outcome else None)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def run(
    scenario: ScenarioSource,
    *,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    trace: str | None = None,
    out: str | os.PathLike[str] | None = None,
    plots: bool = True,
    progress: bool | None = None,
) -> RunResult:
    """Simulate a scenario (a TOML file path or TOML text).

    ``seed`` overrides the scenario's ``sim.seed``; ``overrides`` are ``"key=value"`` strings
    (``"flow[0].tcp.variant=newreno"``); ``trace`` is ``summary``, ``timeseries`` or
    ``packets`` (None: the scenario's ``sim.trace``, packets unless set). With ``out``, the
    results directory is written there (figures too, unless ``plots=False``). ``progress``:
    None shows a bar on a TTY for runs longer than 2 s, True always, False never.
    """
    if trace is not None and trace not in TRACE_LEVELS:
        raise ValueError(f"trace must be one of {', '.join(TRACE_LEVELS)}, got {trace!r}")
    text, base_dir = read_scenario(scenario)
    sim = _core.Simulation(text, _overrides(overrides), base_dir, seed, trace)
    if out is not None:
        results.prepare(out)  # fail before the run, not after it
    raw = _run_in_thread(sim, progress)
    scenario_dict = json.loads(sim.scenario_json)
    wall_s, events = float(raw["wall_s"]), int(raw["events"])
    result = RunResult(
        runs=to_arrow(raw["runs"]),
        timeseries=to_arrow(raw["timeseries"]),
        packets=to_arrow(raw["packets"]),
        scenario=scenario_dict,
        seed=sim.seed,
        trace=sim.trace,
        duration_s=sim.duration_s,
        wall_s=wall_s,
        events=events,
        manifest=results.new_manifest(scenario_dict, sim.seed, sim.trace, sim.duration_s,
                                      wall_s, events),
    )
    if out is not None:
        results.write(result, out, plots=plots)
    return result
