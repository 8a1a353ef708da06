"""Progress on stderr for long runs and sweeps, drawn with rich.

rich does the terminal work (width, redraws, a final line on a log file); the numbers are ours: a
run's fraction is the simulated (or emulated) time done, a sweep's is its runs, and the ETA is a
plain linear extrapolation. Redraws are manual (no refresh thread): a run's Ctrl-C handling
waits on the core, and a second thread drawing to the terminal would only get in its way.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

SHOW_AFTER_S = 2.0
# At most this many redraws a second: a run that streams its traces updates the bar after every
# chunk (hundreds a second), which a terminal need not see.
REDRAWS_PER_S = 10


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _eta(elapsed_s: float, fraction: float) -> str:
    return _clock(elapsed_s * (1.0 - fraction) / fraction) if fraction > 0 else "?"


def _is_tty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


class _Bar:
    """One rich task with a text column we format: drawn on demand, never from a thread."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.progress: Progress | None = None
        self.task = None

    def draw(self, completed: float, total: float, text: str) -> None:
        if self.progress is None:
            console = Console(file=self.stream, highlight=False)
            self.progress = Progress(BarColumn(bar_width=40), TextColumn("{task.fields[text]}"),
                                     console=console, auto_refresh=False,
                                     redirect_stdout=False, redirect_stderr=False)
            self.progress.start()
            self.task = self.progress.add_task("", total=total, text=text)
        self.progress.update(self.task, completed=completed, text=text)
        self.progress.refresh()

    @property
    def shown(self) -> bool:
        return self.progress is not None

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.stream.flush()


class ProgressBar:
    """Shows progress once a run has lasted SHOW_AFTER_S on a TTY, or at once when forced.

    ``enabled``: None = automatic (stderr must be a TTY), True = always, False = never. On a
    stream that is not a terminal (forced into a log file) only the final state is written.
    """

    def __init__(self, sim_total_s: float, enabled: bool | None, stream: TextIO | None = None):
        self.sim_total_s = sim_total_s
        self.start = time.monotonic()
        self.bar = _Bar(stream if stream is not None else sys.stderr)
        if enabled is None:
            self.delay = SHOW_AFTER_S if _is_tty(self.bar.stream) else None
        else:
            self.delay = 0.0 if enabled else None
        self.drawn_at = float("-inf")

    @property
    def shown(self) -> bool:
        return self.bar.shown

    def update(self, fraction: float, *, final: bool = False) -> None:
        elapsed = time.monotonic() - self.start
        if self.delay is None or elapsed < self.delay:
            return
        if not final and elapsed - self.drawn_at < 1.0 / REDRAWS_PER_S:
            return
        self.drawn_at = elapsed
        fraction = min(max(fraction, 0.0), 1.0)
        text = (f"{100.0 * fraction:5.1f}%  sim {fraction * self.sim_total_s:.1f}/"
                f"{self.sim_total_s:.1f} s  elapsed {_clock(elapsed)}  "
                f"ETA {_eta(elapsed, fraction)}")
        self.bar.draw(fraction, 1.0, text)

    def close(self, fraction: float | None = None) -> None:
        """Draw the final state (if the bar is due) and end the line."""
        if fraction is not None:
            self.update(fraction, final=True)
        self.bar.close()


class SweepProgress:
    """Runs done / total, failures and ETA of a sweep, on stderr.

    ``enabled``: None = when stderr is a TTY, True = always, False = never. The ETA is
    extrapolated from the runs finished in this invocation (resumed runs do not count).
    """

    def __init__(self, total: int, already: int, enabled: bool | None,
                 stream: TextIO | None = None):
        self.bar = _Bar(stream if stream is not None else sys.stderr)
        self.total, self.done, self.failed, self.already = total, already, 0, already
        self.enabled = _is_tty(self.bar.stream) if enabled is None else enabled
        self.start = time.monotonic()
        self._draw()

    @property
    def shown(self) -> bool:
        return self.bar.shown

    def update(self, ok: bool) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        fresh = self.done - self.already
        eta = _clock(elapsed * (self.total - self.done) / fresh) if fresh else "?"
        text = (f"{self.done}/{self.total} runs  {self.failed} failed  "
                f"elapsed {_clock(elapsed)}  ETA {eta}")
        self.bar.draw(self.done, max(self.total, 1), text)

    def close(self) -> None:
        self.bar.close()
