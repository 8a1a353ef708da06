"""Sweeps: grid expansion, seeds, executors (local pool and Dask), resumability, failures."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import spikelab
from spikelab.analysis import stats
from spikelab.analysis.query import query
from spikelab.cli import main
from spikelab.scenario import sweepspec
from spikelab.store.results import OutdirError
from spikelab.store.sweep import progress, read_part
from spikelab.sweep import repeat_command
from conftest import PROMPT_EXIT_S

# 2 s of a lossy 2 Mbit/s path: every run draws random numbers, so seeds matter.
LOSSY = """
name = "lossy"
[sim]
duration = "2s"
seed = 11
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
[flow.tcp]
variant = "newreno"
"""

SWEEP_2X2X3 = LOSSY + """
[sweep]
replications = 3
[sweep.params]
"flow.tcp.variant" = ["reno", "sack"]
"path.fwd.delay.delay" = ["20ms", "60ms"]
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------- spec


def test_toml_literal_round_trips_through_tomllib():
    values = ["a \"quoted\" \\ string\n", 3, -2.5, 1e-9, True, [1, [2.0, "x"]],
              {"type": "bulk", "size": "1MB"}, float("inf")]
    for v in values:
        assert tomllib.loads(f"v = {sweepspec.toml_literal(v)}")["v"] == v


def test_grid_expands_in_order_with_seed_base_plus_replication():
    spec = sweepspec.SweepSpec.parse({"replications": 2, "params": {
        "flow.tcp.variant": ["reno", "sack"], "sim.duration": ["1s", "2s", "3s"]}})
    tasks = spec.tasks(base_seed=40)
    assert len(tasks) == 2 * 3 * 2
    assert [t.run_id for t in tasks[:3]] == ["p000-r00", "p000-r01", "p001-r00"]
    assert [t.seed for t in tasks] == [40, 41] * 6
    assert tasks[2].params == {"variant": "reno", "duration": "2s"}
    assert tasks[2].overrides == ('flow.tcp.variant="reno"', 'sim.duration="2s"')
    assert tasks[-1].params == {"variant": "sack", "duration": "3s"}
    assert tasks[3].command("x.toml") == ["spikelab", "run", "x.toml", "--set",
                                          'flow.tcp.variant="reno"', "--set",
                                          'sim.duration="2s"', "--seed", "41"]


def test_zip_pairs_values_and_needs_equal_lengths():
    spec = sweepspec.SweepSpec.parse({"mode": "zip", "params": {"a.b": [1, 2], "c": [3, 4]}})
    assert [t.params for t in spec.tasks(0)] == [{"b": 1, "c": 3}, {"b": 2, "c": 4}]
    with pytest.raises(ValueError, match=r"sweep.params: zip needs equally long value lists"):
        sweepspec.SweepSpec.parse({"mode": "zip", "params": {"a": [1, 2], "c": [3]}})


def test_labelled_values_and_nested_keys():
    spec = sweepspec.SweepSpec.parse({"params": {
        "path": {"fwd": {"delay": {"profile": {"name": "shape", "labels": ["flat", "spike"],
                                               "values": [[[0, 50]], [[0, 50], [5, 900]]]}}}},
        "flow.tcp.mss": [1000, 1448]}})
    assert [p.key for p in spec.params] == ["path.fwd.delay.profile", "flow.tcp.mss"]
    assert spec.params[0].labels == ("flat", "spike") and spec.params[0].kind == "string"
    assert spec.params[1].kind == "int64"
    assert spec.tasks(0)[2].overrides[0] == "path.fwd.delay.profile=[[0, 50], [5, 900]]"


