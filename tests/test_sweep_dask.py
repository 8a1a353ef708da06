"""Sweeps on Dask as users deploy it (issue 40): a Client, a cluster object or an address;
workers of another spikelab or Python refused before any run; a bounded number of runs in
the cluster; a worker killed mid-sweep loses no run.

``--dask local`` against the local pool, interrupted Dask sweeps and crashing runs are in
tests/test_sweep.py and tests/test_interrupt_sweep.py."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import pytest

import spikelab
from spikelab.cli import main
from spikelab.sweep import WorkerMismatch

distributed = pytest.importorskip("distributed")

# 2 s of a lossy 2 Mbit/s path (seeds matter); about 0.05 s a run.
LOSSY = """
[sim]
duration = "2s"
seed = 3
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "2Mbps"
queue = 30
[[path.fwd.stage]]
type = "delay"
delay = "20ms"
[[path.fwd.stage]]
type = "loss"
model = "bernoulli"
p = 0.02
[[flow]]
[sweep]
replications = 3
[sweep.params]
"flow.tcp.variant" = ["reno", "sack"]
"""


def write(tmp_path: Path, text: str = LOSSY, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def cluster(n: int = 2, **kwargs):
    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                    dashboard_address=None, silence_logs=logging.CRITICAL,
                                    **kwargs)


def test_a_client_a_cluster_and_an_address_give_the_local_pools_dataset(tmp_path):
    scenario = write(tmp_path)
    local = spikelab.sweep(scenario, tmp_path / "local", jobs=1, progress=False)
    expected = (tmp_path / "local/runs.parquet").read_bytes()
    with cluster() as c, distributed.Client(c) as client:
        for name, target in (("client", client), ("cluster", c),
                             ("address", c.scheduler_address)):
            res = spikelab.sweep(scenario, tmp_path / name, dask=target, progress=False)
            assert res.failed == 0 and res.manifest["runs_ok"] == 6
            assert (tmp_path / name / "runs.parquet").read_bytes() == expected, name
            assert res.manifest["executor"] == f"dask {c.scheduler_address}"
        # The client and the cluster are the caller's: left open, workers still there.
        assert client.status == "running"
        assert len(client.scheduler_info()["workers"]) == 2
        assert client.submit(sum, [1, 2]).result() == 3
    assert local.failed == 0


def test_a_sweep_keeps_a_bounded_number_of_runs_in_the_cluster(tmp_path):
    """Backpressure: a 1-worker cluster holds at most 4 of the sweep's 30 runs at a time
    (2 per worker thread, at least 4), and each run's result is released once written."""
    text = LOSSY.replace("replications = 3", "replications = 15")
    held: list[int] = []
    with cluster(1) as c, distributed.Client(c) as client:
        def count(task, outcome) -> None:
            held.append(client.run_on_scheduler(
                lambda dask_scheduler: sum(1 for k in dask_scheduler.tasks
                                           if str(k).startswith("spikelab-"))))

        res = spikelab.sweep(write(tmp_path, text), tmp_path / "out", dask=client,
                             progress=False, on_result=count)
        assert res.manifest["runs_ok"] == 30
        # The one just finished (released when the next outcome is asked for) and the 4 in
        # flight; submitted all at once, the first count was 30.
        assert len(held) == 30 and max(held) <= 5
        assert client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0


@pytest.mark.parametrize("patch, named", [
    ("import spikelab._core\nspikelab._core.__build__ = '0.0.1+0'\n",
     "runs spikelab 0.0.1+0 on Python {py}, this process spikelab {ver} on Python {py}"),
    ("import platform\nplatform.python_version = lambda: '3.1.4'\n",
     "runs spikelab {ver} on Python 3.1.4, this process spikelab {ver} on Python {py}"),
])
def test_a_worker_of_another_spikelab_or_python_is_refused_before_any_run(
        tmp_path, capsys, patch, named):
    import platform

    preload = tmp_path / "other_version.py"
    preload.write_text(patch)
    scenario = write(tmp_path)
    ver, py = spikelab._core.__build__, platform.python_version()
    seen: list[str] = []
    with cluster(preload=[str(preload)]) as c:
        with pytest.raises(WorkerMismatch) as info:
            spikelab.sweep(scenario, tmp_path / "out", dask=c, progress=False,
                           on_result=lambda task, outcome: seen.append(task.run_id))
        message = str(info.value)
        assert len(message.splitlines()) == 1
        assert message.startswith("Dask worker tcp://127.0.0.1:")
        assert named.format(ver=ver, py=py) in message
        assert seen == [] and not (tmp_path / "out").exists()
        # The command line says it in one line, exit status 2.
        assert main(["sweep", str(scenario), "-o", str(tmp_path / "cli"), "--dask",
                     c.scheduler_address, "-q"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("spikelab: error: Dask worker ") and err.count("\n") == 1
        assert named.format(ver=ver, py=py) in err
        assert not (tmp_path / "cli").exists()


def test_a_worker_killed_mid_sweep_loses_no_run_and_runs_none_twice(tmp_path):
    """A 4-worker LocalCluster, one worker killed (SIGKILL) while runs are in flight: Dask
    runs its task again elsewhere; the sweep completes with every run exactly once."""
    text = LOSSY.replace("replications = 3", "replications = 12").replace(
        'duration = "2s"', 'duration = "20s"')  # about 0.3 s a run
    scenario = write(tmp_path, text)
    seen: list[str] = []
    killed: list[int] = []
    with cluster(4) as c, distributed.Client(c) as client:
        def kill_one(task, outcome) -> None:
            seen.append(task.run_id)
            if len(seen) >= 5 and not killed:
                busy = {w for w, keys in client.processing().items() if keys}
                nanny = next((n for n in c.workers.values() if n.worker_address in busy), None)
                if nanny is None:  # nothing in flight at this instant: at the next result
                    return
                killed.append(nanny.pid)
                os.kill(nanny.pid, signal.SIGKILL)

        res = spikelab.sweep(scenario, tmp_path / "out", dask=client, progress=False,
                             on_result=kill_one)
    assert killed, "a worker should have been killed"
    assert res.failed == 0 and res.manifest["runs_ok"] == 24
    assert sorted(seen) == sorted(set(seen)) and len(seen) == 24
    ids = res.runs.column("run_id").to_pylist()
    assert ids == sorted(set(ids)) and len(ids) == 24
    spikelab.sweep(scenario, tmp_path / "local", jobs=2, progress=False)
    assert (tmp_path / "out/runs.parquet").read_bytes() == \
        (tmp_path / "local/runs.parquet").read_bytes()
