"""The kernel-fidelity suite: each scenario simulated (``[flow.tcp] profile = "linux"``) and
emulated against the Linux TCP stack (``spikelab emulate``), one at a time, and compared.

Per scenario, seven metrics side by side (simulator, kernel): goodput, RTOs, fast retransmits,
tail loss probes, undos, the time of the first RTO after the scenario's event (the spike's
or the delay step's start), and the receiver's ACKs. A scenario *agrees* when goodput is within
5 % and the counts of RTOs, fast retransmits and undos are equal; TLPs, the first RTO's time and
the ACKs are shown, not judged. Beside each scenario, the emulator's own timing error (actual
minus intended departure of every frame it sent, ``emulation.timing`` of the emulated run).

Where each number comes from (docs/fidelity.md):

- simulator: ``runs.parquet`` (``goodput_bps``, ``rto_count``, ``fast_retx_count``,
  ``undo_count``, ``tlp_count``; n/a where a simulator without the column wrote them), the
  ``rto_expiry`` markers of ``timeseries.parquet`` and the ``ack`` events of
  ``packets.parquet``;
- kernel: the emulated run's ``runs.parquet`` (``rto_count`` is ``tcpi_total_rto``,
  ``fast_retx_count`` the entries into Recovery, ``undo_count`` TCPLossUndo + TCPFullUndo +
  TCPPartialUndo + TCPDSACKUndo), the sender's ``TcpExtTCPLossProbes`` counter for TLPs, and
  its ``rto_expiry`` markers (the TCP_INFO sample, 1 ms apart, in which ``tcpi_total_rto``
  grew) for the first RTO, and the ``ack`` events its capture shows.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import math
import os
import platform
import re
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
SCENARIO_DIR = HERE / "scenarios"
SUITE_FILE = HERE / "suite.toml"
GOODPUT_TOLERANCE = 0.05
# (key, label, judged): the rows of each scenario's table, in order.
METRICS = (
    ("goodput_mbps", "goodput, Mbit/s", True),
    ("rto_count", "RTOs", True),
    ("fast_retx_count", "fast retransmits", True),
    ("tlp_count", "TLPs", False),
    ("undo_count", "undos", True),
    ("first_rto_s", "first RTO after the event, s", False),
    ("acks", "ACKs the receiver sent", False),
)
METRIC_KEYS = tuple(m[0] for m in METRICS)
SCENARIO_KEYS = ("event", "sysctls", "why")
TABLE = "fidelity.parquet"
REPORT = "report.md"
KIND = "fidelity"

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}


class FidelityError(ValueError):
    """A suite definition or a selection that cannot run (the message says why)."""


@dataclass
class Scenario:
    """One scenario of the suite: its file and the suite's notes on it."""

    name: str
    path: Path
    description: str = ""
    event_s: float | None = None
    sysctls: list[str] = field(default_factory=list)
    why: dict[str, str] = field(default_factory=dict)
    duration_s: float = math.nan


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise FidelityError(f"{where}: expected a duration such as \"10s\", got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([a-zµ]*)\s*", str(value))
        if not m or m.group(2) not in _UNITS or m.group(1).count(".") > 1:
            raise FidelityError(f"{where}: expected a duration such as \"10s\", got {value!r}")
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
    if not math.isfinite(seconds) or seconds < 0:
        raise FidelityError(f"{where}: must be a duration >= 0, got {value!r}")
    return seconds


def parse_suite(suite_file: Path = SUITE_FILE, scenario_dir: Path = SCENARIO_DIR
                ) -> list[Scenario]:
    """The suite's scenarios in order, from ``suite.toml`` and ``scenarios/NAME.toml``."""
    out = []
    for name, entry, where, path in suite_tables(suite_file, scenario_dir, SCENARIO_KEYS):
        sc = Scenario(name=name, path=path)
        if "event" in entry:
            sc.event_s = _seconds(entry["event"], f"{where}.event")
        sysctls = entry.get("sysctls", [])
        if not isinstance(sysctls, list) or not all(isinstance(s, str) for s in sysctls):
            raise FidelityError(f"{where}.sysctls: expected a list of \"net.KEY=VALUE\" strings")
        sc.sysctls = list(sysctls)
        sc.why = why_notes(entry, where, METRIC_KEYS)
        sc.description = str(scenario_doc(path).get("description", ""))
        out.append(sc)
    return out


