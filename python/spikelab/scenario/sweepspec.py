"""The ``[sweep]`` table of a scenario: parameters, grid or zip, replications, seeds.

    [sweep]
    mode = "grid"                 # "grid" (cartesian product, default) or "zip"
    replications = 10             # runs per grid point (default 1)
    trace = "summary"             # what each run records: summary | timeseries | packets

    [sweep.params]
    "flow.tcp.variant" = ["reno", "newreno", "sack"]
    "path.fwd.delay.profile" = { name = "path", labels = ["spike", "spike+loss"],
                                 values = [[...], [...]] }

Parameter keys are scenario paths, exactly as ``spikelab run --set KEY=VALUE`` takes them.
A parameter is an array of values, or a table with ``values`` and optional ``labels`` (one
per value, shown instead of the value in tables and figures) and ``name`` (its column name;
default: the key's last segment).

Seeds: replication ``r`` (0-based) of every grid point runs with seed ``base + r``, where
``base`` is ``sim.seed`` (or ``--seed``). Grid points share seeds (common random numbers), so
differences between points are not differences of random draws. Any run can be re-run alone
with ``spikelab run FILE --set KEY=VALUE ... --seed SEED`` (the runs table has every value).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _core
from . import TRACE_LEVELS as TRACES
from . import check_seed, overrides_list, read_scenario

MODES = ("grid", "zip")
# Columns every sweep's runs table has before the parameters; parameter names must differ.
BASE_COLUMNS = ("run_id", "point", "replication", "seed", "status", "error")
_SWEEP_KEYS = {"mode", "replications", "trace", "params"}
# The most runs one sweep lists (its task list is built up front and kept in memory).
MAX_RUNS = 1_000_000
_PARAM_KEYS = {"values", "labels", "name"}
BIG_VALUE = 256  # characters; longer parameter values are stored by digest in manifests


def _err(field_: str, message: str) -> _core.ScenarioError:
    return _core.ScenarioError(f"{field_}: {message}")


def toml_literal(value: Any) -> str:
    """``value`` (from tomllib) as a TOML inline value, for a ``KEY=VALUE`` override."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k))} = {toml_literal(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


BIG_ARRAY = 4096  # characters; longer arrays of a resolved scenario are given by digest


def digest_big(value: Any, where: str, limit: int = BIG_ARRAY) -> Any:
    """``value`` (a resolved scenario) with every array of values (not of tables) longer than
    ``limit`` characters of JSON (a long delay profile, a trace) replaced by its digest and
    where the whole is kept."""
    if isinstance(value, dict):
        return {k: digest_big(v, where, limit) for k, v in value.items()}
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        return [digest_big(v, where, limit) for v in value]  # e.g. a path's stages
    if isinstance(value, list):
        text = _compact(value)
        if len(text) > limit:
            return {"sha256": hashlib.sha256(text.encode()).hexdigest(), "chars": len(text),
                    "items": len(value), "in": where}
        return value
    return value


@dataclass(frozen=True)
class Param:
    key: str
    """Scenario path, as for ``--set``."""
    name: str
    """Column name in the runs table."""
    values: tuple[Any, ...]
    labels: tuple[Any, ...]
    """What the runs table shows for each value (the value itself when scalar)."""
    kind: str
    """Arrow type of the column: ``bool``, ``int64``, ``float64`` or ``string``."""


def _column_kind(shown: list[Any]) -> str:
    if all(isinstance(v, bool) for v in shown):
        return "bool"
    if any(isinstance(v, bool) for v in shown):
        return "string"
    if all(isinstance(v, int) for v in shown):
        return "int64"
    if all(isinstance(v, int | float) for v in shown):
        return "float64"
    return "string"


