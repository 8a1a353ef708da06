"""Figures drawn from result tables alone (never the simulator), as PNG and SVG.

Per flow N:
- ``seqack_flowN``: sequence numbers of data leaving the sender and ACK numbers arriving at
  it vs. time, in MB, like Kato et al. Fig. 4; retransmissions and drops marked, and the
  detectors' spurious verdicts and the responses at the sequence number of the episode's
  retransmission. By default two rows: the whole run on top (in-order sends and ACKs reduced
  to the lowest and highest point per pixel column, every retransmission, drop, verdict and
  undo drawn) with its loss/stall episodes shaded and lettered, and below it up to three
  episodes enlarged at full resolution: the first, the one with the longest ACK stall and
  the one with the most retransmissions. A run without an episode is the top view alone;
  a zoomed figure is its window alone.
- ``cwnd_flowN``: cwnd and ssthresh in segments (bytes / MSS) vs. time, with vertical markers
  for RTO expirations and fast retransmits (red = spurious by ground truth, black = genuine),
  the spurious-retransmission detectors' verdicts along the top (one marker shape per
  detector: filled = declared spurious, hollow = declared genuine) and responses (diamonds at
  the cwnd they restored).
- ``rtt_flowN``: RTT samples, srtt and RTO vs. time, in seconds.
- ``destinations_flowN`` (SCTP flows): each destination's cwnd (top) and srtt and RTO (bottom,
  log scale), with the time it spent inactive shaded and the failovers marked (paper 004 §5).

Only the first ``max_flows`` flows (the scenario's ``sim.figure_flows``, 8 by default) get
figures of their own. When a run has more flows, ``flows_overview`` shows all of them at once:
goodput over time and cwnd over time (one thin line per flow up to 20 flows; beyond, the
median flow and the band of the 10-90 % of flows, on 100 time bins) and every flow's goodput
(one bar per flow up to 32 flows, beyond a CDF), titled with Jain's fairness index.

Every figure reads its rows through :class:`.source.Traces`, one flow and layer at a time:
a short run's layers whole, a long run's thinned per pixel column by DuckDB, so the figures
of an hour-long packets trace take bounded memory.

Legends are outside the axes, so they never cover data.
A figure whose data is absent (e.g. a summary-only run) is skipped.
Matplotlib is used through ``Figure`` objects only: pyplot's global state and backend are
left alone.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..store.results import Zoom, atomic_write
from .source import BINS, Layer, Traces, decimate

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
    "verdict_linux": ("Linux undo", "D", "tab:olive"),
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


def _step(layer: Layer, zoom: Zoom, t_end: float,
          thin: str = "steps") -> tuple[np.ndarray, np.ndarray]:
    """A recorded-on-change variable (a layer in file order) as step data (seconds, value)
    over the zoom window: the value in force at the window start is carried in, the last
    value held to ``t_end``. A layer kept in DuckDB comes thinned per pixel column."""
    t0, t1 = zoom or (None, None)
    t_ns, v = layer.window(t0, t1, carry="at" if t0 is not None else None, thin=thin)
    t, v = t_ns / NS, v.astype(float)
    if t.size == 0:
        return t, v
    if t0 is not None:
        t[0] = max(t[0], t0)
    if t.size and t_end > t[-1]:
        t, v = np.append(t, t_end), np.append(v, v[-1])
    return t, v


def _end(tr: Traces, flow: int, zoom: Zoom) -> float:
    """Where step lines end: the zoom window's end, else the flow's last recorded change."""
    if zoom and zoom[1] is not None:
        return zoom[1]
    return tr.extent("timeseries", flow)[1] / NS


@contextlib.contextmanager
def _traces(packets: pa.Table | Traces | None = None,
            timeseries: pa.Table | Traces | None = None) -> Iterator[Traces]:
    """The tables given as :class:`Traces` (one given as Traces is used as it is), and the
    DuckDB tables a figure made dropped when it is done."""
    given = next((x for x in (packets, timeseries) if isinstance(x, Traces)), None)
    if given is not None:
        with given.scope():
            yield given
        return
    with Traces(packets, timeseries) as tr:
        yield tr


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


def _verdict_rows(tr: Traces, flow: int, var: str, zoom: Zoom) -> pa.Table | None:
    if not tr.has("timeseries", "seq"):
        return None
    return _window(tr.table("timeseries", flow, ["t_ns", "value", "seq"], var=var), zoom)


SEQACK_BINS = BINS  # a decimated layer keeps the lowest and highest point of each time bin
EPISODE_PANELS = 3  # enlarged loss/stall episodes under the whole-run view


@dataclass(frozen=True)
class Episode:
    """A stretch of a flow where something went wrong: retransmissions, drops, timer
    expiries and ACK stalls closer together than a few RTTs, merged into one interval."""

    t0: float
    t1: float
    retransmissions: int
    drops: int
    rtos: int
    stall_s: float  # the longest time without the cumulative ACK advancing, inside it


# Layers of a seq/ack figure: key -> (label, plot style, decimated in a long view).
_LAYERS = {
    "sent": ("data sent", {"marker": ".", "color": "tab:blue"}, True),
    "retx": ("retransmitted", {"marker": "o", "markerfacecolor": "none",
                               "color": "tab:orange"}, False),
    "tlp": ("loss probe (TLP)", {"marker": "D", "markerfacecolor": "none",
                                 "color": "tab:green"}, False),
    "data_drop": ("data dropped", {"marker": "x", "color": "tab:red"}, False),
    "ack_drop": ("ACK dropped", {"marker": "x", "color": "tab:purple"}, False),
}
_SIZES = {"sent": 2, "retx": 5, "tlp": 6, "data_drop": 6, "ack_drop": 5}


def _plural(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def _decimate(t: np.ndarray, y: np.ndarray, lo: float, hi: float,
              bins: int = SEQACK_BINS) -> tuple[np.ndarray, np.ndarray]:
    """The points of each of ``bins`` time bins with the lowest and the highest y (in time
    order): what a figure of that width shows, at any length of run."""
    return decimate(t, y, lo, hi, bins)


def _seqack_layers(tr: Traces, flow: int, unit: float = MB) -> dict[str, Layer]:
    """The layers of a seq/ack figure (t_ns, value; y is value / ``unit``: MB, or TSNs with
    ``unit`` 1), each in time order; detector verdicts and undo from the timeseries at the
    sequence number of their episode's retransmission. An SCTP flow's ACK layer is its
    SACKs' cumulative TSN acks (the HEARTBEAT-ACKs and set-up chunks, which carry none, are
    left out). The sends and ACKs of a long run stay in DuckDB; the rest is read whole."""

    def rows(column: str, hold: bool = False, **match: str) -> Layer:
        return tr.layer("packets", flow, column, positive=unit == 1 and column == "ack",
                        hold=hold, **match)

    layers = {
        "ack": rows("ack", event="deliver", kind="ack"),
        "sent": rows("seq", event="send"),
        "retx": rows("seq", True, event="retransmit"),
        "tlp": rows("seq", True, event="tlp"),
        "data_drop": rows("seq", True, event="drop", kind="data"),
        "ack_drop": rows("ack", True, event="drop", kind="ack"),
    }
    for var in (*DETECTORS, "undo"):
        found = _verdict_rows(tr, flow, var, None)
        if found is None or found.num_rows == 0:
            continue
        if var != "undo":
            found = found.filter(pc.equal(found["value"], 1.0))
        layers[var] = Layer.held(_np(found, "t_ns"), _np(found, "seq"))
    return layers


def _rtt_estimate(tr: Traces, flow: int) -> float:
    """The flow's median smoothed RTT in seconds (0.1 s when unknown)."""
    if not tr.rows("timeseries"):
        return 0.1
    median = tr.layer("timeseries", flow, "value", order="file", var="srtt").median()
    return 0.1 if median is None else median