def suite_tables(suite_file: Path, scenario_dir: Path, keys: Sequence[str], *,
                 error: type[Exception] = FidelityError
                 ) -> Iterator[tuple[str, dict[str, Any], str, Path]]:
    """The ``[NAME]`` tables of a suite's TOML file in order, each as (name, table, where,
    scenario file): every table holds only ``keys`` and names an existing
    ``scenario_dir/NAME.toml``; ``where`` (``FILE: [NAME]``) starts the messages of the
    checks that follow. Anything else is an ``error`` saying what. Shared by the suites."""
    try:
        doc = tomllib.loads(suite_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{suite_file}: {exc}") from None
    for name, entry in doc.items():
        where = f"{suite_file.name}: [{name}]"
        if not isinstance(entry, dict):
            raise error(f"{where}: expected a table")
        unknown = sorted(set(entry) - set(keys))
        if unknown:
            raise error(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(keys)})")
        path = scenario_dir / f"{name}.toml"
        if not path.is_file():
            raise error(f"{where}: no scenario file {path}")
        yield name, entry, where, path


def why_notes(entry: dict[str, Any], where: str, metric_keys: Sequence[str], *,
              error: type[Exception] = FidelityError) -> dict[str, str]:
    """A suite table's ``why`` notes (``metric = "known cause"``), each on one of
    ``metric_keys``; anything else is an ``error``. Shared by the suites."""
    why = entry.get("why", {})
    if not isinstance(why, dict):
        raise error(f"{where}.why: expected a table of metric = \"cause\"")
    for key, text in why.items():
        if key not in metric_keys:
            raise error(f"{where}.why.{key}: unknown metric (known: {', '.join(metric_keys)})")
        if not isinstance(text, str):
            raise error(f"{where}.why.{key}: expected a string")
    return dict(why)


