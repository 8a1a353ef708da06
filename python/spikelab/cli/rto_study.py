"""The ``rto-study`` command: paper 004 §6.2's analytic study of SCTP's RTO gains alpha and beta
over an RTT trace (docs/rto-study.md); :func:`register` adds it to ``spikelab``. Nothing heavy
is imported until the command runs."""

from __future__ import annotations

import argparse
import math
import re

from .common import checked

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "": 1.0, "min": 60.0}
TOP, BOTTOM = 10, 3


def _duration(text: str) -> float:
    """``1s``, ``1000ms``, ``0.2`` (seconds) -> seconds, >= 0."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([a-zµ]*)\s*", text)
    value = None
    if match and match.group(2) in _UNITS:
        try:
            value = float(match.group(1)) * _UNITS[match.group(2)]
        except ValueError:
            value = None
    if value is None or not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a time >= 0 such as 1s or 200ms, got {text!r}")
    return value


def _grid(text: str) -> tuple[float, ...]:
    from ..analysis.rto_study import parse_grid  # imports pyarrow: only when the option is used

    try:
        return parse_grid(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_sigma = checked(float, lambda v: math.isfinite(v) and 0 <= v <= 10, "a number between 0 and 10")


_seconds = checked(int, lambda v: 1 <= v <= 10_000_000,
                   "a whole number of seconds between 1 and 10000000")


_seed = checked(int, lambda v: 0 <= v < 2**64, "an integer between 0 and 2^64 - 1")


def _s(v: float) -> str:
    return f"{v:g} s"


def ranking_lines(table) -> list[str]:
    """The top ``TOP`` and bottom ``BOTTOM`` pairs by rank, as aligned text."""
    from ..analysis.stats import align

    cols = table.to_pydict()
    order = sorted(range(table.num_rows), key=lambda k: cols["rank"][k])
    shown = order if len(order) <= TOP + BOTTOM else order[:TOP] + [-1] + order[-BOTTOM:]
    header = ["rank", "alpha", "beta", "delay sum s", "spurious s", "grade delay",
              "grade spurious", "distance"]
    rows = []
    for k in shown:
        if k < 0:
            rows.append(["…"] + [""] * (len(header) - 1))
            continue
        rows.append([str(cols["rank"][k]), f"{cols['alpha'][k]:g}", f"{cols['beta'][k]:g}",
                     f"{cols['delay_sum_s'][k]:.2f}", str(cols["spurious_s"][k]),
                     str(cols["grade_delay"][k]), str(cols["grade_spurious"][k]),
                     f"{cols['distance'][k]:.2f}"])
    return [line.rstrip() for line in align(header, rows).splitlines()]


def simulated_lines(table, top: int = 5) -> list[str]:
    """The top ``top`` pairs by simulated data delivered, with their analytical rank."""
    from ..analysis.stats import align

    cols = table.to_pydict()
    order = sorted(range(table.num_rows), key=lambda k: cols["sim_rank"][k])[:top]
    header = ["sim rank", "alpha", "beta", "data MB", "failover s", "analytical rank"]
    rows = []
    for k in order:
        t = cols["sim_time_to_failover_s"][k]
        rows.append([str(cols["sim_rank"][k]), f"{cols['alpha'][k]:g}", f"{cols['beta'][k]:g}",
                     f"{cols['sim_bytes_delivered'][k] / 1e6:.2f}",
                     "none" if t is None else f"{t:.3f}", str(cols["rank"][k])])
    return [line.rstrip() for line in align(header, rows).splitlines()]


def cmd_rto_study(args: argparse.Namespace) -> int:
    from ..run import run as run_one

    from ..analysis import rto_study

    kw = {}
    if args.alphas is not None:
        kw["alphas"] = args.alphas
    if args.betas is not None:
        kw["betas"] = args.betas
    params = rto_study.Params(rto_initial=args.rto_initial, rto_min=args.rto_min,
                              rto_max=args.rto_max, alignment=args.alignment, **kw)
    result = rto_study.run(args.trace, args.out, params=params, seconds=args.seconds,
                           noise=args.noise, seed=args.seed, force=args.force,
                           simulate_scenario=args.simulate,
                           runner=run_one if args.simulate else None)
    figures = []
    if args.out is not None and not args.no_plots:
        from ..figures import rto_study as rto_figures

        paths = rto_figures.draw(result.dir)
        figures = [f"{p.parent.name}/{p.name}" for p in paths]
        rto_study.write_manifest(result, figures)
    if args.quiet:
        return 0
    trace = result.trace
    what = {"preset": "the preset's skeleton" if not trace.noise
            else f"the preset, noise σ {trace.noise:g}, seed {trace.seed}",
            }.get(trace.format, f"{trace.rows} rows ({trace.format}) resampled to 1 s")
    print(f"{trace.source}: {len(trace.rtt_ms)} one-second RTT samples ({what}); "
          f"{result.table.num_rows} (α, β) pairs; RTO.Initial {_s(params.rto_initial)}, "
          f"RTO.Min {_s(params.rto_min)}, RTO.Max {_s(params.rto_max)}, RTO {params.alignment} "
          f"sample i")
    for line in ranking_lines(result.table):
        print(line)
    best = rto_study.best_pair(result.table)
    print(f"best: α {best[0]:g}, β {best[1]:g} (paper 004 Table 1 on its own trace: "
          f"α 0.2 β 0.7, α 0.2 β 0.6, α 0.3 β 0.6)")
    sim = result.simulation
    if sim is not None:
        print(f"simulated (004 §6.3): {sim['scenario']}, {sim['runs']} runs; data delivered "
              f"by flow 0, rank 1 = most")
        for line in simulated_lines(result.table):
            print(line)
        gain = sim["best_bytes_delivered"] / sim["default_bytes_delivered"] - 1 \
            if sim["default_bytes_delivered"] else math.nan
        t = sim["default_time_to_failover_s"]
        print(f"default α 0.125, β 0.25: {sim['default_bytes_delivered'] / 1e6:.2f} MB, "
              f"failover {'none' if t is None else f'after {t:.3f} s'}; best α "
              f"{sim['best_pair'][0]:g}, β {sim['best_pair'][1]:g}: "
              f"{sim['best_bytes_delivered'] / 1e6:.2f} MB ({gain:+.1%}; paper 004 ns-2: "
              f"0.7/0.7 673 vs 412 MB, +63 %)")
        rho = sim["spearman"]
        print(f"Spearman's rank correlation, analytical vs simulated: "
              f"{'undefined' if rho is None else f'{rho:+.3f}'}")
    if args.out is not None:
        print(f"results: {args.out} ({rto_study.TABLE}: {result.table.num_rows} rows)")
        if figures:
            print(f"figures: {result.dir / 'figures'} ({len(figures)} files)")
    return 0


def register(sub) -> None:
    """Add ``rto-study`` to the ``spikelab`` subparsers ``sub``."""
    p = sub.add_parser("rto-study", help="paper 004 §6.2: grade SCTP RTO alpha/beta pairs on "
                       "an RTT trace (delay sum vs spurious seconds)")
    p.add_argument("trace", metavar="TRACE",
                   help="'wlan-walkaway' (the preset's RTT trace) or a CSV file with the "
                        "header time_s,rtt_ms or time_ms,delay_ms,loss")
    p.add_argument("-o", "--out", metavar="OUTDIR",
                   help="results directory: rto_study.parquet (and .csv), rto_series.parquet, "
                        "figures/, manifest.json (default: print only)")
    p.add_argument("--alphas", type=_grid, metavar="START:STOP:STEP|A,B,...",
                   help="alpha values in [0, 1] (default 0:1:0.1)")
    p.add_argument("--betas", type=_grid, metavar="START:STOP:STEP|A,B,...",
                   help="beta values in [0, 1] (default 0:1:0.1)")
    p.add_argument("--rto-min", type=_duration, default=1.0, metavar="TIME",
                   help="RTO.Min (default 1s)")
    p.add_argument("--rto-max", type=_duration, default=60.0, metavar="TIME",
                   help="RTO.Max (default 60s)")
    p.add_argument("--rto-initial", type=_duration, default=3.0, metavar="TIME",
                   help="RTO.Initial (default 3s; it never meets a sample after the first)")
    p.add_argument("--alignment", choices=("after", "before"), default="after",
                   help="compare RTT_i with the RTO after the estimator took sample i (default, "
                        "as 004 §5 reports its state) or with the RTO armed before it")
    p.add_argument("--seconds", type=_seconds, metavar="N",
                   help="samples t = 0 … N−1 s (default: 221 for a preset, as 004 §6.2; a "
                        "file's span otherwise, its last value holding beyond it)")
    p.add_argument("--noise", type=_sigma, default=0.0, metavar="SIGMA",
                   help="preset only: multiply each sample by LogNormal(0, SIGMA)")
    p.add_argument("--seed", type=_seed, metavar="N",
                   help="preset only: the noise's seed (default 1)")
    p.add_argument("--simulate", metavar="SCENARIO",
                   help="paper 004 §6.3: also run SCENARIO (an SCTP flow 0) once per pair with "
                        "flow[0].sctp.rto_alpha/rto_beta set, rank the pairs by data delivered "
                        "and report Spearman's rank correlation with the analytical ranking")
    p.add_argument("--no-plots", action="store_true", help="write tables only")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    p.add_argument("--force", action="store_true",
                   help="write even if OUTDIR holds another kind of result")
    p.set_defaults(func=cmd_rto_study)
