"""Captures of simulated runs (``sim.pcap``, ``spikelab run --pcap``), read back by our own
reader and, when installed, by Wireshark's tshark and capinfos (Debian's ``tshark``; the
checks skip without it): no malformed packet, and tshark's retransmissions, duplicate ACKs,
DSACKs, sequence and ACK numbers agree packet by packet with packets.parquet."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import spikelab
from spikelab.traces import pcap as pcapread

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TCP_EXAMPLES = ["lte-handover", "lte-handover-lossless", "minimal", "leo-lms"]
SHORTER = {"leo-lms": ['sim.duration="60s"']}  # 600 s: ample for a check at 60 s

needs_tshark = pytest.mark.skipif(not (shutil.which("tshark") and shutil.which("capinfos")),
                                  reason="needs tshark and capinfos (Debian package tshark)")

TSHARK_FIELDS = ["frame.comment", "tcp.len", "tcp.seq_raw", "tcp.ack_raw",
                 "tcp.analysis.retransmission", "tcp.analysis.spurious_retransmission",
                 "tcp.analysis.out_of_order", "tcp.analysis.duplicate_ack",
                 "tcp.options.sack.dsack_le", "tcp.options.sack_le", "tcp.options.sack_re",
                 "_ws.malformed", "_ws.expert.severity"]
SEVERITY_ERROR = 0x00800000


def simulate(name: str, out: Path, points: list[str] | None = None, extra=()):
    pcap = json.dumps(points) if points is not None else "true"
    return spikelab.run(EXAMPLES / f"{name}.toml", out=out, plots=False, progress=False,
                        trace="packets", overrides=[f"sim.pcap={pcap}",
                                                    *SHORTER.get(name, []), *extra])


def tshark_rows(path: Path, *prefs: str) -> list[dict[str, str]]:
    args = ["tshark", "-n", "-r", str(path), "-o", "tcp.relative_sequence_numbers:FALSE"]
    for p in prefs:
        args += ["-o", p]
    args += ["-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in TSHARK_FIELDS:
        args += ["-e", f]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [dict(zip(TSHARK_FIELDS, line.split("\t"))) for line in proc.stdout.splitlines()]


def flows_of(path: Path) -> dict:
    meta = json.loads(pcapread.read(path).section_comment)
    return {f["flow"]: f for f in meta["flows"]}


def sender_side(packets) -> "object":
    """The rows a capture at the sender holds, in time order: data leaving, ACKs arriving."""
    p = packets.to_pandas()
    data_out = (p.kind == "data") & p.event.isin(["send", "retransmit", "tlp"])
    ack_in = (p.kind == "ack") & (p.event == "deliver")
    return p[data_out | ack_in]


@pytest.fixture(scope="module", params=TCP_EXAMPLES)
def example(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("pcap") / request.param
    res = simulate(request.param, out)
    return request.param, out, res


def test_capture_holds_every_sender_event_with_its_time_and_id(example):
    name, out, res = example
    cap = pcapread.read(out / "pcap" / "sender.pcapng")
    want = sender_side(res.packets)
    assert len(cap.frames) == len(want) > 1000
    assert [f.comment for f in cap.frames] == [f"pkt={i}" for i in want.pkt]
    assert np.array_equal([f.ts_ns for f in cap.frames], want.t_ns.to_numpy())
    # Direction: data outbound (2), ACKs inbound (1); full lengths kept though cut at 128.
    dirs = np.array([f.direction for f in cap.frames])
    assert np.array_equal(dirs, np.where(want.kind == "data", 2, 1))
    assert np.array_equal([f.orig_len for f in cap.frames], want["size"].to_numpy() + 14)
    assert max(len(f.data) for f in cap.frames) <= 128
    # The receiver's capture: data arriving, ACKs leaving.
    p = res.packets.to_pandas()
    rcv = pcapread.read(out / "pcap" / "receiver.pcapng")
    n = (((p.kind == "data") & (p.event == "deliver"))
         | ((p.kind == "ack") & (p.event == "ack"))).sum()
    assert len(rcv.frames) == n
    assert [e["path"] for e in res.manifest["pcaps"]] == ["pcap/receiver.pcapng",
                                                          "pcap/sender.pcapng"]


@needs_tshark
def test_tshark_reads_the_capture_and_agrees_with_packets_parquet(example):
    name, out, res = example
    path = out / "pcap" / "sender.pcapng"
    rows = tshark_rows(path)
    want = sender_side(res.packets)
    assert len(rows) == len(want)
    # Not one malformed packet, no expert error (warnings are TCP analysis: DSACK, retransmissions).
    assert not [r for r in rows if r["_ws.malformed"]]
    sev = [int(s, 0) for r in rows for s in r["_ws.expert.severity"].split(",") if s]
    assert max(sev, default=0) < SEVERITY_ERROR
    isn = flows_of(path)[0]["isn_snd"]
    base = (isn + 1) % 2**32
    pkt = np.array([int(r["frame.comment"].removeprefix("pkt=")) for r in rows])
    assert np.array_equal(pkt, want.pkt.to_numpy())
    data = (want.kind == "data").to_numpy()
    seq = np.array([int(r["tcp.seq_raw"]) for r in rows])
    ack = np.array([int(r["tcp.ack_raw"]) for r in rows])
    length = np.array([int(r["tcp.len"]) for r in rows])
    assert np.array_equal(seq[data], (base + want.seq.to_numpy()[data]) % 2**32)
    assert np.array_equal(length[data], want.len.to_numpy()[data])
    assert np.array_equal(ack[~data], (base + want.ack.to_numpy()[~data]) % 2**32)
    # Retransmissions: tshark's retransmission, spurious retransmission and out-of-order
    # (its name for a retransmission sent within 3 ms of the previous segment) flags fall on
    # exactly the packets the simulator retransmitted.
    flagged = {p for p, r in zip(pkt, rows) if r["tcp.analysis.retransmission"]
               or r["tcp.analysis.spurious_retransmission"] or r["tcp.analysis.out_of_order"]}
    retx = set(want.pkt[(want.event == "retransmit") | ((want.event == "tlp") & (want.tx > 0))])
    assert flagged == retx
    assert len(retx) == int(res.runs.to_pandas().retx_segments.sum()) > 0
    # Duplicate ACKs: an ACK arriving with the ACK number of the one before it.
    acks = want[~data]
    dup = set(acks.pkt[acks.ack.diff() == 0])
    assert {p for p, r in zip(pkt, rows) if r["tcp.analysis.duplicate_ack"]} == dup
    assert len(dup) > 0
    # DSACKs: tshark finds as many as the sender counted.
    dsacks = sum(1 for r in rows if r["tcp.options.sack.dsack_le"])
    assert dsacks == int(res.runs.to_pandas().dsacks_rcvd.sum())
    # Every SACK edge is a boundary of a segment the sender sent.
    bounds = set(want.seq[data]) | set((want.seq + want.len)[data])
    edges = {(int(x) - base) % 2**32 for r in rows
             for f in ("tcp.options.sack_le", "tcp.options.sack_re") for x in r[f].split(",") if x}
    assert edges and edges <= bounds
    # capinfos counts the same packets.
    info = subprocess.run(["capinfos", "-c", "-M", str(path)], capture_output=True, text=True)
    assert f"Number of packets:   {len(want)}" in info.stdout


@needs_tshark
def test_checksums_are_right_with_the_whole_zero_payload(tmp_path):
    res = simulate("lte-handover", tmp_path / "run", extra=["sim.pcap_snaplen=2000",
                                                             'sim.duration="2s"'])
    path = tmp_path / "run" / "pcap" / "sender.pcapng"
    cap = pcapread.read(path)
    assert all(len(f.data) == f.orig_len for f in cap.frames)
    proc = subprocess.run(["tshark", "-n", "-r", str(path), "-o", "ip.check_checksum:TRUE",
                           "-o", "tcp.check_checksum:TRUE", "-T", "fields",
                           "-e", "ip.checksum.status", "-e", "tcp.checksum.status"],
                          capture_output=True, text=True, timeout=120)
    status = {line for line in proc.stdout.splitlines()}
    assert status == {"1\t1"}  # every checksum verified good
    assert len(proc.stdout.splitlines()) == len(sender_side(res.packets)) > 100


@needs_tshark
def test_a_handshake_shows_syn_options_and_window_scale(tmp_path):
    simulate("minimal", tmp_path / "run", extra=["flow[0].tcp.handshake=true",
                                                 'sim.duration="1s"'])
    path = tmp_path / "run" / "pcap" / "sender.pcapng"
    proc = subprocess.run(["tshark", "-n", "-r", str(path), "-c", "3", "-T", "fields",
                           "-e", "tcp.flags.str", "-e", "tcp.options.mss_val",
                           "-e", "tcp.options.wscale.shift", "-e", "tcp.options.sack_perm",
                           "-e", "tcp.window_size", "-e", "tcp.seq", "-e", "_ws.malformed"],
                          capture_output=True, text=True, timeout=60)
    syn, synack, first = (line.split("\t") for line in proc.stdout.splitlines())
    assert syn[0].strip("·") .endswith("S") and syn[1] == "1448" and syn[2] == "6"
    assert "A" in synack[0] and "S" in synack[0]
    # After the handshake tshark knows the scale: the window is the model's rwnd (3 MiB).
    assert first[4] == str(3 * 1024 * 1024) and first[5] == "1"
    assert not any(r[-1] for r in (syn, synack, first))


def test_a_stage_boundary_capture_sees_each_packet_crossing_it(tmp_path):
    res = simulate("lte-handover", tmp_path / "run",
                   points=["path.fwd.stage[1]", "path.rev.stage[1]"])
    p = res.packets.to_pandas()
    fwd = pcapread.read(tmp_path / "run" / "pcap" / "fwd.stage1.pcapng")
    entering_delay = p[(p.path == "fwd") & (p.event == "stage_enter") & (p.stage == "delay")]
    assert [f.comment for f in fwd.frames] == [f"pkt={i}" for i in entering_delay.pkt]
    assert len(fwd.frames) > 10_000
    rev = pcapread.read(tmp_path / "run" / "pcap" / "rev.stage1.pcapng")
    leaving = p[(p.path == "rev") & (p.event == "stage_exit")]
    assert np.array_equal([f.ts_ns for f in rev.frames], leaving.t_ns.to_numpy())
    assert json.loads(fwd.section_comment)["point"] == "path.fwd.stage[1]"


def test_a_summary_run_writes_the_same_capture_as_a_traced_one(tmp_path):
    base = ["sim.pcap=true", 'sim.duration="5s"']
    a = spikelab.run(EXAMPLES / "lte-handover.toml", out=tmp_path / "a", plots=False,
                     trace="summary", overrides=base)
    b = spikelab.run(EXAMPLES / "lte-handover.toml", out=tmp_path / "b", plots=False,
                     trace="packets", overrides=[*base, 'sim.pcap=["sender", "path.fwd.stage[1]"]'])
    assert a.runs.to_pandas().equals(b.runs.to_pandas())  # the summary: the same
    same = (tmp_path / "a/pcap/sender.pcapng").read_bytes()
    assert same == (tmp_path / "b/pcap/sender.pcapng").read_bytes()
    # The same seed again: the same bytes; another seed: other ISNs.
    spikelab.run(EXAMPLES / "lte-handover.toml", out=tmp_path / "c", plots=False, overrides=base)
    assert (tmp_path / "c/pcap/sender.pcapng").read_bytes() == same
    spikelab.run(EXAMPLES / "lte-handover.toml", out=tmp_path / "d", plots=False, seed=3,
                 overrides=base)
    assert flows_of(tmp_path / "d/pcap/sender.pcapng") != flows_of(tmp_path / "a/pcap/sender.pcapng")
    # A later run without captures removes the old ones from the directory.
    spikelab.run(EXAMPLES / "lte-handover.toml", out=tmp_path / "a", plots=False,
                 overrides=['sim.duration="1s"', 'sim.pcap=["receiver"]'])
    assert sorted(p.name for p in (tmp_path / "a/pcap").iterdir()) == ["receiver.pcapng"]


def test_a_failed_run_leaves_no_capture(tmp_path):
    for existed in (False, True):
        if existed:
            (tmp_path / "x").mkdir()
        with pytest.raises(spikelab._core.SimulationError, match="max_packets_rows"):
            spikelab.run(EXAMPLES / "lte-handover.toml", out=tmp_path / "x", plots=False,
                         trace="packets", overrides=["sim.pcap=true", "sim.max_packets_rows=100"])
        # The directory the run created is removed with its empty pcap/; one that was there
        # stays, without a capture.
        assert (tmp_path / "x").exists() == existed
        assert [p for p in (tmp_path / "x").rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("value, message", [
    ('["nowhere"]', 'sim.pcap[0]: unknown observation point "nowhere"'),
    ('["path.nope.stage[0]"]', 'sim.pcap[0]: no path named "nope"'),
    ('["path.fwd.stage[3]"]', "sim.pcap[0]: path \"fwd\" has 2 stages: its boundaries are "
                              "stage[0] (entry) to stage[2] (exit), got stage[3]"),
    ('["sender", "sender"]', 'sim.pcap[1]: "sender" is listed twice'),
    ("3", "sim.pcap: invalid type: integer `3`, expected true, false or an array"),
])
def test_bad_capture_points_are_one_line_naming_the_field(value, message):
    with pytest.raises(ValueError) as err:
        spikelab.validate(EXAMPLES / "lte-handover.toml", overrides=[f"sim.pcap={value}"])
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_pcap_flag_and_its_errors(tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "spikelab", *map(str, args)],
                              capture_output=True, text=True, timeout=120)

    proc = cli("run", EXAMPLES / "minimal.toml", "--pcap", "--set", 'sim.duration="1s"')
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("spikelab: error: --pcap: captures are written into the "
                                   "results directory; give -o OUTDIR")
    # Set in the file without -o: said, not silently skipped.
    proc = cli("run", EXAMPLES / "minimal.toml", "-q", "--set", "sim.pcap=true", "--set",
               'sim.duration="1s"')
    assert proc.returncode == 0 and proc.stderr == (
        "spikelab: warning: sim.pcap is set, but captures are written only into a results "
        "directory: none were written (give -o OUTDIR)\n")
    for bad in ("--pcap=", "--pcap=sender,,receiver"):
        proc = cli("run", EXAMPLES / "minimal.toml", "-o", tmp_path / "bad", bad)
        assert proc.returncode == 2 and proc.stderr.startswith(
            "spikelab: error: --pcap: expected observation points separated by commas"), bad
    assert not (tmp_path / "bad").exists()
    proc = cli("run", EXAMPLES / "minimal.toml", "-o", tmp_path / "m", "--no-plots",
               "--pcap=sender,path.fwd.stage[2]", "--set", 'sim.duration="1s"')
    assert proc.returncode == 0, proc.stderr
    assert "captures: " in proc.stdout and "fwd.stage2.pcapng, sender.pcapng" in proc.stdout
    assert sorted(p.name for p in (tmp_path / "m" / "pcap").iterdir()) == [
        "fwd.stage2.pcapng", "sender.pcapng"]


@needs_tshark
def test_sctp_capture_carries_chunks_tsns_sacks_and_good_crc32c(tmp_path):
    res = spikelab.run(EXAMPLES / "sctp-walkaway.toml", out=tmp_path / "s", plots=False,
                       progress=False, trace="packets", overrides=["sim.pcap=true"])
    path = tmp_path / "s" / "pcap" / "sender.pcapng"
    p = res.packets.to_pandas()
    launched = p.stage.isna() & (p.event != "deliver") & (p.event != "drop")
    want = p[((p.kind == "data") & launched) | ((p.kind == "ack") & (p.event == "deliver"))]
    # Absolute TSNs: tshark 4.0's relative TSNs misplace gap blocks by one (it then warns of
    # "reneged" acks that the absolute numbers show are not).
    fields = ["frame.comment", "sctp.chunk_type", "sctp.data_tsn_raw", "sctp.sack_cumulative_tsn_ack_raw",
              "sctp.retransmission", "sctp.checksum.status", "_ws.malformed", "_ws.expert.severity"]
    args = ["tshark", "-n", "-r", str(path), "-o", "sctp.relative_tsns:FALSE",
            "-o", "sctp.checksum:CRC-32C", "-T", "fields", "-E", "occurrence=a",
            "-E", "aggregator=,"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300).stdout
    rows = [dict(zip(fields, line.split("\t"))) for line in out.splitlines()]
    assert [r["frame.comment"] for r in rows] == [f"pkt={i}" for i in want.pkt]
    assert all(r["sctp.checksum.status"] == "1" for r in rows)  # CRC32c verified
    assert not [r for r in rows if r["_ws.malformed"]]
    sev = [int(s, 0) for r in rows for s in r["_ws.expert.severity"].split(",") if s]
    assert max(sev, default=0) < 0x00600000  # not even a warning
    kinds = [r["sctp.chunk_type"].split(",") for r in rows]
    data = [k[0] == "0" for k in kinds]
    assert np.array_equal([int(r["sctp.data_tsn_raw"].split(",")[0]) for r, d in zip(rows, data) if d],
                          want.seq[np.array(data)].to_numpy())
    sack = ["3" in k for k in kinds]
    assert np.array_equal([int(r["sctp.sack_cumulative_tsn_ack_raw"]) for r, s in zip(rows, sack) if s],
                          want.ack[np.array(sack)].to_numpy())
    assert sum(1 for r in rows if r["sctp.retransmission"]) == (p.event == "retransmit").sum() > 0
    flat = [c for k in kinds for c in k]
    # Every HEARTBEAT (4) and HEARTBEAT-ACK (5) the association's client sent or received is
    # there; a HEARTBEAT lost on the dying primary has no acknowledgement.
    heartbeats = want.pkt.isin(set(p.pkt[p.event == "heartbeat"])).sum()
    assert flat.count("4") + flat.count("5") == heartbeats > 0
    assert flat.count("4") >= flat.count("5") > 0
    assert {"1", "2", "10", "11"} <= set(flat)  # INIT, INIT-ACK, COOKIE-ECHO, COOKIE-ACK
    # SCTP frames are whole (Wireshark dissects only whole chunks).
    assert all(len(f.data) == f.orig_len for f in pcapread.read(path).frames)
