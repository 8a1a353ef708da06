"""A sweep's results directory: Parquet tables written block by block as the runs finish
(docs/results.md, "Sweeps").

    OUTDIR/sweep.json                          the sweep's identity, written first
    OUTDIR/points.json, OUTDIR/scenario.toml   each point's overrides; the scenario text
    OUTDIR/runs.parquet                        every run, in run order (made from the blocks)
    OUTDIR/timeseries.parquet/part-NNNNNN.parquet   (traced) block N's time series
    OUTDIR/packets.parquet/part-NNNNNN.parquet      (traced) block N's packet events
    OUTDIR/parts/runs/part-NNNNNN.parquet      block N's runs rows
    OUTDIR/parts/blocks.jsonl                  the index: one line per block written
    OUTDIR/parts/bNNNNNN/RUN.ok.arrow          a finished run of a block not yet written
    OUTDIR/parts/bNNNNNN/RUN.TABLE.arrow       (its time series / packet events)
    OUTDIR/manifest.json                       written last

The runs are numbered in task order (grid point, then replication) and cut into blocks of
``B`` runs (1,000 for summary sweeps; fewer when traced). A finished run is written at once to
the spool (``parts/bNNNNNN/``, one Arrow file per table, renamed into place: the run is done
from then on, whatever happens to the sweep's process). When every run of a block is done,
the block's runs are copied in run order, a bounded number of rows at a time, into one
Parquet file per table, the block's line is appended to ``parts/blocks.jsonl`` and its spool
files are removed. When every block is written, ``runs.parquet`` is made from the runs
blocks (a row group at a time: one file that any Parquet reader opens, as for a single run),
while the trace tables, which can be far larger, stay folders of block files. So the rows are
in run order whatever order the runs finished in (the same sweep gives byte-identical files on
any executor), the sweep's process never holds more than a row group, and resuming reads the
index and the spool of the few unfinished blocks, not a file per run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from .._interrupts import interrupts_deferred
from ..scenario import TRACE_LEVELS
from . import results, schema
from .arrow import repeat

if TYPE_CHECKING:
    import pandas as pd

    from ..scenario.sweepspec import RunTask, SweepSpec

SWEEP_JSON = "sweep.json"
POINTS = "points.json"  # each grid point's overrides (by reference from the manifest)
SCENARIO_COPY = "scenario.toml"  # the sweep's scenario text, for repeating one run alone
PARTS = "parts"
BLOCKS = "blocks.jsonl"  # parts/blocks.jsonl: the index of the blocks written
LOCK = ".lock"  # parts/.lock: held by the process writing the sweep
PART = ".arrow"  # Arrow IPC: a spooled table is written and read back in well under a ms
OK, FAILED = "ok", "failed"
PCAP_DIR = results.PCAP
LAYOUT = 2  # sweep.json "layout": 2 = blocks (absent: one part file per run, read once)

# Runs per block, by trace level: a block's spool is at most this many runs, and a dataset
# file holds this many runs (a 20 s packets table is about 9 MB in memory).
BLOCK_RUNS = {"summary": 1000, "timeseries": 100, "packets": 20}
# Rows per Parquet row group: what the sweep's process holds of a table while writing it.
# (16,384 runs rows are about 12 MB; 262,144 trace rows about 20-30 MB.)
ROW_GROUP_ROWS = {"runs": 16_384, "timeseries": 262_144, "packets": 262_144}
# Test-only: blocks of this many runs, so that small sweeps write several.
TEST_BLOCK_ENV = "SPIKELAB_TEST_BLOCK_RUNS"


_TRIM: Any = None


def give_back_memory() -> None:
    """Return memory freed since the last call to the system: Arrow's pool keeps what a block
    held, and glibc keeps what Python and Dask's communication thread free in arenas (a Dask
    sweep's process grew by about 1 MB a thousand runs without this; with it, it stays flat)."""
    global _TRIM
    pa.default_memory_pool().release_unused()
    if _TRIM is None:
        _TRIM = False
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            _TRIM = ctypes.CDLL(None).malloc_trim  # glibc only (not musl, macOS)
    if _TRIM:
        _TRIM(0)


def traced(trace: str) -> tuple[str, ...]:
    """The tables a sweep keeps per run at trace level ``trace`` (``runs`` always)."""
    return results.TABLES[: TRACE_LEVELS.index(trace) + 1]


def block_runs(trace: str) -> int:
    """How many runs a block of a new sweep at trace level ``trace`` holds."""
    env = os.environ.get(TEST_BLOCK_ENV)
    return int(env) if env else BLOCK_RUNS[trace]


