"""The suite against usrsctp: each scenario's SCTP association simulated (the scenario's SCTP
profile; ``rfc9260``, the default, in every shipped scenario) and emulated against usrsctp,
the FreeBSD SCTP stack as a library (``spikelab emulate``, docs/emulation.md "SCTP flows"),
one at a time, and compared metric by metric (docs/fidelity.md, "SCTP against usrsctp")::

    from spikelab.fidelity import usrsctp as fid
    print(fid.listing())                                  # the suite (no root needed)
    res = fid.run("out/fidelity-usrsctp", only=["loss-tsns"])   # as root, with libusrsctp2
    print(res.summary_line())                             # "1 of 1 scenarios agree"

The scenarios are plain spikelab scenarios (``usrsctp_scenarios/NAME.toml``, package data);
``usrsctp_suite.toml`` orders them and holds per-scenario notes of known causes
(``[NAME.why] metric = "..."``, shown beside a row that misses).

Per scenario, eight metrics side by side (simulator, usrsctp); a scenario **agrees** when
every judged one does:

- ``goodput_mbps``: judged, usrsctp's within 10 % of the simulator's (relative to the
  simulator's). docs/fidelity.md measured 1 % on the lossless path and 7-8 % at 1 % random
  loss, where the two stacks lose different packets.
- ``rto_count``, every T3-rtx expiry: shown, not judged. usrsctp's timer is not restarted
  while SACKs advance (RFC 9260 §6.3.2 R3 restarts it), so it expires every two RTOs of a
  steady transfer and such an expiry marks only chunks sent at least one RTO before it: it
  often retransmits nothing.
- ``rto_retx_count``, the T3-rtx expiries followed by a retransmission: judged, equal. The
  simulator's every expiry retransmits (§6.3.3 E3); usrsctp's count is those its capture
  shows a retransmitted DATA chunk for within 50 ms (the ``rto_expiry`` markers with a
  ``seq``) that no fast retransmission claims.
- ``fast_retx_count``, fast retransmits: judged, within max(1, 10 % of the simulator's).
- ``retx_chunks``, DATA chunks retransmitted (by the capture: the ground truth): judged,
  within max(1, 10 % of the simulator's), as fast retransmits.
- ``spurious_chunks``, of those the ones whose earlier copy had reached the receiver: shown.
- ``failovers``, changes of the destination new DATA goes to: judged for a multihomed
  association only, both or neither (the counts shown).
- ``failover_s``, the first new DATA to a destination other than the primary (s from time
  0, from each run's packets table): judged for a multihomed association only, within the
  scenario's RTO.Max (the spacing of the expiries that lead to a failover) when both fail
  over, n/a on both sides (agrees) when neither does.

Where each number comes from: the simulator's ``runs.parquet`` (``goodput_bps``,
``rto_count``, ``fast_retx_count``, ``retx_segments``, ``spurious_retx_true``,
``failovers``), ``rto_expiry`` markers of ``timeseries.parquet`` and ``send`` events of
``packets.parquet``; the emulated run's tables of the same names, whose SCTP columns come
from usrsctp's own counters (``sctps_timodata`` for T3-rtx expiries, the samples in which
``sctps_sendfastretrans`` grew for fast retransmits) and from the emulator's capture (every
DATA chunk, its destination and whether it was a retransmission).

Needs root (network namespaces) and libusrsctp (Debian/Ubuntu ``libusrsctp2``); without
either, :func:`run` refuses in one line before anything is written.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .suite import (
    KIND,
    FidelityError,
    SuiteResult,
    _cell,
    _num,
    fmt_diff,
    fmt_value,
    listing_lines,
    _seconds,
    long_table,
    run_suite,
    scenario_doc,
    select_from,
    suite_manifest,
    suite_tables,
    summary_line,
    timing_text,
    why_notes,
    write_files,
)
from .suite import preflight as _kernel_preflight

HERE = Path(__file__).resolve().parent
SCENARIO_DIR = HERE / "usrsctp_scenarios"
SUITE_FILE = HERE / "usrsctp_suite.toml"
AGAINST = "usrsctp"
REFERENCE_DIR = "usrsctp"  # NAME/usrsctp: the emulated run
LISTING = "spikelab fidelity --against usrsctp --list"
GOODPUT_TOLERANCE = 0.10
REPAIR_TOLERANCE = 0.10  # fast retransmits, chunks retransmitted: relative ...
REPAIR_SLACK = 1  # ... or this many, whichever is more
# (key, label, judged): the rows of each scenario's table, in order. ``failovers`` and
# ``failover_s`` are judged for a multihomed association only.
METRICS = (
    ("goodput_mbps", "goodput, Mbit/s", True),
    ("rto_count", "T3-rtx expiries", False),
    ("rto_retx_count", "T3-rtx expiries with a retransmission", True),
    ("fast_retx_count", "fast retransmits", True),
    ("retx_chunks", "chunks retransmitted", True),
    ("spurious_chunks", "of them spurious", False),
    ("failovers", "failovers", True),
    ("failover_s", "first new DATA to an alternate, s", True),
)
METRIC_KEYS = tuple(m[0] for m in METRICS)
MULTIHOMED_ONLY = ("failovers", "failover_s")
SCENARIO_KEYS = ("why",)
INSTALL_HINT = ("spikelab fidelity --against usrsctp needs libusrsctp, the FreeBSD SCTP stack "
                "as a library (Debian/Ubuntu: apt install libusrsctp2)")


@dataclass
class Scenario:
    """One scenario of the suite: its file, the suite's notes on it, and (filled by
    :func:`check`) what the comparison needs of its one association."""

    name: str
    path: Path
    description: str = ""
    why: dict[str, str] = field(default_factory=dict)
    duration_s: float = math.nan
    profile: str = ""
    destinations: int = 1
    primary: int = 0
    rto_max_s: float = math.nan


def parse_suite(suite_file: Path = SUITE_FILE, scenario_dir: Path = SCENARIO_DIR
                ) -> list[Scenario]:
    """The suite's scenarios in order, from ``usrsctp_suite.toml`` and
    ``usrsctp_scenarios/NAME.toml``."""
    return [Scenario(name=name, path=path, why=why_notes(entry, where, METRIC_KEYS),
                     description=str(scenario_doc(path).get("description", "")))
            for name, entry, where, path in suite_tables(suite_file, scenario_dir,
                                                         SCENARIO_KEYS)]


def select(only: Iterable[str] | None = None, suite: Sequence[Scenario] | None = None
           ) -> list[Scenario]:
    """The suite's scenarios, or those named in ``only`` (in the suite's order)."""
    return select_from(suite if suite is not None else parse_suite(), only, listing=LISTING)


def _facts(sc: Scenario, resolved: dict[str, Any]) -> None:
    """Fill what the comparison needs from the scenario as resolved (one SCTP flow)."""
    flows = resolved.get("flow") or []
    if len(flows) != 1:
        raise FidelityError(f"scenario {sc.name}: the suite compares one association; it has "
                            f"{len(flows)} flows")
    flow = flows[0]
    if flow.get("protocol", "tcp") != "sctp":
        raise FidelityError(f"scenario {sc.name}: flow[0].protocol: the suite against "
                            f"usrsctp compares SCTP associations, this flow is "
                            f"{flow.get('protocol', 'tcp')}")
    sctp = flow.get("sctp") or {}
    sc.profile = str(sctp.get("profile", ""))
    sc.destinations = max(len(flow.get("paths") or []), 1)
    sc.primary = int(sctp.get("primary", 0))
    if "rto_max" in sctp:
        sc.rto_max_s = _seconds(sctp["rto_max"], f"scenario {sc.name}: flow[0].sctp.rto_max")


def check(scenarios: Sequence[Scenario]) -> None:
    """Each scenario is valid for the simulator, has one SCTP association and is accepted by
    the emulator's usrsctp mapping (needs no root, nor libusrsctp). Fills ``duration_s``,
    ``profile``, ``destinations``, ``primary`` and ``rto_max_s``. Raises
    :class:`FidelityError` naming the scenario."""
    import json

    from .. import _core
    from ..emulate import kernel
    from ..emulate.run import resolve

    for sc in scenarios:
        text = sc.path.read_text(encoding="utf-8")
        try:
            sim = json.loads(_core.resolve(text, [], str(sc.path.parent)))
        except ValueError as exc:  # ScenarioError
            raise FidelityError(f"scenario {sc.name}: {str(exc).splitlines()[0]}") from None
        _facts(sc, sim)
        try:
            resolved, view, _, ccs = resolve(text, [], str(sc.path.parent))
            kernel.plan(view, resolved, ccs, {})
        except ValueError as exc:  # ScenarioError, EmulationError
            raise FidelityError(f"scenario {sc.name}: {str(exc).splitlines()[0]}") from None
        sc.duration_s = int(view["duration_ns"]) / 1e9


def listing(only: Iterable[str] | None = None) -> list[str]:
    """The lines of ``spikelab fidelity --against usrsctp --list``: one per scenario (name,
    emulated seconds, description), then the count and the total emulated time. Needs no
    root."""
    scenarios = select(only)
    check(scenarios)
    return listing_lines(scenarios)


def preflight() -> None:
    """Refuse at once when the emulator or usrsctp cannot run here: no root (or
    capabilities), no ``ip`` command, no network namespaces, no libusrsctp. Raises
    PermissionError or :class:`FidelityError` (one line)."""
    from ..emulate import usrsctp

    _kernel_preflight()
    if not usrsctp.available():
        raise FidelityError(INSTALL_HINT)


def usrsctp_version() -> str:
    """The installed libusrsctp: Debian's package version when dpkg knows it (``0.9.5.0-2``),
    else the file the library's name resolves to, else ``unknown``."""
    import ctypes.util
    import shutil
    import subprocess

    from ..emulate import usrsctp

    if shutil.which("dpkg-query"):
        done = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libusrsctp2"],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/usr/lib", "/lib"):
        p = Path(d) / usrsctp.LIBRARY
        if p.exists():
            return p.resolve().name
    return ctypes.util.find_library("usrsctp") or "unknown"