def episodes(packets: pa.Table | Traces, flow: int,
             timeseries: pa.Table | Traces | None = None) -> list[Episode]:
    """Loss and stall episodes of one flow, in time order (see :class:`Episode`).

    An ACK stall is a gap of more than max(0.2 s, 3 RTT) between two advances of the
    cumulative ACK; events closer than max(0.5 s, 4 RTT) belong to one episode.
    """
    with _traces(packets, timeseries) as tr:
        return _episodes(_seqack_layers(tr, flow), tr, flow)


def _episodes(layers: Mapping[str, Layer], tr: Traces, flow: int) -> list[Episode]:
    rtt = _rtt_estimate(tr, flow)
    stall_min, merge_gap = max(0.2, 3 * rtt), max(0.5, 4 * rtt)
    # Each stall: from an advance of the ACK to the next one, longer than stall_min.
    stall_a, stall_b = layers["ack"].stalls(stall_min)
    gaps = stall_b - stall_a
    rto_t, fr_t = np.empty(0), np.empty(0)
    if tr.rows("timeseries"):
        rto_t = np.sort(_np(tr.table("timeseries", flow, ["t_ns"], var="rto_expiry"), "t_ns")
                        / NS)
        fr_t = _np(tr.table("timeseries", flow, ["t_ns"], var="fast_retx"), "t_ns") / NS
    points = np.concatenate([layers["retx"].t, layers["data_drop"].t,
                             layers["ack_drop"].t, rto_t, fr_t])
    starts = np.concatenate([points, stall_a])
    ends = np.concatenate([points, stall_b])
    if starts.size == 0:
        return []
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    merged: list[list[float]] = []
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        if merged and a <= merged[-1][1] + merge_gap:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])

    def count(t: np.ndarray, a: float, b: float) -> int:
        return int(np.searchsorted(t, b, side="right") - np.searchsorted(t, a, side="left"))

    drops = np.sort(np.concatenate([layers["data_drop"].t, layers["ack_drop"].t]))
    out = []
    for a, b in merged:
        inside = (stall_a >= a) & (stall_b <= b)
        out.append(Episode(a, b, count(layers["retx"].t, a, b), count(drops, a, b),
                           count(rto_t, a, b),
                           float(gaps[inside].max()) if inside.any() else 0.0))
    return out


