"""Statistics over a sweep's runs: mean and 95% confidence interval per grid point, and the
units and formatting of every summary table.

The interval is Student's t: ``mean ± t(0.975, n−1) · sd / √n`` over the replications of a
grid point (runs that failed are left out). With one replication the half-width is NaN.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

# Two-sided 95% quantiles t(0.975, df) for df = 1..30; beyond that, the values at 40, 60 and
# 120 and the normal limit, interpolated in 1/df (standard tables).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
_T975_TAIL = [(30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (math.inf, 1.960)]

DEFAULT_METRICS = ("goodput_bps", "bytes_delivered", "rto_count", "rto_spurious_true",
                   "fast_retx_count", "retx_segments")


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        return math.nan
    if df <= 30:
        return _T975[df - 1]
    for (d0, t0), (d1, t1) in zip(_T975_TAIL, _T975_TAIL[1:], strict=False):
        if d0 <= df <= d1:
            x0, x1, x = 1 / d0, (0.0 if math.isinf(d1) else 1 / d1), 1 / df
            return t0 + (t1 - t0) * (x0 - x) / (x0 - x1)
    return 1.960


def t975_sql(df: str) -> str:
    """:func:`t975` as a SQL expression of the expression ``df`` (NULL below 1 degree of
    freedom): the claims' ``ci_lo`` and ``ci_hi`` macros use the same table as the figures."""
    head = ", ".join(f"{t}" for t in _T975)
    parts = [f"WHEN ({df}) < 1 THEN NULL", f"WHEN ({df}) <= 30 THEN [{head}][({df})::INTEGER]"]
    for (d0, t0), (d1, t1) in zip(_T975_TAIL, _T975_TAIL[1:], strict=False):
        if math.isinf(d1):
            parts.append(f"ELSE {t0} + ({t1} - {t0}) * (1.0 / {d0} - 1.0 / ({df})) * {d0}")
        else:
            x0, x1 = 1 / d0, 1 / d1
            parts.append(f"WHEN ({df}) <= {d1} THEN {t0} + ({t1} - {t0}) * "
                         f"({x0!r} - 1.0 / ({df})) / {x0 - x1!r}")
    return "CASE " + " ".join(parts) + " END"


