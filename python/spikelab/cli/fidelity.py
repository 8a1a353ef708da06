"""The ``fidelity`` command: the kernel-fidelity suite (docs/fidelity.md); :func:`register`
adds it to ``spikelab``. Nothing heavy is imported until the command runs."""

from __future__ import annotations

import argparse
import sys

DEFAULT_OUT = "out/fidelity"
EXIT_SCENARIOS_FAILED = 3


def cmd_fidelity(args: argparse.Namespace) -> int:
    from .. import fidelity

    if args.rewrite:
        result = fidelity.rewrite(args.out)
        print(f"{result.summary_line()}; kernel {result.manifest['kernel_release']} "
              "(rewritten from the runs in place)")
        print(f"report: {result.dir / 'report.md'} (table: {result.dir / 'fidelity.parquet'})")
        return 0
    scenarios = fidelity.select(args.only)
    if args.list:
        fidelity.check(scenarios)
        width = max(len(s.name) for s in scenarios)
        for s in scenarios:
            print(f"{s.name:{width}s}  {s.duration_s:4g} s  {s.description}")
        total = sum(s.duration_s for s in scenarios)
        print(f"{len(scenarios)} scenarios, {total:g} s of emulated time")
        return 0

    def on_start(i: int, n: int, sc) -> None:
        if not args.quiet:
            print(f"[{i}/{n}] {sc.name}: simulating, then emulating {sc.duration_s:g} s ...",
                  file=sys.stderr, flush=True)

    def on_done(i: int, n: int, o) -> None:
        if args.quiet:
            return
        if o.error:
            print(f"[{i}/{n}] {o.scenario.name}: ERROR {o.error}", flush=True)
            return
        s, k = o.sim, o.kernel

        def pair(key: str, fmt: str) -> str:
            a, b = s.get(key), k.get(key)
            return (f"{'n/a' if a is None else format(a, fmt)}/"
                    f"{'n/a' if b is None else format(b, fmt)}")

        verdict = "agrees " if o.agrees else "differs"
        t = o.timing or {}
        p99 = f"{t['p99_ns'] / 1e6:.3f} ms" if t.get("p99_ns") is not None else "n/a"
        print(f"[{i}/{n}] {o.scenario.name}: {verdict}  goodput "
              f"{pair('goodput_mbps', '.2f')} Mbit/s  RTOs {pair('rto_count', '.0f')}  "
              f"fast retx {pair('fast_retx_count', '.0f')}  TLPs {pair('tlp_count', '.0f')}  "
              f"undos {pair('undo_count', '.0f')}  (sim/kernel; emulator p99 error {p99})",
              flush=True)

    result = fidelity.run(args.out, only=args.only, plots=args.plots,
                          progress=False if args.quiet else None, force=args.force,
                          on_start=on_start, on_done=on_done)
    print(f"{result.summary_line()}; kernel {result.manifest['kernel_release']}, "
          f"{result.manifest['wall_s'] / 60:.1f} min")
    print(f"report: {result.dir / 'report.md'} (table: {result.dir / 'fidelity.parquet'})")
    return EXIT_SCENARIOS_FAILED if result.failed else 0


def register(sub) -> None:
    """Add ``fidelity`` to the ``spikelab`` subparsers ``sub``."""
    p = sub.add_parser("fidelity", help="kernel-fidelity suite: each scenario simulated "
                       "(linux profile) and emulated against the Linux kernel, compared "
                       "(needs root)")
    p.add_argument("-o", "--out", metavar="DIR", default=DEFAULT_OUT,
                   help=f"results directory (default {DEFAULT_OUT})")
    p.add_argument("--only", nargs="+", action="extend", metavar="NAME",
                   help="run only these scenarios (repeatable)")
    p.add_argument("--list", action="store_true",
                   help="list the suite's scenarios and exit (needs no root)")
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