def _enlarged(found: list[Episode], run_s: float, rtt: float,
              panels: int = EPISODE_PANELS) -> list[tuple[Episode, tuple[float, float], str]]:
    """The episodes worth a panel of their own: the first, the one with the longest ACK
    stall, the one with the most retransmissions (then the next ones in time), each with
    its window (padded; a long episode shows its first stretch) and why it was chosen."""
    why: dict[int, list[str]] = {}
    if found:
        why.setdefault(0, []).append("first")
        stall = max(range(len(found)), key=lambda i: found[i].stall_s)
        if found[stall].stall_s > 0:
            why.setdefault(stall, []).append("longest ACK stall")
        most = max(range(len(found)), key=lambda i: found[i].retransmissions)
        if found[most].retransmissions > 0:
            why.setdefault(most, []).append("most retransmissions")
    for i in range(len(found)):
        if len(why) >= panels:
            break
        why.setdefault(i, [])
    chosen = sorted(why)[:panels] if len(why) <= panels else sorted(
        sorted(why, key=lambda i: -len(why[i]))[:panels])
    longest = max(3.0, 10 * rtt, 0.15 * run_s)
    out = []
    for i in chosen:
        ep = found[i]
        span = min(ep.t1 - ep.t0, longest)
        pad = max(0.25, 2 * rtt, 0.1 * span)
        window = (max(0.0, ep.t0 - pad), min(run_s, ep.t0 + span + pad))
        note = ", ".join(why[i])
        if ep.t1 - ep.t0 > longest:
            note = (note + "; " if note else "") + f"first {span:.1f} s of {ep.t1 - ep.t0:.1f} s"
        out.append((ep, window, note))
    return out


def _draw_seqack(ax, layers: Mapping[str, Layer], window: tuple[float, float], unit: float,
                 scale: float) -> dict[str, Line2D]:
    """Draw every layer inside ``window`` (the ACK line carried in from before it); the
    sends and ACKs decimated to what the axes can show. Returns the artists by layer."""
    lo, hi = window
    if hi <= lo:  # one instant, or a zoom window beyond the data: a second's width
        hi = lo + 1.0
    drawn: dict[str, Line2D] = {}
    t_ns, v = layers["ack"].window(lo, hi, carry="before", thin="extremes")
    if t_ns.size:
        tw, yw = t_ns / NS, v / unit
        (drawn["ack"],) = ax.step(tw, yw, where="post", color="tab:green", linewidth=1,
                                  rasterized=tw.size > RASTERIZE_ABOVE)
    for key, (_, style, decimated) in _LAYERS.items():
        t_ns, v = layers[key].window(lo, hi, thin="extremes" if decimated else None)
        if t_ns.size:
            tw, yw = t_ns / NS, v / unit
            (drawn[key],) = ax.plot(tw, yw, linestyle="none", markersize=_SIZES[key] * scale,
                                    rasterized=tw.size > RASTERIZE_ABOVE, **style)
    for var, (_, marker, colour) in DETECTORS.items():
        if var in layers:
            t, y = layers[var].t, layers[var].v / unit
            keep = (t >= lo) & (t <= hi)
            if keep.any():
                (drawn[var],) = ax.plot(t[keep], y[keep], linestyle="none", marker=marker,
                                        markersize=9 * scale, color=colour)
    if "undo" in layers:
        t, y = layers["undo"].t, layers["undo"].v / unit
        keep = (t >= lo) & (t <= hi)
        if keep.any():
            (drawn["undo"],) = ax.plot(t[keep], y[keep], **UNDO_STYLE)
    ax.set_xlim(lo, hi)
    return drawn


