"""Run a sweep: every grid point × replication, on a local process pool or a Dask cluster.

The results directory (see docs/results.md, "Sweeps")::

    OUTDIR/sweep.json            the sweep's identity, written first (a rerun must match it)
    OUTDIR/parts/RUN.arrow       one file per finished run (ok or failed), written atomically
    OUTDIR/parts/RUN.TABLE.arrow its time series / packet events when traced
    OUTDIR/runs.parquet          all runs, one row per run × flow, sorted by run
    OUTDIR/timeseries.parquet    (traced sweeps) all runs' time series, with run_id
    OUTDIR/packets.parquet       (traced sweeps) all runs' packet events, with run_id
    OUTDIR/manifest.json         written last

A run counts as done when its part file exists. Killing the sweep at any moment loses at most
the runs in progress; the same command resumes it, skipping done runs and retrying failed ones.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from . import _core, results
from ._progress import SweepProgress
from ._tables import to_arrow
from .simulate import TRACE_LEVELS, ScenarioSource, _overrides, read_scenario
from .sweepspec import (RunTask, SweepSpec, check, digest_big, fingerprint, run_command,
                        sweep_table)

if TYPE_CHECKING:
    import pandas as pd

SWEEP_JSON = "sweep.json"
POINTS = "points.json"  # each grid point's overrides (by reference from the manifest)
SCENARIO_COPY = "scenario.toml"  # the sweep's scenario text, for repeating one run alone
PARTS = "parts"
INLINE_TEXT = 16_384  # characters of scenario text kept inline in the manifest
PART = ".arrow"  # Arrow IPC: a part is written and read back in well under a millisecond
FORMAT = 1
OK, FAILED = "ok", "failed"
# What an earlier result in a directory may have written there, removed when a new sweep
# starts in it (--fresh, or --force onto a run): tables, figures, reports. Studies keep their
# definition copy (study/), which is written before the sweep starts.
OLD_FILES = (*(f"{t}.parquet" for t in results.TABLES), POINTS, SWEEP_JSON, SCENARIO_COPY,
             "report.html", "report.md", "claims.json")
OLD_DIRS = (results.FIGURES, "runs-figures", "emulation", "compare")


# ---------------------------------------------------------------------------------- worker


def traced(trace: str) -> tuple[str, ...]:
    """The tables a sweep keeps per run at trace level ``trace`` (``runs`` always)."""
    return results.TABLES[: TRACE_LEVELS.index(trace) + 1]


# Test-only: the worker that picks up the run with this run_id kills itself with SIGSEGV
# before running it, so tests can check that a crashing run fails alone.
TEST_CRASH_ENV = "SPIKELAB_TEST_CRASH_RUN"


def execute(job: dict[str, Any]) -> dict[str, Any]:
    """Run one task in a worker process (pool or Dask); never raises for a bad run.

    Returns ``{"run_id", "status", "error", "tables": {name: pyarrow.Table}, "wall_s"}``.
    """
    out: dict[str, Any] = {"run_id": job["run_id"], "status": OK, "error": None,
                           "tables": {}, "wall_s": 0.0}
    if os.environ.get(TEST_CRASH_ENV) == job["run_id"]:
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
    try:
        sim = _core.Simulation(job["text"], list(job["overrides"]), job["base_dir"],
                               job["seed"], job["trace"])
        raw = sim.run()
        out["wall_s"] = float(raw["wall_s"])
        out["tables"] = {name: to_arrow(raw[name]) for name in traced(job["trace"])}
    except (_core.ScenarioError, _core.SimulationError) as exc:
        out.update(status=FAILED, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a failed run is data, not a crash
        out.update(status=FAILED, error=f"internal error: {exc}")
    return out


def _worker_init(parent: int) -> None:
    """Workers: Ctrl-C is the parent's to handle, and a worker whose parent died (e.g. the
    sweep was killed) exits instead of lingering, even in the middle of a run."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, name="spikelab-parent-watch", daemon=True).start()


# ---------------------------------------------------------------------------------- executors


