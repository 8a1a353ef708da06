"""The results directory: atomic, deterministic, never touching files it did not write."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
import spikelab
from spikelab import plots, results

PARQUET = ("runs.parquet", "timeseries.parquet", "packets.parquet")


def _leftovers(outdir):
    return sorted(p.name for p in outdir.rglob("*.tmp"))


def test_same_tables_give_byte_identical_parquet(synthetic_result, tmp_path):
    results.write(synthetic_result, tmp_path / "a", plots=False)
    results.write(synthetic_result, tmp_path / "b", plots=False)
    for name in PARQUET:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_layout_manifest_and_load_round_trip(synthetic_result, tmp_path):
    out = results.write(synthetic_result, tmp_path / "out")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 7 and manifest["trace"] == "packets"
    assert manifest["scenario"] == {"sim": {"duration": 3.0}}
    assert set(manifest["versions"]) == {"spikelab", "python", "pyarrow"}
    listed = {f["path"]: f for f in manifest["files"]}
    assert set(PARQUET) <= set(listed)
    assert {"figures/cwnd_flow0.png", "figures/seqack_flow0.svg"} <= set(listed)
    for path, entry in listed.items():
        data = (out / path).read_bytes()
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert synthetic_result.manifest["files"] == manifest["files"]

    loaded = results.load(out)
    for name in ("runs", "timeseries", "packets"):
        assert loaded.table(name).schema == synthetic_result.table(name).schema
        pd.testing.assert_frame_equal(loaded.to_pandas(name), synthetic_result.to_pandas(name))
    assert loaded.seed == 7 and loaded.summary["bytes_delivered"].tolist() == [4000]
    assert _leftovers(out) == []


def test_rewrite_keeps_unrelated_files_and_drops_only_stale_figures(synthetic_result, tables,
                                                                   tmp_path):
    out = tmp_path / "out"
    (out / "figures").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    (out / "figures" / "mine.png").write_text("mine")
    results.write(synthetic_result, out)
    assert (out / "figures" / "seqack_flow0.png").exists()

    summary_only = spikelab.RunResult(
        runs=tables["runs"], timeseries=tables["timeseries"].slice(0, 0),
        packets=tables["packets"].slice(0, 0), scenario={}, seed=7, trace="summary",
        duration_s=3.0, wall_s=0.0, events=0,
        manifest=results.new_manifest({}, 7, "summary", 3.0, 0.0, 0))
    results.write(summary_only, out)
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["mine.png"]
    assert (out / "notes.txt").read_text() == "mine"
    assert pq.read_table(out / "packets.parquet").num_rows == 0


def test_atomic_write_failure_keeps_the_old_file(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")

    def half_then_interrupt(tmp):
        tmp.write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        results.atomic_write(target, half_then_interrupt)
    assert target.read_bytes() == b"old"
    assert list(tmp_path.iterdir()) == [target]


def test_interrupted_write_leaves_no_manifest_and_no_partial_files(synthetic_result, tmp_path,
                                                                  monkeypatch):
    out = tmp_path / "out"
    results.write(synthetic_result, out)

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "draw", interrupt)
    with pytest.raises(KeyboardInterrupt):
        results.write(synthetic_result, out)
    assert not (out / "manifest.json").exists()  # the directory no longer claims completeness
    assert _leftovers(out) == []
    for name in PARQUET:
        pq.read_table(out / name)  # every file present is whole


def test_plot_redraws_from_tables_alone(synthetic_result, tmp_path, monkeypatch):
    out = results.write(synthetic_result, tmp_path / "out", plots=False)
    assert not (out / "figures").exists()

    def no_simulation(*args, **kwargs):
        raise AssertionError("plot must not run the simulator")

    monkeypatch.setattr(spikelab._core, "Simulation", no_simulation)
    paths = spikelab.plot(out, zoom=(0.5, 2.5))
    assert sorted(p.name for p in paths) == sorted(
        f"{s}_flow0.{e}" for s in ("seqack", "cwnd", "rtt") for e in ("png", "svg"))
    assert all(p.exists() for p in paths)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["figures_zoom"] == [0.5, 2.5]
    assert {f"figures/{p.name}" for p in paths} <= {f["path"] for f in manifest["files"]}


def test_plot_needs_a_complete_results_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        spikelab.plot(tmp_path)
