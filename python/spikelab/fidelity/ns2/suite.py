"""The ns-2 suite: each scenario simulated by spikelab (``profile = "ns2"``) and written as an
ns-2.35 script (``tcl.py``), run by ``ns`` (``runner.py``), and compared (docs/fidelity.md,
"Against ns-2.35").

Verdicts: a TCP scenario agrees when spikelab's delivered packets are within 1 % of ns-2's,
the timeouts are equal and the retransmitted packets are within max(3, 10 % of ns-2's). An
SCTP one when the T3-rtx expiries are equal, the fast retransmits within 1 and the packets
through the bottleneck within 2 %. Other numbers are shown, not judged.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..suite import (
    KIND,
    run_suite,
    scenario_doc,
    select_from,
    suite_manifest,
    suite_tables,
    why_notes,
    write_files,
)
from ..suite import SuiteResult as BaseSuiteResult
from ..suite import summary_line as base_summary_line
from .runner import Counts, Ns2Error, ns_binary, run_plan, run_script
from .tcl import Refused, plan

HERE = Path(__file__).resolve().parent.parent
SCENARIO_DIR = HERE / "ns2_scenarios"
SUITE_FILE = SCENARIO_DIR / "suite.toml"
AGAINST = "ns2"
# (key, label, judged for TCP, judged for SCTP)
METRICS = (
    ("delivered", "data packets delivered in order", True, False),
    ("timeouts", "timeouts (TCP RTOs, SCTP T3-rtx)", True, True),
    ("retx", "retransmitted packets", True, False),
    ("fast_retx", "fast retransmits", False, True),
    ("bottleneck", "packets through the bottleneck", False, True),
)
METRIC_KEYS = tuple(m[0] for m in METRICS)

class Ns2SuiteError(ValueError):
    """A suite definition, a selection or a scenario that cannot run (one line)."""


@dataclass
class Scenario:
    name: str
    path: Path
    description: str = ""
    protocol: str = "tcp"
    why: dict[str, str] = field(default_factory=dict)
    duration_s: float = 0.0


def parse_suite(suite_file: Path = SUITE_FILE, scenario_dir: Path = SCENARIO_DIR
                ) -> list[Scenario]:
    """The suite's scenarios in order (``suite.toml``: ``[NAME]`` tables, optional
    ``why.METRIC = "known cause"``)."""
    out = []
    for name, entry, where, path in suite_tables(suite_file, scenario_dir, ("why",),
                                                 error=Ns2SuiteError):
        why = why_notes(entry, where, METRIC_KEYS, error=Ns2SuiteError)
        doc_sc = scenario_doc(path, error=Ns2SuiteError)
        flows = doc_sc.get("flow") or [{}]
        out.append(Scenario(name=name, path=path, description=str(doc_sc.get("description", "")),
                            protocol=str(flows[0].get("protocol", "tcp")), why=why))
    return out


def select(only: Iterable[str] | None = None, suite: Sequence[Scenario] | None = None
           ) -> list[Scenario]:
    return select_from(suite if suite is not None else parse_suite(), only,
                       listing="spikelab fidelity --against ns2 --list", error=Ns2SuiteError)


def resolve(sc: Scenario) -> tuple[dict[str, Any], list[str]]:
    """The scenario as the simulator resolves it, and the overrides it ran with (none: the
    scenarios set ``profile = "ns2"`` themselves)."""
    from ... import _core

    text = sc.path.read_text(encoding="utf-8")
    sets: list[str] = []
    try:
        return json.loads(_core.resolve(text, sets, str(sc.path.parent))), sets
    except ValueError as exc:
        raise Ns2SuiteError(f"scenario {sc.name}: {str(exc).splitlines()[0]}") from None


def check(scenarios: Sequence[Scenario]) -> None:
    """Each scenario resolves and ns-2 can express it (fills ``duration_s``); needs no ns."""
    from .units import seconds

    for sc in scenarios:
        resolved, _ = resolve(sc)
        try:
            plan(resolved)
        except Refused as exc:
            raise Ns2SuiteError(f"scenario {sc.name}: {exc}") from None
        sc.duration_s = seconds(resolved["sim"]["duration"], "sim.duration")


# ------------------------------------------------------------------------------- measuring


def spikelab_counts(result: Any, p: Any) -> Counts:
    """Flow 0's numbers from a spikelab run with a packets trace."""
    import pyarrow as pa
    import pyarrow.compute as pc

    row = result.runs.slice(0, 1).to_pylist()[0]
    f = p.flows[0]
    c = Counts(timeouts=float(row["rto_count"]), retx=float(row["retx_segments"]),
               fast_retx=float(row["fast_retx_count"]), sent=float(row["segments_sent"]))
    c.delivered = float(int(row["bytes_delivered"]) // f.mss) if f.mss else None
    pk = result.packets
    if pk is not None and pk.num_rows and p.bottlenecks:
        ev = pk["event"].cast(pa.string())
        path = pk["path"].cast(pa.string())
        stage = pk["stage"].cast(pa.string())
        n = 0
        for lk in p.bottlenecks:
            mask = pc.and_(pc.and_(pc.equal(ev, "stage_exit"), pc.equal(path, lk.path)),
                           pc.equal(stage, lk.rate_stage))
            n += len(pc.unique(pk["pkt"].filter(mask)))
        c.bottleneck = float(n)
    return c


def agrees(metric: str, protocol: str, spk: float | None, ns2: float | None) -> bool | None:
    """One metric's verdict (None: shown, not judged)."""
    judged = {k: (t if protocol == "tcp" else s) for k, _, t, s in METRICS}[metric]
    if not judged:
        return None
    if spk is None or ns2 is None:
        return False
    if metric == "delivered":
        return abs(spk - ns2) <= 0.01 * ns2
    if metric == "timeouts":
        return spk == ns2
    if metric == "retx":
        return abs(spk - ns2) <= max(3.0, 0.10 * ns2)
    if metric == "fast_retx":
        return abs(spk - ns2) <= 1
    if metric == "bottleneck":
        return abs(spk - ns2) <= 0.02 * ns2
    return None


@dataclass
class Outcome:
    scenario: Scenario
    spikelab: dict[str, float | None] = field(default_factory=dict)
    ns2: dict[str, float | None] = field(default_factory=dict)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    ns2_cpu_s: float = 0.0
    ns2_runs: int = 0
    wall_s: float = 0.0

    def verdict(self, key: str) -> bool | None:
        return agrees(key, self.scenario.protocol, self.spikelab.get(key), self.ns2.get(key))

    @property
    def agrees(self) -> bool:
        return not self.error and all(self.verdict(k) is not False for k in METRIC_KEYS)

    def misses(self) -> list[str]:
        return [k for k in METRIC_KEYS if self.verdict(k) is False]


def run_scenario(sc: Scenario, outdir: Path) -> Outcome:
    """Simulate one scenario (``outdir/sim``) and run it in ns-2 (``outdir/ns2``)."""
    import spikelab

    started = time.monotonic()
    resolved, sets = resolve(sc)
    try:
        p, _ = plan(resolved)
    except Refused as exc:
        raise Ns2SuiteError(str(exc)) from None
    nsdir = outdir / "ns2"
    shutil.rmtree(nsdir, ignore_errors=True)
    nsdir.mkdir(parents=True)
    nsr = run_plan(p, nsdir)
    for tr in nsdir.glob("link-*.tr"):  # the traces are read; the script reproduces them
        tr.unlink()
    res = spikelab.run(str(sc.path), overrides=sets, out=outdir / "sim", trace="packets",
                       plots=False, progress=False, force=True)
    spk = spikelab_counts(res, p)
    return Outcome(scenario=sc, spikelab=vars(spk), ns2=vars(nsr.flows[0]), notes=p.notes,
                   overrides=sets, ns2_cpu_s=nsr.cpu_s, ns2_runs=nsr.runs,
                   wall_s=time.monotonic() - started)


class SuiteResult(BaseSuiteResult):
    """The kernel suite's result, and how many scenarios differ (the exit code's)."""

    @property
    def differ(self) -> int:
        return sum(not o.agrees for o in self.outcomes)

    def summary_line(self) -> str:
        return summary_line(self.outcomes)


def summary_line(outcomes: Sequence[Outcome]) -> str:
    return base_summary_line(outcomes, " with ns-2")


def run(out: str | os.PathLike[str], *, only: Iterable[str] | None = None,
        force: bool = False, progress: bool | None = None,
        on_start: Callable[[int, int, Scenario], None] | None = None,
        on_done: Callable[[int, int, Outcome], None] | None = None) -> SuiteResult:
    """Run the suite (or ``only``) into ``out``: per scenario ``NAME/sim`` (spikelab) and
    ``NAME/ns2`` (the script, ns's output and event trace), then ``fidelity.parquet``,
    ``fidelity.csv``, ``report.md`` and ``manifest.json``. ``progress`` is accepted for the
    kernel suite's signature (each scenario takes a fraction of a second)."""
    del progress
    scenarios = select(only)
    ns_binary()
    check(scenarios)
    outcomes, outdir, manifest = run_suite(
        out, KIND, scenarios, run_scenario,
        lambda sc, text, wall_s: Outcome(scenario=sc, error=text, wall_s=wall_s), write,
        force=force, on_start=on_start, on_done=on_done)
    return SuiteResult(outcomes=outcomes, dir=outdir, manifest=manifest)


# ------------------------------------------------------------------------------- writing


def ns2_version() -> str:
    """The installed ns's version (its ``ns-version`` Tcl proc), or "unknown"."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="spikelab-ns2-") as tmp:
        try:
            out, _, _ = run_script("puts [ns-version]\nexit 0\n", Path(tmp), timeout=10)
        except (OSError, Ns2Error):
            return "unknown"
    return out.strip() or "unknown"


def table(outcomes: Sequence[Outcome]) -> Any:
    """The long table: one row per scenario and metric."""
    import pyarrow as pa

    cols: dict[str, list] = {k: [] for k in (
        "scenario", "protocol", "metric", "label", "judged", "spikelab", "ns2", "diff",
        "agree", "why", "scenario_agrees", "error")}
    for o in outcomes:
        for key, label, jt, js in METRICS:
            s, n = o.spikelab.get(key), o.ns2.get(key)
            ok = o.verdict(key) if not o.error else None
            cols["scenario"].append(o.scenario.name)
            cols["protocol"].append(o.scenario.protocol)
            cols["metric"].append(key)
            cols["label"].append(label)
            cols["judged"].append(jt if o.scenario.protocol == "tcp" else js)
            cols["spikelab"].append(s)
            cols["ns2"].append(n)
            cols["diff"].append(None if s is None or n is None else s - n)
            cols["agree"].append(ok)
            cols["why"].append(o.scenario.why.get(key) if ok is False else None)
            cols["scenario_agrees"].append(o.agrees)
            cols["error"].append(o.error)
    types = {"judged": pa.bool_(), "agree": pa.bool_(), "scenario_agrees": pa.bool_(),
             "spikelab": pa.float64(), "ns2": pa.float64(), "diff": pa.float64()}
    return pa.table({k: pa.array(v, types.get(k, pa.string())) for k, v in cols.items()})


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0f}"


def report(outcomes: Sequence[Outcome], meta: dict[str, Any], *,
           planned: Sequence[str] = ()) -> str:
    lines = [
        "# Against ns-2.35: spikelab's `ns2` profile beside ns-2's agents",
        "",
        (f"**{summary_line(outcomes)}** (TCP: delivered packets within 1 %, equal timeouts, "
         "retransmitted packets within max(3, 10 %); SCTP: equal T3-rtx expiries, fast "
         "retransmits within 1, packets through the bottleneck within 2 %)."),
        "",
        f"spikelab {meta['spikelab']} (profile ns2), ns {meta['ns2']}, "
        f"{meta['created']}; the suite took {meta['wall_s']:.1f} s"
        + ("" if meta.get("status") == "complete" else
           f" and was **{meta.get('status')}** after {len(outcomes)} of {len(planned)} "
           "scenarios") + ".",
        "",
        "Each cell is spikelab / ns-2.",
        "",
        ("| scenario | verdict | delivered | timeouts | retx packets | fast retx | bottleneck "
         "| misses |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        if o.error:
            lines.append(f"| {o.scenario.name} | ERROR | | | | | | {o.error} |")
            continue
        cells = [f"{_fmt(o.spikelab.get(k))} / {_fmt(o.ns2.get(k))}" for k in METRIC_KEYS]
        lines.append(f"| {o.scenario.name} | {'agrees' if o.agrees else 'differs'} | "
                     + " | ".join(cells) + f" | {', '.join(o.misses())} |")
    for o in outcomes:
        sc = o.scenario
        lines += ["", f"## {sc.name}", ""]
        if sc.description:
            lines += [sc.description.rstrip(".") + ".", ""]
        lines.append(f"Scenario: `python/spikelab/fidelity/ns2_scenarios/{sc.name}.toml`; "
                     f"the ns-2 script: `{sc.name}/ns2/scenario.tcl`"
                     + (f" (ns ran {o.ns2_runs} times to place the `seqs` drops)"
                        if o.ns2_runs > 1 else "") + ".")
        if o.error:
            lines += ["", f"Could not run: {o.error}"]
            continue
        lines += ["", "| metric | spikelab | ns-2 | spikelab − ns-2 | verdict | why |",
                  "|---|---|---|---|---|---|"]
        for key, label, _, _ in METRICS:
            ok = o.verdict(key)
            s, n = o.spikelab.get(key), o.ns2.get(key)
            diff = "" if s is None or n is None else f"{s - n:+.0f}"
            verdict = "not judged" if ok is None else ("agrees" if ok else "**misses**")
            lines.append(f"| {label} | {_fmt(s)} | {_fmt(n)} | {diff} | {verdict} | "
                         f"{sc.why.get(key, '') if ok is False else ''} |")
        if o.notes:
            lines += ["", "Known differences: " + "; ".join(o.notes) + "."]
    return "\n".join(lines) + "\n"


def write(outdir: Path, outcomes: Sequence[Outcome], *, wall_s: float, status: str,
          planned: Sequence[str]) -> dict[str, Any]:
    from ... import _core

    tab = table(outcomes)
    meta = {
        "against": AGAINST,
        "ns2": ns2_version(),
        "spikelab": _core.__build__,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "wall_s": wall_s,
        "status": status,
    }
    return write_files(outdir, tab, report(outcomes, meta, planned=planned),
                       suite_manifest(outcomes, meta, planned, summary_line(outcomes)))