def _seqack_legend(layers: Mapping[str, Layer], window: tuple[float, float]) -> list[Line2D]:
    """Legend entries for the layers present in ``window``, with their full counts."""
    lo, hi = window

    def n(key: str) -> int:
        return layers[key].count(lo, hi)

    handles = []
    if n("ack"):
        handles.append(Line2D([], [], color="tab:green", linewidth=1,
                              label=f"ACK received ({n('ack'):,})"))
    for key, (label, style, _) in _LAYERS.items():
        if n(key):
            handles.append(Line2D([], [], linestyle="none", markersize=max(_SIZES[key], 5),
                                  label=f"{label} ({n(key):,})", **style))
    for var, (label, marker, colour) in DETECTORS.items():
        if var in layers and n(var):
            handles.append(Line2D([], [], linestyle="none", marker=marker, markersize=9,
                                  color=colour, label=f"{label}: spurious ({n(var):,})"))
    if "undo" in layers and n("undo"):
        handles.append(Line2D([], [], label=f"undo ({n('undo'):,})", **UNDO_STYLE))
    return handles


def seqack(packets: pa.Table | Traces, flow: int, zoom: Zoom = None,
           timeseries: pa.Table | Traces | None = None) -> Figure | None:
    """Sequence/ACK numbers vs. time for one flow (None if the flow has no packet events).

    Without ``zoom``: the whole run on top (in-order sends and ACKs decimated to the lowest
    and highest point per pixel column; every retransmission, drop and verdict drawn) with
    its loss/stall episodes shaded, and up to three episodes enlarged below it (the first,
    the one with the longest ACK stall, the one with the most retransmissions). With
    ``zoom``: that window alone. With ``timeseries``, spurious verdicts (filled markers,
    one shape per detector) and responses (diamonds) are drawn at the sequence number of
    their episode's retransmission. The legend is outside the axes.
    """
    with _traces(packets, timeseries) as tr:
        return _seqack(tr, flow, zoom)


def _seqack(tr: Traces, flow: int, zoom: Zoom) -> Figure | None:
    extent = tr.extent("packets", flow)
    if extent is None:
        return None
    sctp = tr.has("packets", "dest") and tr.maximum("packets", "dest", flow) >= 0
    unit = 1 if sctp else MB
    layers = _seqack_layers(tr, flow, unit)
    run = (extent[0] / NS, extent[1] / NS)
    if sctp:  # TSNs count DATA chunks, not bytes
        title, ylabel = f"flow {flow}: TSN and cumulative TSN ack", "TSN"
    else:
        title, ylabel = f"flow {flow}: sequence and ACK numbers", "sequence / ACK [MB]"
    if zoom:
        window = (run[0] if zoom[0] is None else zoom[0], run[1] if zoom[1] is None else zoom[1])
        fig, ax = _new_figure(title, ylabel, None)
        _draw_seqack(ax, layers, window, unit, 1.0)
        fig.legend(handles=_seqack_legend(layers, window), loc="outside right upper",
                   fontsize="small")
        return fig
    panels = _enlarged(_episodes(layers, tr, flow), run[1], _rtt_estimate(tr, flow))
    if not panels:
        fig, ax = _new_figure(title, ylabel, None)
        _draw_seqack(ax, layers, run, unit, 0.6)
        fig.legend(handles=_seqack_legend(layers, run), loc="outside right upper",
                   fontsize="small")
        return fig
    fig = Figure(figsize=(12, 8), layout="constrained")
    grid = fig.add_gridspec(2, len(panels), height_ratios=(1, 1.25))
    top = fig.add_subplot(grid[0, :])
    _draw_seqack(top, layers, run, unit, 0.6)
    top.set_title(f"{title}: whole run (shaded: enlarged below)")
    top.set_xlabel("time [s]")
    top.set_ylabel(ylabel)
    top.grid(True, alpha=0.3)
    for i, (ep, window, note) in enumerate(panels):
        letter = "ABCDEFGH"[i]
        top.axvspan(*window, color="0.85", zorder=0)
        top.text((window[0] + window[1]) / 2, 0.97, letter, transform=top.get_xaxis_transform(),
                 ha="center", va="top", fontweight="bold")
        ax = fig.add_subplot(grid[1, i])
        _draw_seqack(ax, layers, window, unit, 1.0)
        stats = [_plural(ep.retransmissions, "retransmission"), _plural(ep.drops, "drop")]
        if ep.rtos:
            stats.append(_plural(ep.rtos, "RTO"))
        if ep.stall_s:
            stats.append(f"stall {ep.stall_s:.2f} s")
        ax.set_title(f"{letter}: {window[0]:.2f}–{window[1]:.2f} s" + (f", {note}" if note
                                                                        else "")
                     + "\n" + ", ".join(stats), fontsize="medium")
        ax.set_xlabel("time [s]")
        ax.grid(True, alpha=0.3)
        if i == 0:
            ax.set_ylabel(ylabel)
    fig.legend(handles=_seqack_legend(layers, run), loc="outside right upper",
               fontsize="small")
    return fig


