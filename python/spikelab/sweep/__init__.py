"""Run a sweep: every grid point × replication, on a local process pool or a Dask cluster
(:mod:`.workers`), into a sweep's results directory (:mod:`spikelab.store.sweep`; see
docs/results.md, "Sweeps").

A run counts as done once its tables are spooled (``parts/``); runs are written into the
dataset block by block as they finish, never all held at once. Killing the sweep at any moment
loses at most the runs in progress; the same command resumes it, skipping done runs and
retrying failed ones.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import platform
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from .. import _core
from .._progress import SweepProgress
from ..scenario import ScenarioSource, check_flags, check_outdir, read_scenario
from ..scenario import overrides_list as _overrides
from ..scenario.sweepspec import (
    RunTask,
    SweepSpec,
    check,
    digest_big,
    fingerprint,
    run_command,
    sweep_table,
    trace_files,
)
from ..store import results
from ..store.sweep import (
    LAYOUT,
    OK,
    PCAP_DIR,
    POINTS,
    SCENARIO_COPY,
    Ledger,
    Store,
    SweepResult,
    block_runs,
    dataset_dir,
    give_back_memory,
    progress as _progress,
    read_table,
    run_info,
)
from .workers import WorkerMismatch, _dask, _local, describe_target, is_dask_target

__all__ = ["Plan", "WorkerMismatch", "finish", "plan", "repeat_command", "sweep"]

log = logging.getLogger(__name__)

INLINE_TEXT = 16_384  # characters of scenario text kept inline in the manifest
FORMAT = 1



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
                "fingerprint": fingerprint(text, spec, base_seed, extra,
                                           trace_files(base, spec, base_dir)),
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
    dask: Any = None,
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

    ``jobs``: worker processes (default: all cores). ``dask``: where to run on Dask:
    ``"local"`` for a ``LocalCluster`` of ``jobs`` worker processes, a scheduler address
    (``tcp://host:8786``), a ``distributed.Client`` (used as it is and left open) or a
    cluster object (``LocalCluster``, ``SSHCluster``, dask-jobqueue's ``SLURMCluster``...;
    the sweep connects a client of its own and leaves the cluster running). Every worker
    must run this spikelab and Python (checked before any run: :class:`WorkerMismatch`) and
    see the scenario's trace files at the same paths (docs/results.md, "Sweeps on a
    cluster"). Resumes a sweep already in ``out`` (done runs are skipped, failed runs are
    retried); ``fresh=True`` discards it (every table, part and figure of it). Failed runs
    are recorded with their error and do not stop the sweep; check ``result.failed``. ``out``
    must not hold another kind of result (a single run) unless ``force``. Interrupted
    (KeyboardInterrupt), the manifest says ``interrupted`` and how many runs are done; the
    same call resumes. A new sweep that fails before any run finished (e.g. the Dask
    scheduler cannot be reached) removes what it wrote, and ``out`` if it created it.
    """
    check_flags(fresh=fresh, progress=progress, force=force)
    check_outdir(out)
    if dask is not None and not is_dask_target(dask):
        raise TypeError(f"dask must be 'local', a scheduler address, a distributed.Client or "
                        f"a Dask cluster object, got {type(dask).__name__}")
    p = plan(scenario, seed=seed, overrides=overrides, sweep_spec=sweep_spec, trace=trace)
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int)):
        raise TypeError(f"jobs must be an integer, got {jobs!r}")
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    if workers < 1:
        raise ValueError(f"jobs must be >= 1, got {workers}")
    store = Store(out, kind, force)
    bar = None
    stream: Iterator[dict[str, Any]] = iter(())
    ledger: Ledger | None = None
    new = False
    changed = False

    def changing() -> None:
        # The manifest is present only when the dataset is complete: it goes before the
        # first part or table of this call is written (a call that fails or is interrupted
        # before that leaves a complete dataset as it was).
        nonlocal changed
        if not changed:
            changed = True
            with contextlib.suppress(FileNotFoundError):
                (store.dir / results.MANIFEST).unlink()

    try:
        store.lock()
        new = store.claim(dict(p.identity, kind=kind, layout=LAYOUT,
                               block_runs=block_runs(p.spec.trace)), fresh)
        _write_points(store, p)
        ledger = store.open(p.tasks, p.spec)
        todo = ledger.todo()
        bar = SweepProgress(len(p.tasks), len(p.tasks) - len(todo), progress)
        executor = (describe_target(dask) if dask is not None
                    else f"local pool of {min(workers, max(1, len(todo)))}")
        log.info("sweep: %d runs, %d done before, %d to run on %s", len(p.tasks),
                 len(p.tasks) - len(todo), len(todo), executor)
        start = time.monotonic()
        core_wall = 0.0
        ledger.before_write = changing
        ledger.begin(todo)
        stream = (iter(()) if not todo  # all done: resumed after the last run, or empty
                  else _dask(_jobs(p, store, todo), dask, workers,
                             p.identity["fingerprint"][:12]) if dask is not None
                  else _local(_jobs(p, store, todo), min(workers, len(todo))))
        for outcome in stream:
            i = outcome["index"]
            task = p.tasks[i]
            ledger.record(i, task, p.spec, outcome)
            if outcome["status"] != OK:  # a failed run's captures are cut short
                shutil.rmtree(store.dir / PCAP_DIR / task.run_id, ignore_errors=True)
            core_wall += outcome.get("wall_s", 0.0)
            bar.update(outcome["status"] == OK)
            log.debug("run %s: %s", task.run_id, outcome["status"])
            if on_result is not None:
                on_result(task, outcome)
            outcome = None
            if bar.done % 256 == 0:
                give_back_memory()
        bar.close()
        bar = None
        changing()
        log.info("runs finished in %.1f s; writing the manifest", time.monotonic() - start)
        # Interrupted while the last blocks are written, the runs are all spooled: the
        # manifest says interrupted and the same call writes them again.
        return finish(store, p, ledger, executor=executor, wall_s=time.monotonic() - start,
                      core_wall_s=core_wall, workers=workers, kind=kind)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
            bar = None
        # Stop the workers now (a signal that lands outside the executor's generator would
        # otherwise leave them to the garbage collector), then record what is done.
        with contextlib.suppress(Exception):
            stream.close()  # type: ignore[attr-defined]
        if store.holds(p.identity["fingerprint"]) and _status(store.dir) != results.COMPLETE:
            _write_interrupted(store, p, kind, ledger)
        raise
    except BaseException:
        # A new sweep that failed before any run finished (an unreachable Dask scheduler, a
        # worker of another version) leaves no half-made directory behind.
        if new and not _progress(store.dir)[0]:
            store.discard()
        raise
    finally:
        if bar is not None:
            bar.close()
        store.unlock()


