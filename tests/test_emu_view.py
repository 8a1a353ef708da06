"""The schemas of what the core hands Python about a scenario.

- The kernel view (``_core.emu_resolve``'s second document, built in
  ``crates/spikelab-emu/src/view.rs``) has exactly the keys and value types of the
  ``TypedDict`` s in ``spikelab/emulate/view.py``, for every example and study scenario.
- Every key of the resolved scenario (``_core.resolve``) is documented in docs/scenario.md.

Both only call the core (no network namespaces).
"""

from __future__ import annotations

import json
import re
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from spikelab import _core
from spikelab.emulate import view as schema

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted(ROOT.glob("examples/*.toml")) + sorted(
    ROOT.glob("python/spikelab/studies/*/scenario.toml"))
IDS = [str(p.relative_to(ROOT)) for p in SCENARIOS]
VIEWS = (schema.KernelView, schema.FlowView, schema.TcpView, schema.RtoView, schema.SctpView,
         schema.OwnQueueView)


def _read(path: Path) -> tuple[str, str]:
    return path.read_text(encoding="utf-8-sig"), str(path.parent)


def _mismatches(value: Any, hint: Any, where: str, seen: set[type]) -> list[str]:
    """Where ``value`` differs from the annotation ``hint``: a missing or extra key of a
    TypedDict, or a value of another type (an int is not a float, a bool is not an int)."""
    if typing.is_typeddict(hint):
        seen.add(hint)
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, expected {hint.__name__}"]
        fields = typing.get_type_hints(hint)
        out = [f"{where}.{k}: missing" for k in fields if k not in value]
        out += [f"{where}.{k}: not in {hint.__name__}" for k in value if k not in fields]
        for k in fields:
            if k in value:
                out += _mismatches(value[k], fields[k], f"{where}.{k}", seen)
        return out
    if isinstance(hint, types.UnionType):
        args = typing.get_args(hint)
        if value is None:
            return [] if type(None) in args else [f"{where}: null, expected {hint}"]
        (inner,) = [a for a in args if a is not type(None)]
        return _mismatches(value, inner, where, seen)
    if typing.get_origin(hint) is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, expected a list"]
        (item,) = typing.get_args(hint)
        return [m for i, v in enumerate(value) for m in _mismatches(v, item, f"{where}[{i}]",
                                                                    seen)]
    if type(value) is not hint:  # exact: bool is a subclass of int
        return [f"{where}: {value!r} is {type(value).__name__}, expected {hint.__name__}"]
    return []


def _view(path: Path) -> dict[str, Any]:
    text, base = _read(path)
    try:
        _, view_json, _ = _core.emu_resolve(text, [], base)
    except ValueError as e:  # a scenario emulation refuses has no view
        pytest.skip(f"not emulable: {e}")
    return json.loads(view_json)


@pytest.mark.parametrize("path", SCENARIOS, ids=IDS)
def test_the_kernel_view_has_the_schemas_keys_and_types(path: Path) -> None:
    assert _mismatches(_view(path), schema.KernelView, "view", set()) == []


def test_the_scenarios_cover_every_view_type_and_the_checker_finds_a_difference() -> None:
    seen: set[type] = set()
    for path in SCENARIOS:
        text, base = _read(path)
        try:
            view = json.loads(_core.emu_resolve(text, [], base)[1])
        except ValueError:
            continue
        _mismatches(view, schema.KernelView, "view", seen)
    # An SCTP flow and a sender's own queue among them, so every TypedDict was compared.
    assert seen == set(VIEWS)

    text, base = _read(ROOT / "examples/umts-downlink.toml")
    view = json.loads(_core.emu_resolve(text, [], base)[1])
    f = view["flows"][0]
    f["tcp"]["rto"]["k"] = 4  # an int where a float is due
    f["tcp"]["sack"] = 1  # an int for a bool
    del f["tcp"]["mss"]
    f["extra"] = 0
    view["backpressure"][0]["queue_bytes"] = "12000"
    assert sorted(_mismatches(view, schema.KernelView, "view", set())) == [
        "view.backpressure[0].queue_bytes: '12000' is str, expected int",
        "view.flows[0].extra: not in FlowView",
        "view.flows[0].tcp.mss: missing",
        "view.flows[0].tcp.rto.k: 4 is int, expected float",
        "view.flows[0].tcp.sack: 1 is int, expected bool",
    ]


