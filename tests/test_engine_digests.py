"""The engine moves no number: every example's tables, at its own trace level and at
``packets``, digest as recorded in tests/data/engine-digests.json (scripts/engine_digests.py;
docs/models.md, "Engine digests"). A change meant to move numbers rewrites that file with
``python3 scripts/engine_digests.py`` and says so in its commit."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("engine_digests",
                                               ROOT / "scripts" / "engine_digests.py")
digests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(digests)

RECORDED = json.loads(digests.EXAMPLE_DIGESTS.read_text())


@pytest.fixture(scope="module")
def computed() -> dict:
    return digests.example_digests()


def test_every_example_is_recorded():
    names = {f"{p.name}@" for p in digests.EXAMPLES.glob("*.toml")}
    assert {k.split("@")[0] + "@" for k in RECORDED} == names


def test_tables_digest_as_recorded(computed):
    strip = {k: {t: v for t, v in e.items() if t != "events"} for k, e in computed.items()}
    want = {k: {t: v for t, v in e.items() if t != "events"} for k, e in RECORDED.items()}
    assert digests.differences(want, strip) == []


def test_event_counts_as_recorded(computed):
    assert {k: e["events"] for k, e in computed.items()} == \
        {k: e["events"] for k, e in RECORDED.items()}


def test_summary_is_the_same_at_every_trace_level():
    for name, entry in RECORDED.items():
        if name.endswith("@packets"):
            continue
        assert entry["runs"] == RECORDED[name.split("@")[0] + "@packets"]["runs"], name


def test_digest_sees_a_changed_value_order_and_nan_payload():
    base = pa.table({"a": pa.array([1.0, float("nan")]), "b": pa.array(["x", None])})
    d = digests.table_digest(base)
    assert digests.table_digest(pa.table({"a": [1.0, 2.0], "b": base["b"]})) != d
    assert digests.table_digest(base.take([1, 0])) != d
    assert digests.table_digest(base.take([1, 0]), sort_by=("a",)) == \
        digests.table_digest(base, sort_by=("a",))
    assert digests.table_digest(pa.table({"a": base["a"], "b": ["x", ""]})) != d
    other_nan = pa.array([1.0, -float("nan")])
    assert digests.table_digest(pa.table({"a": other_nan, "b": base["b"]})) == d
    dict_b = base["b"].combine_chunks().dictionary_encode()
    assert digests.table_digest(pa.table({"a": base["a"], "b": dict_b})) == d


def test_a_nan_number_is_the_same_nan():
    want = {"claim:x": {"status": "holds", "numbers": {"ci": float("nan"), "n": 3}}}
    got = {"claim:x": {"status": "holds", "numbers": {"ci": float("nan"), "n": 3}}}
    assert digests.differences(want, got) == []
    got["claim:x"]["numbers"]["n"] = 4
    assert digests.differences(want, got) == ["claim:x.numbers.n: recorded 3, now 4"]