def dataset_dir(name: str) -> str:
    """Where table ``name`` is: ``runs.parquet`` (a file), ``timeseries.parquet`` and
    ``packets.parquet`` (folders, one Parquet file per block of runs)."""
    return f"{name}.parquet"


def block_file(name: str, block: int) -> str:
    """Block ``block``'s file of table ``name``: the trace tables' in their folders, the runs
    table's in ``parts/runs/`` (``runs.parquet`` is made from them)."""
    folder = f"{PARTS}/runs" if name == "runs" else dataset_dir(name)
    return f"{folder}/part-{block:06d}.parquet"


def part_table(task: RunTask, spec: SweepSpec, outcome: dict[str, Any]) -> pa.Table:
    """The runs rows of one finished run: identity, parameters, status, then metrics."""
    runs = outcome["tables"].get("runs")
    n = runs.num_rows if outcome["status"] == OK and runs is not None else 1
    cols: dict[str, pa.Array] = {
        "run_id": repeat(task.run_id, "string", n),
        "point": repeat(task.point, "int32", n),
        "replication": repeat(task.replication, "int32", n),
        "seed": repeat(task.seed, "int64", n),
    }
    for p in spec.params:
        cols[p.name] = repeat(task.params[p.name], p.kind, n)
    cols["status"] = repeat(outcome["status"], "string", n)
    cols["error"] = repeat(outcome["error"], "string", n)
    if outcome["status"] == OK and runs is not None:
        for name in runs.column_names:
            if name not in cols:  # `seed` is already there; parameters never clash (plan)
                cols[name] = runs.column(name)
    # Every column's unit and description (the parameters': the field they set).
    return schema.annotate(pa.table(list(cols.values()), names=list(cols)), "runs",
                           {p.name: schema.param_meta(p.key) for p in spec.params})


def write_part(table: pa.Table, path: Path) -> None:
    def write(tmp: Path) -> None:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)

    results.atomic_write(path, write)


def read_part(path: Path) -> pa.Table:
    """A spooled table, read into memory (a memory map would keep the whole file, mostly
    its schema, mapped as long as the table lives)."""
    with pa.OSFile(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _part_schema(path: Path) -> pa.Schema:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).schema


def _with_run_id(table: pa.Table, run_id: str) -> pa.Table:
    return schema.annotate(
        table.add_column(0, "run_id", repeat(run_id, "string", table.num_rows)), "runs")


def _concat(tables: list[pa.Table]) -> pa.Table:
    """Concatenate tables; columns in order of first appearance, dictionaries unified."""
    if not tables:
        return pa.table({})
    order: list[str] = []
    for t in tables:
        order += [c for c in t.column_names if c not in order]
    merged = pa.concat_tables(tables, promote_options="default")
    merged = merged.select(order).unify_dictionaries().combine_chunks()
    return merged


