"""Figures drawn from result tables alone (never the simulator), as PNG and SVG.

Per flow N:
- ``seqack_flowN``: sequence numbers of data leaving the sender and ACK numbers arriving at
  it vs. time, in MB, like Kato et al. Fig. 4; retransmissions and drops marked, and the
  detectors' spurious verdicts and the responses at the sequence number of the episode's
  retransmission.
- ``cwnd_flowN``: cwnd and ssthresh in segments (bytes / MSS) vs. time, with vertical markers
  for RTO expirations and fast retransmits (red = spurious by ground truth, black = genuine),
  the spurious-retransmission detectors' verdicts along the top (one marker shape per
  detector: filled = declared spurious, hollow = declared genuine) and responses (diamonds at
  the cwnd they restored).
- ``rtt_flowN``: RTT samples, srtt and RTO vs. time, in seconds.

Only the first ``max_flows`` flows (the scenario's ``sim.figure_flows``, 8 by default) get
figures of their own. When a run has more flows, ``flows_overview`` shows all of them at once:
each flow's delivered data over time (thin lines, decimated) and every flow's goodput, sorted,
with Jain's fairness index.

A figure whose data is absent (e.g. a summary-only run) is skipped.
Matplotlib is used through ``Figure`` objects only: pyplot's global state and backend are
left alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import matplotlib
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .results import Zoom, atomic_write

FORMATS = ("png", "svg")
MB = 1e6
NS = 1e9
RASTERIZE_ABOVE = 5000  # points; denser layers are embedded in SVG as bitmaps
SPURIOUS, GENUINE = "tab:red", "black"
# Spurious-retransmission detectors: timeseries variable -> (label, marker, colour).
DETECTORS = {
    "verdict_eifel": ("Eifel", "v", "tab:purple"),
    "verdict_dsack": ("DSACK", "s", "tab:brown"),
    "verdict_frto": ("F-RTO", "^", "tab:cyan"),
}
UNDO_STYLE = {"marker": "D", "color": "tab:olive", "markersize": 7, "linestyle": "none"}


def _eq(table: pa.Table, column: str, value: object) -> pa.ChunkedArray:
    return pc.fill_null(pc.equal(table[column], value), False)


def _np(table: pa.Table, column: str) -> np.ndarray:
    return table[column].to_numpy()


def _window(table: pa.Table, zoom: Zoom) -> pa.Table:
    """Rows with t_ns inside the zoom window (a None bound is open)."""
    t0, t1 = zoom or (None, None)
    if t0 is not None:
        table = table.filter(pc.greater_equal(table["t_ns"], int(t0 * NS)))
    if t1 is not None:
        table = table.filter(pc.less_equal(table["t_ns"], int(t1 * NS)))
    return table


def _step(ts: pa.Table, var: str, zoom: Zoom, t_end: float) -> tuple[np.ndarray, np.ndarray]:
    """A recorded-on-change variable as step data (seconds, value) over the zoom window:
    the value in force at the window start is carried in, the last value held to ``t_end``."""
    rows = ts.filter(_eq(ts, "var", var))
    t, v = _np(rows, "t_ns") / NS, _np(rows, "value").astype(float)
    if t.size == 0:
        return t, v
    t0, t1 = zoom or (None, None)
    if t0 is not None:
        first = max(int(np.searchsorted(t, t0, side="right")) - 1, 0)
        t, v = t[first:].copy(), v[first:]
        t[0] = max(t[0], t0)
    if t1 is not None:
        keep = int(np.searchsorted(t, t1, side="right"))
        t, v = t[:keep], v[:keep]
    if t.size and t_end > t[-1]:
        t, v = np.append(t, t_end), np.append(v, v[-1])
    return t, v


def _end(ts: pa.Table, zoom: Zoom) -> float:
    """Where step lines end: the zoom window's end, else the flow's last recorded change."""
    if zoom and zoom[1] is not None:
        return zoom[1]
    return pc.max(ts["t_ns"]).as_py() / NS


def _new_figure(title: str, ylabel: str, zoom: Zoom) -> tuple[Figure, object]:
    fig = Figure(figsize=(9, 4.8), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel("time [s]")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if zoom:
        ax.set_xlim(left=zoom[0], right=zoom[1])
    return fig, ax


def _points(ax, t: np.ndarray, y: np.ndarray, **style) -> None:
    if t.size:
        ax.plot(t, y, linestyle="none", rasterized=t.size > RASTERIZE_ABOVE, **style)


def _steps(ax, t: np.ndarray, y: np.ndarray, **style) -> None:
    ax.step(t, y, where="post", rasterized=t.size > RASTERIZE_ABOVE, **style)


def _save(fig: Figure, figdir: Path, stem: str) -> list[Path]:
    paths = []
    with matplotlib.rc_context({"svg.hashsalt": "spikelab", "svg.fonttype": "none"}):
        for fmt in FORMATS:
            path = figdir / f"{stem}.{fmt}"
            metadata = {"Date": None} if fmt == "svg" else None
            atomic_write(path, lambda tmp, fmt=fmt, metadata=metadata: fig.savefig(
                tmp, format=fmt, dpi=120, metadata=metadata))
            paths.append(path)
    return paths


def _verdict_rows(ts: pa.Table | None, var: str, zoom: Zoom) -> pa.Table | None:
    if ts is None or ts.num_rows == 0 or "seq" not in ts.column_names:
        return None
    return _window(ts.filter(_eq(ts, "var", var)), zoom)


def seqack(packets: pa.Table, flow: int, zoom: Zoom = None,
           timeseries: pa.Table | None = None) -> Figure | None:
    """Sequence/ACK numbers vs. time for one flow (None if the flow has no packet events).

    With ``timeseries``, spurious verdicts (filled markers, one shape per detector) and
    responses (diamonds) are drawn at the sequence number of their episode's retransmission.
    """
    pk = packets.filter(_eq(packets, "flow", flow))
    if pk.num_rows == 0:
        return None
    pk = _window(pk, zoom)
    fig, ax = _new_figure(f"flow {flow}: sequence and ACK numbers", "sequence / ACK [MB]", zoom)

    def rows(**match: str) -> pa.Table:
        table = pk
        for column, value in match.items():
            table = table.filter(_eq(table, column, value))
        return table

    sent, retx = rows(event="send"), rows(event="retransmit")
    acks = rows(event="deliver", kind="ack")
    data_drops, ack_drops = rows(event="drop", kind="data"), rows(event="drop", kind="ack")
    if acks.num_rows:
        _steps(ax, _np(acks, "t_ns") / NS, _np(acks, "ack") / MB, color="tab:green",
               linewidth=1, label=f"ACK received ({acks.num_rows})")
    _points(ax, _np(sent, "t_ns") / NS, _np(sent, "seq") / MB, marker=".", markersize=2,
            color="tab:blue", label=f"data sent ({sent.num_rows})")
    _points(ax, _np(retx, "t_ns") / NS, _np(retx, "seq") / MB, marker="o", markersize=5,
            markerfacecolor="none", color="tab:orange",
            label=f"retransmitted ({retx.num_rows})")
    _points(ax, _np(data_drops, "t_ns") / NS, _np(data_drops, "seq") / MB, marker="x",
            markersize=6, color="tab:red", label=f"data dropped ({data_drops.num_rows})")
    _points(ax, _np(ack_drops, "t_ns") / NS, _np(ack_drops, "ack") / MB, marker="x",
            markersize=5, color="tab:purple", label=f"ACK dropped ({ack_drops.num_rows})")
    ts = None if timeseries is None else timeseries.filter(_eq(timeseries, "flow", flow))
    for var, (label, marker, colour) in DETECTORS.items():
        rows = _verdict_rows(ts, var, zoom)
        if rows is None:
            continue
        rows = rows.filter(pc.equal(rows["value"], 1.0))
        _points(ax, _np(rows, "t_ns") / NS, _np(rows, "seq") / MB, marker=marker,
                markersize=9, color=colour, label=f"{label}: spurious ({rows.num_rows})")
    undo = _verdict_rows(ts, "undo", zoom)
    if undo is not None and undo.num_rows:
        ax.plot(_np(undo, "t_ns") / NS, _np(undo, "seq") / MB, label=f"undo ({undo.num_rows})",
                **UNDO_STYLE)
    if ax.has_data():
        ax.legend(loc="upper left", fontsize="small", markerscale=2)
    return fig


def _markers(ax, ts: pa.Table, zoom: Zoom) -> list[Line2D]:
    """Vertical lines at RTO expirations (solid) and fast retransmits (dashed)."""
    handles = []
    for var, style, what in (("rto_expiry", "-", "RTO"), ("fast_retx", "--", "fast retx")):
        rows = _window(ts.filter(_eq(ts, "var", var)), zoom)
        t, spurious = _np(rows, "t_ns") / NS, _np(rows, "value") > 0.5
        for mask, colour, label in ((spurious, SPURIOUS, "spurious"), (~spurious, GENUINE,
                                                                          "genuine")):
            if mask.any():
                ax.vlines(t[mask], 0, 1, transform=ax.get_xaxis_transform(), colors=colour,
                          linestyles=style, linewidth=0.8, alpha=0.7,
                          rasterized=mask.sum() > RASTERIZE_ABOVE)
                handles.append(Line2D([], [], color=colour, linestyle=style, linewidth=0.8,
                                      label=f"{what} {label} ({int(mask.sum())})"))
    return handles


def _verdicts(ax, ts: pa.Table, mss: int, zoom: Zoom) -> list[Line2D]:
    """Detector verdicts along the top of the axes and responses at the cwnd they set."""
    handles = []
    for var, (label, marker, colour) in DETECTORS.items():
        rows = _verdict_rows(ts, var, zoom)
        if rows is None or rows.num_rows == 0:
            continue
        t, value = _np(rows, "t_ns") / NS, _np(rows, "value")
        for mask, face, what in ((value == 1.0, colour, "spurious"),
                                 (value == 0.0, "none", "genuine")):
            if mask.any():
                ax.plot(t[mask], np.full(mask.sum(), 0.97), transform=ax.get_xaxis_transform(),
                        marker=marker, markersize=7, linestyle="none", color=colour,
                        markerfacecolor=face, clip_on=False)
                handles.append(Line2D([], [], marker=marker, linestyle="none", color=colour,
                                      markerfacecolor=face,
                                      label=f"{label} {what} ({int(mask.sum())})"))
    undo = _verdict_rows(ts, "undo", zoom)
    if undo is not None and undo.num_rows:
        ax.plot(_np(undo, "t_ns") / NS, _np(undo, "value") / mss, **UNDO_STYLE)
        handles.append(Line2D([], [], label=f"undo ({undo.num_rows})", **UNDO_STYLE))
    return handles


def cwnd(timeseries: pa.Table, flow: int, mss: int, zoom: Zoom = None) -> Figure | None:
    """cwnd and ssthresh in segments vs. time (None if the flow has no cwnd series)."""
    ts = timeseries.filter(_eq(timeseries, "flow", flow))
    if not pc.any(_eq(ts, "var", "cwnd")).as_py():
        return None
    t_end = _end(ts, zoom)
    t, v = _step(ts, "cwnd", zoom, t_end)
    fig, ax = _new_figure(f"flow {flow}: congestion window", f"segments (MSS = {mss} B)", zoom)
    _steps(ax, t, v / mss, color="tab:blue", label="cwnd")
    t, v = _step(ts, "ssthresh", zoom, t_end)
    v = np.where(np.isfinite(v), v, np.nan)  # +inf before the first loss is not drawn
    if np.isfinite(v).any():
        _steps(ax, t, v / mss, color="tab:green", linestyle="--", label="ssthresh")
    ax.set_ylim(bottom=0)
    handles, _ = ax.get_legend_handles_labels()
    fig.legend(handles=handles + _markers(ax, ts, zoom) + _verdicts(ax, ts, mss, zoom),
               loc="outside right upper", fontsize="small")
    return fig


def rtt(timeseries: pa.Table, flow: int, zoom: Zoom = None) -> Figure | None:
    """RTT samples, srtt and RTO vs. time (None if the flow has no RTT data)."""
    ts = timeseries.filter(_eq(timeseries, "flow", flow))
    samples = ts.filter(_eq(ts, "var", "rtt_sample"))
    srtt_rows = ts.filter(_eq(ts, "var", "srtt"))
    if samples.num_rows == 0 and srtt_rows.num_rows == 0:
        return None
    t_end = _end(ts, zoom)
    fig, ax = _new_figure(f"flow {flow}: RTT and RTO", "seconds", zoom)
    samples = _window(samples, zoom)
    _points(ax, _np(samples, "t_ns") / NS, _np(samples, "value"), marker=".", markersize=3,
            color="tab:blue", label=f"RTT sample ({samples.num_rows})")
    for var, colour in (("srtt", "tab:green"), ("rto", "tab:red")):
        t, v = _step(ts, var, zoom, t_end)
        if t.size:
            _steps(ax, t, v, color=colour, linewidth=1, label=var)
    ax.set_ylim(bottom=0)
    if ax.has_data():
        fig.legend(loc="outside right upper", fontsize="small")
    return fig


OVERVIEW_POINTS = 400  # per flow in the overview: enough for a line, cheap for 1,000 flows


def jain(values: np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2); 1 when all are equal."""
    values = np.asarray(values, dtype=float)
    square_sum = float((values**2).sum())
    return float(values.sum() ** 2 / (values.size * square_sum)) if square_sum > 0 else 1.0