def mean_ci(values: Sequence[float]) -> tuple[float, float, int]:
    """(mean, 95% CI half-width, n) of the non-NaN values."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return math.nan, math.nan, 0
    mean = sum(xs) / n
    if n == 1:
        return mean, math.nan, 1
    sd = statistics.stdev(xs)
    return mean, t975(n - 1) * sd / math.sqrt(n), n


def group_columns(runs: pd.DataFrame, params: Sequence[str]) -> list[str]:
    """What identifies a grid point in a runs frame: the parameters, plus ``flow`` if several."""
    cols = [p for p in params if p in runs.columns]
    if "flow" in runs.columns and runs["flow"].nunique(dropna=True) > 1:
        cols.append("flow")
    return cols


def summarize(runs: pd.DataFrame, params: Sequence[str],
              metrics: Sequence[str] = DEFAULT_METRICS) -> pd.DataFrame:
    """One row per grid point: ``n`` and, per metric, ``<m>_mean`` and ``<m>_ci95``."""
    import pandas as pd

    ok = runs[runs["status"] == "ok"] if "status" in runs.columns else runs
    missing = [m for m in metrics if m not in runs.columns]
    if missing:
        raise ValueError(f"no metric {missing[0]!r} in the runs table "
                         f"(columns: {', '.join(runs.columns)})")
    for m in metrics:
        if not (pd.api.types.is_numeric_dtype(runs[m]) or pd.api.types.is_bool_dtype(runs[m])):
            seen = runs[m].dropna()
            such = f" (it holds values such as {seen.iloc[0]!r})" if len(seen) else ""
            raise ValueError(f"metric {m!r}: not a numeric column{such}")
    by = group_columns(runs, params)
    rows = []
    groups = ok.groupby(by, sort=False, dropna=False) if by else [((), ok)]
    for key, frame in groups:
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(by, key, strict=True))
        row["n"] = len(frame)
        for m in metrics:
            mean, half, _ = mean_ci(frame[m].tolist())
            row[f"{m}_mean"], row[f"{m}_ci95"] = mean, half
        rows.append(row)
    return pd.DataFrame(rows)


# One decimal rule per unit, used by the CLI summary and the study reports alike. The unit
# is read from the column's name: *_bps is a rate shown in Mbit/s, *_s a time in seconds,
# bytes* a size in MB, *_pct a percentage; anything else is a count (or a plain number).
UNITS = (
    ("_bps", "Mbit/s", 1e-6, 2),
    ("_s", "s", 1.0, 3),
    ("_pct", "%", 1.0, 1),
)


def unit_of(name: str) -> tuple[str, float, int] | None:
    """(unit, scale, decimals) for a metric column, or None for a count or plain number."""
    if "bytes" in name.split("_"):
        return "MB", 1e-6, 2
    for suffix, unit, scale, decimals in UNITS:
        if name.endswith(suffix):
            return unit, scale, decimals
    return None


def labelled(name: str) -> str:
    """A column heading with its unit: ``goodput_bps [Mbit/s]``."""
    unit = unit_of(name)
    return f"{name} [{unit[0]}]" if unit else name


def fmt_value(name: str, x: object) -> str:
    """``x`` of column ``name`` by the unit's rule: Mbit/s and MB with 2 decimals, seconds with
    3, percentages with 1; counts as integers with thousands separators; other numbers (a mean
    of counts, a ratio) with up to 4 significant digits, at least one decimal (1.004, 12.35,
    42.2, 1,234.5)."""
    x = as_py(x)
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    unit = unit_of(name)
    if unit is not None:
        _, scale, decimals = unit
        return f"{x * scale:,.{decimals}f}"
    if float(x).is_integer():
        return f"{int(x):,}"
    if not math.isfinite(x):
        return str(x)  # inf, -inf
    if abs(x) >= 1:
        return f"{x:,.{_decimals([x])}f}"
    return f"{x:.4g}"


def _decimals(values: Sequence[float]) -> int:
    """Decimals for numbers of which the biggest is at least 1: as many as four significant
    digits of the biggest need, at least one, fewer where every value has no more (42.2 and
    38.0 keep one decimal, 1.0044 gets three)."""
    cap = max(1, 3 - math.floor(math.log10(max(abs(v) for v in values))))
    for d in range(1, cap):
        if all(round(v, d) == round(v, cap) for v in values):
            return d
    return cap


def as_py(v: Any) -> Any:
    """A numpy/pandas scalar as the Python number it holds (None for a missing value)."""
    if v is None or isinstance(v, str | bytes | bool | int):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) else v
    if hasattr(v, "item"):  # numpy scalars
        v = v.item()
        return None if isinstance(v, float) and math.isnan(v) else v
    try:  # pandas NA, NaT
        import pandas as pd

        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def column_cells(name: str, values: Sequence[Any]) -> list[str]:
    """One column's cells by its unit's rule (:func:`fmt_value`), with one number of
    decimals for the whole column: where a count or a number without a unit is not whole (a
    mean over replications), every value of the column gets the same decimals."""
    values = [as_py(v) for v in values]
    nums = [float(v) for v in values if is_number(v) and math.isfinite(v)]
    if unit_of(name) or not nums or all(v.is_integer() for v in nums):
        return [fmt_value(name, v) for v in values]
    biggest = max(abs(v) for v in nums)
    decimals = (_decimals(nums) if biggest >= 1
                else min(6, 2 - math.floor(math.log10(biggest or 1e-6))))
    return [f"{v:,.{decimals}f}" if is_number(v) and math.isfinite(v) else fmt_value(name, v)
            for v in values]


def _fmt(x: float) -> str:
    """A number without a known unit (kept for callers that have no column name)."""
    return fmt_value("", x)


def summary_cells(table: pd.DataFrame,
                  metrics: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a summary: the grid-point keys, ``n``, ``mean ± ci`` per metric."""
    keys = [c for c in table.columns if c != "n" and not c.endswith(("_mean", "_ci95"))]
    columns = [[str(as_py(v)) for v in table[k]] for k in keys]
    columns.append([f"{int(n):,}" for n in table["n"]])
    for m in metrics:
        means, halves = list(table[f"{m}_mean"]), list(table[f"{m}_ci95"])
        shown = column_cells(m, means + halves)  # the CI in the mean's unit and decimals
        columns.append([mean if as_py(h) is None else f"{mean} ± {half}"
                        for mean, half, h in zip(shown[:len(means)], shown[len(means):],
                                                 halves, strict=True)])
    header = [*keys, "n", *(labelled(m) for m in metrics)]
    return header, [list(row) for row in zip(*columns, strict=True)]


def align(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Right-aligned text columns, two spaces apart."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def format_summary(table: pd.DataFrame, metrics: Sequence[str]) -> str:
    """The summary as aligned text: one column ``mean ± ci`` per metric."""
    return align(*summary_cells(table, metrics))
