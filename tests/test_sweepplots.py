"""Sweep figures: what each kind draws is the mean (and 95% CI) of the runs behind it."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from spikelab.analysis.stats import mean_ci
from spikelab.figures import sweep as sweepplots
from spikelab.figures.sweep import FigureSpec


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


def test_a_runs_flows_are_averaged_before_the_interval():
    # Two runs of two flows each: the flows of a run are not independent samples, so the
    # interval is over the two runs' means (t(0.975, 1) = 12.706), not over four rows.
    frame = pd.DataFrame([
        {"run_id": r, "flow": f, "x": "a", "status": "ok", "goodput_bps": v}
        for r, f, v in (("r0", 0, 10.0), ("r0", 1, 20.0), ("r1", 0, 12.0), ("r1", 1, 22.0))])
    for kind in ("bar", "line"):
        spec = {"kind": kind, "x": "x", "y": "goodput_bps", "scale": 1}
        if kind == "line":
            frame = frame.assign(x=1.0)
        ax = sweepplots.draw_one(frame, FigureSpec.parse(spec)).axes[0]
        mean, half, n = mean_ci([15.0, 17.0])
        assert n == 2 and half == pytest.approx(12.706)  # sd √2 over √2 runs
        if kind == "bar":
            assert ax.patches[0].get_height() == pytest.approx(mean)
            lo, hi = [c for c in ax.collections if c.get_segments()][0].get_segments()[0][:, 1]
        else:
            band = [c for c in ax.collections if isinstance(c, PolyCollection)][0]
            ys = band.get_paths()[0].vertices[:, 1]
            lo, hi = ys.min(), ys.max()
        assert (hi - lo) / 2 == pytest.approx(half), kind
        # Over the four rows it would have been t(0.975, 3) · 5.89 / 2 = 9.37.
        assert mean_ci([10.0, 20.0, 12.0, 22.0])[1] == pytest.approx(9.3676, abs=1e-3)


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
    # A name is a file name stem inside figures/: it cannot climb out of it.
    ({"kind": "cdf", "y": "g", "name": "../../escape"}, "figure.name: a file name stem"),
    ({"kind": "cdf", "y": "g", "name": "a/b"}, "figure.name: a file name stem"),
    ({"kind": "cdf", "y": "g", "name": ".hidden"}, "figure.name: a file name stem"),
    ({"kind": "cdf", "y": "g", "source": "runs; DROP"}, "figure.source: the name of one of"),
    ({"kind": "bar", "x": "a", "y": "g", "hlines": 1}, "figure.hlines: must be a list of num"),
    ({"kind": "bar", "x": "a", "y": "g", "hlines": [True]}, "figure.hlines: must be a list"),
    ({"kind": "cdf", "y": "g", "hlines": [1]}, "figure.hlines: reference lines go on bar and"),
])
def test_bad_figure_specs_name_the_field(raw, message):
    with pytest.raises(ValueError) as info:
        FigureSpec.parse(raw)
    assert message in str(info.value)


def test_a_filtered_figure_gets_a_name_of_its_own():
    plain = FigureSpec.parse({"kind": "bar", "x": "a", "y": "g"})
    one = FigureSpec.parse({"kind": "bar", "x": "a", "y": "g", "where": "b = 1"})
    two = FigureSpec.parse({"kind": "bar", "x": "a", "y": "g", "where": "b = 2"})
    assert plain.stem() == "bar-g-a"
    assert len({plain.stem(), one.stem(), two.stem()}) == 3
    assert one.stem().startswith("bar-g-a-where-")
    assert FigureSpec.parse({"kind": "cdf", "y": "g", "name": "fig_2a.v1"}).stem() == "fig_2a.v1"


def test_reference_lines_cross_every_panel_at_their_y():
    fig = sweepplots.draw_one(runs(), FigureSpec.parse(
        {"kind": "bar", "x": "rate", "col": "variant", "y": "goodput_bps", "scale": 1,
         "hlines": [-1, 0, 1.5]}))
    for ax in fig.axes:
        ys = sorted(line.get_ydata()[0] for line in ax.get_lines()
                    if line.get_linestyle() == "--")
        assert ys == [-1.0, 0.0, 1.5]


def test_a_missing_column_is_named():
    with pytest.raises(ValueError, match="no column 'nope' in the runs table"):
        sweepplots.draw_one(runs(), FigureSpec.parse({"kind": "cdf", "y": "nope"}))


@pytest.mark.parametrize("raw, message", [
    ({"kind": "bar", "x": "rate", "y": "variant"},
     "figure 'bar-variant-rate': y: a bar figure's y must be a numeric column; 'variant' "
     "holds values such as 'reno'"),
    ({"kind": "cdf", "y": "variant"}, "y: a cdf figure's y must be a numeric column"),
    ({"kind": "line", "x": "variant", "y": "goodput_bps"},
     "x: a line figure's x must be a numeric column; 'variant' holds values such as 'reno'"),
])
def test_a_text_column_where_a_number_is_drawn_is_named(raw, message):
    """It was "internal error: Can only string multiply by an integer" (exit 1)."""
    with pytest.raises(ValueError) as info:
        sweepplots.draw_one(runs(), FigureSpec.parse(raw))
    assert message in str(info.value)


def test_figure_y_of_text_is_a_one_line_usage_error(tmp_path, capsys):
    import spikelab
    from spikelab.cli import main

    (tmp_path / "sw.toml").write_text('[sim]\nduration = "1s"\n[[flow]]\n[sweep]\n'
                                      '[sweep.params]\n"flow.tcp.variant" = ["reno", "sack"]\n')
    spikelab.sweep(tmp_path / "sw.toml", tmp_path / "sw", jobs=1, progress=False)
    code = main(["figure", str(tmp_path / "sw"), "--kind", "bar", "--x", "variant",
                 "--y", "variant"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "y: a bar figure's y must be a numeric column; 'variant'" in err


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


def _render(fig):
    """Lay the figure out and draw it (as saving it would); return the renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    return renderer


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("raw", [
    {"kind": "bar", "x": "rate", "hue": "variant", "y": "goodput_bps",
     "title": "Bytes delivered in 20 s (mean, 95% CI over 10 replications)"},
    {"kind": "bar", "x": "rate", "hue": "variant", "col": "replication", "y": "goodput_bps",
     "title": "a long title that runs across the whole width of the figure, as studies' do"},
    {"kind": "line", "x": "rate", "hue": "variant", "y": "goodput_bps", "title": "t"},
    {"kind": "cdf", "hue": "variant", "y": "goodput_bps", "title": "t"},
])
def test_legends_cover_neither_data_nor_titles(raw):
    """Drawn, the legend's box shares no pixel with any axes (where the data is) or the
    figure's title."""
    fig = sweepplots.draw_one(runs(), FigureSpec.parse(raw))
    renderer = _render(fig)
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert all(ax.get_legend() is None for ax in fig.axes)
    for ax in fig.axes:
        assert not _overlaps(box, ax.get_window_extent(renderer)), ax
    if fig._suptitle is not None:
        assert not _overlaps(box, fig._suptitle.get_window_extent(renderer))


