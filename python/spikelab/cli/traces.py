"""The ``trace`` command: ``spikelab trace import KIND FILE -o PROFILE.csv`` turns a measured
trace (a ping log, a Mahimahi trace, a pcap of one TCP connection or SCTP association, a CSV)
into the profile file a delay or rate stage reads (docs/traces.md); :func:`register` adds it
to ``spikelab``."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from .common import checked


#: The scenario's limit on a trace's times and delays (ms): 1e9 s, about 31 years.
_MAX_MS = 1e12
_ms = checked(float, lambda v: 0 <= v <= _MAX_MS, "milliseconds >= 0 (at most 1e12)")
_positive_ms = checked(float, lambda v: 0 < v <= _MAX_MS, "milliseconds > 0 (at most 1e12)")


_share = checked(float, lambda v: 0 < v <= 1, "a number in (0, 1]")


_RATE_UNITS = {"bps": 1.0, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "": 1.0}


def _rate(text: str) -> float:
    """``10Mbps``, ``64kbps``, ``1e7`` -> bit/s, > 0."""
    import re

    match = re.fullmatch(r"\s*([0-9.eE+]+)\s*(bps|kbps|Mbps|Gbps|)\s*", text)
    value = None
    if match:
        try:
            value = float(match.group(1)) * _RATE_UNITS[match.group(2)]
        except ValueError:
            value = None
    if value is None or not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a rate > 0 such as 10Mbps, got {text!r}")
    return value


_packets = checked(int, lambda v: v >= 1, "a whole number of packets >= 1")


def _reason(exc: OSError) -> str:
    """Why writing failed, without the file name (the temporary's, if any)."""
    return exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))


def cmd_trace_import(args: argparse.Namespace) -> int:
    from .. import traces

    for option, path in (("-o", args.out), ("--figure", args.figure)):
        if path is not None and Path(path).is_dir():  # said before the trace is read
            raise IsADirectoryError(f"{option} {path}: is a directory; give a file name")
    # Every option the kind does not use is refused (import_trace): unset ones are None.
    columns = {"time_col": args.time_col, "time_unit": args.time_unit,
               "delay_col": args.delay_col, "loss_col": args.loss_col, "rate_col": args.rate_col}
    samples, profile = traces.import_trace(
        args.kind, args.file, share=args.share, interval_ms=args.interval,
        smooth_ms=0.0 if args.smooth is None else args.smooth, stat=args.stat, bin_ms=args.bin,
        ping_interval_s=None if args.ping_interval is None else args.ping_interval / 1000,
        iface=args.interface, rate_bps=args.rate, queue=args.queue, loss=not args.no_loss,
        csv_columns=columns)
    for warning in samples.warnings:
        print(f"spikelab: warning: {warning}", file=sys.stderr)
    try:
        out = traces.write_profile(profile, args.out)
    except OSError as exc:  # named as given, never by the temporary written first
        raise OSError(f"-o {args.out}: cannot write: {_reason(exc)}") from None
    figure = None
    if not args.no_figure:
        from ..figures.traces import draw_import  # matplotlib: only when a figure is drawn

        png = args.figure or out.with_suffix(".png")
        try:
            figure = draw_import(samples, profile, png,
                                 title=f"{Path(args.file).name} ({args.kind}) -> {out.name}")
        except OSError as exc:  # the profile stands: said, so it is not looked for again
            raise OSError(f"{'--figure' if args.figure else 'figure'} {png}: cannot write: "
                          f"{_reason(exc)} (the {'rate trace' if profile.is_rate else 'delay profile'} "
                          f"{out} is written)") from None
    if not args.quiet:
        notes = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in (samples.notes or {}).items())
        what = "rate trace" if profile.is_rate else "delay profile"
        print(f"{args.file}: {notes}")
        print(f"{what}: {out} ({profile.t_ms.size} rows)")
        if figure is not None:
            print(f"figure: {figure}")
    return 0


def register(sub, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``trace import`` to the ``spikelab`` subparsers ``sub`` (sub-actions parsed by
    ``parser_class``)."""
    p = sub.add_parser("trace", help="paths from measurements: import a trace as a profile")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION",
                               parser_class=parser_class)
    a = actions.add_parser(
        "import", help="a ping log, Mahimahi trace, pcap or CSV -> a delay profile "
                       "(time_ms,delay_ms,loss) or a rate trace (time_ms,rate_bps)")
    a.add_argument("kind", choices=("ping", "mahimahi", "pcap", "csv"), metavar="KIND",
                   help="ping | mahimahi | pcap | csv")
    a.add_argument("file", metavar="FILE")
    a.add_argument("-o", "--out", required=True, metavar="PROFILE.csv")
    a.add_argument("--share", type=_share, metavar="S",
                   help="one-way delay = RTT x S (default 0.5 for ping and pcap; 1 for csv, "
                        "whose delay column is taken as one-way)")
    a.add_argument("--interval", type=_ms, metavar="MS",
                   help="resample: one row per MS (default 1000 for ping, 100 for pcap; "
                        "0 keeps one row per sample)")
    a.add_argument("--smooth", type=_ms, metavar="MS",
                   help="centred moving median over MS before resampling (default 0: none)")
    a.add_argument("--stat", choices=("mean", "median", "min", "max"),
                   help="a resampled row's value from its bin's samples (default min for "
                        "pcap, mean otherwise)")
    a.add_argument("--no-loss", action="store_true",
                   help="write a zero loss column (e.g. when a rate stage re-creates the "
                        "measured path's queue drops)")
    a.add_argument("--bin", type=_positive_ms, metavar="MS",
                   help="mahimahi: rate bin (default 100)")
    a.add_argument("--ping-interval", type=_positive_ms, metavar="MS",
                   help="ping: the probe interval (default: from ping -D's timestamps, else "
                        "1000)")
    a.add_argument("--interface", metavar="NAME|INDEX",
                   help="pcap: only the frames of this pcapng interface (e.g. the emulator's "
                        "sender-side veth)")
    a.add_argument("--rate", type=_rate, metavar="RATE",
                   help="pcap: the bottleneck rate the scenario's rate stage re-creates (e.g. "
                        "10Mbps); each RTT sample loses the time its segment queued behind the "
                        "sender's own data at that rate")
    a.add_argument("--queue", type=_packets, metavar="PACKETS",
                   help="pcap, with --rate: that rate stage's queue; a lost segment that found "
                        "it full is the stage's drop, left out of the loss column")
    a.add_argument("--time-col", metavar="NAME", help="csv: time column (default time_ms)")
    a.add_argument("--time-unit", choices=("ms", "s", "us"),
                   help="csv: the time column's unit (default ms)")
    a.add_argument("--delay-col", metavar="NAME", help="csv: delay column (ms)")
    a.add_argument("--loss-col", metavar="NAME", help="csv: loss probability column")
    a.add_argument("--rate-col", metavar="NAME", help="csv: rate column (bit/s): a rate trace")
    figure = a.add_mutually_exclusive_group()
    figure.add_argument("--figure", metavar="PNG",
                        help="the comparison figure (default: the profile's name with .png)")
    figure.add_argument("--no-figure", action="store_true")
    a.add_argument("-q", "--quiet", action="store_true")
    a.set_defaults(func=cmd_trace_import)
