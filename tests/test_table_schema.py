"""Tables without sentinels (docs/results.md, "Nulls, units and descriptions"): a value that
does not apply is null, never -1, 0 or NaN standing in for "none"; every column of every
results file carries its unit and description as Parquet field metadata."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import spikelab
from spikelab.store import schema

# TCP (Eifel on) and SCTP over one path whose last stage is HARQ: every kind of row (data,
# ACK, SCTP control and heartbeat, HARQ exits and drops, markers, verdicts) in 3 s.
MIXED = """
[sim]
duration = "3s"
trace = "packets"

[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "10Mbps"
queue = 50
[[path.fwd.stage]]
type = "delay"
delay = "20ms"
[[path.fwd.stage]]
type = "harq"
snr = 4

[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "20ms"

[[flow]]
[flow.tcp]
spurious = ["eifel"]

[[flow]]
protocol = "sctp"
start = "0.2s"
"""

BULK_SWEEP = """
[sim]
duration = "1s"

[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "10Mbps"
queue = 50
[[path.fwd.stage]]
type = "delay"
delay = "20ms"

[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "20ms"

[[flow]]
cc = "reno"

[sweep]
replications = 2
trace = "packets"
[sweep.params]
"flow.tcp.variant" = ["reno", "sack"]
"""


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mixed") / "run"
    spikelab.run(MIXED, out=out, plots=False, progress=False)
    return out


@pytest.fixture(scope="module")
def bulk_sweep(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bulk")
    (d / "s.toml").write_text(BULK_SWEEP)
    spikelab.sweep(d / "s.toml", d / "out", jobs=1, progress=False)
    return d / "out"


def _tables(outdir: Path) -> dict[str, pa.Table]:
    return {name: pq.read_table(outdir / f"{name}.parquet") for name in schema.TABLES}


def test_no_column_holds_a_sentinel(mixed):
    """No integer column holds -1, no float column NaN; the time series' value is -1.0 only
    where it is a verdict (undecided, a real state)."""
    tables = _tables(mixed)
    assert tables["packets"].num_rows > 1000 and tables["runs"].num_rows == 2
    for name, table in tables.items():
        var = (table["var"].cast(pa.string()) if name == "timeseries" else None)
        for field in table.schema:
            col = table[field.name]
            if pa.types.is_integer(field.type):
                assert not pc.any(pc.equal(col, -1)).as_py(), f"{name}.{field.name} holds -1"
            elif pa.types.is_floating(field.type):
                assert not pc.any(pc.is_nan(col)).as_py(), f"{name}.{field.name} holds NaN"
                if var is not None:
                    minus = pc.equal(col, -1.0)
                    verdict = pc.starts_with(var, "verdict_")
                    assert not pc.any(pc.and_(minus, pc.invert(verdict))).as_py()


def test_values_that_do_not_apply_are_null_and_the_others_are_not(mixed):
    tables = _tables(mixed)
    tcp, sctp = tables["runs"].to_pylist()
    assert (tcp["transport"], sctp["transport"]) == ("tcp", "sctp")
    # SCTP-only columns of the TCP flow, TCP-only ones of the SCTP flow, detectors off.
    assert tcp["failovers"] is None and tcp["setup_time_s"] is None
    assert tcp["failover_at_s"] is None and tcp["time_to_failover_s"] is None
    assert sctp["failovers"] is not None and sctp["setup_time_s"] > 0
    assert sctp["dupacks_rcvd"] is None and sctp["spurious"] is None
    assert sctp["det_eifel_tp"] is None and sctp["timeout_time_s"] is None
    assert tcp["dupacks_rcvd"] is not None and tcp["spurious"] == "eifel"
    assert tcp["det_eifel_tp"] is not None and tcp["det_dsack_tp"] is None
    assert tcp["completion_time_s"] is None  # a bulk flow
    pk = tables["packets"]
    kind, flow = pk["kind"].cast(pa.string()), pk["flow"]
    tcp_rows = pc.equal(flow, 0)
    # TCP: an ACK carries no data (no seq, no tx), a data segment no ACK; no destination.
    acks = pk.filter(pc.and_(tcp_rows, pc.equal(kind, "ack")))
    data = pk.filter(pc.and_(tcp_rows, pc.equal(kind, "data")))
    assert acks.num_rows and data.num_rows
    assert acks["seq"].null_count == acks["tx"].null_count == acks.num_rows
    assert acks["ack"].null_count == 0 and data["seq"].null_count == 0
    assert data["ack"].null_count == data.num_rows
    assert pk.filter(tcp_rows)["dest"].null_count == pk.filter(tcp_rows).num_rows
    assert pk.filter(pc.equal(flow, 1))["dest"].null_count == 0
    # HARQ columns: set on a harq stage's exits and drops, null elsewhere.
    harq = pk.filter(pc.is_valid(pk["harq_tx"]))
    assert harq.num_rows and pc.min(harq["harq_tx"]).as_py() >= 1
    assert set(harq["event"].cast(pa.string()).unique().to_pylist()) <= {"stage_exit", "drop"}
    assert pk["harq_delay_us"].null_count == pk["harq_tx"].null_count
    ts = tables["timeseries"]
    markers = pc.is_in(ts["var"].cast(pa.string()),
                       value_set=pa.array(["rto_expiry", "fast_retx", "verdict_eifel", "undo"]))
    assert ts.filter(pc.invert(markers))["seq"].null_count == ts.filter(
        pc.invert(markers)).num_rows


def _parquet_files(outdir: Path) -> list[Path]:
    """Every Parquet file of a results directory (a sweep's trace tables are folders of
    block files; its spool and index under parts/ are not the dataset)."""
    return sorted(p for p in outdir.rglob("*.parquet")
                  if p.is_file() and p.relative_to(outdir).parts[0] != "parts")


def test_every_column_of_every_file_has_a_unit_and_a_description(mixed, bulk_sweep):
    files = _parquet_files(mixed) + _parquet_files(bulk_sweep)
    names = {p.relative_to(p.parents[1] if p.parent.name.endswith(".parquet") else p.parent)
             .parts[0] for p in files}
    assert names == {f"{n}.parquet" for n in schema.TABLES}, files
    for path in files:
        for field in pq.read_schema(path):
            meta = field.metadata or {}
            assert b"unit" in meta, f"{path.name}: {field.name} has no unit"
            assert meta.get(b"description"), f"{path.name}: {field.name} has no description"
    sweep_runs = pq.read_schema(bulk_sweep / "runs.parquet")
    assert sweep_runs.field("variant").metadata[b"description"].decode().endswith(
        "flow.tcp.variant (in that field's unit)")
    packets = next((bulk_sweep / "packets.parquet").glob("*.parquet"))
    assert sweep_runs.field("run_id").metadata[b"description"] == \
        pq.read_schema(packets).field("run_id").metadata[b"description"]
    assert sweep_runs.field("completion_time_s").metadata[b"unit"] == b"s"


def test_duckdb_averages_skip_what_does_not_apply(bulk_sweep, mixed):
    """The acceptance line: over a sweep of bulk flows avg(completion_time_s) is NULL, not
    NaN; avg(failovers) over TCP and SCTP flows is the SCTP flows' average."""
    duckdb = pytest.importorskip("duckdb")
    runs = str(bulk_sweep / "runs.parquet")
    con = duckdb.connect()
    got = con.execute(f"SELECT avg(completion_time_s), count(completion_time_s), count(*), "
                  f"avg(goodput_bps) FROM '{runs}'").fetchone()
    assert got[0] is None and got[1] == 0 and got[2] == 4 and got[3] > 1e6
    mixed_runs = str(mixed / "runs.parquet")
    avg, sctp = con.execute(f"SELECT avg(failovers), max(failovers) FILTER (WHERE transport = "
                        f"'sctp') FROM '{mixed_runs}'").fetchone()
    assert avg == sctp


def test_the_core_schema_describes_every_column_it_writes(mixed):
    """The registry (spikelab_sim::schema) and the files agree: types, units, nullability."""
    for name, table in _tables(mixed).items():
        specs = schema.columns(name)
        for field in table.schema:
            spec = next(s for s in specs if schema.pattern(s["name"]).fullmatch(field.name))
            assert field.metadata[b"unit"].decode() == spec["unit"], field.name
            if table[field.name].null_count:
                assert spec["nullable"], f"{name}.{field.name} has nulls the schema denies"
    assert {s["name"] for s in schema.columns("sweep")} == {
        "run_id", "point", "replication", "status", "error"}
    with pytest.raises(ValueError, match="table: must be"):
        schema.columns("nope")


def test_annotate_keeps_data_and_existing_metadata():
    t = pa.table({"flow": pa.array([0, 1], pa.int32()), "mine": [1.0, math.inf],
                  "run_id": ["a", "b"]})
    out = schema.annotate(t, "runs", {"mine": ("bits", "a column of my own")})
    assert out.equals(t)
    assert out.schema.field("flow").metadata[b"description"].startswith(b"flow index")
    assert out.schema.field("mine").metadata == {b"unit": b"bits",
                                                 b"description": b"a column of my own"}
    assert out.schema.field("run_id").metadata[b"unit"] == b""
    again = schema.annotate(out, "runs", {"mine": ("x", "y")})
    assert again.schema.field("mine").metadata[b"unit"] == b"bits"


def test_emulated_time_series_has_nulls_and_metadata():
    """An emulated run's time series is put together in Python: markers without a
    retransmission and the series rows have null seq/tx, and no row a destination."""
    from spikelab.emulate.tables import _timeseries_table

    ts = {"t_ns": [5, 1], "flow": [0, 0], "var": ["cwnd", "srtt"], "value": [1448.0, 0.1]}
    markers = {"t_ns": [3, 4], "flow": [0, 0], "var": ["rto_expiry", "fast_retx"],
               "value": [1.0, 0.0], "seq": [1448, -1], "tx": [1, -1]}
    cap = pa.table({"t_ns": pa.array([2], pa.int64()), "flow": pa.array([0], pa.int32()),
                    "var": pa.array(["rtt_sample"]).dictionary_encode(),
                    "value": pa.array([0.05])})
    out = _timeseries_table(ts, markers, cap)
    assert out["t_ns"].to_pylist() == [1, 2, 3, 4, 5]
    assert out["seq"].to_pylist() == [None, None, 1448, None, None]
    assert out["tx"].to_pylist() == [None, None, 1, None, None]
    assert out["dest"].null_count == 5
    assert all(schema.has_meta(f) for f in out.schema)


def _all_described(path: Path) -> None:
    for field in pq.read_schema(path):
        meta = field.metadata or {}
        assert b"unit" in meta and meta.get(b"description"), f"{path.name}: {field.name}"


def test_the_fidelity_suites_tables_describe_every_column(tmp_path):
    """fidelity.parquet of the kernel, usrsctp and ns-2 suites: every column's unit and
    description; a column the suite does not describe is refused, naming it."""
    from spikelab.fidelity import suite
    from spikelab.fidelity.ns2 import suite as ns2_suite

    tables = {
        "kernel": suite.long_table([], lambda o: (), reference="kernel",
                                   extra={"kernel_release": "6.18"}),
        "usrsctp": suite.long_table([], lambda o: (), reference="usrsctp",
                                    extra={"usrsctp_version": "0.9.5"}),
        "ns2": ns2_suite.table([]),
    }
    for name, tab in tables.items():
        out = tmp_path / name
        out.mkdir()
        suite.write_files(out, tab, "report", {"kind": "fidelity"})
        _all_described(out / suite.TABLE)
        field = pq.read_schema(out / suite.TABLE).field(name)
        assert field.metadata[b"description"].decode().startswith(
            {"kernel": "the Linux kernel's", "usrsctp": "usrsctp's", "ns2": "ns-2.35's"}[name])
    with pytest.raises(ValueError, match=r"^fidelity table: no unit and description for "
                                         r"column\(s\) extra_col$"):
        suite.write_files(tmp_path, tables["ns2"].append_column("extra_col", pa.array([], pa.int64())),
                          "report", {})
    assert not (tmp_path / suite.TABLE).exists()  # nothing half-written


def test_the_rto_study_tables_describe_every_column(tmp_path):
    from spikelab.analysis import rto_study

    res = rto_study.run(rto_study.load_trace("wlan-walkaway"), out=tmp_path / "rto")
    for name in (rto_study.TABLE, rto_study.SERIES):
        _all_described(res.dir / name)
    field = pq.read_schema(res.dir / rto_study.TABLE).field("spurious_s")
    assert field.metadata[b"unit"] == b"s"


def test_tcp_info_samples_have_metadata_and_null_where_the_kernel_gave_nothing():
    """emulation/tcp_info.parquet: the kernel's units per field; a field an older kernel did
    not fill and an unreadable socket queue are null, not 0 or -1."""
    from spikelab.emulate import tables, tcpinfo
    from spikelab.emulate._endpoint import SAMPLE_FIELDS

    fields = ["t_ns", *SAMPLE_FIELDS, "in_flight_bytes"]
    sample = [1_000, *range(1, len(SAMPLE_FIELDS) + 1), -1]
    short = tcpinfo.OFFSETS["total_rto"]  # a kernel whose struct ends before total_rto
    raw = {"t0_ns": 0, "sender": {"fields": fields, "flows": [
        {"samples": [sample], "tcp_info_bytes": tcpinfo.SIZE},
        {"samples": [[2_000, *sample[1:-1], 5_000]], "tcp_info_bytes": short}]}}
    tab = tables.tcp_info_table(raw)
    assert all(schema.has_meta(f) for f in tab.schema)
    assert tab.schema.field("rtt").metadata[b"unit"] == b"us"
    assert tab["in_flight_bytes"].to_pylist() == [None, 5_000]
    assert tab["total_rto"].to_pylist()[0] == SAMPLE_FIELDS.index("total_rto") + 1
    assert tab["total_rto"].to_pylist()[1] is None and tab["rtt"].null_count == 0


def test_usrsctp_samples_have_metadata():
    """emulation/sctp_status.parquet: usrsctp's SCTP_STATUS and counters, each with its unit."""
    from spikelab.emulate import tables
    from spikelab.emulate._sctp_endpoint import SAMPLE_FIELDS

    raw = {"t0_ns": 0, "sender": {"fields": list(SAMPLE_FIELDS), "flows": [
        {"samples": [[1_000, *range(1, len(SAMPLE_FIELDS))]]}]}}
    tab = tables.tcp_info_table(raw)
    assert all(schema.has_meta(f) for f in tab.schema)
    assert tab.schema.field("srtt_ms").metadata[b"unit"] == b"ms"
    assert tab.schema.field("timodata").metadata[b"unit"] == b"timeouts"
