"""The rows the run figures read, in bounded memory: :class:`Traces`.

A run's packets and time series stay where they are (their Parquet files, or the Arrow tables
given) and are read through DuckDB one flow and one layer at a time (a layer: a flow's data
sent, its ACKs, its cwnd, its RTT samples, ...; :class:`Layer`). A layer of at most
:data:`LOAD_ROWS` rows is handed over whole, so a short run's figures are drawn from every row
as they always were. A longer one stays in DuckDB, which hands over only what a figure can
show of the window drawn, thinned per pixel column: the lowest and the highest point of each
column (the very points :func:`decimate` keeps of the whole layer), its first and last too
for a step line, one point per occupied pixel for a scatter. Counts, extents, medians and the
ACK stalls of the seq/ack figure's episodes are aggregates. Memory then grows with a figure's
pixels, not with the run's length (a one-hour LTE run's figures: docs/performance.md).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

#: A layer of at most this many rows is read whole (and drawn as the figures always drew it).
LOAD_ROWS = 200_000
#: Time bins (pixel columns) a thinned layer keeps points of: more than a figure's width.
BINS = 1500
#: Value bins (pixel rows) of a thinned scatter: more than a figure's height.
VALUE_BINS = 600
#: DuckDB's memory for the figures; beyond it, its temporary tables go to disk.
MEMORY_LIMIT = "128MB"

def _arrow(relation: Any) -> pa.Table:
    """A DuckDB relation's rows as an Arrow table (``to_arrow_table`` in DuckDB 2, ``arrow``
    before)."""
    fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
    return fetch()


# Seconds from t_ns as numpy computes them (int64 to double, then divided), in SQL.
_T = "(CAST(t_ns AS DOUBLE) / CAST(1e9 AS DOUBLE))"


def decimate(t: np.ndarray, y: np.ndarray, lo: float, hi: float,
             bins: int = BINS) -> tuple[np.ndarray, np.ndarray]:
    """The points of each of ``bins`` time bins with the lowest and the highest y (in time
    order): what a figure of that width shows, at any length of run."""
    if t.size <= 2 * bins or hi <= lo:
        return t, y
    keep = _decimated(t, y, lo, hi, bins)
    return t[keep], y[keep]


def _decimated(t: np.ndarray, y: np.ndarray, lo: float, hi: float,
               bins: int = BINS) -> np.ndarray:
    """The indices :func:`decimate` keeps: of each bin, in ``np.lexsort((y, bin))`` order,
    the first (lowest y, earliest of equals) and the last (highest y, latest of equals)."""
    b = np.clip(((t - lo) / (hi - lo) * bins).astype(np.int64), 0, bins - 1)
    order = np.lexsort((y, b))
    first = np.flatnonzero(np.r_[True, b[order][1:] != b[order][:-1]])
    last = np.r_[first[1:] - 1, order.size - 1]
    return np.unique(np.concatenate([order[first], order[last]]))


class Traces:
    """A run's ``packets`` and ``timeseries`` for its figures: each a Parquet file, an Arrow
    table or absent; of a Parquet packets file, only the rows of ``packet_events`` if given.
    A context manager: closing drops DuckDB's temporary tables."""

    def __init__(self, packets: pa.Table | str | os.PathLike[str] | None = None,
                 timeseries: pa.Table | str | os.PathLike[str] | None = None, *,
                 packet_events: Iterable[str] | None = None,
                 load_rows: int | None = None) -> None:
        import duckdb

        self.load_rows = LOAD_ROWS if load_rows is None else load_rows
        self._events = None if packet_events is None else list(packet_events)
        self._temps: list[str] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="spikelab-figures-")
        self.con = duckdb.connect(":memory:", config={
            "threads": 1, "memory_limit": MEMORY_LIMIT, "temp_directory": self._tmp.name})
        self._rows: dict[str, int] = {}
        self._columns: dict[str, list[str]] = {}
        for name, source in (("packets", packets), ("timeseries", timeseries)):
            self._attach(name, source)

    def _attach(self, name: str, source: pa.Table | str | os.PathLike[str] | None) -> None:
        if isinstance(source, str | os.PathLike):
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(source).metadata
            self._columns[name] = meta.schema.to_arrow_schema().names
            quoted = os.fspath(source).replace("'", "''")
            where = ""
            if name == "packets" and self._events is not None:
                where = " WHERE event IN (" + ", ".join(
                    "'" + e.replace("'", "''") + "'" for e in self._events) + ")"
            self.con.execute(f"CREATE VIEW {name} AS SELECT * EXCLUDE (file_row_number), "
                             f"file_row_number AS rn FROM read_parquet('{quoted}', "
                             f"file_row_number = true){where}")
            # The file's rows (those of other events included: a bound, never counted).
            self._rows[name] = meta.num_rows
            return
        if source is None or source.num_rows == 0:
            self._rows[name] = 0
            self._columns[name] = [] if source is None else source.column_names
            return
        self._rows[name] = source.num_rows
        self._columns[name] = source.column_names
        # The table's order as a column: ties in time keep it, as a stable sort does.
        self.con.register(f"{name}_arrow", source.append_column(
            "rn", pa.array(np.arange(source.num_rows, dtype=np.int64))))
        self.con.execute(f"CREATE VIEW {name} AS SELECT * FROM {name}_arrow")

    def close(self) -> None:
        self.con.close()
        self._tmp.cleanup()

    def __enter__(self) -> Traces:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def scope(self) -> Iterator[Traces]:
        """The DuckDB tables made inside are dropped at its end (a figure's layers)."""
        mark = len(self._temps)
        try:
            yield self
        finally:
            for name in self._temps[mark:]:
                self.con.execute(f"DROP TABLE IF EXISTS {name}")
            del self._temps[mark:]

    def rows(self, table: str) -> int:
        """The table's rows (of a Parquet packets file, before ``packet_events``): 0 means
        nothing to draw."""
        return self._rows[table]

    def has(self, table: str, column: str) -> bool:
        return self._rows[table] > 0 and column in self._columns[table]

    def _where(self, flow: int | None, match: Mapping[str, Any]) -> tuple[str, list[Any]]:
        parts, params = [], []
        if flow is not None:
            parts.append("flow = ?")
            params.append(int(flow))
        for column, value in match.items():
            if " " in column:  # "dest >=": a comparison
                parts.append(f"{column} ?")
                params.append(value)
            elif isinstance(value, tuple | list):
                parts.append(f"{column} IN ({', '.join('?' * len(value))})")
                params += list(value)
            else:
                parts.append(f"{column} = ?")
                params.append(value)
        return " AND ".join(parts) or "true", params

    def arrow(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        return _arrow(self.con.sql(sql, params=params or []))

    def one(self, sql: str, params: list[Any] | None = None) -> tuple:
        return self.con.execute(sql, params or []).fetchall()[0]

    def count(self, table: str, flow: int | None, **match: Any) -> int:
        if not self._rows[table]:
            return 0
        where, params = self._where(flow, match)
        return int(self.one(f"SELECT count(*) FROM {table} WHERE {where}", params)[0])

    def extent(self, table: str, flow: int | None, **match: Any) -> tuple[int, int] | None:
        """The first and last t_ns of the rows matched, None without any."""
        if not self._rows[table]:
            return None
        where, params = self._where(flow, match)
        lo, hi = self.one(f"SELECT min(t_ns), max(t_ns) FROM {table} WHERE {where}", params)
        return None if lo is None else (int(lo), int(hi))

    def distinct(self, table: str, column: str, flow: int | None, **match: Any) -> list:
        if not self._rows[table]:
            return []
        where, params = self._where(flow, match)
        return [r[0] for r in self.con.execute(
            f"SELECT DISTINCT {column} FROM {table} WHERE {where} ORDER BY 1", params).fetchall()]

    def maximum(self, table: str, column: str, flow: int | None, **match: Any) -> Any:
        if not self._rows[table]:
            return None
        where, params = self._where(flow, match)
        return self.one(f"SELECT max({column}) FROM {table} WHERE {where}", params)[0]

    def table(self, table: str, flow: int | None, columns: list[str],
              **match: Any) -> pa.Table:
        """The rows matched, whole, in file order: for the rare events a figure marks one by
        one (timeouts, verdicts, failovers)."""
        where, params = self._where(flow, match)
        return self.arrow(f"SELECT {', '.join(columns)} FROM {table} WHERE {where} "
                          f"ORDER BY rn", params)

    def layer(self, table: str, flow: int | None, column: str, *, order: str = "time",
              positive: bool = False, hold: bool = False, **match: Any) -> Layer:
        """The rows of ``table`` matched (``flow``, and column = value for each keyword;
        ``"column >="``: value for a comparison): ``t_ns`` and ``column``, in time order
        (``order="time"``; ties in file order) or in file order (``"file"``);
        ``positive``: only rows with ``column`` > 0. Read whole if at most
        :data:`LOAD_ROWS` rows or ``hold`` (rare events, every one of which is drawn)."""
        if not self._rows[table]:
            return Layer.held(np.zeros(0, np.int64), np.zeros(0))
        where, params = self._where(flow, match)
        if positive:
            where += f" AND {column} > 0"
        by = "t_ns, rn" if order == "time" else "rn"
        n = int(self.one(f"SELECT count(*) FROM {table} WHERE {where}", params)[0])
        if n <= self.load_rows or hold:
            got = self.arrow(f"SELECT t_ns, {column} FROM {table} WHERE {where} ORDER BY {by}",
                             params)
            return Layer.held(got.column(0).to_numpy(), got.column(1).to_numpy())
        name = f"layer_{len(self._temps)}"
        self._temps.append(name)
        # Ordered as the figure reads it: ``ord`` is each row's place.
        self.con.execute(f"CREATE TEMP TABLE {name} AS SELECT t_ns, {column} AS v, "
                         f"row_number() OVER (ORDER BY {by}) AS ord FROM {table} "
                         f"WHERE {where}", params)
        return Layer(self, name, n)

    def sampled(self, var: str, flows: np.ndarray, edges: np.ndarray) -> np.ndarray:
        """Time-series variable ``var`` of every flow at each of ``edges`` (seconds): the
        value of its last row at or before the edge (ties in time: the last in the file),
        as (flows × edges), NaN before a flow's first row."""
        out = np.full((flows.size, edges.size), np.nan)
        where = {f: i for i, f in enumerate(flows.tolist())}
        n = self.count("timeseries", None, var=var)
        if n <= self.load_rows:
            rows = self.table("timeseries", None, ["flow", "t_ns", "value"], var=var)
            flow = rows.column("flow").to_numpy()
            t = rows.column("t_ns").to_numpy() / 1e9
            value = rows.column("value").to_numpy().astype(float)
            order = np.lexsort((t, flow))
            flow, t, value = flow[order], t[order], value[order]
            bounds = np.r_[0, np.flatnonzero(np.diff(flow)) + 1, flow.size]
            for a, b in itertools.pairwise(bounds):
                i = where.get(int(flow[a]))
                if i is None:
                    continue
                at = np.searchsorted(t[a:b], edges, side="right") - 1
                known = at >= 0
                out[i, known] = value[a:b][at[known]]
            return out
        # Each row counts from the first edge at or after it on: per flow and edge, the last
        # row counting from there; then each edge takes the latest of those up to it.
        self.con.register("edges_arrow", pa.table({"j": np.arange(edges.size),
                                                   "edge": edges.astype(float)}))
        try:
            got = self.arrow(
                f"SELECT flow, j, arg_max(value, (t_ns, rn)) AS value FROM ("
                f"SELECT r.flow, r.t_ns, r.rn, r.value, e.j FROM (SELECT flow, t_ns, rn, "
                f"value, {_T} AS t FROM timeseries WHERE var = ?) r "
                f"ASOF JOIN edges_arrow e ON r.t <= e.edge) GROUP BY flow, j ORDER BY flow, j",
                [var])
        finally:
            self.con.unregister("edges_arrow")
        flow = got.column("flow").to_numpy()
        j = got.column("j").to_numpy()
        value = got.column("value").to_numpy().astype(float)
        bounds = np.r_[0, np.flatnonzero(np.diff(flow)) + 1, flow.size]
        for a, b in itertools.pairwise(bounds):
            i = where.get(int(flow[a]))
            if i is None:
                continue
            last = np.full(edges.size, -1)
            last[j[a:b]] = np.arange(a, b)
            last = np.maximum.accumulate(last)
            out[i, last >= 0] = value[last[last >= 0]]
        return out


class Layer:
    """One layer's rows: held (``t_ns``, ``v``, in order) or kept in DuckDB (a temporary
    table of ``n`` rows: ``t_ns``, ``v``, ``ord``, its place in order), read by window."""

    def __init__(self, traces: Traces | None, name: str | None, n: int,
                 t_ns: np.ndarray | None = None, v: np.ndarray | None = None) -> None:
        self.traces, self.name, self.n = traces, name, n
        self.t_ns, self.v = t_ns, v

    @classmethod
    def held(cls, t_ns: np.ndarray, v: np.ndarray) -> Layer:
        return cls(None, None, int(t_ns.size), t_ns, v)

    @property
    def is_held(self) -> bool:
        return self.t_ns is not None

    @property
    def t(self) -> np.ndarray:
        """Held rows' times, seconds."""
        return self.t_ns / 1e9

    def _query(self, sql: str, params: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        got = self.traces.arrow(sql, params)
        return got.column("t_ns").to_numpy(), got.column("v").to_numpy()

    def count(self, lo: float, hi: float) -> int:
        """Rows with lo <= t <= hi (seconds)."""
        if self.is_held:
            t = self.t
            return int(np.searchsorted(t, hi, side="right") - np.searchsorted(t, lo, side="left"))
        return int(self.traces.one(
            f"SELECT count(*) FROM {self.name} WHERE {_T} >= ? AND {_T} <= ?", [lo, hi])[0])

    def count_ns(self, lo_ns: int | None, hi_ns: int | None) -> int:
        """Rows with lo_ns <= t_ns <= hi_ns (None: open)."""
        if self.is_held:
            return int(self._mask_ns(lo_ns, hi_ns).sum())
        where, params = self._where_ns(lo_ns, hi_ns)
        return int(self.traces.one(f"SELECT count(*) FROM {self.name} WHERE {where}",
                                   params)[0])

    def _mask_ns(self, lo_ns: int | None, hi_ns: int | None) -> np.ndarray:
        keep = np.ones(self.t_ns.size, dtype=bool)
        if lo_ns is not None:
            keep &= self.t_ns >= lo_ns
        if hi_ns is not None:
            keep &= self.t_ns <= hi_ns
        return keep

    @staticmethod
    def _where_ns(lo_ns: int | None, hi_ns: int | None) -> tuple[str, list[Any]]:
        parts, params = ["true"], []
        if lo_ns is not None:
            parts.append("t_ns >= ?")
            params.append(int(lo_ns))
        if hi_ns is not None:
            parts.append("t_ns <= ?")
            params.append(int(hi_ns))
        return " AND ".join(parts), params

    def window_ns(self, lo_ns: int | None, hi_ns: int | None, *,
                  thin: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(t_ns, v) of the rows with lo_ns <= t_ns <= hi_ns (None: open), in order; a layer
        kept in DuckDB thinned as ``thin`` says (see :meth:`window`)."""
        if self.is_held:
            keep = self._mask_ns(lo_ns, hi_ns)
            return self.t_ns[keep], self.v[keep]
        where, params = self._where_ns(lo_ns, hi_ns)
        lo = None if lo_ns is None else lo_ns / 1e9
        hi = None if hi_ns is None else hi_ns / 1e9
        return self._thinned(f"SELECT t_ns, v, ord FROM {self.name} WHERE {where}", params,
                             lo, hi, thin)

    def window(self, lo: float | None, hi: float | None, *, carry: str | None = None,
               thin: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(t_ns, v) of the rows with lo <= t <= hi (seconds; None: open), in order.

        ``carry``: also the row in force before the window: ``"before"``, the last row with
        t < lo; ``"at"``, the rows from the last one with t <= lo on (the window's start then
        excludes lo). ``thin`` (a layer kept in DuckDB is always thinned; a held one only
        with "extremes", as :func:`decimate` does): ``"extremes"``, the lowest and highest
        point of each of :data:`BINS` time bins over [lo, hi]; ``"steps"``, their first and
        last points too; ``"cells"``, the first point of each time bin × value bin."""
        if self.is_held:
            return self._held_window(lo, hi, carry, thin)
        inf = float("inf")
        lo_, hi_ = (-inf if lo is None else lo), (inf if hi is None else hi)
        start, before = (f"{_T} > ?", f"{_T} <= ?") if carry == "at" else \
            (f"{_T} >= ?", f"{_T} < ?")
        rows = f"SELECT t_ns, v, ord FROM {self.name} WHERE ({start} AND {_T} <= ?)"
        params: list[Any] = [lo_, hi_]
        if carry is not None:
            carried = self.traces.one(f"SELECT max(ord) FROM {self.name} WHERE {before}",
                                      [lo_])[0]
            if carried is None and carry == "at":  # nothing before: from the first row
                rows = f"SELECT t_ns, v, ord FROM {self.name} WHERE {_T} <= ?"
                params = [hi_]
            elif carried is not None:
                rows += " OR ord = ?"
                params.append(int(carried))
        return self._thinned(rows, params, lo, hi, thin)

    def _thinned(self, rows: str, params: list[Any], lo: float | None, hi: float | None,
                 thin: str | None) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the query ``rows`` (t_ns, v, ord) in order, thinned per pixel column
        of [lo, hi] (None: the rows' own first and last time) as ``thin`` says."""
        n = int(self.traces.one(f"SELECT count(*) FROM ({rows})", params)[0])
        limit = {"extremes": 2, "steps": 4, "cells": 2}.get(thin or "", 0) * BINS
        if thin is None or n <= limit:
            return self._query(f"{rows} ORDER BY ord", params)
        if lo is None or hi is None:
            t0, t1 = self.traces.one(f"SELECT min({_T}), max({_T}) FROM ({rows})", params)
            lo = t0 if lo is None else lo
            hi = t1 if hi is None else hi
        if hi <= lo:
            return self._query(f"{rows} ORDER BY ord", params)
        # numpy's bin of a time (decimate): trunc((t - lo) / (hi - lo) * bins), clipped.
        binned = (f"SELECT *, greatest(least(CAST(trunc(({_T} - ?) / ? * ?) AS BIGINT), ?), 0) "
                  f"AS bin FROM ({rows})")
        bparams = [lo, hi - lo, float(BINS), BINS - 1, *params]
        if thin == "cells":
            v0, v1 = self.traces.one(f"SELECT min(v), max(v) FROM ({rows}) WHERE isfinite(v)",
                                     params)
            span = float(v1 - v0) if v0 is not None and v1 > v0 else 1.0
            picks = (f"SELECT min(ord) AS o FROM (SELECT *, CASE WHEN isfinite(v) THEN "
                     f"CAST(trunc((v - ?) / ? * ?) AS BIGINT) END AS vbin FROM ({binned})) "
                     f"GROUP BY bin, vbin")
            pparams = [0.0 if v0 is None else float(v0), span, float(VALUE_BINS), *bparams]
        else:
            # lexsort((v, bin)): in each bin the lowest v (first in order among equals) and
            # the highest (last among equals); for steps the bin's first and last row too.
            ends = ", min(ord), max(ord)" if thin == "steps" else ""
            picks = (f"SELECT unnest([arg_min(ord, (v, ord)), arg_max(ord, (v, ord)){ends}]) "
                     f"AS o FROM ({binned}) GROUP BY bin")
            pparams = bparams
        return self._query(f"SELECT t_ns, v FROM {self.name} WHERE ord IN (SELECT o FROM "
                           f"({picks})) ORDER BY ord", pparams)

    def _held_window(self, lo: float | None, hi: float | None, carry: str | None,
                     thin: str | None) -> tuple[np.ndarray, np.ndarray]:
        t, t_ns, v = self.t, self.t_ns, self.v
        i0 = 0 if lo is None else int(np.searchsorted(t, lo, side="left"))
        if carry == "before" and lo is not None:
            i0 = max(i0 - 1, 0)
        elif carry == "at" and lo is not None:
            i0 = max(int(np.searchsorted(t, lo, side="right")) - 1, 0)
        i1 = t.size if hi is None else int(np.searchsorted(t, hi, side="right"))
        t_ns, v = t_ns[i0:i1], v[i0:i1]
        if thin == "extremes" and t_ns.size > 2 * BINS:
            lo_ = float(t_ns[0] / 1e9) if lo is None else lo
            hi_ = float(t_ns[-1] / 1e9) if hi is None else hi
            if hi_ > lo_:
                keep = _decimated(t_ns / 1e9, v, lo_, hi_)
                t_ns, v = t_ns[keep], v[keep]
        return t_ns, v

    def stalls(self, stall_min: float) -> tuple[np.ndarray, np.ndarray]:
        """The ACK stalls of an ACK layer: (start, end) in seconds of every gap longer than
        ``stall_min`` between two advances of the ACK (a row above the one before it)."""
        if self.is_held:
            t, ack = self.t, self.v
            advance = t[np.r_[True, np.diff(ack) > 0]] if t.size else t
            gaps = np.diff(advance)
            stalls = np.flatnonzero(gaps > stall_min)
            return advance[stalls], advance[stalls + 1]
        got = self.traces.arrow(
            f"WITH a AS (SELECT t_ns, v, ord, lag(v) OVER (ORDER BY ord) AS pv FROM {self.name}),"
            f" adv AS (SELECT t_ns, lag(t_ns) OVER (ORDER BY ord) AS pt, ord FROM a "
            f"WHERE pv IS NULL OR v > pv) "
            f"SELECT pt, t_ns FROM adv WHERE pt IS NOT NULL AND "
            f"{_T} - CAST(pt AS DOUBLE) / CAST(1e9 AS DOUBLE) > ? ORDER BY ord",
            [stall_min])
        return got.column(0).to_numpy() / 1e9, got.column(1).to_numpy() / 1e9

    def median(self, positive: bool = True) -> float | None:
        """The median of the finite values (> 0 with ``positive``), None without any."""
        if self.is_held:
            v = self.v
            v = v[np.isfinite(v) & (v > 0)] if positive else v[np.isfinite(v)]
            return float(np.median(v)) if v.size else None
        cond = "isfinite(v)" + (" AND v > 0" if positive else "")
        n = int(self.traces.one(f"SELECT count(*) FROM {self.name} WHERE {cond}")[0])
        if n == 0:
            return None
        middle = self.traces.arrow(
            f"SELECT v FROM {self.name} WHERE {cond} ORDER BY v LIMIT ? OFFSET ?",
            [2 - n % 2, (n - 1) // 2]).column("v").to_numpy()
        return float(np.median(middle))