def scenario_doc(path: Path, *, error: type[Exception] = FidelityError) -> dict[str, Any]:
    """A suite's scenario file as TOML (not resolved); a syntax error is an ``error`` naming
    the file. Shared by the suites."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: {exc}") from None


def select(only: Iterable[str] | None = None, suite: Sequence[Scenario] | None = None
           ) -> list[Scenario]:
    """The suite's scenarios, or those named in ``only`` (in the suite's order)."""
    return select_from(suite if suite is not None else parse_suite(), only,
                       listing="spikelab fidelity --list")


def select_from(suite: Sequence[Any], only: Iterable[str] | None, *, listing: str,
                error: type[Exception] = FidelityError) -> list[Any]:
    """The scenarios of ``suite`` (anything with a ``name``) named in ``only``, in the suite's
    order (all of them without ``only``); an unknown name is an ``error`` that lists the
    known ones and the command that lists them (``listing``). Shared by the suites."""
    suite = list(suite)
    if not only:
        return suite
    names = {s.name for s in suite}
    wanted = list(dict.fromkeys(only))
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise error(f"unknown scenario {unknown[0]!r} (known: "
                            f"{', '.join(s.name for s in suite)}; {listing})")
    return [s for s in suite if s.name in wanted]


def check(scenarios: Sequence[Scenario]) -> None:
    """Each scenario is valid for the simulator and accepted by the emulator's kernel mapping
    (needs no root). Fills ``duration_s``. Raises :class:`FidelityError` naming the
    scenario."""
    import json

    from .. import _core
    from ..emulate import kernel
    from ..emulate.run import _parse_sysctls, resolve

    for sc in scenarios:
        text = sc.path.read_text(encoding="utf-8")
        try:
            resolved, view, _, ccs = resolve(text, [], str(sc.path.parent))
            kernel.plan(view, resolved, ccs, _parse_sysctls(sc.sysctls))
            sim = json.loads(_core.resolve(text, [], str(sc.path.parent)))
        except ValueError as exc:  # ScenarioError, EmulationError
            raise FidelityError(f"scenario {sc.name}: {str(exc).splitlines()[0]}") from None
        if len(sim.get("flow") or []) != 1:
            raise FidelityError(f"scenario {sc.name}: the suite compares one flow; it has "
                                f"{len(sim.get('flow') or [])}")
        sc.duration_s = int(view["duration_ns"]) / 1e9


def listing(only: Iterable[str] | None = None) -> list[str]:
    """The lines of ``spikelab fidelity --list``: one per scenario (name, emulated seconds,
    description), then the count and the total emulated time. Needs no root."""
    scenarios = select(only)
    check(scenarios)
    return listing_lines(scenarios)


def listing_lines(scenarios: Sequence[Any]) -> list[str]:
    """A suite's listing of checked scenarios (``duration_s`` filled). Shared by the
    suites."""
    width = max(len(s.name) for s in scenarios)
    lines = [f"{s.name:{width}s}  {s.duration_s:4g} s  {s.description}" for s in scenarios]
    total = sum(s.duration_s for s in scenarios)
    lines.append(f"{len(scenarios)} scenarios, {total:g} s of emulated time")
    return lines


def preflight() -> None:
    """Refuse at once when the emulator cannot run here: no root (or capabilities), no
    ``ip`` command, no network namespaces. Raises PermissionError or FidelityError."""
    import shutil

    from ..emulate import kernel

    if not sys.platform.startswith("linux"):
        raise FidelityError("spikelab fidelity needs Linux (network namespaces) to run the "
                            "kernel side")
    kernel.require_privileges()
    if shutil.which("ip") is None:
        raise FidelityError("spikelab fidelity needs the ip command (iproute2) for the "
                            "emulator's network namespaces")
    if not Path("/proc/self/ns/net").exists():
        raise FidelityError("this kernel has no network namespaces (/proc/self/ns/net); the "
                            "emulator cannot run")


# ------------------------------------------------------------------------------- measuring


def _first_rto_s(result: Any, event_s: float | None) -> float | None:
    import pyarrow as pa
    import pyarrow.compute as pc

    event_ns = round((event_s or 0.0) * 1e9)
    ts = result.timeseries
    if ts is None or ts.num_rows == 0 or "var" not in ts.column_names:
        return None
    var = ts["var"].cast(pa.string())
    mask = pc.and_(pc.equal(var, "rto_expiry"), pc.greater_equal(ts["t_ns"], event_ns))
    first = pc.min(ts.filter(mask)["t_ns"]).as_py()
    return None if first is None else (first - event_ns) / 1e9


def _acks(result: Any) -> float | None:
    """The receiver's ACKs of flow 0 in a run's packets table (None without one)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pk = result.packets
    if pk is None or pk.num_rows == 0 or not {"event", "flow"} <= set(pk.column_names):
        return None
    mask = pc.and_(pc.equal(pk["event"].cast(pa.string()), "ack"), pc.equal(pk["flow"], 0))
    return float(pc.sum(mask.cast(pa.int64())).as_py() or 0)


def _num(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def measure(result: Any, event_s: float | None, *, emulated: bool) -> dict[str, float | None]:
    """The suite's metrics of one run (flow 0) from its RunResult."""
    row = result.runs.slice(0, 1).to_pylist()[0]
    goodput = _num(row.get("goodput_bps"))
    if emulated:
        counters = (result.manifest.get("emulation") or {}).get("counters", {}).get("sender", {})
        tlp = _num(counters.get("TcpExtTCPLossProbes"))
    else:
        tlp = _num(row.get("tlp_count"))  # n/a: results of a simulator without TLPs
    return {
        "goodput_mbps": None if goodput is None else goodput / 1e6,
        "rto_count": _num(row.get("rto_count")),
        "fast_retx_count": _num(row.get("fast_retx_count")),
        "tlp_count": tlp,
        "undo_count": _num(row.get("undo_count")),
        "first_rto_s": _first_rto_s(result, event_s),
        "acks": _acks(result),
    }


def agrees(metric: str, sim: float | None, kern: float | None) -> bool | None:
    """Whether one judged metric agrees (None for a metric that is shown, not judged)."""
    judged = {k: j for k, _, j in METRICS}[metric]
    if not judged:
        return None
    if sim is None or kern is None:
        return False
    if metric == "goodput_mbps":
        if sim == 0:
            return kern == 0
        return abs(kern - sim) / sim <= GOODPUT_TOLERANCE
    return sim == kern


def _diff(metric: str, sim: float | None, kern: float | None) -> float | None:
    if sim is None or kern is None:
        return None
    if metric in ("goodput_mbps", "acks"):
        return (kern - sim) / sim if sim else None
    return kern - sim


# ------------------------------------------------------------------------------- running


@dataclass
class Outcome:
    """One scenario's comparison (``error`` set when it could not run)."""

    scenario: Scenario
    sim: dict[str, float | None] = field(default_factory=dict)
    kernel: dict[str, float | None] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)
    unmapped: list[str] = field(default_factory=list)
    error: str | None = None
    wall_s: float = 0.0

    @property
    def agrees(self) -> bool:
        if self.error:
            return False
        return all(agrees(k, self.sim.get(k), self.kernel.get(k)) for k, _, j in METRICS if j)

    def misses(self) -> list[str]:
        return [k for k, _, j in METRICS
                if j and not agrees(k, self.sim.get(k), self.kernel.get(k))]


