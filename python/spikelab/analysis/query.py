"""SQL over a results directory: DuckDB over its tables, which it can only read."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store import results
from ..store.sweep import dataset_files, load_sweep
from .stats import t975_sql

if TYPE_CHECKING:
    import duckdb
    import pandas as pd


def connect(outdir: str | os.PathLike[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB over a results directory's tables, which it can only read.

    ``runs`` always exists (for an unfinished sweep it is built from the finished runs);
    ``timeseries`` and ``packets`` exist when the directory has them. A fidelity suite's
    directory has ``fidelity``, an RTO study's ``rto_study`` and ``rto_series`` instead. A run's directory must
    be complete (its manifest lists the tables; an interrupted run has none). The tables are
    handed to DuckDB as Arrow datasets, and the connection then loses all access to files
    (``enable_external_access = false``, configuration locked): no statement can read or write
    anything but these tables.
    """
    import duckdb
    import pyarrow.dataset as ds

    outdir = Path(outdir)
    kind = results.kind_of(outdir)
    tables: dict[str, Any] = {}
    if kind in ("sweep", "study"):
        # Each table is a folder of Parquet files, one per block of runs, in run order
        # (a sweep written before blocks: one file).
        manifest = results._previous_manifest(outdir) or {}
        if manifest.get("status", results.COMPLETE) == results.COMPLETE \
                and dataset_files(outdir, "runs"):
            tables["runs"] = ds.dataset(dataset_files(outdir, "runs"), format="parquet")
        else:  # unfinished: still running, killed or interrupted
            tables["runs"] = load_sweep(outdir).runs
        for name in ("timeseries", "packets"):
            if files := dataset_files(outdir, name):  # unfinished: the blocks written
                tables[name] = ds.dataset(files, format="parquet")
    elif kind is None and not outdir.is_dir():
        raise FileNotFoundError(f"{outdir}: no such results directory")
    else:
        manifest = results.read_manifest(outdir)  # none: not a complete results directory
        if manifest.get("status") == results.INTERRUPTED:
            raise results.OutdirError(f"{outdir}: the run was interrupted and wrote no tables; "
                                      f"run it again")
        listed = set(results.listed_files(manifest))
        # A run's tables; a fidelity suite's or an RTO study's own (fidelity, rto_study,
        # rto_series), each under its file's name.
        names = (results.TABLES if kind not in ("fidelity", "rto-study") else
                 [p[:-len(".parquet")] for p in sorted(listed)
                  if p.endswith(".parquet") and "/" not in p])
        for name in names:
            path = outdir / f"{name}.parquet"
            if f"{name}.parquet" in listed and path.is_file():
                tables[name] = ds.dataset(path)
        if kind in ("fidelity", "rto-study") and not tables:
            raise FileNotFoundError(f"{outdir}: holds {results._HOLDS[kind]} but none of its "
                                    f"tables")
        if "runs" not in tables and kind not in ("fidelity", "rto-study"):
            raise FileNotFoundError(f"{outdir}: no runs.parquet; not a spikelab results "
                                    f"directory")
    con = duckdb.connect(":memory:")
    try:
        for name, table in tables.items():
            con.register(name, table)
        # The 95 % Student-t interval of a mean, for claims that must exclude a threshold
        # (docs/studies.md): aggregates, as avg() is.
        t = t975_sql("count(x) - 1")
        con.execute(f"CREATE TEMP MACRO ci_lo(x) AS avg(x) - ({t}) * stddev_samp(x) / "
                    f"sqrt(count(x))")
        con.execute(f"CREATE TEMP MACRO ci_hi(x) AS avg(x) + ({t}) * stddev_samp(x) / "
                    f"sqrt(count(x))")
        con.execute("SET python_enable_replacements = false")  # no caller's variables
        con.execute("SET enable_external_access = false")
        # One thread: a parallel aggregate adds its partial sums in whatever order the threads
        # finish, so a mean's last digits (and a claim's numbers) would change between runs of
        # the same results; the tables are small and one thread reads them in file order.
        con.execute("SET threads = 1")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


_CATEGORY = re.compile(r"^[A-Z][A-Za-z ]*? Error: ")


def duckdb_message(exc: BaseException) -> str:
    """DuckDB's message in one line, without its error category ("Binder Error: ")."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else "no details"
    return _CATEGORY.sub("", text, count=1)


_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?:ANALY[SZ]E\s+)?(.*)$", re.IGNORECASE | re.DOTALL)


def _read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse anything but queries: a results directory is read, never written (no COPY ...
    TO, CREATE, ATTACH, INSTALL/LOAD, SET, PRAGMA, EXPORT, ...; an EXPLAIN only of a query,
    since EXPLAIN ANALYZE runs its statement)."""
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise ValueError(f"query failed: {duckdb_message(exc)}") from None
    if not statements:
        raise ValueError("query: no SQL statement given")
    for st in statements:
        kind = str(st.type).rsplit(".", 1)[-1]
        if kind == "EXPLAIN":
            inner = _EXPLAIN.match(st.query)
            if inner and inner.group(1).strip():
                _read_only(con, inner.group(1))
                continue
        if kind != "SELECT":
            raise ValueError(f"query: only SELECT statements are allowed (the results are read, "
                             f"never written); got {kind}")


# A study view's name: a lower-case SQL identifier (views, and the figures drawn from them).
VIEW_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def define_views(con: duckdb.DuckDBPyConnection, views: Iterable[tuple[str, str]]) -> None:
    """Create each ``(name, sql)`` as a temporary view on ``con``, in order (a view may use the
    ones before it). Each SQL must be a query, as :func:`query` requires; a view that fails
    raises ValueError naming it."""
    import duckdb

    for view in views:
        if not (isinstance(view, tuple | list) and len(view) == 2
                and all(isinstance(x, str) for x in view)):
            raise TypeError(f"views must be (name, sql) pairs of strings, got {view!r}")
        name, sql = view
        try:
            statements = con.extract_statements(sql)
            kinds = [str(st.type).rsplit(".", 1)[-1] for st in statements]
            if kinds != ["SELECT"]:
                raise ValueError(f"must be one SELECT statement, got "
                                 f"{', '.join(kinds) or 'none'}")
            con.execute(f'CREATE TEMP VIEW "{name}" AS {sql}')
        except (ValueError, duckdb.Error) as exc:
            msg = duckdb_message(exc) if isinstance(exc, duckdb.Error) else str(exc)
            raise ValueError(f"view {name!r}: {msg.removeprefix('query failed: ')}") from None


def query(outdir: str | os.PathLike[str], sql: str,
          views: Iterable[tuple[str, str]] = ()) -> pd.DataFrame:
    """Run SQL over a results directory (views ``runs``, ``timeseries``, ``packets``).

    Read-only: only SELECT (and EXPLAIN of a SELECT) statements run; anything that could
    write (COPY ... TO, CREATE, ATTACH, INSTALL, SET, ...) is refused with a one-line error,
    and the connection cannot open any file besides the directory's tables.
    """
    import duckdb

    if not isinstance(sql, str):
        raise TypeError(f"sql must be a string, got {type(sql).__name__}")
    con = connect(outdir)
    try:
        define_views(con, views)
        _read_only(con, sql)
        return con.execute(sql).df()
    except duckdb.Error as exc:
        msg = duckdb_message(exc)
        if isinstance(exc, duckdb.CatalogException) and "does not exist" in msg:
            names = sorted(r[0] for r in con.execute("SHOW TABLES").fetchall())
            msg = f"{msg} (this directory's tables: {', '.join(names) or 'none'})"
        raise ValueError(f"query failed: {msg}") from None
    finally:
        con.close()