@pytest.mark.parametrize(("table", "message"), [
    ({"mode": "random"}, "sweep.mode: must be one of grid, zip, got 'random'"),
    ({"replications": 0}, "sweep.replications: must be an integer >= 1, got 0"),
    ({"workers": 3}, "sweep.workers: unknown key"),
    ({"params": {"a": []}}, 'sweep.params."a": must be a non-empty array'),
    ({"params": {"a": {"values": [1, 2], "labels": ["x"]}}},
     'sweep.params."a".labels: must be an array of 2 labels'),
    ({"params": {"x.seed": [1, 2]}}, "column name 'seed' is taken"),
    ({"params": {"a.v": [1], "b.v": [2]}}, "column name 'v' is taken"),
    ({"params": {"a": [1, 1]}}, "must be distinct"),
    # Bounded before anything is listed: 10^9 runs would exhaust memory.
    ({"replications": 1_000_000_000},
     "sweep.replications: 1 points x 1,000,000,000 replications = 1,000,000,000 runs; a sweep "
     "has at most 1,000,000 (split it into several)"),
    ({"params": {f"a.v{i}": list(range(100)) for i in range(10)}},
     "sweep.params: 100,000,000,000,000,000,000 points x 1 replications"),
])
def test_bad_sweep_tables_name_the_field(table, message):
    with pytest.raises(ValueError, match=None) as info:
        sweepspec.SweepSpec.parse(table)
    assert message in str(info.value)


def test_t_quantiles_and_confidence_interval():
    assert stats.t975(1) == pytest.approx(12.706)
    assert stats.t975(9) == pytest.approx(2.262)
    assert stats.t975(10**6) == pytest.approx(1.96, abs=1e-3)
    mean, half, n = stats.mean_ci([1.0, 2.0, 3.0, 4.0])
    # sd = 1.29099, t(3) = 3.182: 3.182 * 1.29099 / 2
    assert (mean, n) == (2.5, 4) and half == pytest.approx(2.0540, rel=1e-4)
    assert stats.mean_ci([5.0, 5.0, 5.0])[1] == 0.0


# ---------------------------------------------------------------------------------- runs


