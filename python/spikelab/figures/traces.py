"""The figure of a trace import: the measured samples against the profile fitted to them
(``spikelab trace import``): delay samples as dots and the profile's delay as a line, with the
loss probability below; for a rate trace, the rate per bin and the profile's steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..store.results import atomic_write

MAX_DOTS = 20_000


def _thin(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most MAX_DOTS samples, evenly picked (a pixel column cannot show more)."""
    if t.size <= MAX_DOTS:
        return t, v
    idx = np.linspace(0, t.size - 1, MAX_DOTS).astype(np.int64)
    return t[idx], v[idx]


def draw_import(samples: Any, profile: Any, path: str | Path, title: str = "") -> Path:
    """Draws ``samples`` (a :class:`spikelab.traces.Samples`) against ``profile`` into
    ``path`` (PNG, written whole)."""
    path = Path(path)
    if profile.is_rate:
        fig = Figure(figsize=(9, 3.6), layout="constrained")
        ax = fig.add_subplot()
        ax.plot(samples.t_ms / 1000, samples.rate_bps / 1e6, ".", ms=2, color="0.6",
                label="measured (per bin)")
        ax.step(profile.t_ms / 1000, profile.rate_bps / 1e6, where="post", color="C0", lw=1.2,
                label="profile")
        ax.set_ylabel("rate (Mbit/s)")
        ax.set_xlabel("time (s)")
        ax.legend(loc="upper right", fontsize=8)
        axes = [ax]
    else:
        fig = Figure(figsize=(9, 5), layout="constrained")
        ax, ax2 = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
        if samples.delay_ms is not None:
            t, v = _thin(samples.t_ms, samples.delay_ms)
            ax.plot(t / 1000, v, ".", ms=2, color="0.6", label="measured (one-way)")
        ax.plot(profile.t_ms / 1000, profile.delay_ms, color="C0", lw=1.2, label="profile")
        ax.set_ylabel("one-way delay (ms)")
        ax.legend(loc="upper right", fontsize=8)
        ax2.plot(profile.t_ms / 1000, profile.loss, color="C3", lw=1)
        if samples.loss is not None and samples.loss.size:
            lost = samples.loss > 0
            ax2.plot(samples.loss_t_ms[lost] / 1000, np.full(lost.sum(), 1.0), "x", ms=3,
                     color="C3", alpha=0.5, label="lost")
        ax2.set_ylim(-0.05, 1.05)
        ax2.set_ylabel("loss")
        ax2.set_xlabel("time (s)")
        axes = [ax, ax2]
    for a in axes:
        a.grid(alpha=0.3)
    if title:
        axes[0].set_title(title, fontsize=10)
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    return path
