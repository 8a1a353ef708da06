"""Values of a resolved scenario (``"24500us"``, ``"10000000bps"``, ``1448000``) as numbers."""

from __future__ import annotations

import re
from typing import Any

_TIME = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_RATE = {"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12, "bit/s": 1,
         "kbit/s": 1e3, "mbit/s": 1e6, "gbit/s": 1e9, "tbit/s": 1e12}
_BYTES = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024, "mib": 1024 ** 2,
          "gib": 1024 ** 3}
_NUM = re.compile(r"\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-zµ/]*)\s*")


class Unreadable(ValueError):
    """A value the writer cannot read (the resolved scenario is not what it expects)."""


def _split(value: Any, where: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise Unreadable(f"{where}: expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value), ""
    m = _NUM.fullmatch(str(value))
    if not m:
        raise Unreadable(f"{where}: cannot read {value!r}")
    return float(m.group(1)), m.group(2)


def seconds(value: Any, where: str) -> float:
    """A duration in seconds (a bare number is seconds)."""
    x, unit = _split(value, where)
    if unit == "":
        return x
    if unit not in _TIME:
        raise Unreadable(f"{where}: unknown time unit in {value!r}")
    return x * _TIME[unit]


def bits_per_second(value: Any, where: str) -> float:
    x, unit = _split(value, where)
    if unit == "":
        return x
    if unit.lower() not in _RATE:
        raise Unreadable(f"{where}: unknown rate unit in {value!r}")
    return x * _RATE[unit.lower()]


def nbytes(value: Any, where: str) -> int:
    x, unit = _split(value, where)
    if unit and unit.lower() not in _BYTES:
        raise Unreadable(f"{where}: unknown byte unit in {value!r}")
    return round(x * _BYTES.get(unit.lower(), 1))