def _rows(table) -> list[tuple]:
    cols = [c for c in table.column_names]
    return sorted(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


def test_local_pool_and_dask_local_cluster_give_identical_runs_tables(tmp_path):
    pytest.importorskip("distributed")
    scenario = write(tmp_path, SWEEP_2X2X3)
    local = spikelab.sweep(scenario, tmp_path / "local", jobs=2, progress=False)
    dask = spikelab.sweep(scenario, tmp_path / "dask", jobs=2, dask="local", progress=False)
    assert local.runs.num_rows == 12 and local.failed == 0
    assert local.runs.to_pandas().equals(dask.runs.to_pandas())  # NaN == NaN here
    assert (tmp_path / "local/runs.parquet").read_bytes() == \
        (tmp_path / "dask/runs.parquet").read_bytes()
    # Seeds differ between replications, so a lossy path gives different results.
    frame = local.runs.to_pandas()
    assert frame.groupby("point")["bytes_delivered"].nunique().max() > 1
    # Any run re-runs alone with the documented rule.
    row = frame[frame.run_id == "p003-r02"].iloc[0]
    assert (row.variant, row.delay, row.seed) == ("sack", "60ms", 13)
    alone = spikelab.run(scenario, seed=13, trace="summary", progress=False,
                         overrides=['flow.tcp.variant="sack"', 'path.fwd.delay.delay="60ms"'])
    assert alone.runs.column("bytes_delivered")[0].as_py() == row.bytes_delivered


def test_a_rejected_value_is_a_failed_run_and_the_rest_complete(tmp_path, capsys):
    text = LOSSY + '[sweep]\n[sweep.params]\n"path.fwd.loss.p" = [0.01, 1.5, 0.02]\n'
    scenario = write(tmp_path, text)
    code = main(["sweep", str(scenario), "-o", str(tmp_path / "out"), "-j", "2", "-q"])
    err = capsys.readouterr().err
    assert code == 3
    assert "1 of 3 runs failed (first: p001-r00: path.fwd.stage[2].p: must be a probability" in err
    # The hint is a command that runs as printed: the scenario's real path, not a placeholder.
    assert (f"to repeat p001-r00 alone: spikelab run {scenario} --set path.fwd.loss.p=1.5 "
            f"--seed 11") in err
    runs = spikelab.load(tmp_path / "out").runs.to_pandas()
    assert list(runs.status) == ["ok", "failed", "ok"]
    assert runs.error[1].startswith("path.fwd.stage[2].p:") and runs.bytes_delivered[0] > 0
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    assert manifest["runs_failed"] == 1 and manifest["failures"][0]["run_id"] == "p001-r00"


def test_a_directory_resumes_only_its_own_sweep(tmp_path):
    scenario = write(tmp_path, SWEEP_2X2X3.replace("replications = 3", "replications = 1"))
    spikelab.sweep(scenario, tmp_path / "out", jobs=1, progress=False)
    changed = write(tmp_path, SWEEP_2X2X3.replace("replications = 3", "replications = 2"),
                    "t.toml")
    with pytest.raises(ValueError, match="holds results of a different sweep"):
        spikelab.sweep(changed, tmp_path / "out", jobs=1, progress=False)
    again = spikelab.sweep(changed, tmp_path / "out", jobs=1, progress=False, fresh=True)
    assert again.runs.num_rows == 8 and again.manifest["runs_reused"] == 0
    # Called again on the finished sweep: nothing runs, every run is kept.
    assert spikelab.sweep(changed, tmp_path / "out", jobs=1,
                          progress=False).manifest["runs_reused"] == 8


def test_a_sweep_does_not_resume_over_an_edited_trace_file(tmp_path):
    """The runs of a resumed sweep must all have read the same trace files: one edited in
    between (the base scenario's, or one a parameter names) makes it another sweep."""
    for name, delay in (("a.csv", 30), ("b.csv", 60)):
        (tmp_path / name).write_text(f"time_ms,delay_ms,loss\n0,{delay},0\n")
    scenario = write(tmp_path, '[sim]\nduration = "1s"\n[path.fwd]\n[[path.fwd.stage]]\n'
                               'type = "delay"\ntrace = "a.csv"\n[[flow]]\n[sweep]\n'
                               '[sweep.params]\n"path.fwd.delay.trace" = ["a.csv", "b.csv"]\n')
    spikelab.sweep(scenario, tmp_path / "out", jobs=1, progress=False)
    assert spikelab.sweep(scenario, tmp_path / "out", jobs=1,
                          progress=False).manifest["runs_reused"] == 2
    (tmp_path / "b.csv").write_text("time_ms,delay_ms,loss\n0,90,0\n")
    with pytest.raises(ValueError, match="a trace file it reads, or the spikelab engine"):
        spikelab.sweep(scenario, tmp_path / "out", jobs=1, progress=False)
    again = spikelab.sweep(scenario, tmp_path / "out", jobs=1, progress=False, fresh=True)
    rtt = again.runs.to_pandas().groupby("trace")["rtt_min_s"].min()
    assert rtt["b.csv"] > rtt["a.csv"] + 0.055  # 90 ms against 30 ms one way


def test_runs_of_another_engine_build_are_neither_resumed_nor_reused(tmp_path, monkeypatch):
    """The package version stays 0.1.0 across rebuilds; the engine build (version and a
    digest of the simulator's sources) tells them apart, so a directory of finished runs
    from another build is refused, not silently reused, and the manifest names the build."""
    from spikelab import _core

    scenario = write(tmp_path, SWEEP_2X2X3.replace("replications = 3", "replications = 1"))
    first = spikelab.sweep(scenario, tmp_path / "out", jobs=1, progress=False)
    build = _core.__build__
    assert build.startswith(_core.__version__ + "+") and len(build.split("+")[1]) == 16
    assert first.manifest["versions"]["spikelab"] == build
    assert spikelab.sweep(scenario, tmp_path / "out", jobs=1,
                          progress=False).manifest["runs_reused"] == 4
    monkeypatch.setattr(_core, "__build__", _core.__version__ + "+0000000000000000")
    with pytest.raises(ValueError, match="or the spikelab engine changed"):
        spikelab.sweep(scenario, tmp_path / "out", jobs=1, progress=False)
    again = spikelab.sweep(scenario, tmp_path / "out", jobs=1, progress=False, fresh=True)
    assert again.manifest["runs_reused"] == 0
    assert again.manifest["versions"]["spikelab"].endswith("+0000000000000000")


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            kids += [int(k) for k in (task / "children").read_text().split()]
    return kids


def _still_running(pids: list[int], wait_s: float = 10.0) -> list[int]:
    """The processes of ``pids`` still alive after up to ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if Path(f"/proc/{p}").exists()]


def done_runs(out: Path) -> int:
    """Runs a sweep's directory holds as done (its index and spool), finished or not."""
    return progress(out)[0]


def test_a_killed_sweep_resumes_without_recomputing_or_losing_runs(tmp_path, monkeypatch):
    """SIGKILL of the sweep's process mid-sweep (issue 40): nothing finished is lost, nothing
    is run twice, the blocks written are not rewritten, and the resumed dataset is the one
    an uninterrupted sweep writes."""
    # 24 runs of ~0.2 s each on two workers, in blocks of 5 runs; kill the command after a
    # block has been written and while later runs are spooled.
    monkeypatch.setenv("SPIKELAB_TEST_BLOCK_RUNS", "5")
    text = SWEEP_2X2X3.replace("replications = 3", "replications = 6").replace(
        'duration = "2s"', 'duration = "20s"')
    scenario = write(tmp_path, text)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "spikelab", "sweep", str(scenario), "-o", str(out), "-j", "2",
           "-q", "--no-plots"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    index = out / "parts" / "blocks.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if index.is_file() and done_runs(out) >= 7:
            break
        time.sleep(0.02)
    workers = _children(proc.pid)
    assert workers, "the sweep should run a pool of worker processes"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Its pool workers notice and exit rather than linger.
    assert not _still_running(workers)
    assert not (out / "manifest.json").exists()
    # The unfinished dataset is readable: its blocks and its spool.
    before = spikelab.load(out).runs.column("run_id").to_pylist()
    assert len(before) == len(set(before)) == done_runs(out)
    assert 7 <= len(before) < 24, "the kill should land mid-sweep"
    blocks = out / "parts" / "runs"  # each block's runs rows
    written = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in blocks.glob("*.parquet")}
    assert written, "a block should have been written before the kill"
    spooled = list((out / "parts").glob("b*/*.arrow"))
    for f in spooled:  # every file that exists under its final name is complete
        assert read_part(f).num_rows >= 1

    seen = []
    result = spikelab.sweep(scenario, out, jobs=2, progress=False,
                            on_result=lambda task, outcome: seen.append(task.run_id))
    assert not set(seen) & set(before), "a done run was recomputed"
    assert len(seen) == len(set(seen)) == 24 - len(before)
    # The manifest says how many runs it kept from the killed call.
    assert result.manifest["runs_reused"] == len(before)
    for name, ident in written.items():  # the blocks written before the kill stay as they were
        path = blocks / name
        assert (path.stat().st_ino, path.stat().st_mtime_ns) == ident
    ids = result.runs.column("run_id").to_pylist()
    assert sorted(ids) == ids and len(ids) == len(set(ids)) == 24
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert sorted(p.name for p in (out / "parts").iterdir()) == [".lock", "blocks.jsonl", "runs"], \
        "the spool is empty once every block is written"
    assert sorted(p.name for p in blocks.iterdir()) == [f"part-{b:06d}.parquet" for b in range(5)]
    whole = spikelab.sweep(scenario, tmp_path / "whole", jobs=2, progress=False)
    assert result.runs.to_pandas().equals(whole.runs.to_pandas())  # NaN == NaN here
    assert (out / "runs.parquet").read_bytes() == (tmp_path / "whole/runs.parquet").read_bytes()


