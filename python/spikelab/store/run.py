"""A run's result: its tables and metadata (:class:`RunResult`), written to and read back from
a results directory (see :mod:`.results`)."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from .._interrupts import interrupts_deferred
from . import results

if TYPE_CHECKING:
    import pandas as pd


class _LazyTable:
    """A table field that may be given as a function returning the table (e.g. reading a
    streamed Parquet file): it is called on first access, so a run written to disk does not
    hold its traces in memory unless someone reads them."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, obj: Any, objtype: type | None = None) -> pa.Table:
        if obj is None:
            raise AttributeError(self.slot)  # no default: the field is required
        value = obj.__dict__[self.slot]
        if callable(value):
            value = value()
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


@dataclass(frozen=True)
class RunResult:
    """Tables and metadata of one run. ``runs`` has one row per flow.

    ``duration_s`` is simulated time, ``wall_s`` the wall-clock time of the core's run and
    ``events`` the number of events it processed. ``timeseries`` and ``packets`` of a run
    written to disk are read from its files when first used.
    """

    runs: pa.Table
    timeseries: pa.Table = _LazyTable()  # type: ignore[assignment]
    packets: pa.Table = _LazyTable()  # type: ignore[assignment]
    scenario: dict[str, Any]
    seed: int
    trace: str
    duration_s: float
    wall_s: float
    events: int
    manifest: dict[str, Any] = field(default_factory=dict)
    """manifest.json contents; its ``files`` list is filled when the result is written."""

    def __repr__(self) -> str:
        # One line, and nothing read: showing a result (a notebook cell) must not load a
        # lazy packets table.
        return (f"RunResult(seed={self.seed}, trace={self.trace!r}, "
                f"flows={self.runs.num_rows}, duration_s={self.duration_s:g}, "
                f"events={self.events}, wall_s={self.wall_s:.3f})")

    @property
    def summary(self) -> pd.DataFrame:
        """The runs table as a pandas DataFrame (one row per flow)."""
        return self.runs.to_pandas()

    def table(self, name: str) -> pa.Table:
        if name not in results.TABLES:
            raise KeyError(f"no table {name!r}; tables are {', '.join(results.TABLES)}")
        return getattr(self, name)

    def to_pandas(self, name: str = "runs") -> pd.DataFrame:
        return self.table(name).to_pandas()

    def tables(self) -> dict[str, pa.Table]:
        return {name: self.table(name) for name in results.TABLES}


def write_tables(result: RunResult, outdir: str | os.PathLike[str], *,
                 streamed: Iterable[str] = (),
                 staged: Mapping[str, Path] | None = None,
                 previous: Mapping[str, Any] | None = None,
                 on_commit: Callable[[], None] | None = None) -> Path:
    """Write ``result``'s tables to ``outdir`` (created if needed) and a complete manifest
    without figures (the figures of the earlier run, listed by its manifest or ``previous``,
    are removed); return the directory. ``streamed`` names tables already in place in
    ``outdir`` (they are kept); ``staged`` maps tables already written under temporary names
    there (a run's streamed traces) to those names.

    Every table is whole under a temporary name before the directory changes at all: a
    failure until then (a full disk) leaves what it held as it was, an earlier complete run
    included, and removes the temporaries. Then ``on_commit`` is called, the old manifest
    removed, the tables renamed into place, the earlier figures removed, and the new
    manifest written as soon as the tables are, so a directory whose manifest exists holds
    one complete, consistent run (:func:`spikelab.figures.draw` adds the figures)."""
    outdir = results.prepare(outdir)
    previous = results._previous_manifest(outdir) or previous
    staged = dict(staged or {})
    try:
        for name in results.TABLES:
            if name not in streamed and name not in staged:
                staged[name] = results.stage_parquet(result.table(name),
                                                     outdir / f"{name}.parquet")
    except BaseException:
        for tmp in staged.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    # A Ctrl-C lands after the renames: none of the temporaries is left behind.
    with interrupts_deferred():
        if on_commit is not None:
            on_commit()
        with contextlib.suppress(FileNotFoundError):
            (outdir / results.MANIFEST).unlink()
        for name, tmp in staged.items():
            os.replace(tmp, outdir / f"{name}.parquet")
    # An earlier run's figures (zoomed ones too) are stale.
    results._remove_figures(outdir, previous)
    # The tables are complete: say so before drawing, so a slow or killed figure step loses
    # nothing; the manifest is rewritten with the figures once they are drawn.
    result.manifest.update(results._finish(outdir, dict(result.manifest), [], None,
                                           keep=False))
    return outdir


def load(outdir: str | os.PathLike[str]) -> RunResult:
    """Read a run's results directory back: its tables, scenario, seed and manifest."""
    outdir = Path(outdir)
    results.expect_kind(outdir, ("run", "emulate"),
                        "a single run's results were expected (spikelab query reads every kind)")
    manifest = results.read_manifest(outdir)
    if manifest.get("status") == results.INTERRUPTED:
        reached = manifest.get("reached_s")
        when = f" at {reached:g} s of simulated time" if reached is not None else ""
        raise results.OutdirError(f"{outdir}: the run was interrupted{when} and wrote no "
                                  f"tables; run it again")
    # The runs table is read now; the traces (which can be millions of rows) when first used.
    tables: dict[str, Any] = {}
    for name in results.TABLES:
        path = outdir / f"{name}.parquet"
        if not path.is_file():
            raise FileNotFoundError(errno.ENOENT, "no such results table", str(path))
        tables[name] = (pq.read_table(path) if name == "runs"
                        else lambda path=path: pq.read_table(path, memory_map=True))
    missing = [k for k in ("scenario", "seed", "trace", "duration_s", "wall_s", "events")
               if k not in manifest]
    if missing:
        raise results.OutdirError(f"{outdir}: {results.MANIFEST} lacks {', '.join(missing)}; "
                                  f"not a manifest spikelab wrote")
    return RunResult(
        **tables,
        scenario=manifest["scenario"],
        seed=manifest["seed"],
        trace=manifest["trace"],
        duration_s=manifest["duration_s"],
        wall_s=manifest["wall_s"],
        events=manifest["events"],
        manifest=manifest,
    )