def _worker_main(jobs_fd: int, out_fd: int, parent: int) -> None:
    """A sweep worker (its own process): runs the jobs it receives, one at a time, and sends
    back each outcome. Started by :class:`_Slot`; ends when its parent closes the pipe."""
    from multiprocessing.connection import Connection

    inbox = Connection(jobs_fd, writable=False)
    outbox = Connection(out_fd, readable=False)
    _worker_init(parent)
    while True:
        try:
            job = inbox.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        outcome = execute(job)
        try:
            outbox.send(outcome)
        except OSError:  # the parent is gone (killed or interrupted): nobody to tell
            return


# The worker is a fresh interpreter started with this code (not a fork, and not
# multiprocessing's spawn, which re-imports the caller's __main__ and refuses to start children
# of a Dask worker's daemonic process). argv: sys.path as JSON, the two pipe fds, parent pid.
_WORKER_CODE = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
                "from spikelab.sweep import _worker_main; "
                "_worker_main(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))")


def _signal_name(returncode: int | None) -> str:
    import signal

    if returncode is not None and returncode < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-returncode).name}"
        return f"signal {-returncode}"
    return f"exit status {returncode}"


class _Slot:
    """One worker process with its own pair of pipes: a crash, even a segfault, costs the run
    it was running and no other; the slot is then replaced by a new one."""

    def __init__(self) -> None:
        import subprocess
        from multiprocessing.connection import Connection

        job_r, job_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, json.dumps(sys.path), str(job_r),
                 str(out_w), str(os.getpid())],
                pass_fds=(job_r, out_w), stdin=subprocess.DEVNULL,
                # Its own process group: the terminal's Ctrl-C is for the sweep's process,
                # which stops the workers; none dies of it while starting up.
                process_group=0)
        except BaseException:
            for fd in (job_r, job_w, out_r, out_w):
                os.close(fd)
            raise
        os.close(job_r)
        os.close(out_w)
        self.send_conn = Connection(job_w, readable=False)
        self.conn = Connection(out_r, writable=False)  # readable at an outcome, or at death
        self.job: dict[str, Any] | None = None

    def give(self, job: dict[str, Any]) -> None:
        self.job = job
        try:
            self.send_conn.send(job)
        except OSError:  # it died while idle: the reader sees the end of its pipe
            pass

    def outcome(self) -> dict[str, Any] | None:
        """The running job's outcome once ``conn`` is readable; None when the worker died."""
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            return None
        except Exception:  # noqa: BLE001 - a half-sent outcome: the worker died mid-send
            return None

    def death(self) -> dict[str, Any]:
        """The failed outcome of the run whose worker died, naming how it died."""
        import subprocess

        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        job = self.job or {"run_id": "?"}
        return {"run_id": job["run_id"], "status": FAILED, "tables": {}, "wall_s": 0.0,
                "error": f"the worker process died with {_signal_name(self.proc.returncode)} "
                         f"during this run"}

    def stop(self, kill: bool = False) -> None:
        import subprocess

        if kill:
            with contextlib.suppress(OSError):
                self.proc.kill()
        else:
            with contextlib.suppress(OSError):
                self.send_conn.send(None)
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.send_conn.close()
        self.conn.close()


def _local(jobs: list[dict[str, Any]], workers: int) -> Iterator[dict[str, Any]]:
    """Yield results as they finish, from ``workers`` worker processes (also for one: a run
    that crashes its process, even by a segfault, fails alone and the sweep goes on)."""
    from multiprocessing.connection import wait as wait_any

    queue = list(reversed(jobs))
    slots: list[_Slot] = []
    try:
        for _ in range(min(workers, len(queue))):
            slots.append(_Slot())
        for slot in slots:
            if queue:
                slot.give(queue.pop())
        while any(slot.job is not None for slot in slots):
            busy = [slot for slot in slots if slot.job is not None]
            ready = wait_any([slot.conn for slot in busy])
            for slot in busy:
                if slot.conn not in ready:
                    continue
                outcome = slot.outcome()
                if outcome is None:
                    # The process died under this run: it alone fails; a new worker goes on.
                    outcome = slot.death()
                    slot.stop(kill=True)
                    slots[slots.index(slot)] = slot = _Slot()
                slot.job = None
                if queue:
                    slot.give(queue.pop())
                yield outcome
    finally:
        interrupted = sys.exc_info()[0] is not None
        for slot in slots:
            slot.stop(kill=interrupted)


