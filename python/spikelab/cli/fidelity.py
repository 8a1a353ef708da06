"""The ``fidelity`` command: the kernel-fidelity suite (docs/fidelity.md), or with
``--against ns2`` the ns-2 suite and ``--against usrsctp`` the usrsctp one; :func:`register`
adds it to ``spikelab``. Nothing heavy is imported until the command runs."""

from __future__ import annotations

import argparse
import sys

DEFAULT_OUT = "out/fidelity"
DEFAULT_OUT_NS2 = "out/fidelity-ns2"
DEFAULT_OUT_USRSCTP = "out/fidelity-usrsctp"
AGAINST = ("kernel", "ns2", "usrsctp")
EXIT_SCENARIOS_FAILED = 3


def cmd_fidelity(args: argparse.Namespace) -> int:
    if args.against == "ns2":
        return cmd_fidelity_ns2(args)
    if args.against == "usrsctp":
        return cmd_fidelity_usrsctp(args)
    from .. import fidelity

    if args.rewrite:
        result = fidelity.rewrite(args.out)
        print(f"{result.summary_line()}; kernel {result.manifest['kernel_release']} "
              "(rewritten from the runs in place)")
        print(f"report: {result.dir / 'report.md'} (table: {result.dir / 'fidelity.parquet'})")
        return 0
    if args.list:
        print("\n".join(fidelity.suite.listing(args.only)))
        return 0

    def done(o) -> str:
        t = o.timing or {}
        p99 = f"{t['p99_ns'] / 1e6:.3f} ms" if t.get("p99_ns") is not None else "n/a"
        return (f"goodput {_pair(o.sim, o.kernel, 'goodput_mbps', '.2f')} Mbit/s  RTOs "
                f"{_pair(o.sim, o.kernel, 'rto_count')}  fast retx "
                f"{_pair(o.sim, o.kernel, 'fast_retx_count')}  TLPs "
                f"{_pair(o.sim, o.kernel, 'tlp_count')}  undos "
                f"{_pair(o.sim, o.kernel, 'undo_count')}  (sim/kernel; emulator p99 error {p99})")

    on_start, on_done = _callbacks(
        args, lambda sc: f"simulating, then emulating {sc.duration_s:g} s ...", done)
    result = fidelity.run(args.out, only=args.only, plots=args.plots,
                          progress=False if args.quiet else None, force=args.force,
                          on_start=on_start, on_done=on_done)
    print(f"{result.summary_line()}; kernel {result.manifest['kernel_release']}, "
          f"{result.manifest['wall_s'] / 60:.1f} min")
    print(f"report: {result.dir / 'report.md'} (table: {result.dir / 'fidelity.parquet'})")
    return EXIT_SCENARIOS_FAILED if result.failed else 0


def _line(i: int, n: int, name: str, text: str) -> str:
    return f"[{i}/{n}] {name}: {text}"


def _pair(a: dict, b: dict, key: str, fmt: str = ".0f") -> str:
    """``A/B``: one metric of both sides (n/a where a side has none)."""
    x, y = a.get(key), b.get(key)
    return f"{'n/a' if x is None else format(x, fmt)}/{'n/a' if y is None else format(y, fmt)}"


def _callbacks(args: argparse.Namespace, starting, done):
    """A suite's ``on_start`` and ``on_done`` (nothing with ``--quiet``): ``[i/n] NAME:``
    then ``starting(scenario)`` on stderr; the scenario's error, or its verdict and
    ``done(outcome)``, on stdout."""

    def on_start(i: int, n: int, sc) -> None:
        if not args.quiet:
            print(_line(i, n, sc.name, starting(sc)), file=sys.stderr, flush=True)

    def on_done(i: int, n: int, o) -> None:
        if args.quiet:
            return
        if o.error:
            print(_line(i, n, o.scenario.name, f"ERROR {o.error}"), flush=True)
            return
        verdict = "agrees " if o.agrees else "differs"
        print(_line(i, n, o.scenario.name, f"{verdict}  {done(o)}"), flush=True)

    return on_start, on_done


