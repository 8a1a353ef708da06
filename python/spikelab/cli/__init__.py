"""The ``spikelab`` command: a thin shell over the library.

Errors are reported as one line ``spikelab: error: <message>`` on stderr with exit code 2;
Ctrl-C exits with 130. No traceback reaches the user (SPIKELAB_DEBUG=1 shows it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NoReturn

from .common import _plural, _scenario_file, checked, print_outputs, summary_table

PROG = "spikelab"
EXIT_USAGE = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130
EXIT_RUNS_FAILED = 3
EXIT_CLAIM_ERRORS = 1  # a claim whose query could not give a verdict (a failed claim: 0)
EXIT_PAPER_CLAIMS = 4  # a paper claim fails without an explained_by claim that holds


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line like every other error, and a value that
    starts with a minus and a digit (``--rate -1Mbps``, ``--share -0.5``) is the option's value,
    so its own check names the problem (argparse reads ``-1Mbps`` as an unknown option and says
    only "expected one argument")."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        import re

        # argparse's own test takes only plain numbers (-1, -0.5) as values.
        self._negative_number_matcher = re.compile(r"^-\.?[0-9]")

    def error(self, message: str) -> NoReturn:
        _say_error(f"{message} (see '{self.prog} --help')")
        raise SystemExit(EXIT_USAGE)


def _say_error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _override(text: str) -> str:
    key, sep, _ = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return text


def _zoom(text: str) -> tuple[float | None, float | None]:
    start, sep, end = text.partition(":")
    try:
        if not sep:
            raise ValueError
        t0 = float(start) if start.strip() else None
        t1 = float(end) if end.strip() else None
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected T0:T1 in seconds (e.g. 10:13), got {text!r}"
        ) from None
    from ..store.results import zoom_fault

    fault = zoom_fault(t0, t1)
    if fault:
        raise argparse.ArgumentTypeError(f"{fault}, got {text!r}")
    return t0, t1


_positive = checked(int, lambda v: v >= 1, "a positive integer")


# ---------------------------------------------------------------------------------- commands


def cmd_run(args: argparse.Namespace) -> int:
    import json

    import spikelab

    if args.pcap is not None:
        if args.out is None:
            raise ValueError("--pcap: captures are written into the results directory; "
                             "give -o OUTDIR")
        points = [p.strip() for p in args.pcap.split(",")]
        if not all(points):
            raise ValueError(f"--pcap: expected observation points separated by commas "
                             f"(sender, receiver, path.NAME.stage[K]), got {args.pcap!r}")
        args.set = [*args.set, f"sim.pcap={json.dumps(points)}"]
    with _scenario_file(args.scenario) as scenario:
        result = spikelab.run(scenario, seed=args.seed, overrides=args.set, trace=args.trace,
                              out=args.out, plots=not args.no_plots,
                              progress=False if args.quiet else None, force=args.force)
    if args.out is None and result.scenario.get("sim", {}).get("pcap"):
        print(f"{PROG}: warning: sim.pcap is set, but captures are written only into a "
              f"results directory: none were written (give -o OUTDIR)", file=sys.stderr)
    if args.quiet:
        return 0
    print(f"{args.scenario}: seed {result.seed}, {result.events:,} events "
          f"in {result.wall_s:.2f} s wall")
    print(summary_table(result.runs))
    if args.out is not None:
        print_outputs(args.out, result.manifest)
        pcaps = result.manifest.get("pcaps") or []
        if pcaps:
            print(f"captures: {Path(args.out) / 'pcap'} "
                  f"({', '.join(Path(p['path']).name for p in pcaps)})")
        if result.trace == "summary" and not args.no_plots:
            print("(no figures: the trace level is summary; --trace timeseries or packets "
                  "records what the figures show)")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    import spikelab

    paths = spikelab.plot(args.outdir, zoom=args.zoom)
    if not args.quiet:
        if paths:
            print(f"figures: {paths[0].parent} ({len(paths)} files)")
        else:
            print(f"{args.outdir}: no figures (tables hold no time series or packet events)")
    return 0


_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "": 1.0,
               "min": 60.0, "h": 3600.0}


def _seconds(value: object) -> float | None:
    """A resolved scenario duration (seconds, or a string such as ``"20000ms"``) in seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([a-zµ]*)\s*", str(value))
    if match and match.group(2) in _TIME_UNITS:
        with contextlib.suppress(ValueError):
            return float(match.group(1)) * _TIME_UNITS[match.group(2)]
    return None