# ------------------------------------------------------------------------------- measuring


def _t3_with_retransmission(result: Any) -> float | None:
    """The ``rto_expiry`` markers of flow 0 that name a retransmitted chunk (``seq`` set) no
    ``fast_retx`` marker names too. An emulated run labels each stack event with the first
    retransmission the capture shows within 50 ms of it, T3-rtx expiries and fast
    retransmits each on their own, so an expiry of usrsctp's that retransmitted nothing, just
    before a fast retransmission, is labelled with that one (seen on loss-tsns); the counter
    of fast-retransmitted chunks says whose it was. Simulated markers carry no transmission
    number (``tx`` null) and name their own chunk: all of them count."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts = result.timeseries
    if ts is None or not {"var", "flow", "seq"} <= set(ts.column_names):
        return None
    ts = ts.filter(pc.equal(ts["flow"], 0))
    var = ts["var"].cast(pa.string())
    tx = ts["tx"] if "tx" in ts.column_names else pa.nulls(ts.num_rows, pa.int32())
    t3 = ts.filter(pc.and_(pc.equal(var, "rto_expiry"), pc.greater_equal(ts["seq"], 0)))
    t3_tx = tx.filter(pc.and_(pc.equal(var, "rto_expiry"), pc.greater_equal(ts["seq"], 0)))
    fr_mask = pc.and_(pc.equal(var, "fast_retx"), pc.greater_equal(tx, 0))
    by_fr = set(zip(ts.filter(fr_mask)["seq"].to_pylist(), tx.filter(fr_mask).to_pylist(),
                    strict=True))
    # A marker without a transmission number (null; -1 in tables written before nulls).
    return float(sum(x is None or x < 0 or (seq, x) not in by_fr
                     for seq, x in zip(t3["seq"].to_pylist(), t3_tx.to_pylist(), strict=True)))


def _first_to_alternate(result: Any, primary: int) -> float | None:
    """When the first new DATA (a ``send`` of kind ``data``) of flow 0 left for a destination
    other than ``primary``, s; None if none did, or without a packets table."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pk = result.packets
    if pk is None or not {"event", "kind", "flow", "dest", "t_ns"} <= set(pk.column_names):
        return None
    mask = pc.and_(pc.and_(pc.equal(pk["event"].cast(pa.string()), "send"),
                           pc.equal(pk["kind"].cast(pa.string()), "data")),
                   pc.and_(pc.equal(pk["flow"], 0), pc.not_equal(pk["dest"], primary)))
    first = pc.min(pk.filter(mask)["t_ns"]).as_py()
    return None if first is None else first / 1e9


