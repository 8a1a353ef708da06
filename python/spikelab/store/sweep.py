"""A sweep's results directory: one part file per finished run, consolidated into the dataset.

    OUTDIR/sweep.json            the sweep's identity, written first (a rerun must match it)
    OUTDIR/parts/RUN.arrow       one file per finished run (ok or failed), written atomically
    OUTDIR/parts/RUN.TABLE.arrow its time series / packet events when traced
    OUTDIR/runs.parquet          all runs, one row per run × flow, sorted by run
    OUTDIR/timeseries.parquet    (traced sweeps) all runs' time series, with run_id
    OUTDIR/packets.parquet       (traced sweeps) all runs' packet events, with run_id
    OUTDIR/manifest.json         written last

A run counts as done when its part file exists; an unfinished sweep (killed, still running)
is read from its parts.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..scenario import TRACE_LEVELS
from . import results, schema

if TYPE_CHECKING:
    import pandas as pd

    from ..scenario.sweepspec import RunTask, SweepSpec

SWEEP_JSON = "sweep.json"
POINTS = "points.json"  # each grid point's overrides (by reference from the manifest)
SCENARIO_COPY = "scenario.toml"  # the sweep's scenario text, for repeating one run alone
PARTS = "parts"
PART = ".arrow"  # Arrow IPC: a part is written and read back in well under a millisecond
OK, FAILED = "ok", "failed"
PCAP_DIR = results.PCAP


def traced(trace: str) -> tuple[str, ...]:
    """The tables a sweep keeps per run at trace level ``trace`` (``runs`` always)."""
    return results.TABLES[: TRACE_LEVELS.index(trace) + 1]


def _param_array(value: Any, kind: str, n: int) -> pa.Array:
    types = {"bool": pa.bool_(), "int64": pa.int64(), "float64": pa.float64(),
             "string": pa.string()}
    return pa.array([value] * n, type=types[kind])


def part_table(task: RunTask, spec: SweepSpec, outcome: dict[str, Any]) -> pa.Table:
    """The runs rows of one finished run: identity, parameters, status, then metrics."""
    runs = outcome["tables"].get("runs")
    n = runs.num_rows if outcome["status"] == OK and runs is not None else 1
    cols: dict[str, pa.Array] = {
        "run_id": pa.array([task.run_id] * n, pa.string()),
        "point": pa.array([task.point] * n, pa.int32()),
        "replication": pa.array([task.replication] * n, pa.int32()),
        "seed": pa.array([task.seed] * n, pa.int64()),
    }
    for p in spec.params:
        cols[p.name] = _param_array(task.params[p.name], p.kind, n)
    cols["status"] = pa.array([outcome["status"]] * n, pa.string())
    cols["error"] = pa.array([outcome["error"]] * n, pa.string())
    if outcome["status"] == OK and runs is not None:
        for name in runs.column_names:
            if name not in cols:  # `seed` is already there; parameters never clash (plan)
                cols[name] = runs.column(name)
    # Every column's unit and description (the parameters': the field they set).
    return schema.annotate(pa.table(cols), "runs",
                           {p.name: schema.param_meta(p.key) for p in spec.params})


def write_part(table: pa.Table, path: Path) -> None:
    def write(tmp: Path) -> None:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)

    results.atomic_write(path, write)


def read_part(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _with_run_id(table: pa.Table, run_id: str) -> pa.Table:
    return schema.annotate(
        table.add_column(0, "run_id", pa.array([run_id] * table.num_rows, pa.string())), "runs")


def _concat(tables: list[pa.Table]) -> pa.Table:
    """Concatenate part tables; columns in order of first appearance, dictionaries unified."""
    if not tables:
        return pa.table({})
    order: list[str] = []
    for t in tables:
        order += [c for c in t.column_names if c not in order]
    merged = pa.concat_tables(tables, promote_options="default")
    merged = merged.select(order).unify_dictionaries().combine_chunks()
    return merged


class Store:
    """A sweep's results directory."""

    def __init__(self, outdir: str | os.PathLike[str], kind: str = "sweep",
                 force: bool = False):
        self.created = results.new_root(outdir)  # what discard() may remove again
        self.dir = results.claim(outdir, kind, force=force)
        self.parts = self.dir / PARTS

    def clear(self) -> None:
        """Remove every file an earlier result wrote here (parts, dataset tables, figures,
        reports, manifest; files its manifest listed), so nothing of it can be served again.
        A study's copy of its definition (``study/``) stays: it is written first."""
        results.discard_result(self.dir, keep=("study", "parts"))
        if self.parts.is_dir():
            for f in self.parts.iterdir():
                if f.is_file():
                    f.unlink()

    def claim(self, identity: dict[str, Any], fresh: bool) -> bool:
        """Record which sweep this directory holds; refuse to mix two sweeps. A new sweep
        (``fresh``, or a directory without one) starts from a clean directory. Returns
        whether the sweep is new here (False: it resumes)."""
        path = self.dir / SWEEP_JSON
        if self.parts.is_dir():
            # Temporary files of a writer that was killed: never complete, never needed.
            for f in self.parts.glob(".*.tmp"):
                f.unlink()
        if path.is_file() and not fresh:
            old = _read_json(path)
            if old.get("fingerprint") != identity["fingerprint"]:
                raise ValueError(
                    f"{self.dir} holds results of a different sweep (scenario, sweep, seed, "
                    f"overrides or a trace file it reads changed); use another directory or "
                    f"--fresh to start over")
            return False
        self.clear()
        self.parts.mkdir(exist_ok=True)
        results.write_json(identity, path)
        return True

    def discard(self) -> None:
        """Undo a new sweep that failed before any run finished: its files, ``parts/``, and
        the directory itself if this sweep created it and nothing else is in it."""
        self.clear()
        with contextlib.suppress(OSError):
            self.parts.rmdir()  # only if empty
        results.remove_created(self.created)

    def holds(self, fingerprint: str) -> bool:
        """Whether this directory holds the sweep with this fingerprint (its sweep.json)."""
        with contextlib.suppress(OSError, ValueError):
            identity = json.loads((self.dir / SWEEP_JSON).read_text(encoding="utf-8"))
            return identity.get("fingerprint") == fingerprint
        return False

    def done(self) -> dict[str, str]:
        """run_id -> status of every run with a part file."""
        out = {}
        if not self.parts.is_dir():
            return out
        for f in self.parts.glob(f"*{PART}"):
            stem = f.name[: -len(PART)]
            if "." in stem:
                continue
            try:
                status = read_part(f).column("status")[0].as_py()
            except Exception:  # noqa: BLE001 - unreadable: treat as not done (rerun)
                continue
            out[stem] = status
        return out

    def write_part(self, task: RunTask, spec: SweepSpec,
                   outcome: dict[str, Any]) -> dict[str, pa.Table]:
        """Write a finished run's parts; return them by table name."""
        parts = {}
        # Extra tables first: the runs part is the "done" marker.
        for name, table in outcome["tables"].items():
            if name != "runs" and outcome["status"] == OK:
                parts[name] = _with_run_id(table, task.run_id)
                write_part(parts[name], self.parts / f"{task.run_id}.{name}{PART}")
        parts["runs"] = part_table(task, spec, outcome)
        write_part(parts["runs"], self.parts / f"{task.run_id}{PART}")
        return parts

    def pcaps(self, run_ids: list[str]) -> list[dict[str, Any]]:
        """The captures of these runs (``sim.pcap``), as manifest entries (path, bytes)."""
        out = []
        for rid in run_ids:
            folder = self.dir / PCAP_DIR / rid
            if folder.is_dir():
                out += [{"path": f"{PCAP_DIR}/{rid}/{f.name}", "bytes": f.stat().st_size}
                        for f in sorted(folder.glob("*.pcapng"))]
        return out

    def consolidate(self, tasks: list[RunTask], trace: str,
                    fresh: dict[str, dict[str, pa.Table]] | None = None) -> dict[str, pa.Table]:
        """Write the dataset tables from the parts, in run order; return them by file name.
        ``fresh`` holds the parts this process wrote (run_id -> name -> table), so they are
        not read back from disk."""
        fresh = fresh or {}
        written = {}
        for name in traced(trace):
            suffix = "" if name == "runs" else f".{name}"
            tables = []
            for t in tasks:
                if name in fresh.get(t.run_id, {}):
                    tables.append(fresh[t.run_id][name])
                elif (self.parts / f"{t.run_id}{suffix}{PART}").is_file():
                    tables.append(read_part(self.parts / f"{t.run_id}{suffix}{PART}"))
            if not tables:
                continue
            written[f"{name}.parquet"] = _concat(tables)
            results.write_parquet(written[f"{name}.parquet"], self.dir / f"{name}.parquet")
        return written