def test_tick_labels_are_plain_numbers_in_the_axis_unit():
    """No offset or power of ten beside an axis (a second unit on it): the swept values of a
    log axis are its ticks, and values read as the unit says, with thousands separators."""
    frame = runs()
    frame["goodput_bps"] = frame["goodput_bps"] * 1e6 + 5e9  # 5,010 .. 7,002 Mbit/s
    fig = sweepplots.draw_one(frame, FigureSpec.parse(
        {"kind": "line", "x": "rate", "hue": "variant", "y": "goodput_bps"}))
    _render(fig)
    ax = fig.axes[0]
    assert ax.yaxis.get_offset_text().get_text() == ""
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d+)?", s) for s in labels), labels
    assert any("," in s for s in labels), labels
    # The swept values, as the sweep names them (parameter labels, not quantities).
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()] == ["10", "100",
                                                                              "1000"]
    frame = runs()
    frame["segments_sent"] = frame["rate"] * 100  # means 37,000 by variant
    counts = sweepplots.draw_one(frame, FigureSpec.parse(
        {"kind": "bar", "x": "variant", "y": "segments_sent"}))
    _render(counts)
    ticks = [t.get_text() for t in counts.axes[0].get_yticklabels() if t.get_text()]
    assert "10,000" in ticks and not any("." in t for t in ticks), ticks


def test_a_long_title_is_wrapped_inside_the_figure():
    title = "Reno, lossless, rwnd 64: spurious fast retransmits with and without the bug fix"
    fig = sweepplots.draw_one(runs(), FigureSpec.parse(
        {"kind": "bar", "x": "variant", "y": "goodput_bps", "title": title}))
    renderer = _render(fig)
    box = fig._suptitle.get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1, (box, fig.bbox)
    assert fig._suptitle.get_text().replace("\n", " ") == title