def measure(result: Any, primary: int = 0) -> dict[str, float | None]:
    """The suite's metrics of one run (flow 0) from its RunResult, simulated or emulated
    alike (both write the same tables)."""
    row = result.runs.slice(0, 1).to_pylist()[0]
    goodput = _num(row.get("goodput_bps"))
    return {
        "goodput_mbps": None if goodput is None else goodput / 1e6,
        "rto_count": _num(row.get("rto_count")),
        "rto_retx_count": _t3_with_retransmission(result),
        "fast_retx_count": _num(row.get("fast_retx_count")),
        "retx_chunks": _num(row.get("retx_segments")),
        "spurious_chunks": _num(row.get("spurious_retx_true")),
        "failovers": _num(row.get("failovers")),
        "failover_s": _first_to_alternate(result, primary),
    }


def judged(metric: str, sc: Scenario) -> bool:
    """Whether ``metric`` is judged for ``sc`` (failovers: a multihomed association only)."""
    flag = {k: j for k, _, j in METRICS}[metric]
    return flag and (metric not in MULTIHOMED_ONLY or sc.destinations > 1)


def agrees(metric: str, sim: float | None, ref: float | None, sc: Scenario) -> bool | None:
    """The verdict on one metric of scenario ``sc`` (the rules of the module's docstring);
    None for a metric that is shown, not judged."""
    if not judged(metric, sc):
        return None
    if metric == "failover_s":
        if sim is None and ref is None:
            return True  # neither failed over: nothing to time
        if sim is None or ref is None:
            return False
        return abs(ref - sim) <= sc.rto_max_s
    if sim is None or ref is None:
        return False
    if metric == "goodput_mbps":
        if sim == 0:
            return ref == 0
        return abs(ref - sim) / sim <= GOODPUT_TOLERANCE
    if metric in ("fast_retx_count", "retx_chunks"):
        return abs(ref - sim) <= max(REPAIR_SLACK, REPAIR_TOLERANCE * sim)
    if metric == "failovers":
        return (sim > 0) == (ref > 0)
    return sim == ref