# Dask workers run each job in a worker process of their own as well, so a crashing run fails
# alone instead of killing the Dask worker (which Dask would retry on others, losing their
# finished results). One idle slot per concurrently running task, kept for the next task.
_DASK_SLOTS: list[_Slot] = []
_DASK_LOCK = threading.Lock()


def execute_isolated(job: dict[str, Any]) -> dict[str, Any]:
    """:func:`execute` in a worker process of this (Dask worker) process."""
    with _DASK_LOCK:
        slot = _DASK_SLOTS.pop() if _DASK_SLOTS else None
    if slot is None:
        slot = _Slot()
    slot.give(job)
    outcome = slot.outcome()
    if outcome is None:
        outcome = slot.death()
        slot.stop(kill=True)
        return outcome
    slot.job = None
    with _DASK_LOCK:
        _DASK_SLOTS.append(slot)
    return outcome


@contextlib.contextmanager
def _dask_client(address: str, workers: int) -> Iterator[Any]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise RuntimeError("--dask needs the 'distributed' package: pip install "
                           "'dask[distributed]'") from None
    if address == "local":
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, preload=["spikelab.sweep"]) as cluster, \
                Client(cluster) as client:
            try:
                yield client
            except BaseException:
                # Interrupted: the cluster is ours; stop its worker processes at once (a
                # graceful close takes about a second) and let the close tidy up after them.
                _kill_local_workers(cluster)
                raise
    else:
        with Client(address, timeout="10s") as client:
            yield client


def _kill_local_workers(cluster: Any) -> None:
    """Stop a LocalCluster's worker processes at once, telling each nanny first not to restart
    its worker (``close_gracefully`` is Dask's signal for that)."""
    import logging
    import signal

    # What Dask logs while its workers vanish (lost keys, closed comms) is noise here.
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(nanny, "pid", None)
        with contextlib.suppress(Exception):
            nanny.close_gracefully(reason="spikelab-interrupted")
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def dask_setup(worker: Any) -> None:
    """Dask preload of our LocalCluster's workers: Ctrl-C at the terminal reaches every
    process of the foreground group; the sweep's own process handles it and stops the
    workers, which would otherwise quit (and be restarted by their nannies) on their own."""
    import signal

    with contextlib.suppress(ValueError):  # only possible in the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _dask(jobs: list[dict[str, Any]], address: str, workers: int,
          tag: str) -> Iterator[dict[str, Any]]:
    from distributed import as_completed

    with _dask_client(address, workers) as client:
        futures = {client.submit(execute_isolated, job, key=f"spikelab-{tag}-{job['run_id']}",
                                 pure=False): job for job in jobs}
        try:
            for fut in as_completed(list(futures)):
                job = futures[fut]
                try:
                    yield fut.result()
                except Exception as exc:  # the task or its worker failed
                    yield {"run_id": job["run_id"], "status": FAILED, "tables": {},
                           "wall_s": 0.0, "error": f"dask: {type(exc).__name__}: {exc}"}
        except BaseException:
            client.cancel(list(futures))
            raise


# ---------------------------------------------------------------------------------- store


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
    return pa.table(cols)


def write_part(table: pa.Table, path: Path) -> None:
    def write(tmp: Path) -> None:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)

    results.atomic_write(path, write)