def _union(schemas: Sequence[pa.Schema]) -> pa.Schema:
    """The columns of all ``schemas``, in order of first appearance (a null column takes the
    type the others give it), without metadata."""
    return pa.unify_schemas([s.remove_metadata() for s in schemas], promote_options="default")


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns, in its order: missing ones null."""
    if table.schema.remove_metadata().equals(schema):
        return table
    cols = []
    for field in schema:
        i = table.schema.get_field_index(field.name)
        col = table.column(i) if i >= 0 else pa.nulls(table.num_rows, field.type)
        cols.append(col if col.type == field.type else col.cast(field.type))
    return pa.table(cols, schema=schema)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _writer_options(name: str, schema: pa.Schema) -> dict[str, Any]:
    if name == "runs":
        return {"compression": "zstd"}
    return results.trace_writer_options(schema)


class _BlockWriter:
    """One dataset file: run tables added in run order, written in row groups of at most
    ``ROW_GROUP_ROWS`` rows (a row group ends after the run that fills it), under a
    temporary name until :meth:`close`."""

    def __init__(self, path: Path, name: str, schema: pa.Schema):
        self.path, self.schema = path, schema
        self.limit = ROW_GROUP_ROWS[name]
        self.tmp = results.temporary_name(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.writer = pq.ParquetWriter(str(self.tmp), schema, **_writer_options(name, schema))
        self.buf: list[pa.Table] = []
        self.held = 0
        self.rows = 0

    def add(self, table: pa.Table) -> None:
        self.buf.append(_conform(table, self.schema))
        self.held += table.num_rows
        if self.held >= self.limit:
            self._flush()
        elif len(self.buf) >= 128:
            # Many small tables (a summary run has a row per flow) cost far more as separate
            # chunks than as rows: merge them into one.
            self.buf = [self._merged()]

    def _merged(self) -> pa.Table:
        return pa.concat_tables(self.buf).unify_dictionaries().combine_chunks()

    def _flush(self) -> None:
        if self.held:
            merged = self._merged()
            self.writer.write_table(merged, row_group_size=self.limit)
            self.rows += merged.num_rows
            self.buf, merged = [], None
            give_back_memory()  # the row group's buffers, before the next is filled
        self.buf, self.held = [], 0

    def close(self) -> dict[str, Any]:
        """Finish the file (synced, still under its temporary name); its description."""
        self._flush()
        self.writer.close()
        with open(self.tmp, "rb") as f:
            os.fsync(f.fileno())
        return {"rows": self.rows, "bytes": self.tmp.stat().st_size,
                "sha256": _sha256(self.tmp)}

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()
        with contextlib.suppress(FileNotFoundError):
            self.tmp.unlink()


def _runs_of(path: Path) -> Iterator[tuple[str, pa.Table]]:
    """(run_id, its rows) of a dataset file, in file order, one run in memory at a time."""
    import numpy as np
    import pyarrow.compute as pc

    pf = pq.ParquetFile(str(path))
    run, held = None, []
    for batch in pf.iter_batches(batch_size=65_536):
        n = batch.num_rows
        if not n:
            continue
        ids = batch.column(batch.schema.get_field_index("run_id"))
        if pa.types.is_dictionary(ids.type):
            ids = ids.dictionary_decode()
        cuts = [0]
        if n > 1:
            change = pc.not_equal(ids.slice(1), ids.slice(0, n - 1))
            cuts += (np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1).tolist()
        cuts.append(n)
        for start, end in zip(cuts, cuts[1:], strict=False):
            rid = ids[start].as_py()
            if rid != run and held:
                yield run, pa.Table.from_batches(held)
                held = []
            run = rid
            held.append(batch.slice(start, end - start))
    if held:
        yield run, pa.Table.from_batches(held)


def _read_index(path: Path) -> dict[int, dict[str, Any]]:
    """The last complete line of each block in ``parts/blocks.jsonl`` (a line cut short by a
    killed writer is skipped)."""
    blocks: dict[int, dict[str, Any]] = {}
    with contextlib.suppress(FileNotFoundError), open(path, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            with contextlib.suppress(ValueError, KeyError, TypeError):
                rec = json.loads(line)
                blocks[int(rec["block"])] = rec
    return blocks


def _spooled(folder: Path) -> dict[str, str]:
    """run_id -> status of the runs spooled in one block's folder (ok wins over failed)."""
    out: dict[str, str] = {}
    with contextlib.suppress(FileNotFoundError):
        for f in os.scandir(folder):
            name = f.name
            if name.startswith(".") or not name.endswith(PART):
                continue
            rid, _, status = name[: -len(PART)].rpartition(".")
            if status in (OK, FAILED) and out.get(rid) != OK:
                out[rid] = status
    return out


def _block_of(folder_name: str) -> int | None:
    if folder_name.startswith("b") and folder_name[1:].isdigit():
        return int(folder_name[1:])
    return None


