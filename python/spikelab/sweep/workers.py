"""Where a sweep's runs go: worker processes of this machine, or a Dask cluster.

Each run is one job (a dict: scenario text, overrides, seed, trace level) executed by
:func:`execute` in a worker process of its own, so a run that crashes its process, even by a
segfault, fails alone. The executors take the jobs from an iterator, keep a bounded number in
flight (one per local worker; twice the Dask cluster's threads) and yield each run's outcome
as it finishes; the next outcome is not asked for before the last one is written, and a Dask
future is released then.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from .. import _core
from ..store.arrow import to_arrow
from ..store.sweep import FAILED, OK, traced


# Test-only: the worker that picks up the run with this run_id kills itself with SIGSEGV
# before running it, so tests can check that a crashing run fails alone.
TEST_CRASH_ENV = "SPIKELAB_TEST_CRASH_RUN"


def execute(job: dict[str, Any]) -> dict[str, Any]:
    """Run one task in a worker process (pool or Dask); never raises for a bad run.

    Returns ``{"run_id", "status", "error", "tables": {name: pyarrow.Table}, "wall_s"}``.
    """
    out: dict[str, Any] = {"index": job.get("index"), "run_id": job["run_id"], "status": OK,
                           "error": None, "tables": {}, "wall_s": 0.0}
    if os.environ.get(TEST_CRASH_ENV) == job["run_id"]:
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
    try:
        sim = _core.Simulation(job["text"], list(job["overrides"]), job["base_dir"],
                               job["seed"], job["trace"])
        raw = sim.run(0, job.get("pcap_dir"))
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
                "from spikelab.sweep.workers import _worker_main; "
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
        return {"index": job.get("index"), "run_id": job["run_id"], "status": FAILED,
                "tables": {}, "wall_s": 0.0,
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


def _local(jobs: Iterator[dict[str, Any]], workers: int) -> Iterator[dict[str, Any]]:
    """Yield results as they finish, from ``workers`` worker processes (also for one: a run
    that crashes its process, even by a segfault, fails alone and the sweep goes on). Jobs
    are taken from ``jobs`` as workers free up."""
    from multiprocessing.connection import wait as wait_any

    jobs = iter(jobs)
    slots: list[_Slot] = []
    try:
        for _ in range(workers):
            job = next(jobs, None)
            if job is None:
                break
            slot = _Slot()
            slots.append(slot)
            slot.give(job)
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
                job = next(jobs, None)
                if job is not None:
                    slot.give(job)
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
    """:func:`execute` in a worker process of this (Dask worker) process; the outcome says
    which spikelab and Python ran it (``versions``) and where (``worker``)."""
    outcome = _execute_in_slot(job)
    outcome["versions"] = local_versions()
    with contextlib.suppress(Exception):
        from distributed import get_worker

        outcome["worker"] = get_worker().address
    return outcome


def _execute_in_slot(job: dict[str, Any]) -> dict[str, Any]:
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


class WorkerMismatch(ValueError):
    """A Dask worker runs another spikelab or Python than the sweep's process (one line)."""


def local_versions() -> dict[str, str]:
    """The spikelab engine build (version + source digest, ``_core.__build__``) and Python
    version of this process, as a sweep's manifest records them."""
    return {"spikelab": _core.__build__, "python": platform.python_version()}


# What a Dask worker is asked before any run (``client.run(eval, ...)``): builtins only, so
# that a worker with another spikelab, or none, answers instead of failing to unpickle a
# function of ours (a function is sent by reference and imported from the worker's spikelab).
_PROBE_PYTHON = "__import__('platform').python_version()"
# An engine from before ``__build__`` existed answers with its version.
_PROBE_SPIKELAB = ("(lambda m: getattr(m, '__build__', m.__version__))"
                   "(__import__('spikelab._core', fromlist=['_core']))")


def _same(theirs: dict[str, str], ours: dict[str, str]) -> bool:
    """Same spikelab engine build, and the same Python feature release (3.11.x: what pickles the jobs and
    outcomes; a patch release changes no result)."""
    return (theirs.get("spikelab") == ours["spikelab"]
            and str(theirs.get("python", "")).split(".")[:2] == ours["python"].split(".")[:2])


def _mismatch(worker: str, theirs: dict[str, str], ours: dict[str, str]) -> WorkerMismatch:
    minor = ".".join(ours["python"].split(".")[:2])
    return WorkerMismatch(
        f"Dask worker {worker} runs spikelab {theirs.get('spikelab', '?')} on Python "
        f"{theirs.get('python', '?')}, this process spikelab {ours['spikelab']} on Python "
        f"{ours['python']}: every worker needs spikelab {ours['spikelab']} and Python {minor}")


def check_workers(client: Any, ours: dict[str, str] | None = None) -> int:
    """Refuse (:class:`WorkerMismatch`) if a worker of ``client``'s cluster runs another
    spikelab or Python than this process; return how many workers were checked. Workers that
    join later are checked by each outcome they send (:func:`_dask`)."""
    ours = ours or local_versions()
    pythons = client.run(eval, _PROBE_PYTHON, on_error="return")
    spikelabs = client.run(eval, _PROBE_SPIKELAB, on_error="return")
    for worker in sorted(set(pythons) | set(spikelabs)):
        py, sl = pythons.get(worker, "?"), spikelabs.get(worker, "?")
        theirs = {"python": py if isinstance(py, str) else "?",
                  "spikelab": sl if isinstance(sl, str) else
                  f"(none importable: {type(sl).__name__}: {sl})".replace("\n", " ")}
        if not _same(theirs, ours):
            raise _mismatch(worker, theirs, ours)
    return len(pythons)


