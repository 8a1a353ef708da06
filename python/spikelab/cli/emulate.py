"""The ``emulate`` and ``compare`` commands; :func:`register` adds them to ``spikelab``."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import _scenario_file, print_outputs, summary_table


def host_queue_line(q: dict) -> str:
    """One line on a sender's own queue that ran as a qdisc on a host's interface."""
    host = "sender" if q["side"] == "s" else "receiver"
    cap = (f"{q['limit_bytes']:,} B" if q.get("limit_bytes") is not None
           else f"{q['limit_packets']:,} packets")
    counts = (f": {q['packets']:,} packets sent, {q['drops']:,} refused (local drops: CWR, "
              "no loss)" if "packets" in q else "")
    return (f"path {q['path']}: its first stage ran as a qdisc on the {host}'s interface "
            f"({q['rate_bps'] / 1e3:g} kbit/s, {cap}){counts}")


def _nonnegative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    # NaN and infinity (and what no nanosecond count holds) were "cannot convert float NaN to
    # integer" when the emulator was configured.
    if not 0 <= value <= 1e9:
        raise argparse.ArgumentTypeError(f"expected a number >= 0 (at most 1e9), got {text!r}")
    return value


def _snaplen(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 262144:
        raise argparse.ArgumentTypeError(f"expected 0 (whole frames) or a number of bytes up "
                                         f"to 262144, got {text!r}")
    return value


def _sample_ms(text: str) -> float:
    value = _nonnegative(text)
    if value < 1e-3:  # the period is kept in whole nanoseconds; below a microsecond is 0 or noise
        raise argparse.ArgumentTypeError(f"expected a period of at least 0.001 ms, got {text!r}")
    return value


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def timing_line(timing: dict) -> str:
    """One line on the emulator's departure timing error."""
    if not timing or not timing.get("departures"):
        return "emulator timing: no departures"
    return (f"emulator timing error (actual - intended departure, {timing['departures']:,} "
            f"frames): median {_ms(timing['p50_ns'])}, p99 {_ms(timing['p99_ns'])}, "
            f"max {_ms(timing['max_ns'])}; {100 * timing['within_1ms']:.2f}% within 1 ms")


def kernel_line(emulation: dict) -> str:
    c = emulation.get("counters", {}).get("sender", {})
    if isinstance(c, list):  # SCTP: usrsctp's counters, one stack per flow
        return "\n".join(f"usrsctp (flow {i} sender): T3-rtx expiries {f['timodata']}, "
                         f"chunks retransmitted {f['sendretransdata']} (fast "
                         f"{f['sendfastretrans']}), HEARTBEATs {f['sendheartbeat']}"
                         for i, f in enumerate(c)) or "usrsctp: no counters"
    parts = [f"{name.removeprefix('TcpExt')} {c[name]}"
             for name in ("TcpExtTCPTimeouts", "TcpExtTCPSpuriousRTOs", "TcpExtTCPLossUndo",
                          "TcpExtTCPFullUndo", "TcpExtTCPPartialUndo", "TcpExtTCPDSACKUndo")
             if name in c]
    return "kernel (sender): " + ", ".join(parts) if parts else "kernel: no counters"


