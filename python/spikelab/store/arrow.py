"""Columnar tables from the Rust core -> pyarrow, without a Python object per value.

The core hands over each table as ``{"num_rows": n, "columns": [{"name", "type", "data",
"dictionary"?}, ...]}`` where ``data`` holds ``n`` little-endian packed values. Dictionary
columns carry int32 codes into ``dictionary``; code -1 is null. They stay dictionary-encoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

_NUMERIC = {
    "int64": np.dtype("<i8"),
    "int32": np.dtype("<i4"),
    "float64": np.dtype("<f8"),
}
_ARROW = {"int64": pa.int64(), "int32": pa.int32(), "float64": pa.float64()}


# Arrays are built from buffers (zero-copy), not with ``pa.array``: that entry point checks
# whether its argument is a pandas object and so imports pandas (~0.17 s of a run's start-up).


def _values(data: bytes, dtype: np.dtype, n: int, name: str) -> np.ndarray:
    if len(data) != n * dtype.itemsize:
        raise ValueError(
            f"column {name!r}: {len(data)} bytes of data for {n} rows of {dtype.itemsize} bytes"
        )
    # Zero-copy on little-endian hosts; a byte swap elsewhere.
    return np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("="), copy=False)


def _column(col: Mapping[str, Any], n: int) -> pa.Array:
    name, kind = col["name"], col["type"]
    if kind == "dict":
        codes = _values(col["data"], _NUMERIC["int32"], n, name)
        dictionary = _strings(col["dictionary"])
        if n and (codes.max() >= len(dictionary) or codes.min() < -1):
            raise ValueError(f"column {name!r}: dictionary code out of range")
        valid = codes >= 0
        nulls = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
        indices = pa.Array.from_buffers(pa.int32(), n, [nulls, pa.py_buffer(codes)])
        return pa.DictionaryArray.from_arrays(indices, dictionary)
    if kind not in _NUMERIC:
        raise ValueError(f"column {name!r}: unknown type {kind!r}")
    values = _values(col["data"], _NUMERIC[kind], n, name)
    return pa.Array.from_buffers(_ARROW[kind], n, [None, pa.py_buffer(values)])


def _strings(words: list[str]) -> pa.Array:
    """A utf-8 string array from Python strings (offsets and bytes as Arrow lays them out)."""
    encoded = [w.encode() for w in words]
    offsets = np.zeros(len(encoded) + 1, dtype="<i4")
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def to_arrow(table: Mapping[str, Any]) -> pa.Table:
    """Convert one core TABLE dict to a ``pyarrow.Table``, columns in the order given."""
    n = int(table["num_rows"])
    columns = table["columns"]
    return pa.table(
        [_column(col, n) for col in columns], names=[col["name"] for col in columns]
    )


_REPEAT = {"int64": (np.dtype("<i8"), pa.int64()), "int32": (np.dtype("<i4"), pa.int32()),
           "float64": (np.dtype("<f8"), pa.float64())}


def repeat(value: Any, kind: str, n: int) -> pa.Array:
    """``n`` copies of ``value`` as an array of ``kind`` (``string``, ``int64``, ``int32``,
    ``float64``, ``bool``; ``None`` gives nulls), built from buffers as above: a sweep's
    process writes a few such columns per run and so never needs pandas."""
    if value is None:
        return pa.nulls(n, {"string": pa.string(), "bool": pa.bool_(),
                            **{k: t for k, (_, t) in _REPEAT.items()}}[kind])
    if kind == "string":
        return _strings([str(value)] * n)
    if kind == "bool":
        bits = np.packbits(np.full(n, bool(value)), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
    dtype, arrow = _REPEAT[kind]
    values = np.full(n, value, dtype=dtype).astype(dtype.newbyteorder("="), copy=False)
    return pa.Array.from_buffers(arrow, n, [None, pa.py_buffer(values)])
