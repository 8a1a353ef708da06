"""``spikelab compare DIR_A DIR_B``: two runs of one scenario side by side.

Typically a simulated and an emulated run (``spikelab run`` and ``spikelab emulate`` of the
same file), but any two results directories work. It prints each flow's metrics in two
columns and draws, per flow, one figure with both runs' sequence/ACK numbers (top) and cwnd
(bottom) on a shared time axis: ``compare_flowN.png`` / ``.svg``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matplotlib.figure import Figure

from ..store import load as load_result
from ..store import results
from ..store.results import Zoom
from .run import MB, NS, _save, _series, _step
from .source import Traces

# Undo counters a simulated run may carry (the names the simulator's runs table uses for
# undo events, when it has them).
SIM_UNDO_COLUMNS = ("undo_count", "undos", "undo_events", "undo")
COLOURS = {"a": ("tab:blue", "tab:green"), "b": ("tab:orange", "tab:red")}


@dataclass
class Run:
    label: str
    outdir: Path
    manifest: dict[str, Any]
    runs: pa.Table
    timeseries: pa.Table
    packets: pa.Table

    @property
    def emulated(self) -> bool:
        return "emulation" in self.manifest


def load(outdir: str | os.PathLike[str], label: str | None = None) -> Run:
    kind = results.kind_of(outdir)
    if kind in ("sweep", "study"):
        raise results.OutdirError(
            f"{outdir}: holds a {kind}'s results; compare takes two single runs (a simulated "
            f"and an emulated run directory)")
    res = load_result(outdir)
    kind = "emulated" if "emulation" in res.manifest else "simulated"
    return Run(label or kind, Path(outdir), res.manifest, res.runs, res.timeseries,
               res.packets)


def _col(runs: pa.Table, name: str, flow: int) -> Any:
    if name not in runs.column_names:
        return None
    idx = runs["flow"].to_pylist().index(flow)
    return runs[name][idx].as_py()


def undo_count(run: Run, flow: int) -> int | None:
    """Undo events of a flow: the kernel's undo counters for an emulated run (namespace-wide:
    exact for one flow), the simulator's undo column if its runs table has one."""
    if run.emulated:
        em = run.manifest["emulation"]
        return int(em.get("undo", 0)) if run.runs.num_rows == 1 else None
    for name in SIM_UNDO_COLUMNS:
        v = _col(run.runs, name, flow)
        if v is not None:
            return int(v)
    return None


def metrics(run: Run, flow: int) -> dict[str, Any]:
    """The figures ``compare`` prints for one flow of one run."""
    c = lambda name: _col(run.runs, name, flow)  # noqa: E731
    out = {
        "bytes transferred": c("bytes_delivered"),
        "goodput Mbps": c("goodput_bps") / 1e6 if c("goodput_bps") is not None else None,
        "timeouts (RTO)": c("rto_count"),
        "  spurious (truth)": c("rto_spurious_true"),
        "fast retransmits": c("fast_retx_count"),
        "retransmitted segs": c("retx_segments"),
        "  detected spurious": c("rto_spurious_detected"),
        "undo events": undo_count(run, flow),
        "DSACKs received": c("dsacks_rcvd"),
        "RTT mean ms": c("rtt_mean_s") * 1e3 if c("rtt_mean_s") is not None else None,
        "longest stall s": c("longest_stall_s"),
        "drops": c("drops_total"),
    }
    if run.emulated:
        counters = run.manifest["emulation"].get("counters", {}).get("sender", {})
        if isinstance(counters, list):  # SCTP on usrsctp: one stack (and counters) per flow
            mine = counters[flow] if flow < len(counters) else {}
            out["usrsctp T3-rtx expiries"] = mine.get("timodata")
        else:
            out["kernel TCPSpuriousRTOs"] = counters.get("TcpExtTCPSpuriousRTOs")
        t = run.manifest["emulation"].get("timing") or {}
        if t.get("departures"):
            out["emulator p99 error ms"] = t["p99_ns"] / 1e6
    return out


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        return f"{v:,.3f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def table(a: Run, b: Run) -> str:
    """Both runs' metrics, one block per flow."""
    lines = []
    flows = sorted(set(a.runs["flow"].to_pylist()) & set(b.runs["flow"].to_pylist()))
    for flow in flows:
        ma, mb = metrics(a, flow), metrics(b, flow)
        keys = list(dict.fromkeys([*ma, *mb]))
        rows = [(k, _fmt(ma.get(k)), _fmt(mb.get(k))) for k in keys]
        w0 = max(len(f"flow {flow}"), *(len(r[0]) for r in rows))
        w1 = max(len(a.label), *(len(r[1]) for r in rows))
        w2 = max(len(b.label), *(len(r[2]) for r in rows))
        lines.append(f"{f'flow {flow}':<{w0}}  {a.label:>{w1}}  {b.label:>{w2}}")
        lines += [f"{k:<{w0}}  {x:>{w1}}  {y:>{w2}}" for k, x, y in rows]
        lines.append("")
    return "\n".join(lines).rstrip()


