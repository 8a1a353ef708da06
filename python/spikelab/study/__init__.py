"""Studies: a scenario, a sweep, figures and claims, run into one results directory.

A study is a directory with ``study.toml`` (see docs/studies.md)::

    [study]
    name = "lte-handover-basic"
    title = "..."
    description = "..."
    scenario = "scenario.toml"        # relative to the study directory

    [sweep]                           # optional: replaces the scenario's own [sweep]
    ...

    [[figure]]                        # spikelab.figures.sweep.FigureSpec
    kind = "bar"
    ...

    [run_figures]                     # optional: seq/ack and cwnd figures of single runs
    where = "replication = 0 AND loss = 'spike+loss'"   # SQL choosing runs (default: rep. 0)
    zoom = [9.5, 16.0]                # time window, seconds
    set = { "sim.duration" = "10s" }  # optional: overrides on top of each chosen run's own
    compare = "delack"                # optional: runs differing only in it, two by two,
                                      # also get one figure with both

    [[table]]                         # optional: a SQL result shown as a table in the report
    title = "Ranking"
    sql = "SELECT ... FROM runs ..."

    [[claim]]
    id = "sack-beats-reno-under-loss"
    kind = "paper"                    # paper | model | beyond (default model)
    claim = "a sentence saying what should hold"
    source = "paper 000 Fig. 11"
    section = "§4.2, Fig. 11"         # paper claims: section, paper_value, band required
    paper_value = [1.05, 1.25]
    band = "..."
    explained_by = "ablation-id"      # paper claims: the ablation claim that shows why it fails
    sql = "SELECT <boolean> AS holds, <numbers behind it>, <boolean> AS decided FROM runs ..."

A claim's query runs in DuckDB over the results (views ``runs``, and ``timeseries`` /
``packets`` when traced) and must return one row whose first column is a boolean; the other
columns are the numbers behind the verdict and appear in the report; a ``decided`` column that
is false makes the claim undecided (``ci_lo(x)`` / ``ci_hi(x)`` give the 95 % interval).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..analysis.query import query
from ..figures import write as write_run
from ..figures.compare import compare as compare_runs
from ..figures.sweep import draw
from ..run import run as run_one
from ..scenario import check_flags, check_outdir
from ..scenario.sweepspec import sweep_table
from ..store import results
from ..store.sweep import is_sweep, load_sweep, run_info, scenario_text
from ..sweep import sweep
from . import render
from .definition import (  # noqa: F401 - the names a study's user reaches through spikelab.study
    BEYOND,
    BUNDLED,
    COPY,
    ERROR,
    FAILS,
    HOLDS,
    KINDS,
    MODEL,
    PAPER,
    RUN_FIGURES,
    STUDY_TOML,
    UNDECIDED,
    Claim,
    ClaimResult,
    RunFigures,
    Study,
    TableSpec,
    available,
    evaluate,
    find,
    paper_tally,
    parse,
    unexplained,
)

log = logging.getLogger(__name__)


def _copy_definition(study: Study, outdir: Path) -> Path:
    """Keep the study definition with its results, so ``report`` needs nothing else."""
    dest = outdir / COPY
    dest.mkdir(parents=True, exist_ok=True)
    for src in sorted(study.dir.iterdir()):
        if src.is_file():
            data = src.read_bytes()
            results.atomic_write(dest / src.name, lambda tmp, data=data: tmp.write_bytes(data))
    return dest


def run(name_or_path: str | os.PathLike[str], out: str | os.PathLike[str], *,
        jobs: int | None = None, dask: Any = None, replications: int | None = None,
        fresh: bool = False, progress: bool | None = None,
        force: bool = False, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Run a study into ``out``: sweep (resumable), figures, claims, report.html/.md.

    ``jobs`` and ``dask`` are :func:`spikelab.sweep`'s (``dask``: ``"local"``, a scheduler
    address, a ``distributed.Client`` or a cluster object). ``replications`` overrides the
    study's (for a quick look; claims need enough of them).
    ``overrides`` (``"key=value"``, as ``--set``) apply to every run before its cell's own
    values: a calibration sets a preset's defaults (``preset.umts-downlink.buffer=55KB``).
    Returns the report's data (claims with verdicts, figures, sweep summary).
    """
    check_flags(fresh=fresh, progress=progress, force=force)
    check_outdir(out)
    study = find(name_or_path)
    table = study.sweep
    if table is None:
        table = sweep_table(study.scenario.read_text(encoding="utf-8-sig"))
    if replications is not None:
        table = dict(table or {}, replications=replications)
    created = results.new_root(out)
    outdir = results.claim(out, "study", force=force)
    copied = not (outdir / COPY).exists()
    _copy_definition(study, outdir)
    try:
        result = sweep(study.scenario, outdir, jobs=jobs, dask=dask, sweep_spec=table or {},
                       fresh=fresh, progress=progress, kind="study", force=force,
                       overrides=overrides)
    except Exception:
        # The sweep removed what it began (nothing finished): so does the study.
        if copied and not is_sweep(outdir):
            shutil.rmtree(outdir / COPY, ignore_errors=True)
            results.remove_created(created)
        raise
    return report(outdir, sweep_result=result)


