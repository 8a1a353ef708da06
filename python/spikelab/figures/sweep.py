"""Figures of a sweep, drawn from its runs table alone (PNG + SVG).

Kinds (each figure is a ``[[figure]]`` table of a study, or ``spikelab figure`` options):

- ``bar``: mean of ``y`` per value of ``x``, one bar per ``hue`` value side by side, 95% CI
  error bars over the runs (paper 000 Fig. 11).
- ``line``: mean of ``y`` against a numeric ``x``, one line per ``hue``, 95% CI band
  (paper 002 throughput vs. link rate, paper 001 goodput vs. SNR).

Bar and line intervals are over runs, not rows: where a run has several flows in one bar or
point, its flows are averaged first (flows that share a path are not independent samples),
so the interval is the spread of the runs' means (``run_id``; a view without it counts rows).
- ``cdf``: empirical CDF of ``y`` over all runs (replications and flows), one curve per
  ``hue`` (paper 003).
- ``heatmap``: mean of ``y`` over two parameters ``x`` and ``row`` (paper 004 alpha × beta).

``col`` splits any kind into side-by-side panels, one per value of that column. ``where`` is
a SQL condition on the runs table (DuckDB) choosing the rows; failed runs are always left out.
In a study, ``source`` names one of its views to draw from instead of the runs table (its rows
as they come, ``where`` applied), and ``hlines`` draws dashed reference lines across a bar or
line figure (a band's edges, say).
Units: without ``scale``, ``y`` is shown in its column's unit by the same rule as the summary
tables (``*_bps`` in Mbit/s, ``bytes*`` in MB, ``*_s`` in seconds; see
``analysis.stats.unit_of``) and the axis is labelled with it, so every figure shows one
quantity in one unit. ``scale`` multiplies ``y`` instead (then give ``ylabel``). Tick labels
are plain numbers in that unit (thousands separators, never an offset or a power of ten beside
the axis); a log x axis is ticked at the swept values. Legends sit outside the axes (right,
beside their middle), never on data or the title; long titles wrap.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import textwrap
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib import ticker
from matplotlib.figure import Figure

from ..analysis.query import VIEW_NAME, query
from ..analysis.stats import labelled, mean_ci, unit_of
from ..store import results
from ..store.sweep import is_sweep
from .run import _save

if TYPE_CHECKING:
    import pandas as pd

KINDS = ("bar", "line", "cdf", "heatmap")
# A figure name: a file name stem inside figures/, never a path.
_STEM = re.compile(r"(?!\.)[A-Za-z0-9._-]{1,100}")


@dataclass(frozen=True)
class FigureSpec:
    kind: str
    y: str
    x: str | None = None
    hue: str | None = None
    col: str | None = None
    row: str | None = None
    where: str | None = None
    scale: float | None = None
    """Multiplies y; None: the unit rule of the column (Mbit/s, MB, s)."""
    ylabel: str | None = None
    title: str | None = None
    name: str | None = None
    caption: str | None = None
    source: str | None = None
    """A study view to draw from instead of runs (None: runs, failed runs left out)."""
    hlines: tuple[float, ...] = ()
    """y values of dashed reference lines (bar and line figures), in the shown unit."""

    @classmethod
    def parse(cls, raw: Any, at: str = "figure") -> FigureSpec:
        if not isinstance(raw, dict):
            raise ValueError(f"{at}: must be a table")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f"{at}.{unknown[0]}: unknown key (expected "
                             f"{', '.join(sorted(known))})")
        kind = raw.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{at}.kind: must be one of {', '.join(KINDS)}, got {kind!r}")
        if not isinstance(raw.get("y"), str):
            raise ValueError(f"{at}.y: the metric to show is required (a runs column)")
        if kind in ("bar", "line", "heatmap") and not isinstance(raw.get("x"), str):
            raise ValueError(f"{at}.x: a {kind} figure needs x (a parameter column)")
        if kind == "heatmap" and not isinstance(raw.get("row"), str):
            raise ValueError(f"{at}.row: a heatmap needs row (its second parameter)")
        scale = raw.get("scale")
        if scale is not None and (isinstance(scale, bool) or not isinstance(scale, int | float)
                                  or scale == 0 or not math.isfinite(scale)):
            raise ValueError(f"{at}.scale: must be a non-zero number, got {scale!r}")
        name = raw.get("name")
        if name is not None and (not isinstance(name, str) or not _STEM.fullmatch(name)):
            raise ValueError(f"{at}.name: a file name stem of letters, digits, '.', '_' and "
                             f"'-' (no folder), got {name!r}")
        source = raw.get("source")
        if source is not None and (not isinstance(source, str)
                                   or not VIEW_NAME.fullmatch(source)):
            raise ValueError(f"{at}.source: the name of one of the study's views, got "
                             f"{source!r}")
        hlines = raw.get("hlines", [])
        if not isinstance(hlines, list) or not all(
                isinstance(h, int | float) and not isinstance(h, bool) and math.isfinite(h)
                for h in hlines):
            raise ValueError(f"{at}.hlines: must be a list of numbers (y values), got "
                             f"{hlines!r}")
        if hlines and kind not in ("bar", "line"):
            raise ValueError(f"{at}.hlines: reference lines go on bar and line figures, "
                             f"not on a {kind}")
        spec = cls(**{**raw, "scale": None if scale is None else float(scale),
                      "hlines": tuple(float(h) for h in hlines)})
        return spec

    @property
    def factor(self) -> float:
        """What y is multiplied by: ``scale``, or the column unit's scale."""
        if self.scale is not None:
            return self.scale
        unit = unit_of(self.y)
        return unit[1] if unit else 1.0

    @property
    def label(self) -> str:
        """The y quantity's axis label, with its unit."""
        if self.ylabel:
            return self.ylabel
        if self.scale is not None and self.scale != 1.0:
            return f"{self.y} × {self.scale:g}"
        return labelled(self.y)

    def stem(self) -> str:
        if self.name:
            return self.name
        parts = [self.kind, self.y] + [p for p in (self.x, self.row, self.hue, self.col,
                                                   self.source) if p]
        if self.where:
            # A filtered figure does not overwrite the unfiltered one.
            parts.append("where-" + hashlib.sha256(self.where.encode()).hexdigest()[:8])
        return "-".join(parts).replace("/", "_").replace(" ", "_")

    def columns(self) -> list[str]:
        return [c for c in (self.y, self.x, self.hue, self.col, self.row) if c]