def _diff(metric: str, sim: float | None, ref: float | None) -> float | None:
    if sim is None or ref is None:
        return None
    if metric == "goodput_mbps":
        return (ref - sim) / sim if sim else None
    return ref - sim


# ------------------------------------------------------------------------------- running


@dataclass
class Outcome:
    """One scenario's comparison (``error`` set when it could not run). ``reference`` holds
    usrsctp's metrics; ``kernel`` is the same dict under the name the kernel suite's outcomes
    use, so code that prints either suite's outcomes works on both."""

    scenario: Scenario
    sim: dict[str, float | None] = field(default_factory=dict)
    reference: dict[str, float | None] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)
    unmapped: list[str] = field(default_factory=list)
    error: str | None = None
    wall_s: float = 0.0

    @property
    def kernel(self) -> dict[str, float | None]:
        return self.reference

    @property
    def usrsctp(self) -> dict[str, float | None]:
        return self.reference

    def rows(self) -> Iterator[tuple[str, str, bool, float | None, float | None,
                                     float | None, bool | None]]:
        """(metric, label, judged, sim, usrsctp, usrsctp − sim, verdict) per metric; a
        scenario that could not run misses every judged metric."""
        for key, label, _ in METRICS:
            j = judged(key, self.scenario)
            s, r = self.sim.get(key), self.reference.get(key)
            ok = agrees(key, s, r, self.scenario) if not self.error else (False if j else None)
            yield key, label, j, s, r, _diff(key, s, r), ok

    @property
    def agrees(self) -> bool:
        return not self.error and all(row[6] is not False for row in self.rows())

    def misses(self) -> list[str]:
        return [row[0] for row in self.rows() if row[6] is False]