def test_traced_sweeps_keep_time_series_with_run_ids(tmp_path):
    text = LOSSY + "[sweep]\nreplications = 2\ntrace = \"timeseries\"\n"
    result = spikelab.sweep(write(tmp_path, text), tmp_path / "out", jobs=1, progress=False)
    ts = result.table("timeseries")
    assert set(ts.column("run_id").to_pylist()) == {"p000-r00", "p000-r01"}
    with pytest.raises(KeyError, match="no packets table"):
        result.table("packets")
    con = query(tmp_path / "out", "SELECT count(DISTINCT run_id) AS n FROM timeseries")
    assert con.n[0] == 2


# ---------------------------------------------------------------------------------- CLI


def test_query_and_summary_commands(tmp_path, capsys):
    scenario = write(tmp_path, SWEEP_2X2X3)
    assert main(["sweep", str(scenario), "-o", str(tmp_path / "o"), "-j", "2", "-q"]) == 0
    assert sorted(p.name for p in (tmp_path / "o/figures").glob("*.png")) == [
        "bar-goodput_bps-variant-delay.png", "cdf-goodput_bps-variant.png"]
    capsys.readouterr()
    assert main(["query", str(tmp_path / "o"), "SELECT variant, count(*) AS n FROM runs "
                 "GROUP BY variant ORDER BY variant", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "variant,n\nreno,6\nsack,6\n"
    assert main(["summary", str(tmp_path / "o"), "--metric", "bytes_delivered"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["variant", "delay", "n", "bytes_delivered", "[MB]"]
    assert len(lines) == 5 and all(" ± " in line for line in lines[1:])
    frame = spikelab.load(tmp_path / "o").runs.to_pandas()
    with pytest.raises(KeyError, match="no table 'bogus'; tables are runs, timeseries, packets"):
        spikelab.load(tmp_path / "o").to_pandas("bogus")
    first = frame[(frame.variant == "reno") & (frame.delay == "20ms")].bytes_delivered
    mean, half, _ = stats.mean_ci(first.tolist())
    # One rule per unit: bytes in MB with two decimals.
    assert lines[1].split()[3] == stats.fmt_value("bytes_delivered", mean) == f"{mean / 1e6:.2f}"
    assert main(["query", str(tmp_path / "o"), "SELECT nope FROM runs"]) == 2
    assert "query failed" in capsys.readouterr().err
    # A text column is no metric: a one-line error (it was "could not convert string").
    assert main(["summary", str(tmp_path / "o"), "--metric", "variant"]) == 2
    assert capsys.readouterr().err == ("spikelab: error: metric 'variant': not a numeric "
                                       "column (it holds values such as 'reno')\n")


def test_a_parameter_named_like_a_metric_is_refused_before_any_run(tmp_path):
    scenario = write(tmp_path, LOSSY + '[sweep.params]\n"flow.tcp.mss" = [1000, 1448]\n')
    with pytest.raises(ValueError, match=r'sweep.params."flow.tcp.mss".name: column \'mss\''):
        spikelab.sweep(scenario, tmp_path / "o", progress=False)
    assert not (tmp_path / "o").exists()


def test_a_sweep_cannot_sweep_its_own_settings(tmp_path, capsys):
    # "sweep.replications" = [1, 2] was accepted and changed nothing (each run's scenario has
    # its [sweep] removed).
    scenario = write(tmp_path, LOSSY + '[sweep.params]\n"sweep.replications" = [1, 2]\n')
    assert main(["sweep", str(scenario), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f'spikelab: error: {scenario}: sweep.params."sweep.replications": a '
                   f"sweep's own settings (replications, mode, params) cannot be swept; set "
                   f"them in [sweep]")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("params, message", [
    # Sweeping the trace level changed nothing: sweep.trace decides what every run keeps.
    ('"sim.trace" = ["summary", "packets"]',
     'sweep.params."sim.trace": the trace level cannot be swept'),
    # A parameter table without values read as the keys inside it ("...delay.labels").
    ('[sweep.params."path.fwd.delay.delay"]\nlabels = ["a"]',
     'sweep.params."path.fwd.delay.delay": must be a non-empty array of values'),
])
def test_a_parameter_that_would_change_nothing_or_has_no_values_is_refused(tmp_path, capsys,
                                                                           params, message):
    scenario = write(tmp_path, LOSSY + f"[sweep.params]\n{params}\n")
    assert main(["sweep", str(scenario), "-o", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().startswith(f"spikelab: error: {scenario}: {message}")
    assert not (tmp_path / "o").exists()


def test_sweep_errors_are_one_line(tmp_path, capsys):
    scenario = write(tmp_path, LOSSY + '[sweep]\nmode = "diagonal"\n')
    assert main(["sweep", str(scenario), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"spikelab: error: {scenario}: sweep.mode: must be one of grid, zip, "
                   f"got 'diagonal'")


@pytest.mark.skipif(os.cpu_count() == 1, reason="needs two cores")
def test_sweep_uses_all_cores_by_default(tmp_path):
    scenario = write(tmp_path, SWEEP_2X2X3)
    result = spikelab.sweep(scenario, tmp_path / "o", progress=False)
    assert result.manifest["executor"] == f"local pool of {os.cpu_count()}"


def _interrupt_when_parts(cmd: list[str], out: Path, sig: int, n: int = 2):
    """Start ``cmd``, wait until ``n`` runs are done, send ``sig``; return (process, stderr,
    seconds from the signal to the exit, worker pids seen)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if done_runs(out) >= n:
            break
        time.sleep(0.02)
    workers = _children(proc.pid)
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc, err, time.monotonic() - sent, workers


@pytest.mark.parametrize(("jobs", "sig"), [("1", signal.SIGINT), ("2", signal.SIGINT),
                                           ("2", signal.SIGTERM)])
def test_an_interrupted_sweep_stops_within_a_second_and_resumes_to_the_same_dataset(
        tmp_path, jobs, sig):
    text = SWEEP_2X2X3.replace("replications = 3", "replications = 6").replace(
        'duration = "2s"', 'duration = "20s"')
    scenario = write(tmp_path, text)
    out = tmp_path / "out"
    proc, err, took, workers = _interrupt_when_parts(
        [sys.executable, "-m", "spikelab", "sweep", str(scenario), "-o", str(out), "-j", jobs,
         "--no-plots"], out, sig)
    assert proc.returncode == 130 and err.strip().endswith("spikelab: interrupted"), err
    assert took < PROMPT_EXIT_S
    assert "Traceback" not in err
    kept = done_runs(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["runs_done"] == kept
    assert 2 <= kept < 24
    assert not list(out.rglob("*.tmp"))
    assert not _still_running(workers)
    seen = []
    resumed = spikelab.sweep(scenario, out, jobs=2, progress=False,
                             on_result=lambda task, outcome: seen.append(task.run_id))
    assert len(seen) == 24 - kept
    assert resumed.manifest["status"] == "complete"
    whole = spikelab.sweep(scenario, tmp_path / "whole", jobs=2, progress=False)
    cols = [c for c in whole.runs.column_names if c != "error"]
    import pandas as pd

    def frame(table):
        return table.select(cols).to_pandas().astype({"spurious": str, "response": str})

    pd.testing.assert_frame_equal(frame(resumed.runs), frame(whole.runs))


def test_an_interrupted_study_stops_within_a_second_and_resumes(tmp_path):
    out = tmp_path / "study"
    proc, err, took, workers = _interrupt_when_parts(
        [sys.executable, "-m", "spikelab", "study", "run", "lte-handover-basic", "-o", str(out),
         "-j", "2", "--replications", "2"], out, signal.SIGINT, n=1)
    assert proc.returncode == 130, err
    assert took < PROMPT_EXIT_S
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "study" and manifest["status"] == "interrupted"
    assert not list(out.rglob("*.tmp"))
    assert not _still_running(workers)


# ---------------------------------------------------------------------------------- isolation

CRASH = LOSSY + '[sweep]\nreplications = 2\n[sweep.params]\n"flow.tcp.variant" = ["reno", "sack"]\n'


@pytest.mark.parametrize("dask", [None, "local"])
def test_a_segfaulting_run_fails_alone_and_nothing_is_run_twice(tmp_path, monkeypatch, dask):
    if dask:
        pytest.importorskip("distributed")
    # Test-only hook: the worker that picks up this run kills itself with SIGSEGV first.
    monkeypatch.setenv("SPIKELAB_TEST_CRASH_RUN", "p000-r01")
    seen = []
    res = spikelab.sweep(write(tmp_path, CRASH), tmp_path / "out", jobs=2, dask=dask,
                         progress=False, on_result=lambda task, out: seen.append(task.run_id))
    assert sorted(seen) == ["p000-r00", "p000-r01", "p001-r00", "p001-r01"]  # each once
    rows = {r["run_id"]: (r["status"], r["error"]) for r in
            res.runs.select(["run_id", "status", "error"]).to_pylist()}
    assert rows.pop("p000-r01") == ("failed", "the worker process died with signal SIGSEGV "
                                              "during this run")
    assert set(rows.values()) == {("ok", None)}
    assert res.failed == 1 and res.manifest["failures"][0]["run_id"] == "p000-r01"
    # The failed run is retried (and, without the hook, succeeds) when the sweep is repeated.
    monkeypatch.delenv("SPIKELAB_TEST_CRASH_RUN")
    seen.clear()
    again = spikelab.sweep(tmp_path / "s.toml", tmp_path / "out", jobs=1, progress=False,
                           on_result=lambda task, out: seen.append(task.run_id))
    assert seen == ["p000-r01"] and again.failed == 0


def test_a_crash_at_j1_does_not_stop_the_sweep(tmp_path, monkeypatch):
    monkeypatch.setenv("SPIKELAB_TEST_CRASH_RUN", "p000-r00")  # the first run, one worker
    res = spikelab.sweep(write(tmp_path, CRASH), tmp_path / "out", jobs=1, progress=False)
    assert res.runs.column("status").to_pylist() == ["failed", "ok", "ok", "ok"]


# ---------------------------------------------------------------------------------- directories


def test_fresh_removes_the_old_sweeps_figures_and_force_onto_a_run_its_tables(tmp_path, capsys):
    scenario = write(tmp_path, SWEEP_2X2X3.replace("replications = 3", "replications = 1"))
    out = tmp_path / "o"
    assert main(["sweep", str(scenario), "-o", str(out), "-j", "2", "-q"]) == 0
    assert (out / "figures/bar-goodput_bps-variant-delay.png").is_file()
    one = write(tmp_path, LOSSY + '[sweep]\n[sweep.params]\n"flow.tcp.variant" = ["reno", '
                                  '"sack"]\n', "one.toml")
    assert main(["sweep", str(one), "-o", str(out), "-j", "2", "-q", "--fresh"]) == 0
    assert sorted(p.stem for p in (out / "figures").iterdir()) == [
        "bar-goodput_bps-variant", "bar-goodput_bps-variant",
        "cdf-goodput_bps-variant", "cdf-goodput_bps-variant"]
    # Nothing of the old sweep's dataset is left: one block of the new sweep's 2 runs.
    assert sorted(p.name for p in (out / "parts").rglob("*")) == [
        ".lock", "blocks.jsonl", "part-000000.parquet", "runs"]
    assert spikelab.load(out).runs.column("run_id").to_pylist() == ["p000-r00", "p001-r00"]

    # A traced single run, replaced by a sweep (--force): its tables and figures go with it.
    run_dir = tmp_path / "run"
    spikelab.run(LOSSY, out=run_dir, trace="packets", progress=False)
    assert (run_dir / "packets.parquet").is_file() and list((run_dir / "figures").iterdir())
    res = spikelab.sweep(one, run_dir, jobs=1, progress=False, force=True)
    assert res.manifest["kind"] == "sweep"
    assert sorted(p.name for p in run_dir.iterdir() if p.is_file()) == [
        "manifest.json", "points.json", "runs.parquet", "scenario.toml", "sweep.json"]
    capsys.readouterr()
    assert main(["query", str(run_dir), "SELECT count(*) FROM packets"]) == 2


def test_sweep_directories_know_their_kind(tmp_path):
    res = spikelab.sweep(write(tmp_path, CRASH), tmp_path / "out", jobs=1, progress=False)
    assert res.manifest["kind"] == "sweep"
    assert json.loads((tmp_path / "out/sweep.json").read_text())["kind"] == "sweep"
    with pytest.raises(OutdirError, match="holds a sweep's results"):
        spikelab.run(LOSSY, out=tmp_path / "out", progress=False)
    with pytest.raises(OutdirError, match="the output directory is empty"):
        spikelab.sweep(tmp_path / "s.toml", "", progress=False)


def test_stage_names_whose_columns_would_clash_are_refused_before_any_run(tmp_path, capsys):
    text = ('[sim]\nduration = "1s"\n'
            '[path.a_b]\n[[path.a_b.stage]]\ntype = "delay"\nname = "c"\ndelay = "1ms"\n'
            '[path.a]\n[[path.a.stage]]\ntype = "delay"\nname = "b_c"\ndelay = "1ms"\n'
            '[[flow]]\nfwd = "a"\nrev = "a_b"\n'
            '[sweep]\n[sweep.params]\n"flow.tcp.variant" = ["reno", "sack"]\n')
    scenario = write(tmp_path, text)
    assert main(["sweep", str(scenario), "-o", str(tmp_path / "o"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("spikelab: error: ")
    assert '"drops_a_b_c"' in err
    assert not (tmp_path / "o").exists()


def test_a_long_profile_in_the_base_scenario_is_kept_out_of_the_manifest(tmp_path):
    rows = ", ".join(f"[{t}, 20, 0]" for t in range(100_000))
    text = ('[sim]\nduration = "1s"\n[path.fwd]\n[[path.fwd.stage]]\ntype = "delay"\n'
            f'profile = [{rows}]\n[[flow]]\n[sweep]\n[sweep.params]\n'
            '"flow.tcp.variant" = ["reno", "sack"]\n')
    res = spikelab.sweep(write(tmp_path, text), tmp_path / "out", jobs=1, progress=False)
    assert res.failed == 0
    size = (tmp_path / "out/manifest.json").stat().st_size
    assert size < 20_000, size  # it was 10 MB: the resolved profile, one number a line
    stage = res.manifest["scenario"]["path"]["fwd"]["stage"][0]
    assert stage["type"] == "delay" and stage["profile"]["items"] == 100_000
    assert stage["profile"]["in"] == "scenario.toml"
    assert (tmp_path / "out/scenario.toml").read_text() == text
    assert repeat_command(tmp_path / "out", res.manifest, "p001-r00")[:3] == [
        "spikelab", "run", str(tmp_path / "s.toml")]


def test_sweep_writes_each_runs_captures_identical_to_the_run_alone(tmp_path):
    """sim.pcap in a sweep: OUTDIR/pcap/RUN_ID/POINT.pcapng for every run, listed in the
    manifest; a run repeated alone with its seed and point writes the same bytes; a fresh
    sweep without captures leaves none behind."""
    from spikelab.store.sweep import run_info

    scenario = write(tmp_path, SWEEP_2X2X3.replace('seed = 11\n', 'seed = 11\npcap = true\n'))
    out = tmp_path / "out"
    result = spikelab.sweep(scenario, out, jobs=2, progress=False)
    runs = result.manifest["runs"]
    assert len(runs) == 12
    listed = {e["path"]: e["bytes"] for e in result.manifest["pcaps"]}
    assert set(listed) == {f"pcap/{r['run_id']}/{point}.pcapng"
                           for r in runs for point in ("sender", "receiver")}
    for path, size in listed.items():
        data = (out / path).read_bytes()
        assert len(data) == size and data[:4] == b"\x0a\x0d\x0d\x0a"  # pcapng section header
    # Different runs saw different losses: their captures differ.
    assert (out / listed_path(runs[0])).read_bytes() != (out / listed_path(runs[1])).read_bytes()
    run_id = runs[7]["run_id"]
    seed, overrides = run_info(out, result.manifest, run_id)
    alone = tmp_path / "alone"
    spikelab.run(scenario, seed=seed, overrides=overrides, out=alone, progress=False,
                 plots=False)
    for point in ("sender", "receiver"):
        assert (alone / "pcap" / f"{point}.pcapng").read_bytes() == \
            (out / "pcap" / run_id / f"{point}.pcapng").read_bytes()
    again = spikelab.sweep(write(tmp_path, SWEEP_2X2X3, "plain.toml"), out, jobs=2,
                           progress=False, fresh=True)
    assert again.manifest["pcaps"] == [] and not (out / "pcap").exists()


def listed_path(run: dict) -> str:
    return f"pcap/{run['run_id']}/sender.pcapng"