def run_scenario(sc: Scenario, outdir: Path, *, plots: bool = False,
                 progress: bool | None = None) -> Outcome:
    """Simulate and emulate one scenario into ``outdir/sim`` and ``outdir/kernel``."""
    import spikelab

    from ..emulate import emulate

    started = time.monotonic()
    sim = spikelab.run(str(sc.path), out=outdir / "sim", trace="packets", plots=plots,
                       progress=False, force=True)
    kern = emulate(str(sc.path), out=outdir / "kernel", sysctls=sc.sysctls, plots=plots,
                   progress=progress, force=True)
    em = kern.manifest["emulation"]
    return Outcome(scenario=sc, sim=measure(sim, sc.event_s, emulated=False),
                   kernel=measure(kern, sc.event_s, emulated=True),
                   timing=dict(em.get("timing") or {}),
                   unmapped=list(em.get("kernel", {}).get("unmapped", [])),
                   wall_s=time.monotonic() - started)


@dataclass
class SuiteResult:
    outcomes: list[Outcome]
    dir: Path
    manifest: dict[str, Any]

    @property
    def agree(self) -> int:
        return sum(o.agrees for o in self.outcomes)

    @property
    def failed(self) -> int:
        return sum(o.error is not None for o in self.outcomes)

    def summary_line(self) -> str:
        return summary_line(self.outcomes)


def summary_line(outcomes: Sequence[Any], against: str = "") -> str:
    """``N of M scenarios agree`` (``against``: who with, e.g. `` with ns-2``), and how many
    could not run."""
    n = sum(o.agrees for o in outcomes)
    text = f"{n} of {len(outcomes)} scenarios agree{against}"
    failed = sum(o.error is not None for o in outcomes)
    return text + (f" ({failed} could not run)" if failed else "")


def run(out: str | os.PathLike[str], *, only: Iterable[str] | None = None,
        plots: bool = False, progress: bool | None = None, force: bool = False,
        on_start: Callable[[int, int, Scenario], None] | None = None,
        on_done: Callable[[int, int, Outcome], None] | None = None) -> SuiteResult:
    """Run the suite (or the scenarios named in ``only``) into ``out``: per scenario
    ``NAME/sim`` and ``NAME/kernel`` results directories, then ``fidelity.parquet``,
    ``fidelity.csv``, ``report.md`` and ``manifest.json``. Needs root. A scenario that fails
    to run is recorded with its error and the others still run. ``on_start`` and ``on_done``
    are called around each scenario (the CLI prints its lines there)."""
    scenarios = select(only)
    check(scenarios)
    preflight()
    outcomes, outdir, manifest = run_suite(
        out, KIND, scenarios,
        lambda sc, d: run_scenario(sc, d, plots=plots, progress=progress),
        lambda sc, text, wall_s: Outcome(scenario=sc, error=text, wall_s=wall_s),
        write, force=force, on_start=on_start, on_done=on_done)
    return SuiteResult(outcomes=outcomes, dir=outdir, manifest=manifest)