def _markers(ax, tr: Traces, flow: int, zoom: Zoom) -> list[Line2D]:
    """Vertical lines at RTO expirations (solid) and fast retransmits (dashed)."""
    handles = []
    for var, style, what in (("rto_expiry", "-", "RTO"), ("fast_retx", "--", "fast retx")):
        rows = _window(tr.table("timeseries", flow, ["t_ns", "value"], var=var), zoom)
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


def _verdicts(ax, tr: Traces, flow: int, mss: int, zoom: Zoom) -> list[Line2D]:
    """Detector verdicts along the top of the axes and responses at the cwnd they set."""
    handles = []
    for var, (label, marker, colour) in DETECTORS.items():
        rows = _verdict_rows(tr, flow, var, zoom)
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
    undo = _verdict_rows(tr, flow, "undo", zoom)
    if undo is not None and undo.num_rows:
        ax.plot(_np(undo, "t_ns") / NS, _np(undo, "value") / mss, **UNDO_STYLE)
        handles.append(Line2D([], [], label=f"undo ({undo.num_rows})", **UNDO_STYLE))
    return handles


def _series(tr: Traces, flow: int, var: str, **match: object) -> Layer:
    """A time-series variable of one flow, in file order (recorded as it changed)."""
    return tr.layer("timeseries", flow, "value", order="file", var=var, **match)


def cwnd(timeseries: pa.Table | Traces, flow: int, mss: int,
         zoom: Zoom = None) -> Figure | None:
    """cwnd and ssthresh in segments vs. time (None if the flow has no cwnd series)."""
    with _traces(None, timeseries) as tr:
        return _cwnd(tr, flow, mss, zoom)


def _cwnd(tr: Traces, flow: int, mss: int, zoom: Zoom) -> Figure | None:
    if not tr.count("timeseries", flow, var="cwnd"):
        return None
    t_end = _end(tr, flow, zoom)
    t, v = _step(_series(tr, flow, "cwnd"), zoom, t_end)
    fig, ax = _new_figure(f"flow {flow}: congestion window", f"segments (MSS = {mss} B)", zoom)
    _steps(ax, t, v / mss, color="tab:blue", label="cwnd")
    t, v = _step(_series(tr, flow, "ssthresh"), zoom, t_end)
    v = np.where(np.isfinite(v), v, np.nan)  # +inf before the first loss is not drawn
    if np.isfinite(v).any():
        _steps(ax, t, v / mss, color="tab:green", linestyle="--", label="ssthresh")
    ax.set_ylim(bottom=0)
    handles, _ = ax.get_legend_handles_labels()
    fig.legend(handles=handles + _markers(ax, tr, flow, zoom)
               + _verdicts(ax, tr, flow, mss, zoom),
               loc="outside right upper", fontsize="small")
    return fig


def rtt(timeseries: pa.Table | Traces, flow: int, zoom: Zoom = None) -> Figure | None:
    """RTT samples, srtt and RTO vs. time (None if the flow has no RTT data)."""
    with _traces(None, timeseries) as tr:
        return _rtt(tr, flow, zoom)


def _rtt(tr: Traces, flow: int, zoom: Zoom) -> Figure | None:
    if not tr.count("timeseries", flow, var=("rtt_sample", "srtt")):
        return None
    t_end = _end(tr, flow, zoom)
    fig, ax = _new_figure(f"flow {flow}: RTT and RTO", "seconds", zoom)
    samples = _series(tr, flow, "rtt_sample")
    t0, t1 = zoom or (None, None)
    lo_ns = None if t0 is None else int(t0 * NS)
    hi_ns = None if t1 is None else int(t1 * NS)
    t_ns, v = samples.window_ns(lo_ns, hi_ns, thin="cells")
    _points(ax, t_ns / NS, v, marker=".", markersize=3, color="tab:blue",
            label=f"RTT sample ({samples.count_ns(lo_ns, hi_ns)})")
    for var, colour in (("srtt", "tab:green"), ("rto", "tab:red")):
        t, v = _step(_series(tr, flow, var), zoom, t_end)
        if t.size:
            _steps(ax, t, v, color=colour, linewidth=1, label=var)
    ax.set_ylim(bottom=0)
    if ax.has_data():
        fig.legend(loc="outside right upper", fontsize="small")
    return fig