def describe(scenario: dict) -> str:
    """One line: name, number of flows, simulated duration and seed of a resolved scenario."""
    sim = scenario.get("sim") or {}
    parts = [_plural(len(scenario.get("flow") or []), "flow")]
    duration = sim.get("duration")
    if duration is not None:
        seconds = _seconds(duration)
        parts.append(f"{seconds:g} s simulated" if seconds is not None else f"{duration} simulated")
    if "seed" in sim:
        parts.append(f"seed {sim['seed']}")
    text = ", ".join(parts)
    return f"{scenario['name']}: {text}" if scenario.get("name") else text


def cmd_validate(args: argparse.Namespace) -> int:
    import spikelab

    with _scenario_file(args.file) as path:
        scenario = spikelab.validate(path, overrides=args.set)
        from spikelab.scenario import format_profile_notes, profile_notes, sweepspec

        text = Path(path).read_text(encoding="utf-8-sig")
        sweep = ""
        if sweepspec.sweep_table(text) is not None:  # every parameter path, before any run
            sweep = f"; [sweep]: {_plural(sweepspec.check_file(path, args.set), 'run')}"
        notes = format_profile_notes(profile_notes(path, args.set))
    if not args.quiet:  # -q: the exit status says it
        print(f"{args.file}: ok ({describe(scenario)}{sweep})")
        for line in notes:
            print(line)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    import spikelab

    from . import bench

    if args.trace_import:
        if args.grid or args.against or args.scenario or args.set or args.studies:
            raise ValueError("--trace-import: times the import of the LTE example's capture; "
                             "it takes no --grid, --against, --studies, --scenario or --set")
        bench.trace_import(repeat=args.repeat)
        return 0
    if args.studies:
        if args.grid or args.against or args.scenario or args.set:
            raise ValueError("--studies: runs the paper studies as written; it takes no "
                             "--grid, --against, --scenario or --set")
        bench.studies(jobs=args.jobs)
        return 0
    if args.jobs is not None:
        raise ValueError("-j/--jobs: only with --studies")
    scenario = args.scenario if args.scenario is not None else bench.default_scenario()
    if args.against == "ns2":
        if args.grid:
            raise ValueError("--grid: not available with --against ns2")
        with _scenario_file(scenario):
            bench.against_ns2(scenario, list(args.set or []), repeat=args.repeat)
        return 0
    if args.grid:
        with _scenario_file(scenario):
            bench.grid(scenario)
        return 0
    walls = []
    for i in range(1, args.repeat + 1):
        with _scenario_file(scenario):
            result = spikelab.run(scenario, seed=args.seed, overrides=args.set,
                                  trace="summary", progress=False)
        packets = sum(result.runs["segments_sent"].to_pylist())
        wall = result.wall_s
        walls.append(wall)
        if i == 1:
            print(f"{scenario}: seed {result.seed}, {_plural(result.runs.num_rows, 'flow')}, "
                  f"{result.duration_s:g} s simulated, {result.events:,} events, "
                  f"{packets:,} data packets")
            print(f"{'run':>3}  {'wall s':>8}  {'events/s':>12}  {'data pkts/wall s':>16}"
                  f"  {'sim s/wall s':>12}")
        print(f"{i:>3}  {wall:8.4f}  {result.events / wall:12,.0f}  {packets / wall:16,.0f}"
              f"  {result.duration_s / wall:12,.1f}")
    best = min(walls)
    print(f"best of {len(walls)}: {best:.4f} s wall (median {statistics.median(walls):.4f} s), "
          f"{result.events / best:,.0f} events/s, "
          f"{packets / best:,.0f} data packets simulated per wall second")
    return 0


def _jobs_text(args: argparse.Namespace) -> str:
    if args.dask:
        return f"Dask ({args.dask})"
    return _plural(args.jobs or os.cpu_count() or 1, "local worker")


