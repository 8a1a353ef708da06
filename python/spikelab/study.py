"""Studies: a scenario, a sweep, figures and claims, run into one results directory.

A study is a directory with ``study.toml`` (see docs/studies.md)::

    [study]
    name = "lte-handover-basic"
    title = "..."
    description = "..."
    scenario = "scenario.toml"        # relative to the study directory

    [sweep]                           # optional: replaces the scenario's own [sweep]
    ...

    [[figure]]                        # spikelab.sweepplots.FigureSpec
    kind = "bar"
    ...

    [run_figures]                     # optional: seq/ack and cwnd figures of single runs
    where = "replication = 0 AND loss = 'spike+loss'"   # SQL choosing runs (default: rep. 0)
    zoom = [9.5, 16.0]                # time window, seconds

    [[table]]                         # optional: a SQL result shown as a table in the report
    title = "Ranking"
    sql = "SELECT ... FROM runs ..."

    [[claim]]
    id = "sack-beats-reno-under-loss"
    claim = "a sentence saying what should hold"
    source = "paper 000 Fig. 11"
    sql = "SELECT <boolean> AS holds, <numbers behind it> FROM runs ..."

A claim's query runs in DuckDB over the results (views ``runs``, and ``timeseries`` /
``packets`` when traced) and must return one row whose first column is a boolean; the other
columns are the numbers behind the verdict and appear in the report.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import results
from .sweepplots import FigureSpec

STUDY_TOML = "study.toml"
COPY = "study"  # where a results directory keeps the study definition it was made from
BUNDLED = Path(__file__).resolve().parent / "studies"
_STUDY_KEYS = {"name", "title", "description", "scenario", "sources"}
RUN_FIGURES = "runs-figures"
HOLDS, FAILS, ERROR = "holds", "fails", "error"


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    source: str
    sql: str
    note: str | None = None


@dataclass(frozen=True)
class TableSpec:
    title: str
    sql: str
    caption: str | None = None


@dataclass(frozen=True)
class RunFigures:
    """Which runs of the sweep are re-run with packet tracing to draw their own figures."""

    where: str = "replication = 0"
    zoom: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class Study:
    dir: Path
    name: str
    title: str
    description: str
    scenario: Path
    sweep: Any
    figures: list[FigureSpec]
    claims: list[Claim]
    sources: list[str] = field(default_factory=list)
    run_figures: RunFigures | None = None
    tables: list[TableSpec] = field(default_factory=list)


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    status: str
    numbers: dict[str, Any]
    error: str | None = None


def _check_keys(raw: Any, keys: tuple[str, ...], at: str) -> None:
    """``raw`` must be a TOML table whose keys are among ``keys``."""
    if not isinstance(raw, dict):
        raise ValueError(f"{at}: must be a table")
    bad = sorted(set(raw) - set(keys))
    if bad:
        raise ValueError(f"{at}.{bad[0]}: unknown key (expected {', '.join(keys)})")


def _need_str(raw: dict[str, Any], key: str, at: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{at}.{key}: required, a non-empty string")
    return value


def parse(path: str | os.PathLike[str]) -> Study:
    """Read and check a study directory (or its study.toml)."""
    path = Path(path)
    toml_path = path / STUDY_TOML if path.is_dir() else path
    if not toml_path.is_file():
        raise FileNotFoundError(f"{toml_path}: no such file")
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{toml_path}: not valid TOML: {exc}") from None
    where = str(toml_path)
    unknown = sorted(set(raw) - {"study", "sweep", "figure", "claim", "run_figures", "table"})
    if unknown:
        raise ValueError(f"{where}: {unknown[0]}: unknown table (expected study, sweep, "
                         f"figure, claim, run_figures, table)")
    tables = []
    for i, t in enumerate(raw.get("table", [])):
        at = f"{where}: table[{i}]"
        _check_keys(t, ("title", "sql", "caption"), at)
        tables.append(TableSpec(title=_need_str(t, "title", at), sql=_need_str(t, "sql", at),
                                caption=t.get("caption")))
    head = raw.get("study")
    if not isinstance(head, dict):
        raise ValueError(f"{where}: study: the [study] table is required")
    bad = sorted(set(head) - _STUDY_KEYS)
    if bad:
        raise ValueError(f"{where}: study.{bad[0]}: unknown key")
    name = _need_str(head, "name", f"{where}: study")
    scenario = toml_path.parent / _need_str(head, "scenario", f"{where}: study")
    if not scenario.is_file():
        raise FileNotFoundError(f"{where}: study.scenario: {scenario}: no such file")
    figures = [FigureSpec.parse(f, f"{where}: figure[{i}]")
               for i, f in enumerate(raw.get("figure", []))]
    claims = []
    for i, c in enumerate(raw.get("claim", [])):
        at = f"{where}: claim[{i}]"
        _check_keys(c, ("id", "claim", "source", "sql", "note"), at)
        claims.append(Claim(id=_need_str(c, "id", at), claim=_need_str(c, "claim", at),
                            source=_need_str(c, "source", at), sql=_need_str(c, "sql", at),
                            note=c.get("note")))
    ids = [c.id for c in claims]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup:
        raise ValueError(f"{where}: claim id {dup!r} is used twice")
    return Study(dir=toml_path.parent, name=name, title=head.get("title", name),
                 description=head.get("description", ""), scenario=scenario,
                 sweep=raw.get("sweep"), figures=figures, claims=claims,
                 sources=list(head.get("sources", [])),
                 run_figures=_run_figures(raw.get("run_figures"), f"{where}: run_figures"),
                 tables=tables)


def _run_figures(raw: Any, at: str) -> RunFigures | None:
    if raw is None:
        return None
    _check_keys(raw, ("where", "zoom"), at)
    where = raw.get("where", RunFigures.where)
    if not isinstance(where, str) or not where.strip():
        raise ValueError(f"{at}.where: must be a SQL condition on the runs table")
    zoom = raw.get("zoom")
    if zoom is not None:
        ok = (isinstance(zoom, list) and len(zoom) == 2
              and all(isinstance(z, int | float) and not isinstance(z, bool) for z in zoom)
              and zoom[0] < zoom[1])
        if not ok:
            raise ValueError(f"{at}.zoom: must be [t0, t1] in seconds with t0 < t1")
        zoom = (float(zoom[0]), float(zoom[1]))
    return RunFigures(where=where, zoom=zoom)


def available() -> dict[str, Path]:
    """Studies shipped with spikelab and in ./studies, by name."""
    found: dict[str, Path] = {}
    for root in (BUNDLED, Path.cwd() / "studies"):
        if root.is_dir():
            for d in sorted(root.iterdir()):
                if (d / STUDY_TOML).is_file():
                    found.setdefault(d.name, d)
    return found


def find(name_or_path: str | os.PathLike[str]) -> Study:
    """A study by name (bundled or ./studies/NAME) or by its directory / study.toml path."""
    path = Path(name_or_path)
    if path.exists():
        return parse(path)
    known = available()
    if str(name_or_path) in known:
        return parse(known[str(name_or_path)])
    names = ", ".join(known) or "none"
    raise FileNotFoundError(f"no study named {str(name_or_path)!r} (available: {names})")


# ---------------------------------------------------------------------------------- claims


def evaluate(outdir: str | os.PathLike[str], claims: list[Claim]) -> list[ClaimResult]:
    """Evaluate each claim's SQL over the results in ``outdir``."""
    import duckdb

    from .stats import connect

    con = connect(outdir)
    out = []
    try:
        for c in claims:
            try:
                frame = con.execute(c.sql).df()
            except duckdb.Error as exc:
                out.append(ClaimResult(c, ERROR, {}, f"query failed: "
                                                     f"{str(exc).splitlines()[0]}"))
                continue
            if len(frame) != 1 or frame.shape[1] == 0:
                out.append(ClaimResult(c, ERROR, {}, f"query returned {len(frame)} rows and "
                                                     f"{frame.shape[1]} columns; expected one "
                                                     f"row with a boolean first"))
                continue
            row = frame.iloc[0]
            verdict = row.iloc[0]
            numbers = {k: _plain(v) for k, v in row.iloc[1:].items()}
            if verdict is None or not isinstance(_plain(verdict), bool):
                out.append(ClaimResult(c, ERROR, numbers, f"first column is {verdict!r}, "
                                                          f"not a boolean"))
                continue
            out.append(ClaimResult(c, HOLDS if _plain(verdict) else FAILS, numbers))
    finally:
        con.close()
    return out