def report(outdir: str | os.PathLike[str], *, sweep_result: Any = None) -> dict[str, Any]:
    """(Re)draw the figures, evaluate the claims and write report.html and report.md."""
    outdir = Path(outdir)
    if not (outdir / COPY / STUDY_TOML).is_file():
        raise FileNotFoundError(f"{outdir}: no {COPY}/{STUDY_TOML}; not a study's results "
                                f"directory (run 'spikelab study run NAME -o {outdir}')")
    study = parse(outdir / COPY)
    res = sweep_result if sweep_result is not None else load_sweep(outdir)
    log.info("drawing %d figure(s)", len(study.figures))
    figures = [p for p in draw(outdir, study.figures, views=study.view_pairs())
               if p.suffix == ".png"]
    if study.run_figures:
        log.info("re-running the chosen runs for their own figures (%s)",
                 study.run_figures.where)
    singles = _draw_run_figures(outdir, study, res) if study.run_figures else []
    claims = evaluate(outdir, study.claims, study.view_pairs())
    log.info("claims evaluated: %d hold of %d", sum(r.status == HOLDS for r in claims),
             len(claims))
    shown = [(t, _table(outdir, i, t, study)) for i, t in enumerate(study.tables)]
    held, papers = paper_tally(claims)
    changed = deviations(study, res.manifest)
    data = {
        "study": study.name,
        "paper_results": {"reproduced": held, "claimed": papers,
                          "unexplained": [r.claim.id for r in unexplained(claims)]},
        "overrides": changed,
        "claims": [{"id": r.claim.id, "kind": r.claim.kind, "claim": r.claim.claim,
                    "source": r.claim.source, "section": r.claim.section,
                    "paper_value": r.claim.paper_value, "band": r.claim.band,
                    "explained_by": r.claim.explained_by,
                    "status": r.status, "numbers": r.numbers, "error": r.error}
                   for r in claims],
        "figures": [str(p.relative_to(outdir)) for p in figures],
        "run_figures": [{"run_id": r, "label": label,
                         "figures": [str(p.relative_to(outdir)) for p in paths]}
                        for r, label, paths in singles],
    }
    results.write_json(data, outdir / "claims.json")
    render.write(outdir, study, res, claims, figures, singles, shown, changed)
    log.info("report written: %s", outdir / "report.html")
    return data