DEST_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink")


def destinations(timeseries: pa.Table | Traces, flow: int, zoom: Zoom = None) -> Figure | None:
    """An SCTP flow's destinations: cwnd, srtt and RTO of each, inactive spans shaded,
    failovers marked (None for a TCP flow or without the time series)."""
    with _traces(None, timeseries) as tr:
        return _destinations(tr, flow, zoom)


def _destinations(tr: Traces, flow: int, zoom: Zoom) -> Figure | None:
    if not tr.has("timeseries", "dest"):
        return None
    dests = tr.distinct("timeseries", "dest", flow, var="dest_cwnd", **{"dest >=": 0})
    if not dests:
        return None
    t_end = _end(tr, flow, zoom)
    fig = Figure(figsize=(9, 6.4), layout="constrained")
    cwnd_ax, rto_ax = fig.subplots(2, 1, sharex=True)
    cwnd_ax.set_title(f"flow {flow}: SCTP destinations")
    cwnd_ax.set_ylabel("cwnd [kB]")
    rto_ax.set_ylabel("seconds")
    rto_ax.set_xlabel("time [s]")
    for ax in (cwnd_ax, rto_ax):
        ax.grid(True, alpha=0.3)
        if zoom:
            ax.set_xlim(left=zoom[0], right=zoom[1])
    for d in dests:
        colour = DEST_COLOURS[d % len(DEST_COLOURS)]
        t, v = _step(_series(tr, flow, "dest_cwnd", dest=d), zoom, t_end)
        _steps(cwnd_ax, t, v / 1e3, color=colour, label=f"destination {d}")
        t, v = _step(_series(tr, flow, "dest_srtt", dest=d), zoom, t_end)
        if t.size:
            _steps(rto_ax, t, v, color=colour, linestyle="--", linewidth=1, label=f"srtt {d}")
        t, v = _step(_series(tr, flow, "dest_rto", dest=d), zoom, t_end)
        if t.size:
            _steps(rto_ax, t, v, color=colour, linewidth=1.2, label=f"RTO {d}")
        # Every change of state, unthinned: an inactive span starts at one.
        t, v = _step(_series(tr, flow, "dest_state", dest=d, hold=True), zoom, t_end)
        for i in np.flatnonzero(v[:-1] == 2):  # inactive until the next change
            for ax in (cwnd_ax, rto_ax):
                ax.axvspan(t[i], t[i + 1], color=colour, alpha=0.12, linewidth=0)
    failovers = _window(tr.table("timeseries", flow, ["t_ns", "value", "dest"], var="failover"),
                        zoom)
    for t, to, frm in zip((_np(failovers, "t_ns") / NS).tolist(),
                          _np(failovers, "value").tolist(), _np(failovers, "dest").tolist(),
                          strict=True):
        for ax in (cwnd_ax, rto_ax):
            ax.axvline(t, color="black", linewidth=0.9, linestyle=":")
        cwnd_ax.annotate(f"{int(frm)}→{int(to)}", (t, 1.0), xycoords=("data", "axes fraction"),
                         ha="left", va="top", fontsize="small")
    cwnd_ax.set_ylim(bottom=0)
    if rto_ax.has_data():
        rto_ax.set_yscale("log")
    handles = cwnd_ax.get_legend_handles_labels()[0] + rto_ax.get_legend_handles_labels()[0]
    if failovers.num_rows:
        handles.append(Line2D([], [], color="black", linestyle=":",
                              label=f"failover ({failovers.num_rows})"))
    fig.legend(handles=handles, loc="outside right upper", fontsize="small")
    return fig


OVERVIEW_BINS = 100  # time bins of the all-flows overview: cheap for 1,000 flows
OVERVIEW_LINES = 20  # up to this many flows, one thin line each; beyond, percentile bands
OVERVIEW_BARS = 32  # up to this many flows, goodput as one bar per flow; beyond, a CDF


