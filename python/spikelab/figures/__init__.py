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
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._interrupts import interrupts_deferred
from ..store import is_sweep, load_sweep
from ..store import results
from ..store.results import Zoom
from ..store.run import RunResult, load, write_tables


def _figure_flows(manifest: Mapping[str, Any]) -> int:
    """How many flows get figures of their own (the scenario's ``sim.figure_flows``)."""
    sim = (manifest.get("scenario") or {}).get("sim") or {}
    return int(sim.get("figure_flows", 8))


# What the run figures read of packets.parquet: the stage hops, four rows in five of a long
# trace, are never drawn, so they are left out where the file is read.
_FIGURE_PACKET_EVENTS = ["send", "retransmit", "tlp", "drop", "deliver"]


def _figure_tables(result: RunResult, outdir: Path) -> dict[str, Any]:
    """What the figures read: the runs table, and the traces as their Parquet files (read
    one flow and layer at a time, :class:`.source.Traces`), or the tables the result holds
    if it has no file of them."""
    tables: dict[str, Any] = {"runs": result.runs, "packet_events": _FIGURE_PACKET_EVENTS}
    for name, level in (("timeseries", ("timeseries", "packets")), ("packets", ("packets",))):
        path = outdir / f"{name}.parquet"
        if result.trace in level and path.is_file():
            tables[name] = path
        elif result.trace in level or name == "timeseries":
            tables[name] = getattr(result, name)
    return tables


def _traced(tables: Mapping[str, Any]) -> bool:
    """Whether any trace has rows (a summary run draws nothing, and need not load
    matplotlib)."""
    for name in ("timeseries", "packets"):
        t = tables.get(name)
        if isinstance(t, Path):
            import pyarrow.parquet as pq

            if pq.ParquetFile(t).metadata.num_rows:
                return True
        elif t is not None and t.num_rows:
            return True
    return False


def _figures(outdir: Path, tables: Mapping[str, Any], previous: Mapping[str, Any] | None,
             zoom: Zoom, manifest: dict[str, Any], *, keep: bool,
             max_flows: int = 8) -> list[str]:
    """Draw the figures and list them in ``manifest``, written to ``outdir``. They are drawn
    into a temporary folder and moved into place with the manifest written after them
    (interruptions held back meanwhile), so an interruption while drawing changes neither
    figures/ nor the manifest. Figures an earlier write listed (``previous``) that are no
    longer produced are removed, so figures/ never shows another run's data. Zoomed figures
    go to their own folder (``figures/zoom-A-B/``) and never replace the full-length ones.
    ``keep``: see :func:`spikelab.store.results._finish`."""
    names: list[str] = []
    folder = results.zoom_folder(zoom) if zoom else results.FIGURES
    # Every figure needs a trace; a summary run draws none (and need not load matplotlib).
    traced = _traced(tables)
    tmpdir = results.temporary_name(outdir / folder)
    try:
        drawn: list[Path] = []
        if traced:
            from .run import draw

            drawn = draw(tables, tmpdir, zoom=zoom, max_flows=max_flows)
        with interrupts_deferred():
            for path in drawn:
                (outdir / folder).mkdir(parents=True, exist_ok=True)
                os.replace(path, outdir / folder / path.name)
                names.append(f"{folder}/{path.name}")
            for entry in (previous or {}).get("files", []):
                name = entry.get("path", "")
                where, _, file = name.rpartition("/")
                ours = where == folder and file.endswith((".png", ".svg"))
                if ours and name not in names:
                    with contextlib.suppress(FileNotFoundError):
                        (outdir / name).unlink()
            manifest.update(results._finish(outdir, manifest, names, zoom, keep=keep))
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
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
    (tables, no figures) and no figure of this result is in figures/."""
    if plots:
        manifest = dict(result.manifest)
        _figures(outdir, _figure_tables(result, outdir), None, zoom, manifest, keep=False,
                 max_flows=_figure_flows(result.manifest))
        result.manifest.update(manifest)


def _check_zoom(zoom: Zoom, duration_s: float) -> None:
    """A zoom window must hold some of the run: 0 <= T0 < T1, T0 before the run's end."""
    if zoom is None:
        return
    if (isinstance(zoom, str) or not isinstance(zoom, tuple | list) or len(zoom) != 2
            or not all(t is None or (isinstance(t, int | float) and not isinstance(t, bool))
                       for t in zoom)):
        raise TypeError(f"zoom must be a pair (T0, T1) of seconds (None: open), got {zoom!r}")
    t0, t1 = zoom
    text = f"{'' if t0 is None else f'{t0:g}'}:{'' if t1 is None else f'{t1:g}'}"
    fault = results.zoom_fault(t0, t1)
    if fault:
        raise ValueError(f"zoom {text}: {fault}")
    if t0 is not None and t0 >= duration_s:
        raise ValueError(f"zoom {text}: the window starts at or after the run's end (it "
                         f"lasts {duration_s:g} s)")


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
    _check_zoom(zoom, result.duration_s)
    figures = _figures(outdir, _figure_tables(result, outdir), result.manifest, zoom,
                       dict(result.manifest), keep=True,
                       max_flows=_figure_flows(result.manifest))
    return [outdir / name for name in figures]
