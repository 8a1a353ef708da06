"""Every plot, drawn from result tables alone (never the simulator).

- :mod:`.run`: a run's figures (seq/ack, cwnd, RTT per flow; an overview of many flows);
- :mod:`.sweep`: a sweep's figures (bar, line, CDF, heatmap over its runs table);
- :mod:`.compare`: two runs side by side (e.g. simulated vs emulated).

This module files a run's figures in its results directory and lists them in the manifest.
It loads no matplotlib itself: a summary run, which draws nothing, never does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..store import is_sweep, load_sweep
from ..store import results
from ..store.results import Zoom
from ..store.run import RunResult, load, write_tables


def _figure_flows(manifest: Mapping[str, Any]) -> int:
    """How many flows get figures of their own (the scenario's ``sim.figure_flows``)."""
    sim = (manifest.get("scenario") or {}).get("sim") or {}
    return int(sim.get("figure_flows", 8))


# What the run figures read of packets.parquet: the stage hops, four rows in five of a long
# trace, are never drawn, so they are skipped while the file is read (a 600 s dumbbell's
# 7.5 million rows become 1.5 million, and the figure step's memory falls from 2 GB).
_FIGURE_PACKET_COLUMNS = ["t_ns", "flow", "event", "kind", "seq", "ack"]
_FIGURE_PACKET_EVENTS = ["send", "retransmit", "tlp", "drop", "deliver"]


def _figure_tables(result: RunResult, outdir: Path) -> dict[str, pa.Table]:
    """The tables the figures read: the packets trace from its file, only the rows and
    columns drawn; the others as the result holds them."""
    tables = {"runs": result.runs, "timeseries": result.timeseries}
    path = outdir / "packets.parquet"
    if result.trace == "packets" and path.is_file():
        import pyarrow.dataset as ds

        events = ds.field("event").isin(_FIGURE_PACKET_EVENTS)
        tables["packets"] = ds.dataset(path, format="parquet").to_table(
            columns=_FIGURE_PACKET_COLUMNS, filter=events, use_threads=False)
    else:
        tables["packets"] = result.packets
    return tables


def _figures(outdir: Path, tables: Mapping[str, pa.Table], previous: Mapping[str, Any] | None,
             plots: bool, zoom: Zoom, max_flows: int = 8) -> list[str]:
    """Draw the figures (if ``plots``) and remove figures an earlier write listed but that
    are no longer produced, so figures/ never shows another run's data. Zoomed figures go to
    their own folder (``figures/zoom-A-B/``) and never replace the full-length ones."""
    names: list[str] = []
    folder = results.zoom_folder(zoom) if zoom else results.FIGURES
    # Every figure needs a trace; a summary run draws none (and need not load matplotlib).
    traced = any(t is not None and t.num_rows for name, t in tables.items() if name != "runs")
    if plots and traced:
        from .run import draw

        names = [f"{folder}/{p.name}"
                 for p in draw(tables, outdir / folder, zoom=zoom, max_flows=max_flows)]
    for entry in (previous or {}).get("files", []):
        name = entry.get("path", "")
        where, _, file = name.rpartition("/")
        ours = where == folder and file.endswith((".png", ".svg"))
        if ours and name not in names:
            with contextlib.suppress(FileNotFoundError):
                (outdir / name).unlink()
    return names


def write(
    result: RunResult,
    outdir: str | os.PathLike[str],
    *,
    plots: bool = True,
    zoom: Zoom = None,
    streamed: Iterable[str] = (),
) -> Path:
    """Write ``result`` to ``outdir`` (created if needed) with its figures; return the
    directory.

    ``streamed`` names tables already written to ``outdir`` while the run went (they are kept).

    The old manifest.json (if any) is removed first and the new one written as soon as the
    tables are (before any figure is drawn, then again with the figures), so a directory
    whose manifest exists holds one complete, consistent run.
    """
    outdir = write_tables(result, outdir, streamed=streamed)
    draw_figures(result, outdir, plots=plots, zoom=zoom)
    return outdir


def draw_figures(result: RunResult, outdir: Path, *, plots: bool = True,
                 zoom: Zoom = None) -> None:
    """The second half of :func:`write`: draw the figures and list them in the manifest.
    Interrupted, the manifest written by :func:`spikelab.store.run.write_tables` stays
    (tables, no figures)."""
    if plots:
        figures = _figures(outdir, _figure_tables(result, outdir), None, plots, zoom,
                           max_flows=_figure_flows(result.manifest))
        result.manifest.update(results._finish(outdir, dict(result.manifest), figures, zoom,
                                               keep=False))


def plot(
    outdir: str | os.PathLike[str],
    zoom: Zoom = None,
) -> list[Path]:
    """Redraw the figures of a results directory from its tables alone; return their paths.

    For a sweep directory: its default figures (goodput by parameter, CDF)."""
    outdir = Path(outdir)
    if is_sweep(outdir):
        if zoom is not None:
            raise results.OutdirError(f"{outdir}: holds a sweep's results; a zoom applies to "
                                      f"the time axis of a single run's figures")
        from .sweep import default_specs, draw

        return draw(outdir, default_specs(load_sweep(outdir).params()))
    result = load(outdir)
    figures = _figures(outdir, _figure_tables(result, outdir), result.manifest, True, zoom,
                       max_flows=_figure_flows(result.manifest))
    results._finish(outdir, result.manifest, figures, zoom)
    return [outdir / name for name in figures]
