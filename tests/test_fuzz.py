"""A fuzz harness over scenario files.

Valid scenarios come from a small grammar of the documented format (docs/scenario.md: `[sim]`,
paths of rate/delay/loss stages with fixed values, profiles, Gilbert-Elliott and scripted
losses, flows with bulk or file apps and most `[flow.tcp]` and `[flow.tcp.rto]` keys); mutated
ones change one field of a valid scenario in a way the docs say is invalid (a wrong type, a
negative, huge, NaN or infinite number, an empty string, an unknown key, a duplicate stage
name, a path that does not exist, a probability above 1) or break the TOML itself (truncated,
a key or table given twice).

Every valid scenario must validate, run without a crash and:
- deliver a file exactly once and in order: `bytes_delivered` never exceeds the file, equals it
  when the transfer completed, and the receiver's `rcv_nxt` (timeseries) never goes back and
  ends at `bytes_delivered`;
- lose nothing silently (packets trace): every data or ACK packet that ends (delivered or
  dropped) ended once, and was sent;
- give the same runs table again, at the `summary` trace level (determinism, and a summary
  that does not depend on the trace level).
Every mutated scenario must be refused with a ScenarioError of one line that starts with the
field it changed (``flow[1].tcp.mss: ...``), uses no internal type names, or, for the TOML
mutations, says the text is not valid TOML. The CLI gives the same line as
``spikelab: error: FILE: FIELD: ...`` with exit status 2, never a traceback or a signal.

The cases run in batches in child processes (so a crash in the core fails the batch with the
seed that crashed instead of taking pytest down). A fixed seed set runs in CI in well under a
minute on 2 cores; ``pytest --fuzz-long`` runs thousands more.
"""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
BATCH = 50
FAST_SEEDS = range(0, 300)
LONG_SEEDS = range(300, 6300)
# Words a user-facing message must not contain: internal type names, and the deserialiser's
# own vocabulary ("unit variant", "expected string only") that says nothing to a user.
INTERNAL = ("u64", "i64", "u32", "f64", "usize", "struct ", "Spec", "NumOrStr", "sequence",
            "panicked", "Option<", "Vec<", "serde", "RUST_BACKTRACE", "Traceback",
            "unit variant", "string only")
# Defects found by this fuzzer and reported, not fixed yet: (message pattern, defect). A message
# matching one is not counted against the fuzz run (its field is still checked); each has an
# xfail(strict) test below with its minimal scenario, which flips when the defect is fixed; then
# remove the entry here. (D1, enum fields given a non-string, and D2, the one-line scenario
# given as text, were fixed; their tests below now pin the fixes.)
KNOWN: list[tuple[re.Pattern[str], str]] = []


# --- TOML writing ----------------------------------------------------------------------------