_RUNS_SLOT = "\x00runs\x00"


def _manifest_text(manifest: dict[str, Any]) -> str:
    """The manifest as JSON, indented, with one line per run in ``runs`` (indenting every key
    of a million runs made millions of small strings at once)."""
    head = json.dumps({**manifest, "runs": _RUNS_SLOT}, indent=2, allow_nan=True)
    rows = ",\n".join(f"    {json.dumps(r, allow_nan=True)}" for r in manifest["runs"])
    listed = f"[\n{rows}\n  ]" if rows else "[]"
    return head.replace(json.dumps(_RUNS_SLOT), listed, 1) + "\n"


def _jobs(p: Plan, store: Store, todo: list[int]) -> Iterator[dict[str, Any]]:
    """The jobs of the runs ``todo``, made as the executor takes them."""
    for i in todo:
        t = p.tasks[i]
        yield {"index": i, "run_id": t.run_id, "text": p.text, "base_dir": p.base_dir,
               "seed": t.seed, "overrides": list(t.overrides), "trace": p.spec.trace,
               "pcap_dir": str(store.dir / PCAP_DIR / t.run_id)}


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


def _write_interrupted(store: Store, p: Plan, kind: str, ledger: Ledger | None) -> None:
    # Counted again from the directory, not from ``ledger``: the interrupt may land inside
    # Ledger.record, after a run's part is in place and before the ledger counts it.
    done, ok = (Ledger(store.dir, ledger.run_ids, ledger.trace, ledger.B).counts()
                if ledger is not None else _progress(store.dir))
    manifest = {
        **_manifest_head(p, kind, results.INTERRUPTED),
        "runs_total": len(p.tasks),
        "runs_done": done,
        "runs_ok": ok,
        "note": "interrupted: finished runs are in parts/ and the dataset; the same command "
                "resumes the rest",
        "files": [],
    }
    results.write_interrupted(store.dir, manifest)