def run_suite(out: str | os.PathLike[str], kind: str, scenarios: Sequence[Any],
              run_one: Callable[[Any, Path], Any],
              failed: Callable[[Any, str, float], Any],
              write: Callable[..., dict[str, Any]], *, force: bool = False,
              on_start: Callable[[int, int, Any], None] | None = None,
              on_done: Callable[[int, int, Any], None] | None = None
              ) -> tuple[list[Any], Path, dict[str, Any]]:
    """The loop both suites share: claim ``out`` for a result of ``kind`` (its old manifest
    removed first), then per scenario ``run_one(sc, out/NAME)``; one that raises becomes
    ``failed(sc, first line of the error, wall s)`` and the others still run. At the end, or
    when interrupted (``status`` "interrupted", Ctrl-C held back meanwhile), ``write(outdir,
    outcomes, wall_s=, status=, planned=)`` writes the tables and the manifest. Returns the
    outcomes, the directory and the manifest."""
    from ..store import results

    outdir = results.claim(out, kind, force=force)
    with contextlib.suppress(FileNotFoundError):
        (outdir / results.MANIFEST).unlink()
    started = time.monotonic()
    outcomes: list[Any] = []
    status = "interrupted"
    try:
        for i, sc in enumerate(scenarios, 1):
            if on_start is not None:
                on_start(i, len(scenarios), sc)
            t = time.monotonic()
            log.info("scenario %d of %d: %s", i, len(scenarios), sc.name)
            try:
                outcome = run_one(sc, outdir / sc.name)
            except (ValueError, OSError) as exc:  # EmulationError, a core error, a failed host
                text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                outcome = failed(sc, text, time.monotonic() - t)
            except Exception as exc:  # noqa: BLE001 - e.g. SimulationError: recorded, go on
                text = str(exc).splitlines()[0] if str(exc) else "unexpected failure"
                outcome = failed(sc, text, time.monotonic() - t)
            outcomes.append(outcome)
            if on_done is not None:
                on_done(i, len(scenarios), outcome)
        status = "complete"
    finally:
        from .._interrupts import interrupts_deferred

        with interrupts_deferred():
            manifest = write(outdir, outcomes, wall_s=time.monotonic() - started,
                             status=status, planned=[s.name for s in scenarios])
    return outcomes, outdir, manifest


def rewrite(out: str | os.PathLike[str]) -> SuiteResult:
    """Rewrite the tables and report of a suite's directory from the runs it holds (after the
    suite's ``why`` notes changed, say), without running anything or needing root."""
    import spikelab

    from ..store import results

    outdir = Path(out)
    if results.kind_of(outdir) != KIND:
        raise FidelityError(f"{out}: holds no fidelity suite's results")
    manifest = results.read_manifest(outdir)
    if manifest.get("against", "kernel") != "kernel":
        raise FidelityError(f"{out}: holds the fidelity suite against {manifest['against']}, "
                            "not the kernel's")
    by_name = {s.name: s for s in parse_suite()}
    outcomes = []
    for name in manifest.get("scenarios", []):
        sc = by_name.get(name) or Scenario(name=name, path=SCENARIO_DIR / f"{name}.toml")
        failed = {f["scenario"]: f["error"] for f in manifest.get("failed", [])}
        if name in failed:
            outcomes.append(Outcome(scenario=sc, error=failed[name]))
            continue
        sim = spikelab.load(outdir / name / "sim")
        kern = spikelab.load(outdir / name / "kernel")
        em = kern.manifest.get("emulation") or {}
        outcomes.append(Outcome(scenario=sc, sim=measure(sim, sc.event_s, emulated=False),
                                kernel=measure(kern, sc.event_s, emulated=True),
                                timing=dict(em.get("timing") or {}),
                                unmapped=list(em.get("kernel", {}).get("unmapped", []))))
    meta = write(outdir, outcomes, wall_s=float(manifest.get("wall_s", 0.0)),
                 status=str(manifest.get("status", "complete")),
                 planned=manifest.get("planned", []),
                 created=manifest.get("created"), release=manifest.get("kernel_release"))
    return SuiteResult(outcomes=outcomes, dir=outdir, manifest=meta)


