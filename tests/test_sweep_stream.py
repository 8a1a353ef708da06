"""Sweeps at scale (issue 40): runs written block by block as they finish, in bounded row
groups; failed runs retried into their block; a directory written before blocks resumes.

SIGKILL of the sweep's process and resuming are in tests/test_sweep.py; Dask in
tests/test_sweep_dask.py."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import spikelab
import spikelab.store.results
from spikelab.store import sweep as store

# 2 s of a lossy 2 Mbit/s path: random numbers drawn, so seeds matter; about 0.05 s a run.
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
"""
GRID = LOSSY + """
[sweep]
replications = 5
[sweep.params]
"flow.tcp.variant" = ["reno", "sack"]
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def plain(table: pa.Table):
    """A table as a DataFrame, dictionary columns as their values (dictionaries differ
    between files that hold the same values)."""
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c
            for c in table.columns]
    return pa.table(cols, names=table.column_names).to_pandas()


def spooled(out: Path) -> list[str]:
    """The runs waiting in the spool (finished, their block not yet written)."""
    return sorted(p.name.split(".")[0] for p in (out / "parts").glob("b*/*.*.arrow")
                  if p.name.split(".")[1] in ("ok", "failed"))


def test_runs_are_written_block_by_block_as_they_finish(tmp_path, monkeypatch):
    monkeypatch.setenv(store.TEST_BLOCK_ENV, "3")
    out = tmp_path / "out"
    seen: list[tuple[str, list[str], list[str]]] = []

    def look(task, outcome) -> None:
        seen.append((task.run_id, spooled(out),
                     sorted(p.name for p in (out / "parts/runs").glob("*.parquet"))))

    result = spikelab.sweep(write(tmp_path, GRID), out, jobs=1, progress=False,
                            on_result=look)
    # One worker: runs finish in order. A block is written as soon as its third run is done,
    # and only the runs of the block being filled wait in the spool.
    ids = [f"p000-r{r:02d}" for r in range(5)] + [f"p001-r{r:02d}" for r in range(5)]
    assert [s[0] for s in seen] == ids
    for k, (_, spool, blocks) in enumerate(seen):
        done = k + 1
        written = done // 3 if done < 10 else 4  # the last block holds one run
        assert blocks == [f"part-{b:06d}.parquet" for b in range(written)]
        assert spool == ids[done - done % 3: done] if done < 10 else spool == []
    assert [len(json.loads(line)["status"]) for line in
            (out / "parts/blocks.jsonl").read_text().splitlines()] == [3, 3, 3, 1]
    # runs.parquet, made from the blocks, is what the API and queries read.
    assert result.runs.column("run_id").to_pylist() == ids
    assert pq.read_table(out / "runs.parquet").column("run_id").to_pylist() == ids
    listed = {f["path"]: f for f in result.manifest["files"]}
    assert listed["runs.parquet"]["rows"] == 10 == result.rows()


def test_traced_blocks_have_bounded_row_groups_and_the_same_rows_as_one_table(
        tmp_path, monkeypatch):
    monkeypatch.setenv(store.TEST_BLOCK_ENV, "4")
    monkeypatch.setitem(store.ROW_GROUP_ROWS, "packets", 2000)
    monkeypatch.setitem(store.ROW_GROUP_ROWS, "timeseries", 1500)
    text = GRID.replace("[sweep]\n", '[sweep]\ntrace = "packets"\n')
    out = tmp_path / "out"
    result = spikelab.sweep(write(tmp_path, text), out, jobs=2, progress=False)
    for name, limit in (("packets", 2000), ("timeseries", 1500)):
        files = sorted((out / f"{name}.parquet").glob("*.parquet"))
        assert [f.name for f in files] == [f"part-{b:06d}.parquet" for b in range(3)]
        for b, f in enumerate(files):
            meta = pq.ParquetFile(f).metadata
            assert meta.num_row_groups > 1
            assert max(meta.row_group(g).num_rows for g in range(meta.num_row_groups)) <= limit
            ids = pq.read_table(f, columns=["run_id"]).column("run_id").to_pylist()
            assert sorted(set(ids)) == result.runs.column("run_id").to_pylist()[4 * b: 4 * b + 4]
            assert ids == sorted(ids), "rows in run order"
        listed = [e for e in result.manifest["files"] if e["path"].startswith(f"{name}.parquet/")]
        assert [e["path"] for e in listed] == [f"{name}.parquet/{f.name}" for f in files]
        assert sum(e["rows"] for e in listed) == result.table(name).num_rows
    # Each run's packets are those of the run alone.
    alone = spikelab.run(write(tmp_path, LOSSY, "one.toml"), seed=4, trace="packets",
                         overrides=['flow.tcp.variant="sack"'], progress=False)
    packets = result.table("packets")
    got = packets.filter(pc.equal(packets.column("run_id"), "p001-r01")).drop_columns("run_id")
    assert got.num_rows > 1000 and plain(got).equals(plain(alone.packets))


def test_a_failed_run_is_retried_into_its_block_and_nothing_else_is_rewritten(
        tmp_path, monkeypatch):
    monkeypatch.setenv(store.TEST_BLOCK_ENV, "2")
    text = GRID.replace("[sweep]\n", '[sweep]\ntrace = "timeseries"\n')
    scenario = write(tmp_path, text)
    out = tmp_path / "out"
    monkeypatch.setenv("SPIKELAB_TEST_CRASH_RUN", "p000-r03")  # block 1's second run
    first = spikelab.sweep(scenario, out, jobs=2, progress=False)
    assert first.failed == 1 and first.manifest["failures"][0]["run_id"] == "p000-r03"
    index = [json.loads(line) for line in (out / "parts/blocks.jsonl").read_text().splitlines()]
    assert {r["block"]: r["status"] for r in index} == {0: "oo", 1: "of", 2: "oo", 3: "oo",
                                                         4: "oo"}

    def stamps() -> dict[str, tuple[int, int]]:
        return {str(p.relative_to(out)): (p.stat().st_ino, p.stat().st_mtime_ns)
                for p in [*out.glob("parts/runs/*.parquet"), *out.glob("timeseries.parquet/*")]}

    before = stamps()
    monkeypatch.delenv("SPIKELAB_TEST_CRASH_RUN")
    seen: list[str] = []
    again = spikelab.sweep(scenario, out, jobs=2, progress=False,
                           on_result=lambda task, outcome: seen.append(task.run_id))
    assert seen == ["p000-r03"] and again.failed == 0
    after = stamps()
    changed = sorted(k for k in after if after[k] != before.get(k))
    assert changed == ["parts/runs/part-000001.parquet", "timeseries.parquet/part-000001.parquet"]
    clean = spikelab.sweep(scenario, tmp_path / "clean", jobs=1, progress=False)
    assert (out / "runs.parquet").read_bytes() == (tmp_path / "clean/runs.parquet").read_bytes()
    for f in sorted((out / "timeseries.parquet").iterdir()):
        assert f.read_bytes() == (tmp_path / "clean/timeseries.parquet" / f.name).read_bytes()
    assert again.table("timeseries").num_rows == clean.table("timeseries").num_rows


def test_a_block_of_failed_runs_only_keeps_every_column(tmp_path, monkeypatch):
    monkeypatch.setenv(store.TEST_BLOCK_ENV, "2")
    # Point 0 is refused by the simulator (p > 1): block 0 holds its two failed runs only.
    text = LOSSY + '[sweep]\nreplications = 2\n[sweep.params]\n"path.fwd.loss.p" = [1.5, 0.01]\n'
    result = spikelab.sweep(write(tmp_path, text), tmp_path / "out", jobs=1, progress=False)
    assert result.failed == 2
    ok = spikelab.sweep(write(tmp_path, text.replace("1.5", "0.02"), "ok.toml"),
                        tmp_path / "ok", jobs=1, progress=False)
    assert result.runs.column_names == ok.runs.column_names
    assert pq.read_schema(tmp_path / "out/runs.parquet").names == ok.runs.column_names
    frame = result.runs.to_pandas()
    assert list(frame.status) == ["failed", "failed", "ok", "ok"]
    assert frame.goodput_bps[:2].isna().all() and (frame.goodput_bps[2:] > 0).all()
    assert spikelab.query(tmp_path / "out", "SELECT count(goodput_bps) AS n FROM runs").n[0] == 2


def test_a_sweep_written_before_blocks_resumes_and_keeps_its_runs(tmp_path):
    """A directory of the earlier layout (one Arrow part file per run in parts/, whole-sweep
    tables): resumed, its runs move to the spool and only the missing ones run."""
    scenario = write(tmp_path, GRID)
    out = tmp_path / "out"
    clean = spikelab.sweep(scenario, out, jobs=2, progress=False)
    # Rewrite the directory as the earlier layout wrote it: parts/RUN.arrow, no index.
    table = clean.runs
    for rid in table.column("run_id").to_pylist():
        rows = table.filter(pc.equal(table.column("run_id"), rid))
        store.write_part(rows, out / "parts" / f"{rid}.arrow")
    for f in [out / "parts/blocks.jsonl", *out.glob("parts/runs/*")]:
        f.unlink()
    (out / "parts/runs").rmdir()
    identity = json.loads((out / "sweep.json").read_text())
    del identity["layout"], identity["block_runs"]
    (out / "sweep.json").write_text(json.dumps(identity))
    (out / "parts/p001-r02.arrow").unlink()
    (out / "parts/p000-r04.arrow").unlink()
    assert spikelab.load(out).runs.num_rows == 10  # the complete earlier dataset still reads

    seen: list[str] = []
    again = spikelab.sweep(scenario, out, jobs=2, progress=False,
                           on_result=lambda task, outcome: seen.append(task.run_id))
    assert sorted(seen) == ["p000-r04", "p001-r02"]
    assert again.manifest["runs_reused"] == 8
    assert json.loads((out / "sweep.json").read_text())["layout"] == store.LAYOUT
    assert not list((out / "parts").glob("*.arrow"))
    assert again.runs.to_pandas().equals(clean.runs.to_pandas())


def test_a_second_sweep_into_the_same_directory_at_the_same_time_is_refused(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    scenario = write(tmp_path, GRID.replace('duration = "2s"', 'duration = "60s"'))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "spikelab", "sweep", str(scenario), "-o",
                             str(out), "-j", "1", "-q", "--no-plots"])
    try:
        deadline = time.monotonic() + 60
        while store.progress(out)[0] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None
        with pytest.raises(spikelab.store.results.OutdirError) as info:
            spikelab.sweep(scenario, out, jobs=1, progress=False)
        assert str(info.value) == (f"{out}: another spikelab process (pid {proc.pid}) is "
                                   f"writing this sweep; wait for it to end, or stop it")
        assert store.progress(out)[0] >= 1  # nothing of the first sweep was touched
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # Its process gone, the lock goes with it: the sweep resumes.
    done = store.progress(out)[0]
    seen: list[str] = []
    res = spikelab.sweep(scenario, out, jobs=2, progress=False,
                         on_result=lambda task, outcome: seen.append(task.run_id))
    assert res.manifest["runs_reused"] == done and len(seen) == 10 - done


@pytest.mark.parametrize("bad", [3, object()])
def test_dask_takes_an_address_a_client_or_a_cluster_only(tmp_path, bad):
    with pytest.raises(TypeError, match="dask must be 'local', a scheduler address, a "
                                        "distributed.Client or a Dask cluster object, got"):
        spikelab.sweep(write(tmp_path, GRID), tmp_path / "out", dask=bad, progress=False)
    assert not (tmp_path / "out").exists()