def repeat_command(outdir: str | os.PathLike[str], manifest: dict[str, Any],
                   run_id: str) -> list[str]:
    """The ``spikelab run`` command line that repeats one run of a sweep alone."""
    seed, overrides = run_info(outdir, manifest, run_id)
    source = manifest.get("scenario_path") or str(Path(outdir) / SCENARIO_COPY)
    return run_command(overrides, seed, source)


def finish(store: Store, p: Plan, ledger: Ledger, *, executor: str, wall_s: float,
           core_wall_s: float, workers: int, kind: str = "sweep") -> SweepResult:
    """Complete the dataset (every file with the table's columns) and write manifest.json
    last; the runs table is read when the result's ``runs`` is first used."""
    ledger.finish()
    failures = ledger.failures()
    failed_ids = {rid for rid, _ in failures}
    done, ok = ledger.counts()
    manifest = {
        **_manifest_head(p, kind, results.COMPLETE),
        "seed": p.identity["seed"],
        "overrides": p.identity["overrides"],
        "sweep": p.identity["sweep"],
        "seed_rule": "replication r of every grid point runs with seed base + r",
        "runs_total": len(p.tasks),
        "runs_ok": ok,
        "runs_failed": len(failures),
        # Finished by an earlier call of a resumed sweep and kept, not run again.
        "runs_reused": sum(1 for i in range(len(p.tasks))
                           if ledger.status[i] == 1 and not ledger.fresh[i]),
        "failures": [{"run_id": rid, "error": err} for rid, err in failures],
        "executor": executor,
        "jobs": workers,
        "wall_s": wall_s,
        "core_wall_s": core_wall_s,
        "versions": {"spikelab": _core.__build__, "python": platform.python_version(),
                     "pyarrow": pa.__version__},
        "platform": platform.platform(),
        # Long arrays (profiles, traces) by digest: the whole scenario is in scenario.toml.
        "scenario": digest_big(p.scenario, SCENARIO_COPY),
        # The text inline when small; always in scenario.toml beside the manifest.
        **({"scenario_text": p.text} if len(p.text) <= INLINE_TEXT else {}),
        "scenario_file": SCENARIO_COPY,
        "scenario_path": p.source,
        "runs": [{"run_id": t.run_id, "seed": t.seed, "point": t.point} for t in p.tasks],
        "pcaps": store.pcaps([t.run_id for t in p.tasks if t.run_id not in failed_ids]),
        "points": POINTS,
        "files": [],
    }
    manifest["files"] = ledger.files() + results._describe(  # noqa: SLF001
        store.dir, [POINTS, SCENARIO_COPY])
    text = _manifest_text(manifest)
    results.atomic_write(store.dir / results.MANIFEST,
                         lambda tmp: tmp.write_text(text, encoding="utf-8"))
    runs = store.dir / dataset_dir("runs")
    return SweepResult(dir=store.dir, runs=lambda: read_table(runs), manifest=manifest)


