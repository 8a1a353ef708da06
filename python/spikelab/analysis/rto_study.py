"""Paper 004 §6.2: the analytic study of SCTP's RTO gains alpha and beta over an RTT trace.

For each (alpha, beta) pair of a grid, the RFC 4960 estimator runs over one RTT sample a second
(first sample SRTT = R, RTTVAR = R/2; then RTTVAR = (1 − β)·RTTVAR + β·|SRTT − R|,
SRTT = (1 − α)·SRTT + α·R; RTO = SRTT + 4·RTTVAR clamped to [RTO.Min, RTO.Max]), and each pair
gets a delay sum Σ(RTO_i − RTT_i) over RTO_i > RTT_i (seconds), a count of spurious seconds
#(RTO_i < RTT_i), a grade on each (1 = best, ties share the lower grade), the Euclidean distance
of the two grades from the origin and a rank by that distance. The arithmetic is the Rust
``spikelab_sctp::rto_study`` (through ``spikelab._core.rto_study``); this module reads the trace,
builds the grid, and writes the results directory:

    OUTDIR/rto_study.parquet, rto_study.csv   one row per pair (grid order, alpha-major)
    OUTDIR/rto_series.parquet                 the trace and the RTO series of the default pair
                                              (1/8, 1/4) and of the best-ranked pair
    OUTDIR/figures/*.png                      drawn from those tables (spikelab.figures.rto_study)
    OUTDIR/manifest.json                      kind "rto-study": inputs, parameters, versions

With a scenario to simulate (paper 004 §6.3, :func:`simulate`), every pair is also run through
the simulator (``flow[0].sctp.rto_alpha`` / ``rto_beta`` set to the pair) and the study table
gains the columns of :data:`SIM_COLUMNS`: the data flow 0 delivered, its failovers and time to
the first failover, and a rank by data delivered (1 = most); the manifest gets Spearman's rank
correlation between the analytical and the simulated ranking (:func:`spearman`).

A trace is the preset ``wlan-walkaway`` (docs/models.md) or a CSV file in one of two formats:
``time_s,rtt_ms`` or the delay-stage trace ``time_ms,delay_ms,loss`` (its delay column is taken
as the RTT, as the preset's delay stage does; the loss column is ignored). A file is resampled
to one sample a second: the value at t = 0, 1, 2, … s, interpolated linearly between the rows
around t (before the first row the first value holds, after the last row the last value; at a
step, two rows at one time, the later row applies: the delay stage's rules).
"""

from __future__ import annotations

import bisect
import contextlib
import datetime
import hashlib
import json
import math
import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from .. import _core
from ..scenario import validate
from ..store import results

KIND = "rto-study"
TABLE = "rto_study.parquet"
CSV = "rto_study.csv"
SERIES = "rto_series.parquet"
PRESETS = ("wlan-walkaway",)
PRESET_SECONDS = 221  # 004 §6.2: i = 0 … 220
DEFAULT_PAIR = (0.125, 0.25)  # RFC 4960 §15: RTO.Alpha 1/8, RTO.Beta 1/4
HEADERS = {"time_s,rtt_ms": ("s", 2), "time_ms,delay_ms,loss": ("ms", 3)}
MAX_TRACE_BYTES = 256 << 20  # as a delay stage's trace file
COLUMNS = ("alpha", "beta", "delay_sum_s", "spurious_s", "grade_delay", "grade_spurious",
           "distance", "rank")