def _plain(v: Any) -> Any:
    """numpy / pandas scalars -> Python (for JSON and formatting)."""
    if hasattr(v, "item"):
        try:
            return v.item()
        except (ValueError, AttributeError):
            pass
    return v


# ---------------------------------------------------------------------------------- run


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
        jobs: int | None = None, dask: str | None = None, replications: int | None = None,
        fresh: bool = False, progress: bool | None = None,
        force: bool = False) -> dict[str, Any]:
    """Run a study into ``out``: sweep (resumable), figures, claims, report.html/.md.

    ``replications`` overrides the study's (for a quick look; claims need enough of them).
    Returns the report's data (claims with verdicts, figures, sweep summary).
    """
    from .sweep import sweep

    study = find(name_or_path)
    table = study.sweep
    if table is None:
        from .sweepspec import sweep_table

        table = sweep_table(study.scenario.read_text(encoding="utf-8"))
    if replications is not None:
        table = dict(table or {}, replications=replications)
    outdir = results.claim(out, "study", force=force)
    _copy_definition(study, outdir)
    result = sweep(study.scenario, outdir, jobs=jobs, dask=dask, sweep_spec=table or {},
                   fresh=fresh, progress=progress, kind="study", force=force)
    return report(outdir, sweep_result=result)


def report(outdir: str | os.PathLike[str], *, sweep_result: Any = None) -> dict[str, Any]:
    """(Re)draw the figures, evaluate the claims and write report.html and report.md."""
    from . import report as report_mod
    from .sweep import load_sweep
    from .stats import query
    from .sweepplots import draw

    outdir = Path(outdir)
    if not (outdir / COPY / STUDY_TOML).is_file():
        raise FileNotFoundError(f"{outdir}: no {COPY}/{STUDY_TOML}; not a study's results "
                                f"directory (run 'spikelab study run NAME -o {outdir}')")
    study = parse(outdir / COPY)
    res = sweep_result if sweep_result is not None else load_sweep(outdir)
    figures = [p for p in draw(outdir, study.figures) if p.suffix == ".png"]
    singles = _draw_run_figures(outdir, study, res) if study.run_figures else []
    claims = evaluate(outdir, study.claims)
    shown = [(t, query(outdir, t.sql)) for t in study.tables]
    data = {
        "study": study.name,
        "claims": [{"id": r.claim.id, "claim": r.claim.claim, "source": r.claim.source,
                    "status": r.status, "numbers": r.numbers, "error": r.error}
                   for r in claims],
        "figures": [str(p.relative_to(outdir)) for p in figures],
        "run_figures": [{"run_id": r, "label": label,
                         "figures": [str(p.relative_to(outdir)) for p in paths]}
                        for r, label, paths in singles],
    }
    results.write_json(data, outdir / "claims.json")
    report_mod.write(outdir, study, res, claims, figures, singles, shown)
    return data


