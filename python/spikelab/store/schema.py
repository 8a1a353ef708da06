"""The result tables' columns as the core's schema describes them (``spikelab_sim::schema``):
type, unit, one-line description and whether a value may be null (does not apply).

Tables that come from the core carry the unit and description as field metadata already
(:mod:`.arrow`); :func:`annotate` gives them to tables built on the Python side (an emulated
run's time series, a sweep's parts with their ``run_id`` and parameter columns), so every
column of every results file says what it holds.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from .. import _core

TABLES = ("runs", "timeseries", "packets")


@functools.cache
def columns(table: str) -> tuple[dict[str, Any], ...]:
    """The core's column specs of ``table`` (``runs``, ``timeseries``, ``packets``, or
    ``sweep``: the columns a sweep adds): dicts with ``name`` (a pattern may hold ``<d>`` or
    ``<path>_<stage>``), ``type``, ``unit``, ``description`` and ``nullable``."""
    return tuple(_core.table_schema(table))


@functools.cache
def meta(table: str, column: str) -> tuple[str, str] | None:
    """(unit, description) of ``column`` of ``table`` (a sweep's own columns too), or None."""
    found = _core.column_meta(table, column)
    if found is None and table in TABLES:
        found = _core.column_meta("sweep", column)
    return None if found is None else (found[0], found[1])


def param_meta(key: str) -> tuple[str, str]:
    """(unit, description) of a swept parameter's column that sets scenario field ``key``."""
    return "", f"swept parameter: the scenario's {key} (in that field's unit)"


def has_meta(field: pa.Field) -> bool:
    m = field.metadata or {}
    return b"unit" in m and b"description" in m


def annotate(table: pa.Table, kind: str,
             extra: Mapping[str, tuple[str, str]] | None = None) -> pa.Table:
    """``table`` (columns and data unchanged) with a unit and a description on every field
    that lacks them: from ``extra`` (column -> (unit, description)), else the core's schema
    of table ``kind`` and the columns a sweep adds. A field that has them keeps its own."""
    extra = extra or {}
    fields = []
    changed = False
    for f in table.schema:
        if not has_meta(f):
            found = extra.get(f.name) or (meta(kind, f.name) if kind else None)
            if found is not None:
                unit, description = found
                f = f.with_metadata({**(f.metadata or {}), b"unit": unit.encode(),
                                     b"description": description.encode()})
                changed = True
        fields.append(f)
    if not changed:
        return table
    return pa.Table.from_arrays(table.columns,
                                schema=pa.schema(fields, metadata=table.schema.metadata))


def describe(table: pa.Table, columns: Mapping[str, tuple[str, str]], what: str) -> pa.Table:
    """``table`` with each column's (unit, description) from ``columns``, which must name
    every column: a table of its own kind (a fidelity suite's, the RTO study's, TCP_INFO
    samples) says what each column holds, and a column added without saying so fails here,
    naming ``what`` and the column, rather than leaving a file without its metadata."""
    missing = [f.name for f in table.schema if not has_meta(f) and f.name not in columns]
    if missing:
        raise ValueError(f"{what}: no unit and description for column(s) {', '.join(missing)}")
    return annotate(table, "", columns)


def pattern(name: str) -> re.Pattern[str]:
    """A spec name as a regular expression (``<d>`` a detector, ``<path>_<stage>`` a stage)."""
    rx = re.escape(name).replace(re.escape("<d>"), "(eifel|dsack|frto|linux)")
    rx = rx.replace(re.escape("<path>_<stage>"), "[a-z0-9]+_[a-z0-9_]+")
    return re.compile(rx)