def _values(frame: pd.DataFrame, col: str | None) -> list[Any]:
    """Distinct values of a column in order of first appearance (the sweep's order)."""
    if col is None:
        return [None]
    return list(dict.fromkeys(frame[col].tolist()))


def _subset(frame: pd.DataFrame, col: str | None, value: Any) -> pd.DataFrame:
    return frame if col is None else frame[frame[col] == value]


def _label(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


class _Plain(ticker.Formatter):
    """Tick labels in the axis's unit as plain numbers: thousands separators, the fewest
    decimals that tell the ticks apart, never an offset or a power of ten beside the axis
    (which would put a second unit on it)."""

    ticks: list[float] = []

    def set_locs(self, locs) -> None:
        self.ticks = [float(v) for v in locs if np.isfinite(v)]

    def __call__(self, x: float, pos: int | None = None) -> str:
        locs = self.ticks or [x]
        for decimals in range(7):
            if all(abs(round(v, decimals) - v) < 1e-9 * max(1.0, abs(v)) for v in locs):
                break
        return f"{x:,.{decimals}f}"


def _plain(axis) -> None:
    axis.set_major_formatter(_Plain())
    axis.set_minor_formatter(ticker.NullFormatter())


def _cell_stats(cell: pd.DataFrame, spec: FigureSpec) -> tuple[float, float, int]:
    """(mean, 95% CI half-width, n) of ``y`` over the runs in ``cell``, each run's rows (its
    flows) averaged first."""
    ys = cell[spec.y] * spec.factor
    if "run_id" in cell.columns and cell["run_id"].duplicated().any():
        ys = ys.groupby(cell["run_id"], sort=False).mean()
    return mean_ci(ys.tolist())


def _bar(ax, frame: pd.DataFrame, spec: FigureSpec) -> None:
    xs, hues = _values(frame, spec.x), _values(frame, spec.hue)
    width = 0.8 / len(hues)
    for j, h in enumerate(hues):
        sub = _subset(frame, spec.hue, h)
        means, errs = [], []
        for x in xs:
            m, half, _ = _cell_stats(sub[sub[spec.x] == x], spec)
            means.append(m)
            errs.append(0.0 if math.isnan(half) else half)
        pos = np.arange(len(xs)) + (j - (len(hues) - 1) / 2) * width
        ax.bar(pos, means, width * 0.92, yerr=errs, capsize=3,
               label=None if h is None else _label(h))
    labels = [_label(x) for x in xs]
    crowded = sum(len(t) for t in labels) > 30
    ax.set_xticks(np.arange(len(xs)), labels, rotation=30 if crowded else 0,
                  ha="right" if crowded else "center")
    ax.set_xlabel(spec.x)


def _line(ax, frame: pd.DataFrame, spec: FigureSpec) -> None:
    x_unit = unit_of(spec.x)
    x_factor = x_unit[1] if x_unit else 1.0
    for h in _values(frame, spec.hue):
        sub = _subset(frame, spec.hue, h)
        xs = sorted(set(sub[spec.x].tolist()))
        stats = [_cell_stats(sub[sub[spec.x] == x], spec) for x in xs]
        mean = np.array([s[0] for s in stats])
        half = np.array([0.0 if math.isnan(s[1]) else s[1] for s in stats])
        at = np.asarray(xs, dtype=float) * x_factor
        (line,) = ax.plot(at, mean, marker="o", label=None if h is None else _label(h))
        ax.fill_between(at, mean - half, mean + half, color=line.get_color(), alpha=0.2,
                        linewidth=0)
    ax.set_xlabel(labelled(spec.x))
    values = np.unique(frame[spec.x].astype(float).to_numpy()) * x_factor
    if (values > 0).all() and values.max() / values.min() > 50:
        ax.set_xscale("log")
        if values.size <= 12:  # the swept values themselves, not powers of ten
            labels = [_label(v) for v in values.tolist()]
            crowded = sum(len(t) for t in labels) > 24
            ax.set_xticks(values, labels, rotation=45 if crowded else 0,
                          ha="right" if crowded else "center")
            ax.xaxis.set_minor_formatter(ticker.NullFormatter())
            return
    _plain(ax.xaxis)


def _cdf(ax, frame: pd.DataFrame, spec: FigureSpec) -> None:
    for h in _values(frame, spec.hue):
        ys = np.sort((_subset(frame, spec.hue, h)[spec.y] * spec.factor).to_numpy(float))
        ys = ys[~np.isnan(ys)]
        if ys.size:
            p = np.arange(1, ys.size + 1) / ys.size
            ax.step(np.concatenate([[ys[0]], ys]), np.concatenate([[0.0], p]), where="post",
                    label=None if h is None else _label(h))
    ax.set_xlabel(spec.label)
    _plain(ax.xaxis)
    ax.set_ylabel("fraction of runs")
    ax.set_ylim(0, 1.02)


def _heatmap(ax, fig: Figure, frame: pd.DataFrame, spec: FigureSpec) -> None:
    xs, rows = sorted(set(frame[spec.x].tolist())), sorted(set(frame[spec.row].tolist()))
    grid = np.full((len(rows), len(xs)), np.nan)
    for i, r in enumerate(rows):
        for j, x in enumerate(xs):
            cell = frame[(frame[spec.row] == r) & (frame[spec.x] == x)][spec.y] * spec.factor
            grid[i, j] = mean_ci(cell.tolist())[0]
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(xs)), [_label(x) for x in xs], rotation=90 if len(xs) > 8 else 0)
    ax.set_yticks(range(len(rows)), [_label(r) for r in rows])
    ax.set_xlabel(spec.x)
    ax.set_ylabel(spec.row)
    _plain(fig.colorbar(image, ax=ax, label=spec.label).ax.yaxis)