class Ledger:
    """A sweep's progress and the writing of its dataset, block by block.

    Built from the index and the spool: run ``i`` of ``run_ids`` is done (ok or failed) when
    its block's last line says so, or when it is spooled. ``begin(todo)`` writes the blocks
    already complete; :meth:`record` spools a finished run and writes its block once the
    block's last run to do has finished; :meth:`finish` gives every block file the dataset's
    columns and describes the files."""

    def __init__(self, root: Path, run_ids: Sequence[str], trace: str, block: int):
        self.root, self.run_ids, self.trace, self.B = root, run_ids, trace, block
        self.tables = traced(trace)
        self.n = len(run_ids)
        self.status = bytearray(self.n)  # 0 not done, 1 ok, 2 failed
        self.fresh = bytearray(self.n)  # 1: finished in this call
        self.blocks: dict[int, dict[str, Any]] = {}
        self.spool: dict[int, dict[int, str]] = {}
        self.pending: dict[int, int] = {}
        # Called before this ledger first changes the directory (the sweep removes its
        # complete manifest then).
        self.before_write: Callable[[], None] | None = None
        self.runs_file: dict[str, Any] | None = None  # runs.parquet, once made (finish)
        index = root / PARTS / BLOCKS
        _trim_index(index)
        for b, rec in _read_index(index).items():
            lo = b * block
            status = rec.get("status", "")
            if lo >= self.n or rec.get("first") != run_ids[lo] \
                    or len(status) != min(self.n, lo + block) - lo:
                continue  # not this sweep's block (cannot happen unless edited): redo it
            self.blocks[b] = rec
            for k, c in enumerate(status):
                self.status[lo + k] = 1 if c == "o" else 2
        spool = root / PARTS
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(spool):
                b = _block_of(entry.name)
                if b is None or not entry.is_dir():
                    continue
                folder = Path(entry.path)
                if b * block >= self.n:
                    shutil.rmtree(folder, ignore_errors=True)
                    continue
                ids = self._ids(b)
                for rid, st in _spooled(folder).items():
                    i = ids.get(rid)
                    if i is None:
                        continue
                    if self.status[i] == 1 and b in self.blocks:
                        _remove_run(folder, rid)  # written into its block already
                        continue
                    self.spool.setdefault(b, {})[i] = st
                    self.status[i] = 1 if st == OK else 2
                if not self.spool.get(b) and b in self.blocks:
                    shutil.rmtree(folder, ignore_errors=True)

    def _ids(self, b: int) -> dict[str, int]:
        lo, hi = b * self.B, min(self.n, (b + 1) * self.B)
        return {self.run_ids[i]: i for i in range(lo, hi)}

    def _writing(self) -> None:
        if self.before_write is not None:
            self.before_write()
            self.before_write = None

    def counts(self) -> tuple[int, int]:
        """(runs done, runs ok)."""
        ok = self.status.count(1)
        return ok + self.status.count(2), ok

    def todo(self) -> list[int]:
        """The runs to run: those not done, and the failed (retried)."""
        return [i for i in range(self.n) if self.status[i] != 1]

    def begin(self, todo: Sequence[int]) -> None:
        """Count each block's runs to do; write the blocks that need nothing more."""
        self.pending = {}
        for i in todo:
            b = i // self.B
            self.pending[b] = self.pending.get(b, 0) + 1
        for b in range(math.ceil(self.n / self.B)):
            if not self.pending.get(b) and (b not in self.blocks or self.spool.get(b)):
                self.build(b)

    def record(self, i: int, task: RunTask, spec: SweepSpec,
               outcome: dict[str, Any]) -> None:
        """Spool a finished run (its traces first: the runs table marks it done); write its
        block if it was the block's last run to do."""
        self._writing()
        b = i // self.B
        folder = self.root / PARTS / f"b{b:06d}"
        folder.mkdir(parents=True, exist_ok=True)
        status = outcome["status"]
        if status == OK:
            for name, table in outcome["tables"].items():
                if name != "runs":
                    write_part(_with_run_id(table, task.run_id),
                               folder / f"{task.run_id}.{name}{PART}")
        write_part(part_table(task, spec, outcome), folder / f"{task.run_id}.{status}{PART}")
        if status == OK:  # a failed try of this run, from an earlier call, is superseded
            with contextlib.suppress(FileNotFoundError):
                (folder / f"{task.run_id}.{FAILED}{PART}").unlink()
        self.spool.setdefault(b, {})[i] = status
        self.status[i] = 1 if status == OK else 2
        self.fresh[i] = 1
        left = self.pending.get(b, 1) - 1
        self.pending[b] = left
        if left <= 0:
            self.build(b)

    def _spool_path(self, b: int, i: int, name: str) -> Path | None:
        rid = self.run_ids[i]
        folder = self.root / PARTS / f"b{b:06d}"
        status = self.spool[b][i]
        if name == "runs":
            return folder / f"{rid}.{status}{PART}"
        path = folder / f"{rid}.{name}{PART}"
        return path if status == OK and path.is_file() else None

    def build(self, b: int) -> None:
        """Write block ``b``'s files from its spool (and its earlier file, whose runs the
        spool does not replace), append its index line, remove its spool."""
        self._writing()
        lo, hi = b * self.B, min(self.n, (b + 1) * self.B)
        spooled = self.spool.get(b, {})
        status = ["?"] * (hi - lo)
        errors: dict[str, str] = {}
        files: dict[str, dict[str, Any]] = {}
        staged: dict[str, Path] = {}
        try:
            for name in self.tables:
                old = self.root / block_file(name, b)
                old = old if b in self.blocks and old.is_file() else None
                schemas = [_part_schema(p) for i in range(lo, hi) if i in spooled
                           and (p := self._spool_path(b, i, name)) is not None]
                if old is not None:
                    schemas.append(pq.read_schema(str(old)))
                if not schemas:
                    continue
                writer = _BlockWriter(self.root / block_file(name, b), name, _union(schemas))
                try:
                    earlier = _runs_of(old) if old is not None else iter(())
                    head = next(earlier, None)
                    for i in range(lo, hi):
                        rid = self.run_ids[i]
                        rows = None
                        if head is not None and head[0] == rid:
                            rows = head[1]
                            head = next(earlier, None)
                        if i in spooled:
                            path = self._spool_path(b, i, name)
                            rows = read_part(path) if path is not None else None
                        if rows is None:
                            continue
                        if name == "runs":
                            status[i - lo] = "o" if rows.column("status")[0].as_py() == OK \
                                else "f"
                            if status[i - lo] == "f":
                                errors[rid] = rows.column("error")[0].as_py()
                        writer.add(rows)
                    files[name] = writer.close()
                except BaseException:
                    writer.abort()
                    raise
                staged[name] = writer.tmp
            if "?" in status:  # cannot happen: every run of a block is done when it is built
                raise RuntimeError(f"block {b} of {self.root}: run "
                                   f"{self.run_ids[lo + status.index('?')]} is not done")
            rec = {"block": b, "first": self.run_ids[lo], "status": "".join(status),
                   "errors": errors, "files": files}
            with interrupts_deferred():
                for name, tmp in staged.items():
                    os.replace(tmp, self.root / block_file(name, b))
                staged = {}
                _append_index(self.root / PARTS / BLOCKS, rec)
        finally:
            for tmp in staged.values():
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
        self.blocks[b] = rec
        self.spool.pop(b, None)
        shutil.rmtree(self.root / PARTS / f"b{b:06d}", ignore_errors=True)
        give_back_memory()  # what the block held

    def finish(self) -> None:
        """Make ``runs.parquet`` from the runs blocks; give every block file of a trace table
        the table's columns (the few that differ are copied)."""
        self._writing()
        runs = [self.root / block_file("runs", b) for b in sorted(self.blocks)
                if "runs" in self.blocks[b].get("files", {})]
        if runs:
            schema = _union([pq.read_schema(str(p)) for p in runs])
            writer = _BlockWriter(self.root / dataset_dir("runs"), "runs", schema)
            try:
                for path in runs:
                    for batch in pq.ParquetFile(str(path)).iter_batches(batch_size=65_536):
                        writer.add(pa.Table.from_batches([batch]))
                self.runs_file = writer.close()
            except BaseException:
                writer.abort()
                raise
            os.replace(writer.tmp, self.root / dataset_dir("runs"))
        for name in self.tables[1:]:
            have = [(b, self.root / block_file(name, b)) for b in sorted(self.blocks)
                    if name in self.blocks[b].get("files", {})]
            schemas = [pq.read_schema(str(p)) for _, p in have]
            if not schemas:
                continue
            union = _union(schemas)
            for (b, path), schema in zip(have, schemas, strict=True):
                if schema.remove_metadata().equals(union):
                    continue
                writer = _BlockWriter(path, name, union)
                try:
                    for _, rows in _runs_of(path):
                        writer.add(rows)
                    info = writer.close()
                except BaseException:
                    writer.abort()
                    raise
                rec = dict(self.blocks[b], files={**self.blocks[b]["files"], name: info})
                with interrupts_deferred():
                    os.replace(writer.tmp, path)
                    _append_index(self.root / PARTS / BLOCKS, rec)
                self.blocks[b] = rec

    def files(self) -> list[dict[str, Any]]:
        """The dataset's files (path, rows, bytes, SHA-256): ``runs.parquet``, then each
        trace table's block files in block order (after :meth:`finish`)."""
        runs = ([{"path": dataset_dir("runs"), **self.runs_file}]
                if self.runs_file is not None else [])
        return runs + [{"path": block_file(name, b), **self.blocks[b]["files"][name]}
                       for name in self.tables[1:] for b in sorted(self.blocks)
                       if name in self.blocks[b].get("files", {})]

    def failures(self) -> list[tuple[str, str | None]]:
        """(run_id, error) of every failed run, in run order."""
        out = []
        for b in sorted(self.blocks):
            rec = self.blocks[b]
            for k, c in enumerate(rec["status"]):
                if c == "f":
                    rid = self.run_ids[b * self.B + k]
                    out.append((rid, rec.get("errors", {}).get(rid)))
        return out


