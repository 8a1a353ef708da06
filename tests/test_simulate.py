"""spikelab.run / validate against the Rust core, on the small LTE handover examples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pytest
import spikelab

PARQUET = ("runs.parquet", "timeseries.parquet", "packets.parquet")
RUNS_COLUMNS = [
    "flow", "seed", "goodput_bps", "bytes_delivered", "rto_count", "rto_spurious_true",
    "fast_retx_count", "fast_retx_spurious_true", "retx_segments", "spurious_retx_true",
    "dupacks_rcvd", "segments_sent", "rtt_mean_s", "rtt_sd_s", "rtt_samples",
    "longest_stall_s", "completion_time_s", "mss", "dsacks_rcvd",
]


def run(scenario, **kwargs):
    return spikelab.run(scenario, progress=False, **kwargs)


@pytest.fixture(scope="module")
def lte(lte_handover):
    return run(lte_handover, seed=1)


def test_same_seed_gives_byte_identical_files(lte_handover, tmp_path):
    for name in ("a", "b"):
        run(lte_handover, seed=1, out=tmp_path / name, plots=False)
    for name in PARQUET:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_another_seed_changes_random_losses(lte_handover, lte):
    other = run(lte_handover, seed=2)
    assert other.seed == 2 and lte.seed == 1
    assert not other.packets.equals(lte.packets)


def same_table(a, b):
    """Equal schema and values, NaN equal to NaN (completion_time_s is NaN for bulk apps)."""
    assert a.schema == b.schema
    pd.testing.assert_frame_equal(a.to_pandas(), b.to_pandas())


def test_seed_changes_nothing_without_random_components(lte_handover_lossless):
    one, two = run(lte_handover_lossless, seed=1), run(lte_handover_lossless, seed=2)
    assert one.packets.equals(two.packets)
    assert one.timeseries.equals(two.timeseries)


def test_runs_table_follows_the_contract(lte):
    runs = lte.runs
    assert set(RUNS_COLUMNS) <= set(runs.column_names)
    assert runs.column_names[0] == "flow" and runs.column_names[-1] == "drops_total"
    drops = [c for c in runs.column_names if c.startswith("drops_") and c != "drops_total"]
    assert drops
    summary = lte.summary
    assert (summary["seed"] == 1).all()
    assert (summary[drops].sum(axis=1) == summary["drops_total"]).all()
    assert (summary["bytes_delivered"] > 0).all()


def test_markers_and_counts_agree(lte):
    ts, summary = lte.timeseries, lte.summary
    for flow, row in summary.set_index("flow").iterrows():
        for var, total, spurious in (("rto_expiry", "rto_count", "rto_spurious_true"),
                                     ("fast_retx", "fast_retx_count",
                                      "fast_retx_spurious_true")):
            marks = ts.filter(pc.and_(pc.equal(ts["flow"], flow), pc.equal(ts["var"], var)))
            values = marks["value"].to_numpy()
            assert len(values) == row[total], var
            assert int((values == 1.0).sum()) == row[spurious], var
        drops = lte.packets.filter(pc.and_(pc.equal(lte.packets["flow"], flow),
                                           pc.equal(lte.packets["event"], "drop")))
        assert drops.num_rows == row["drops_total"]


MARKERS = ("rto_expiry", "fast_retx", "verdict_eifel", "verdict_dsack", "verdict_frto", "undo",
           "verdict_linux")


def test_rows_are_in_time_order(lte):
    """Packets in time order; the time series in time order, then the markers (judged at the
    end of the run) in time order, so a streamed run writes the same table."""
    assert (np.diff(lte.packets["t_ns"].to_numpy()) >= 0).all()
    ts = lte.timeseries
    is_marker = np.isin(ts["var"].to_numpy(zero_copy_only=False).astype(str), MARKERS)
    first_marker = int(np.argmax(is_marker))
    assert is_marker.any() and not is_marker[:first_marker].any()
    assert is_marker[first_marker:].all()
    t = ts["t_ns"].to_numpy()
    assert (np.diff(t[:first_marker]) >= 0).all()
    assert (np.diff(t[first_marker:]) >= 0).all()


def test_trace_levels_keep_columns_and_the_summary(lte_handover, lte):
    summary = run(lte_handover, seed=1, trace="summary")
    timeseries = run(lte_handover, seed=1, trace="timeseries")
    assert summary.timeseries.num_rows == 0 and summary.packets.num_rows == 0
    assert timeseries.timeseries.num_rows > 0 and timeseries.packets.num_rows == 0
    for result in (summary, timeseries):
        assert result.packets.schema.names == lte.packets.schema.names
        assert result.timeseries.schema.names == lte.timeseries.schema.names
        same_table(result.runs, lte.runs)


def test_trace_defaults_to_the_scenario_sim_trace(lte_handover):
    result = run(lte_handover, overrides=["sim.trace=summary"])
    assert result.trace == result.manifest["trace"] == "summary"
    assert result.packets.num_rows == 0
    assert run(lte_handover, overrides=["sim.trace=summary"], trace="packets").packets.num_rows


def test_toml_text_and_file_give_the_same_run(lte_handover, lte, monkeypatch):
    monkeypatch.chdir(lte_handover.parent)  # relative trace files resolve the same way
    from_text = run(lte_handover.read_text(), seed=1, trace="summary")
    same_table(from_text.runs, lte.runs)
    # The same scenario, but for the trace level each run asked for (the scenario records it).
    assert from_text.scenario == {**lte.scenario, "sim": {**lte.scenario["sim"], "trace": "summary"}}


def test_validate_returns_the_resolved_scenario(lte_handover, lte):
    resolved = spikelab.validate(lte_handover)
    assert resolved == spikelab.validate(str(lte_handover))
    assert isinstance(resolved, dict) and resolved


@pytest.mark.parametrize("overrides", [["sim.duration=-1"], ["no.such.field=1"]])
def test_bad_overrides_raise_scenario_error(lte_handover, overrides):
    with pytest.raises(spikelab.ScenarioError) as info:
        run(lte_handover, overrides=overrides)
    assert "\n" not in str(info.value)
    with pytest.raises(spikelab.ScenarioError):
        spikelab.validate(lte_handover, overrides=overrides)


def test_python_side_argument_errors(lte_handover):
    with pytest.raises(ValueError, match="trace"):
        run(lte_handover, trace="everything")
    with pytest.raises(ValueError, match="key=value"):
        run(lte_handover, overrides=["sim.duration"])
    with pytest.raises(FileNotFoundError):
        run(lte_handover.with_name("missing.toml"))


def test_forced_progress_bar_reaches_100_percent(lte_handover, capsys):
    spikelab.run(lte_handover, seed=1, trace="summary", progress=True)
    err = capsys.readouterr().err
    assert "100.0%" in err and err.endswith("\n")


def test_result_written_and_loaded_back(lte_handover, tmp_path):
    result = run(lte_handover, seed=1, out=tmp_path / "out")
    loaded = spikelab.load(tmp_path / "out")
    assert loaded.packets.equals(result.packets)
    assert loaded.scenario == result.scenario
    assert loaded.manifest["files"] == result.manifest["files"]
    assert {"figures/seqack_flow0.png", "figures/cwnd_flow0.svg", "figures/rtt_flow0.png"} \
        <= {f["path"] for f in loaded.manifest["files"]}


def test_cancel_stops_a_running_simulation(lte_handover):
    import threading

    from spikelab import _core

    # An hour of simulated time: far longer than the test lets it run.
    sim = _core.Simulation(
        lte_handover.read_text(), ["sim.duration=3600s"], str(lte_handover.parent), None, "summary"
    )
    started = threading.Event()

    def stop():
        started.wait()
        while sim.progress() == 0.0:
            threading.Event().wait(0.01)
        sim.cancel()

    threading.Thread(target=stop, daemon=True).start()
    started.set()
    with pytest.raises(KeyboardInterrupt):
        sim.run()
    assert 0.0 < sim.progress() < 1.0