def _draw_run_figures(outdir: Path, study: Study,
                      res: Any) -> list[tuple[str, str, list[Path]]]:
    """Re-run the chosen runs alone with packet tracing and draw their seq/ack and cwnd
    figures; each is a complete results directory OUT/runs-figures/RUN/ (tables, figures).
    Returns (run_id, label, PNG paths) per run."""
    from .simulate import run as run_one
    from .stats import query

    spec = study.run_figures
    params = res.params()
    chosen = query(outdir, f"SELECT * FROM runs WHERE status = 'ok' AND ({spec.where}) "
                           f"ORDER BY run_id")
    from .sweep import run_info, scenario_text

    text = scenario_text(outdir, res.manifest)
    out = []
    for run_id in dict.fromkeys(chosen["run_id"].tolist()):
        seed, run_overrides = run_info(outdir, res.manifest, run_id)
        result = run_one(text, seed=seed, overrides=run_overrides, trace="packets",
                         progress=False)
        row = chosen[chosen.run_id == run_id].iloc[0]
        label = ", ".join(f"{p} = {row[p]}" for p in params) + f", seed {seed}"
        rundir = results.write(result, outdir / RUN_FIGURES / run_id, zoom=spec.zoom)
        paths = [rundir / f["path"] for f in result.manifest["files"]
                 if f["path"].startswith(f"{results.FIGURES}/")]
        keep = [p for p in paths if p.suffix == ".png" and not p.name.startswith("rtt_")]
        out.append((run_id, label, sorted(keep)))
    return out