def read_part(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _with_run_id(table: pa.Table, run_id: str) -> pa.Table:
    return table.add_column(0, "run_id", pa.array([run_id] * table.num_rows, pa.string()))


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
        self.dir = results.claim(outdir, kind, force=force)
        self.parts = self.dir / PARTS

    def clear(self) -> None:
        """Remove every file an earlier result wrote here (parts, dataset tables, figures,
        reports, manifest; files its manifest listed), so nothing of it can be served again.
        A study's copy of its definition (``study/``) stays: it is written first."""
        import shutil

        old = results._previous_manifest(self.dir)  # noqa: SLF001
        with contextlib.suppress(FileNotFoundError):
            (self.dir / results.MANIFEST).unlink()
        for entry in (old or {}).get("files", []):
            name = entry.get("path", "")
            if name and not name.startswith(("/", "..")):
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    (self.dir / name).unlink()
        for name in OLD_FILES:
            with contextlib.suppress(FileNotFoundError):
                (self.dir / name).unlink()
        for name in OLD_DIRS:
            if (self.dir / name).is_dir():
                shutil.rmtree(self.dir / name)
        if self.parts.is_dir():
            for f in self.parts.iterdir():
                if f.is_file():
                    f.unlink()

    def claim(self, identity: dict[str, Any], fresh: bool) -> None:
        """Record which sweep this directory holds; refuse to mix two sweeps. A new sweep
        (``fresh``, or a directory without one) starts from a clean directory."""
        path = self.dir / SWEEP_JSON
        if self.parts.is_dir():
            # Temporary files of a writer that was killed: never complete, never needed.
            for f in self.parts.glob(".*.tmp"):
                f.unlink()
        if path.is_file() and not fresh:
            old = json.loads(path.read_text(encoding="utf-8"))
            if old.get("fingerprint") != identity["fingerprint"]:
                raise ValueError(
                    f"{self.dir} holds results of a different sweep (scenario, sweep, seed "
                    f"or overrides changed); use another directory or --fresh to start over")
            return
        self.clear()
        self.parts.mkdir(exist_ok=True)
        results.write_json(identity, path)

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


# ---------------------------------------------------------------------------------- API


@dataclass(frozen=True)
class SweepResult:
    """A sweep's dataset: ``runs`` has one row per run × flow (failed runs: one row)."""

    dir: Path
    runs: pa.Table
    manifest: dict[str, Any]

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
        path = self.dir / f"{name}.parquet"
        if not path.is_file():
            raise KeyError(f"{self.dir}: no {name} table (the sweep's trace level did not "
                           f"record it)")
        return pq.read_table(path, memory_map=True)

    def params(self) -> list[str]:
        return [p["name"] for p in self.manifest["sweep"]["params"]]


@dataclass(frozen=True)
class Plan:
    text: str
    base_dir: str
    spec: SweepSpec
    tasks: list[RunTask]
    identity: dict[str, Any]
    scenario: dict[str, Any]
    source: str | None = None
    """The scenario's file path, when it was given as one."""


def plan(scenario: ScenarioSource, *, seed: int | None = None, overrides: Iterable[str] = (),
         sweep_spec: Any = None, trace: str | None = None) -> Plan:
    """Expand a scenario's ``[sweep]`` (or ``sweep_spec``, a dict) into its runs."""
    text, base_dir = read_scenario(scenario)
    extra = tuple(_overrides(overrides))
    base = json.loads(_core.resolve(text, list(extra), base_dir))  # the base must be valid
    table = sweep_spec if sweep_spec is not None else sweep_table(text)
    spec = SweepSpec.parse(table)
    if trace is not None:
        spec = SweepSpec(params=spec.params, mode=spec.mode, replications=spec.replications,
                         trace=SweepSpec.parse({"trace": trace}).trace)
    base_seed = check(text, base_dir, spec, extra, seed, base)
    tasks = spec.tasks(base_seed, extra)
    identity = {"format": FORMAT, "kind": "sweep",
                "fingerprint": fingerprint(text, spec, base_seed, extra),
                "seed": base_seed, "overrides": list(extra),
                "sweep": spec.describe(compact=True), "runs": len(tasks)}
    source = str(scenario) if not (isinstance(scenario, str) and text == scenario) else None
    return Plan(text=text, base_dir=base_dir, spec=spec, tasks=tasks, identity=identity,
                scenario=base, source=source)


def sweep(
    scenario: ScenarioSource,
    out: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    dask: str | None = None,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    sweep_spec: Any = None,
    trace: str | None = None,
    fresh: bool = False,
    progress: bool | None = None,
    on_result: Callable[[RunTask, dict[str, Any]], None] | None = None,
    force: bool = False,
    kind: str = "sweep",
) -> SweepResult:
    """Run every grid point × replication of a scenario's ``[sweep]`` into ``out``.

    ``jobs``: worker processes (default: all cores). ``dask``: ``"local"`` for a Dask
    ``LocalCluster`` of ``jobs`` worker processes, or a scheduler address
    (``tcp://host:8786``); workers need spikelab installed and the scenario's trace files at
    the same paths. Resumes a sweep already in ``out`` (done runs are skipped, failed runs are
    retried); ``fresh=True`` discards it (every table, part and figure of it). Failed runs
    are recorded with their error and do not stop the sweep; check ``result.failed``. ``out``
    must not hold another kind of result (a single run) unless ``force``. Interrupted
    (KeyboardInterrupt), the manifest says ``interrupted`` and how many runs are done; the
    same call resumes.
    """
    p = plan(scenario, seed=seed, overrides=overrides, sweep_spec=sweep_spec, trace=trace)
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    if workers < 1:
        raise ValueError(f"jobs must be >= 1, got {workers}")
    store = Store(out, kind, force)
    bar = None
    stream: Iterator[dict[str, Any]] = iter(())
    try:
        store.claim(dict(p.identity, kind=kind), fresh)
        with contextlib.suppress(FileNotFoundError):
            (store.dir / results.MANIFEST).unlink()  # present only when the dataset is complete
        _write_points(store, p)
        done = store.done()
        todo = [t for t in p.tasks if done.get(t.run_id) != OK]
        by_id = {t.run_id: t for t in p.tasks}
        jobs_ = [{"run_id": t.run_id, "text": p.text, "base_dir": p.base_dir, "seed": t.seed,
                  "overrides": list(t.overrides), "trace": p.spec.trace} for t in todo]
        bar = SweepProgress(len(p.tasks), len(p.tasks) - len(todo), progress)
        executor = (f"dask {dask}" if dask
                    else f"local pool of {min(workers, max(1, len(todo)))}")
        start = time.monotonic()
        core_wall = 0.0
        written: dict[str, dict[str, pa.Table]] = {}
        stream = (iter(()) if not jobs_  # all done: resumed after the last run, or empty
                  else _dask(jobs_, dask, workers, p.identity["fingerprint"][:12]) if dask
                  else _local(jobs_, min(workers, len(jobs_))))
        for outcome in stream:
            task = by_id[outcome["run_id"]]
            written[task.run_id] = store.write_part(task, p.spec, outcome)
            core_wall += outcome.get("wall_s", 0.0)
            bar.update(outcome["status"] == OK)
            if on_result is not None:
                on_result(task, outcome)
        bar.close()
        bar = None
        # Interrupted while the dataset is consolidated, the parts are all there: the
        # manifest says interrupted and the same call writes the tables again.
        return finish(store, p, executor=executor, wall_s=time.monotonic() - start,
                      core_wall_s=core_wall, workers=workers, fresh=written, kind=kind)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
            bar = None
        # Stop the workers now (a signal that lands outside the executor's generator would
        # otherwise leave them to the garbage collector), then record what is done.
        with contextlib.suppress(Exception):
            stream.close()  # type: ignore[attr-defined]
        if store.holds(p.identity["fingerprint"]) and _status(store.dir) != results.COMPLETE:
            _write_interrupted(store, p, kind)
        raise
    finally:
        if bar is not None:
            bar.close()


def _status(outdir: Path) -> str | None:
    """The ``status`` of the manifest in ``outdir``, if there is one."""
    with contextlib.suppress(OSError, ValueError):
        return json.loads((outdir / results.MANIFEST).read_text(encoding="utf-8")).get("status")
    return None


def _write_points(store: Store, p: Plan) -> None:
    """``points.json``: each grid point's overrides (the manifest refers to it), and a copy
    of the scenario text, so any run can be repeated alone."""
    points: dict[int, list[str]] = {}
    for t in p.tasks:
        points.setdefault(t.point, list(t.overrides))
    results.write_json([{"point": k, "overrides": v} for k, v in sorted(points.items())],
                       store.dir / POINTS)
    results.atomic_write(store.dir / SCENARIO_COPY,
                         lambda tmp: tmp.write_text(p.text, encoding="utf-8"))


def _manifest_head(p: Plan, kind: str, status: str) -> dict[str, Any]:
    """The keys every sweep manifest starts with."""
    return {
        "format": FORMAT,
        "kind": kind,
        "status": status,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "fingerprint": p.identity["fingerprint"],
    }


def _write_interrupted(store: Store, p: Plan, kind: str) -> None:
    done = store.done()
    manifest = {
        **_manifest_head(p, kind, results.INTERRUPTED),
        "runs_total": len(p.tasks),
        "runs_done": len(done),
        "runs_ok": sum(s == OK for s in done.values()),
        "note": "interrupted: finished runs are in parts/; the same command resumes the rest",
        "files": [],
    }
    results.write_interrupted(store.dir, manifest)


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


def repeat_command(outdir: str | os.PathLike[str], manifest: dict[str, Any],
                   run_id: str) -> list[str]:
    """The ``spikelab run`` command line that repeats one run of a sweep alone."""
    seed, overrides = run_info(outdir, manifest, run_id)
    source = manifest.get("scenario_path") or str(Path(outdir) / SCENARIO_COPY)
    return run_command(overrides, seed, source)


def finish(store: Store, p: Plan, *, executor: str, wall_s: float, core_wall_s: float,
           workers: int, fresh: dict[str, dict[str, pa.Table]] | None = None,
           kind: str = "sweep") -> SweepResult:
    """Consolidate the parts into the dataset and write manifest.json last."""
    files = store.consolidate(p.tasks, p.spec.trace, fresh)
    runs = files["runs.parquet"]
    status = dict(zip(runs.column("run_id").to_pylist(), runs.column("status").to_pylist(),
                      strict=True))
    errors = {}
    if "error" in runs.column_names:
        for rid, err in zip(runs.column("run_id").to_pylist(),
                            runs.column("error").to_pylist(), strict=True):
            if err is not None:
                errors.setdefault(rid, err)
    failed = sorted(rid for rid, s in status.items() if s != OK)
    manifest = {
        **_manifest_head(p, kind, results.COMPLETE),
        "seed": p.identity["seed"],
        "overrides": p.identity["overrides"],
        "sweep": p.identity["sweep"],
        "seed_rule": "replication r of every grid point runs with seed base + r",
        "runs_total": len(p.tasks),
        "runs_ok": len(p.tasks) - len(failed),
        "runs_failed": len(failed),
        "failures": [{"run_id": rid, "error": errors.get(rid)} for rid in failed],
        "executor": executor,
        "jobs": workers,
        "wall_s": wall_s,
        "core_wall_s": core_wall_s,
        "versions": {"spikelab": _core.__version__, "python": platform.python_version(),
                     "pyarrow": pa.__version__},
        "platform": platform.platform(),
        # Long arrays (profiles, traces) by digest: the whole scenario is in scenario.toml.
        "scenario": digest_big(p.scenario, SCENARIO_COPY),
        # The text inline when small; always in scenario.toml beside the manifest.
        **({"scenario_text": p.text} if len(p.text) <= INLINE_TEXT else {}),
        "scenario_file": SCENARIO_COPY,
        "scenario_path": p.source,
        "runs": [{"run_id": t.run_id, "seed": t.seed, "point": t.point} for t in p.tasks],
        "points": POINTS,
        "files": [],
    }
    manifest["files"] = results._describe(store.dir,  # noqa: SLF001
                                          [*files, POINTS, SCENARIO_COPY])
    results.write_json(manifest, store.dir / results.MANIFEST)
    return SweepResult(dir=store.dir, runs=runs, manifest=manifest)


def is_sweep(outdir: str | os.PathLike[str]) -> bool:
    return (Path(outdir) / SWEEP_JSON).is_file()


def load_sweep(outdir: str | os.PathLike[str]) -> SweepResult:
    """A sweep's dataset; an unfinished sweep (killed, still running) is read from its parts."""
    outdir = Path(outdir)
    manifest_path = outdir / results.MANIFEST
    manifest = None
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest is not None and manifest.get("status") != results.INTERRUPTED:
        return SweepResult(dir=outdir, runs=pq.read_table(outdir / "runs.parquet"),
                           manifest=manifest)
    identity = json.loads((outdir / SWEEP_JSON).read_text(encoding="utf-8"))
    parts = sorted(f for f in (outdir / PARTS).glob(f"*{PART}")
                   if "." not in f.name[: -len(PART)])
    runs = _concat([read_part(f) for f in parts])
    manifest = dict(identity, complete=False,
                    status=(manifest or {}).get("status", "running"))
    return SweepResult(dir=outdir, runs=runs, manifest=manifest)