def is_dask_target(target: Any) -> bool:
    """Whether ``target`` is what ``dask=`` takes: ``"local"``, a scheduler address, a
    ``distributed.Client`` or a Dask cluster object (LocalCluster, SSHCluster, SLURMCluster,
    anything with a ``scheduler_address``)."""
    if isinstance(target, str):
        return bool(target.strip())
    module = type(target).__module__ or ""
    if module.split(".")[0] in ("distributed", "dask_jobqueue", "dask_kubernetes",
                                "dask_cloudprovider", "dask_gateway"):
        return True
    return hasattr(target, "scheduler_address")


def describe_target(target: Any) -> str:
    """How the manifest names the cluster: ``dask local``, ``dask tcp://host:8786``."""
    if isinstance(target, str):
        return f"dask {target}"
    address = getattr(target, "scheduler_address", None)
    if address is None:
        with contextlib.suppress(Exception):
            address = target.scheduler.address
    return f"dask {address or type(target).__name__}"


@contextlib.contextmanager
def _dask_client(target: Any, workers: int) -> Iterator[tuple[Any, bool]]:
    """A client of the cluster ``target`` names, and whether the cluster is this sweep's own
    (a LocalCluster it started: stopped at once when interrupted). A Client given is used as
    it is and left open; a cluster object given gets a client of its own, closed after."""
    try:
        import distributed
        from distributed import Client, LocalCluster
    except ImportError:
        raise RuntimeError("--dask needs Dask, an extra of spikelab: pip install "
                           "'spikelab[dask]'") from None
    if target == "local":
        import logging

        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=logging.CRITICAL,
                          preload=["spikelab.sweep.workers"]) as cluster, \
                Client(cluster) as client:
            try:
                yield client, True
            except BaseException:
                # Interrupted: the cluster is ours; stop its worker processes at once (a
                # graceful close takes about a second) and let the close tidy up after them.
                _kill_local_workers(cluster)
                raise
    elif isinstance(target, str):
        with Client(target, timeout="10s") as client:
            yield client, False
    elif isinstance(target, distributed.Client):
        yield target, False
    else:
        with Client(target) as client:
            yield client, False


def _quiet_teardown() -> None:
    """What Dask (and the tornado loop under it) logs while an interrupted sweep's tasks are
    cancelled and its workers vanish (lost keys, closed comms, a callback failing on a
    closing loop) is noise here: the sweep says "interrupted" itself. Raising the level of a
    few loggers is not enough: Dask's logging configuration gives children such as
    ``tornado.application`` levels of their own, so all logging of this (ending) process is
    switched off."""
    import logging

    logging.disable(logging.CRITICAL)


def _kill_local_workers(cluster: Any) -> None:
    """Stop a LocalCluster's worker processes at once, telling each nanny first not to restart
    its worker (``close_gracefully`` is Dask's signal for that)."""
    import signal

    _quiet_teardown()
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


def _window(client: Any) -> int:
    """Runs kept in flight on a Dask cluster: two per worker thread (one running, one
    waiting), at least 4; a cluster that grows gets more."""
    with contextlib.suppress(Exception):
        return max(4, 2 * sum(client.nthreads().values()))
    return 4


def _dask(jobs: Iterator[dict[str, Any]], target: Any, workers: int,
          tag: str) -> Iterator[dict[str, Any]]:
    """Yield outcomes from a Dask cluster, keeping :func:`_window` runs in flight: each run's
    future is released once the caller asks for the next outcome (it has written this one),
    so neither the cluster nor this process holds more than the window's results."""
    from distributed import as_completed

    jobs = iter(jobs)
    with _dask_client(target, workers) as (client, own):
        ours = local_versions()
        check_workers(client, ours)
        token = secrets.token_hex(3)  # a resumed sweep on the same client gets new keys
        inflight: dict[Any, dict[str, Any]] = {}
        pending = as_completed()
        window, sized = _window(client), time.monotonic()

        def fill() -> None:
            while len(inflight) < window:
                job = next(jobs, None)
                if job is None:
                    return
                fut = client.submit(execute_isolated, job, pure=False,
                                    key=f"spikelab-{job['run_id']}-{tag}-{token}")
                inflight[fut] = job
                pending.add(fut)

        try:
            fill()
            for fut in pending:
                job = inflight.pop(fut)
                try:
                    outcome = fut.result()
                except Exception as exc:  # the task or its worker failed
                    outcome = {"index": job.get("index"), "run_id": job["run_id"],
                               "status": FAILED, "tables": {}, "wall_s": 0.0,
                               "error": f"dask: {type(exc).__name__}: {exc}"}
                else:
                    theirs = outcome.get("versions") or {}
                    if not _same(theirs, ours):  # a worker that joined after the check
                        raise _mismatch(str(outcome.get("worker", "?")), theirs, ours)
                if time.monotonic() - sized > 5.0:
                    window, sized = _window(client), time.monotonic()
                fill()
                yield outcome
                fut.release()
                del fut
        except BaseException:
            if own:
                _quiet_teardown()
            with contextlib.suppress(Exception):
                client.cancel(list(inflight))
            raise
