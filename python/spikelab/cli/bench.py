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


# ------------------------------------------------------------------------------- against ns-2

# Both sides run ns-2.35's agents: spikelab its ns2 profile (the writer takes no other), without
# the dumbbell's timestamps, which the profile does not model (ns-2's option is 10 bytes).
NS2_SETS = ('flow.tcp.profile="ns2"', "flow.tcp.timestamps=false")


@dataclass(frozen=True)
class Side:
    name: str
    sim_s: float
    core_s: float | None     # the simulation alone (spikelab's manifest); None for ns-2
    cpu_s: float             # the whole process, user + sys (wait4)
    wall_s: float            # the whole process
    data_packets: int        # data packets sent, retransmissions included


def _spikelab_side(scenario: str, sets: list[str], workdir: Path) -> Side:
    out = workdir / "out-spikelab"
    cmd = [sys.executable, "-m", "spikelab", "run", scenario, "-o", str(out), "-q",
           "--no-plots", "--force", "--trace", "summary"]
    for s in sets:
        cmd += ["--set", s]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"spikelab run: {err.strip().splitlines()[-1] if err.strip() else status}")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    import pyarrow.parquet as pq

    runs = pq.read_table(out / "runs.parquet", columns=["segments_sent"])
    return Side("spikelab", float(manifest["duration_s"]), float(manifest["wall_s"]),
                usage.ru_utime + usage.ru_stime, wall,
                int(sum(runs["segments_sent"].to_pylist())))


def _ns2_side(scenario: str, sets: list[str], workdir: Path) -> Side:
    from .. import _core
    from ..fidelity import ns2

    ns2.ns_binary()
    text = Path(scenario).read_text(encoding="utf-8")
    resolved = json.loads(_core.resolve(text, sets, str(Path(scenario).resolve().parent)))
    plan, script = ns2.plan(resolved, traces=False)
    nsdir = workdir / "ns2"
    nsdir.mkdir(exist_ok=True)
    out, cpu, wall = ns2.run_script(script, nsdir, timeout=3600)
    packets = sum(int(w[5]) for w in (ln.split() for ln in out.splitlines())
                  if len(w) >= 7 and w[0] == "flow" and w[2] == "tcp")
    return Side("ns-2", plan.duration_s, None, cpu, wall, packets)


def against_ns2(scenario: str, overrides: list[str] | None = None, repeat: int = 1,
                echo=print) -> list[Side]:
    """Time ns-2.35 beside spikelab on ``scenario`` (the dumbbell by default): each side as a
    whole process, ``repeat`` times in turn; CPU (user + sys) and wall time from the
    operating system's accounting of the finished child, spikelab's core time from its
    manifest, and each side's data packets (spikelab's ``segments_sent``, ns-2's
    ``ndatapack_``)."""
    sets = list(NS2_SETS) + list(overrides or [])
    sides: list[Side] = []
    echo(f"{scenario} against ns-2.35 (both with {', '.join(NS2_SETS)}): whole processes, "
         f"{repeat} run{'s' if repeat != 1 else ''} each")
    echo(f"{'side':<9}  {'sim s':>6}  {'core s':>7}  {'CPU s':>7}  {'wall s':>7}  "
         f"{'data packets':>12}")
    with tempfile.TemporaryDirectory(prefix="spikelab-bench-ns2-") as tmp:
        for _ in range(repeat):
            for fn in (_spikelab_side, _ns2_side):
                s = fn(scenario, sets, Path(tmp))
                sides.append(s)
                core = "" if s.core_s is None else f"{s.core_s:.3f}"
                echo(f"{s.name:<9}  {s.sim_s:>6g}  {core:>7}  {s.cpu_s:>7.3f}  "
                     f"{s.wall_s:>7.3f}  {s.data_packets:>12,}")
    return sides


# ------------------------------------------------------------------------------- paper studies

# The studies that reproduce the five source papers (docs/studies.md); their budget together
# on 2 cores is 20 minutes (issue of the papers' headline results).
PAPER_STUDIES = ("kato-lte-handover", "tauran-leo-delack", "fu-delay-spike",
                 "fu-delay-spike-sctp", "decicco-umts", "fallon-sctp-rto")
STUDIES_BUDGET_S = 20 * 60


@dataclass(frozen=True)
class StudyTime:
    name: str
    wall_s: float
    cpu_s: float
    peak_mb: float
    status: int
    paper: str  # the report's first line


