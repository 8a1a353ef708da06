"""The benchmark grid: the ns-3 dumbbell at 1, 10, 100 and 1,000 flows and at each trace
level, each run as a whole ``spikelab run`` process, so the figures are what a user waits for.

Per configuration: the core's own time (the simulation, from the manifest), the whole
process's wall time and peak memory (``wait4``: the operating system's accounting of the
finished child), events and data packets per second of core time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# The benchmark scenario, relative to a source checkout (or the current directory).
SCENARIO = "benches/ns3-dumbbell.toml"
# This file is REPO/python/spikelab/cli/bench.py.
_REPO = Path(__file__).resolve().parents[3]


def default_scenario() -> str:
    """``benches/ns3-dumbbell.toml`` of the current directory, else of the source checkout
    this spikelab runs from (so ``spikelab bench`` works from any directory of it). An
    installed package has no benches/: the error says to give ``--scenario``."""
    if Path(SCENARIO).is_file():
        return SCENARIO
    if (_REPO / SCENARIO).is_file():
        return str(_REPO / SCENARIO)
    raise FileNotFoundError(f"{SCENARIO}: not found here nor beside spikelab's source (it ships "
                            f"with the source checkout, not with an installed package); give "
                            f"a scenario with --scenario FILE")


# (flows, simulated seconds, trace levels): the many-flow runs are shorter, as in the issue's
# targets (100 flows for 600 s, 1,000 flows for 60 s).
GRID = (
    (1, 600, ("summary", "timeseries", "packets")),
    (10, 600, ("summary", "timeseries")),
    (100, 600, ("summary",)),
    (1000, 60, ("summary", "timeseries")),
)


@dataclass(frozen=True)
class Row:
    flows: int
    sim_s: float
    trace: str
    core_s: float
    process_s: float
    peak_mb: float
    events: int
    data_packets: int


def with_flows(text: str, n: int) -> str:
    """The scenario with its flows block (everything from the first ``[[flow]]``, which must
    come last in the file) repeated ``n`` times: n identical flows sharing the paths."""
    head, sep, flows = text.partition("[[flow]]")
    if not sep:
        raise ValueError("the benchmark scenario has no [[flow]]")
    return head + (sep + flows) * n


def measure(text: str, flows: int, sim_s: float, trace: str, workdir: Path) -> Row:
    scenario = workdir / f"bench-{flows}.toml"
    scenario.write_text(with_flows(text, flows), encoding="utf-8")
    out = workdir / f"out-{flows}-{trace}"
    cmd = [sys.executable, "-m", "spikelab", "run", str(scenario), "-o", str(out), "-q",
           "--no-plots", "--force", "--trace", trace, "--set", f'sim.duration="{sim_s:g}s"']
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{flows} flows, {trace}: {err.strip() or proc.returncode}")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    import pyarrow.parquet as pq

    runs = pq.read_table(out / "runs.parquet", columns=["segments_sent"])
    return Row(flows=flows, sim_s=sim_s, trace=trace, core_s=float(manifest["wall_s"]),
               process_s=wall, peak_mb=usage.ru_maxrss / 1024, events=int(manifest["events"]),
               data_packets=int(sum(runs["segments_sent"].to_pylist())))


def grid(scenario: str | os.PathLike[str], grid_spec=GRID, echo=print) -> list[Row]:
    text = Path(scenario).read_text(encoding="utf-8")
    rows = []
    echo(f"{'flows':>5}  {'sim s':>5}  {'trace':<10}  {'core s':>7}  {'process s':>9}  "
         f"{'peak MB':>7}  {'events/s':>11}  {'data pkts/s':>11}")
    with tempfile.TemporaryDirectory(prefix="spikelab-bench-") as tmp:
        for flows, sim_s, traces in grid_spec:
            for trace in traces:
                r = measure(text, flows, sim_s, trace, Path(tmp))
                rows.append(r)
                echo(f"{r.flows:>5}  {r.sim_s:>5g}  {r.trace:<10}  {r.core_s:>7.3f}  "
                     f"{r.process_s:>9.2f}  {r.peak_mb:>7.0f}  "
                     f"{r.events / r.core_s:>11,.0f}  {r.data_packets / r.core_s:>11,.0f}")
    return rows