def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def _is_tables(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def dumps(doc: dict, prefix: str = "") -> str:
    """TOML text of a nested dict: scalars and arrays first, then sub-tables and arrays of
    tables (a dict under ``app`` stays an inline table, as the docs write it)."""
    lines, later = [], []
    for k, v in doc.items():
        if isinstance(v, dict) and k != "app" or _is_tables(v):
            later.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_value(v)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in later:
        name = f"{prefix}.{_key(k)}" if prefix else _key(k)
        if isinstance(v, dict):
            out += f"[{name}]\n" + dumps(v, name)
        else:
            for item in v:
                out += f"[[{name}]]\n" + dumps(item, name)
    return out


# --- valid scenarios -------------------------------------------------------------------------

def _duration(r: random.Random, lo_ms: float, hi_ms: float) -> Any:
    ms = r.uniform(lo_ms, hi_ms)
    return r.choice([ms / 1000, f"{ms:.3f}ms", f"{ms * 1000:.0f}us", f"{ms / 1000:.4f}s",
                     f"{ms * 1e6:.0f}ns"])


def _rate(r: random.Random) -> Any:
    kbps = r.choice([64, 384, 2000, 10_000, 100_000, 1_000_000])
    return r.choice([kbps * 1000, f"{kbps}kbps", f"{kbps / 1000:g}Mbps", f"{kbps * 1000}bps"])


def _bytes(r: random.Random, lo: int, hi: int) -> tuple[Any, int]:
    n = r.randint(lo, hi)
    form = r.random()
    if form < 0.4:
        return n, n
    if form < 0.7:
        k = max(1, n // 1000)
        return f"{k}KB", k * 1000
    k = max(1, n // 1024)
    return f"{k}KiB", k * 1024


def _profile(r: random.Random, with_loss: bool) -> list[list[float]]:
    rows, t = [], 0
    for _ in range(r.randint(1, 5)):
        loss = r.choice([0.0, 0.01, 0.3]) if with_loss else 0.0
        rows.append([t, r.randint(0, 300), loss])
        if r.random() < 0.3:  # a step: two rows at one time
            rows.append([t, r.randint(0, 1500), r.choice([0.0, 0.05]) if with_loss else 0.0])
        t += r.randint(1, 800)
    return rows


_TRACE_DIR: list[Path] = []


def _trace_dir() -> Path:
    if not _TRACE_DIR:
        import atexit
        import shutil
        import tempfile

        d = Path(tempfile.mkdtemp(prefix="spikelab-fuzz-"))
        atexit.register(shutil.rmtree, d, True)
        _TRACE_DIR.append(d)
    return _TRACE_DIR[0]


def _trace_file(rows: list[list[float]], text: str | None = None) -> str:
    """A delay trace CSV (docs/scenario.md) with these rows, or this text; its absolute path."""
    if text is None:
        text = "time_ms,delay_ms,loss\n" + "".join(f"{t},{d},{p}\n" for t, d, p in rows)
    path = _trace_dir() / f"trace-{len(list(_trace_dir().iterdir()))}.csv"
    path.write_text(text)
    return str(path)


def _loss_profile(r: random.Random) -> list[list[float]]:
    rows, t = [], 0
    for _ in range(r.randint(1, 4)):
        rows.append([t, r.choice([0.0, 0.01, 0.2, 1.0])])
        t += r.randint(1, 700)
    return rows


def _stage(r: random.Random, timed: bool) -> dict:
    """A stage; ``timed``: one that takes time (a rate, or a delay above zero)."""
    kind = r.choice(["rate", "delay"] if timed else ["rate", "delay", "delay", "loss", "loss"])
    st: dict[str, Any] = {"type": kind}
    if kind == "rate":
        st["rate"] = _rate(r)
        q = r.random()
        if q < 0.5:
            st["queue"] = r.randint(1, 300)
        elif q < 0.8:
            st["queue_bytes"] = _bytes(r, 3000, 400_000)[0]
    elif kind == "delay":
        if r.random() < 0.5 or timed:
            st["delay"] = _duration(r, 1 if timed else 0, 80)
        elif r.random() < 0.7:
            st["profile"] = _profile(r, r.random() < 0.5)
        else:  # the same rows from a CSV file
            st["trace"] = _trace_file(_profile(r, r.random() < 0.5))
        if r.random() < 0.2:
            st["reorder"] = r.random() < 0.5
    else:
        model = r.choice(["bernoulli", "gilbert_elliott", "profile", "deterministic"])
        if model == "bernoulli":
            st["p"] = r.choice([0.0, 0.001, 0.02, 0.1])
        elif model == "gilbert_elliott":
            st.update(model="gilbert_elliott", p=r.choice([0.01, 0.05]), r=r.choice([0.3, 0.8]))
            if r.random() < 0.5:
                st.update(h=r.choice([0.0, 0.5]), k=r.choice([1.0, 0.99]))
        elif model == "profile":
            st["profile"] = _loss_profile(r)
        else:
            if r.random() < 0.7:
                st["nth"] = sorted(r.sample(range(1, 80), r.randint(1, 4)))
            if "nth" not in st or r.random() < 0.5:
                mss = 1448
                st["seqs"] = [mss * r.randint(0, 30) for _ in range(r.randint(1, 3))]
    if r.random() < 0.15:
        st["name"] = f"{kind}_{r.randint(0, 9)}x"
    return st


def _path(r: random.Random, ideal: bool) -> dict:
    if ideal:  # no stage at all, or stages that add no time
        return {} if r.random() < 0.5 else {"stage": [{"type": "delay", "delay": 0}
                                                      for _ in range(r.randint(1, 200))]}
    stages = [_stage(r, timed=True)] + [_stage(r, timed=False) for _ in range(r.randint(0, 3))]
    r.shuffle(stages)
    names = set()
    for st in stages:  # stage names are unique in a path
        if "name" in st:
            if st["name"] in names:
                del st["name"]
            names.add(st.get("name"))
    return {"stage": stages}


def _tcp(r: random.Random) -> dict:
    tcp: dict[str, Any] = {}
    linux = r.random() < 0.25
    if linux:
        tcp["profile"] = "linux"
    sack = True if linux else r.random() < 0.7
    if not linux and r.random() < 0.5:
        tcp["sack"] = sack
    dsack = sack and (linux or r.random() < 0.8)
    if sack and not linux and r.random() < 0.4:
        tcp["dsack"] = dsack
    timestamps = True if linux else r.random() < 0.7
    if not linux and r.random() < 0.6:
        tcp["timestamps"] = timestamps
    variants = ["reno", "newreno"] + (["sack"] if sack else [])
    if r.random() < 0.8:
        tcp["variant"] = r.choice(variants)
    if r.random() < 0.6:
        tcp["mss"] = r.choice([536, 1000, 1448, 8948])
    for key, values in (("initial_window", [1, 2, 4, 10, 40]), ("dupthresh", [1, 3, 5]),
                        ("abc_limit", [1, 2]), ("delack_segments", [1, 2, 4])):
        if r.random() < 0.3:
            tcp[key] = r.choice(values)
    for key in ("abc", "limited_transmit", "block_fr_after_rto", "clear_sack_on_rto",
                "delayed_ack"):
        if r.random() < 0.3:
            tcp[key] = r.random() < 0.5
    if r.random() < 0.2:
        tcp["initial_ssthresh"] = _bytes(r, 20_000, 200_000)[0]  # >= 2 MSS
    if r.random() < 0.2:
        tcp["rwnd"] = _bytes(r, 20_000, 3_000_000)[0]
    if r.random() < 0.2:
        tcp["delack_timeout"] = "ato" if r.random() < 0.3 else _duration(r, 1, 200)
    if r.random() < 0.2:
        tcp["ts_tick"] = r.choice(["1ms", "10ms", 0.004])
    if r.random() < 0.5 or linux and r.random() < 0.3:
        allowed = ["frto"] + (["eifel"] if timestamps else []) + (["dsack"] if dsack else [])
        tcp["spurious"] = r.sample(allowed, r.randint(0, len(allowed)))
        tcp["response"] = r.choice(["undo", "eifel", "none"])
        tcp["frto"] = r.choice(["basic", "auto"] + (["sack"] if sack else []))
    if r.random() < 0.4:
        rto: dict[str, Any] = {"estimator": r.choice(["rfc6298", "linux"])}
        if r.random() < 0.5:
            rto["min"] = _duration(r, 10, 1000)
            rto["max"] = _duration(r, 3000, 120_000)  # >= the largest initial drawn
        if r.random() < 0.3:
            rto["initial"] = _duration(r, 1000, 3000)
        if rto["estimator"] == "rfc6298" and r.random() < 0.4:
            rto.update(alpha=r.choice([0.125, 0.25, 1.0]), beta=r.choice([0.25, 0.5]),
                       k=r.choice([1, 4]), granularity=r.choice(["1ms", 0.0, "10ms"]))
        tcp["rto"] = rto
    return tcp


def valid_scenario(r: random.Random) -> tuple[dict, list[int | None]]:
    """A valid scenario (as a dict) and, per flow, its file size (None for bulk)."""
    ideal = r.random() < 0.1  # paths that add no time, file transfers only
    doc: dict[str, Any] = {}
    if r.random() < 0.2:
        doc["name"] = r.choice(["fuzz", "a b", "ünï"])
    doc["sim"] = {"duration": r.choice(["0.5s", "1s", "2s", 1.5, "1500ms"]),
                  "seed": r.choice([0, 1, r.randint(0, 2**40), 2**63 - 10]),
                  "trace": r.choices(["summary", "timeseries", "packets"], [5, 3, 2])[0]}
    if doc["sim"]["trace"] == "packets" and r.random() < 0.2:
        doc["sim"]["max_packets_rows"] = r.choice([1, 50, 5000])  # may stop the run
    paths: dict[str, dict] = {}
    for name in ("fwd", "rev", "p1", "long-name"):
        if name in ("fwd", "rev") and r.random() < 0.25:
            continue  # the default link
        if name not in ("fwd", "rev") and r.random() < 0.7:
            continue
        paths[name] = _path(r, ideal)
    if paths:
        doc["path"] = paths
    names = list(paths) or ["fwd"]
    flows, sizes = [], []
    for _ in range(r.randint(1, 4)):
        flow: dict[str, Any] = {}
        if r.random() < 0.4:
            flow["fwd"] = r.choice([n for n in names if n != "rev"] or ["fwd"])
            flow["rev"] = r.choice([n for n in names if n != "fwd"] or ["rev"])
        if r.random() < 0.5:
            flow["start"] = _duration(r, 0, 450)  # before the shortest sim.duration
        if ideal or r.random() < 0.5:
            spec, size = _bytes(r, 1, 300_000)
            flow["app"] = {"type": "file", "size": spec}
            sizes.append(size)
        else:
            if r.random() < 0.3:
                flow["app"] = {"type": "bulk"}
            sizes.append(None)
        if r.random() < 0.2:
            flow["cc"] = "reno"
        tcp = _tcp(r)
        if tcp:
            flow["tcp"] = tcp
        flows.append(flow)
    doc["flow"] = flows
    return doc, sizes


# --- mutations: one field of a valid scenario, invalid by the docs ---------------------------

def leaves(doc: Any, prefix: str = "", keys: tuple = ()) -> list[tuple[str, tuple, Any]]:
    """(documented field name, key path, value) of every scalar or array leaf."""
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            name = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict) or _is_tables(v):
                out += leaves(v, name, (*keys, k))
            else:
                out.append((name, (*keys, k), v))
    elif _is_tables(doc):
        for i, v in enumerate(doc):
            out += leaves(v, f"{prefix}[{i}]", (*keys, i))
    return out


def _set(doc: Any, keys: tuple, value: Any) -> None:
    for k in keys[:-1]:
        doc = doc[k]
    doc[keys[-1]] = value


def _get(doc: Any, keys: tuple) -> Any:
    for k in keys:
        doc = doc[k]
    return doc


DURATIONS = {"duration", "start", "delay", "delack_timeout", "ts_tick", "min", "max", "initial",
             "granularity"}
COUNTS = {"queue", "mss", "initial_window", "dupthresh", "abc_limit", "delack_segments"}
BYTES = {"queue_bytes", "initial_ssthresh", "rwnd", "size"}
PROBS = {"p", "r", "h", "k"}
ENUMS = {"trace", "type", "model", "variant", "estimator", "frto", "response", "profile", "cc"}
REFS = {"fwd", "rev"}
BOOLS = {"reorder", "abc", "limited_transmit", "block_fr_after_rto", "clear_sack_on_rto",
         "delayed_ack", "sack", "dsack", "timestamps"}


def _leaf_kind(name: str, value: Any) -> str | None:
    key = re.sub(r"\[\d+\]$", "", name.rsplit(".", 1)[-1])
    if key == "k" and ".rto." in name:
        return "positive"
    if key in ("alpha", "beta"):
        return "gain"
    for kind, keys in (("duration", DURATIONS), ("count", COUNTS), ("bytes", BYTES),
                       ("prob", PROBS), ("enum", ENUMS), ("ref", REFS), ("bool", BOOLS)):
        if key in keys:
            return kind
    if key == "rate":
        return "rate"
    if key == "seed":
        return "seed"
    return None


# Invalid values by kind: each breaks a documented rule (type, sign, bound, finiteness).
BAD = {
    "duration": [-1, "-5ms", "1e10s", "2e9s", float("nan"), float("inf"), "", "5 parsecs",
                 True, [1], {"a": 1}],
    "rate": [-1, 0, "0bps", "-3Mbps", "20Tbps", float("nan"), float("inf"), "", "fast", False],
    "bytes": [-1, "-3KB", 10**16, "2PB", float("nan"), float("-inf"), "", "many", True, [3]],
    "count": [-1, -1000, float("nan"), float("inf"), 1.5, "", "ten", True, {"a": 1}],
    "prob": [-0.1, 1.5, float("nan"), float("inf"), float("-inf"), "", "half", True],
    "gain": [-0.5, 0.0, 2.0, float("nan"), float("inf"), "", True],
    "positive": [-1, 0, float("nan"), "", True],
    "seed": [-1, -(2**63), float("nan"), 1.5, "", "one", True],
    "enum": ["", "nonsense", 3, True, ["reno"]],
    "ref": ["", "no-such-path", 3],
    "bool": ["", "yes", 1, 0.5, [True]],
}


# Documented bounds beyond the kind's (docs/scenario.md): the first value out of range.
LIMITS = {"mss": [0, 65_496], "initial_window": [0, 100_001], "abc_limit": [0, 1001],
          "dupthresh": [0, 1001], "delack_segments": [0, 1001], "queue": [0, 10**9 + 1],
          "rwnd": [2**30 + 1], "seed": [2**63]}
# Durations that must be above zero.
NONZERO = ("sim.duration", ".ts_tick", ".delack_timeout", ".rto.min", ".rto.initial",
           ".rto.max")


def _bad_values(name: str, kind: str) -> list:
    key = re.sub(r"\[\d+\]$", "", name.rsplit(".", 1)[-1])
    extra = list(LIMITS.get(key, []))
    if kind == "duration" and name.endswith(NONZERO):
        extra += [0, "0ms"]
    if key == "seed":  # 2**63 does not fit a TOML integer: a TOML error, not a field error
        extra = []
    return BAD[kind] + extra


def _mutate_field(r: random.Random, doc: dict) -> tuple[str, str] | None:
    """Change one leaf to a value the docs forbid; (field, what) or None if nothing fits."""
    cands = [(n, k, v) for n, k, v in leaves(doc) if _leaf_kind(n, v)]
    cands = [c for c in cands if not (c[0] == "flow" or c[0].endswith(".app.type"))]
    if not cands:
        return None
    name, keys, value = r.choice(cands)
    kind = _leaf_kind(name, value)
    bad = r.choice(_bad_values(name, kind))
    if kind == "enum" and name.endswith(".type") and ".stage[" in name and bad == 3:
        bad = "teleport"
    _set(doc, keys, bad)
    return name, f"{kind} = {bad!r}"


def _mutate_structure(r: random.Random, doc: dict) -> tuple[str, str] | None:
    """An unknown key, a duplicate stage name, an out-of-range array entry."""
    traces = [(p, i) for p, path in doc.get("path", {}).items()
              for i, st in enumerate(path.get("stage", [])) if "trace" in st]
    if traces and r.random() < 0.5:
        p, i = r.choice(traces)
        doc["path"][p]["stage"][i]["trace"] = r.choice([
            "/nonexistent/trace.csv", str(_trace_dir()), "/dev/zero", "/dev/null",
            _trace_file([], "a,b\n0,1\n"), _trace_file([], "time_ms,delay_ms,loss\n0,x,0\n"),
            _trace_file([], "time_ms,delay_ms,loss\n0,50\n"), _trace_file([], ""),
            _trace_file([], "time_ms,delay_ms,loss\n5,50,0\n1,50,0\n"),
            _trace_file([], "time_ms,delay_ms,loss\n0,-50,0\n"),
            _trace_file([], "time_ms,delay_ms,loss\n0,50,1.5\n"),
            _trace_file([], "time_ms,delay_ms,loss\n0,nan,0\n")])
        return f"path.{_key(p)}.stage[{i}].trace", "bad trace file"
    choice = r.randrange(4)
    tables = [(n, k) for n, k in _tables(doc)]
    if choice == 0:
        name, keys = r.choice(tables)
        table = _get(doc, keys) if keys else doc
        table["bogus_key"] = 1
        return (f"{name}.bogus_key" if name else "bogus_key"), "unknown key"
    stages = [(p, i) for p, path in doc.get("path", {}).items()
              for i, _ in enumerate(path.get("stage", []))]
    if choice == 1 and len(stages) >= 1:
        p, i = r.choice(stages)
        st = doc["path"][p]["stage"]
        st.insert(i + 1, dict(st[i], name="same"))
        st[i]["name"] = "same"
        # Other stages of this path named "same" would clash first: rename them.
        for j, other in enumerate(st):
            if j not in (i, i + 1) and other.get("name") == "same":
                other["name"] = f"other{j}"
        return f"path.{_key(p)}.stage[{i + 1}].name", "duplicate stage name"
    if choice == 2:
        flow = r.randrange(len(doc["flow"]))
        doc["flow"][flow].setdefault("tcp", {})["spurious"] = ["eifel", "teleport"]
        return f"flow[{flow}].tcp.spurious[1]", "unknown detector"
    flow = r.randrange(len(doc["flow"]))
    doc["flow"][flow]["app"] = {"type": "file", "size": r.choice([0, -1, "", "0KB"])}
    return f"flow[{flow}].app.size", "file size not positive"


def _tables(doc: Any, prefix: str = "", keys: tuple = ()) -> list[tuple[str, tuple]]:
    out = [(prefix, keys)] if isinstance(doc, dict) else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if isinstance(v, dict) or _is_tables(v):
                name = f"{prefix}.{k}" if prefix else k
                out += _tables(v, name, (*keys, k))
    elif _is_tables(doc):
        for i, v in enumerate(doc):
            out += _tables(v, f"{prefix}[{i}]", (*keys, i))
    return [(n, k) for n, k in out if n != "path"]  # a key under [path] names a path


TOML_MUTATIONS = {
    # (ends with a newline: the API takes a one-line string without "=" for a file name)
    "truncated": lambda r, t: t[: r.randint(1, max(1, len(t) - 1))] + "\n",
    "key twice": lambda r, t: t.replace("[sim]\n", "[sim]\nseed = 1\nseed = 2\n", 1),
    "table twice": lambda r, t: t + "[sim]\nseed = 3\n",
    "not toml": lambda r, t: t.replace("=", "==", 1),
}


def _field_of(msg: str) -> str:
    return msg.split(": ", 1)[0]


def _related(got: str, want: str) -> bool:
    """The error names the changed field, or the table or stage that holds it."""
    parent = want.rsplit(".", 1)[0] if "." in want else want
    return got == want or got.startswith(want + "[") or got == parent or \
        got.startswith(parent + ".") and want.startswith(got)


def check_error(msg: str, field: str | None, text: str, known: bool = True) -> None:
    assert "\n" not in msg, f"a multi-line error:\n{msg}\n--- scenario\n{text}"
    for word in INTERNAL:
        if known and any(pattern.search(msg) for pattern, _ in KNOWN):
            break
        assert word not in msg, f"internal name {word!r} in {msg!r}\n--- scenario\n{text}"
    if field is None:  # a TOML mutation
        assert msg.startswith("not valid TOML") or re.match(r"^[\w\[\].\"-]+: ", msg), msg
    else:
        assert _related(_field_of(msg), field), \
            f"the error names {_field_of(msg)!r}, the mutated field is {field!r}: {msg}" \
            f"\n--- scenario\n{text}"


# --- checks of a valid run -------------------------------------------------------------------

def check_run(text: str, sizes: list[int | None], trace: str) -> dict | None:
    import spikelab

    try:
        res = spikelab.run(text, progress=False, plots=False)
    except spikelab.SimulationError as exc:  # a documented bound, never an internal error
        msg = str(exc)
        assert "internal error" not in msg and "\n" not in msg, f"{msg}\n{text}"
        assert msg.startswith("sim.max_packets_rows: ") and trace == "packets", \
            f"the run stopped: {msg}\n{text}"
        return None
    rows = res.runs.to_pylist()
    assert [r["flow"] for r in rows] == list(range(len(sizes))), text
    for row, size in zip(rows, sizes, strict=True):
        got = row["bytes_delivered"]
        assert got >= 0 and row["retx_segments"] <= row["segments_sent"], (row, text)
        assert row["rto_spurious_true"] <= row["rto_count"], (row, text)
        assert row["rto_episodes_spurious_true"] <= row["rto_episodes"] <= row["rto_count"], \
            (row, text)
        if size is not None:
            assert got <= size, f"flow {row['flow']}: {got} bytes of a {size}-byte file\n{text}"
            if row["completion_time_s"] is not None:  # null: not finished
                assert got == size, f"flow {row['flow']} completed with {got} of {size}\n{text}"
    if trace in ("timeseries", "packets"):
        import numpy as np
        import pyarrow.compute as pc

        ts = res.timeseries
        ts = ts.filter(pc.equal(ts.column("var").cast("string"), "rcv_nxt"))
        flows, values = ts.column("flow").to_numpy(), ts.column("value").to_numpy()
        for row in rows:
            v = values[flows == row["flow"]]  # in time order
            assert (np.diff(v) >= 0).all(), f"rcv_nxt of flow {row['flow']} went back\n{text}"
            assert (v[-1] if len(v) else 0) == row["bytes_delivered"], (row, text)
    if trace == "packets":
        import numpy as np
        import pyarrow.compute as pc

        pk = res.packets
        event = pk.column("event").cast("string")
        pkt = pk.column("pkt").to_numpy()
        starts = pkt[pc.is_in(event, value_set=pa_strings("send", "retransmit", "tlp", "ack"))
                     .to_numpy(zero_copy_only=False)]
        ends = pkt[pc.is_in(event, value_set=pa_strings("deliver", "drop"))
                   .to_numpy(zero_copy_only=False)]
        assert len(np.unique(starts)) == len(starts), f"a packet id sent twice\n{text}"
        assert len(np.unique(ends)) == len(ends), f"a packet delivered or dropped twice\n{text}"
        assert np.isin(ends, starts).all(), f"a packet delivered or dropped unsent\n{text}"
    return {"rows": rows}


def pa_strings(*values: str):
    import pyarrow as pa

    return pa.array(values, pa.string())


def _same(a: list[dict], b: list[dict]) -> bool:
    def norm(rows):
        return [{k: ("nan" if isinstance(v, float) and math.isnan(v) else v)
                 for k, v in r.items()} for r in rows]
    return norm(a) == norm(b)


def case(seed: int) -> None:
    """One fuzz case: a valid scenario (validated, run, run again at summary) and one
    mutation of it (refused with a one-line error naming the field)."""
    import spikelab

    r = random.Random(seed)
    doc, sizes = valid_scenario(r)
    text = dumps(doc)
    try:
        spikelab.validate(text)
    except spikelab.ScenarioError as exc:
        raise AssertionError(f"a valid scenario was refused: {exc}\n{text}") from None
    first = check_run(text, sizes, doc["sim"]["trace"])
    doc2 = json.loads(json.dumps(doc))
    doc2["sim"]["trace"] = "summary"
    again = check_run(dumps(doc2), sizes, "summary")
    if first is not None:
        assert again is not None and _same(first["rows"], again["rows"]), \
            f"the runs table differs between trace {doc['sim']['trace']} and summary " \
            f"(or between two runs)\n{text}"
    elif "max_packets_rows" in doc["sim"]:  # the bound of the packets trace stopped it
        assert again is not None, f"a summary run stopped by the packets bound\n{text}"
    # A mutation of the same scenario.
    pick = r.random()
    mutated = json.loads(json.dumps(doc))
    if pick < 0.6:
        field = _mutate_field(r, mutated)
        bad_text = dumps(mutated)
    elif pick < 0.85:
        field = _mutate_structure(r, mutated)
        bad_text = dumps(mutated)
    else:
        name = r.choice(sorted(TOML_MUTATIONS))
        bad_text, field = TOML_MUTATIONS[name](r, text), None
    if field is None and pick < 0.85:
        return
    try:
        spikelab.validate(bad_text)
    except spikelab.ScenarioError as exc:
        check_error(str(exc), field[0] if field else None, bad_text)
        return
    if field is not None:
        raise AssertionError(f"{field[0]} ({field[1]}) was accepted\n{bad_text}")
    # A truncation can leave a valid scenario: then it must run like any other.
    resolved = spikelab.validate(bad_text)
    check_run(bad_text, [None] * len(resolved["flow"]), resolved["sim"]["trace"])


# --- the tests -------------------------------------------------------------------------------

def run_batch(seeds: list[int]) -> list[str]:
    """Run cases in this process; the failures as messages (the child's side)."""
    failures = []
    for seed in seeds:
        print(f"seed {seed}", flush=True)
        try:
            case(seed)
        except AssertionError as exc:
            failures.append(f"seed {seed}: {exc}")
        except Exception as exc:  # noqa: BLE001 - anything but a clean refusal is a failure
            failures.append(f"seed {seed}: {type(exc).__name__}: {exc}")
    return failures


def _child(seeds: list[int], timeout: float) -> None:
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import test_fuzz; "
            "f = test_fuzz.run_batch(json.loads(sys.argv[2])); "
            "print('FAILURES ' + json.dumps(f))")
    proc = subprocess.run([sys.executable, "-c", code, str(HERE), json.dumps(seeds)],
                          capture_output=True, text=True, timeout=timeout)
    last_seed = [ln for ln in proc.stdout.splitlines() if ln.startswith("seed ")][-1:]
    assert proc.returncode == 0, f"the fuzz batch died (exit {proc.returncode}) at " \
                                 f"{last_seed}:\n{proc.stderr[-3000:]}"
    result = [ln for ln in proc.stdout.splitlines() if ln.startswith("FAILURES ")]
    failures = json.loads(result[-1][len("FAILURES "):])
    assert not failures, "\n\n".join(failures[:5]) + f"\n({len(failures)} failed)"


@pytest.mark.parametrize("start", range(FAST_SEEDS.start, FAST_SEEDS.stop, BATCH))
def test_fuzz_fixed_seeds(start):
    _child(list(range(start, min(start + BATCH, FAST_SEEDS.stop))), timeout=300)


@pytest.mark.parametrize("start", range(LONG_SEEDS.start, LONG_SEEDS.stop, 500))
def test_fuzz_long(request, start):
    if not request.config.getoption("--fuzz-long"):
        pytest.skip("the long fuzz run needs --fuzz-long")
    _child(list(range(start, min(start + 500, LONG_SEEDS.stop))), timeout=3600)


def test_the_grammar_covers_the_documented_format():
    """The generator reaches every stage type, loss model, app, trace level and the tcp keys
    it claims (so a narrowed grammar is noticed)."""
    seen: set[str] = set()
    for seed in range(300):
        doc, _ = valid_scenario(random.Random(seed))
        for name, _keys, value in leaves(doc):
            key = re.sub(r"\[\d+\]", "", name)
            seen.add(key)
            if key.endswith(("stage.type", "stage.model", "app.type", "sim.trace")):
                seen.add(f"{key}={value}")
    want = {"path.fwd.stage.type=rate", "path.fwd.stage.type=delay", "path.fwd.stage.type=loss",
            "path.fwd.stage.model=gilbert_elliott", "path.fwd.stage.profile",
            "path.fwd.stage.nth", "path.fwd.stage.seqs", "path.fwd.stage.queue_bytes",
            "path.fwd.stage.reorder", "flow.app.type=file", "flow.app.type=bulk",
            "sim.trace=packets", "sim.trace=timeseries", "flow.tcp.spurious",
            "flow.tcp.rto.granularity", "flow.tcp.profile", "flow.tcp.rwnd", "flow.fwd"}
    assert want <= seen, sorted(want - seen)


def test_the_toml_writer_round_trips():
    import tomllib

    for seed in range(50):
        doc, _ = valid_scenario(random.Random(seed))
        assert tomllib.loads(dumps(doc)) == doc


def test_the_harness_catches_what_it_claims():
    """The checks can fail: an accepted invalid field, an error naming another field, a
    multi-line error, an internal type name, a file delivered twice."""
    with pytest.raises(AssertionError, match="mutated field"):
        check_error("sim.seed: must be >= 0", "flow[0].tcp.mss", "")
    with pytest.raises(AssertionError, match="multi-line"):
        check_error("flow[0].tcp.mss: bad\nmore", "flow[0].tcp.mss", "")
    with pytest.raises(AssertionError, match="internal name"):
        check_error("flow[0].tcp.mss: invalid type u64", "flow[0].tcp.mss", "")
    check_error("flow[0].tcp.rto: unknown field", "flow[0].tcp.rto.bogus_key", "")
    check_error("path.fwd.stage[1].name: duplicate", "path.fwd.stage[1].name", "")
    text = '[sim]\nduration = "1s"\n[[flow]]\napp = { type = "file", size = 5000 }\n'
    check_run(text, [5000], "summary")
    with pytest.raises(AssertionError, match="bytes of a"):
        check_run(text, [4000], "summary")  # as if 5000 bytes of a 4000-byte file arrived


@pytest.mark.parametrize(("text", "field"), [
    pytest.param('[[flow]]\n[flow.tcp]\nvariant = 3\n', "flow[0].tcp.variant"),
    pytest.param('[sim]\ntrace = true\n[[flow]]\n', "sim.trace"),
    pytest.param('[path.fwd]\n[[path.fwd.stage]]\ntype = ["rate"]\n[[flow]]\n',
                 "path.fwd.stage[0].type"),
], ids=["variant-number", "trace-boolean", "stage-type-array"])
def test_known_defects(text, field):
    """D1 (fixed): an enum field given a non-string names the field and what it takes."""
    import spikelab

    with pytest.raises(spikelab.ScenarioError) as err:
        spikelab.validate(text)
    check_error(str(err.value), field, text, known=False)


@pytest.mark.parametrize(("text", "field"), [
    # D4 (fixed): a byte count that is not whole was rounded silently (size = 1.5 ran a
    # 2-byte file); so were rates and durations below their unit.
    pytest.param('[[flow]]\napp = { type = "file", size = 1.5 }\n', "flow[0].app.size"),
    pytest.param('[[flow]]\napp = { type = "file", size = "0.0001KB" }\n', "flow[0].app.size"),
    pytest.param('[sim]\nduration = "0.4ns"\n[[flow]]\n', "sim.duration"),
    pytest.param('[path.fwd]\n[[path.fwd.stage]]\ntype = "rate"\nrate = 1.5\n[[flow]]\n',
                 "path.fwd.stage[0].rate"),
    # D5 (fixed): queue_bytes = 0 (or "0.0001KB") was accepted while queue = 0 is refused.
    pytest.param('[path.fwd]\n[[path.fwd.stage]]\ntype = "rate"\nrate = "1Mbps"\n'
                 'queue_bytes = 0\n[[flow]]\n', "path.fwd.stage[0].queue_bytes"),
    pytest.param('[path.fwd]\n[[path.fwd.stage]]\ntype = "rate"\nrate = "1Mbps"\n'
                 'queue_bytes = "0.0001KB"\n[[flow]]\n', "path.fwd.stage[0].queue_bytes"),
], ids=["fractional-file-size", "sub-byte-size", "sub-ns-duration", "fractional-rate",
        "zero-byte-queue", "sub-byte-queue"])
def test_values_are_refused_not_rounded(text, field):
    import spikelab

    with pytest.raises(spikelab.ScenarioError) as err:
        spikelab.validate(text)
    check_error(str(err.value), field, text, known=False)


def test_the_minimal_scenario_as_text():
    """README: "spikelab.run also accepts TOML text instead of a path"; the smallest scenario
    is one line, [[flow]]."""
    import spikelab

    assert len(spikelab.validate("[[flow]]")["flow"]) == 1


@pytest.mark.parametrize("seed", [3, 5, 8, 13, 21])
def test_the_cli_gives_one_line_errors_on_mutated_files(tmp_path, seed):
    r = random.Random(seed)
    doc, _ = valid_scenario(r)
    field = _mutate_field(r, doc)
    assert field is not None
    (tmp_path / "s.toml").write_text(dumps(doc))
    for cmd in (["validate", "s.toml"], ["run", "s.toml", "-o", "out", "-q"]):
        proc = subprocess.run([sys.executable, "-m", "spikelab", *cmd], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (field, proc.returncode, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("spikelab: error: s.toml: "), \
            proc.stderr
        check_error(lines[0][len("spikelab: error: s.toml: "):], field[0], dumps(doc))
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize(("override", "field"), [
    ("flow[9].tcp.mss=3", "flow[9].tcp.mss"),
    ("sim.duration=", "sim.duration"),
    ("flow[0].tcp.mss=1e999", "flow[0].tcp.mss"),
    ("flow.tcp.rto=3", "flow[0].tcp.rto"),
    ("path.fwd.delay.delay=-1", "path.fwd.stage[1].delay"),  # the stage named by its type
])
def test_the_cli_names_the_field_of_a_bad_override(tmp_path, override, field):
    (tmp_path / "s.toml").write_text((HERE.parent / "examples" / "lte-handover.toml")
                                     .read_text())
    proc = subprocess.run([sys.executable, "-m", "spikelab", "validate", "s.toml", "--set",
                           override], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spikelab: error: s.toml: "), proc.stderr
    got = lines[0][len("spikelab: error: s.toml: "):]
    check_error(got, field, override)


@pytest.mark.parametrize("seed", [2, 4])
def test_the_cli_runs_valid_files_exactly_once(tmp_path, seed):
    """Valid scenarios through the command line: exit 0, no traceback, and every completed
    file transfer delivered exactly."""
    import pyarrow.parquet as pq

    r = random.Random(seed)
    while True:
        doc, sizes = valid_scenario(r)
        if any(s is not None for s in sizes):
            break
    doc["sim"]["trace"] = "summary"
    (tmp_path / "s.toml").write_text(dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "spikelab", "run", "s.toml", "-o", "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    rows = pq.read_table(tmp_path / "out" / "runs.parquet").to_pylist()
    for row, size in zip(rows, sizes, strict=True):
        if size is not None:
            assert row["bytes_delivered"] <= size
            if row["completion_time_s"] is not None:
                assert row["bytes_delivered"] == size