def run_scenario(sc: Scenario, outdir: Path, *, plots: bool = False,
                 progress: bool | None = None) -> Outcome:
    """Simulate and emulate one scenario into ``outdir/sim`` and ``outdir/usrsctp``."""
    import spikelab

    from ..emulate import emulate

    started = time.monotonic()
    sim = spikelab.run(str(sc.path), out=outdir / "sim", trace="packets", plots=plots,
                       progress=False, force=True)
    ref = emulate(str(sc.path), out=outdir / REFERENCE_DIR, plots=plots, progress=progress,
                  force=True)
    return _outcome(sc, sim, ref, wall_s=time.monotonic() - started)


def _outcome(sc: Scenario, sim: Any, ref: Any, wall_s: float = 0.0) -> Outcome:
    em = ref.manifest.get("emulation") or {}
    return Outcome(scenario=sc, sim=measure(sim, sc.primary),
                   reference=measure(ref, sc.primary), timing=dict(em.get("timing") or {}),
                   unmapped=list((em.get("kernel") or {}).get("unmapped", [])), wall_s=wall_s)


def run(out: str | os.PathLike[str], only: Iterable[str] | None = None,
        on_start: Callable[[int, int, Scenario], None] | None = None,
        on_done: Callable[[int, int, Outcome], None] | None = None,
        progress: bool | None = None, force: bool = False, plots: bool = False
        ) -> SuiteResult:
    """Run the suite (or the scenarios named in ``only``) into ``out``: per scenario
    ``NAME/sim`` and ``NAME/usrsctp`` results directories, then ``fidelity.parquet``,
    ``fidelity.csv``, ``report.md`` and ``manifest.json`` (kind ``fidelity``, ``against``
    ``usrsctp``). Needs root and libusrsctp: refuses in one line, before anything is
    written, without them. A scenario that fails to run is recorded with its error and the
    others still run. ``on_start(i, n, scenario)`` and ``on_done(i, n, outcome)`` are called
    around each scenario, as by the kernel suite's ``run``."""
    scenarios = select(only)
    check(scenarios)
    preflight()
    version = usrsctp_version()
    outcomes, outdir, manifest = run_suite(
        out, KIND, scenarios,
        lambda sc, d: run_scenario(sc, d, plots=plots, progress=progress),
        lambda sc, text, wall_s: Outcome(scenario=sc, error=text, wall_s=wall_s),
        lambda *a, **k: write(*a, version=version, **k), force=force, on_start=on_start,
        on_done=on_done)
    return SuiteResult(outcomes=outcomes, dir=outdir, manifest=manifest)


