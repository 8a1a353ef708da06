"""Figures are drawn from tables alone, as PNG and SVG; absent data means fewer figures."""

from __future__ import annotations

import pyarrow as pa
from spikelab import plots


def _names(paths):
    return sorted(p.name for p in paths)


def test_every_figure_is_written_as_png_and_svg(tables, tmp_path):
    paths = plots.draw(tables, tmp_path)
    assert _names(paths) == sorted(
        f"{stem}_flow0.{ext}" for stem in ("seqack", "cwnd", "rtt") for ext in ("png", "svg")
    )
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(b"\x89PNG") if path.suffix == ".png" else b"<svg" in data


def test_summary_only_tables_give_no_figures(tables, tmp_path):
    empty = {"runs": tables["runs"],
             "timeseries": tables["timeseries"].slice(0, 0),
             "packets": tables["packets"].slice(0, 0)}
    assert plots.draw(empty, tmp_path / "figures") == []
    assert not (tmp_path / "figures").exists()
    assert plots.draw({"runs": tables["runs"]}, tmp_path / "figures") == []


def test_timeseries_without_packets_skips_only_seqack(tables, tmp_path):
    only_ts = {"runs": tables["runs"], "timeseries": tables["timeseries"]}
    assert _names(plots.draw(only_ts, tmp_path)) == [
        "cwnd_flow0.png", "cwnd_flow0.svg", "rtt_flow0.png", "rtt_flow0.svg"]


def test_zoom_windows_that_hold_no_events_still_draw(tables, tmp_path):
    assert len(plots.draw(tables, tmp_path, zoom=(0.5, 0.9))) == 6
    assert len(plots.draw(tables, tmp_path, zoom=(1.5, None))) == 6


def test_svg_output_is_reproducible(tables, tmp_path):
    first = plots.draw(tables, tmp_path / "a")
    second = plots.draw(tables, tmp_path / "b")
    for a, b in zip(first, second, strict=True):
        if a.suffix == ".svg":
            assert a.read_bytes() == b.read_bytes(), a.name


def test_a_flow_without_events_gets_no_figure(tables, tmp_path):
    runs = tables["runs"]
    two_flows = pa.concat_tables([runs, runs.set_column(0, "flow", pa.array([1], pa.int32()))])
    names = _names(plots.draw({**tables, "runs": two_flows}, tmp_path))
    assert all(name.endswith(("_flow0.png", "_flow0.svg")) for name in names)


def test_cwnd_and_seqack_figures_show_verdicts_and_undo(lte_handover_lossless):
    import spikelab

    r = spikelab.run(lte_handover_lossless, overrides=[
        'flow.tcp.spurious=["eifel","frto"]', "flow.tcp.block_fr_after_rto=true"])
    fig = plots.cwnd(r.timeseries, 0, 1448, zoom=(9.0, 13.0))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "Eifel spurious (1)" in labels, labels
    assert "undo (1)" in labels, labels
    fig = plots.seqack(r.packets, 0, (9.0, 13.0), r.timeseries)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "Eifel: spurious (1)" in labels, labels
    assert "undo (1)" in labels, labels
    # Without detectors nothing is added.
    plain = spikelab.run(lte_handover_lossless, trace="timeseries")
    fig = plots.cwnd(plain.timeseries, 0, 1448)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not any("undo" in x or "Eifel" in x for x in labels), labels