def jain(values: np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2); 1 when all are equal."""
    values = np.asarray(values, dtype=float)
    square_sum = float((values**2).sum())
    return float(values.sum() ** 2 / (values.size * square_sum)) if square_sum > 0 else 1.0


def _sampled(tr: Traces, var: str, flows: np.ndarray,
             edges: np.ndarray) -> np.ndarray | None:
    """A recorded-on-change variable sampled at ``edges`` for every flow: (flows × edges),
    NaN before a flow's first record (None if no flow has the variable)."""
    if not tr.count("timeseries", None, var=var):
        return None
    return tr.sampled(var, flows, edges)


def _band(ax, x: np.ndarray, values: np.ndarray, colour: str, what: str) -> None:
    """Thin lines for a few flows; for many, the median flow and the 10-90 % band."""
    n = values.shape[0]
    if n <= OVERVIEW_LINES:
        from matplotlib.collections import LineCollection

        ax.add_collection(LineCollection([np.column_stack([x, v]) for v in values],
                                         linewidths=0.8, alpha=0.7, color=colour,
                                         label=f"{what}, one line per flow"))
        ax.autoscale()
        return
    with warnings.catch_warnings():  # a bin before every flow's first record is all NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        p10, p50, p90 = np.nanpercentile(values, [10, 50, 90], axis=0)
    ax.fill_between(x, p10, p90, color=colour, alpha=0.3, linewidth=0,
                    label="10–90 % of flows")
    ax.plot(x, p50, color=colour, linewidth=1.2, label="median flow")


def _flow_label(runs: pa.Table, i: int) -> str:
    """``flow 3 (cubic)``: the flow and its congestion control (when the table says it)."""
    flow = int(runs["flow"][i].as_py())
    cc = runs["cc"][i].as_py() if "cc" in runs.column_names else None
    return f"flow {flow} ({cc})" if cc else f"flow {flow}"


def _cwnd_lines(ax, runs: pa.Table, tr: Traces, zoom: Zoom, t_end: float) -> bool:
    """Every flow's cwnd on one time axis, in segments of its own MSS, one colour and one
    legend entry (flow and algorithm) each; each line decimated to what the axis can show.
    Returns whether anything was drawn."""
    drawn = False
    for i in range(runs.num_rows):
        flow, mss = int(runs["flow"][i].as_py()), float(runs["mss"][i].as_py())
        t, v = _step(_series(tr, flow, "cwnd"), zoom, t_end)
        if t.size == 0:
            continue
        t, v = _decimate(t, v, float(t[0]), float(t[-1]))
        _steps(ax, t, v / mss, linewidth=0.9, label=_flow_label(runs, i))
        drawn = True
    if drawn:
        ax.set_ylabel("cwnd [segments]")
    return drawn


def flows_overview(runs: pa.Table, timeseries: pa.Table | Traces,
                   zoom: Zoom = None) -> Figure:
    """All flows at once: goodput over time (thin lines for a few flows, median and
    percentile bands for many), cwnd (every flow on one time axis, labelled by flow and
    congestion control, up to OVERVIEW_LINES flows; bands beyond) and every flow's goodput
    (bars or a CDF) with Jain's fairness index. Its cost grows with the rows, not with
    flows × points drawn."""
    with _traces(None, timeseries) as tr:
        return _flows_overview(runs, tr, zoom)