def _check_numeric(frame: pd.DataFrame, spec: FigureSpec) -> None:
    """y is a number (it is averaged and scaled); so is a line's x (it is an axis)."""
    import pandas as pd

    bad = None
    if not pd.api.types.is_numeric_dtype(frame[spec.y]):
        bad = "y", spec.y
    elif spec.kind == "line":
        try:
            frame[spec.x].astype(float)
        except (TypeError, ValueError):
            bad = "x", spec.x
    if bad is not None:
        key, col = bad
        raise ValueError(f"figure {spec.stem()!r}: {key}: a {spec.kind} figure's {key} must be "
                         f"a numeric column; {col!r} holds values such as "
                         f"{_label(frame[col].iloc[0])!r}")


def draw_one(frame: pd.DataFrame, spec: FigureSpec) -> Figure:
    """Draw ``spec`` from a runs frame (already filtered to the rows it shows)."""
    missing = [c for c in spec.columns() if c not in frame.columns]
    if missing:
        table = f"view {spec.source!r}" if spec.source else "the runs table"
        raise ValueError(f"figure {spec.stem()!r}: no column {missing[0]!r} in {table}")
    _check_numeric(frame, spec)
    panels = _values(frame, spec.col)
    fig = Figure(figsize=(max(6.4, 4.2 * len(panels)), 4.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=spec.kind != "heatmap")[0]
    for ax, value in zip(axes, panels, strict=True):
        sub = _subset(frame, spec.col, value)
        if spec.kind == "bar":
            _bar(ax, sub, spec)
        elif spec.kind == "line":
            _line(ax, sub, spec)
        elif spec.kind == "cdf":
            _cdf(ax, sub, spec)
        else:
            _heatmap(ax, fig, sub, spec)
        if spec.kind in ("bar", "line"):
            for h in spec.hlines:
                ax.axhline(h, color="0.35", linestyle="--", linewidth=0.8, zorder=0)
            if ax is axes[0]:  # the panels share the y axis: one label says its unit
                ax.set_ylabel(spec.label)
            ax.grid(axis="y", alpha=0.3)
            _plain(ax.yaxis)
        if spec.col is not None:
            ax.set_title(f"{spec.col} = {_label(value)}", fontsize="medium")
    if spec.hue is not None and spec.kind != "heatmap" and axes[-1].has_data():
        # Outside the axes, on the right: a legend never covers bars, lines or curves.
        handles, labels = axes[-1].get_legend_handles_labels()
        if handles:
            # Beside the middle of the axes: clear of the title above them too.
            fig.legend(handles, labels, title=spec.hue, fontsize="small",
                       loc="outside right center")
    if spec.title:
        # Wrapped to the figure's width (about 11 characters an inch at the title's size).
        fig.suptitle(textwrap.fill(spec.title, int(fig.get_figwidth() * 11)))
    return fig


def draw(outdir: str | os.PathLike[str], specs: list[FigureSpec],
         figdir: str | os.PathLike[str] | None = None,
         views: list[tuple[str, str]] | None = None) -> list[Path]:
    """Draw each figure of a sweep directory into ``figdir`` (default OUTDIR/figures); a
    figure with a ``source`` draws from that one of ``views`` (a study's ``(name, sql)``)."""
    outdir = Path(outdir)
    results.expect_kind(outdir, ("run", "emulate", "sweep", "study"),
                        "sweep figures compare the runs of a sweep or a study")
    if not is_sweep(outdir):
        raise ValueError(f"{outdir}: not a sweep's results directory (sweep figures compare "
                         f"runs; 'spikelab plot' draws the figures of a single run)")
    figdir = Path(figdir) if figdir is not None else outdir / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    names = [name for name, _ in views or ()]
    for spec in specs:
        if spec.source is not None:
            if spec.source not in names:
                raise ValueError(f"figure {spec.stem()!r}: source: no view named "
                                 f"{spec.source!r} (views: {', '.join(names) or 'none'})")
            frame = _query(outdir, f"SELECT * FROM {spec.source} WHERE {spec.where or 'true'}",
                           spec, views or ())
            if frame.empty:
                raise ValueError(f"figure {spec.stem()!r}: view {spec.source!r} has no rows "
                                 f"here")
        else:
            where = f"status = 'ok' AND ({spec.where})" if spec.where else "status = 'ok'"
            frame = _query(outdir, f"SELECT * FROM runs WHERE {where}", spec)
            if frame.empty:
                raise ValueError(f"figure {spec.stem()!r}: no successful runs match")
        paths += _save(draw_one(frame, spec), figdir, spec.stem())
    return paths


def _query(outdir: Path, sql: str, spec: FigureSpec,
           views: list[tuple[str, str]] | tuple = ()) -> Any:
    """A figure's rows; a failing query names the figure (and its ``where``, which is the
    only SQL of its own)."""
    try:
        return query(outdir, sql, views)
    except ValueError as exc:
        msg = str(exc)
        if spec.where and not msg.startswith("view "):
            msg = f"where {spec.where!r}: {msg.removeprefix('query failed: ')}"
        raise ValueError(f"figure {spec.stem()!r}: {msg}") from None


def default_specs(params: list[str], metric: str = "goodput_bps") -> list[FigureSpec]:
    """What ``spikelab sweep`` draws without being told: goodput by the first parameter(s)."""
    if not params:
        return [FigureSpec(kind="cdf", y=metric)]
    return [
        FigureSpec(kind="bar", y=metric, x=params[0], hue=params[1] if len(params) > 1 else None,
                   col=params[2] if len(params) > 2 else None),
        FigureSpec(kind="cdf", y=metric, hue=params[0]),
    ]