def rewrite(out: str | os.PathLike[str]) -> SuiteResult:
    """Rewrite the tables and report of a suite's directory from the runs it holds (after the
    suite's ``why`` notes or rules changed), without running anything or needing root."""
    import spikelab

    from ..store import results

    outdir = Path(out)
    if results.kind_of(outdir) != KIND:
        raise FidelityError(f"{out}: holds no fidelity suite's results")
    manifest = results.read_manifest(outdir)
    if manifest.get("against") != AGAINST:
        raise FidelityError(f"{out}: holds the fidelity suite against "
                            f"{manifest.get('against', 'kernel')}, not usrsctp")
    by_name = {s.name: s for s in parse_suite()}
    failed = {f["scenario"]: f["error"] for f in manifest.get("failed", [])}
    outcomes = []
    for name in manifest.get("scenarios", []):
        sc = by_name.get(name) or Scenario(name=name, path=SCENARIO_DIR / f"{name}.toml")
        if name in failed:
            outcomes.append(Outcome(scenario=sc, error=failed[name]))
            continue
        sim = spikelab.load(outdir / name / "sim")
        ref = spikelab.load(outdir / name / REFERENCE_DIR)
        _facts(sc, sim.scenario)
        sc.duration_s = float(sim.duration_s)
        outcomes.append(_outcome(sc, sim, ref))
    meta = write(outdir, outcomes, wall_s=float(manifest.get("wall_s", 0.0)),
                 status=str(manifest.get("status", "complete")),
                 planned=manifest.get("planned", []), created=manifest.get("created"),
                 version=manifest.get("usrsctp"), release=manifest.get("kernel_release"))
    return SuiteResult(outcomes=outcomes, dir=outdir, manifest=meta)


# ------------------------------------------------------------------------------- writing


def table(outcomes: Sequence[Outcome], version: str = "unknown") -> Any:
    """The long table: one row per scenario and metric (the kernel suite's columns, with
    ``usrsctp`` for ``kernel`` and ``usrsctp_version`` for ``kernel_release``)."""
    return long_table(outcomes, lambda o: o.rows(), reference=AGAINST,
                      extra={"usrsctp_version": version})


def write(outdir: Path, outcomes: Sequence[Outcome], *, wall_s: float, status: str,
          planned: Sequence[str], created: str | None = None, version: str | None = None,
          release: str | None = None) -> dict[str, Any]:
    """fidelity.parquet, fidelity.csv, report.md, then manifest.json (last)."""
    from .. import _core

    version = version or "unknown"
    meta = {
        "against": AGAINST,
        "usrsctp": version,
        "kernel_release": release or platform.release(),
        "spikelab": _core.__build__,
        "created": created or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "wall_s": wall_s,
        "status": status,
    }
    return write_files(outdir, table(outcomes, version), report(outcomes, meta, planned=planned),
                       suite_manifest(outcomes, meta, planned, summary_line(outcomes)))


DIGITS = {"goodput_mbps": 3, "failover_s": 2}  # decimals shown; 0 for the others


def _fmt(metric: str, v: float | None) -> str:
    return fmt_value(v, DIGITS.get(metric, 0))


def _fmt_diff(metric: str, d: float | None) -> str:
    return fmt_diff(d, DIGITS.get(metric, 0), relative=metric == "goodput_mbps")


RULES = (f"goodput within {100 * GOODPUT_TOLERANCE:g} %, the same number of T3-rtx expiries "
         f"with a retransmission, fast retransmits and chunks retransmitted within "
         f"max({REPAIR_SLACK}, {100 * REPAIR_TOLERANCE:g} %); multihomed: both fail over or "
         "neither, the first new DATA to the alternate within RTO.Max; every T3-rtx expiry "
         "and the spurious chunks are shown, not judged")


