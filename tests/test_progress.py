"""The progress display: when it shows, and what its one line says."""

import io

from spikelab import _progress
from spikelab._progress import ProgressBar, SweepProgress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_forced_run_bar_on_a_log_file_writes_one_final_line():
    out = io.StringIO()
    bar = ProgressBar(20.0, True, out)
    for fraction in (0.1, 0.5, 0.9):
        bar.update(fraction, final=True)
    bar.close(1.0)
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert "100.0%  sim 20.0/20.0 s" in text and "ETA 0:00" in text


def test_automatic_bar_stays_silent_off_a_terminal():
    out = io.StringIO()
    bar = ProgressBar(20.0, None, out)
    bar.update(0.5, final=True)
    bar.close(1.0)
    assert out.getvalue() == ""


def test_automatic_bar_on_a_terminal_waits_before_showing(monkeypatch):
    out = Tty()
    clock = [100.0]
    monkeypatch.setattr(_progress.time, "monotonic", lambda: clock[0])
    bar = ProgressBar(10.0, None, out)
    clock[0] += _progress.SHOW_AFTER_S - 0.5
    bar.update(0.2, final=True)
    assert out.getvalue() == "" and not bar.shown
    clock[0] += 1.0
    bar.update(0.3, final=True)
    assert bar.shown and " 30.0%  sim 3.0/10.0 s" in out.getvalue()
    # 2.5 s for 30 %: 5.8 s to go, rounded to whole seconds.
    assert "elapsed 0:02  ETA 0:06" in out.getvalue()
    bar.close()


def test_sweep_counts_failures_and_extrapolates_from_fresh_runs_only(monkeypatch):
    out = io.StringIO()
    clock = [0.0]
    monkeypatch.setattr(_progress.time, "monotonic", lambda: clock[0])
    sweep = SweepProgress(10, 4, True, out)  # 4 runs done by an earlier invocation
    for ok in (True, False):
        clock[0] += 3.0
        sweep.update(ok)
    sweep.close()
    # 2 fresh runs in 6 s: 4 left take 12 s.
    assert out.getvalue().rstrip().endswith("6/10 runs  1 failed  elapsed 0:06  ETA 0:12")


def test_disabled_sweep_writes_nothing():
    out = io.StringIO()
    sweep = SweepProgress(3, 0, False, out)
    sweep.update(True)
    sweep.close()
    assert out.getvalue() == ""