def _eq(t: pa.Table, col: str, value: Any) -> pa.ChunkedArray:
    return pc.fill_null(pc.equal(t[col], value), False)


def _seqack(ax, run: Run, flow: int, colours: tuple[str, str], zoom: Zoom) -> None:
    pk = run.packets
    if pk.num_rows == 0:
        return
    pk = pk.filter(_eq(pk, "flow", flow))
    t0, t1 = zoom or (None, None)
    if t0 is not None:
        pk = pk.filter(pc.greater_equal(pk["t_ns"], int(t0 * NS)))
    if t1 is not None:
        pk = pk.filter(pc.less_equal(pk["t_ns"], int(t1 * NS)))
    sent = pk.filter(pc.and_(_eq(pk, "kind", "data"),
                             pc.is_in(pk["event"], pa.array(["send", "retransmit", "tlp"]))))
    acks = pk.filter(pc.and_(_eq(pk, "kind", "ack"), _eq(pk, "event", "deliver")))
    ts, seq = sent["t_ns"].to_numpy() / NS, sent["seq"].to_numpy() / MB
    ax.plot(ts, seq, linestyle="none", marker=".", markersize=2, color=colours[0],
            rasterized=ts.size > 5000, label=f"{run.label}: data sent")
    ta, ack = acks["t_ns"].to_numpy() / NS, acks["ack"].to_numpy() / MB
    if ta.size:
        ack = np.maximum.accumulate(ack)
        ax.step(ta, ack, where="post", color=colours[1], linewidth=1,
                label=f"{run.label}: ACK received")


def _cwnd(ax, run: Run, flow: int, colour: str, zoom: Zoom) -> None:
    ts = run.timeseries
    if ts.num_rows == 0:
        return
    ts = ts.filter(_eq(ts, "flow", flow))
    if ts.num_rows == 0:
        return
    mss = _col(run.runs, "mss", flow) or 1
    t_end = zoom[1] if zoom and zoom[1] is not None else pc.max(ts["t_ns"]).as_py() / NS
    with Traces(None, ts) as tr:
        t, v = _step(_series(tr, flow, "cwnd"), zoom, t_end)
    if t.size:
        ax.step(t, v / mss, where="post", color=colour, linewidth=1,
                label=f"{run.label}: cwnd")


def figure(a: Run, b: Run, flow: int, zoom: Zoom = None) -> Figure:
    fig = Figure(figsize=(10, 7), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    fig.suptitle(f"flow {flow}: {a.label} vs {b.label}")
    _seqack(top, a, flow, COLOURS["a"], zoom)
    _seqack(top, b, flow, COLOURS["b"], zoom)
    top.set_ylabel("sequence / ACK [MB]")
    _cwnd(bottom, a, flow, COLOURS["a"][0], zoom)
    _cwnd(bottom, b, flow, COLOURS["b"][0], zoom)
    mss = _col(a.runs, "mss", flow)
    bottom.set_ylabel(f"cwnd [segments of {mss} B]" if mss else "cwnd [segments]")
    bottom.set_xlabel("time [s]")
    bottom.set_ylim(bottom=0)
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize="small", loc="upper left", markerscale=4)
        if zoom:
            ax.set_xlim(left=zoom[0], right=zoom[1])
    return fig


def compare(dir_a: str | os.PathLike[str], dir_b: str | os.PathLike[str], *,
            out: str | os.PathLike[str] | None = None, zoom: Zoom = None,
            labels: tuple[str, str] | None = None) -> tuple[str, list[Path]]:
    """Compare two results directories: returns (the metrics table as text, the figure files
    written to ``out``, default ``DIR_B/compare``; with ``zoom``, its ``zoom-A-B/``
    subfolder)."""
    a = load(dir_a, labels[0] if labels else None)
    b = load(dir_b, labels[1] if labels else None)
    if a.label == b.label:
        a.label, b.label = f"{a.label} (A)", f"{b.label} (B)"
    if out is not None and not str(out).strip():
        # Path("") is the working directory: the figures would land there.
        raise results.OutdirError("the output directory is empty; give a directory name "
                                  "with -o")
    outdir = Path(out) if out is not None else Path(dir_b) / "compare"
    if zoom:  # a zoom has its own folder and never replaces the full-length figures
        outdir = outdir / Path(results.zoom_folder(zoom)).name
    outdir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    flows = sorted(set(a.runs["flow"].to_pylist()) & set(b.runs["flow"].to_pylist()))
    for flow in flows:
        written += _save(figure(a, b, flow, zoom), outdir, f"compare_flow{flow}")
    return table(a, b), written
