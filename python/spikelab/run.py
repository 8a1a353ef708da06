"""Run one simulation: scenario in, columnar result tables out (and, with ``out``, a results
directory with its figures)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import _core, figures
from ._interrupts import Latch, interrupts_deferred
from ._progress import ProgressBar
from .scenario import (
    TRACE_LEVELS,
    ScenarioSource,
    check_flags,
    check_outdir,
    check_seed,
    read_scenario,
)
from .scenario import overrides_list as _overrides
from .store import results
from .store.arrow import to_arrow
from .store.run import RunResult, write_tables

log = logging.getLogger(__name__)

POLL_S = 0.1
# Rows per streamed chunk of a trace table (a Parquet row group). Small enough that writing
# one (tens of ms) never delays a Ctrl-C much: the signal is handled between writes.
STREAM_ROWS = 1 << 16
# Captures of a simulated run (sim.pcap) go to OUTDIR/pcap/POINT.pcapng.
PCAP_DIR = results.PCAP


class _TraceFiles:
    """Streams trace chunks into ``OUTDIR/NAME.parquet`` (temporary names until closed)."""

    def __init__(self, outdir: Path):
        self.outdir = outdir
        self.writers: dict[str, Any] = {}
        self.tmp: dict[str, Path] = {}
        # Whether this run has begun to replace what the directory held (its captures, the
        # manifest, the tables); until then an interruption leaves an earlier result alone.
        self.committed = False
        # The captures the run wrote, and the manifest the directory held before it.
        self.pcaps: list[str] = []
        self.previous: dict[str, Any] | None = None

    def write(self, name: str, table: pa.Table) -> None:
        import pyarrow.parquet as pq

        if name not in self.writers:
            tmp = results.temporary_name(self.outdir / f"{name}.parquet")
            self.tmp[name] = tmp
            self.writers[name] = pq.ParquetWriter(tmp, table.schema, **results.trace_writer_options(table.schema))
        self.writers[name].write_table(table)

    def finish(self, tables: dict[str, pa.Table]) -> dict[str, Path]:
        """Write the remaining rows and close; return the tables written, each with its
        temporary name (renamed into place with the others by ``write_tables``)."""
        for name, table in tables.items():
            if name in self.writers and table.num_rows:
                self.writers[name].write_table(table)
        for name, writer in self.writers.items():
            writer.close()
            with open(self.tmp[name], "rb") as f:
                os.fsync(f.fileno())
        done = {name: self.tmp[name] for name in self.writers}
        self.writers.clear()
        return done

    def commit(self) -> None:
        """The directory begins to change: an earlier run's captures this run did not
        write are removed (the manifest and tables follow in ``write_tables``)."""
        self.committed = True
        _remove_stale_pcaps(self.outdir, self.pcaps, self.previous)

    def abandon(self) -> None:
        for writer in self.writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        # Every temporary named, including one whose writer an interruption cut short while
        # it was being created (the file exists, the writer was never registered).
        for tmp in self.tmp.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self.writers.clear()
        self.tmp.clear()


def _run_in_thread(sim: Any, progress: bool | None,
                   sink: _TraceFiles | None = None) -> dict[str, Any]:
    """Run ``sim.run()`` (which releases the GIL) in a worker; poll progress meanwhile. With
    ``sink``, trace chunks are taken as they come and written there, and the captures of
    ``sim.pcap`` go to its directory's ``pcap/``."""
    outcome: dict[str, Any] = {}
    done = Latch()
    stream_rows = STREAM_ROWS if sink is not None else 0
    pcap_dir = str(sink.outdir / PCAP_DIR) if sink is not None else None

    def work() -> None:
        try:
            outcome["result"] = sim.run(stream_rows, pcap_dir)
            if sink is not None and outcome["result"].get("pcaps"):
                sink.committed = True  # the core renamed its captures into pcap/
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc
        finally:
            done.set()

    def write(chunks: list) -> None:
        for name, chunk in chunks:
            sink.write(name, to_arrow(chunk))

    def drain() -> None:
        if sink is not None:
            write(sim.take_chunks())

    def wait() -> bool:
        """Until the run is done (True) or POLL_S has passed; a streamed chunk is written as
        soon as the core hands it over, so the core never waits on a poll."""
        if sink is None or sim.finished():
            return done.wait(POLL_S)
        write(sim.wait_chunks(POLL_S))
        return done.is_set()

    # The main thread waits on a Latch, not on Thread.join(timeout): a Ctrl-C that interrupts
    # join() on Python 3.11 marks a still-running thread as finished, and the interpreter then
    # exits under the running core ("FATAL: exception not rethrown"); nor on an Event, whose
    # wait a Ctrl-C can leave with "release unlocked lock" (see _interrupts).
    worker = threading.Thread(target=work, name="spikelab-run", daemon=True)
    bar = ProgressBar(sim.duration_s, progress)
    worker.start()
    try:
        while not wait():
            bar.update(sim.progress())
        drain()
    except BaseException:
        # Stop the Rust loop too, so an interrupted notebook cell does not keep a core busy,
        # and wait for it: the interpreter must not exit while the core runs. A second Ctrl-C
        # meanwhile is absorbed.
        with interrupts_deferred():
            sim.cancel()
            while not done.is_set():
                with contextlib.suppress(KeyboardInterrupt):
                    sim.take_chunks()  # a run waiting for its consumer must see the cancel
                    done.wait(POLL_S)
        raise
    finally:
        bar.close(sim.progress() if "result" in outcome else None)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _simulate(sim: Any, scenario_dict: dict[str, Any], progress: bool | None,
              sink: _TraceFiles | None
              ) -> tuple[RunResult, dict[str, Path], dict[str, Any] | None]:
    """Run ``sim``; with ``sink``, stream its traces to files under temporary names and
    close them; the result reads its trace tables back (lazily) from where ``write_tables``
    puts them. Returns the result, the streamed tables with their temporary names, and the
    manifest the directory held before."""
    raw = _run_in_thread(sim, progress, sink)
    wall_s, events = float(raw["wall_s"]), int(raw["events"])
    tables = {name: to_arrow(raw[name]) for name in results.TABLES}
    staged: dict[str, Path] = {}
    previous = None
    if sink is not None:
        import pyarrow.parquet as pq

        previous = results._previous_manifest(sink.outdir)
        if sink.committed:
            # The core has put this run's captures in pcap/: the earlier manifest (whose
            # captures they replaced) no longer describes the directory.
            with contextlib.suppress(FileNotFoundError):
                (sink.outdir / results.MANIFEST).unlink()
        staged = sink.finish({n: tables[n] for n in ("timeseries", "packets")})
        for name in staged:
            # Read from where write_tables puts them.
            path = sink.outdir / f"{name}.parquet"
            tables[name] = lambda path=path: pq.read_table(path, memory_map=True)
        sink.pcaps, sink.previous = list(raw.get("pcaps", [])), previous
        pcaps = _pcaps_listed(sink.outdir, sink.pcaps)
    result = RunResult(
        runs=tables["runs"],
        timeseries=tables["timeseries"],
        packets=tables["packets"],
        scenario=scenario_dict,
        seed=sim.seed,
        trace=sim.trace,
        duration_s=sim.duration_s,
        wall_s=wall_s,
        events=events,
        manifest=results.new_manifest(scenario_dict, sim.seed, sim.trace, sim.duration_s,
                                      wall_s, events),
    )
    if sink is not None:
        result.manifest["pcaps"] = pcaps
    return result, staged, previous