def studies(names: tuple[str, ...] = PAPER_STUDIES, jobs: int | None = None,
            echo=print) -> list[StudyTime]:
    """Each study run as a whole ``spikelab study run NAME`` process from scratch, one after
    the other: wall and CPU time, peak memory, exit status and the report's first line."""
    rows = []
    echo(f"{'study':<22}  {'wall s':>7}  {'CPU s':>7}  {'peak MB':>7}  exit  first line of "
         f"the report")
    with tempfile.TemporaryDirectory(prefix="spikelab-bench-studies-") as tmp:
        for name in names:
            out = Path(tmp) / name
            cmd = [sys.executable, "-m", "spikelab", "study", "run", name, "-o", str(out), "-q"]
            if jobs is not None:
                cmd += ["-j", str(jobs)]
            start = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - start
            code = os.waitstatus_to_exitcode(status)
            report = out / "report.md"
            if not report.is_file():
                err = proc.stderr.read().decode().strip() if proc.stderr else ""
                raise RuntimeError(f"study {name}: {err or f'exit status {code}'}")
            first = report.read_text(encoding="utf-8").splitlines()[0]
            # wait4 counts the study process and the workers it reaped (its pool).
            row = StudyTime(name, wall, usage.ru_utime + usage.ru_stime,
                            usage.ru_maxrss / 1024, code, first)
            rows.append(row)
            echo(f"{name:<22}  {wall:>7.1f}  {row.cpu_s:>7.1f}  {row.peak_mb:>7.0f}  "
                 f"{code:>4}  {first}")
    total = sum(r.wall_s for r in rows)
    echo(f"{'together':<22}  {total:>7.1f}  (budget {STUDIES_BUDGET_S} s on 2 cores: "
         f"{'within' if total <= STUDIES_BUDGET_S else 'OVER'})")
    return rows


# ------------------------------------------------------------------------------- trace import

# The capture `trace import pcap` is timed on: the LTE example's sender side over 600 s
# simulated (about 750,000 frames, 126 MB of pcapng), written by the simulator itself.
TRACE_IMPORT_SCENARIO = "examples/lte-handover.toml"
TRACE_IMPORT_SECONDS = 600


@dataclass(frozen=True)
class ImportTime:
    figure: bool
    wall_s: float
    cpu_s: float
    peak_mb: float


def _capture(workdir: Path, seconds: float) -> tuple[Path, int]:
    """The sender-side capture of the LTE example over ``seconds`` simulated, and its
    frame count."""
    scenario = (TRACE_IMPORT_SCENARIO if Path(TRACE_IMPORT_SCENARIO).is_file()
                else str(_REPO / TRACE_IMPORT_SCENARIO))
    out = workdir / "run"
    cmd = [sys.executable, "-m", "spikelab", "run", scenario, "-o", str(out), "-q",
           "--no-plots", "--force", "--trace", "summary", "--pcap", "sender",
           "--set", f'sim.duration="{seconds:g}s"']
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the capture's run: {proc.stderr.strip() or proc.returncode}")
    from ..traces import pcap

    path = out / "pcap" / "sender.pcapng"
    return path, pcap.transport(path).frames


def trace_import(repeat: int = 3, seconds: float = TRACE_IMPORT_SECONDS,
                 echo=print) -> list[ImportTime]:
    """``spikelab trace import pcap`` on the LTE example's capture (750,000 frames at the
    default 600 s), each a whole process, ``repeat`` times without its figure and as many
    with, interleaved: wall and CPU time, peak memory (``wait4``). docs/performance.md,
    "Trace import"."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="spikelab-bench-import-") as tmp:
        path, frames = _capture(Path(tmp), seconds)
        echo(f"{path.name}: {frames:,} frames, {path.stat().st_size / 1e6:,.0f} MB "
             f"(the LTE example, {seconds:g} s simulated)")
        echo(f"{'figure':<6}  {'wall s':>7}  {'CPU s':>7}  {'peak MB':>7}")
        for _ in range(repeat):
            for figure in (False, True):
                cmd = [sys.executable, "-m", "spikelab", "trace", "import", "pcap", str(path),
                       "-o", str(Path(tmp) / "delay.csv"), "-q"]
                if not figure:
                    cmd.append("--no-figure")
                start = time.monotonic()
                proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                _, status, usage = os.wait4(proc.pid, 0)
                wall = time.monotonic() - start
                if os.waitstatus_to_exitcode(status) != 0:
                    err = proc.stderr.read().decode().strip() if proc.stderr else ""
                    raise RuntimeError(f"trace import pcap: {err or status}")
                row = ImportTime(figure, wall, usage.ru_utime + usage.ru_stime,
                                 usage.ru_maxrss / 1024)
                rows.append(row)
                echo(f"{'yes' if figure else 'no':<6}  {wall:>7.2f}  {row.cpu_s:>7.2f}  "
                     f"{row.peak_mb:>7.0f}")
    for figure in (False, True):
        walls = sorted(r.wall_s for r in rows if r.figure == figure)
        echo(f"{'with' if figure else 'without'} its figure: median {walls[len(walls) // 2]:.2f} s"
             f" wall of {len(walls)}")
    return rows
