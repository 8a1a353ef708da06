"""The figures of an rto-study directory (paper 004 §6.2), drawn from its tables alone:

- ``rto_delay_sum``: the delay sum Σ(RTO_i − RTT_i) over RTO_i > RTT_i per (alpha, beta), as
  004 Fig. 4;
- ``rto_spurious``: the spurious seconds #(RTO_i < RTT_i) per pair, as 004 Fig. 5;
- ``rto_distance``: the Euclidean distance of the two grades from the origin per pair, each
  cell labelled with its rank (004 Table 1); ``rto_grades``: the grades themselves, one point
  per pair (004 Fig. 6);
- ``rto_series``: the RTT trace with the RTO of the default pair (1/8, 1/4) and of the
  best-ranked pair, spurious seconds (RTO < RTT) marked;
- with a simulation (004 §6.3): ``rto_sim_bytes``, the data delivered per pair (MB, the most
  boxed), and ``rto_sim_ranks``, analytical rank against simulated rank with Spearman's rho.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import matplotlib.patches
import numpy as np
import pyarrow as pa
from matplotlib.figure import Figure

from ..analysis import rto_study
from ..store.results import FIGURES, atomic_write

STEMS = ("rto_delay_sum", "rto_spurious", "rto_distance", "rto_grades", "rto_series")
SIM_STEMS = ("rto_sim_bytes", "rto_sim_ranks")  # with a simulation (004 §6.3)


def _save(fig: Figure, path: Path) -> Path:
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    return path


def _grid(table: pa.Table, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alphas, betas, values[alpha, beta]) of a study table (NaN where a pair is absent)."""
    a = np.asarray(table["alpha"].to_pylist())
    b = np.asarray(table["beta"].to_pylist())
    alphas, betas = np.unique(a), np.unique(b)
    z = np.full((alphas.size, betas.size), np.nan)
    z[np.searchsorted(alphas, a), np.searchsorted(betas, b)] = table[column].to_numpy()
    return alphas, betas, z


def _label(v: float) -> str:
    return f"{v:g}" if len(f"{v:g}") <= 5 else f"{v:.3g}"


def _heatmap(table: pa.Table, column: str, title: str, unit: str, path: Path,
             cell_text=None, cmap: str = "viridis", best=None, scale: float = 1.0) -> Path:
    alphas, betas, z = _grid(table, column)
    z = z * scale
    best = rto_study.best_pair(table) if best is None else best
    fig = Figure(figsize=(min(1.6 + 0.62 * betas.size, 14.0), min(1.4 + 0.5 * alphas.size, 12.0)),
                 layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(z, origin="lower", cmap=cmap, aspect="auto")
    fig.colorbar(im, ax=ax, label=unit, shrink=0.9)
    every_b, every_a = max(1, betas.size // 20), max(1, alphas.size // 20)  # at most ~20 ticks
    ax.set_xticks(range(0, betas.size, every_b), [_label(v) for v in betas[::every_b]])
    ax.set_yticks(range(0, alphas.size, every_a), [_label(v) for v in alphas[::every_a]])
    ax.set_xlabel("β (RTO.Beta)")
    ax.set_ylabel("α (RTO.Alpha)")
    ax.set_title(title, fontsize=10)
    if alphas.size * betas.size <= 400:
        for i in range(alphas.size):
            for j in range(betas.size):
                if np.isnan(z[i, j]):
                    continue
                text = cell_text(i, j) if cell_text else f"{z[i, j]:.0f}"
                r, g, b_, _ = im.cmap(im.norm(z[i, j]))
                dark = 0.299 * r + 0.587 * g + 0.114 * b_ < 0.5
                ax.text(j, i, text, ha="center", va="center", fontsize=6.5,
                        color="white" if dark else "black")
    i, j = int(np.searchsorted(alphas, best[0])), int(np.searchsorted(betas, best[1]))
    ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                              edgecolor="tab:red", linewidth=2))
    return _save(fig, path)


