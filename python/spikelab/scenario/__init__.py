"""Reading and validating scenarios (their ``[sweep]`` tables: :mod:`.sweepspec`): a bottom
floor of the package.

Imports nothing heavy (no pyarrow, pandas, matplotlib), so ``spikelab validate`` and the
command line start at once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import _core

ScenarioSource = str | os.PathLike[str]
TRACE_LEVELS = ("summary", "timeseries", "packets")
MAX_SEED = 2**63 - 1


def read_scenario(scenario: ScenarioSource) -> tuple[str, str]:
    """Return (TOML text, base directory for relative paths) of a file path or TOML text.

    A ``str`` is TOML text if it contains a newline, or if it names no existing file and has
    an ``=`` or starts with ``[`` (the one-line scenario ``[[flow]]``).
    """
    if not isinstance(scenario, str | os.PathLike):
        raise TypeError(f"scenario must be a file path or TOML text, got "
                        f"{type(scenario).__name__}")
    if isinstance(scenario, str) and not scenario.strip():
        raise ValueError("scenario: empty (give a file path or TOML text; '[[flow]]' is the "
                         "smallest scenario)")
    if isinstance(scenario, str) and (
        "\n" in scenario
        or (("=" in scenario or scenario.lstrip().startswith("["))
            and not os.path.isfile(scenario))
    ):
        return scenario, os.getcwd()
    path = Path(scenario)
    # utf-8-sig: a byte-order mark (Windows editors write one) is read past, not parsed.
    return path.read_text(encoding="utf-8-sig"), str(path.resolve().parent)


def overrides_list(overrides: Iterable[str]) -> list[str]:
    """``key=value`` overrides as a list, each checked for its ``=``."""
    if isinstance(overrides, str):
        raise TypeError("overrides must be a sequence of 'key=value' strings, not one string")
    if isinstance(overrides, dict) or not isinstance(overrides, Iterable):
        raise TypeError(f"overrides must be a sequence of 'key=value' strings, got "
                        f"{type(overrides).__name__}")
    out = []
    for item in overrides:
        if not isinstance(item, str):
            raise TypeError(f"overrides must be 'key=value' strings, got {item!r}")
        key, sep, _ = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"bad override {item!r}: expected key=value")
        out.append(item)
    return out


def check_flags(**flags: Any) -> None:
    """Each keyword is a flag that must be True or False (None too for ``progress``, where
    it means "on a terminal"): ``fresh="no"`` is truthy and would discard a sweep's runs."""
    for name, value in flags.items():
        if not isinstance(value, bool) and not (name == "progress" and value is None):
            allowed = "True, False or None" if name == "progress" else "True or False"
            raise TypeError(f"{name} must be {allowed}, got {value!r}")


def check_outdir(out: Any, what: str = "out") -> None:
    """A results directory argument is a path (str or os.PathLike; an empty one is refused
    where the directory is claimed, with the command line's words)."""
    if not isinstance(out, str | os.PathLike):
        raise TypeError(f"{what} must be a directory path, got {type(out).__name__}")


def check_seed(seed: int | None, what: str = "seed") -> None:
    """Seeds are integers in [0, 2^63 - 1] (they are stored as int64)."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"{what}: must be an integer, got {seed!r}")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"{what}: must be in [0, {MAX_SEED}], got {seed}")


def validate(scenario: ScenarioSource, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Validate a scenario and return it resolved (all defaults filled) as a dict.

    Raises ``ScenarioError`` with a ``field.path: problem`` message when it is invalid.
    """
    text, base_dir = read_scenario(scenario)
    return json.loads(_core.resolve(text, overrides_list(overrides), base_dir))


def profile_notes(scenario: ScenarioSource, overrides: Iterable[str] = ()) -> list[dict[str, Any]]:
    """What each flow's ``profile`` resolved to, key by key: dicts with ``flow``, ``profile``,
    ``key`` (``tcp.variant``, ``cc``...), ``profile_value`` and ``file_value`` (the value the
    file or an override sets itself, which wins; None when the profile's value is used)."""
    text, _ = read_scenario(scenario)
    return json.loads(_core.profile_notes(text, overrides_list(overrides)))


def format_profile_notes(notes: list[dict[str, Any]]) -> list[str]:
    """``spikelab validate``'s lines for :func:`profile_notes`: one block per flow."""
    lines: list[str] = []
    last = None
    for n in notes:
        if (n["flow"], n["profile"]) != last:
            last = (n["flow"], n["profile"])
            lines.append(f"flow[{n['flow']}]: profile {n['profile']!r} resolves to")
        if n.get("not_applied"):
            lines.append(f"  {n['key']} = false   (the profile's {n['profile_value']} "
                         f"{n['not_applied']})")
        elif n["file_value"] is None:
            lines.append(f"  {n['key']} = {n['profile_value']}")
        else:
            lines.append(f"  {n['key']} = {n['file_value']}   (set in the file or by --set: wins "
                         f"over the profile's {n['profile_value']})")
    return lines