SIM_COLUMNS = ("sim_bytes_delivered", "sim_failovers", "sim_time_to_failover_s", "sim_rank")
# Each column's unit and what it holds (Parquet field metadata of rto_study.parquet and
# rto_series.parquet; docs/rto-study.md describes the study).
COLUMN_META: dict[str, tuple[str, str]] = {
    "alpha": ("1", "RTO.Alpha, the SRTT gain (RFC 4960 §6.3.1)"),
    "beta": ("1", "RTO.Beta, the RTTVAR gain (RFC 4960 §6.3.1)"),
    "delay_sum_s": ("s", "sum of RTO - RTT over the samples where the RTO exceeds the RTT "
                         "(paper 004 Fig. 4)"),
    "spurious_s": ("s", "samples (one a second) where the RTO is below the RTT (004 Fig. 5)"),
    "grade_delay": ("", "rank of the pair by delay_sum_s, 1 = smallest (004 §6.2)"),
    "grade_spurious": ("", "rank of the pair by spurious_s, 1 = fewest (004 §6.2)"),
    "distance": ("", "Euclidean distance of (grade_delay, grade_spurious) from the origin"),
    "rank": ("", "the pair's place by distance, 1 = best (004 Table 1)"),
    "sim_bytes_delivered": ("bytes", "data the simulated association delivered (--simulate)"),
    "sim_failovers": ("failovers", "failovers of the simulated association (--simulate)"),
    "sim_time_to_failover_s": ("s", "time to the first failover; null without one"),
    "sim_rank": ("", "the pair's place by sim_bytes_delivered, 1 = most (004 Table 2)"),
    "t_s": ("s", "time of the trace sample"),
    "rtt_ms": ("ms", "the trace's RTT at t_s"),
    "rto_default_ms": ("ms", "the RTO after this sample with RFC 4960's alpha 1/8, beta 1/4"),
    "rto_best_ms": ("ms", "the RTO after this sample with the best-ranked pair"),
}


class TraceError(ValueError):
    """An RTT trace that cannot be studied; one line naming the file and the problem."""


class SimulateError(ValueError):
    """A scenario that ``--simulate`` cannot use; one line naming the file and the problem."""


@dataclass(frozen=True)
class Trace:
    """One RTT sample a second (ms), t = 0, 1, … s, and where it came from."""

    rtt_ms: list[float]
    source: str  # the preset's name or the file's path
    format: str  # "preset", "time_s,rtt_ms" or "time_ms,delay_ms,loss"
    rows: int | None = None  # rows read from the file
    noise: float = 0.0
    seed: int | None = None
    sha256: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "format": self.format, "samples": len(self.rtt_ms),
                "rows": self.rows, "noise": self.noise, "seed": self.seed,
                "sha256": self.sha256}


@dataclass(frozen=True)
class Params:
    """The estimator's bounds (seconds), the grid, and which RTO is compared with RTT_i."""

    alphas: tuple[float, ...] = tuple(i / 10 for i in range(11))
    betas: tuple[float, ...] = tuple(i / 10 for i in range(11))
    rto_initial: float = 3.0
    rto_min: float = 1.0
    rto_max: float = 60.0
    alignment: str = "after"  # the RTO after sample i ("before": the one armed before it)

    def check(self) -> None:
        for name, values in (("alphas", self.alphas), ("betas", self.betas)):
            if not values:
                raise ValueError(f"{name}: no values")
            bad = [v for v in values if not (math.isfinite(v) and 0.0 <= v <= 1.0)]
            if bad:
                raise ValueError(f"{name}: must be in [0, 1], got {bad[0]:g}")
        for name in ("rto_initial", "rto_min", "rto_max"):
            v = getattr(self, name)
            # RTO.Min may be 0 (no floor, as 004's delay sums suggest); the others may not.
            if not (math.isfinite(v) and (v > 0 or name == "rto_min" and v == 0)):
                low = ">= 0" if name == "rto_min" else "> 0"
                raise ValueError(f"{name.replace('_', '-')}: must be {low} s, got {v:g} s")
        if self.rto_max < self.rto_min:
            raise ValueError(f"rto-max: must be >= rto-min ({self.rto_min:g} s), "
                             f"got {self.rto_max:g} s")
        if not self.rto_min <= self.rto_initial <= self.rto_max:
            raise ValueError(f"rto-initial: must be from rto-min ({self.rto_min:g} s) to "
                             f"rto-max ({self.rto_max:g} s), got {self.rto_initial:g} s")
        if self.alignment not in ("after", "before"):
            raise ValueError(f"alignment: must be 'after' or 'before', got {self.alignment!r}")

    def pairs(self) -> list[tuple[float, float]]:
        """The grid, alpha-major (as ``spikelab_sctp::rto_study::grid_121``)."""
        return [(a, b) for a in self.alphas for b in self.betas]

    def estimator(self) -> dict[str, Any]:
        return {"rto_initial": self.rto_initial, "rto_min": self.rto_min,
                "rto_max": self.rto_max, "alignment": self.alignment}

    def describe(self) -> dict[str, Any]:
        return {"alphas": list(self.alphas), "betas": list(self.betas), **self.estimator(),
                "grade_base": 1, "default_pair": list(DEFAULT_PAIR)}