# ------------------------------------------------------------------------------- writing


def kernel_release() -> str:
    return platform.release()


def table(outcomes: Sequence[Outcome], release: str | None = None) -> Any:
    """The long table: one row per scenario and metric."""
    release = release or kernel_release()

    def rows(o: Outcome):
        for key, label, judged in METRICS:
            s, k = o.sim.get(key), o.kernel.get(key)
            ok = agrees(key, s, k) if not o.error else (False if judged else None)
            yield key, label, judged, s, k, _diff(key, s, k), ok

    return long_table(outcomes, rows, reference="kernel", extra={"kernel_release": release})


TIMING_COLUMNS = ("timing_p50_ms", "timing_p99_ms", "timing_max_ms", "timing_within_1ms")


def long_table(outcomes: Sequence[Any], rows: Callable[[Any], Iterable[tuple]], *,
               reference: str, extra: dict[str, Any]) -> Any:
    """A suite's long table, one row per scenario and metric: ``scenario``, ``metric``,
    ``label``, ``judged``, ``sim``, the ``reference`` stack's value, ``diff``, ``agree``,
    ``why`` (the scenario's note, beside a row that misses only), ``scenario_agrees``,
    ``error``, the emulator's timing error, then the ``extra`` columns (one value each).
    ``rows(outcome)`` yields (metric, label, judged, sim, reference, diff, agree) per metric.
    Shared by the suites; an outcome has ``scenario`` (with ``name`` and ``why``),
    ``agrees``, ``error`` and ``timing``."""
    import pyarrow as pa

    names = ("scenario", "metric", "label", "judged", "sim", reference, "diff", "agree",
             "why", "scenario_agrees", "error", *TIMING_COLUMNS, *extra)
    cols: dict[str, list] = {k: [] for k in names}
    for o in outcomes:
        t = o.timing or {}
        for key, label, judged, s, r, d, ok in rows(o):
            cols["scenario"].append(o.scenario.name)
            cols["metric"].append(key)
            cols["label"].append(label)
            cols["judged"].append(judged)
            cols["sim"].append(s)
            cols[reference].append(r)
            cols["diff"].append(d)
            cols["agree"].append(ok)
            cols["why"].append(o.scenario.why.get(key) if ok is False else None)
            cols["scenario_agrees"].append(o.agrees)
            cols["error"].append(o.error)
            for col, name in (("timing_p50_ms", "p50_ns"), ("timing_p99_ms", "p99_ns"),
                              ("timing_max_ms", "max_ns")):
                v = t.get(name)
                cols[col].append(None if v is None else v / 1e6)
            cols["timing_within_1ms"].append(t.get("within_1ms"))
            for col, value in extra.items():
                cols[col].append(value)
    types = {"judged": pa.bool_(), "agree": pa.bool_(), "scenario_agrees": pa.bool_(),
             "sim": pa.float64(), reference: pa.float64(), "diff": pa.float64(),
             "timing_p50_ms": pa.float64(), "timing_p99_ms": pa.float64(),
             "timing_max_ms": pa.float64(), "timing_within_1ms": pa.float64()}
    return pa.table({k: pa.array(v, types.get(k, pa.string())) for k, v in cols.items()})


def write(outdir: Path, outcomes: Sequence[Outcome], *, wall_s: float, status: str,
          planned: Sequence[str], created: str | None = None,
          release: str | None = None) -> dict[str, Any]:
    """fidelity.parquet, fidelity.csv, report.md, then manifest.json (last)."""
    from .. import _core

    tab = table(outcomes, release)
    meta = {
        "kernel_release": release or kernel_release(),
        "spikelab": _core.__build__,
        "created": created or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "wall_s": wall_s,
        "status": status,
    }
    text = report(outcomes, meta, planned=planned)
    return write_files(outdir, tab, text, suite_manifest(outcomes, meta, planned,
                                                         summary_line(outcomes)))


