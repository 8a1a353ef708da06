"""What the commands share: a scenario file named in its errors, the per-flow summary of a
run, and where the results went."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from .._core import ScenarioError, SimulationError


def checked(convert, ok, expected: str):
    """An argparse ``type``: ``convert(text)``, accepted when ``ok(value)``; a value that does
    not convert or is refused is the one-line error "expected EXPECTED, got 'TEXT'"."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value
    return parse


def _check_file(path: str) -> None:
    """A regular file at ``path``, or a one-line error saying what is there instead."""
    if os.path.isfile(path):
        return
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, not a scenario file")
    if os.path.exists(path):
        raise OSError(f"{path}: not a regular file")
    raise FileNotFoundError(f"{path}: no such file")


@contextlib.contextmanager
def _scenario_file(path: str) -> Iterator[str]:
    """Check that ``path`` is a file and name it in scenario errors raised inside, and in
    errors of a run the core stopped (a trace bound, time that stopped advancing)."""
    _check_file(path)
    try:
        yield path
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at "
                            f"offset {exc.start}); a scenario is a UTF-8 TOML file") from None
    except SimulationError as exc:
        if str(exc).startswith("internal error"):
            raise
        raise SimulationError(f"{path}: {exc}") from None


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def summary_table(runs) -> str:
    """Per flow: goodput, bytes, RTOs (spurious), fast retx (spurious), retx segments."""
    cols = runs.to_pydict()
    rows = [
        [
            str(cols["flow"][i]),
            f"{cols['goodput_bps'][i] / 1e6:.3f}",
            f"{cols['bytes_delivered'][i]:,}",
            f"{cols['rto_count'][i]} ({cols['rto_spurious_true'][i]})",
            f"{cols['fast_retx_count'][i]} ({cols['fast_retx_spurious_true'][i]})",
            str(cols["retx_segments"][i]),
        ]
        for i in range(runs.num_rows)
    ]
    header = ["flow", "goodput Mbps", "bytes", "RTOs (spurious)",
              "fast retx (spurious)", "retx segs"]
    from ..analysis.stats import align

    return align(header, rows)


def print_outputs(out: str, manifest: dict, detail: str = "") -> None:
    """``results: OUT`` (with ``detail``) and, when figures were drawn, where they are."""
    figures = [f for f in manifest["files"] if f["path"].startswith("figures/")]
    print(f"results: {out}{detail}")
    if figures:
        print(f"figures: {Path(out) / 'figures'} ({len(figures)} files)")