def _trim_index(path: Path) -> None:
    """Cut a line left unfinished by a killed writer, so the next line starts a line."""
    with contextlib.suppress(FileNotFoundError), open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


def _append_index(path: Path, rec: dict[str, Any]) -> None:
    line = (json.dumps(rec, separators=(",", ":"), allow_nan=True) + "\n").encode()
    with open(path, "ab") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def _remove_run(folder: Path, rid: str) -> None:
    for f in folder.glob(f"{rid}.*{PART}"):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()


class Store:
    """A sweep's results directory."""

    def __init__(self, outdir: str | os.PathLike[str], kind: str = "sweep",
                 force: bool = False):
        self.created = results.new_root(outdir)  # what discard() may remove again
        self.dir = results.claim(outdir, kind, force=force)
        self.parts = self.dir / PARTS

    def lock(self) -> None:
        """Hold ``parts/.lock`` until this process ends (or :meth:`unlock`): a second sweep
        writing the same directory at the same time is refused, naming the first's process
        (both would write the same blocks and remove each other's spool)."""
        try:
            import fcntl
        except ImportError:  # not a POSIX system: no lock
            return
        self.parts.mkdir(exist_ok=True)
        path = self.parts / LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise results.OutdirError(f"{self.dir}: another spikelab process (pid {holder}) "
                                      f"is writing this sweep; wait for it to end, or stop "
                                      f"it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock = fd

    def unlock(self) -> None:
        fd = getattr(self, "_lock", None)
        if fd is not None:
            self._lock = None
            os.close(fd)  # releases the lock; the file stays (removing it would race)

    def clear(self) -> None:
        """Remove every file an earlier result wrote here (its dataset, spool and index,
        figures, reports, manifest; files its manifest listed), so nothing of it can be
        served again. A study's copy of its definition (``study/``) stays: it is written
        first."""
        results.discard_result(self.dir, keep=("study", "parts"))
        if self.parts.is_dir():
            for f in self.parts.iterdir():
                if f.is_dir() and not f.is_symlink():
                    shutil.rmtree(f)
                elif f.name != LOCK:
                    f.unlink()

    def claim(self, identity: dict[str, Any], fresh: bool) -> bool:
        """Record which sweep this directory holds; refuse to mix two sweeps. A new sweep
        (``fresh``, or a directory without one) starts from a clean directory. Returns
        whether the sweep is new here (False: it resumes)."""
        path = self.dir / SWEEP_JSON
        if path.is_file() and not fresh:
            old = _read_json(path)
            if old.get("fingerprint") != identity["fingerprint"]:
                raise ValueError(
                    f"{self.dir} holds results of a different sweep (scenario, sweep, seed, "
                    f"overrides, a trace file it reads, or the spikelab engine changed); use "
                    f"another directory or --fresh to start over")
            return False
        self.clear()
        self.parts.mkdir(exist_ok=True)
        results.write_json(identity, path)
        return True

    def discard(self) -> None:
        """Undo a new sweep that failed before any run finished: its files, ``parts/``, and
        the directory itself if this sweep created it and nothing else is in it."""
        self.clear()
        self.unlock()
        with contextlib.suppress(OSError):
            (self.parts / LOCK).unlink()
            self.parts.rmdir()  # only if empty
        results.remove_created(self.created)

    def holds(self, fingerprint: str) -> bool:
        """Whether this directory holds the sweep with this fingerprint (its sweep.json)."""
        with contextlib.suppress(OSError, ValueError):
            identity = json.loads((self.dir / SWEEP_JSON).read_text(encoding="utf-8"))
            return identity.get("fingerprint") == fingerprint
        return False

    def open(self, tasks: Sequence[RunTask], spec: SweepSpec) -> Ledger:
        """The sweep's progress (claimed first). A directory written before blocks (one part
        file per run in ``parts/``) is converted: its runs move to the spool."""
        identity = _read_json(self.dir / SWEEP_JSON)
        run_ids = [t.run_id for t in tasks]
        if identity.get("layout") != LAYOUT:
            identity = dict(identity, layout=LAYOUT, block_runs=block_runs(spec.trace))
            self._convert(run_ids, identity["block_runs"])
            results.write_json(identity, self.dir / SWEEP_JSON)
        return Ledger(self.dir, run_ids, spec.trace, int(identity["block_runs"]))

    def _convert(self, run_ids: Sequence[str], block: int) -> None:
        flat = [f for f in self.parts.glob(f"*{PART}")] if self.parts.is_dir() else []
        if not flat and not any((self.dir / f"{n}.parquet").is_file() for n in results.TABLES):
            return
        with contextlib.suppress(FileNotFoundError):
            (self.dir / results.MANIFEST).unlink()  # the tables are rewritten
        for name in results.TABLES:  # the old whole-sweep tables, written again as blocks
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                (self.dir / f"{name}.parquet").unlink()
        where = {rid: i // block for i, rid in enumerate(run_ids)}
        runs = [f for f in flat if "." not in f.name[: -len(PART)]]
        for f in runs:
            rid = f.name[: -len(PART)]
            b = where.get(rid)
            try:
                status = read_part(f).column("status")[0].as_py()
            except Exception:  # noqa: BLE001 - unreadable: not done (run again)
                b = None
            if b is None or status not in (OK, FAILED):
                continue
            folder = self.parts / f"b{b:06d}"
            folder.mkdir(exist_ok=True)
            for name in results.TABLES[1:]:
                trace = self.parts / f"{rid}.{name}{PART}"
                if trace.is_file():
                    os.replace(trace, folder / trace.name)
            os.replace(f, folder / f"{rid}.{status}{PART}")
        for f in self.parts.glob(f"*{PART}"):
            f.unlink()  # traces of runs not done

    def pcaps(self, run_ids: list[str]) -> list[dict[str, Any]]:
        """The captures of these runs (``sim.pcap``), as manifest entries (path, bytes)."""
        root = self.dir / PCAP_DIR
        if not root.is_dir():
            return []
        present = {e.name for e in os.scandir(root) if e.is_dir()}
        out = []
        for rid in run_ids:
            if rid in present:
                out += [{"path": f"{PCAP_DIR}/{rid}/{f.name}", "bytes": f.stat().st_size}
                        for f in sorted((root / rid).glob("*.pcapng"))]
        return out


def progress(outdir: str | os.PathLike[str]) -> tuple[int, int]:
    """(runs done, runs ok) of a sweep's directory, finished or not, from its index and
    spool (a run spooled and written into its block in between may count twice)."""
    parts = Path(outdir) / PARTS
    done = ok = 0
    blocks = _read_index(parts / BLOCKS)
    for rec in blocks.values():
        done += len(rec.get("status", ""))
        ok += rec.get("status", "").count("o")
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(parts):
            b = _block_of(entry.name)
            if b is None:
                continue
            for st in _spooled(Path(entry.path)).values():
                if b not in blocks:
                    done += 1
                    ok += st == OK
                elif st == OK:  # a failed run retried
                    ok += 1
    return done, ok


class _Lazy:
    """A field that may be given as a function returning its value: called on first use."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            raise AttributeError(self.slot)
        value = obj.__dict__[self.slot]
        if callable(value):
            value = value()
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = value


@dataclass(frozen=True)
class SweepResult:
    """A sweep's dataset: ``runs`` has one row per run × flow (failed runs: one row), read
    from the directory when first used."""

    dir: Path
    runs: pa.Table = _Lazy()  # type: ignore[assignment]
    manifest: dict[str, Any]

    def __repr__(self) -> str:
        return (f"SweepResult({str(self.dir)!r}, runs={self.manifest.get('runs_total', '?')}, "
                f"failed={self.failed}, rows={self.rows()}, "
                f"params={self.params() if 'sweep' in self.manifest else []})")

    @property
    def failed(self) -> int:
        return int(self.manifest.get("runs_failed", 0))

    @property
    def summary(self) -> pd.DataFrame:
        return self.runs.to_pandas()

    def to_pandas(self, name: str = "runs") -> pd.DataFrame:
        return self.table(name).to_pandas()

    def rows(self, name: str = "runs") -> int:
        """How many rows table ``name`` has, from the manifest (nothing is read)."""
        if name == "runs" and not callable(self.__dict__.get("_runs")):
            return self.runs.num_rows
        listed = [f for f in self.manifest.get("files", [])
                  if f["path"] == dataset_dir(name)
                  or f["path"].startswith(f"{dataset_dir(name)}/")]
        if listed and all("rows" in f for f in listed):
            return sum(f["rows"] for f in listed)
        return self.table(name).num_rows

    def table(self, name: str) -> pa.Table:
        if name == "runs":
            return self.runs
        if name not in results.TABLES:
            raise KeyError(f"no table {name!r}; tables are {', '.join(results.TABLES)}")
        path = self.dir / dataset_dir(name)
        if not path.exists():
            raise KeyError(f"{self.dir}: no {name} table (the sweep's trace level did not "
                           f"record it)")
        return read_table(path)

    def params(self) -> list[str]:
        return [p["name"] for p in self.manifest["sweep"]["params"]]


def dataset_files(outdir: str | os.PathLike[str], name: str) -> list[str]:
    """The files of a sweep's table ``name`` in run order: ``runs.parquet``, a trace table's
    block files (one file, for a sweep written before blocks); none when the sweep did not
    record the table."""
    path = Path(outdir) / dataset_dir(name)
    if path.is_dir():
        return sorted(str(f) for f in path.glob("part-*.parquet"))
    return [str(path)] if path.is_file() else []


def read_table(path: Path) -> pa.Table:
    """A complete dataset table (a folder of block files, or one file as sweeps wrote before
    blocks), dictionaries unified."""
    if path.is_dir():
        files = dataset_files(path.parent, path.name[: -len(".parquet")])
        if not files:
            return pa.table({})
        import pyarrow.dataset as ds

        return ds.dataset(files, format="parquet").to_table().unify_dictionaries() \
            .combine_chunks()
    return pq.read_table(path, memory_map=True)


def run_info(outdir: str | os.PathLike[str], manifest: dict[str, Any],
             run_id: str) -> tuple[int, list[str]]:
    """(seed, overrides) that repeat one run of a sweep alone."""
    entry = next(r for r in manifest["runs"] if r["run_id"] == run_id)
    if "overrides" in entry:  # manifests written before points.json
        return entry["seed"], list(entry["overrides"])
    points = json.loads((Path(outdir) / POINTS).read_text(encoding="utf-8"))
    overrides = next(pt["overrides"] for pt in points if pt["point"] == entry["point"])
    return entry["seed"], list(overrides)


def scenario_text(outdir: str | os.PathLike[str], manifest: dict[str, Any]) -> str:
    """The sweep's scenario text (inline in the manifest when small, else scenario.toml)."""
    if "scenario_text" in manifest:
        return manifest["scenario_text"]
    return (Path(outdir) / manifest.get("scenario_file", SCENARIO_COPY)).read_text(
        encoding="utf-8")


def is_sweep(outdir: str | os.PathLike[str]) -> bool:
    return (Path(outdir) / SWEEP_JSON).is_file()


def _read_json(path: Path) -> dict[str, Any]:
    """A sweep's JSON file (its identity, its manifest), or a one-line error naming it."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise results.OutdirError(f"{path}: not valid JSON ({exc}); the directory's sweep "
                                  f"cannot be read (use another directory, or --fresh to "
                                  f"start over)") from None
    if not isinstance(value, dict):
        raise results.OutdirError(f"{path}: not a spikelab sweep file (a JSON object was "
                                  f"expected)")
    return value


def load_sweep(outdir: str | os.PathLike[str]) -> SweepResult:
    """A sweep's dataset (its runs table read when first used); an unfinished sweep (killed,
    still running) is read from its written blocks and its spool."""
    outdir = Path(outdir)
    manifest_path = outdir / results.MANIFEST
    manifest = None
    if manifest_path.is_file():
        manifest = _read_json(manifest_path)
    if manifest is not None and manifest.get("status") != results.INTERRUPTED:
        return SweepResult(dir=outdir, runs=lambda: read_table(outdir / dataset_dir("runs")),
                           manifest=manifest)
    identity = _read_json(outdir / SWEEP_JSON)
    runs = _unfinished_runs(outdir)
    manifest = dict(identity, complete=False,
                    status=(manifest or {}).get("status", "running"))
    return SweepResult(dir=outdir, runs=runs, manifest=manifest)


def _unfinished_runs(outdir: Path) -> pa.Table:
    """The runs table of an unfinished sweep: the blocks its index lists, then the spooled
    runs (a spooled run replaces a failed row of its block), sorted by run."""
    parts = outdir / PARTS
    blocks = _read_index(parts / BLOCKS)
    spool: dict[str, Path] = {}
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(parts):
            if _block_of(entry.name) is not None and entry.is_dir():
                for rid, st in _spooled(Path(entry.path)).items():
                    spool[rid] = Path(entry.path) / f"{rid}.{st}{PART}"
            elif entry.name.endswith(PART) and "." not in entry.name[: -len(PART)]:
                spool[entry.name[: -len(PART)]] = Path(entry.path)  # before blocks
    tables = []
    written: set[str] = set()
    for b in sorted(blocks):
        path = outdir / block_file("runs", b)
        if not path.is_file():
            continue
        table = pq.read_table(path)
        ids = table.column("run_id").to_pylist()
        st = table.column("status").to_pylist()
        keep = [not (rid in spool and s != OK) for rid, s in zip(ids, st, strict=True)]
        written.update(rid for rid, s in zip(ids, st, strict=True) if s == OK)
        tables.append(table.filter(pa.array(keep)) if not all(keep) else table)
    for rid in sorted(spool):
        if rid not in written:
            with contextlib.suppress(Exception):  # removed meanwhile (its block written)
                tables.append(read_part(spool[rid]))
    if not tables:
        return pa.table({})
    merged = _concat(tables)
    return merged.sort_by("run_id")
