"""The results directory: its files, written whole, and its manifest.

Layout (see docs/results.md)::

    OUTDIR/manifest.json        written last: present => the directory is complete
    OUTDIR/runs.parquet         one row per flow
    OUTDIR/timeseries.parquet   long format (t_ns, flow, var, value)
    OUTDIR/packets.parquet      one row per packet event
    OUTDIR/figures/*.png|svg

Every file is written under a temporary name in its final directory, flushed to disk and
renamed into place, so a crash or Ctrl-C never leaves a half-written file; a temporary left by
a process that was killed (SIGKILL) is removed by the next write into that directory. Files
that this module did not write are never touched. The same tables always give byte-identical
Parquet.

A directory knows what it holds: the manifest's ``kind`` is ``run``, ``sweep``, ``study``,
``emulate`` or ``fidelity``, and its ``status`` is ``complete`` or ``interrupted``. Writing one kind onto
another is refused unless forced (:func:`claim`).
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import hashlib
import json
import math
import os
import platform
import re
import secrets
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .. import _core

MANIFEST = "manifest.json"
FIGURES = "figures"
# Captures of sim.pcap: PCAP/POINT.pcapng (a run), PCAP/RUN_ID/POINT.pcapng (a sweep).
PCAP = "pcap"
TABLES = ("runs", "timeseries", "packets")
FORMAT = 1
KINDS = ("run", "sweep", "study", "emulate", "fidelity", "rto-study")
COMPLETE, INTERRUPTED = "complete", "interrupted"
# Temporaries are ".NAME.PID-HEX.tmp" (see atomic_write).
_TEMP = re.compile(r"^\..+\.(\d+)-[0-9a-f]{8}\.tmp$")


class OutdirError(ValueError):
    """An output directory that cannot take this result (one line, names the directory)."""
Zoom = tuple[float | None, float | None] | None  # figure window (t0, t1) in s; None = open


def zoom_fault(t0: float | None, t1: float | None) -> str | None:
    """What is wrong with the window ``t0:t1`` whatever the run (None: nothing)."""
    if any(t is not None and not math.isfinite(t) for t in (t0, t1)):
        return "times must be finite"
    if (t0 is not None and t0 < 0) or (t1 is not None and t1 <= 0):
        return "times start at 0 s"
    if t0 is not None and t1 is not None and t1 <= t0:
        return "T1 must be after T0"
    return None


def temporary_name(path: str | os.PathLike[str]) -> Path:
    """A temporary sibling of ``path`` (``.NAME.PID-HEX.tmp``) for writing before a rename."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def write_temporary(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` for a temporary sibling of ``path``, fsync it and return its name
    (nothing is left behind on failure); the caller renames it into place."""
    tmp = temporary_name(path)
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` for a temporary sibling of ``path``, fsync it, rename it to ``path``."""
    tmp = write_temporary(path, write)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_temporaries(directory: str | os.PathLike[str], depth: int = 3) -> list[Path]:
    """Remove temporaries (``.NAME.PID-HEX.tmp``: files, or folders of figures being drawn)
    whose writing process is gone, in ``directory`` and its subfolders down to ``depth``
    levels (``figures/zoom-A-B/``, ``emulation/``, a sweep's ``parts/``); return what was
    removed."""
    directory = Path(directory)
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    with contextlib.suppress(OSError):
        entries = list(directory.iterdir())
        for entry in entries:
            m = _TEMP.match(entry.name)
            if entry.is_dir() and not entry.is_symlink():
                if m and not _alive(int(m.group(1))):  # figures drawn before a rename
                    shutil.rmtree(entry, ignore_errors=True)
                    removed.append(entry)
                elif depth > 0:
                    removed += sweep_temporaries(entry, depth - 1)
                continue
            if m and entry.is_file() and not _alive(int(m.group(1))):
                with contextlib.suppress(FileNotFoundError):
                    entry.unlink()
                    removed.append(entry)
    return removed