def parse_grid(text: str, name: str | None = None) -> tuple[float, ...]:
    """``START:STOP:STEP`` (both ends included, e.g. ``0:1:0.1``) or a comma list
    (``0.1,0.125,0.2``); values rounded to 12 decimals so that 0.1·3 is 0.3. A ValueError's
    message starts with ``name: `` when given."""
    prefix = f"{name}: " if name else ""
    text = text.strip()
    usage = (f"{prefix}expected START:STOP:STEP (e.g. 0:1:0.1) or a comma list of numbers, "
             f"got {text!r}")
    try:
        parts = [float(p) for p in text.split(":" if ":" in text else ",")]
    except ValueError:
        raise ValueError(usage) from None
    if not all(map(math.isfinite, parts)):
        raise ValueError(usage)
    if ":" in text:
        if len(parts) != 3:
            raise ValueError(usage)
        start, stop, step = parts
        if not (step > 0 and stop >= start):
            raise ValueError(f"{prefix}expected START:STOP:STEP with STEP > 0 and "
                             f"STOP >= START, got {text!r}")
        n = math.floor((stop - start) / step + 1e-9)
        if n >= 10_000:
            raise ValueError(f"{prefix}{n + 1} values; at most 10000")
        parts = [round(start + k * step, 12) for k in range(n + 1)]
    bad = [v for v in parts if not 0.0 <= v <= 1.0]
    if bad:
        raise ValueError(f"{prefix}must be in [0, 1], got {bad[0]:g}")
    return tuple(dict.fromkeys(parts))  # in order, each once


# ------------------------------------------------------------------------------------ traces


def resample(times_s: Sequence[float], values: Sequence[float], seconds: int) -> list[float]:
    """The value at t = 0, 1, …, seconds − 1 s of the piecewise-linear curve through the rows
    (non-decreasing times): the first value before the first row, the last after the last
    row; at a step (two rows at one time) the later row applies."""
    out = []
    last = len(times_s) - 1
    for t in range(seconds):
        i = bisect.bisect_right(times_s, t) - 1  # the last row at or before t
        if i < 0:
            out.append(float(values[0]))
        elif i >= last:
            out.append(float(values[last]))
        else:
            t0, t1 = times_s[i], times_s[i + 1]  # t0 <= t < t1
            out.append(float(values[i] + (values[i + 1] - values[i]) * (t - t0) / (t1 - t0)))
    return out