def _grades(table: pa.Table, path: Path) -> Path:
    gs = table["grade_spurious"].to_numpy()
    gd = table["grade_delay"].to_numpy()
    rank = table["rank"].to_numpy()
    a, b = table["alpha"].to_pylist(), table["beta"].to_pylist()
    fig = Figure(figsize=(6.4, 5.6), layout="constrained")
    ax = fig.add_subplot()
    ax.scatter(gs, gd, s=14, c="tab:blue")
    for k in np.argsort(rank)[:3]:
        ax.annotate(f"#{rank[k]} α={_label(a[k])} β={_label(b[k])}", (gs[k], gd[k]),
                    xytext=(6, 6), textcoords="offset points", fontsize=8, color="tab:red")
        ax.scatter([gs[k]], [gd[k]], s=30, c="tab:red")
    top = max(int(gs.max()), int(gd.max())) + 2
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_aspect("equal")
    ax.set_xlabel("grade on spurious seconds (1 = fewest)")
    ax.set_ylabel("grade on delay sum (1 = smallest)")
    ax.set_title("Grades per (α, β) pair; rank = distance from the origin (004 Fig. 6)",
                 fontsize=10)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _series(series: pa.Table, path: Path) -> Path:
    meta = series.schema.metadata or {}
    default = json.loads(meta.get(b"default_pair", b"[0.125, 0.25]"))
    best = json.loads(meta.get(b"best_pair", b"null")) or default
    t = series["t_s"].to_numpy()
    rtt = series["rtt_ms"].to_numpy() / 1e3
    fig = Figure(figsize=(9, 4.6), layout="constrained")
    ax = fig.add_subplot()
    ax.step(t, rtt, where="post", color="black", linewidth=1.2, label="RTT")
    for column, pair, colour, name in (("rto_default_ms", default, "tab:blue", "default"),
                                       ("rto_best_ms", best, "tab:red", "best-ranked")):
        if name == "best-ranked" and best == default:
            break
        rto = series[column].to_numpy() / 1e3
        ax.step(t, rto, where="post", color=colour, linewidth=1.1,
                label=f"RTO, {name} α={_label(pair[0])} β={_label(pair[1])}")
        low = rto < rtt
        if low.any():
            ax.plot(t[low], rto[low], linestyle="none", marker="x", color=colour, markersize=5,
                    label=f"  RTO < RTT ({int(low.sum())} s)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("seconds")
    ax.set_xlim(t.min(), t.max() if t.size > 1 else t.min() + 1)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("RTT trace and the RTO paired with each sample", fontsize=10)
    return _save(fig, path)


def _ranks(table: pa.Table, path: Path) -> Path:
    """Analytical rank against simulated rank, one point per pair (004 Table 2, Fig. 8)."""
    analytic = table["rank"].to_numpy()
    simulated = table["sim_rank"].to_numpy()
    a, b = table["alpha"].to_pylist(), table["beta"].to_pylist()
    rho = rto_study.rank_correlation(table)
    fig = Figure(figsize=(6.4, 5.8), layout="constrained")
    ax = fig.add_subplot()
    ax.scatter(analytic, simulated, s=14, c="tab:blue")
    for k in np.argsort(simulated)[:3]:
        ax.annotate(f"sim #{simulated[k]} α={_label(a[k])} β={_label(b[k])}",
                    (analytic[k], simulated[k]), xytext=(-8, 4 + 10 * simulated[k]),
                    textcoords="offset points", fontsize=8, color="tab:red", ha="right")
        ax.scatter([analytic[k]], [simulated[k]], s=30, c="tab:red")
    n = table.num_rows
    ax.plot([1, n], [1, n], color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlim(0, n + 1)
    ax.set_ylim(0, n + 1)
    ax.set_xlabel("analytical rank (004 §6.2, 1 = best trade-off)")
    ax.set_ylabel("simulated rank (004 §6.3, 1 = most data)")
    ax.set_title(f"Analytical vs simulated ranking; Spearman's ρ = {rho:+.3f} (ties averaged)",
                 fontsize=10)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def draw(outdir: str | os.PathLike[str]) -> list[Path]:
    """Draw the figures of an rto-study directory into ``OUTDIR/figures``; return their paths
    (the manifest is the caller's: :func:`spikelab.analysis.rto_study.write_manifest`)."""
    table, series, _ = rto_study.load(outdir)
    figdir = Path(outdir) / FIGURES
    figdir.mkdir(parents=True, exist_ok=True)
    rank = dict(zip(zip(table["alpha"].to_pylist(), table["beta"].to_pylist(), strict=True),
                    table["rank"].to_pylist(), strict=True))
    alphas, betas, _ = _grid(table, "rank")

    def rank_text(i: int, j: int) -> str:
        return f"#{rank[(alphas[i], betas[j])]}"

    n = len(series)
    return [
        _heatmap(table, "delay_sum_s", f"Delay sum Σ(RTO − RTT) where RTO > RTT over {n} s "
                 "(004 Fig. 4)", "seconds", figdir / "rto_delay_sum.png"),
        _heatmap(table, "spurious_s", f"Spurious seconds #(RTO < RTT) of {n} (004 Fig. 5)",
                 "seconds", figdir / "rto_spurious.png"),
        _heatmap(table, "distance", "Euclidean distance of the grades from the origin, "
                 "labelled by rank (004 Table 1)", "distance", figdir / "rto_distance.png",
                 cell_text=rank_text, cmap="viridis_r"),
        _grades(table, figdir / "rto_grades.png"),
        _series(series, figdir / "rto_series.png"),
    ] + (_simulated(table, figdir) if "sim_rank" in table.column_names else [])


def _simulated(table: pa.Table, figdir: Path) -> list[Path]:
    return [
        _heatmap(table, "sim_bytes_delivered", "Simulated data delivered by flow 0 (004 §6.3); "
                 "the most boxed", "MB", figdir / "rto_sim_bytes.png",
                 best=rto_study.best_simulated_pair(table), scale=1e-6),
        _ranks(table, figdir / "rto_sim_ranks.png"),
    ]
