"""A one-line progress bar on stderr for long runs; no third-party dependency."""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

SHOW_AFTER_S = 2.0
# At most this many redraws a second: a run that streams its traces updates the bar after every
# chunk (hundreds a second), which a terminal need not see.
REDRAWS_PER_S = 10


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def line(fraction: float, sim_total_s: float, elapsed_s: float, width: int) -> str:
    """Render one bar line: ``[####....]  45.0%  sim 9.0/20.0 s  elapsed 0:03  ETA 0:04``."""
    fraction = min(max(fraction, 0.0), 1.0)
    eta = _clock(elapsed_s * (1.0 - fraction) / fraction) if fraction > 0 else "?"
    text = (
        f" {100.0 * fraction:5.1f}%  sim {fraction * sim_total_s:.1f}/{sim_total_s:.1f} s"
        f"  elapsed {_clock(elapsed_s)}  ETA {eta}"
    )
    bar_width = max(10, min(40, width - len(text) - 3))
    filled = int(round(bar_width * fraction))
    return f"[{'#' * filled}{'.' * (bar_width - filled)}]{text}"


class ProgressBar:
    """Shows progress once a run has lasted SHOW_AFTER_S on a TTY, or at once when forced.

    ``enabled``: None = automatic (stderr must be a TTY), True = always, False = never.
    """

    def __init__(self, sim_total_s: float, enabled: bool | None, stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.sim_total_s = sim_total_s
        self.start = time.monotonic()
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            self.delay = SHOW_AFTER_S if isatty is not None and isatty() else None
        else:
            self.delay = 0.0 if enabled else None
        self.shown = False
        self.drawn_at = float("-inf")

    def update(self, fraction: float, *, final: bool = False) -> None:
        elapsed = time.monotonic() - self.start
        if self.delay is None or elapsed < self.delay:
            return
        if not final and elapsed - self.drawn_at < 1.0 / REDRAWS_PER_S:
            return
        self.drawn_at = elapsed
        width = shutil.get_terminal_size((80, 24)).columns
        self.stream.write("\r" + line(fraction, self.sim_total_s, elapsed, width - 1))
        self.stream.flush()
        self.shown = True

    def close(self, fraction: float | None = None) -> None:
        """Draw the final state (if the bar is due) and end the line."""
        if fraction is not None:
            self.update(fraction, final=True)
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def sweep_line(done: int, total: int, failed: int, elapsed_s: float, eta_s: float | None,
               width: int) -> str:
    """``[#####.....]  45/200 runs  2 failed  elapsed 0:12  ETA 0:15``."""
    fraction = done / total if total else 1.0
    eta = _clock(eta_s) if eta_s is not None else "?"
    text = (f" {done}/{total} runs  {failed} failed  elapsed {_clock(elapsed_s)}  ETA {eta}")
    bar_width = max(10, min(40, width - len(text) - 3))
    filled = int(round(bar_width * fraction))
    return f"[{'#' * filled}{'.' * (bar_width - filled)}]{text}"


class SweepProgress:
    """Runs done / total, failures and ETA of a sweep, on stderr.

    ``enabled``: None = when stderr is a TTY, True = always, False = never. The ETA is
    extrapolated from the runs finished in this invocation (resumed runs do not count).
    """

    def __init__(self, total: int, already: int, enabled: bool | None,
                 stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.done, self.failed, self.already = total, already, 0, already
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = (isatty is not None and isatty()) if enabled is None else enabled
        self.start = time.monotonic()
        self.shown = False
        self._draw()

    def update(self, ok: bool) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        fresh = self.done - self.already
        eta = elapsed * (self.total - self.done) / fresh if fresh else None
        width = shutil.get_terminal_size((80, 24)).columns
        self.stream.write("\r" + sweep_line(self.done, self.total, self.failed, elapsed, eta,
                                            width - 1))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
