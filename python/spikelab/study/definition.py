"""A study's definition: ``study.toml`` read and checked (:func:`parse`), found by name
(:func:`find`), and its claims evaluated over a results directory (:func:`evaluate`)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.query import VIEW_NAME, connect, define_views
from ..figures.sweep import FigureSpec

STUDY_TOML = "study.toml"
COPY = "study"  # where a results directory keeps the study definition it was made from
BUNDLED = Path(__file__).resolve().parent.parent / "studies"
_STUDY_KEYS = {"name", "title", "description", "scenario", "sources"}
RUN_FIGURES = "runs-figures"
HOLDS, FAILS, UNDECIDED, ERROR = "holds", "fails", "undecided", "error"
# What a claim is (docs/studies.md, "Claims"): a statement of the paper the study reproduces,
# a model check or invariant (a number taken from the paper and fed back is one), or what
# spikelab adds beyond the paper.
PAPER, MODEL, BEYOND = "paper", "model", "beyond"
KINDS = (PAPER, MODEL, BEYOND)
DECIDED = "decided"  # a claim query's column: false makes the claim undecided
_CLAIM_KEYS = ("id", "kind", "claim", "source", "section", "paper_value", "band",
               "explained_by", "note", "sql")


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str
    source: str
    sql: str
    note: str | None = None
    kind: str = MODEL
    section: str | None = None
    paper_value: str | None = None  # as the report shows it ("1.05-1.25", "146.8 s")
    band: str | None = None
    explained_by: str | None = None


@dataclass(frozen=True)
class ViewSpec:
    """A named query (``[[view]]``) the claims, tables and later views can select from."""

    name: str
    sql: str


_RESERVED_VIEWS = ("runs", "timeseries", "packets")


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
    # Overrides applied on top of each chosen run's own ("key=value", as `--set` takes them):
    # a figure of a point the sweep does not hold (paper 001 Fig. 6: a lossless link).
    set: tuple[str, ...] = ()
    # A sweep parameter: the chosen runs that differ only in it, two at a time, also get one
    # figure with both runs' seq/ack and cwnd.
    compare: str | None = None


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
    views: list[ViewSpec] = field(default_factory=list)

    def view_pairs(self) -> list[tuple[str, str]]:
        return [(v.name, v.sql) for v in self.views]


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
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{toml_path}: not valid TOML: {exc}") from None
    where = str(toml_path)
    unknown = sorted(set(raw) - {"study", "sweep", "figure", "claim", "run_figures", "table",
                                 "view"})
    if unknown:
        raise ValueError(f"{where}: {unknown[0]}: unknown table (expected study, sweep, "
                         f"figure, claim, run_figures, table, view)")
    for key in ("figure", "claim", "table"):
        if not isinstance(raw.get(key, []), list):
            raise ValueError(f"{where}: {key}: must be an array of tables ([[{key}]])")
    views = _views(raw.get("view", []), where)
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
    for key in ("title", "description"):
        if key in head and not isinstance(head[key], str):
            raise ValueError(f"{where}: study.{key}: must be a string, got "
                             f"{type(head[key]).__name__} {head[key]!r}")
    sources = head.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(x, str) for x in sources):
        raise ValueError(f"{where}: study.sources: must be an array of strings (one per "
                         f"source), got {sources!r}")
    scenario = toml_path.parent / _need_str(head, "scenario", f"{where}: study")
    if not scenario.is_file():
        raise FileNotFoundError(f"{where}: study.scenario: {scenario}: no such file")
    figures = [FigureSpec.parse(f, f"{where}: figure[{i}]")
               for i, f in enumerate(raw.get("figure", []))]
    stems: dict[str, int] = {}
    for i, f in enumerate(figures):
        j = stems.setdefault(f.stem(), i)
        if j != i:
            raise ValueError(f"{where}: figure[{i}].name: figure[{j}] is drawn to the same "
                             f"file ({f.stem()!r}); give one of them another name")
    names = [v.name for v in views]
    for i, f in enumerate(figures):
        if f.source is not None and f.source not in names:
            raise ValueError(f"{where}: figure[{i}].source: no view named {f.source!r} "
                             f"(views: {', '.join(names) or 'none'})")
    claims = [_claim(c, f"{where}: claim[{i}]") for i, c in enumerate(raw.get("claim", []))]
    ids = [c.id for c in claims]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup:
        raise ValueError(f"{where}: claim id {dup!r} is used twice")
    for i, c in enumerate(claims):
        if c.explained_by is None:
            continue
        at = f"{where}: claim[{i}].explained_by"
        if c.explained_by == c.id:
            raise ValueError(f"{at}: a claim cannot explain itself; name the ablation claim "
                             f"that shows why {c.id!r} fails")
        if c.explained_by not in ids:
            raise ValueError(f"{at}: no claim {c.explained_by!r} in this study "
                             f"(claims: {', '.join(ids)})")
    return Study(dir=toml_path.parent, name=name, title=head.get("title", name),
                 description=head.get("description", ""), scenario=scenario,
                 sweep=raw.get("sweep"), figures=figures, claims=claims,
                 sources=list(sources),
                 run_figures=_run_figures(raw.get("run_figures"), f"{where}: run_figures"),
                 tables=tables, views=views)


def _claim(c: Any, at: str) -> Claim:
    _check_keys(c, _CLAIM_KEYS, at)
    kind = c.get("kind", MODEL)
    if kind not in KINDS:
        raise ValueError(f"{at}.kind: {kind!r} is not a claim kind (expected "
                         f"{', '.join(KINDS)})")
    opt = {}
    for key in ("section", "band", "explained_by", "note"):
        if key in c and (not isinstance(c[key], str) or (key != "note" and not c[key].strip())):
            raise ValueError(f"{at}.{key}: must be a non-empty string")
        opt[key] = c.get(key) or None
    value = c.get("paper_value")
    if value is not None:
        value = _paper_value(value, f"{at}.paper_value")
    if kind == PAPER:
        for key in ("section", "paper_value", "band"):
            if c.get(key) is None:
                raise ValueError(f"{at}.{key}: required for a paper claim (the paper's "
                                 f"section, its number or range, and the band within which "
                                 f"spikelab's value reproduces it)")
    elif opt["explained_by"] is not None:
        raise ValueError(f"{at}.explained_by: only a paper claim names the ablation that "
                         f"explains it (this claim's kind is {kind!r})")
    return Claim(id=_need_str(c, "id", at), claim=_need_str(c, "claim", at),
                 source=_need_str(c, "source", at), sql=_need_str(c, "sql", at),
                 kind=kind, paper_value=value, **opt)


def _paper_value(value: Any, at: str) -> str:
    """A paper's number (``146.8``), range (``[1.05, 1.25]``) or words (``"≤ 650 kb/s"``) as
    the report shows it."""
    def number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    if isinstance(value, str) and value.strip():
        return value
    if number(value):
        return f"{value:g}"
    if isinstance(value, list) and len(value) == 2 and all(number(x) for x in value) \
            and value[0] <= value[1]:
        return f"{value[0]:g}-{value[1]:g}"
    raise ValueError(f"{at}: must be a number, a range [lo, hi] with lo <= hi, or a string; "
                     f"got {value!r}")


def _views(raw: Any, where: str) -> list[ViewSpec]:
    if not isinstance(raw, list):
        raise ValueError(f"{where}: view: must be an array of tables ([[view]])")
    views: list[ViewSpec] = []
    for i, v in enumerate(raw):
        at = f"{where}: view[{i}]"
        _check_keys(v, ("name", "sql"), at)
        name = _need_str(v, "name", at)
        if not VIEW_NAME.fullmatch(name):
            raise ValueError(f"{at}.name: {name!r} must be a lower-case SQL identifier "
                             f"(letters, digits, _)")
        if name in _RESERVED_VIEWS:
            raise ValueError(f"{at}.name: {name!r} is one of the results' own tables "
                             f"({', '.join(_RESERVED_VIEWS)})")
        if any(w.name == name for w in views):
            raise ValueError(f"{at}.name: view {name!r} is defined twice")
        views.append(ViewSpec(name=name, sql=_need_str(v, "sql", at)))
    return views


def _run_figures(raw: Any, at: str) -> RunFigures | None:
    if raw is None:
        return None
    _check_keys(raw, ("where", "zoom", "set", "compare"), at)
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
    sets = raw.get("set", {})
    if not isinstance(sets, dict) or not all(
            isinstance(v, str | int | float | bool) for v in sets.values()):
        raise ValueError(f"{at}.set: must be a table of scenario keys and scalar values, "
                         f"e.g. {{ \"sim.duration\" = \"10s\" }}")
    text = tuple(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in sets.items())
    compare = raw.get("compare")
    if compare is not None and (not isinstance(compare, str) or not compare.strip()):
        raise ValueError(f"{at}.compare: must name a sweep parameter")
    return RunFigures(where=where, zoom=zoom, set=text, compare=compare)


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
    known = available()
    if not str(name_or_path).strip():
        raise ValueError(f"no study named: give a study's name ({', '.join(known) or 'none'}) "
                         f"or its directory")
    path = Path(name_or_path)
    if path.exists():
        return parse(path)
    if str(name_or_path) in known:
        return parse(known[str(name_or_path)])
    names = ", ".join(known) or "none"
    raise FileNotFoundError(f"no study named {str(name_or_path)!r} (available: {names})")


# ---------------------------------------------------------------------------------- claims


def evaluate(outdir: str | os.PathLike[str], claims: list[Claim],
             views: list[tuple[str, str]] | None = None) -> list[ClaimResult]:
    """Evaluate each claim's SQL over the results in ``outdir`` (with the study's views: a
    view that fails makes every claim an error that names it)."""
    import duckdb

    con = connect(outdir)
    out = []
    try:
        try:
            define_views(con, views or ())
        except ValueError as exc:
            return [ClaimResult(c, ERROR, {}, str(exc)) for c in claims]
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
            numbers = {k: _plain(v) for k, v in row.iloc[1:].items() if k != DECIDED}
            decided = _plain(row[DECIDED]) if DECIDED in frame.columns[1:] else True
            if decided is not None and not isinstance(decided, bool):
                out.append(ClaimResult(c, ERROR, numbers, f"column {DECIDED!r} is "
                                                          f"{decided!r}, not a boolean"))
                continue
            if not decided:  # false, or NULL: no interval (a single run) decides nothing
                out.append(ClaimResult(c, UNDECIDED, numbers))
                continue
            if verdict is None or not isinstance(_plain(verdict), bool):
                first = frame.columns[0]
                out.append(ClaimResult(c, ERROR, numbers, f"first column {first!r} is "
                                                          f"{_plain(verdict)!r} "
                                                          f"({frame.dtypes.iloc[0]}), not a "
                                                          f"boolean"))
                continue
            out.append(ClaimResult(c, HOLDS if _plain(verdict) else FAILS, numbers))
    finally:
        con.close()
    return out


def paper_tally(results: list[ClaimResult]) -> tuple[int, int]:
    """(paper claims that hold, paper claims): the report's first line."""
    papers = [r for r in results if r.claim.kind == PAPER]
    return sum(r.status == HOLDS for r in papers), len(papers)


def unexplained(results: list[ClaimResult]) -> list[ClaimResult]:
    """The paper claims that fail without an ``explained_by`` claim that holds: what makes
    ``study run`` and ``study report`` exit with their own status (docs/studies.md)."""
    status = {r.claim.id: r.status for r in results}
    return [r for r in results if r.claim.kind == PAPER and r.status == FAILS
            and status.get(r.claim.explained_by or "") != HOLDS]


def _plain(v: Any) -> Any:
    """numpy / pandas scalars -> Python (for JSON and formatting); pandas' NA (a NULL of an
    integer column) -> None."""
    import pandas as pd

    if v is pd.NA or v is pd.NaT:
        return None
    if hasattr(v, "item"):
        try:
            return v.item()
        except (ValueError, AttributeError):
            pass
    return v