def _flatten(table: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Parameter entries; unquoted dotted keys arrive as nested tables and are joined again."""
    out = []
    for key, value in table.items():
        full = f"{prefix}.{key}" if prefix else key
        # A parameter's table has values; one with labels, or a name that is a string (a
        # swept key's values are an array), but no values, is a parameter that lacks them.
        nested = isinstance(value, dict) and not (
            "values" in value or "labels" in value or isinstance(value.get("name"), str))
        if nested:
            out.extend(_flatten(value, full))
        else:
            out.append((full, value))
    return out


def _param(key: str, spec: Any, mode: str = "grid") -> Param:
    at = f"sweep.params.{json.dumps(key)}"
    if key == "sweep" or key.startswith(("sweep.", "sweep[")):
        # Each run's scenario has its [sweep] removed: the value would change nothing.
        raise _err(at, "a sweep's own settings (replications, mode, params) cannot be swept; "
                       "set them in [sweep]")
    if key == "sim.trace":
        # Every run of a sweep keeps the same tables: sweep.trace says which.
        raise _err(at, "the trace level cannot be swept (every run keeps the tables "
                       "sweep.trace names); set trace in [sweep]")
    name, labels = None, None
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - _PARAM_KEYS)
        if unknown:
            raise _err(f"{at}.{unknown[0]}", "unknown key (expected values, labels, name)")
        values, labels, name = spec.get("values"), spec.get("labels"), spec.get("name")
    else:
        values = spec
    if not isinstance(values, list) or not values:
        raise _err(at, "must be a non-empty array of values (or a table with `values`)")
    if labels is not None:
        if not isinstance(labels, list) or len(labels) != len(values):
            raise _err(f"{at}.labels", f"must be an array of {len(values)} labels, one per value")
        if not all(isinstance(x, str | int | float | bool) for x in labels):
            raise _err(f"{at}.labels", "labels must be strings or numbers")
        shown = list(labels)
    else:
        shown = [v if isinstance(v, str | int | float | bool) else _compact(v) for v in values]
    if mode == "grid" and len({_compact(s) for s in shown}) != len(shown):
        raise _err(at, "values (or labels) must be distinct in a grid (zip allows repeats)")
    if name is None:
        name = key.rsplit(".", 1)[-1].split("[", 1)[0]
    if not isinstance(name, str) or not name.strip():
        raise _err(f"{at}.name", "must be a non-empty string")
    kind = _column_kind(shown)
    if kind == "string":
        shown = [s if isinstance(s, str) else _compact(s) for s in shown]
    elif kind == "float64":
        shown = [float(s) for s in shown]
    return Param(key=key, name=name, values=tuple(values), labels=tuple(shown), kind=kind)


@dataclass(frozen=True, slots=True)
class RunTask:
    """One run of a sweep: a grid point, a replication, its seed and its overrides (a sweep
    lists up to a million of them: slots keep each small; its point's overrides and
    parameters are shared with the point's other replications)."""

    run_id: str
    point: int
    replication: int
    seed: int
    overrides: tuple[str, ...]
    params: dict[str, Any] = field(hash=False)

    def command(self, scenario_path: str = "SCENARIO.toml") -> list[str]:
        """The ``spikelab run`` command line that repeats this run alone."""
        return run_command(self.overrides, self.seed, scenario_path)


def run_command(overrides: tuple[str, ...] | list[str], seed: int,
                scenario_path: str = "SCENARIO.toml") -> list[str]:
    """``spikelab run SCENARIO --set ... --seed SEED``: one run of a sweep, alone."""
    cmd = ["spikelab", "run", scenario_path]
    for o in overrides:
        cmd += ["--set", o]
    return [*cmd, "--seed", str(seed)]


@dataclass(frozen=True)
class SweepSpec:
    params: tuple[Param, ...]
    mode: str = "grid"
    replications: int = 1
    trace: str = "summary"

    @classmethod
    def parse(cls, table: Any, at: str = "sweep") -> SweepSpec:
        if table is None:
            return cls(params=())
        if not isinstance(table, dict):
            raise _err(at, "must be a table")
        unknown = sorted(set(table) - _SWEEP_KEYS)
        if unknown:
            raise _err(f"{at}.{unknown[0]}",
                       "unknown key (expected mode, replications, trace, params)")
        mode = table.get("mode", "grid")
        if mode not in MODES:
            raise _err(f"{at}.mode", f"must be one of {', '.join(MODES)}, got {mode!r}")
        reps = table.get("replications", 1)
        if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
            raise _err(f"{at}.replications", f"must be an integer >= 1, got {reps!r}")
        trace = table.get("trace", "summary")
        if trace not in TRACES:
            raise _err(f"{at}.trace", f"must be one of {', '.join(TRACES)}, got {trace!r}")
        raw = table.get("params", {})
        if not isinstance(raw, dict):
            raise _err(f"{at}.params", "must be a table of KEY = [values]")
        params = tuple(_param(k, v, mode) for k, v in _flatten(raw))
        names = [p.name for p in params]
        for p in params:
            if names.count(p.name) > 1 or p.name in BASE_COLUMNS:
                raise _err(f"{at}.params.{json.dumps(p.key)}.name",
                           f"column name {p.name!r} is taken; give this parameter a `name`")
        if mode == "zip" and len({len(p.values) for p in params}) > 1:
            sizes = ", ".join(f"{p.key}: {len(p.values)}" for p in params)
            raise _err(f"{at}.params", f"zip needs equally long value lists ({sizes})")
        spec = cls(params=params, mode=mode, replications=reps, trace=trace)
        points = spec.point_count()
        if points * reps > MAX_RUNS:
            raise _err(f"{at}.replications" if reps > 1 else f"{at}.params",
                       f"{points:,} points x {reps:,} replications = {points * reps:,} runs; "
                       f"a sweep has at most {MAX_RUNS:,} (split it into several)")
        return spec

    def point_count(self) -> int:
        """How many grid points, without listing them."""
        if not self.params:
            return 1
        if self.mode == "zip":
            return len(self.params[0].values)
        return math.prod(len(p.values) for p in self.params)

    def points(self) -> list[tuple[int, ...]]:
        """Index tuples into each parameter's values, in run order."""
        if not self.params:
            return [()]
        if self.mode == "zip":
            return [(i,) * len(self.params) for i in range(len(self.params[0].values))]
        return list(itertools.product(*(range(len(p.values)) for p in self.params)))

    def tasks(self, base_seed: int, extra_overrides: tuple[str, ...] = ()) -> list[RunTask]:
        points = self.points()
        pw = max(3, len(str(len(points) - 1)))
        rw = max(2, len(str(self.replications - 1)))
        out = []
        for k, idx in enumerate(points):
            overrides = tuple(extra_overrides) + tuple(
                f"{p.key}={toml_literal(p.values[i])}" for p, i in zip(self.params, idx,
                                                                       strict=True))
            shown = {p.name: p.labels[i] for p, i in zip(self.params, idx, strict=True)}
            for r in range(self.replications):
                out.append(RunTask(run_id=f"p{k:0{pw}d}-r{r:0{rw}d}", point=k, replication=r,
                                   seed=base_seed + r, overrides=overrides, params=shown))
        return out

    def describe(self, compact: bool = False) -> dict[str, Any]:
        """The sweep as data. ``compact``: a value longer than ``BIG_VALUE`` characters (a
        profile of many rows) is given by its digest, so manifests stay small."""
        def value(v: Any) -> Any:
            text = _compact(v)
            if compact and len(text) > BIG_VALUE:
                return {"sha256": hashlib.sha256(text.encode()).hexdigest(), "chars": len(text)}
            return v

        return {
            "mode": self.mode,
            "replications": self.replications,
            "trace": self.trace,
            "params": [{"key": p.key, "name": p.name, "labels": list(p.labels),
                        "values": [value(v) for v in p.values], "kind": p.kind}
                       for p in self.params],
        }


def sweep_table(text: str) -> Any:
    """The ``[sweep]`` table of a scenario's TOML text (None if absent)."""
    try:
        return tomllib.loads(text).get("sweep")
    except tomllib.TOMLDecodeError as exc:
        raise _core.ScenarioError(f"not valid TOML: {exc}") from None


def fingerprint(text: str, spec: SweepSpec, base_seed: int, overrides: tuple[str, ...],
                files: Mapping[str, str] | None = None) -> str:
    """Identifies a sweep: a results directory only resumes the sweep that started it.
    ``files`` (:func:`trace_files`) are the trace files its runs read, with their contents'
    digests: a file edited between a sweep's start and its resumption is another sweep. The
    engine build (``_core.__build__``: the version and a digest of the simulator's sources)
    is part of it: runs of another build are never resumed, nor reused by a study."""
    blob = _compact({"scenario": text, "engine": _core.__build__, "sweep": spec.describe(),
                     "seed": base_seed,
                     "overrides": list(overrides), **({"files": dict(files)} if files else {})})
    return hashlib.sha256(blob.encode()).hexdigest()


def trace_files(base: Mapping[str, Any], spec: SweepSpec, base_dir: str) -> dict[str, str]:
    """The trace files (a stage's ``trace``) that a sweep's runs read: those of the resolved
    base scenario and those its parameters name, each with the SHA-256 of its contents
    ("missing" for a file that does not exist: the runs naming it fail)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                if k == "trace" and isinstance(v, str):
                    found.add(v)
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(base.get("path", {}))
    for prm in spec.params:
        if not prm.key.startswith("path"):
            continue
        for value in prm.values:
            if prm.key.rsplit(".", 1)[-1] == "trace" and isinstance(value, str):
                found.add(value)
            else:
                walk(value)
    digests = {}
    for name in sorted(found):
        path = Path(base_dir, name)  # an absolute name stays as it is
        try:
            digests[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            digests[str(path)] = "missing"
    return digests


def check(text: str, base_dir: str, spec: SweepSpec, extra: tuple[str, ...],
          seed: int | None, base: dict[str, Any]) -> int:
    """Check a sweep against its scenario before any run; return the base seed.

    A parameter's column must not be a metric of the runs table; every parameter must reach
    the scenario (one whose values all fail, such as a path to a stage the scenario does not
    have, is an error naming it; a value that fails alone fails its runs, which is data); the
    seeds of every replication must fit int64. Needs only the core (``spikelab validate``).
    """
    sim = _core.Simulation(text, list(extra), base_dir, None, "summary")
    metrics = {c["name"] for c in sim.runs_template()["columns"]}
    for prm in spec.params:
        if prm.name in metrics and prm.name != "seed":
            raise _err(f"sweep.params.{json.dumps(prm.key)}.name",
                       f"column {prm.name!r} is also a metric of the runs table; give this "
                       f"parameter another `name`")
    for prm in spec.params:
        first_error = None
        for value in prm.values:
            try:
                _core.resolve(text, [*extra, f"{prm.key}={toml_literal(value)}"], base_dir)
                break
            except _core.ScenarioError as exc:
                first_error = first_error or str(exc)
        else:
            raise _err(f"sweep.params.{json.dumps(prm.key)}",
                       f"no value of this parameter gives a valid scenario: {first_error}")
    check_seed(seed)
    base_seed = int(base["sim"]["seed"]) if seed is None else int(seed)
    check_seed(base_seed + spec.replications - 1,
               f"seed: {base_seed} + {spec.replications - 1} (the last replication's seed)")
    return base_seed


def check_file(scenario: Any, overrides: list[str]) -> int:
    """Check the ``[sweep]`` of a scenario file or text; return its number of runs."""
    text, base_dir = read_scenario(scenario)
    extra = tuple(overrides_list(overrides))
    base = json.loads(_core.resolve(text, list(extra), base_dir))
    spec = SweepSpec.parse(sweep_table(text))
    check(text, base_dir, spec, extra, None, base)
    return spec.point_count() * spec.replications