def suite_manifest(outcomes: Sequence[Any], meta: dict[str, Any], planned: Sequence[str],
                   summary: str) -> dict[str, Any]:
    """A suite's manifest (before :func:`write_files` adds ``format`` and ``files``): its
    kind, ``meta``, the scenarios run and ``planned``, how many agree, which failed and the
    ``summary`` line. Shared by the suites."""
    return {
        "kind": KIND,
        **meta,
        "scenarios": [o.scenario.name for o in outcomes],
        "planned": list(planned),
        "agree": sum(o.agrees for o in outcomes),
        "total": len(outcomes),
        "failed": [{"scenario": o.scenario.name, "error": o.error}
                   for o in outcomes if o.error],
        "summary": summary,
    }


_IN_METRIC = "the metric's unit (see label)"
# Each column of a suite's long table (this module's, the usrsctp and ns-2 suites'): its unit
# and what it holds, written as Parquet field metadata (docs/results.md).
COLUMNS: dict[str, tuple[str, str]] = {
    "scenario": ("", "the suite's scenario"),
    "protocol": ("", "tcp or sctp"),
    "metric": ("", "the metric's key (goodput_mbps, rto_count, ...)"),
    "label": ("", "the metric in words, with its unit"),
    "judged": ("", "whether the metric counts towards the scenario's verdict"),
    "sim": (_IN_METRIC, "spikelab's simulated value; null when the run failed"),
    "spikelab": (_IN_METRIC, "spikelab's simulated value; null when the run failed"),
    "kernel": (_IN_METRIC, "the Linux kernel's value (spikelab emulate); null when not measured"),
    "usrsctp": (_IN_METRIC, "usrsctp's value; null when not measured"),
    "ns2": (_IN_METRIC, "ns-2.35's value; null when not measured"),
    "diff": (_IN_METRIC, "spikelab's value minus the reference stack's; null when either is"),
    "agree": ("", "whether the two agree within the metric's tolerance; null when not judged"),
    "why": ("", "the suite's known cause beside a metric that does not agree"),
    "scenario_agrees": ("", "whether every judged metric of the scenario agrees"),
    "error": ("", "why the scenario could not be compared; null when it ran"),
    "timing_p50_ms": ("ms", "median error of the emulator's delay timing"),
    "timing_p99_ms": ("ms", "99th percentile error of the emulator's delay timing"),
    "timing_max_ms": ("ms", "largest error of the emulator's delay timing"),
    "timing_within_1ms": ("1", "fraction of the emulator's delays within 1 ms of the plan"),
    "kernel_release": ("", "the kernel release the suite ran against (uname -r)"),
    "usrsctp_version": ("", "the usrsctp library version the suite ran against"),
}


def write_files(outdir: Path, tab: Any, report_text: str, manifest: dict[str, Any]
                ) -> dict[str, Any]:
    """A suite's files: fidelity.parquet, fidelity.csv, report.md, then manifest.json (last,
    with ``format`` first and ``files`` added). Returns the manifest written."""
    import pyarrow.csv as pacsv

    from ..store import results, schema

    results.write_parquet(schema.describe(tab, COLUMNS, "fidelity table"), outdir / TABLE)
    results.atomic_write(outdir / "fidelity.csv", lambda tmp: pacsv.write_csv(tab, tmp))
    results.atomic_write(outdir / REPORT,
                         lambda tmp: tmp.write_text(report_text, encoding="utf-8"))
    manifest = {"format": results.FORMAT, **manifest, "files": [TABLE, "fidelity.csv", REPORT]}
    results.write_json(manifest, outdir / results.MANIFEST)
    return manifest


DIGITS = {"goodput_mbps": 3, "first_rto_s": 3}  # decimals shown; 0 for the others
RELATIVE = ("goodput_mbps", "acks")  # differences shown in % of the simulator's


def _fmt(metric: str, v: float | None) -> str:
    return fmt_value(v, DIGITS.get(metric, 0))


def _fmt_diff(metric: str, d: float | None) -> str:
    return fmt_diff(d, DIGITS.get(metric, 0), relative=metric in RELATIVE)


def fmt_value(v: float | None, digits: int) -> str:
    """A report's value with ``digits`` decimals, n/a for None. Shared by the suites."""
    return "n/a" if v is None else f"{v:.{digits}f}"