def kind_of(outdir: str | os.PathLike[str]) -> str | None:
    """What a directory holds: ``run``, ``sweep``, ``study``, ``emulate``, ``fidelity``,
    ``rto-study``, or None (absent or holding no spikelab result)."""
    outdir = Path(outdir)
    manifest = outdir / MANIFEST
    if manifest.is_file():
        with contextlib.suppress(OSError, ValueError):
            kind = json.loads(manifest.read_text(encoding="utf-8")).get("kind")
            if kind in KINDS:
                return kind
            if (outdir / "sweep.json").is_file():
                return "sweep"
            return "run"  # manifests written before directories knew their kind
    if (outdir / "sweep.json").is_file():
        with contextlib.suppress(OSError, ValueError):
            kind = json.loads((outdir / "sweep.json").read_text(encoding="utf-8")).get("kind")
            if kind in KINDS:
                return kind
        return "sweep"
    if (outdir / "runs.parquet").is_file() or (outdir / "emulation").is_dir():
        return "run"
    return None


_HOLDS = {"run": "a run's results", "sweep": "a sweep's results", "study": "a study's results",
          "emulate": "an emulated run's results", "fidelity": "a fidelity suite's results",
          "rto-study": "an RTO alpha/beta study's results"}


# What each kind of result may have written in its directory besides the files its manifest
# lists (a sweep's identity, points and scenario copy, a study's report, a run's folders):
# files, then folders. Removed when another result replaces it; nothing a result of that kind
# does not write (a user's own scenario.toml beside a run is not a sweep's copy).
_TABLE_FILES = tuple(f"{t}.parquet" for t in TABLES)
_SWEEP_FILES = (*_TABLE_FILES, "points.json", "sweep.json", "scenario.toml")
# A sweep's tables are folders of Parquet files (one per block of runs; a sweep written
# before blocks has files of those names, which the line above removes).
_SWEEP_DIRS = (FIGURES, PCAP, "parts", "runs-figures", "compare", *_TABLE_FILES)
_WRITES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "run": (_TABLE_FILES, (FIGURES, PCAP)),
    "emulate": (_TABLE_FILES, (FIGURES, PCAP, "emulation")),
    "sweep": (_SWEEP_FILES, _SWEEP_DIRS),
    "study": ((*_SWEEP_FILES, "report.html", "report.md", "claims.json"),
              (*_SWEEP_DIRS, "study")),
    "fidelity": ((), ()),
    "rto-study": ((), (FIGURES,)),
}


def listed_files(manifest: Mapping[str, Any] | None) -> list[str]:
    """The paths a manifest's ``files`` lists (entries ``{"path": ...}``, or plain names as
    the fidelity suite writes them)."""
    out = []
    for entry in (manifest or {}).get("files") or []:
        name = entry.get("path") if isinstance(entry, Mapping) else entry
        if isinstance(name, str) and name:
            out.append(name)
    return out


def discard_result(outdir: Path, keep: Iterable[str] = ()) -> None:
    """Remove the result ``outdir`` holds: its manifest, the files it lists, and what its
    kind writes besides them, except the folders in ``keep``; nothing else (nothing at all
    where no spikelab result is)."""
    kind = kind_of(outdir)
    if kind is None:
        return
    old = _previous_manifest(outdir)
    files, dirs = _WRITES[kind]
    with contextlib.suppress(FileNotFoundError):
        (outdir / MANIFEST).unlink()
    for name in [*listed_files(old), *files]:
        if not name.startswith("/") and ".." not in Path(name).parts:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                (outdir / name).unlink()
    for name in dirs:
        if name not in keep and (outdir / name).is_dir() and not (outdir / name).is_symlink():
            shutil.rmtree(outdir / name)


def expect_kind(outdir: str | os.PathLike[str], kinds: Iterable[str], reader: str) -> str:
    """The kind of result ``outdir`` holds, if it is one of ``kinds``; otherwise an error
    saying what it is: absent, holding nothing of spikelab's, or another kind (``reader``
    says what the caller reads, e.g. "spikelab plot draws a single run's figures")."""
    kind = kind_of(outdir)
    if kind in kinds:
        return kind
    path = Path(outdir)
    if not path.exists():
        raise FileNotFoundError(f"{outdir}: no such results directory")
    if kind is None:
        raise FileNotFoundError(f"{outdir}: holds no spikelab results (no {MANIFEST})")
    raise OutdirError(f"{outdir}: holds {_HOLDS[kind]}; {reader}")


