"""The results directory: Parquet tables, manifest.json and figures/.

Layout (see docs/results.md)::

    OUTDIR/manifest.json        written last: present => the directory is complete
    OUTDIR/runs.parquet         one row per flow
    OUTDIR/timeseries.parquet   long format (t_ns, flow, var, value)
    OUTDIR/packets.parquet      one row per packet event
    OUTDIR/figures/*.png|svg

Every file is written under a temporary name in its final directory, flushed to disk and
renamed into place, so a crash or Ctrl-C never leaves a half-written file. Files that this
module did not write are never touched. The same tables always give byte-identical Parquet.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import hashlib
import json
import os
import platform
import secrets
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from . import _core

if TYPE_CHECKING:
    from .simulate import RunResult
    from .sweep import SweepResult

MANIFEST = "manifest.json"
FIGURES = "figures"
TABLES = ("runs", "timeseries", "packets")
FORMAT = 1
Zoom = tuple[float | None, float | None] | None  # figure window (t0, t1) in s; None = open


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` for a temporary sibling of ``path``, fsync it, rename it to ``path``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_parquet(table: pa.Table, path: str | os.PathLike[str]) -> None:
    """Write ``table`` atomically; the bytes depend only on the table (and pyarrow's version)."""
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def write_json(obj: Any, path: str | os.PathLike[str]) -> None:
    text = json.dumps(obj, indent=2, allow_nan=True) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def new_manifest(
    scenario: Mapping[str, Any], seed: int, trace: str, duration_s: float, wall_s: float,
    events: int,
) -> dict[str, Any]:
    """The manifest of a run that has not been written yet (``files`` is empty)."""
    return {
        "format": FORMAT,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seed": seed,
        "trace": trace,
        "duration_s": duration_s,
        "wall_s": wall_s,
        "events": events,
        "versions": {
            "spikelab": _core.__version__,
            "python": platform.python_version(),
            "pyarrow": pa.__version__,
        },
        "platform": platform.platform(),
        "scenario": dict(scenario),
        "figures_zoom": None,
        "files": [],
    }


def read_manifest(outdir: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(outdir) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"{outdir}: no {MANIFEST}; not a complete spikelab results directory"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def _describe(outdir: Path, names: Iterable[str]) -> list[dict[str, Any]]:
    described = []
    for name in names:
        data = (outdir / name).read_bytes()
        described.append(
            {"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        )
    return described


def _figures(outdir: Path, tables: Mapping[str, pa.Table], previous: Mapping[str, Any] | None,
             plots: bool, zoom: Zoom) -> list[str]:
    """Draw the figures (if ``plots``) and remove figures an earlier write listed but that
    are no longer produced, so figures/ never shows another run's data."""
    names: list[str] = []
    if plots:
        from .plots import draw

        names = [f"{FIGURES}/{p.name}" for p in draw(tables, outdir / FIGURES, zoom=zoom)]
    for entry in (previous or {}).get("files", []):
        name = entry.get("path", "")
        folder, _, file = name.partition("/")
        ours = folder == FIGURES and "/" not in file and file.endswith((".png", ".svg"))
        if ours and name not in names:
            with contextlib.suppress(FileNotFoundError):
                (outdir / name).unlink()
    return names


def _previous_manifest(outdir: Path) -> dict[str, Any] | None:
    try:
        return read_manifest(outdir)
    except (OSError, ValueError):
        return None


def _finish(outdir: Path, manifest: dict[str, Any], figures: list[str],
            zoom: Zoom) -> dict[str, Any]:
    """Record the files written and write manifest.json (always the last file written)."""
    manifest["figures_zoom"] = list(zoom) if zoom and figures else None
    manifest["files"] = _describe(outdir, [f"{n}.parquet" for n in TABLES] + figures)
    write_json(manifest, outdir / MANIFEST)
    return manifest


def prepare(outdir: str | os.PathLike[str]) -> Path:
    """Create ``outdir`` if needed and check that it is writable."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(outdir))
    return outdir


def write(
    result: RunResult,
    outdir: str | os.PathLike[str],
    *,
    plots: bool = True,
    zoom: Zoom = None,
) -> Path:
    """Write ``result`` to ``outdir`` (created if needed); return the directory.

    The old manifest.json (if any) is removed first and the new one written last, so a
    directory whose manifest exists holds one complete, consistent run.
    """
    outdir = prepare(outdir)
    previous = _previous_manifest(outdir)
    with contextlib.suppress(FileNotFoundError):
        (outdir / MANIFEST).unlink()
    tables = result.tables()
    for name, table in tables.items():
        write_parquet(table, outdir / f"{name}.parquet")
    figures = _figures(outdir, tables, previous, plots, zoom)
    result.manifest.update(_finish(outdir, dict(result.manifest), figures, zoom))
    return outdir


def load(outdir: str | os.PathLike[str]) -> RunResult | SweepResult:
    """Read a results directory back: a run's tables, scenario, seed and manifest, or a
    sweep's dataset (``SweepResult``: its ``runs`` table, one row per run × flow)."""
    from .simulate import RunResult
    from .sweep import is_sweep, load_sweep

    outdir = Path(outdir)
    if is_sweep(outdir):
        return load_sweep(outdir)
    manifest = read_manifest(outdir)
    tables = {name: pq.read_table(outdir / f"{name}.parquet", memory_map=True)
              for name in TABLES}
    return RunResult(
        **tables,
        scenario=manifest["scenario"],
        seed=manifest["seed"],
        trace=manifest["trace"],
        duration_s=manifest["duration_s"],
        wall_s=manifest["wall_s"],
        events=manifest["events"],
        manifest=manifest,
    )


def plot(
    outdir: str | os.PathLike[str],
    zoom: Zoom = None,
) -> list[Path]:
    """Redraw the figures of a results directory from its tables alone; return their paths.

    For a sweep directory: its default figures (goodput by parameter, CDF)."""
    from .sweep import is_sweep, load_sweep

    outdir = Path(outdir)
    if is_sweep(outdir):
        from .sweepplots import default_specs, draw

        return draw(outdir, default_specs(load_sweep(outdir).params()))
    result = load(outdir)
    figures = _figures(outdir, result.tables(), result.manifest, True, zoom)
    _finish(outdir, result.manifest, figures, zoom)
    return [outdir / name for name in figures]
