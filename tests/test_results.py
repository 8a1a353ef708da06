"""The results directory: atomic, deterministic, never touching files it did not write."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
import spikelab
from spikelab import figures, store
from spikelab.figures import run as plots
from spikelab.store import results

PARQUET = ("runs.parquet", "timeseries.parquet", "packets.parquet")


def _leftovers(outdir):
    return sorted(p.name for p in outdir.rglob("*.tmp"))


def test_same_tables_give_byte_identical_parquet(synthetic_result, tmp_path):
    figures.write(synthetic_result, tmp_path / "a", plots=False)
    figures.write(synthetic_result, tmp_path / "b", plots=False)
    for name in PARQUET:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_layout_manifest_and_load_round_trip(synthetic_result, tmp_path):
    out = figures.write(synthetic_result, tmp_path / "out")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 7 and manifest["trace"] == "packets"
    # The scenario as run: the seed and trace level the run used are in its sim table.
    assert manifest["scenario"] == {"sim": {"duration": 3.0, "seed": 7, "trace": "packets"}}
    assert set(manifest["versions"]) == {"spikelab", "python", "pyarrow"}
    listed = {f["path"]: f for f in manifest["files"]}
    assert set(PARQUET) <= set(listed)
    assert {"figures/cwnd_flow0.png", "figures/seqack_flow0.svg"} <= set(listed)
    for path, entry in listed.items():
        data = (out / path).read_bytes()
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert synthetic_result.manifest["files"] == manifest["files"]

    loaded = store.load(out)
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
    figures.write(synthetic_result, out)
    assert (out / "figures" / "seqack_flow0.png").exists()

    summary_only = spikelab.RunResult(
        runs=tables["runs"], timeseries=tables["timeseries"].slice(0, 0),
        packets=tables["packets"].slice(0, 0), scenario={}, seed=7, trace="summary",
        duration_s=3.0, wall_s=0.0, events=0,
        manifest=results.new_manifest({}, 7, "summary", 3.0, 0.0, 0))
    figures.write(summary_only, out)
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


def test_a_figure_step_interrupted_loses_no_table_and_leaves_no_partial_files(
        synthetic_result, tmp_path, monkeypatch):
    """The manifest is written before the figures are drawn: a slow or killed figure step
    loses nothing, and the manifest lists exactly the files that are whole."""
    out = tmp_path / "out"
    figures.write(synthetic_result, out)

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "draw", interrupt)
    with pytest.raises(KeyboardInterrupt):
        figures.write(synthetic_result, out)
    manifest = results.read_manifest(out)
    assert manifest["status"] == "complete"
    assert tuple(f["path"] for f in manifest["files"]) == PARQUET
    assert store.load(out).runs.num_rows == synthetic_result.runs.num_rows
    assert _leftovers(out) == []
    for name in PARQUET:
        pq.read_table(out / name)  # every file present is whole


def test_plot_redraws_from_tables_alone(synthetic_result, tmp_path, monkeypatch):
    out = figures.write(synthetic_result, tmp_path / "out", plots=False)
    assert not (out / "figures").exists()

    def no_simulation(*args, **kwargs):
        raise AssertionError("plot must not run the simulator")

    monkeypatch.setattr(spikelab._core, "Simulation", no_simulation)
    paths = spikelab.plot(out, zoom=(0.5, 2.5))
    assert sorted(p.name for p in paths) == sorted(
        f"{s}_flow0.{e}" for s in ("seqack", "cwnd", "rtt") for e in ("png", "svg"))
    assert all(p.exists() for p in paths)
    # A zoom has a folder of its own: the full-length figures are never overwritten.
    assert {p.parent for p in paths} == {out / "figures" / "zoom-0.5-2.5"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["figures_zoom"] == [0.5, 2.5]
    listed = {f["path"] for f in manifest["files"]}
    assert {f"figures/zoom-0.5-2.5/{p.name}" for p in paths} <= listed


def test_a_zoom_keeps_the_full_length_figures(synthetic_result, tmp_path):
    out = figures.write(synthetic_result, tmp_path / "out")
    full = {p: p.read_bytes() for p in (out / "figures").glob("*.png")}
    assert full
    spikelab.plot(out, zoom=(1, 2))
    spikelab.plot(out, zoom=(0, None))
    assert {p: p.read_bytes() for p in (out / "figures").glob("*.png")} == full
    listed = {f["path"] for f in results.read_manifest(out)["files"]}
    for folder in ("figures", "figures/zoom-1-2", "figures/zoom-0-end"):
        assert any(name.rpartition("/")[0] == folder for name in listed), folder


def test_plot_needs_a_complete_results_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        spikelab.plot(tmp_path)


@pytest.mark.parametrize("example", ["lte-handover.toml", "sctp-walkaway.toml",
                                     "umts-downlink.toml", "leo-lms.toml"])
def test_the_resolved_scenario_writes_back_as_toml_and_repeats_the_run(example, tmp_path):
    # docs/scenario.md, "The resolved scenario": the manifest's scenario, written back as TOML,
    # reproduces the run. TOML has no null, so an unset optional must be left out, not null.
    import tomllib
    from pathlib import Path

    from spikelab.scenario.sweepspec import toml_literal

    src = Path(__file__).resolve().parents[1] / "examples" / example
    first = spikelab.run(src, overrides=["sim.duration=3s"], out=tmp_path / "a", plots=False)
    resolved = json.loads((tmp_path / "a" / "manifest.json").read_text())["scenario"]

    def nulls(v, where=""):
        if isinstance(v, dict):
            return [n for k, x in v.items() for n in nulls(x, f"{where}.{k}")]
        if isinstance(v, list):
            return [n for i, x in enumerate(v) for n in nulls(x, f"{where}[{i}]")]
        return [where] if v is None else []

    assert nulls(resolved) == []
    text = "\n".join(f"{k} = {toml_literal(v)}" for k, v in resolved.items())
    assert tomllib.loads(text) == resolved
    again = spikelab.run(text, plots=False)
    assert again.runs.to_pandas().equals(first.runs.to_pandas())


def test_repr_is_one_line_and_reads_no_table(synthetic_result, tmp_path):
    """Showing a result (a notebook cell) printed every column of every table and read the
    lazy packets table from disk."""
    out = figures.write(synthetic_result, tmp_path / "out", plots=False)
    loaded = store.load(out)
    text = repr(loaded)
    assert text == ("RunResult(seed=7, trace='packets', flows=1, duration_s=3, "
                    f"events={loaded.events}, wall_s={loaded.wall_s:.3f})")
    assert callable(loaded.__dict__["_packets"])  # still not read
    assert callable(loaded.__dict__["_timeseries"])