def cmd_emulate(args: argparse.Namespace) -> int:
    from ..emulate import cleanup, emulate, kernel

    kernel.require_privileges()
    if args.cleanup:
        removed = cleanup()
        n = len(removed["namespaces"]) + len(removed["links"])
        if not args.quiet:
            if n:
                print(f"removed {', '.join(removed['namespaces'] + removed['links'])}")
            else:
                print("nothing to clean up")
            if removed["in_use"]:
                print(f"left alone (runs in progress): {', '.join(removed['in_use'])}")
        return 0
    if args.scenario is None:
        raise ValueError("a scenario is required (or --cleanup)")
    with _scenario_file(args.scenario) as scenario:
        result = emulate(scenario, out=args.out, seed=args.seed, overrides=args.set,
                         sysctls=args.sysctl, realtime=not args.no_realtime,
                         spin_us=args.spin_us, snaplen=args.snaplen, sample_ms=args.sample_ms,
                         tcp_probe=not args.no_tcp_probe,
                         plots=not args.no_plots, progress=False if args.quiet else None,
                         force=args.force)
    if args.quiet:
        return 0
    em = result.manifest["emulation"]
    stack = ("usrsctp (the FreeBSD SCTP stack)" if em["kernel"].get("protocol") == "sctp"
             else "the Linux TCP stack")
    print(f"{args.scenario}: emulated {result.duration_s:g} s against {stack} "
          f"(seed {result.seed})")
    print(summary_table(result.runs))
    print(timing_line(em["timing"]))
    print(kernel_line(em))
    for q in em.get("host_queues", []):
        print(host_queue_line(q))
    unmapped = em["kernel"]["unmapped"]
    if unmapped:
        real = "usrsctp" if em["kernel"].get("protocol") == "sctp" else "kernel"
        print(f"{len(unmapped)} scenario setting(s) have no exact {real} equivalent "
              "(manifest.json: emulation.kernel.unmapped)")
    if args.out is not None:
        capture = Path(args.out) / "emulation" / "capture.pcapng"
        print_outputs(args.out, result.manifest, f" (capture: {capture})")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..figures.compare import compare

    text, files = compare(args.dir_a, args.dir_b, out=args.out, zoom=args.zoom)
    print(text)
    if files:
        print(f"figures: {files[0].parent} ({len(files)} files)")
    return 0


def register(sub, override_type, zoom_type) -> None:
    """Add ``emulate`` and ``compare`` to the ``spikelab`` subparsers ``sub``."""
    p = sub.add_parser("emulate", help="run a scenario's paths in real time against the "
                       "Linux TCP stack, or usrsctp for SCTP flows (needs root)")
    p.add_argument("scenario", metavar="SCENARIO.toml", nargs="?")
    p.add_argument("-o", "--out", metavar="OUTDIR", help="results directory to write")
    p.add_argument("--seed", type=int, help="master seed (default: the scenario's sim.seed)")
    p.add_argument("--set", action="append", default=[], type=override_type,
                   metavar="KEY=VALUE", help="override a scenario field (repeatable)")
    p.add_argument("--sysctl", action="append", default=[], metavar="net.KEY=VALUE",
                   help="extra sysctl in both hosts' namespaces, e.g. "
                        "net.ipv4.tcp_frto=0 (repeatable)")
    p.add_argument("--no-realtime", action="store_true",
                   help="do not run the emulator thread under SCHED_FIFO")
    p.add_argument("--spin-us", type=_nonnegative, default=50.0, metavar="US",
                   help="busy-wait this long before each departure (default 50)")
    p.add_argument("--snaplen", type=_snaplen, default=160, metavar="BYTES",
                   help="bytes of each frame kept in the capture, 0 = all (default 160; "
                        "SCTP frames are kept whole)")
    p.add_argument("--sample-ms", type=_sample_ms, default=1.0, metavar="MS",
                   help="TCP_INFO (SCTP: SCTP_STATUS) sampling period (default 1)")
    p.add_argument("--no-tcp-probe", action="store_true",
                   help="do not use the tcp_probe tracepoint even if tracefs is mounted")
    p.add_argument("--no-plots", action="store_true", help="write tables only")
    p.add_argument("--force", action="store_true",
                   help="write even if OUTDIR holds another kind of result (a sweep, a study)")
    p.add_argument("--cleanup", action="store_true",
                   help="remove namespaces and veths that crashed runs left, then exit")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    p.set_defaults(func=cmd_emulate, exit_at_once=True)  # see spikelab.cli.main

    p = sub.add_parser("compare", help="two runs side by side: metrics and an overlay of "
                       "cwnd and seq/ack (e.g. simulated vs emulated)")
    p.add_argument("dir_a", metavar="DIR_SIM")
    p.add_argument("dir_b", metavar="DIR_EMU")
    p.add_argument("-o", "--out", metavar="DIR", help="where the figures go "
                   "(default: DIR_EMU/compare; a zoom in its zoom-T0-T1/ subfolder)")
    p.add_argument("--zoom", type=zoom_type, metavar="T0:T1", help="time window, seconds")
    p.set_defaults(func=cmd_compare)