def _pcaps_listed(outdir: Path, written: list[str]) -> list[dict[str, Any]]:
    """The captures this run wrote, as manifest entries (path, bytes; no checksum: a capture
    can be gigabytes)."""
    folder = outdir / PCAP_DIR
    names = {Path(p).name for p in written}
    return [{"path": f"{PCAP_DIR}/{name}", "bytes": (folder / name).stat().st_size}
            for name in sorted(names)]


def _remove_stale_pcaps(outdir: Path, written: list[str],
                        previous: dict[str, Any] | None) -> None:
    """Remove the captures the earlier run's manifest lists and this run did not write
    (nothing else in ``pcap/``)."""
    names = {Path(p).name for p in written}
    for entry in (previous or {}).get("pcaps") or []:
        old = Path(str(entry.get("path", "")))
        if old.parent.name == PCAP_DIR and old.suffix == ".pcapng" and old.name not in names:
            with contextlib.suppress(FileNotFoundError):
                (outdir / PCAP_DIR / old.name).unlink()

def run(
    scenario: ScenarioSource,
    *,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    trace: str | None = None,
    out: str | os.PathLike[str] | None = None,
    plots: bool = True,
    progress: bool | None = None,
    force: bool = False,
) -> RunResult:
    """Simulate a scenario (a TOML file path or TOML text).

    ``seed`` overrides the scenario's ``sim.seed``; ``overrides`` are ``"key=value"`` strings
    (``"flow[0].tcp.variant=newreno"``); ``trace`` is ``summary``, ``timeseries`` or
    ``packets`` (None: the scenario's ``sim.trace``, summary unless set). With ``out``, the
    results directory is written there (figures too, unless ``plots=False``). ``progress``:
    None shows a bar on a TTY for runs longer than 2 s, True always, False never.

    With ``out``, the trace tables stream to disk while the run goes (bounded memory), and
    the result's tables are read back from the files. ``out`` must not hold another kind of
    result (a sweep, a study) unless ``force``, which removes that result first.
    Interrupted (Ctrl-C, SIGTERM in the CLI), the directory gets a manifest with ``status`` =
    ``interrupted`` and KeyboardInterrupt is raised; a complete run it held stays as it was
    if this run had not begun to replace it (interrupted while simulating or while its tables
    are written; a run that writes captures replaces the earlier ones as it finishes). A
    failed run removes ``out`` if it created it and wrote nothing there.
    """
    if trace is not None and trace not in TRACE_LEVELS:
        raise ValueError(f"trace must be one of {', '.join(TRACE_LEVELS)}, got {trace!r}")
    check_seed(seed)
    check_flags(plots=plots, progress=progress, force=force)
    if out is not None:
        check_outdir(out)
    text, base_dir = read_scenario(scenario)
    sim = _core.Simulation(text, _overrides(overrides), base_dir, seed, trace)
    scenario_dict = results.as_run(json.loads(sim.scenario_json), sim.seed, sim.trace)
    log.info("scenario read: %d flow(s), %g s simulated, seed %d, trace %s",
             len(scenario_dict.get("flow", [])), sim.duration_s, sim.seed, sim.trace)
    sink = None
    if out is not None:
        created = results.new_root(out)
        # With force, a sweep or a study there is removed now (claim).
        replaced = results.kind_of(out) not in (None, "run", "emulate")
        outdir = results.claim(out, "run", force=force)  # fail before the run, not after it
        before = results._previous_manifest(outdir)
        sink = _TraceFiles(outdir)
    try:
        result, staged, previous = _simulate(sim, scenario_dict, progress, sink)
        log.info("simulated: %d events in %.2f s of the core", result.events, result.wall_s)
        if sink is not None:
            outdir = write_tables(result, outdir, staged=staged, previous=previous,
                                  on_commit=sink.commit)
            log.info("tables written to %s", outdir)
    except KeyboardInterrupt:
        # Until the complete manifest is written, an interruption (in the core, while the
        # traces are closed or the tables written) leaves a manifest that says so; before
        # the run replaced anything (in the core), a complete result already there stays.
        if sink is not None:
            with interrupts_deferred():
                sink.abandon()
                if sink.committed or (before or {}).get("status") != results.COMPLETE:
                    results.write_interrupted(
                        outdir, results.new_manifest(scenario_dict, sim.seed, sim.trace,
                                                     sim.duration_s, 0.0, 0),
                        reached_s=sim.progress() * sim.duration_s)
        raise
    except BaseException as exc:
        if sink is not None:
            sink.abandon()
            if not sink.committed:
                results.remove_created(created)
            if isinstance(exc, OSError):  # a full disk: say where, and what is left
                reason = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
                held = ("it holds no complete result" if sink.committed or replaced
                        else "nothing was written" if created
                        else "it holds what it held before")
                raise OSError(exc.errno, f"cannot write the results ({reason}); {held}",
                              str(out)) from exc
        raise
    if out is not None:
        # The manifest lists the tables; interrupted here, the run is complete without
        # figures (they are moved into figures/ only once all are drawn).
        figures.draw_figures(result, outdir, plots=plots)
        if plots:
            log.info("figures drawn in %s", outdir / results.FIGURES)
    return result
