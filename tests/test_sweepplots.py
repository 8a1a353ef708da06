"""Sweep figures: what each kind draws is the mean (and 95% CI) of the runs behind it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from spikelab import sweepplots
from spikelab.stats import mean_ci
from spikelab.sweepplots import FigureSpec


def runs() -> pd.DataFrame:
    """Two parameters (rate numeric, variant), three replications, a metric that depends on
    both plus a replication-dependent part."""
    rows = []
    for variant, base in (("reno", 1.0), ("sack", 2.0)):
        for rate in (10, 100, 1000):
            for rep in range(3):
                rows.append({"variant": variant, "rate": rate, "replication": rep,
                             "status": "ok", "goodput_bps": base * rate + rep})
    return pd.DataFrame(rows)


def test_bars_are_means_with_t_intervals():
    fig = sweepplots.draw_one(runs(), FigureSpec.parse(
        {"kind": "bar", "x": "rate", "hue": "variant", "y": "goodput_bps", "scale": 1}))
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([11.0, 101.0, 1001.0, 21.0, 201.0, 2001.0])
    # The error bars span mean ± t(0.975, 2) * sd / sqrt(3) (sd = 1).
    half = mean_ci([0.0, 1.0, 2.0])[1]
    segments = [c for c in ax.collections if c.get_segments()][0].get_segments()
    lo, hi = segments[0][:, 1]
    assert (hi - lo) / 2 == pytest.approx(half) and half == pytest.approx(4.303 / 3 ** 0.5)


def test_lines_go_through_the_means_on_a_log_axis_for_wide_ranges():
    fig = sweepplots.draw_one(runs(), FigureSpec.parse(
        {"kind": "line", "x": "rate", "hue": "variant", "y": "goodput_bps", "scale": 0.5}))
    ax = fig.axes[0]
    lines = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    assert list(lines["sack"]) == pytest.approx([10.5, 100.5, 1000.5])
    assert ax.get_xscale() == "log"
    assert any(isinstance(c, PolyCollection) for c in ax.collections)  # the CI band


def test_cdf_steps_through_every_run():
    fig = sweepplots.draw_one(runs(), FigureSpec.parse(
        {"kind": "cdf", "hue": "variant", "y": "goodput_bps"}))
    line = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "reno"][0]
    assert line.get_ydata()[-1] == 1.0 and len(line.get_ydata()) == 9 + 1


def test_heatmap_cells_are_means_over_two_parameters():
    fig = sweepplots.draw_one(runs(), FigureSpec.parse(
        {"kind": "heatmap", "x": "rate", "row": "variant", "y": "goodput_bps", "scale": 1}))
    grid = fig.axes[0].images[0].get_array()
    assert np.asarray(grid) == pytest.approx(np.array([[11.0, 101.0, 1001.0],
                                                       [21.0, 201.0, 2001.0]]))


def test_panels_split_by_col():
    fig = sweepplots.draw_one(runs(), FigureSpec.parse(
        {"kind": "bar", "x": "rate", "col": "variant", "y": "goodput_bps"}))
    assert [ax.get_title() for ax in fig.axes] == ["variant = reno", "variant = sack"]


@pytest.mark.parametrize(("raw", "message"), [
    ({"kind": "pie", "y": "g"}, "figure.kind: must be one of bar, line, cdf, heatmap"),
    ({"kind": "bar", "y": "g"}, "figure.x: a bar figure needs x"),
    ({"kind": "heatmap", "x": "a", "y": "g"}, "figure.row: a heatmap needs row"),
    ({"kind": "cdf"}, "figure.y: the metric to show is required"),
    ({"kind": "cdf", "y": "g", "colour": "red"}, "figure.colour: unknown key"),
    ({"kind": "cdf", "y": "g", "scale": 0}, "figure.scale: must be a non-zero number"),
])
def test_bad_figure_specs_name_the_field(raw, message):
    with pytest.raises(ValueError) as info:
        FigureSpec.parse(raw)
    assert message in str(info.value)


def test_a_missing_column_is_named():
    with pytest.raises(ValueError, match="no column 'nope' in the runs table"):
        sweepplots.draw_one(runs(), FigureSpec.parse({"kind": "cdf", "y": "nope"}))


def test_sweep_figures_of_a_single_run_directory_are_refused_clearly(tmp_path, capsys):
    from spikelab.cli import main

    (tmp_path / "runs.parquet").write_bytes(b"")
    assert main(["figure", str(tmp_path), "--kind", "cdf", "--y", "goodput_bps"]) == 2
    assert "not a sweep's results directory" in capsys.readouterr().err


def test_a_metric_is_shown_in_its_unit_and_the_legend_stays_off_the_data():
    frame = runs()
    frame["goodput_bps"] *= 1e5  # 1e6 .. 2e8 bit/s
    fig = sweepplots.draw_one(frame, FigureSpec.parse(
        {"kind": "bar", "x": "rate", "hue": "variant", "y": "goodput_bps"}))
    ax = fig.axes[0]
    # Mbit/s by the same rule as the summary tables, and the axis says so.
    assert ax.get_ylabel() == "goodput_bps [Mbit/s]"
    assert [p.get_height() for p in ax.patches][:3] == pytest.approx([1.1, 10.1, 100.1])
    assert ax.get_legend() is None and len(fig.legends) == 1  # outside the axes
    cdf = sweepplots.draw_one(frame, FigureSpec.parse(
        {"kind": "cdf", "hue": "variant", "y": "goodput_bps"}))
    assert cdf.axes[0].get_xlabel() == "goodput_bps [Mbit/s]"
