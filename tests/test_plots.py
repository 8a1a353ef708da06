"""Figures are drawn from tables alone, as PNG and SVG; absent data means fewer figures."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from spikelab.figures import run as plots


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
    per_flow = [name for name in names if "_flow" in name]
    assert per_flow and all(name.endswith(("_flow0.png", "_flow0.svg")) for name in per_flow)
    assert sorted(set(names) - set(per_flow)) == ["flows_overview.png", "flows_overview.svg"]


def test_cwnd_and_seqack_figures_show_verdicts_and_undo(lte_handover_lossless):
    import spikelab

    r = spikelab.run(lte_handover_lossless, overrides=[
        'flow.tcp.spurious=["eifel","frto"]', "flow.tcp.block_fr_after_rto=true"])
    fig = plots.cwnd(r.timeseries, 0, 1448, zoom=(9.0, 13.0))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "Eifel spurious (1)" in labels, labels
    assert "undo (1)" in labels, labels
    fig = plots.seqack(r.packets, 0, (9.0, 13.0), r.timeseries)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "Eifel: spurious (1)" in labels, labels
    assert "undo (1)" in labels, labels
    # Without detectors nothing is added.
    plain = spikelab.run(lte_handover_lossless, trace="timeseries")
    fig = plots.cwnd(plain.timeseries, 0, 1448)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert not any("undo" in x or "Eifel" in x for x in labels), labels


def test_legends_are_outside_the_axes(tables):
    """No legend is drawn inside an axes (where it could cover data)."""
    for fig in (plots.seqack(tables["packets"], 0, None, tables["timeseries"]),
                plots.cwnd(tables["timeseries"], 0, 1000), plots.rtt(tables["timeseries"], 0)):
        assert fig.legends, fig
        assert all(ax.get_legend() is None for ax in fig.axes)


# ------------------------------------------------------------------------ many flows

def many_flows(n: int, points: int = 300) -> dict:
    """``n`` flows, each delivering at a constant rate of (flow + 1) * 8 kbit/s for 30 s,
    with a cwnd of (10 + flow % 5) segments, an srtt and one RTT sample per point."""
    mss = 1000
    runs = pa.table({"flow": pa.array(range(n), pa.int32()),
                     "mss": pa.array([mss] * n, pa.int64()),
                     "goodput_bps": pa.array((np.arange(n) + 1) * 8e3)})
    t = np.tile(np.arange(points, dtype=np.int64) * 100_000_000, n)
    flow = np.repeat(np.arange(n, dtype=np.int32), points)
    rate_bytes = (flow + 1) * 1e3  # bytes per second
    columns = {"rcv_nxt": t / 1e9 * rate_bytes, "cwnd": (10.0 + flow % 5) * mss,
               "srtt": np.full(t.size, 0.1), "rtt_sample": np.full(t.size, 0.1)}
    parts = [pa.table({"t_ns": t, "flow": flow, "var": pa.array([var] * t.size),
                       "value": np.asarray(value, float)}) for var, value in columns.items()]
    ts = pa.concat_tables(parts)
    ts = ts.set_column(2, "var", ts["var"].combine_chunks().dictionary_encode())
    return {"runs": runs, "timeseries": ts}


def test_a_thousand_flows_get_figures_for_the_first_flows_and_one_overview(tmp_path):
    written = plots.draw(many_flows(1000), tmp_path, max_flows=5)
    names = _names(written)
    per_flow = sorted(f"{stem}_flow{f}.{ext}" for stem in ("cwnd", "rtt") for f in range(5)
                      for ext in ("png", "svg"))
    assert names == sorted(per_flow + ["flows_overview.png", "flows_overview.svg"])
    assert len(list(tmp_path.iterdir())) == len(names)


def test_the_default_is_eight_flows_and_an_overview_from_two(tmp_path):
    nine = {"runs": many_flows(9)["runs"], "timeseries": many_flows(9)["timeseries"]}
    names = _names(plots.draw(nine, tmp_path / "nine"))
    assert "flows_overview.png" in names
    assert {n.rsplit("_flow", 1)[1].split(".")[0] for n in names if "_flow" in n} == {
        str(f) for f in range(8)}
    assert "flows_overview.png" in _names(plots.draw(many_flows(2), tmp_path / "two"))
    assert "flows_overview.png" not in _names(plots.draw(many_flows(1), tmp_path / "one"))


def test_the_overview_draws_every_flows_cwnd_on_one_axis_labelled_by_algorithm():
    """Up to OVERVIEW_LINES flows, the cwnd panel has one line per flow, labelled with the
    flow and its congestion control, in segments of its MSS (flow f: 10 + f % 5)."""
    tables = many_flows(3)
    runs = tables["runs"].append_column("cc", pa.array(["cubic", "newreno", "westwood"]))
    fig = plots.flows_overview(runs, tables["timeseries"])
    cwnd_ax = fig.axes[1]
    lines = {ln.get_label(): ln for ln in cwnd_ax.get_lines()}
    assert sorted(lines) == ["flow 0 (cubic)", "flow 1 (newreno)", "flow 2 (westwood)"]
    for f, label in enumerate(sorted(lines)):
        assert np.asarray(lines[label].get_ydata()) == pytest.approx(10.0 + f % 5)
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert legend == ["flow 0 (cubic)", "flow 1 (newreno)", "flow 2 (westwood)"]


def test_the_overview_shows_the_median_flow_and_every_flows_goodput():
    n = 1000
    fig = plots.flows_overview(many_flows(n)["runs"], many_flows(n)["timeseries"])
    rate_ax, cwnd_ax, share_ax = fig.axes
    median = next(ln for ln in rate_ax.get_lines() if ln.get_label() == "median flow")
    # Flow f delivers (f + 1) * 8 kbit/s: the median flow is at 500.5 * 8 kbit/s (within the
    # 0.1 s recording step of the synthetic rcv_nxt; the first bin starts at its first record).
    assert np.asarray(median.get_ydata())[1:] == pytest.approx(500.5 * 8e-3, rel=0.01)
    cwnd_median = next(ln for ln in cwnd_ax.get_lines() if ln.get_label() == "median flow")
    assert np.asarray(cwnd_median.get_ydata()) == pytest.approx(12.0)
    cdf = share_ax.get_lines()[0]
    assert len(cdf.get_ydata()) == n + 1 and cdf.get_ydata()[-1] == 1.0
    assert np.asarray(cdf.get_xdata())[-1] == pytest.approx(n * 8e-3)
    # A few flows are drawn one line (and one bar) each.
    fig = plots.flows_overview(many_flows(12)["runs"], many_flows(12)["timeseries"])
    assert len(fig.axes[0].collections[0].get_segments()) == 12
    assert len(fig.axes[1].get_lines()) == 12
    assert len(fig.axes[2].patches) == 12


def test_flows_that_deliver_nothing_count_as_zero_in_the_band():
    """Of 10 flows only flow 0 delivers (8 kbit/s): the median flow is at 0, not at 8 kbit/s."""
    tables = many_flows(10)
    ts = tables["timeseries"]
    keep = pa.compute.or_(pa.compute.not_equal(ts["var"], "rcv_nxt"),
                          pa.compute.equal(ts["flow"], 0))
    ts = ts.filter(keep)
    plots.OVERVIEW_LINES, old = 5, plots.OVERVIEW_LINES  # bands for 10 flows
    try:
        fig = plots.flows_overview(tables["runs"], ts)
    finally:
        plots.OVERVIEW_LINES = old
    median = next(ln for ln in fig.axes[0].get_lines() if ln.get_label() == "median flow")
    assert np.asarray(median.get_ydata()) == pytest.approx(0.0)


def test_the_overview_of_a_summary_run_says_what_is_missing():
    runs = many_flows(20)["runs"]
    fig = plots.flows_overview(runs, pa.table({}))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["not traced\n(trace level summary)"]


# --------------------------------------------------------------------------- seq/ack

def test_decimation_keeps_the_lowest_and_highest_point_of_every_bin():
    t = np.linspace(0.0, 10.0, 100_001)
    y = np.sin(t * 7.0)
    td, yd = plots._decimate(t, y, 0.0, 10.0, bins=500)
    assert td.size <= 1000 and np.all(np.diff(td) > 0)
    bins = np.clip((t / 10.0 * 500).astype(int), 0, 499)
    for b in (0, 123, 499):
        inside = (td >= t[bins == b][0]) & (td <= t[bins == b][-1])
        assert yd[inside].max() == y[bins == b].max()
        assert yd[inside].min() == y[bins == b].min()


def long_run(loss: bool) -> pa.Table:
    """One flow sending 1,000 segments of 1,000 B per second for 60 s, each ACKed 0.1 s
    later; with ``loss`` the segment sent at 30 s is dropped, the ACK stays at it until its
    retransmission 1.5 s later is ACKed 0.1 s after that."""
    send_t = np.arange(60_000) / 1000.0
    seq = np.arange(60_000, dtype=np.int64) * 1000
    ack_t, ack = send_t + 0.1, seq + 1000
    events = [("send", send_t, seq, np.zeros_like(seq))]
    if loss:
        lost = 30_000
        stuck = (ack_t >= 30.1) & (ack_t < 31.6)
        ack = np.where(stuck, seq[lost], ack)
        ack = np.where(ack_t >= 31.6, np.maximum(ack, seq[lost] + 1000), ack)
        events += [("drop", np.array([30.0005]), seq[lost:lost + 1], np.zeros(1, np.int64)),
                   ("retransmit", np.array([31.5]), seq[lost:lost + 1], np.zeros(1, np.int64))]
    events.append(("deliver", ack_t, np.zeros_like(ack), ack))
    t = np.concatenate([e[1] for e in events])
    order = np.argsort(t, kind="stable")
    kinds = np.concatenate([["ack" if e[0] == "deliver" else "data"] * e[1].size
                            for e in events])
    names = np.concatenate([[e[0]] * e[1].size for e in events])
    return pa.table({
        "t_ns": (t[order] * 1e9).astype(np.int64),
        "flow": np.zeros(t.size, np.int32),
        "event": pa.array(names[order]).dictionary_encode(),
        "kind": pa.array(kinds[order]).dictionary_encode(),
        "seq": np.concatenate([e[2] for e in events])[order],
        "ack": np.concatenate([e[3] for e in events])[order],
    })


def test_a_long_lossless_run_is_one_decimated_panel():
    fig = plots.seqack(long_run(loss=False), 0)
    assert len(fig.axes) == 1
    sent = next(ln for ln in fig.axes[0].get_lines() if ln.get_marker() == ".")
    assert 1000 <= len(sent.get_xdata()) <= 2 * plots.SEQACK_BINS
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "data sent (60,000)" in labels, labels


def test_a_loss_episode_is_found_shaded_and_enlarged():
    pk = long_run(loss=True)
    (episode,) = plots.episodes(pk, 0)
    assert episode.t0 == pytest.approx(30.0005) and episode.t1 == pytest.approx(31.6, abs=2e-3)
    assert (episode.retransmissions, episode.drops) == (1, 1)
    assert episode.stall_s == pytest.approx(1.5, abs=2e-3)
    fig = plots.seqack(pk, 0)
    top, panel = fig.axes
    assert "longest ACK stall" in panel.get_title() and "1 retransmission" in panel.get_title()
    lo, hi = panel.get_xlim()
    assert lo < 30.0 and 31.6 < hi and hi - lo < 3.0
    # Every retransmission and drop is drawn in the whole-run view too.
    orange = next(ln for ln in top.get_lines() if ln.get_marker() == "o")
    assert list(orange.get_xdata()) == pytest.approx([31.5])
    # The enlarged panel shows every send inside its window, not a decimated subset.
    sent = next(ln for ln in panel.get_lines() if ln.get_marker() == ".")
    assert abs(len(sent.get_xdata()) - (hi - lo) * 1000) <= 2


def test_the_lte_handover_seqack_enlarges_the_spike(lte_handover):
    import spikelab

    r = spikelab.run(lte_handover, trace="packets")
    found = plots.episodes(r.packets, 0, r.timeseries)
    spike = [e for e in found if e.t0 <= 10.5 <= e.t1]
    assert len(spike) == 1 and spike[0].stall_s > 1.0 and spike[0].rtos >= 1, found
    fig = plots.seqack(r.packets, 0, None, r.timeseries)
    panels = fig.axes[1:]
    assert 1 <= len(panels) <= plots.EPISODE_PANELS
    assert any(ax.get_xlim()[0] <= 10.5 <= ax.get_xlim()[1] for ax in panels)
    retx = r.packets.filter(pa.compute.equal(r.packets["event"], "retransmit")).num_rows
    orange = next(ln for ln in fig.axes[0].get_lines() if ln.get_marker() == "o")
    assert len(orange.get_xdata()) == retx


@pytest.mark.filterwarnings("error::UserWarning")
def test_a_seqack_of_one_instant_or_past_the_data_has_a_proper_time_axis():
    pk = long_run(loss=False).slice(0, 1)
    assert plots.seqack(pk, 0).axes[0].get_xlim() == (0.0, 1.0)
    assert plots.seqack(long_run(loss=False), 0, (70.0, None)).axes[0].get_xlim() == (70.0, 71.0)


# ------------------------------------------------------------- long runs, bounded memory

def _figure_data(fig) -> list:
    """Everything a figure draws that could differ: per axes its title, limits and every
    line's points, and the legend's labels."""
    out = []
    for ax in fig.axes:
        out.append((ax.get_title(), ax.get_xlim(), ax.get_ylim()))
        out += [(ln.get_xdata().tolist(), ln.get_ydata().tolist()) for ln in ax.get_lines()]
    out += [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    return out


@pytest.fixture(scope="module")
def lte_files(tmp_path_factory, lte_handover):
    import spikelab

    out = tmp_path_factory.mktemp("lte") / "run"
    spikelab.run(lte_handover, out=out, plots=False, progress=False)
    return out / "packets.parquet", out / "timeseries.parquet"


def test_layers_kept_in_duckdb_draw_the_seqack_figure_point_for_point(lte_files):
    """A long run's sends and ACKs stay in DuckDB, which thins them per pixel column: the
    same points numpy's decimation keeps of the layers read whole (the short run's way),
    and the same episodes, counts and panels."""
    from spikelab.figures.source import Traces

    packets, timeseries = lte_files
    figures = {}
    for load_rows in (None, 0):
        with Traces(packets, timeseries, load_rows=load_rows) as tr:
            assert tr.layer("packets", 0, "seq", event="send").is_held == (load_rows is None)
            figures[load_rows] = (plots.seqack(tr, 0, None, tr),
                                  plots.seqack(tr, 0, (9.0, 13.0), tr),
                                  plots.episodes(tr, 0, tr))
    held, kept = figures[None], figures[0]
    assert held[2] == kept[2] and len(held[2]) >= 1
    for a, b in zip(held[:2], kept[:2], strict=True):
        assert _figure_data(a) == _figure_data(b)
    sent = next(ln for ln in held[0].axes[0].get_lines() if ln.get_marker() == ".")
    assert len(sent.get_xdata()) < 14008  # decimated, not every send


def test_a_long_series_is_thinned_keeping_each_pixel_columns_extremes_and_ends(lte_files):
    from spikelab.figures import source

    _, timeseries = lte_files
    with source.Traces(None, timeseries) as whole, \
            source.Traces(None, timeseries, load_rows=0) as kept:
        t, v = plots._step(plots._series(whole, 0, "cwnd"), None, 20.0)
        tk, vk = plots._step(plots._series(kept, 0, "cwnd"), None, 20.0)
        tz, vz = plots._step(plots._series(kept, 0, "cwnd"), (9.0, 13.0), 13.0)
    assert t.size > 4 * source.BINS + 2 >= tk.size
    assert (tk[0], vk[0], tk[-1], vk[-1]) == (t[0], v[0], t[-1], v[-1])
    lo, hi = t[0], t[-2]  # the last point is the series held to its end
    bins = np.clip(((t[:-1] - lo) / (hi - lo) * source.BINS).astype(np.int64), 0,
                   source.BINS - 1)
    bins_k = np.clip(((tk[:-1] - lo) / (hi - lo) * source.BINS).astype(np.int64), 0,
                     source.BINS - 1)
    for b in np.unique(bins):
        assert v[:-1][bins == b].max() == vk[:-1][bins_k == b].max()
        assert v[:-1][bins == b].min() == vk[:-1][bins_k == b].min()
    # A zoom window: the value in force at its start is carried in, as for a held series.
    with source.Traces(None, timeseries) as whole:
        tw, vw = plots._step(plots._series(whole, 0, "cwnd"), (9.0, 13.0), 13.0)
    assert (tz[0], vz[0], tz[-1], vz[-1]) == (tw[0], vw[0], tw[-1], vw[-1]) == (
        9.0, vw[0], 13.0, vw[-1])


def test_the_overview_samples_every_flow_alike_from_duckdb():
    from spikelab.figures.source import Traces

    tables = many_flows(25, points=40)
    edges = np.linspace(0.0, 3.9, 101)
    flows = np.arange(25)
    with Traces(None, tables["timeseries"]) as whole, \
            Traces(None, tables["timeseries"], load_rows=0) as kept:
        for var in ("rcv_nxt", "cwnd"):
            a, b = whole.sampled(var, flows, edges), kept.sampled(var, flows, edges)
            assert np.isnan(a).any() is np.False_ and np.array_equal(a, b)
        assert _figure_data(plots.flows_overview(tables["runs"], whole)) == _figure_data(
            plots.flows_overview(tables["runs"], kept))


def test_no_long_layer_reaches_python_whole(lte_files, monkeypatch):
    """With layers longer than 500 rows kept in DuckDB, every figure of the run is drawn
    from at most a few points per pixel column of each layer (its 14,008 sends, 6,813 RTT
    samples and 7,000 cwnd changes never cross whole)."""
    from spikelab.figures import source

    packets, timeseries = lte_files
    fetched = []
    arrow = source.Traces.arrow

    def counted(self, sql, params=None):
        got = arrow(self, sql, params)
        fetched.append(got.num_rows)
        return got

    monkeypatch.setattr(source.Traces, "arrow", counted)
    monkeypatch.setattr(source, "LOAD_ROWS", 500)
    import pyarrow.parquet as pq

    runs = pq.read_table(packets.parent / "runs.parquet")
    names = plots.draw({"runs": runs, "packets": packets, "timeseries": timeseries},
                       packets.parent / "figures-bounded")
    assert len(names) == 6
    assert fetched and max(fetched) <= 4 * source.BINS + 2