def _report_failures(result) -> int:
    failed = result.failed
    if not failed:
        return 0
    import shlex

    first = result.manifest["failures"][0]
    _say_error(f"{failed} of {result.manifest['runs_total']} runs failed "
               f"(first: {first['run_id']}: {first['error']}); they are in runs.parquet "
               f"with status 'failed' and are retried when the command is repeated")
    from spikelab.sweep import repeat_command

    with contextlib.suppress(Exception):  # a hint only
        cmd = repeat_command(result.dir, result.manifest, first["run_id"])
        print(f"{PROG}: to repeat {first['run_id']} alone: {shlex.join(cmd)}",
              file=sys.stderr)
    return EXIT_RUNS_FAILED


def cmd_sweep(args: argparse.Namespace) -> int:
    import spikelab

    with _scenario_file(args.scenario) as scenario:
        plan = spikelab.sweep_plan(scenario, seed=args.seed, overrides=args.set,
                                   trace=args.trace)
        if not args.quiet:
            print(f"{args.scenario}: {_plural(len(plan.tasks), 'run')} "
                  f"({_plural(plan.spec.point_count(), 'grid point')} × "
                  f"{_plural(plan.spec.replications, 'replication')}) on {_jobs_text(args)}")
        del plan  # the sweep makes its own (a million runs' tasks take memory)
        result = spikelab.sweep(scenario, args.out, jobs=args.jobs, dask=args.dask,
                                seed=args.seed, overrides=args.set, trace=args.trace,
                                fresh=args.fresh, progress=False if args.quiet else None,
                                force=args.force)
    if not args.no_plots and result.manifest["runs_ok"]:
        from spikelab.figures import sweep as sweepplots  # matplotlib: only to draw

        sweepplots.draw(args.out, sweepplots.default_specs(result.params()))
    if not args.quiet:
        m = result.manifest
        reused = (f" ({m['runs_reused']} of them kept from an earlier call)"
                  if m.get("runs_reused") else "")
        print(f"{m['runs_ok']} ok{reused}, {m['runs_failed']} failed in {m['wall_s']:.1f} s "
              f"wall ({m['core_wall_s']:.1f} s of simulation)")
        print(f"results: {args.out} (runs.parquet: {result.rows()} rows)")
    return _report_failures(result)


def cmd_query(args: argparse.Namespace) -> int:
    from spikelab.analysis.query import query

    frame = query(args.dir, args.sql)
    if args.format == "csv":
        print(frame.to_csv(index=False), end="")
    elif args.format == "json":
        print(frame.to_json(orient="records", indent=1))
    else:
        print(frame.to_string(index=False) if len(frame.columns) else "(no columns)")
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    import spikelab
    from spikelab.analysis import stats
    from spikelab.store import results

    kind = results.expect_kind(args.dir, ("run", "emulate", "sweep", "study"),
                               "spikelab summary reads a sweep's or a study's")
    if kind in ("run", "emulate"):
        spikelab.load(args.dir)  # an interrupted run says so
        raise results.OutdirError(f"{args.dir}: holds a single run, not a sweep; its numbers are "
                                  f"in runs.parquet (spikelab query {args.dir} \"SELECT * FROM "
                                  f"runs\")")
    result = spikelab.load(args.dir)
    frame = result.runs.to_pandas()
    if frame.empty:
        raise results.OutdirError(f"{args.dir}: no finished runs to summarise (the sweep "
                                  f"has no manifest and no run in parts/ yet)")
    if "status" in frame.columns and not (frame["status"] == "ok").any():
        raise results.OutdirError(f"{args.dir}: no completed runs to summarise (all "
                                  f"{frame['run_id'].nunique()} failed; their errors are in "
                                  f"runs.parquet's error column)")
    params = result.params() if hasattr(result, "params") else []
    metrics = args.metric or [m for m in stats.DEFAULT_METRICS if m in frame.columns]
    table = stats.summarize(frame, params, metrics)
    print(stats.format_summary(table, metrics))
    return 0


