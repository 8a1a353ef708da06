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
        dictionary = pa.array(col["dictionary"], type=pa.string())
        if n and (codes.max() >= len(dictionary) or codes.min() < -1):
            raise ValueError(f"column {name!r}: dictionary code out of range")
        return pa.DictionaryArray.from_arrays(codes, dictionary, mask=codes < 0)
    if kind not in _NUMERIC:
        raise ValueError(f"column {name!r}: unknown type {kind!r}")
    return pa.array(_values(col["data"], _NUMERIC[kind], n, name))


def to_arrow(table: Mapping[str, Any]) -> pa.Table:
    """Convert one core TABLE dict to a ``pyarrow.Table``, columns in the order given."""
    n = int(table["num_rows"])
    columns = table["columns"]
    return pa.table(
        [_column(col, n) for col in columns], names=[col["name"] for col in columns]
    )