def deviations(study: Study, manifest: dict[str, Any]) -> list[str]:
    """How the run departs from the study as written: ``--replications`` and each ``--set``
    (the report says so in its title and first line)."""
    table = study.sweep
    if table is None:
        table = sweep_table(study.scenario.read_text(encoding="utf-8-sig")) or {}
    out = []
    ran = (manifest.get("sweep") or {}).get("replications")
    if ran is not None and ran != table.get("replications", 1):
        out.append(f"--replications {ran} (the study has {table.get('replications', 1)})")
    out += [f"--set {o}" for o in manifest.get("overrides") or []]
    return out


def _table(outdir: Path, i: int, table: Any, study: Study) -> Any:
    """A report table's rows; a failing query names the table."""
    try:
        return query(outdir, table.sql, study.view_pairs())
    except ValueError as exc:
        raise ValueError(f"table[{i}] ({table.title!r}): "
                         f"{str(exc).removeprefix('query failed: ')}") from None


def _draw_run_figures(outdir: Path, study: Study,
                      res: Any) -> list[tuple[str, str, list[Path]]]:
    """Re-run the chosen runs alone with packet tracing and draw their seq/ack and cwnd
    figures; each is a complete results directory OUT/runs-figures/RUN/ (tables, figures).
    Returns (run_id, label, PNG paths) per run."""
    spec = study.run_figures
    params = res.params()
    try:
        chosen = query(outdir, f"SELECT * FROM runs WHERE status = 'ok' AND ({spec.where}) "
                               f"ORDER BY run_id")
    except ValueError as exc:
        raise ValueError(f"run_figures.where {spec.where!r}: "
                         f"{str(exc).removeprefix('query failed: ')}") from None
    text = scenario_text(outdir, res.manifest)
    out = []
    dirs = []
    for run_id in dict.fromkeys(chosen["run_id"].tolist()):
        seed, run_overrides = run_info(outdir, res.manifest, run_id)
        try:
            result = run_one(text, seed=seed, overrides=[*run_overrides, *spec.set],
                             trace="packets", progress=False)
        except ValueError as exc:
            if not spec.set:
                raise
            # The run itself ran in the sweep: what fails is the study's set.
            raise ValueError(f"run_figures.set: {exc}") from None
        row = chosen[chosen.run_id == run_id].iloc[0]
        label = ", ".join(f"{p} = {row[p]}" for p in params) + f", seed {seed}"
        if spec.set:
            label += "; then " + ", ".join(spec.set)
        rundir = write_run(result, outdir / RUN_FIGURES / run_id, zoom=spec.zoom)
        paths = [rundir / f["path"] for f in result.manifest["files"]
                 if f["path"].startswith(f"{results.FIGURES}/")]
        keep = [p for p in paths if p.suffix == ".png" and not p.name.startswith("rtt_")]
        out.append((run_id, label, sorted(keep)))
        dirs.append((rundir, row))
    if spec.compare:
        if spec.compare not in params:
            raise ValueError(f"run_figures.compare: {spec.compare!r} is not a sweep parameter "
                             f"(these are: {', '.join(params)})")
        others = [p for p in [*params, "replication"] if p != spec.compare]
        groups: dict[tuple, list] = {}
        for rundir, row in dirs:
            groups.setdefault(tuple(str(row[p]) for p in others), []).append((rundir, row))
        for key, pair in groups.items():
            if len(pair) != 2:
                continue
            (a, ra), (b, rb) = pair
            la, lb = (f"{spec.compare} = {r[spec.compare]}" for r in (ra, rb))
            # One directory: a label such as "ns2/NewReno" must not nest it.
            name = "-".join(k.replace(" ", "").replace("/", "_").replace(os.sep, "_")
                            for k in key) or "all"
            _, written = compare_runs(a, b, out=outdir / RUN_FIGURES / f"compare-{name}",
                                      zoom=spec.zoom, labels=(la, lb))
            what = ", ".join(f"{p} = {v}" for p, v in zip(others, key))
            out.append((f"{la} vs {lb}", what,
                        sorted(p for p in written if p.suffix == ".png")))
    return out