def cmd_figure(args: argparse.Namespace) -> int:
    from spikelab.figures import sweep as sweepplots

    raw = {k: getattr(args, k) for k in ("kind", "y", "x", "hue", "col", "row", "where",
                                         "scale", "ylabel", "title", "name")
           if getattr(args, k) is not None}
    spec = sweepplots.FigureSpec.parse(raw, "figure")
    paths = sweepplots.draw(args.dir, [spec])
    if not args.quiet:
        print("figures: " + ", ".join(str(p) for p in paths))
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    from spikelab import study

    if args.action == "list":
        found = study.available()
        if not found:
            print("no studies found")
        for name, path in found.items():
            s = study.parse(path)
            print(f"{name:24s} {s.title}")
        return 0
    if args.action == "run":
        s = study.find(args.name)
        if not args.quiet:
            print(f"study {s.name}: {s.title}")
        data = study.run(args.name, args.out, jobs=args.jobs, dask=args.dask,
                         replications=args.replications, fresh=args.fresh,
                         progress=False if args.quiet else None, force=args.force,
                         overrides=args.set)
    else:
        data = study.report(args.dir)
    out = args.out if args.action == "run" else args.dir
    paper = data["paper_results"]
    if paper["claimed"]:
        print(f"paper results reproduced: {paper['reproduced']} of {paper['claimed']}")
    if data["overrides"]:
        print("NOT the study as written: " + "; ".join(data["overrides"]))
    for c in data["claims"]:
        mark = {"holds": "holds", "fails": "FAILS", "undecided": "UNDEC",
                "error": "ERROR"}[c["status"]]
        kind = "paper " if c["kind"] == "paper" else ""
        print(f"  [{mark:5s}] {kind}{c['id']}: {c['claim']}")
        if c["error"]:
            print(f"          {c['error']}")
    held = sum(c["status"] == "holds" for c in data["claims"])
    print(f"{held} of {len(data['claims'])} claims hold; report: "
          f"{Path(out) / 'report.html'} (and report.md)")
    status = 0
    if args.action == "run":
        import spikelab

        status = _report_failures(spikelab.load(out))
    errors = [c["id"] for c in data["claims"] if c["status"] == "error"]
    if errors:
        _say_error(f"{_plural(len(errors), 'claim')} could not be evaluated "
                   f"({', '.join(errors)}: see ERROR above)")
        status = status or EXIT_CLAIM_ERRORS
    if paper["unexplained"]:
        _say_error(f"{_plural(len(paper['unexplained']), 'paper claim')} fail without an "
                   f"explained_by claim that holds ({', '.join(paper['unexplained'])})")
        status = status or EXIT_PAPER_CLAIMS
    return status


# ---------------------------------------------------------------------------------- parser