def fmt_diff(d: float | None, digits: int, *, relative: bool) -> str:
    """A report's difference, signed: in % for a ``relative`` one (a fraction), else with
    ``digits`` decimals; empty for None. Shared by the suites."""
    if d is None:
        return ""
    return f"{100 * d:+.1f} %" if relative else f"{d:+.{digits}f}"


def timing_text(t: dict[str, Any]) -> str:
    if not t or not t.get("departures"):
        return "n/a"
    return (f"{t['p50_ns'] / 1e6:.3f} / {t['p99_ns'] / 1e6:.3f} / {t['max_ns'] / 1e6:.3f} ms, "
            f"{100 * t['within_1ms']:.2f} % ≤ 1 ms")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def report(outcomes: Sequence[Outcome], meta: dict[str, Any], *,
           planned: Sequence[str] = ()) -> str:
    """report.md: the summary line, one summary row per scenario, one table per scenario."""
    lines = [
        f"# Kernel fidelity: spikelab's `linux` profile against Linux {meta['kernel_release']}",
        "",
        (f"**{summary_line(outcomes)}** (goodput within {100 * GOODPUT_TOLERANCE:g} % and the "
         "same counts of RTOs, fast retransmits and undos; TLPs, the first RTO's time and the "
         "receiver's ACKs are shown, not judged)."),
        "",
        f"spikelab {meta['spikelab']}, kernel {meta['kernel_release']}, {meta['cpus']} CPUs, "
        f"{meta['created']}; the suite took {meta['wall_s'] / 60:.1f} min"
        + ("" if meta.get("status") == "complete" else
           f" and was **{meta.get('status')}** after {len(outcomes)} of {len(planned)} "
           "scenarios") + ".",
        "",
        ("Emulator timing error: actual minus intended departure of every frame the emulator "
         "sent (median / p99 / max, share within 1 ms)."),
        "",
        ("| scenario | verdict | goodput sim / kernel, Mbit/s | RTOs | fast retx | TLPs | undos "
         "| misses | emulator timing error |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        name = o.scenario.name
        if o.error:
            lines.append(f"| {name} | ERROR | | | | | | {_cell(o.error)} | |")
            continue
        pair = {k: f"{_fmt(k, o.sim.get(k))} / {_fmt(k, o.kernel.get(k))}" for k in METRIC_KEYS}
        lines.append(
            f"| {name} | {'agrees' if o.agrees else 'differs'} | {pair['goodput_mbps']} | "
            f"{pair['rto_count']} | {pair['fast_retx_count']} | {pair['tlp_count']} | "
            f"{pair['undo_count']} | {', '.join(o.misses())} | {timing_text(o.timing)} |")
    for o in outcomes:
        sc = o.scenario
        lines += ["", f"## {sc.name}", ""]
        if sc.description:
            lines += [sc.description + ".", ""]
        lines.append(f"Scenario: `python/spikelab/fidelity/scenarios/{sc.name}.toml`"
                     + (f"; event at {sc.event_s:g} s" if sc.event_s is not None else "")
                     + (f"; kernel sysctls {', '.join(sc.sysctls)}" if sc.sysctls else "")
                     + ".")
        lines.append("")
        if o.error:
            lines += [f"Could not run: {o.error}"]
            continue
        lines += ["| metric | sim | kernel | kernel − sim | verdict | why |",
                  "|---|---|---|---|---|---|"]
        for key, label, judged in METRICS:
            s, k = o.sim.get(key), o.kernel.get(key)
            ok = agrees(key, s, k)
            verdict = "not judged" if ok is None else ("agrees" if ok else "**misses**")
            why = sc.why.get(key, "") if ok is False else ""
            if key == "first_rto_s" and sc.event_s is None:
                label = "first RTO, s"
            lines.append(f"| {label} | {_fmt(key, s)} | {_fmt(key, k)} | "
                         f"{_fmt_diff(key, _diff(key, s, k))} | {verdict} | {_cell(why)} |")
        lines += ["", f"Emulator timing error: {timing_text(o.timing)}."]
        if o.unmapped:
            lines += ["", "Not mapped to the kernel: " + "; ".join(o.unmapped) + "."]
    return "\n".join(lines) + "\n"
