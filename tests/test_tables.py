"""Core TABLE dicts -> pyarrow, with hand-made tables (no simulation needed)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import core_table
from spikelab.store.arrow import to_arrow


def test_numeric_columns_keep_type_order_and_values():
    table = to_arrow(core_table(
        ("t_ns", "int64", [3, 2**40, -1]),
        ("flow", "int32", [0, 1, 2]),
        ("value", "float64", [0.5, math.inf, math.nan]),
    ))
    assert table.column_names == ["t_ns", "flow", "value"]
    assert table.schema.types == [pa.int64(), pa.int32(), pa.float64()]
    assert table["t_ns"].to_pylist() == [3, 2**40, -1]
    assert table["flow"].to_pylist() == [0, 1, 2]
    value = table["value"].to_numpy()
    assert value[0] == 0.5 and value[1] == math.inf and math.isnan(value[2])
    assert table["value"].null_count == 0  # NaN is a value, not a null


def test_dict_column_stays_encoded_and_code_minus_one_is_null():
    raw = {"num_rows": 4, "columns": [{
        "name": "cause", "type": "dict", "dictionary": ["queue_full", "random"],
        "data": np.array([1, -1, 0, -1], "<i4").tobytes(),
    }]}
    column = to_arrow(raw)["cause"]
    assert pa.types.is_dictionary(column.type)
    assert column.type.index_type == pa.int32()
    assert column.to_pylist() == ["random", None, "queue_full", None]
    assert column.null_count == 2


def test_empty_table_has_columns_and_types():
    table = to_arrow(core_table(("t_ns", "int64", []), ("event", "dict", [])))
    assert table.num_rows == 0
    assert table.column_names == ["t_ns", "event"]
    assert pa.types.is_dictionary(table.schema.field("event").type)


def test_dict_survives_parquet_round_trip(tmp_path):
    table = to_arrow(core_table(("kind", "dict", ["data", "ack", None, "data"])))
    pq.write_table(table, tmp_path / "t.parquet")
    back = pq.read_table(tmp_path / "t.parquet")
    assert pa.types.is_dictionary(back.schema.field("kind").type)
    assert back.equals(table)


@pytest.mark.parametrize("raw, message", [
    ({"num_rows": 2, "columns": [{"name": "x", "type": "int64", "data": b"\0" * 8}]},
     "8 bytes of data for 2 rows"),
    ({"num_rows": 1, "columns": [{"name": "x", "type": "uint8", "data": b"\0"}]},
     "unknown type"),
    ({"num_rows": 1, "columns": [{"name": "x", "type": "dict", "dictionary": ["a"],
                                  "data": np.array([1], "<i4").tobytes()}]},
     "out of range"),
])
def test_malformed_tables_are_rejected(raw, message):
    with pytest.raises(ValueError, match=message):
        to_arrow(raw)