def parser() -> argparse.ArgumentParser:
    from spikelab import __version__

    top = _Parser(prog=PROG, description="Deterministic simulation of TCP over paths whose "
                  "delay moves.")
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND",
                             parser_class=_Parser)

    def overrides(p: argparse.ArgumentParser) -> None:
        p.add_argument("--set", action="append", default=[], type=_override,
                       metavar="KEY=VALUE",
                       help="override a scenario field, e.g. flow[0].tcp.variant=newreno "
                            "(repeatable)")

    p = sub.add_parser("run", help="simulate a scenario and write a results directory")
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument("-o", "--out", metavar="OUTDIR", help="results directory to write")
    p.add_argument("--seed", type=int, help="master seed (default: the scenario's sim.seed)")
    overrides(p)
    p.add_argument("--trace", choices=("summary", "timeseries", "packets"),
                   help="what to record (default: the scenario's sim.trace, else summary)")
    p.add_argument("--pcap", nargs="?", const="sender,receiver", metavar="POINTS",
                   help="write pcapng captures into OUTDIR/pcap/: sender and receiver, or the "
                        "comma-separated points given (sender, receiver, path.NAME.stage[K]); "
                        "the same as --set sim.pcap=[...]")
    p.add_argument("--no-plots", action="store_true", help="write tables only")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    p.add_argument("--force", action="store_true",
                   help="write even if OUTDIR holds another kind of result (a sweep, a study)")
    p.set_defaults(func=cmd_run, exit_at_once=True)  # see main()

    p = sub.add_parser("plot", help="redraw the figures of a results directory")
    p.add_argument("outdir", metavar="OUTDIR")
    p.add_argument("--zoom", type=_zoom, metavar="T0:T1", help="time window, seconds")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("validate", help="check a scenario file")
    p.add_argument("file", metavar="FILE")
    overrides(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("bench", help="time the simulator on a benchmark scenario")
    p.add_argument("--scenario", metavar="FILE",
                   help="scenario to time (default: benches/ns3-dumbbell.toml of the source "
                        "checkout)")
    p.add_argument("--repeat", type=_positive, default=3, metavar="N",
                   help="number of timed runs (default 3)")
    p.add_argument("--seed", type=int)
    p.add_argument("--grid", action="store_true",
                   help="1, 10, 100 and 1,000 flows at each trace level, each a whole "
                        "'spikelab run' process: core and process time, peak memory")
    p.add_argument("--against", choices=("ns2",),
                   help="time ns-2.35 (the ns command) beside spikelab on the scenario, both "
                        "with ns-2's agents (spikelab's ns2 profile), each as a whole process: "
                        "CPU, wall time and data packets of both (docs/fidelity.md, 'Against "
                        "ns-2.35')")
    p.add_argument("--studies", action="store_true",
                   help="time the paper studies (docs/studies.md), each a whole 'spikelab "
                        "study run' process: wall and CPU time, peak memory, the report's "
                        "first line; their budget together is 20 minutes on 2 cores")
    p.add_argument("-j", "--jobs", type=_positive, metavar="N",
                   help="with --studies: worker processes (default: all cores)")
    p.add_argument("--trace-import", action="store_true",
                   help="time 'spikelab trace import pcap' on a 750,000-frame capture (the "
                        "LTE example, 600 s simulated), each a whole process, with and "
                        "without its figure: wall and CPU time, peak memory")
    overrides(p)
    p.set_defaults(func=cmd_bench)

    def executor(p: argparse.ArgumentParser) -> None:
        p.add_argument("-j", "--jobs", type=_positive, metavar="N",
                       help="worker processes (default: all cores)")
        p.add_argument("--dask", metavar="ADDRESS",
                       help="run on a Dask cluster: a scheduler address (tcp://host:8786) "
                            "or 'local' for a LocalCluster of --jobs worker processes")
        p.add_argument("--fresh", action="store_true",
                       help="discard earlier results in OUTDIR instead of resuming")
        p.add_argument("--force", action="store_true",
                       help="write even if OUTDIR holds another kind of result (a single run)")

    p = sub.add_parser("sweep", help="run a scenario's [sweep]: grid points × replications")
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument("-o", "--out", metavar="OUTDIR", required=True,
                   help="results directory (resumed if it holds this sweep)")
    executor(p)
    p.add_argument("--seed", type=int, help="base seed (default: the scenario's sim.seed)")
    overrides(p)
    p.add_argument("--trace", choices=("summary", "timeseries", "packets"),
                   help="what each run records (default: the sweep's trace, else summary)")
    p.add_argument("--no-plots", action="store_true", help="no default figures")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_sweep, exit_at_once=True)  # workers stopped, manifest written

    p = sub.add_parser("query", help="SQL (DuckDB) over a results directory: views runs, "
                                     "timeseries, packets")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("sql", metavar="SQL")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("summary", help="mean ± 95%% CI per grid point of a sweep")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--metric", action="append", metavar="COLUMN",
                   help="a runs column to summarise (repeatable; default: goodput, bytes, "
                        "RTOs, fast retransmits, retransmitted segments)")
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("figure", help="draw a sweep figure (bar, line, cdf, heatmap)")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--kind", required=True, choices=("bar", "line", "cdf", "heatmap"))
    p.add_argument("--y", required=True, metavar="METRIC", help="runs column to show")
    p.add_argument("--x", metavar="PARAM")
    p.add_argument("--hue", metavar="PARAM", help="one bar / line / curve per value")
    p.add_argument("--col", metavar="PARAM", help="one panel per value")
    p.add_argument("--row", metavar="PARAM", help="heatmap rows")
    p.add_argument("--where", metavar="SQL", help="condition on runs rows")
    p.add_argument("--scale", type=float, help="multiply y (e.g. 1e-6 for Mbit/s)")
    p.add_argument("--ylabel")
    p.add_argument("--title")
    p.add_argument("--name", help="file name stem (default from the options)")
    p.set_defaults(func=cmd_figure)

    p = sub.add_parser("study", help="studies: list, run, report")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION",
                               parser_class=_Parser)
    a = actions.add_parser("list", help="studies shipped with spikelab and in ./studies")
    a.set_defaults(func=cmd_study)
    a = actions.add_parser("run", help="run a study and write its report")
    a.add_argument("name", metavar="NAME|DIR")
    a.add_argument("-o", "--out", metavar="OUTDIR", required=True)
    executor(a)
    a.add_argument("--replications", type=_positive, metavar="N",
                   help="override the study's replications (quick look)")
    a.add_argument("--set", action="append", default=[], type=_override, metavar="KEY=VALUE",
                   help="override a scenario field in every run, before the cell's own values "
                        "(a calibration: preset.umts-downlink.buffer=55KB; repeatable)")
    a.add_argument("-q", "--quiet", action="store_true")
    a.set_defaults(func=cmd_study, exit_at_once=True)
    a = actions.add_parser("report", help="re-evaluate claims and rewrite the report of DIR")
    a.add_argument("dir", metavar="DIR")
    a.set_defaults(func=cmd_study)

    from .emulate import register as register_emulation  # emulate, compare

    register_emulation(sub, _override, _zoom)
    from .fidelity import register as register_fidelity

    register_fidelity(sub)
    from .rto_study import register as register_rto_study

    register_rto_study(sub)
    from .traces import register as register_traces

    register_traces(sub, _Parser)
    for command in _commands(top):
        _verbosity_flags(command)
    return top