def claim(outdir: str | os.PathLike[str], kind: str, *, force: bool = False) -> Path:
    """Check that ``outdir`` may receive a result of ``kind``, create it, and remove stale
    temporaries in it. Raises :class:`OutdirError` for an empty path, a path that is a file,
    or a directory holding another kind of result (unless ``force``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown result kind {kind!r}")
    if not str(outdir).strip():
        raise OutdirError("the output directory is empty; give a directory name with -o")
    path = Path(outdir)
    if path.exists() and not path.is_dir():
        raise OutdirError(f"{outdir}: exists and is not a directory")
    held = kind_of(path)
    compatible = held is None or held == kind or {held, kind} <= {"run", "emulate"}
    if not compatible and not force:
        raise OutdirError(f"{outdir}: holds {_HOLDS[held]}; refusing to write {_HOLDS[kind]} "
                          f"there (use another directory, or --force to replace it)")
    if not compatible:  # --force: nothing of the other kind's result may stay beside this one
        discard_result(path)
    path = prepare(path)
    sweep_temporaries(path)
    return path


# Columns of a trace table that keep Parquet statistics (min/max per row group), which let a
# query skip row groups by time, flow or run.
_STAT_COLUMNS = ("t_ns", "flow", "run_id")


def trace_writer_options(schema: pa.Schema) -> dict[str, Any]:
    """Parquet options for the long trace tables: zstd; dictionary encoding only where the
    column is a dictionary already (counters and sequence numbers almost never repeat, and
    trying a dictionary on them cost a fifth of the write); statistics on the columns queries
    filter by. Together a third faster and a third smaller than the defaults."""
    return {
        "compression": "zstd",
        "use_dictionary": [f.name for f in schema if pa.types.is_dictionary(f.type)],
        "write_statistics": [c for c in _STAT_COLUMNS if c in schema.names],
    }


def stage_parquet(table: pa.Table, path: str | os.PathLike[str]) -> Path:
    """Write ``table`` as :func:`write_parquet` does, but under a temporary sibling of
    ``path``, synced, and return that name (nothing is left behind on failure): the caller
    renames it into place once everything it writes together is whole."""
    return write_temporary(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def write_parquet(table: pa.Table, path: str | os.PathLike[str]) -> None:
    """Write ``table`` atomically; the bytes depend only on the table (and pyarrow's version)."""
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def write_json(obj: Any, path: str | os.PathLike[str]) -> None:
    text = json.dumps(obj, indent=2, allow_nan=True) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def as_run(scenario: Mapping[str, Any], seed: int, trace: str) -> dict[str, Any]:
    """``scenario`` with the seed and trace level a run used (``--seed`` and ``--trace``
    override the file's ``sim.seed`` and ``sim.trace``), so running it again repeats the run.
    A key the simulator resolved to nothing (an unset optional, JSON's null) is left out, as
    it was in the file: TOML has no null, and the scenario must write back as TOML."""
    scenario = _without_nulls(dict(scenario))
    if scenario:
        scenario["sim"] = {**scenario.get("sim", {}), "seed": seed, "trace": trace}
    return scenario


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def new_manifest(
    scenario: Mapping[str, Any], seed: int, trace: str, duration_s: float, wall_s: float,
    events: int,
) -> dict[str, Any]:
    """The manifest of a run that has not been written yet (``files`` is empty); its scenario
    as the run used it (:func:`as_run`)."""
    scenario = as_run(scenario, seed, trace)
    return {
        "format": FORMAT,
        "kind": "run",
        "status": COMPLETE,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seed": seed,
        "trace": trace,
        "duration_s": duration_s,
        "wall_s": wall_s,
        "events": events,
        "versions": {
            "spikelab": _core.__build__,
            "python": platform.python_version(),
            "pyarrow": pa.__version__,
        },
        "platform": platform.platform(),
        "scenario": scenario,
        "figures_zoom": None,
        "files": [],
    }


def read_manifest(outdir: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(outdir) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"{outdir}: no {MANIFEST}; not a complete spikelab results directory"
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise OutdirError(f"{outdir}: {MANIFEST} is not valid JSON") from None


def write_interrupted(outdir: str | os.PathLike[str], manifest: dict[str, Any],
                      reached_s: float | None = None) -> None:
    """Record in ``outdir`` that its run was interrupted: a manifest with ``status`` =
    ``interrupted``, the simulated time reached, and no files (tables of an earlier run that
    may still lie there are not part of this result; a run's figures are removed)."""
    outdir = Path(outdir)
    previous = _previous_manifest(outdir)
    with contextlib.suppress(FileNotFoundError):
        (outdir / MANIFEST).unlink()
    if manifest.get("kind", "run") in ("run", "emulate"):
        _remove_figures(outdir, previous)  # they showed an earlier run
    manifest = dict(manifest, status=INTERRUPTED, files=[], figures_zoom=None)
    if reached_s is not None:
        manifest["reached_s"] = reached_s
    write_json(manifest, outdir / MANIFEST)
    sweep_temporaries(outdir)


def _describe(outdir: Path, names: Iterable[str]) -> list[dict[str, Any]]:
    described = []
    for name in names:
        data = (outdir / name).read_bytes()
        described.append(
            {"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        )
    return described


def zoom_folder(zoom: Zoom) -> str:
    """``figures/zoom-A-B`` for a zoom window (open ends are ``start`` and ``end``)."""
    t0, t1 = zoom or (None, None)
    a = "start" if t0 is None else f"{t0:g}"
    b = "end" if t1 is None else f"{t1:g}"
    return f"{FIGURES}/zoom-{a}-{b}"


def _previous_manifest(outdir: Path) -> dict[str, Any] | None:
    try:
        return read_manifest(outdir)
    except (OSError, ValueError):
        return None


def _finish(outdir: Path, manifest: dict[str, Any], figures: list[str],
            zoom: Zoom, keep: bool = True) -> dict[str, Any]:
    """Record the files written and write manifest.json (always the last file written).
    With ``keep``, figures the manifest listed that are still on disk stay listed (the
    full-length figures beside a zoom, other zoom windows)."""
    kept = [f["path"] for f in manifest.get("files", [])
            if keep and f["path"].startswith(f"{FIGURES}/") and f["path"] not in figures
            and (outdir / f["path"]).is_file()]
    manifest["figures_zoom"] = list(zoom) if zoom and figures else None
    manifest["status"] = COMPLETE
    manifest["files"] = _describe(outdir, [f"{n}.parquet" for n in TABLES] + kept + figures)
    write_json(manifest, outdir / MANIFEST)
    return manifest


def prepare(outdir: str | os.PathLike[str]) -> Path:
    """Create ``outdir`` if needed and check that it is writable."""
    outdir = Path(outdir)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise  # a file where a folder goes: the caller's message says so
    except OSError as exc:
        raise OSError(exc.errno, f"cannot create the results directory "
                                 f"({exc.strerror or exc})", str(outdir)) from None
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(outdir))
    return outdir


def new_root(path: str | os.PathLike[str]) -> Path | None:
    """The outermost directory that creating ``path`` would create (``path`` itself or one of
    its missing parents), or None when ``path`` exists: what :func:`remove_created` may
    remove again when a command that created it fails."""
    path = Path(os.path.abspath(path))
    if os.path.lexists(path):
        return None
    while not os.path.lexists(path.parent) and path.parent != path:
        path = path.parent
    return path


def remove_created(root: Path | None) -> None:
    """Remove ``root`` (from :func:`new_root`), created by a command that then failed, if it
    holds no file: its temporaries of dead writers, empty folders, itself. A file in it
    (something written after all) keeps it and its parents."""
    if root is None or not root.is_dir():
        return
    sweep_temporaries(root)
    folders = [p for p in root.rglob("*") if p.is_dir() and not p.is_symlink()]
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True) + [root]:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only if empty


def _remove_figures(outdir: Path, manifest: Mapping[str, Any] | None) -> None:
    """Remove the figures ``manifest`` lists (and zoom folders left empty); nothing else."""
    folders = set()
    for entry in (manifest or {}).get("files", []):
        name = str(entry.get("path", ""))
        if name.startswith(f"{FIGURES}/") and name.endswith((".png", ".svg")) \
                and ".." not in Path(name).parts:
            with contextlib.suppress(FileNotFoundError):
                (outdir / name).unlink()
            folders.add((outdir / name).parent)
    for folder in folders:
        if folder.name.startswith("zoom-"):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if empty


