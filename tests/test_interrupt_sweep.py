"""Interrupting sweeps and studies (issue 10, item 2): Ctrl-C or SIGTERM stops the command
within a second with exit status 130, leaves manifest.json marked ``interrupted`` with the runs
done so far, no temporary file and no worker process (the local pool's, Dask's, or their own
workers'), and the same command resumes to the dataset an uninterrupted sweep writes.

The local pool at -j1 / -j2 and SIGTERM are in tests/test_sweep.py; here: a Dask cluster, a
study, and an interruption while the finished runs are consolidated into the dataset."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import spikelab
from spikelab.store import results
from spikelab.store import sweep as sweep_store
from spikelab.store.sweep import progress
from conftest import PROMPT_EXIT_S

# 20 s of a lossy 2 Mbit/s path (random numbers drawn, so seeds matter): about 0.2-0.5 s a run.
SCENARIO = """
[sim]
duration = "20s"
seed = 5
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
replications = 6
[sweep.params]
"flow.tcp.variant" = ["reno", "sack"]
"path.fwd.delay.delay" = ["20ms", "60ms"]
"""
RUNS = 24


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children...)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            with contextlib.suppress(OSError):
                kids = [int(k) for k in (task / "children").read_text().split()]
                out += kids
                todo += kids
    return out


def alive_after(pids: list[int], wait_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + wait_s
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if Path(f"/proc/{p}").exists()]


def interrupt(cmd: list[str], out: Path, sig: int = signal.SIGINT, n: int = 2):
    """Start ``cmd``; once ``n`` runs are done, send ``sig``. Returns (process, stderr,
    seconds from the signal to the exit, every process below it just before the signal)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        if progress(out)[0] >= n:
            break
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()
    below = descendants(proc.pid)
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc, err, time.monotonic() - sent, below


def check_interrupted(out: Path, kind: str) -> int:
    """The interrupted directory's manifest and files; returns how many runs it kept."""
    kept = progress(out)[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == kind and manifest["status"] == "interrupted"
    assert manifest["runs_done"] == kept and manifest["files"] == []
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert results.kind_of(out) == kind
    return kept


def frame(table):
    cols = [c for c in table.column_names if c != "error"]
    return table.select(cols).to_pandas()


def test_an_interrupted_dask_sweep_stops_within_a_second_and_resumes(tmp_path):
    pytest.importorskip("distributed")
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    proc, err, took, below = interrupt(
        [sys.executable, "-m", "spikelab", "sweep", str(scenario), "-o", str(out), "-j", "2",
         "--dask", "local", "--no-plots"], out)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "spikelab: interrupted", err
    assert "Traceback" not in err
    assert took < PROMPT_EXIT_S, took
    kept = check_interrupted(out, "sweep")
    assert 2 <= kept < RUNS
    assert below, "a Dask LocalCluster runs worker processes"
    assert not alive_after(below), "Dask workers (or their run workers) outlived the sweep"

    seen: list[str] = []
    resumed = spikelab.sweep(scenario, out, jobs=2, dask="local", progress=False,
                             on_result=lambda task, outcome: seen.append(task.run_id))
    assert len(seen) == RUNS - kept
    assert resumed.manifest["status"] == "complete" and resumed.failed == 0
    whole = spikelab.sweep(scenario, tmp_path / "whole", jobs=2, progress=False)
    assert frame(resumed.runs).equals(frame(whole.runs))


def test_an_interrupted_study_resumes_to_the_same_results_and_report(tmp_path):
    out = tmp_path / "study"
    cmd = [sys.executable, "-m", "spikelab", "study", "run", "lte-handover-basic", "-o",
           str(out), "-j", "2", "--replications", "2"]
    proc, err, took, below = interrupt(cmd, out, signal.SIGTERM, n=1)
    assert proc.returncode == 130, err
    assert took < PROMPT_EXIT_S, took
    kept = check_interrupted(out, "study")
    assert 1 <= kept < 12
    assert not (out / "report.html").exists()
    assert not alive_after(below)

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "study" and manifest["status"] == "complete"
    assert manifest["runs_ok"] == 12
    assert (out / "report.html").is_file() and (out / "claims.json").is_file()
    whole = tmp_path / "whole"
    assert subprocess.run(cmd[:-5] + [str(whole), "-j", "2", "--replications", "2"],
                          capture_output=True, timeout=600).returncode == 0
    assert frame(pq.read_table(out / "runs.parquet")).equals(
        frame(pq.read_table(whole / "runs.parquet")))
    claims = json.loads((out / "claims.json").read_text())["claims"]
    assert claims == json.loads((whole / "claims.json").read_text())["claims"]


def test_an_interruption_while_the_dataset_is_written_keeps_every_run(tmp_path, monkeypatch):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.replace("replications = 6", "replications = 1")
                        .replace('duration = "20s"', 'duration = "2s"'))
    out = tmp_path / "out"
    # The dataset's block files are written by the store's block writer.
    real = sweep_store._BlockWriter.close

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_store._BlockWriter, "close", interrupted)
    with pytest.raises(KeyboardInterrupt):
        spikelab.sweep(scenario, out, jobs=1, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert (manifest["runs_done"], manifest["runs_ok"], manifest["runs_total"]) == (4, 4, 4)
    assert not (out / "runs.parquet").exists()
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]

    monkeypatch.setattr(sweep_store._BlockWriter, "close", real)
    seen: list[str] = []
    resumed = spikelab.sweep(scenario, out, jobs=1, progress=False,
                             on_result=lambda task, outcome: seen.append(task.run_id))
    assert seen == [], "every run was done; only the dataset was left to write"
    assert resumed.manifest["status"] == "complete" and resumed.runs.num_rows == 4
    assert pq.read_table(out / "runs.parquet").num_rows == 4


def test_ctrl_c_at_a_terminal_stops_a_sweep_whose_workers_are_starting(tmp_path):
    """A real Ctrl-C: the terminal sends SIGINT to the whole foreground process group, here
    as soon as the sweep's first worker process exists, while the workers start up."""
    import fcntl
    import os
    import select
    import termios

    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "out"
    master, slave = os.openpty()

    def controlling_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [sys.executable, "-m", "spikelab", "sweep", str(scenario), "-o", str(out), "-j", "2",
         "--no-plots"], stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        preexec_fn=controlling_terminal)
    os.close(slave)
    shown = b""

    def read(timeout: float) -> None:
        nonlocal shown
        while select.select([master], [], [], timeout)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            shown += chunk

    try:
        deadline = time.monotonic() + 60
        below: list[int] = []
        while not below and time.monotonic() < deadline:  # the workers are being started
            assert proc.poll() is None
            read(0.002)
            below = descendants(proc.pid)
        sent = time.monotonic()
        os.write(master, b"\x03")  # Ctrl-C
        while proc.poll() is None and time.monotonic() - sent < 30:
            read(0.01)
        took = time.monotonic() - sent
        read(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = shown.decode(errors="replace")
    assert proc.returncode == 130, text
    assert took < PROMPT_EXIT_S, took
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert text.rstrip().endswith("spikelab: interrupted"), text
    assert check_interrupted(out, "sweep") < RUNS
    assert not alive_after(below)