def report(outcomes: Sequence[Outcome], meta: dict[str, Any], *,
           planned: Sequence[str] = ()) -> str:
    """report.md: the summary line, one summary row per scenario, one table per scenario."""
    lines = [
        f"# SCTP fidelity: spikelab's SCTP against usrsctp {meta['usrsctp']}",
        "",
        f"**{summary_line(outcomes)}** ({RULES}).",
        "",
        f"spikelab {meta['spikelab']}, usrsctp {meta['usrsctp']} (libusrsctp), kernel "
        f"{meta['kernel_release']}, {meta['cpus']} CPUs, {meta['created']}; the suite took "
        f"{meta['wall_s'] / 60:.1f} min"
        + ("" if meta.get("status") == "complete" else
           f" and was **{meta.get('status')}** after {len(outcomes)} of {len(planned)} "
           "scenarios") + ".",
        "",
        ("Emulator timing error: actual minus intended departure of every frame the emulator "
         "sent (median / p99 / max, share within 1 ms)."),
        "",
        ("| scenario | verdict | goodput sim / usrsctp, Mbit/s | T3-rtx expiries (with a "
         "retransmission) | fast retx | chunks retransmitted (spurious) | failover at, s "
         "| misses | emulator timing error |"),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        name = o.scenario.name
        if o.error:
            lines.append(f"| {name} | ERROR | | | | | | {_cell(o.error)} | |")
            continue
        s, r = o.sim, o.reference

        def both(key: str, s=s, r=r) -> str:
            return f"{_fmt(key, s.get(key))} / {_fmt(key, r.get(key))}"

        t3 = (f"{_fmt('rto_count', s.get('rto_count'))} "
              f"({_fmt('rto_count', s.get('rto_retx_count'))}) / "
              f"{_fmt('rto_count', r.get('rto_count'))} "
              f"({_fmt('rto_count', r.get('rto_retx_count'))})")
        chunks = (f"{_fmt('retx_chunks', s.get('retx_chunks'))} "
                  f"({_fmt('retx_chunks', s.get('spurious_chunks'))}) / "
                  f"{_fmt('retx_chunks', r.get('retx_chunks'))} "
                  f"({_fmt('retx_chunks', r.get('spurious_chunks'))})")
        failover = both("failover_s") if o.scenario.destinations > 1 else "single-homed"
        lines.append(
            f"| {name} | {'agrees' if o.agrees else 'differs'} | {both('goodput_mbps')} | "
            f"{t3} | {both('fast_retx_count')} | {chunks} | {failover} | "
            f"{', '.join(o.misses())} | {timing_text(o.timing)} |")
    for o in outcomes:
        sc = o.scenario
        lines += ["", f"## {sc.name}", ""]
        if sc.description:
            lines += [sc.description + ".", ""]
        facts = [f"profile `{sc.profile}`"] if sc.profile else []
        if sc.destinations > 1:
            facts.append(f"{sc.destinations} destinations, primary {sc.primary}, "
                         f"RTO.Max {sc.rto_max_s:g} s")
        lines.append(f"Scenario: `python/spikelab/fidelity/usrsctp_scenarios/{sc.name}.toml`"
                     + (f"; {', '.join(facts)}" if facts else "") + ".")
        lines.append("")
        if o.error:
            lines += [f"Could not run: {o.error}"]
            continue
        lines += ["| metric | sim | usrsctp | usrsctp − sim | verdict | why |",
                  "|---|---|---|---|---|---|"]
        for key, label, _, s, r, d, ok in o.rows():
            if ok is None:
                verdict = ("not judged (single-homed)" if key in MULTIHOMED_ONLY
                           else "not judged")
            else:
                verdict = "agrees" if ok else "**misses**"
            why = sc.why.get(key, "") if ok is False else ""
            lines.append(f"| {label} | {_fmt(key, s)} | {_fmt(key, r)} | {_fmt_diff(key, d)} "
                         f"| {verdict} | {_cell(why)} |")
        lines += ["", f"Emulator timing error: {timing_text(o.timing)}."]
        if o.unmapped:
            lines += ["", "Not mapped to usrsctp: " + "; ".join(o.unmapped) + "."]
    return "\n".join(lines) + "\n"


__all__ = ["AGAINST", "METRICS", "FidelityError", "Outcome", "Scenario",
           "SuiteResult", "agrees", "check", "judged", "listing", "measure", "parse_suite",
           "preflight", "report", "rewrite", "run", "select", "table", "usrsctp_version"]