def flows_overview(runs: pa.Table, timeseries: pa.Table, zoom: Zoom = None) -> Figure:
    """All flows at once: delivered data over time (from ``rcv_nxt``) and goodput per flow."""
    from matplotlib.collections import LineCollection

    fig = Figure(figsize=(11, 4.8), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=(3, 2))
    n = runs.num_rows
    left.set_title(f"data delivered, {n:,} flows")
    left.set_xlabel("time [s]")
    left.set_ylabel("delivered [MB]")
    left.grid(True, alpha=0.3)
    if timeseries.num_rows:
        rows = _window(timeseries.filter(_eq(timeseries, "var", "rcv_nxt")), zoom)
        flow, t = _np(rows, "flow"), _np(rows, "t_ns") / NS
        value = _np(rows, "value") / MB
        order = np.argsort(flow, kind="stable")
        flow, t, value = flow[order], t[order], value[order]
        bounds = np.flatnonzero(np.diff(flow)) + 1
        segments = []
        for ts_, vs in zip(np.split(t, bounds), np.split(value, bounds), strict=True):
            step = max(1, ts_.size // OVERVIEW_POINTS)
            segments.append(np.column_stack([ts_[::step], vs[::step]]))
        if segments and t.size:
            left.add_collection(LineCollection(segments, linewidths=0.6, alpha=0.5))
            left.autoscale()
    if zoom:
        left.set_xlim(left=zoom[0], right=zoom[1])
    goodput = np.sort(_np(runs, "goodput_bps") / 1e6)[::-1]
    right.bar(np.arange(goodput.size), goodput, width=1.0, color="tab:blue")
    right.set_title(f"goodput per flow (Jain's index {jain(goodput):.3f})")
    right.set_xlabel("flows, sorted")
    right.set_ylabel("goodput [Mbit/s]")
    right.grid(True, axis="y", alpha=0.3)
    return fig


def draw(tables: Mapping[str, pa.Table], figdir: str | os.PathLike[str],
         zoom: Zoom = None, max_flows: int = 8) -> list[Path]:
    """Draw every figure the tables support into ``figdir``; return the files written.

    ``tables`` maps ``runs``/``timeseries``/``packets`` to tables (missing or empty tables
    just mean fewer figures). ``zoom`` is a (t0, t1) window in seconds, either bound None.
    Per-flow figures are drawn for the first ``max_flows`` flows; with more flows, one
    ``flows_overview`` figure shows them all.
    """
    runs = tables.get("runs")
    if runs is None or runs.num_rows == 0:
        return []
    empty = pa.table({})
    packets, timeseries = tables.get("packets", empty), tables.get("timeseries", empty)
    figdir = Path(figdir)
    written: list[Path] = []
    flows = list(zip(_np(runs, "flow").tolist(), _np(runs, "mss").tolist(), strict=True))
    if len(flows) > max_flows:
        figdir.mkdir(parents=True, exist_ok=True)
        written += _save(flows_overview(runs, timeseries, zoom), figdir, "flows_overview")
    for flow, mss in flows[:max_flows]:
        figures = {
            "seqack": (seqack(packets, flow, zoom, timeseries if timeseries.num_rows else None)
                       if packets.num_rows else None),
            "cwnd": cwnd(timeseries, flow, mss, zoom) if timeseries.num_rows else None,
            "rtt": rtt(timeseries, flow, zoom) if timeseries.num_rows else None,
        }
        for stem, fig in figures.items():
            if fig is not None:
                figdir.mkdir(parents=True, exist_ok=True)
                written += _save(fig, figdir, f"{stem}_flow{flow}")
    return written
