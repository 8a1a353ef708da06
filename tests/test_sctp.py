"""SCTP flows through the command line and the Python API: the walk-away example fails over to
the wired path (paper 004's set-up), its tables and destination figure are written, an SCTP
association and a TCP flow share one bottleneck, and bad SCTP input is a one-line error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import spikelab

ROOT = Path(__file__).resolve().parent.parent


def spikelab_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "spikelab", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_the_walkaway_example_fails_over_to_the_wired_path(tmp_path):
    proc = spikelab_cli("run", ROOT / "examples" / "sctp-walkaway.toml", "-o", "out",
                        cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    runs = pq.read_table(out / "runs.parquet").to_pylist()[0]
    assert runs["transport"] == "sctp" and runs["cc"] == "sctp"
    # The walk's loss rises towards 1 after 60 s: the primary goes inactive once its error
    # counter exceeds Path.Max.Retrans (5), after RTOs backed off to RTO.Max (60 s).
    assert runs["failovers"] == 1
    assert runs["time_to_failover_s"] >= 60.0
    assert runs["data_other_bytes"] > 1_000_000
    assert runs["rto_count"] >= 6
    ts = pq.read_table(out / "timeseries.parquet")
    fo = ts.filter(pc.equal(ts["var"], "failover")).to_pylist()
    assert [(r["value"], r["dest"]) for r in fo] == [(1.0, 0)]
    # Each destination's state: the primary ends inactive (2), the alternate active (0).
    state = ts.filter(pc.equal(ts["var"], "dest_state")).to_pylist()
    last = {r["dest"]: r["value"] for r in state}
    assert last == {0: 2.0, 1: 0.0}
    assert (out / "figures" / "destinations_flow0.png").stat().st_size > 10_000


def test_sctp_and_tcp_share_a_bottleneck_through_the_api():
    text = """
[sim]
duration = "20s"
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "10Mbps"
queue = 100
[[path.fwd.stage]]
type = "delay"
delay = "20ms"
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "20ms"
[[flow]]
protocol = "sctp"
[[flow]]
start = "1s"
"""
    runs = spikelab.run(text, trace="packets")
    r = runs.runs.to_pylist()
    assert [x["transport"] for x in r] == ["sctp", "tcp"]
    assert r[0]["goodput_bps"] > 2e6 and r[1]["goodput_bps"] > 2e6
    assert r[0]["bottleneck_utilisation"] > 0.9
    pk = runs.packets
    sctp = pk.filter(pc.equal(pk["flow"], 0))
    # Chunk kinds in the event column, the destination in its own column.
    assert set(sctp["event"].unique().to_pylist()) >= {"control", "send", "ack", "deliver"}
    assert set(sctp["dest"].unique().to_pylist()) == {0}
    assert set(pk.filter(pc.equal(pk["flow"], 1))["dest"].unique().to_pylist()) == {-1}


def test_bad_sctp_input_is_one_line_naming_the_field(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[flow]]\nprotocol = "sctp"\n[flow.sctp]\nrto_alpha = 1.5\n')
    proc = spikelab_cli("validate", bad, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "flow[0].sctp.rto_alpha" in lines[0] and "[0, 1]" in lines[0]


def test_the_seq_ack_figure_of_an_sctp_flow_counts_tsns(tmp_path):
    """TSNs count chunks, not bytes: the figure's axis is in TSNs and the ACK layer holds the
    SACKs' cumulative TSN acks only (no HEARTBEAT-ACK or COOKIE-ACK at 0)."""
    from spikelab.figures import run as figs

    text = '[sim]\nduration = "5s"\n[[flow]]\nprotocol = "sctp"\n'
    res = spikelab.run(text, trace="packets")
    pk = res.packets.filter(pc.equal(res.packets["flow"], 0))
    with figs.Traces(pk) as tr:
        layers = figs._seqack_layers(tr, 0, 1)
    ack = layers["ack"].v
    # SACKs that reached the sender (the last few were still in flight at the end).
    assert ack.min() >= 1 and 3000 < ack.max() <= pc.max(pk["ack"]).as_py()
    sent = layers["sent"].v
    # 5 s of a 10 Mbit/s link: thousands of DATA chunks, numbered 1, 2, 3, ...
    assert sent.min() == 1 and 3000 < sent.max() < 5000
    fig = figs.seqack(res.packets, 0)
    assert fig.axes[0].get_ylabel() == "TSN"


def test_an_unset_ssthresh_is_infinite_in_the_time_series_as_for_tcp():
    """Before its first loss a destination's ssthresh is 'arbitrarily high' (RFC 9260 §7.2.1):
    the time series holds +inf, as for TCP, not the endpoint's internal sentinel, so the cwnd
    figure's axis follows cwnd. After the walk-away's timeouts it is a window again."""
    res = spikelab.run(ROOT / "examples" / "sctp-walkaway.toml")
    ts = res.to_pandas("timeseries")
    for var in ("ssthresh", "dest_ssthresh"):
        v = ts[ts["var"] == var]["value"]
        assert v.iloc[0] == float("inf"), var
        finite = v[v != float("inf")]
        assert len(finite) > 0 and finite.max() < 1e9, (var, finite.max())
