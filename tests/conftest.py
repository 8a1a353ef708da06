"""Shared fixtures: core-format TABLE dicts built by hand, and the example scenarios."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from spikelab.store.arrow import to_arrow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
_DTYPES = {"int64": "<i8", "int32": "<i4", "float64": "<f8"}

# How soon an interrupted command must have exited, in wall-clock seconds. On an idle 2-core
# machine a run stops 0.03-0.05 s after the signal and a sweep or study well under a second;
# a shared CI machine once took 1.4 s for a run, so the bound leaves room for a busy host. What
# the interrupt tests pin is that the command stops at once instead of running on: each of them
# starts work that would take far longer than this uninterrupted, and also checks (reached_s,
# runs kept) that the work was cut short.
PROMPT_EXIT_S = 5.0


def core_table(*columns: tuple) -> dict:
    """A TABLE dict as the Rust core hands it over.

    Each column is ``(name, type, values)``; dict columns give string values (None = null)
    and the dictionary is built from them in order of first appearance.
    """
    out, num_rows = [], 0
    for name, kind, values in columns:
        num_rows = len(values)
        if kind == "dict":
            dictionary = list(dict.fromkeys(v for v in values if v is not None))
            codes = [-1 if v is None else dictionary.index(v) for v in values]
            out.append({"name": name, "type": "dict", "dictionary": dictionary,
                        "data": np.asarray(codes, "<i4").tobytes()})
        else:
            out.append({"name": name, "type": kind,
                        "data": np.asarray(values, _DTYPES[kind]).tobytes()})
    return {"num_rows": num_rows, "columns": out}


MSS = 1000


def synthetic_tables() -> dict:
    """One flow: 4 segments, the 2nd dropped and retransmitted after a spurious-free RTO."""
    runs = core_table(
        ("flow", "int32", [0]), ("seed", "int64", [7]), ("goodput_bps", "float64", [3200.0]),
        ("bytes_delivered", "int64", [4000]), ("rto_count", "int64", [1]),
        ("rto_spurious_true", "int64", [0]), ("fast_retx_count", "int64", [1]),
        ("fast_retx_spurious_true", "int64", [1]), ("retx_segments", "int64", [2]),
        ("spurious_retx_true", "int64", [1]), ("dupacks_rcvd", "int64", [2]),
        ("segments_sent", "int64", [6]), ("rtt_mean_s", "float64", [0.1]),
        ("rtt_sd_s", "float64", [0.0]), ("rtt_samples", "int64", [3]),
        ("longest_stall_s", "float64", [1.0]), ("completion_time_s", "float64", [math.nan]),
        ("mss", "int64", [MSS]), ("dsacks_rcvd", "int64", [0]),
        ("drops_fwd_queue", "int64", [1]), ("drops_total", "int64", [1]),
    )
    s = 1_000_000_000
    ts_rows = [
        (0, "cwnd", 2.0 * MSS), (0, "ssthresh", math.inf), (0, "rto", 1.0),
        (s // 10, "rtt_sample", 0.1), (s // 10, "srtt", 0.1), (s // 10, "cwnd", 3.0 * MSS),
        (s // 5, "fast_retx", 1.0), (s // 5, "ssthresh", 2.0 * MSS),
        (s, "rto_expiry", 0.0), (s, "cwnd", 1.0 * MSS), (s, "rto", 2.0),
        (2 * s, "rtt_sample", 0.12), (2 * s, "srtt", 0.11), (2 * s, "cwnd", 2.0 * MSS),
    ]
    timeseries = core_table(
        ("t_ns", "int64", [r[0] for r in ts_rows]), ("flow", "int32", [0] * len(ts_rows)),
        ("var", "dict", [r[1] for r in ts_rows]), ("value", "float64", [r[2] for r in ts_rows]),
    )
    # (t_ns, event, path, stage, kind, seq, ack, len, tx, cause)
    pk_rows = [
        (0, "send", "fwd", None, "data", 0, 0, MSS, 0, None),
        (1, "send", "fwd", None, "data", MSS, 0, MSS, 0, None),
        (2, "drop", "fwd", "queue", "data", MSS, 0, MSS, 0, "queue_full"),
        (s // 20, "deliver", "fwd", None, "data", 0, 0, MSS, 0, None),
        (s // 20, "ack", "rev", None, "ack", 0, MSS, 0, -1, None),
        (s // 10, "deliver", "rev", None, "ack", 0, MSS, 0, -1, None),
        (s, "retransmit", "fwd", None, "data", MSS, 0, MSS, 1, None),
        (s + s // 20, "deliver", "fwd", None, "data", MSS, 0, MSS, 1, None),
        (s + s // 20, "ack", "rev", None, "ack", 0, 2 * MSS, 0, -1, None),
        (s + s // 10, "deliver", "rev", None, "ack", 0, 2 * MSS, 0, -1, None),
    ]
    col = lambda i: [r[i] for r in pk_rows]  # noqa: E731
    packets = core_table(
        ("t_ns", "int64", col(0)), ("flow", "int32", [0] * len(pk_rows)),
        ("pkt", "int64", list(range(len(pk_rows)))), ("event", "dict", col(1)),
        ("path", "dict", col(2)), ("stage", "dict", col(3)), ("kind", "dict", col(4)),
        ("seq", "int64", col(5)), ("ack", "int64", col(6)), ("len", "int32", col(7)),
        ("size", "int32", [n + 52 for n in col(7)]), ("tx", "int32", col(8)),
        ("cause", "dict", col(9)),
    )
    return {"runs": to_arrow(runs), "timeseries": to_arrow(timeseries),
            "packets": to_arrow(packets)}


@pytest.fixture
def tables() -> dict:
    return synthetic_tables()


@pytest.fixture
def synthetic_result(tables):
    """A RunResult built from synthetic tables, as if a packet-traced run returned them."""
    from spikelab.store.results import new_manifest
    from spikelab.store.run import RunResult

    manifest = new_manifest({"sim": {"duration": 3.0}}, 7, "packets", 3.0, 0.01, 42)
    return RunResult(**tables, scenario={"sim": {"duration": 3.0}}, seed=7, trace="packets",
                     duration_s=3.0, wall_s=0.01, events=42, manifest=manifest)


@pytest.fixture(scope="session")
def lte_handover() -> Path:
    return EXAMPLES / "lte-handover.toml"


@pytest.fixture(scope="session")
def lte_handover_lossless() -> Path:
    return EXAMPLES / "lte-handover-lossless.toml"


def pytest_addoption(parser):
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help="run the scenario fuzzer on many more seeds (minutes)")