# What docs/scenario.md documents: a backticked name or dotted key (`rto.min`, `[flow.tcp]`,
# `path.NAME.stage[K]`), the key of a backticked `key = value` or inline table, and in a
# ```toml block a `key = ...` line (or an inline table's keys) and each component of a
# `[table]` / `[[table]]` heading. Strings and comments are left out.
_KEY = r"[A-Za-z_][\w-]*"
_DOTTED = rf"{_KEY}(?:\[\w*\])*(?:\.{_KEY}(?:\[\w*\])*)*"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')
_ASSIGNED = re.compile(rf"(?:^|[{{,\s])({_DOTTED})\s*=(?!=)")
_HEADING = re.compile(rf"^\[\[?\s*({_DOTTED})\s*\]\]?$")
_NAME = re.compile(rf"^\[{{0,2}}({_DOTTED})\]{{0,2}}$")


def _components(dotted: str) -> set[str]:
    return {re.sub(r"\[\w*\]", "", part) for part in dotted.split(".")}


def documented_names(md: str) -> set[str]:
    """The key names a Markdown page documents (see above)."""
    names: set[str] = set()
    for block in re.findall(r"^```toml\n(.*?)^```", md, flags=re.S | re.M):
        for line in block.splitlines():
            line = _STRING.sub('""', line).split("#", 1)[0].strip()
            if m := _HEADING.match(line):
                names |= _components(m.group(1))
            for m in _ASSIGNED.finditer(line):
                names |= _components(m.group(1))
    prose = re.sub(r"^```.*?^```", "", md, flags=re.S | re.M)
    for span in re.findall(r"`([^`\n]+)`", prose):
        span = _STRING.sub('""', span).strip()
        if m := _NAME.match(span):
            names |= _components(m.group(1))
        for m in _ASSIGNED.finditer(span):
            names |= _components(m.group(1))
    return names


def _keys(value: Any, where: str, out: dict[str, str]) -> dict[str, str]:
    """Every key of a resolved scenario, with the first place it occurs; a path's name (a
    child of ``path``) is the user's, not a key: its table is walked, its name not kept."""
    if isinstance(value, dict):
        for k, v in value.items():
            if where == "path":
                _keys(v, f"path.{k}", out)
                continue
            at = f"{where}.{k}" if where else k
            out.setdefault(k, at)
            _keys(v, at, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _keys(v, f"{where}[{i}]", out)
    return out


def test_the_matcher_reads_names_keys_and_headings_not_values_or_comments() -> None:
    md = ("A `name`, `[flow.tcp]`, `path.NAME.stage[K]`, `rto.min = 1`, `x = { y = 2 }`, "
          "`\"quoted\"`, `a b`.\n```toml\n[[path.up.stage]]\ntype = \"rate\"  # note = 1\n"
          "app = { type = \"file\", size = 5 }\n```\n")
    assert documented_names(md) == {"name", "flow", "tcp", "path", "NAME", "stage", "rto",
                                    "min", "x", "y", "up", "type", "app", "size"}


def test_every_key_of_a_resolved_scenario_is_documented() -> None:
    md = (ROOT / "docs/scenario.md").read_text(encoding="utf-8")
    names = documented_names(md)
    keys: dict[str, str] = {}
    for path in SCENARIOS:
        text, base = _read(path)
        _keys(json.loads(_core.resolve(text, [], base)), "", keys)
    assert len(keys) > 100  # the examples and studies use most of the format
    assert {k: at for k, at in keys.items() if k not in names} == {}
    # A key the page stops mentioning is reported.
    without = "\n".join(line for line in md.splitlines() if "reorder" not in line)
    assert "reorder" not in documented_names(without)