def read_csv(path: str | os.PathLike[str]) -> tuple[list[float], list[float], str, str]:
    """(times in s, RTT in ms, format, sha256) of a CSV trace; :class:`TraceError` names the
    file, the line and the problem. Blank lines and lines starting with ``#`` are skipped."""
    shown = str(path)
    formats = " or ".join(HEADERS)
    if not os.path.isfile(path):
        what = "is not a regular file" if os.path.exists(path) else "no such file"
        raise TraceError(f"{shown}: {what} (TRACE is a CSV file ({formats}) or a preset: "
                         f"{', '.join(PRESETS)})")
    if os.path.getsize(path) > MAX_TRACE_BYTES:
        raise TraceError(f"{shown}: larger than {MAX_TRACE_BYTES >> 20} MiB")
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TraceError(f"{shown}: not UTF-8 text") from None
    lines = [(no, ln.strip()) for no, ln in enumerate(text.splitlines(), 1)
             if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise TraceError(f"{shown}: empty; the first line must be the header {formats}")
    header = lines[0][1].replace(" ", "")
    if header not in HEADERS:
        raise TraceError(f"{shown} line {lines[0][0]}: the first line must be the header "
                         f"{formats}, got {lines[0][1][:60]!r}")
    unit, arity = HEADERS[header]
    names = header.split(",")
    times, rtts = [], []
    for no, line in lines[1:]:
        cells = line.split(",")
        try:
            row = [float(c) for c in cells]
        except ValueError:
            row = []
        if len(row) != arity or not all(map(math.isfinite, row)):
            raise TraceError(f"{shown} line {no}: expected {arity} numbers ({header}), "
                             f"got {line[:60]!r}")
        t, r = row[0], row[1]
        if t < 0:
            raise TraceError(f"{shown} line {no}: {names[0]} must be >= 0, got {t:g}")
        if times and t * (1e-3 if unit == "ms" else 1.0) < times[-1]:
            raise TraceError(f"{shown} line {no}: {names[0]} must not decrease, got {t:g} "
                             f"after {times[-1] * (1e3 if unit == 'ms' else 1.0):g}")
        if r < 0:
            raise TraceError(f"{shown} line {no}: {names[1]} must be >= 0, got {r:g}")
        times.append(t * 1e-3 if unit == "ms" else t)
        rtts.append(r)
    if not times:
        raise TraceError(f"{shown}: no samples after the header {header}")
    return times, rtts, header, hashlib.sha256(raw).hexdigest()


def load_trace(trace: str, *, seconds: int | None = None, noise: float = 0.0,
               seed: int | None = None) -> Trace:
    """The RTT trace named ``trace``: a preset (``seconds`` samples, 221 by default; ``noise``
    σ multiplies each sample by LogNormal(0, σ) from stream ``seed``, 1 by default) or a CSV
    file resampled to one sample a second (t = 0 … the last whole second of the file, or
    ``seconds`` samples, the last value holding)."""
    if seconds is not None and not 1 <= seconds <= 10_000_000:
        raise ValueError(f"seconds: must be between 1 and 10000000, got {seconds}")
    if not (math.isfinite(noise) and 0.0 <= noise <= 10.0):
        raise ValueError(f"noise: must be between 0 and 10, got {noise:g}")
    if trace in PRESETS:
        seed = 1 if seed is None else seed
        if not 0 <= seed < 2**64:
            raise ValueError(f"seed: must be between 0 and {2**64 - 1}, got {seed}")
        n = PRESET_SECONDS if seconds is None else seconds
        return Trace(rtt_ms=_core.walkaway_rtt_ms(n, noise, seed), source=trace,
                     format="preset", noise=noise, seed=seed if noise > 0 else None)
    if noise > 0 or seed is not None:
        raise ValueError(f"--noise and --seed apply to the presets ({', '.join(PRESETS)}), "
                         f"not to a trace file")
    times, rtts, header, digest = read_csv(trace)
    n = seconds if seconds is not None else math.floor(times[-1]) + 1
    return Trace(rtt_ms=resample(times, rtts, n), source=str(trace), format=header,
                 rows=len(times), sha256=digest)


# ------------------------------------------------------------------------------------- study


def study(trace: Trace, params: Params = Params()) -> pa.Table:
    """One row per (alpha, beta) pair of the grid, alpha-major: the columns of
    :data:`COLUMNS`."""
    params.check()
    cols = _core.rto_study(trace.rtt_ms, params.pairs(), **params.estimator(), grade_base=1)
    types = {"spurious_s": pa.int64(), "grade_delay": pa.int64(),
             "grade_spurious": pa.int64(), "rank": pa.int64()}
    return pa.table({c: pa.array(cols[c], types.get(c, pa.float64())) for c in COLUMNS})


def best_pair(table: pa.Table) -> tuple[float, float]:
    k = table["rank"].to_pylist().index(1)
    return table["alpha"][k].as_py(), table["beta"][k].as_py()


def series(trace: Trace, table: pa.Table, params: Params = Params()) -> pa.Table:
    """t_s, rtt_ms and the RTO (ms) paired with each sample for the default pair (1/8, 1/4)
    and the best-ranked pair."""
    best = best_pair(table)
    rto = {pair: _core.rto_series(trace.rtt_ms, *pair, **params.estimator())
           for pair in (DEFAULT_PAIR, best)}
    return pa.table({
        "t_s": pa.array(range(len(trace.rtt_ms)), pa.int64()),
        "rtt_ms": pa.array(trace.rtt_ms, pa.float64()),
        "rto_default_ms": pa.array(rto[DEFAULT_PAIR], pa.float64()),
        "rto_best_ms": pa.array(rto[best], pa.float64()),
    }).replace_schema_metadata({
        "default_pair": json.dumps(list(DEFAULT_PAIR)), "best_pair": json.dumps(list(best)),
    })


# ------------------------------------------------------------------------------ results dir


@dataclass
class StudyResult:
    table: pa.Table
    series: pa.Table
    trace: Trace
    params: Params
    dir: Path | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    simulation: dict[str, Any] | None = None  # the scenario, its runs and the correlation


def claim(out: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Check that ``out`` may take an rto-study (empty, absent, or holding one), create it and
    remove stale temporaries; another kind of result is refused unless ``force``."""
    return results.claim(out, KIND, force=force)


def _describe(outdir: Path, names: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for name in names:
        data = (outdir / name).read_bytes()
        out.append({"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return out


def write_manifest(result: StudyResult, figures: Sequence[str] = ()) -> dict[str, Any]:
    """manifest.json (the last file written) listing the tables and ``figures``."""
    assert result.dir is not None
    best = best_pair(result.table)
    manifest = {
        "format": results.FORMAT,
        "kind": KIND,
        "status": results.COMPLETE,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "versions": {"spikelab": _core.__build__, "python": platform.python_version(),
                     "pyarrow": pa.__version__},
        "platform": platform.platform(),
        "paper": "004 §6.2 (Fallon et al.)",
        "trace": result.trace.describe(),
        "parameters": result.params.describe(),
        "pairs": result.table.num_rows,
        "best_pair": list(best),
        "files": _describe(result.dir, [TABLE, CSV, SERIES, *figures]),
    }
    if result.simulation is not None:
        manifest["simulation"] = result.simulation
    results.write_json(manifest, result.dir / results.MANIFEST)
    result.manifest = manifest
    return manifest


def run(trace: str | Trace, out: str | os.PathLike[str] | None = None, *,
        params: Params = Params(), seconds: int | None = None, noise: float = 0.0,
        seed: int | None = None, force: bool = False,
        simulate_scenario: str | os.PathLike[str] | None = None,
        runner: Callable[..., Any] | None = None) -> StudyResult:
    """Read ``trace`` (a preset or a CSV path, or a :class:`Trace`), study ``params``' grid and,
    with ``out``, write the tables and a manifest (no figures: :func:`spikelab.figures.
    rto_study.draw` adds them and rewrites the manifest). With ``simulate_scenario`` every pair
    is also simulated through ``runner`` (``spikelab.run``; :func:`simulate`) and the table
    gains :data:`SIM_COLUMNS`."""
    params.check()
    if simulate_scenario is not None:
        if runner is None:
            raise ValueError("simulate_scenario needs runner=spikelab.run")
        check_scenario(simulate_scenario)  # before any work or output
    if not isinstance(trace, Trace):
        trace = load_trace(trace, seconds=seconds, noise=noise, seed=seed)
    table = study(trace, params)
    sim_info = None
    if simulate_scenario is not None:
        table, sim_info = add_simulation(table, simulate_scenario, runner=runner)
    result = StudyResult(table=table, series=series(trace, table, params), trace=trace,
                         params=params, simulation=sim_info)
    if out is None:
        return result
    outdir = claim(out, force=force)
    previous = None
    with contextlib.suppress(OSError, ValueError):
        previous = results.read_manifest(outdir)
    with contextlib.suppress(FileNotFoundError):
        (outdir / results.MANIFEST).unlink()
    if previous and previous.get("kind") == KIND:  # an earlier study's figures are stale
        results._remove_figures(outdir, previous)
    import pyarrow.csv as pacsv

    from ..store import schema

    results.write_parquet(schema.describe(table, COLUMN_META, "rto_study table"),
                          outdir / TABLE)
    results.atomic_write(outdir / CSV, lambda tmp: pacsv.write_csv(table, tmp))
    results.write_parquet(schema.describe(result.series, COLUMN_META, "rto_series table"),
                          outdir / SERIES)
    result.dir = outdir
    write_manifest(result)
    return result


def load(outdir: str | os.PathLike[str]) -> tuple[pa.Table, pa.Table, dict[str, Any]]:
    """(study table, series table, manifest) of an rto-study directory."""
    import pyarrow.parquet as pq

    outdir = Path(outdir)
    manifest = results.read_manifest(outdir)
    if manifest.get("kind") != KIND:
        raise results.OutdirError(f"{outdir}: not an rto-study (kind {manifest.get('kind')!r})")
    return pq.read_table(outdir / TABLE), pq.read_table(outdir / SERIES), manifest



# ------------------------------------------------------------------ simulation (004 §6.3)


def check_scenario(scenario: str | os.PathLike[str]) -> dict[str, Any]:
    """The resolved scenario ``scenario`` (a TOML file) if its flow 0 is SCTP; otherwise a
    :class:`SimulateError` naming the file and the problem."""
    shown = str(scenario)
    if not os.path.isfile(scenario):
        what = "is not a regular file" if os.path.exists(scenario) else "no such file"
        raise SimulateError(f"{shown}: {what} (--simulate takes a scenario TOML file whose "
                            f"flow 0 is SCTP)")
    try:
        resolved = validate(str(scenario))  # spikelab.scenario.validate
    except ValueError as exc:  # ScenarioError: the field and the problem
        msg = str(exc).splitlines()[0] if str(exc).strip() else "not a valid scenario"
        raise SimulateError(msg if msg.startswith(shown) else f"{shown}: {msg}") from None
    flows = resolved.get("flow") or []
    protocol = flows[0].get("protocol") if flows else None
    if protocol != "sctp":
        what = "has no flow" if not flows else f"is {protocol or 'tcp'}"
        raise SimulateError(f"{shown}: flow[0] {what}; --simulate needs an SCTP flow 0 "
                            f"(protocol = \"sctp\") whose rto_alpha and rto_beta it sets")
    return resolved


def simulate(scenario: str | os.PathLike[str], pairs: Sequence[tuple[float, float]], *,
             runner: Callable[..., Any], seed: int | None = None) -> pa.Table:
    """Run ``scenario`` once per (alpha, beta) pair with ``flow[0].sctp.rto_alpha`` and
    ``rto_beta`` set to it through ``runner`` (:func:`spikelab.run`; passed in because the
    analysis layer does not run simulations itself), summary trace, the scenario's seed unless
    ``seed``: one row per
    pair, in order, with flow 0's ``bytes_delivered``, ``failovers`` and ``time_to_failover_s``
    (null without failover) and its ``sim_rank`` by data delivered (1 = most; equal amounts keep
    the grid order, as the analytical rank does)."""
    check_scenario(scenario)
    got: dict[str, list[Any]] = {"alpha": [], "beta": [], "sim_bytes_delivered": [],
                                 "sim_failovers": [], "sim_time_to_failover_s": []}
    for alpha, beta in pairs:
        res = runner(str(scenario), seed=seed, trace="summary", plots=False, progress=False,
                      overrides=[f"flow[0].sctp.rto_alpha={alpha!r}",
                                 f"flow[0].sctp.rto_beta={beta!r}"])
        row = res.summary[res.summary["flow"] == 0].iloc[0]
        got["alpha"].append(float(alpha))
        got["beta"].append(float(beta))
        got["sim_bytes_delivered"].append(int(row["bytes_delivered"]))
        got["sim_failovers"].append(int(row["failovers"]))
        t = float(row["time_to_failover_s"])  # pandas shows a null as NaN
        got["sim_time_to_failover_s"].append(None if math.isnan(t) else t)
    order = sorted(range(len(pairs)), key=lambda k: -got["sim_bytes_delivered"][k])
    rank = [0] * len(pairs)
    for r, k in enumerate(order, 1):
        rank[k] = r
    return pa.table({
        "alpha": pa.array(got["alpha"], pa.float64()),
        "beta": pa.array(got["beta"], pa.float64()),
        "sim_bytes_delivered": pa.array(got["sim_bytes_delivered"], pa.int64()),
        "sim_failovers": pa.array(got["sim_failovers"], pa.int64()),
        "sim_time_to_failover_s": pa.array(got["sim_time_to_failover_s"], pa.float64()),
        "sim_rank": pa.array(rank, pa.int64()),
    })


def average_ranks(values: Sequence[float], *, descending: bool = False) -> list[float]:
    """Ranks 1 … n of ``values`` (1 = smallest, or largest when ``descending``); tied values
    share the mean of the ranks they span (1, 2.5, 2.5, 4)."""
    import numpy as np

    v = np.asarray(values, dtype=float)
    if descending:
        v = -v
    order = np.argsort(v, kind="stable")
    ranks = np.empty(v.size)
    sorted_v = v[order]
    i = 0
    while i < v.size:
        j = i
        while j + 1 < v.size and sorted_v[j + 1] == sorted_v[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks.tolist()


def spearman(x_ranks: Sequence[float], y_ranks: Sequence[float]) -> float:
    """Spearman's rho: Pearson's correlation of two rank vectors (NaN if either is constant)."""
    import numpy as np

    x = np.asarray(x_ranks, dtype=float) - np.mean(x_ranks)
    y = np.asarray(y_ranks, dtype=float) - np.mean(y_ranks)
    denom = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / denom if denom > 0 else math.nan


def rank_correlation(table: pa.Table) -> float:
    """Spearman's rho between the analytical ranking (by distance, smallest first) and the
    simulated one (by data delivered, most first), ties averaged in both."""
    return spearman(average_ranks(table["distance"].to_pylist()),
                    average_ranks(table["sim_bytes_delivered"].to_pylist(), descending=True))


def add_simulation(table: pa.Table, scenario: str | os.PathLike[str], *,
                   runner: Callable[..., Any], seed: int | None = None) -> tuple[pa.Table, dict[str, Any]]:
    """``table`` with :data:`SIM_COLUMNS` from simulating ``scenario`` for each of its pairs,
    and what the manifest records about it (scenario, its hash, rho, best and default)."""
    pairs = list(zip(table["alpha"].to_pylist(), table["beta"].to_pylist(), strict=True))
    sim = simulate(scenario, pairs, runner=runner, seed=seed)
    for name in SIM_COLUMNS:
        table = table.append_column(name, sim[name])
    rho = rank_correlation(table)
    default = simulate(scenario, [DEFAULT_PAIR], runner=runner, seed=seed).to_pylist()[0]
    k = table["sim_rank"].to_pylist().index(1)
    info = {
        "paper": "004 §6.3 (Fallon et al.)",
        "scenario": str(scenario),
        "scenario_sha256": hashlib.sha256(Path(scenario).read_bytes()).hexdigest(),
        "seed": seed,
        "runs": len(pairs) + 1,
        "spearman": None if math.isnan(rho) else rho,
        "best_pair": [table["alpha"][k].as_py(), table["beta"][k].as_py()],
        "best_bytes_delivered": table["sim_bytes_delivered"][k].as_py(),
        "default_pair": list(DEFAULT_PAIR),
        "default_bytes_delivered": default["sim_bytes_delivered"],
        "default_time_to_failover_s": default["sim_time_to_failover_s"],
    }
    return table, info


def best_simulated_pair(table: pa.Table) -> tuple[float, float]:
    k = table["sim_rank"].to_pylist().index(1)
    return table["alpha"][k].as_py(), table["beta"][k].as_py()