def _commands(p: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every command's own parser (``study run``, not ``study``)."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _commands(child)
            return
    yield p


def _verbosity_flags(p: argparse.ArgumentParser) -> None:
    """-q and -v on every command: -q prints only the command's results and errors (no
    progress, no notes); -v logs each stage of the work on stderr (-vv: each run too)."""
    if "-q" not in p._option_string_actions:
        p.add_argument("-q", "--quiet", action="store_true",
                       help="print only results and errors: no progress, no notes")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="log each stage of the work on stderr (-vv: each run of a sweep too)")


@contextlib.contextmanager
def _logging(args: argparse.Namespace) -> Iterator[None]:
    """-v: spikelab's loggers (logging module, logger ``spikelab``) print on stderr, each line
    with the seconds since the command began."""
    import logging
    import time

    level = {0: None, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    if level is not None and args.quiet:
        raise ValueError("-q and -v: choose one (-q prints only results and errors, -v adds "
                         "each stage's progress)")
    if level is None:
        yield
        return
    start = time.monotonic()

    class _Since(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"{PROG}: [{time.monotonic() - start:8.2f} s] {record.getMessage()}"

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Since())
    log = logging.getLogger("spikelab")
    saved = (log.level, log.propagate)
    log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(saved[0])
        log.propagate = saved[1]


def _os_message(exc: OSError) -> str:
    if exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    if str(exc):
        return str(exc)
    # No text: say what failed in words, never the exception's class name.
    what = os.strerror(exc.errno) if exc.errno else "an operating-system call failed"
    return f"{exc.filename}: {what}" if exc.filename is not None else what


def _terminate_as_interrupt() -> None:
    """SIGTERM stops a command the way Ctrl-C does (exit 130, interrupted manifest)."""
    import signal

    def handler(signum, frame):
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread (embedded use)
        signal.signal(signal.SIGTERM, handler)


def _ignore_interrupts() -> None:
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(ValueError):
            signal.signal(sig, signal.SIG_IGN)


def main(argv: Sequence[str] | None = None) -> int:
    _terminate_as_interrupt()
    args = None
    try:
        args = parser().parse_args(argv)
        with _logging(args):
            return args.func(args)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        if argv is None:  # the command itself, exiting: a second Ctrl-C must not change 130
            _ignore_interrupts()
        print(f"{PROG}: interrupted", file=sys.stderr)
        if argv is None and getattr(args, "exit_at_once", False):
            # Everything is written and every child stopped; the interpreter's teardown of
            # pyarrow and pandas would take a few hundred ms more of the user's second.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        _say_error(_os_message(exc))
        return EXIT_USAGE
    except ValueError as exc:  # ScenarioError is a ValueError
        _say_error(str(exc).splitlines()[0] if str(exc) else "invalid input")
        return EXIT_USAGE
    except BaseException as exc:  # e.g. a run the core stopped: still no traceback
        if os.environ.get("SPIKELAB_DEBUG"):
            raise
        from spikelab import _core

        text = str(exc).splitlines()[0] if str(exc) else ""
        if isinstance(exc, _core.SimulationError) and not text.startswith("internal error"):
            _say_error(text)  # time stopped advancing, a trace bound: the scenario's doing
            return EXIT_USAGE
        _say_error(f"internal error: {text or 'unexpected failure'} "
                   f"(SPIKELAB_DEBUG=1 shows the traceback)")
        return EXIT_INTERNAL