def _flows_overview(runs: pa.Table, tr: Traces, zoom: Zoom) -> Figure:
    flows = _np(runs, "flow")
    n = flows.size
    mss = float(np.median(_np(runs, "mss"))) if "mss" in runs.column_names else 1.0
    fig = Figure(figsize=(14, 4.8), layout="constrained")
    rate_ax, cwnd_ax, share_ax = fig.subplots(1, 3, width_ratios=(3, 3, 2))
    for ax, title, ylabel in ((rate_ax, "goodput over time", "goodput [Mbit/s]"),
                              (cwnd_ax, "congestion window", f"cwnd [segments of {mss:,.0f} B]")):
        ax.set_title(f"{title}, {n:,} flows")
        ax.set_xlabel("time [s]")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    drawn = {rate_ax: False, cwnd_ax: False}
    extent = tr.extent("timeseries", None)
    if extent is not None:
        t0 = zoom[0] if zoom and zoom[0] is not None else extent[0] / NS
        t1 = zoom[1] if zoom and zoom[1] is not None else extent[1] / NS
        if t1 > t0:
            edges = np.linspace(t0, t1, OVERVIEW_BINS + 1)
            delivered = _sampled(tr, "rcv_nxt", flows, edges)
            if delivered is not None:
                # rcv_nxt counts from 0: a flow that has delivered nothing yet (or never)
                # is a flow at 0 Mbit/s, not a flow left out of the percentiles.
                delivered = np.nan_to_num(delivered, nan=0.0)
                rate = np.diff(delivered, axis=1) * 8 / np.diff(edges) / 1e6
                _band(rate_ax, (edges[:-1] + edges[1:]) / 2, rate, "tab:blue", "goodput")
                drawn[rate_ax] = True
            if n <= OVERVIEW_LINES:
                drawn[cwnd_ax] = _cwnd_lines(cwnd_ax, runs, tr, zoom, t1)
            else:
                window = _sampled(tr, "cwnd", flows, edges)
                if window is not None:
                    _band(cwnd_ax, edges, window / mss, "tab:green", "cwnd")
                    drawn[cwnd_ax] = True
            for ax in drawn:
                ax.set_xlim(t0, t1)
    for ax, ok in drawn.items():
        if ok:
            ax.set_ylim(bottom=0)
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14),
                      ncols=min(3, max(1, len(ax.get_legend_handles_labels()[0]))),
                      fontsize="small", frameon=False)
        else:
            ax.text(0.5, 0.5, "not traced\n(trace level summary)", transform=ax.transAxes,
                    ha="center", va="center", color="0.4")
    goodput = _np(runs, "goodput_bps") / 1e6
    share_ax.set_title(f"goodput per flow (Jain's index {jain(goodput):.3f})")
    share_ax.grid(True, alpha=0.3)
    if n <= OVERVIEW_BARS:
        share_ax.bar([str(f) for f in flows.tolist()], goodput, color="tab:blue")
        share_ax.set_xlabel("flow")
        share_ax.set_ylabel("goodput [Mbit/s]")
    else:
        ys = np.sort(goodput)
        share_ax.step(np.r_[ys[0], ys], np.r_[0.0, np.arange(1, n + 1) / n], where="post",
                      color="tab:blue")
        share_ax.set_xlabel("goodput [Mbit/s]")
        share_ax.set_ylabel("fraction of flows")
        share_ax.set_ylim(0, 1.02)
    return fig


def draw(tables: Mapping[str, pa.Table | str | os.PathLike[str] | None],
         figdir: str | os.PathLike[str], zoom: Zoom = None, max_flows: int = 8) -> list[Path]:
    """Draw every figure the tables support into ``figdir``; return the files written.

    ``tables`` maps ``runs``/``timeseries``/``packets`` to tables, or ``timeseries`` and
    ``packets`` to their Parquet files, read in bounded memory (missing or empty tables just
    mean fewer figures). ``zoom`` is a (t0, t1) window in seconds, either bound None.
    Per-flow figures are drawn for the first ``max_flows`` flows; a run of two or more flows
    also gets one ``flows_overview`` figure of all of them.
    """
    runs = tables.get("runs")
    if runs is None or runs.num_rows == 0:
        return []
    with Traces(tables.get("packets"), tables.get("timeseries"),
                packet_events=tables.get("packet_events")) as tr:
        return _draw(runs, tr, Path(figdir), zoom, max_flows)


def _draw(runs: pa.Table, tr: Traces, figdir: Path, zoom: Zoom, max_flows: int) -> list[Path]:
    written: list[Path] = []
    flows = list(zip(_np(runs, "flow").tolist(), _np(runs, "mss").tolist(), strict=True))
    if len(flows) > 1:
        figdir.mkdir(parents=True, exist_ok=True)
        with tr.scope():
            written += _save(_flows_overview(runs, tr, zoom), figdir, "flows_overview")
    traced = {"packets": tr.rows("packets") > 0, "timeseries": tr.rows("timeseries") > 0}
    draws = {
        "seqack": ("packets", lambda flow, mss: _seqack(tr, flow, zoom)),
        "cwnd": ("timeseries", lambda flow, mss: _cwnd(tr, flow, mss, zoom)),
        "rtt": ("timeseries", lambda flow, mss: _rtt(tr, flow, zoom)),
        "destinations": ("timeseries", lambda flow, mss: _destinations(tr, flow, zoom)),
    }
    for flow, mss in flows[:max_flows]:
        for stem, (table, make) in draws.items():
            if not traced[table]:
                continue
            with tr.scope():
                fig = make(flow, mss)
            if fig is not None:
                figdir.mkdir(parents=True, exist_ok=True)
                written += _save(fig, figdir, f"{stem}_flow{flow}")
    return written