@dataclass(frozen=True)
class SweepResult:
    """A sweep's dataset: ``runs`` has one row per run × flow (failed runs: one row)."""

    dir: Path
    runs: pa.Table
    manifest: dict[str, Any]

    def __repr__(self) -> str:
        return (f"SweepResult({str(self.dir)!r}, runs={self.manifest.get('runs_total', '?')}, "
                f"failed={self.failed}, rows={self.runs.num_rows}, "
                f"params={self.params() if 'sweep' in self.manifest else []})")

    @property
    def failed(self) -> int:
        return int(self.manifest.get("runs_failed", 0))

    @property
    def summary(self) -> pd.DataFrame:
        return self.runs.to_pandas()

    def to_pandas(self, name: str = "runs") -> pd.DataFrame:
        return self.table(name).to_pandas()

    def table(self, name: str) -> pa.Table:
        if name == "runs":
            return self.runs
        if name not in results.TABLES:
            raise KeyError(f"no table {name!r}; tables are {', '.join(results.TABLES)}")
        path = self.dir / f"{name}.parquet"
        if not path.is_file():
            raise KeyError(f"{self.dir}: no {name} table (the sweep's trace level did not "
                           f"record it)")
        return pq.read_table(path, memory_map=True)

    def params(self) -> list[str]:
        return [p["name"] for p in self.manifest["sweep"]["params"]]


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
    """A sweep's dataset; an unfinished sweep (killed, still running) is read from its parts."""
    outdir = Path(outdir)
    manifest_path = outdir / results.MANIFEST
    manifest = None
    if manifest_path.is_file():
        manifest = _read_json(manifest_path)
    if manifest is not None and manifest.get("status") != results.INTERRUPTED:
        return SweepResult(dir=outdir, runs=pq.read_table(outdir / "runs.parquet"),
                           manifest=manifest)
    identity = _read_json(outdir / SWEEP_JSON)
    parts = sorted(f for f in (outdir / PARTS).glob(f"*{PART}")
                   if "." not in f.name[: -len(PART)])
    runs = _concat([read_part(f) for f in parts])
    manifest = dict(identity, complete=False,
                    status=(manifest or {}).get("status", "running"))
    return SweepResult(dir=outdir, runs=runs, manifest=manifest)