def cmd_fidelity_ns2(args: argparse.Namespace) -> int:
    """The ns-2 suite: spikelab's ns2 profile beside ns-2.35 (docs/fidelity.md)."""
    from ..fidelity import ns2

    if args.rewrite or args.plots:
        flag = "--rewrite" if args.rewrite else "--plots"
        raise ns2.Ns2SuiteError(f"{flag}: not available with --against ns2 (the suite reruns "
                                "in seconds; spikelab plot NAME/sim draws a run's figures)")
    scenarios = ns2.select(args.only)
    if args.list:
        ns2.check(scenarios)
        width = max(len(s.name) for s in scenarios)
        for s in scenarios:
            print(f"{s.name:{width}s}  {s.protocol:4s}  {s.duration_s:4g} s  {s.description}")
        print(f"{len(scenarios)} scenarios, {sum(s.duration_s for s in scenarios):g} s "
              "of simulated time each side")
        return 0
    out = args.out if args.out != DEFAULT_OUT else DEFAULT_OUT_NS2

    def done(o) -> str:
        return (f"delivered {_pair(o.spikelab, o.ns2, 'delivered')}  timeouts "
                f"{_pair(o.spikelab, o.ns2, 'timeouts')}  retx {_pair(o.spikelab, o.ns2, 'retx')}"
                f"  fast retx {_pair(o.spikelab, o.ns2, 'fast_retx')}  bottleneck "
                f"{_pair(o.spikelab, o.ns2, 'bottleneck')}  (spikelab/ns-2)")

    on_start, on_done = _callbacks(args, lambda sc: "simulating and running ns ...", done)
    result = ns2.run(out, only=args.only, force=args.force, on_start=on_start, on_done=on_done)
    print(f"{result.summary_line()}; ns {result.manifest['ns2']}, "
          f"{result.manifest['wall_s']:.1f} s")
    print(f"report: {result.dir / 'report.md'} (table: {result.dir / 'fidelity.parquet'})")
    return EXIT_SCENARIOS_FAILED if (result.failed or result.differ) else 0


def cmd_fidelity_usrsctp(args: argparse.Namespace) -> int:
    """The usrsctp suite (``spikelab.fidelity.usrsctp``; root and libusrsctp2)."""
    from ..fidelity import usrsctp

    out = args.out if args.out != DEFAULT_OUT else DEFAULT_OUT_USRSCTP
    if args.rewrite:
        result = usrsctp.rewrite(out)
        print(f"{result.summary_line()} (rewritten from the runs in place)")
        print(f"report: {result.dir / 'report.md'} (table: {result.dir / 'fidelity.parquet'})")
        return 0
    if args.list:
        print("\n".join(usrsctp.listing(args.only)))
        return 0

    def done(o) -> str:
        s, r = o.sim, o.reference
        return (f"goodput {_pair(s, r, 'goodput_mbps', '.2f')} Mbit/s  T3 "
                f"{_pair(s, r, 'rto_retx_count')}  fast retx {_pair(s, r, 'fast_retx_count')}  "
                f"chunks {_pair(s, r, 'retx_chunks')}  failovers {_pair(s, r, 'failovers')}  "
                "(sim/usrsctp)")

    on_start, on_done = _callbacks(
        args, lambda sc: f"simulating, then emulating {sc.duration_s:g} s against usrsctp ...",
        done)
    result = usrsctp.run(out, only=args.only, on_start=on_start, on_done=on_done,
                         progress=False if args.quiet else None, force=args.force,
                         plots=args.plots)
    print(result.summary_line())
    print(f"report: {result.dir / 'report.md'} (table: {result.dir / 'fidelity.parquet'})")
    return EXIT_SCENARIOS_FAILED if result.failed else 0


def register(sub) -> None:
    """Add ``fidelity`` to the ``spikelab`` subparsers ``sub``."""
    p = sub.add_parser("fidelity", help="fidelity suites: each scenario simulated and run "
                       "by a real implementation, compared (--against kernel, the default: "
                       "the linux profile against the Linux kernel, needs root; ns2: the "
                       "ns2 profiles against ns-2.35; usrsctp: SCTP against usrsctp, needs "
                       "root)")
    p.add_argument("--against", choices=AGAINST, default="kernel",
                   help="what the simulator is held against (default kernel; ns2 needs the "
                        "ns command: apt-get install ns2)")
    p.add_argument("-o", "--out", metavar="DIR", default=DEFAULT_OUT,
                   help=f"results directory (default {DEFAULT_OUT}; {DEFAULT_OUT_NS2} with "
                        f"--against ns2, {DEFAULT_OUT_USRSCTP} with --against usrsctp)")
    p.add_argument("--only", nargs="+", action="extend", metavar="NAME",
                   help="run only these scenarios (repeatable)")
    p.add_argument("--list", action="store_true",
                   help="list the suite's scenarios and exit (needs no root, nor ns)")
    p.add_argument("--rewrite", action="store_true",
                   help="rewrite the tables and report.md of DIR from the runs it holds (e.g. "
                        "after editing the suite's why notes); runs nothing, needs no root")
    p.add_argument("--plots", action="store_true",
                   help="draw each run's figures too (slower; spikelab compare works either way)")
    p.add_argument("--force", action="store_true",
                   help="write even if DIR holds another kind of result")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, no lines per "
                   "scenario")
    p.set_defaults(func=cmd_fidelity, exit_at_once=True)
