"""``spikelab trace import``: ping logs, Mahimahi traces, pcaps of one TCP connection or SCTP
association and CSVs into the profile files the stages read. The inputs are made here (their
values known), the pcaps by simulating the repository's LTE example with ``--pcap``."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import spikelab
from spikelab import traces
from spikelab.traces import pcap as pcapread

ROOT = Path(__file__).resolve().parents[1]
LTE = ROOT / "examples" / "lte-handover.toml"


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "spikelab", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def rows(path: Path) -> tuple[str, np.ndarray]:
    lines = path.read_text().splitlines()
    return lines[0], np.array([[float(x) for x in line.split(",")] for line in lines[1:]])


# ------------------------------------------------------------------------------------ ping

PING_D = """PING 192.0.2.1 (192.0.2.1) 56(84) bytes of data.
[1700000000.020000] 64 bytes from 192.0.2.1: icmp_seq=1 ttl=57 time=20.0 ms
[1700000001.040000] 64 bytes from 192.0.2.1: icmp_seq=2 ttl=57 time=40.0 ms
[1700000003.200000] 64 bytes from 192.0.2.1: icmp_seq=4 ttl=57 time=200 ms
[1700000004.030000] 64 bytes from 192.0.2.1: icmp_seq=5 ttl=57 time=30.0 ms
[1700000005.030000] 64 bytes from 192.0.2.1: icmp_seq=6 ttl=57 time=30.0 ms (DUP!)

--- 192.0.2.1 ping statistics ---
5 packets transmitted, 4 received, +1 duplicates, 20% packet loss, time 4005ms
rtt min/avg/max/mdev = 20.000/72.500/200.000/74.300 ms
"""


def test_ping_d_log_gives_half_the_rtt_at_each_probes_send_time_and_the_lost_seq(tmp_path):
    log = tmp_path / "ping.txt"
    log.write_text(PING_D)
    s = traces.read_ping(log)
    # Probes left at reply time - RTT: 0, 1.0, 3.0, 4.0 s after the first.
    assert np.allclose(s.t_ms, [0, 1000, 3000, 4000])
    assert np.allclose(s.delay_ms, [10, 20, 100, 15])
    assert s.notes["lost"] == 1 and s.notes["replies"] == 4
    assert s.notes["interval_s"] == pytest.approx(1.0)
    # icmp_seq 3: lost, at the time between its neighbours.
    assert np.allclose(s.loss_t_ms[s.loss > 0], [2000])
    proc = cli("trace", "import", "ping", log, "-o", tmp_path / "p.csv")
    assert proc.returncode == 0, proc.stderr
    header, r = rows(tmp_path / "p.csv")
    assert header == "time_ms,delay_ms,loss"
    # One row per second (bin middles), the bin's mean one-way delay and its share lost.
    assert np.allclose(r, [[500, 10, 0], [1500, 20, 0], [2500, 20, 1], [3500, 100, 0],
                           [4500, 15, 0]])
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert "replies 4, lost 1" in proc.stdout


def test_plain_ping_uses_icmp_seq_times_the_interval(tmp_path):
    log = tmp_path / "plain.txt"
    log.write_text("64 bytes from 192.0.2.1: icmp_seq=10 ttl=57 time=100 ms\n"
                   "64 bytes from 192.0.2.1: icmp_seq=11 ttl=57 time=110 ms\n"
                   "64 bytes from 192.0.2.1: icmp_seq=14 ttl=57 time=90.5 ms\n")
    s = traces.read_ping(log, interval_s=0.2, share=1.0)
    assert np.allclose(s.t_ms, [0, 200, 800])
    assert np.allclose(s.delay_ms, [100, 110, 90.5])
    assert np.allclose(s.loss_t_ms[s.loss > 0], [400, 600])
    _, prof = traces.import_trace("ping", log, ping_interval_s=0.2, interval_ms=0, share=1.0)
    assert np.allclose(prof.delay_ms, [100, 110, 90.5])


def test_ping_timestamps_that_go_back_are_named_as_such(tmp_path):
    # Was "the ping interval must be > 0, got -0.10099983215332031", an interval never given.
    log = tmp_path / "ping.txt"
    log.write_text("[1700000000.1] 64 bytes from 192.0.2.1: icmp_seq=1 ttl=64 time=10.0 ms\n"
                   "[1700000000.0] 64 bytes from 192.0.2.1: icmp_seq=2 ttl=64 time=11.0 ms\n")
    proc = cli("trace", "import", "ping", log, "-o", tmp_path / "p.csv", "--no-figure")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"spikelab: error: {log}: the ping -D timestamps do not "
                                   f"advance with icmp_seq (their median step is -0.101 s); "
                                   f"give --ping-interval")


@pytest.mark.parametrize("bad, line, what", [
    ("64 bytes from 192.0.2.1: icmp_seq=x ttl=57 time=1 ms", 2, "icmp_seq and time must be"),
    ("hello there", 2, "not a ping reply or summary line"),
])
def test_a_malformed_ping_line_is_one_error_naming_its_line(tmp_path, bad, line, what):
    log = tmp_path / "bad.txt"
    log.write_text(f"64 bytes from 192.0.2.1: icmp_seq=1 ttl=57 time=1 ms\n{bad}\n")
    proc = cli("trace", "import", "ping", log, "-o", tmp_path / "out.csv")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"spikelab: error: {log} line {line}: {what}")
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.csv").exists()  # nothing half-written
    assert list(tmp_path.iterdir()) == [log]


# -------------------------------------------------------------------------------- mahimahi


def test_mahimahi_opportunities_become_a_rate_trace(tmp_path):
    trace = tmp_path / "cell.up"
    # 0-199 ms: one opportunity per ms (12 Mbit/s); 200-299 ms: two per ms (24 Mbit/s).
    stamps = list(range(200)) + [t for t in range(200, 300) for _ in (0, 1)]
    trace.write_text("\n".join(map(str, stamps)) + "\n")
    proc = cli("trace", "import", "mahimahi", trace, "-o", tmp_path / "rate.csv", "--bin", "100")
    assert proc.returncode == 0, proc.stderr
    header, r = rows(tmp_path / "rate.csv")
    assert header == "time_ms,rate_bps"
    assert r.tolist() == [[0, 12e6], [100, 12e6], [200, 24e6]]
    s = traces.read_mahimahi(trace, bin_ms=50)
    assert s.rate_bps.tolist() == [12e6] * 4 + [24e6] * 2
    assert s.notes["mean_rate_bps"] == pytest.approx(400 * 12000 / 0.3)


def test_an_imported_mahimahi_trace_drives_a_rate_stage(tmp_path):
    """The Mahimahi import's CSV is the rate stage's `trace` format: a bulk flow over it gets
    the trace's capacity (4 Mbit/s for 10 s, then 1 Mbit/s for 10 s: 6.25 MB in 20 s)."""
    trace = tmp_path / "cell.down"
    # 1500-byte delivery opportunities: one every 3 ms (4 Mbit/s), then one every 12 ms.
    stamps = list(range(0, 10_000, 3)) + list(range(10_000, 20_000, 12))
    trace.write_text("\n".join(map(str, stamps)) + "\n")
    csv = tmp_path / "rate.csv"
    proc = cli("trace", "import", "mahimahi", trace, "-o", csv, "--bin", "1000")
    assert proc.returncode == 0, proc.stderr
    scenario = tmp_path / "cell.toml"
    scenario.write_text(f"""
[sim]
duration = "20s"
[path.fwd]
[[path.fwd.stage]]
type = "rate"
trace = "{csv.name}"
queue = 50
[[path.fwd.stage]]
type = "delay"
delay = "20ms"
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "20ms"
[[flow]]
app = {{ type = "bulk" }}
""")
    res = spikelab.run(scenario, trace="summary", plots=False, progress=False)
    delivered = res.runs["bytes_delivered"][0].as_py()
    capacity = (4e6 * 10 + 1e6 * 10) / 8  # 6.25 MB of IP packets; payload 1448 of 1500 bytes
    assert 0.85 * capacity * 1448 / 1500 < delivered <= capacity * 1448 / 1500, delivered


@pytest.mark.parametrize("text, line, what", [
    ("1\n2\nx3\n", 3, "expected a whole number of milliseconds, got 'x3'"),
    ("1\n5\n4\n", 3, "timestamps must not decrease (4 after 5)"),
    ("1\n-2\n", 2, "expected a whole number of milliseconds, got '-2'"),
])
def test_a_malformed_mahimahi_line_is_named(tmp_path, text, line, what):
    trace = tmp_path / "m.down"
    trace.write_text(text)
    proc = cli("trace", "import", "mahimahi", trace, "-o", tmp_path / "r.csv")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"spikelab: error: {trace} line {line}: {what}"


# ------------------------------------------------------------------------------------- csv


def test_csv_columns_named_by_options(tmp_path):
    f = tmp_path / "m.csv"
    f.write_text("t,rtt,lossrate,junk\n0,100,0,a\n0.5,300,0.5,b\n1.0,100,0,c\n")
    proc = cli("trace", "import", "csv", f, "-o", tmp_path / "d.csv", "--time-col", "t",
               "--time-unit", "s", "--delay-col", "rtt", "--loss-col", "lossrate",
               "--share", "0.5", "--no-figure")
    assert proc.returncode == 0, proc.stderr
    _, r = rows(tmp_path / "d.csv")
    assert r.tolist() == [[0, 50, 0], [500, 150, 0.5], [1000, 50, 0]]
    # A rate column makes a rate trace; resampling takes the bin's mean.
    f.write_text("time_ms,bw\n0,1e6\n50,3e6\n100,2e6\n")
    _, prof = traces.import_trace("csv", f, interval_ms=100,
                                  csv_columns={"rate_col": "bw"})
    assert prof.is_rate and prof.rate_bps.tolist() == [2e6, 2e6]


@pytest.mark.parametrize("text, opts, message", [
    ("t,d\n0,1\n", ["--delay-col", "x", "--time-col", "t"], "line 1: no column 'x' (columns: t, d)"),
    ("time_ms,d\n0,1\n5,abc\n", ["--delay-col", "d"], "line 3: column 'd': expected a number, got 'abc'"),
    ("time_ms,l\n0,0\n5,1.5\n", ["--loss-col", "l"], "line 3: column 'l': a loss probability must be in [0, 1], got 1.5"),
    ("time_ms,d\n5,1\n0,1\n", ["--delay-col", "d"], "line 3: time must not decrease (0 after 5)"),
])
def test_a_malformed_csv_row_is_named(tmp_path, text, opts, message):
    f = tmp_path / "in.csv"
    f.write_text(text)
    proc = cli("trace", "import", "csv", f, "-o", tmp_path / "o.csv", *opts)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"spikelab: error: {f} {message}"


def test_samples_at_one_time_give_a_profile_the_stage_accepts(tmp_path):
    # `--interval 0` keeps one row per sample: three samples at one time (or closer than the
    # microsecond the CSV keeps) were written as three rows, which a delay stage refuses.
    f = tmp_path / "in.csv"
    f.write_text("time_ms,d\n0,10\n0,20\n0.0001,30\n0.0002,35\n5,40\n")
    out = tmp_path / "p.csv"
    proc = cli("trace", "import", "csv", f, "-o", out, "--delay-col", "d", "--interval", "0",
               "--no-figure", "-q")
    assert proc.returncode == 0, proc.stderr
    _, r = rows(out)
    assert r.tolist() == [[0, 10, 0], [0, 35, 0], [5, 40, 0]]  # the step's before and after
    (tmp_path / "s.toml").write_text(
        '[path.fwd]\n[[path.fwd.stage]]\ntype = "delay"\ntrace = "p.csv"\n[[flow]]\n')
    proc = cli("validate", tmp_path / "s.toml")
    assert proc.returncode == 0, proc.stderr


def test_smoothing_is_a_centred_moving_median():
    t = np.arange(10) * 100.0
    v = np.array([10, 10, 10, 500, 10, 10, 10, 10, 10, 10.0])
    assert traces.smooth(t, v, 300).tolist() == [10.0] * 10  # the outlier is gone
    assert traces.smooth(t, v, 0).tolist() == v.tolist()


# ------------------------------------------------------------------------------------ pcap


def assert_lte_path(s, calm_ms: float, silence_from_ms: float = 10100) -> None:
    """The LTE example's path recovered from a capture's samples (100 ms bins, lower envelope):
    50 ms, a step to 1500 ms at 10 s falling to 50 ms at 11.46 s, losses only in the spike.
    ``silence_from_ms``: where the ACK silence starts (a delayed ACK of data sent before the
    spike can still arrive in it, and until then the silence bound is only a weak one)."""
    prof = traces.fit(s, interval_ms=100, stat="min")
    t, d = prof.t_ms, prof.delay_ms
    calm = (t < 9500) | (t > 12000)
    assert np.all(np.abs(d[calm] - 50) < calm_ms), d[calm].max()
    spike = (t > 10100) & (t < 11400)
    truth = 1500 - (t[spike] - 10000) * (1450 / 1460)
    # Inside the spike no segment is sampled; the ACK silence bounds the delay from below
    # (every packet of the spike leaves at its end), within 10 ms of the profile.
    silent = t[spike] > silence_from_ms
    assert np.all(np.abs(d[spike][silent] - truth[silent]) < 10), d[spike] - truth
    # Before the last ACK that ends the silence early, the bound stays below the truth.
    assert np.all(d[spike][~silent] <= truth[~silent] + 10), d[spike] - truth
    assert set(t[prof.loss > 0]) <= {10050.0, 10150.0, 10250.0}


def captured(scenario: Path, out: Path):
    """The sender-side capture of a traced run of ``scenario`` into ``out``, and the run."""
    res = spikelab.run(scenario, out=out, plots=False, progress=False, trace="packets",
                       overrides=["sim.pcap=true"])
    return out / "pcap" / "sender.pcapng", res


def drops_by_cause(res) -> dict:
    p = res.packets.to_pandas()
    return p[p.event == "drop"].groupby("cause", observed=True).size().to_dict()


@pytest.fixture(scope="module")
def lte_capture(tmp_path_factory):
    return captured(LTE, tmp_path_factory.mktemp("lte") / "run")


def test_a_pcap_gives_the_paths_delay_and_its_losses(lte_capture, tmp_path):
    path, res = lte_capture
    s = traces.read_pcap(path, share=1.0, rate_bps=10e6, queue=100)
    drops = drops_by_cause(res)
    # The receiver's DSACKs tell the spurious retransmissions apart; the virtual queue tells
    # the rate stage's drops from the path's: both exactly as the simulator counted them.
    assert s.notes["dsacked"] == int(res.runs.to_pandas().dsacks_rcvd[0]) == 210
    assert s.notes["queue_drops"] == drops["queue_full"] == 73
    assert s.notes["losses"] == drops["profile"] == 3
    # The sample is one-way plus the ACK's way back (1 Gbit/s, ~0.4 us), timestamps in ms.
    assert_lte_path(s, calm_ms=3)
    # Without the rate: every retransmission not DSACKed is a loss (queue drops included).
    assert traces.read_pcap(path).notes["losses"] == 76


def test_the_imported_profile_simulates_like_the_original(lte_capture, tmp_path):
    path, res = lte_capture
    proc = cli("trace", "import", "pcap", path, "-o", tmp_path / "lte.csv", "--share", "1",
               "--rate", "10Mbps", "--queue", "100")
    assert proc.returncode == 0, proc.stderr
    assert "queue_drops 73" in proc.stdout and "losses 3" in proc.stdout
    # The example with its delay stage's profile replaced by the imported one.
    stage = f'path.fwd.stage[1]={{type = "delay", trace = "{tmp_path / "lte.csv"}"}}'
    again = spikelab.run(LTE, trace="summary", overrides=[stage])
    g0 = float(res.runs["goodput_bps"][0].as_py())
    g1 = float(again.runs["goodput_bps"][0].as_py())
    print(f"goodput: original {g0 / 1e6:.3f}, re-imported {g1 / 1e6:.3f} Mbit/s")
    assert abs(g1 - g0) / g0 < 0.02


def test_classic_pcap_reads_the_same_as_pcapng(lte_capture, tmp_path):
    path, _ = lte_capture
    cap = pcapread.read(path)
    classic = tmp_path / "same.pcap"
    with open(classic, "wb") as f:  # nanosecond magic, big-endian, as some tools write
        f.write(struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
        for fr in cap.frames:
            f.write(struct.pack(">IIII", fr.ts_ns // 10**9, fr.ts_ns % 10**9, len(fr.data),
                                fr.orig_len))
            f.write(fr.data)
    a = traces.read_pcap(path)
    b = traces.read_pcap(classic)
    assert np.array_equal(a.delay_ms, b.delay_ms) and np.array_equal(a.loss, b.loss)
    assert a.notes == b.notes


def test_bad_pcaps_are_one_line(tmp_path):
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"\x00" * 64)
    proc = cli("trace", "import", "pcap", junk, "-o", tmp_path / "x.csv")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"spikelab: error: {junk}: not a pcap or pcapng file "
                                   f"(magic 00000000)")
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    proc = cli("trace", "import", "pcap", empty, "-o", tmp_path / "x.csv")
    assert proc.stderr.strip() == (f"spikelab: error: {empty}: no TCP segments or SCTP packets "
                                   f"in its 0 frames")
    proc = cli("trace", "import", "pcap", empty, "-o", tmp_path / "x.csv", "--interface", "eth0")
    assert proc.stderr.strip() == (f"spikelab: error: --interface: no frames on 'eth0' in "
                                   f"{empty} (it has no frames)")
    # A record cut short, and a link type the reader does not know, are named (it said only
    # "no TCP segments or SCTP packets").
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(empty.read_bytes() + struct.pack("<IIII", 0, 0, 100, 100) + b"\x00" * 10)
    proc = cli("trace", "import", "pcap", cut, "-o", tmp_path / "x.csv")
    assert proc.stderr.strip() == (f"spikelab: error: {cut}: no TCP segments or SCTP packets "
                                   f"in its 0 frames; the capture is cut short at byte 24")
    usb = tmp_path / "usb.pcap"
    usb.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 189)
                    + struct.pack("<IIII", 0, 0, 4, 4) + b"\x01\x02\x03\x04")
    proc = cli("trace", "import", "pcap", usb, "-o", tmp_path / "x.csv")
    assert proc.stderr.strip() == (f"spikelab: error: {usb}: no TCP segments or SCTP packets "
                                   f"in its 1 frame; link type 189 is not read (Ethernet, Linux "
                                   f"cooked SLL/SLL2 and raw IP are)")
    proc = cli("trace", "import", "pcap", empty, "-o", tmp_path / "x.csv", "--queue", "5")
    assert proc.stderr.strip() == "spikelab: error: --queue needs --rate (the virtual queue's rate)"


def test_a_capture_cut_short_is_read_with_a_warning(lte_capture, tmp_path):
    """A truncated pcapng (head -c) imported silently; now its complete packets are read and
    stderr says where the capture was cut."""
    path, _ = lte_capture
    cut = tmp_path / "t.pcapng"
    cut.write_bytes(path.read_bytes()[:100_000])
    s = traces.read_pcap(cut)
    assert len(s.warnings) == 1 and "cut short at byte " in s.warnings[0]
    assert traces.read_pcap(path).warnings == []
    proc = cli("trace", "import", "pcap", cut, "-o", tmp_path / "t.csv", "--no-figure")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"spikelab: warning: {cut}: the capture is cut short at byte ")
    assert line.endswith("of 100000 (an incomplete last packet); the profile covers the "
                         "packets before it")
    assert (tmp_path / "t.csv").is_file()
    classic = tmp_path / "t.pcap"  # a classic pcap cut inside a record
    classic.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                        + struct.pack("<IIII", 0, 0, 60, 60) + b"\x00" * 20)
    cap = pcapread.read(classic)
    assert cap.frames == [] and cap.truncated_at == 24


def test_an_output_that_is_a_directory_is_named_as_such(tmp_path):
    """It was "spikelab: error: .out.11775-1fb567f2.tmp: Is a directory"."""
    (tmp_path / "out").mkdir()
    log = tmp_path / "ping.txt"
    log.write_text((ROOT / "examples" / "traces" / "ping.txt").read_text())
    proc = cli("trace", "import", "ping", log, "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr == f"spikelab: error: -o {tmp_path / 'out'}: is a directory; give a " \
                          f"file name\n"
    proc = cli("trace", "import", "ping", log, "-o", tmp_path / "p.csv", "--figure",
               tmp_path / "out")
    assert proc.returncode == 2 and "--figure" in proc.stderr and "is a directory" in proc.stderr
    assert not (tmp_path / "p.csv").exists() and list((tmp_path / "out").iterdir()) == []


# ------------------------------------------------------------------------------------ SCTP


@pytest.fixture(scope="module")
def sctp_capture(tmp_path_factory):
    """The LTE example's path (10 Mbit/s, 100 packets, 50 ms with a 1.5 s spike at 10 s and
    1 % loss in it) carrying one SCTP association instead of the TCP flow."""
    text = LTE.read_text()
    text = text[:text.index("[[flow]]")] + (
        '[[flow]]\nprotocol = "sctp"\nfwd = "fwd"\nrev = "rev"\napp = { type = "bulk" }\n')
    scenario = tmp_path_factory.mktemp("sctp") / "sctp-lte.toml"
    scenario.write_text(text)
    return captured(scenario, scenario.parent / "run")


def test_an_sctp_capture_gives_the_paths_delay_and_its_losses(sctp_capture, tmp_path):
    path, res = sctp_capture
    s = traces.read_pcap(path, share=1.0, rate_bps=10e6, queue=100)
    runs = res.runs.to_pandas()
    drops = drops_by_cause(res)
    assert s.notes["protocol"] == "sctp" and s.notes["rtt_from"] == "DATA/SACK pairs (Karn)"
    # The SACKs' duplicate TSNs (RFC 9260 §3.3.4) tell the spurious retransmissions of the
    # spike's timeout apart from the lost ones, as the simulator's ground truth does.
    assert s.notes["retransmissions"] == int(runs.retx_segments[0]) == 92
    assert s.notes["dsacked"] == int(runs.spurious_retx_true[0]) == 89
    assert s.notes["losses"] == drops["profile"] == 3
    assert s.notes["queue_drops"] == drops.get("queue_full", 0)
    # SCTP has no timestamps: the RTTs are exact. The receiver SACKs the association's first
    # DATA at once (RFC 9260 §5.1), then every second packet: here the last packet before the
    # spike is an odd one, and its SACK, sent on the 200 ms timer, arrives at 10.25 s and
    # ends the silence of the packets sent before it early.
    acks = np.asarray(s.ack_t_ms)
    late = acks[(acks > 10100) & (acks < 11000)]
    assert late.size == 1 and abs(late[0] - 10250) < 1, late
    assert_lte_path(s, calm_ms=1, silence_from_ms=10250)
    proc = cli("trace", "import", "pcap", path, "-o", tmp_path / "sctp.csv", "--share", "1",
               "--rate", "10Mbps", "--queue", "100")
    assert proc.returncode == 0, proc.stderr
    assert "protocol sctp" in proc.stdout and "losses 3" in proc.stdout


def test_sctp_chunks_are_read_from_a_bundled_packet(tmp_path):
    """DATA chunks bundled with a SACK (gap blocks, duplicate TSNs), padded to 4 bytes."""
    def chunk(ctype: int, body: bytes) -> bytes:
        raw = struct.pack("!BBH", ctype, 3, 4 + len(body)) + body
        return raw + b"\0" * (-len(raw) % 4)
    data1 = chunk(0, struct.pack("!IHHI", 1000, 0, 0, 0) + b"x" * 5)  # 5 bytes, 3 of padding
    data2 = chunk(0, struct.pack("!IHHI", 1001, 0, 1, 0) + b"y" * 1200)
    sack = chunk(3, struct.pack("!IIHH", 77, 65536, 1, 2) + struct.pack("!HH", 2, 3)
                 + struct.pack("!II", 70, 71))
    sctp = struct.pack("!HHII", 5000, 6000, 1, 0) + data1 + sack + data2
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(sctp), 0, 0, 64, 132, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + sctp
    raw = tmp_path / "raw.pcap"  # link type 101: raw IP
    raw.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101)
                    + struct.pack("<IIII", 0, 123, len(ip), len(ip)) + ip)
    cap = pcapread.transport(raw)
    c = cap.sctp
    assert c["chunk_tsn"].tolist() == [1000, 1001] and c["chunk_bytes"].tolist() == [5, 1200]
    assert c["data_offsets"].tolist() == [0, 2]
    assert c["has_cum"].tolist() == [1] and c["cum_tsn"].tolist() == [77]
    assert c["dup_tsn"].tolist() == [70, 71] and c["dup_offsets"].tolist() == [0, 2]
    assert c["wire"].tolist() == [len(ip)] and c["ts_ns"].tolist() == [123_000]
    assert cap.sctp_conns == [("10.0.0.1", 5000, "10.0.0.2", 6000)]
    # An SCTP frame is not TCP.
    assert cap.tcp["ts_ns"].size == 0 and cap.tcp_conns == []


@pytest.mark.skipif(not shutil.which("editcap"), reason="needs editcap (Debian wireshark-common)")
def test_a_pcap_written_by_wireshark_tools_reads_the_same(lte_capture, tmp_path):
    path, _ = lte_capture
    out = tmp_path / "wireshark.pcap"
    subprocess.run(["editcap", "-F", "pcap", str(path), str(out)], check=True,
                   capture_output=True)
    a, b = traces.read_pcap(path), traces.read_pcap(out)
    assert np.allclose(a.delay_ms, b.delay_ms, atol=1e-3)  # microsecond pcap: 1 us steps
    assert a.notes == b.notes


# ------------------------------------------------- the Rust reader against the Python one


def _same_samples(a, b) -> None:
    """Two imports' samples equal value for value (NaN where NaN), notes and warnings too."""
    for k in ("t_ms", "delay_ms", "loss_t_ms", "loss", "send_t_ms", "send_end", "ack_t_ms",
              "ack_val", "ack_rtt_ms", "backlog_t_ms", "backlog_end_ms"):
        x, y = getattr(a, k), getattr(b, k)
        if x is None or y is None:
            assert x is None and y is None, k
            continue
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), k
    assert a.notes == b.notes and a.warnings == b.warnings


IMPORT_OPTIONS = ({}, {"share": 1.0, "rate_bps": 10e6, "queue": 100}, {"rate_bps": 2e6},
                  {"iface": "eth0"}, {"iface": "1"})


def _imports_alike(path: Path, options=IMPORT_OPTIONS) -> int:
    """Imports ``path`` by the Rust reader (traces.read_pcap) and by the pure-Python reader
    it replaced (tests/pcap_reference.py) with each of ``options``: the same samples, or the
    same error. Returns how many imports gave samples."""
    import pcap_reference

    ok = 0
    for kw in options:
        try:
            want = pcap_reference.read_pcap(path, **kw)
        except ValueError as exc:
            with pytest.raises(ValueError) as got:
                traces.read_pcap(path, **kw)
            assert str(got.value) == str(exc), kw
            continue
        _same_samples(want, traces.read_pcap(path, **kw))
        ok += 1
    return ok


def test_the_rust_reader_imports_exactly_as_the_python_reader_did(lte_capture, sctp_capture,
                                                                     tmp_path):
    """The repository's capture fixtures (the LTE example over TCP and over SCTP), as pcapng
    and as classic pcap, give the same samples as the pure-Python reader they replaced."""
    for path in (lte_capture[0], sctp_capture[0]):
        assert _imports_alike(path, IMPORT_OPTIONS[:3]) == 3
        cap = pcapread.read(path)
        classic = tmp_path / f"{path.parent.parent.name}.pcap"
        with open(classic, "wb") as f:  # microseconds, little-endian: what tcpdump writes
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
            for fr in cap.frames:
                f.write(struct.pack("<IIII", fr.ts_ns // 10**9, fr.ts_ns % 10**9 // 1000,
                                    len(fr.data), fr.orig_len) + fr.data)
        assert _imports_alike(classic, IMPORT_OPTIONS[:3]) == 3


def _ipv4(proto: int, body: bytes, src: int, dst: int) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0, 0, 64, proto, 0,
                       bytes([10, 0, 0, src]), bytes([10, 0, 0, dst])) + body


def _ipv6(proto: int, body: bytes, src: int, dst: int) -> bytes:
    return struct.pack("!IHBB16s16s", 0x60000000, len(body), proto, 64,
                       bytes(15) + bytes([src]), bytes(15) + bytes([dst])) + body


def _eth(ip: bytes, vlan: bool = False) -> bytes:
    kind = b"\x86\xdd" if ip[0] >> 4 == 6 else b"\x08\x00"
    return bytes(12) + (b"\x81\x00\x00\x05" if vlan else b"") + kind + ip


def _tcp(sport: int, dport: int, seq: int, ack: int, flags: int, payload: int,
         ts: tuple[int, int] | None = None, sack: tuple = ()) -> bytes:
    opts = b""
    if ts is not None:
        opts += b"\x01\x01" + struct.pack("!BBII", 8, 10, *ts)
    if sack:
        opts += b"\x01\x01" + struct.pack("!BB", 5, 2 + 8 * len(sack)) + b"".join(
            struct.pack("!II", le & 0xFFFFFFFF, re_ & 0xFFFFFFFF) for le, re_ in sack)
    opts += b"\x00" * (-len(opts) % 4)
    off = (20 + len(opts)) // 4
    return struct.pack("!HHIIHHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                       off << 12 | flags, 65535, 0, 0) + opts + bytes(payload)


def _synthetic_tcp(rng: np.random.Generator, n: int) -> list[tuple[bytes, str, int]]:
    """A sender-side capture of one TCP connection, written at random: new data,
    retransmissions, pure ACKs both ways, ACKs that go back, timestamps echoed (or not, or
    of nothing sent), SACK and DSACK blocks, a sequence space that wraps, a SYN or none,
    another connection, IPv6, UDP and VLAN-tagged frames. Frames as (bytes, comment,
    interface)."""
    out = []
    isn = int(rng.choice([rng.integers(0, 2**32), 2**32 - 3000]))
    with_ts = rng.random() < 0.7
    base = isn
    if rng.random() < 0.8:
        out.append((_eth(_ipv4(6, _tcp(4000, 80, isn, 0, 0x02, 0), 1, 2)), "", 0))
        out.append((_eth(_ipv4(6, _tcp(80, 4000, 7, isn + 1, 0x12, 0), 2, 1)), "", 0))
        base = isn + 1
    nxt, tsval, acked = 0, int(rng.choice([0, 1000])), 0
    sent: list[tuple[int, int, int]] = []
    for _ in range(n):
        r = rng.random()
        iface = int(rng.random() < 0.1)
        comment = "drop pkt=1" if rng.random() < 0.02 else ""
        tsval += int(rng.integers(0, 3))
        if r < 0.42 or not sent:
            length = int(rng.integers(1, 1449))
            sent.append((nxt, length, tsval))
            seg = _tcp(4000, 80, base + nxt, 1, 0x18, length, (tsval, 5) if with_ts else None)
            nxt += length
        elif r < 0.48:
            seq, length, _ = sent[int(rng.integers(0, len(sent)))]
            if rng.random() < 0.3:
                seq, length = int(rng.integers(0, nxt)), int(rng.integers(1, 1449))
            seg = _tcp(4000, 80, base + seq, 1, 0x10, length, (tsval, 5) if with_ts else None)
        elif r < 0.5:
            seg = _tcp(4000, 80, base + nxt, 1, 0x10, 0)
        elif r < 0.88:
            k = int(rng.integers(0, len(sent)))
            choice = rng.random()
            if choice < 0.6:
                acked = max(acked, sent[k][0] + sent[k][1])
                ack = acked
            elif choice < 0.8:
                ack = acked
            else:
                ack = int(rng.integers(0, nxt + 1))
            ts = None
            if with_ts and rng.random() < 0.95:
                echo = sent[k][2] if rng.random() < 0.8 else int(rng.integers(0, tsval + 9))
                ts = (77, echo)
            sack = ()
            if rng.random() < 0.3:
                seq, length, _ = sent[k]
                style = rng.random()
                if style < 0.4:  # a DSACK of a segment, often the one the ACK ends at
                    blocks = [(base + seq, base + seq + length)]
                elif style < 0.6:  # a DSACK inside the second block
                    blocks = [(base + seq, base + seq + length),
                              (base + seq - int(rng.integers(0, 2)) * 100,
                               base + seq + length + int(rng.integers(0, 2)) * 100)]
                else:
                    lo = int(rng.integers(0, nxt + 1))
                    blocks = [(base + lo, base + lo + int(rng.integers(1, 3000)))]
                for _ in range(int(rng.integers(0, 2 if ts else 3))):
                    a = int(rng.integers(0, nxt + 1))
                    blocks.append((base + a - int(rng.integers(0, 3000)),
                                   base + a + int(rng.integers(1, 3000))))
                sack = tuple(blocks)
            seg = _tcp(80, 4000, 7, base + ack, 0x10, 0, ts, sack)
            out.append((_eth(_ipv4(6, seg, 2, 1), vlan=rng.random() < 0.1), comment, iface))
            continue
        elif r < 0.92:
            seg = _tcp(5000, 81, int(rng.integers(0, 2**32)), 3, 0x10, int(rng.integers(0, 200)))
            out.append((_eth(_ipv4(6, seg, 3, 4)), comment, iface))
            continue
        elif r < 0.94:
            out.append((_eth(_ipv4(17, bytes(40), 1, 2)), comment, iface))
            continue
        elif r < 0.97:
            seg = _tcp(6000, 82, int(rng.integers(0, 2**32)), 9, 0x10, int(rng.integers(0, 900)))
            out.append((_eth(_ipv6(6, seg, 1, 2)), comment, iface))
            continue
        else:
            seg = _tcp(4000, 80, isn, 0, 0x02, 0)  # the SYN again
        out.append((_eth(_ipv4(6, seg, 1, 2), vlan=rng.random() < 0.1), comment, iface))
    return out


def _sctp(sport: int, dport: int, chunks: list[bytes]) -> bytes:
    return struct.pack("!HHII", sport, dport, 1, 0) + b"".join(
        c + b"\x00" * (-len(c) % 4) for c in chunks)


def _synthetic_sctp(rng: np.random.Generator, n: int) -> list[tuple[bytes, str, int]]:
    """A sender-side capture of one SCTP association: DATA packets of one to three chunks
    (new TSNs or old ones again), SACKs with duplicate TSNs, some bundled with DATA, some
    acknowledging past what was sent; TSNs that wrap; a TCP connection beside it."""
    out = []
    first = int(rng.choice([rng.integers(0, 2**32), 2**32 - 40]))
    nxt, cum = first, first - 1
    ends: list[int] = []
    for _ in range(n):
        r = rng.random()
        iface = int(rng.random() < 0.1)
        if r < 0.5 or not ends:
            k = int(rng.integers(1, 4))
            tsns = [nxt + i for i in range(k)]
            if rng.random() < 0.15 and nxt - first > 5:
                tsns = [int(rng.integers(first, nxt)) for _ in range(k)]
            else:
                nxt += k
                ends.append(nxt)
            chunks = [struct.pack("!BBHIHHI", 0, 3, 16 + m, t & 0xFFFFFFFF, 0, 0, 0) + b"x" * m
                      for t, m in zip(tsns, rng.integers(1, 500, k).tolist(), strict=True)]
            out.append((_eth(_ipv4(132, _sctp(5000, 6000, chunks), 1, 2)), "", iface))
        elif r < 0.9:
            choice = rng.random()
            if choice < 0.6:
                cum = max(cum, ends[int(rng.integers(0, len(ends)))] - 1)
            elif choice < 0.7:
                cum = nxt + int(rng.integers(0, 5))  # past anything sent
            dups = [int(rng.integers(first, nxt + 1)) & 0xFFFFFFFF
                    for _ in range(int(rng.integers(0, 3)) if rng.random() < 0.3 else 0)]
            sack = struct.pack("!BBHIIHH", 3, 0, 16 + 4 + 4 * len(dups), cum & 0xFFFFFFFF,
                               65536, 1, len(dups)) + struct.pack("!HH", 2, 3) + b"".join(
                                   struct.pack("!I", d) for d in dups)
            chunks = [sack]
            if rng.random() < 0.1:  # bundled with DATA of the other direction
                chunks.append(struct.pack("!BBHIHHI", 0, 3, 20, 9, 0, 0, 0) + b"y" * 4)
            out.append((_eth(_ipv4(132, _sctp(6000, 5000, chunks), 2, 1)), "", iface))
        else:
            seg = _tcp(4000, 80, int(rng.integers(0, 2**32)), 1, 0x10, int(rng.integers(0, 300)))
            out.append((_eth(_ipv4(6, seg, 1, 2)), "", iface))
    return out


def _write_pcapng(path: Path, frames: list[tuple[bytes, str, int]], snap: int) -> None:
    """Little-endian pcapng, two interfaces (eth0, eth1), nanoseconds, comments."""
    def block(kind: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        return struct.pack("<II", kind, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))

    def opt(code: int, value: bytes) -> bytes:
        return struct.pack("<HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)

    out = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + opt(1, b"meta"))]
    for name in (b"eth0", b"eth1"):
        out.append(block(1, struct.pack("<HHI", 1, 0, snap) + opt(2, name) + opt(9, b"\x09")
                         + opt(0, b"")))
    t = 1_700_000_000_000_000_000
    for k, (data, comment, iface) in enumerate(frames):
        t += (k * 7919) % 1_500_000 if k % 5 else 0  # some frames at one time
        cut = data[:snap]
        body = struct.pack("<IIIII", iface, t >> 32, t & 0xFFFFFFFF, len(cut), len(data)) + cut
        body += b"\x00" * (-len(body) % 4) + opt(2, struct.pack("<I", 2))
        if comment:
            body += opt(1, comment.encode())
        out.append(block(6, body + opt(0, b"")))
    path.write_bytes(b"".join(out))


@pytest.mark.parametrize("seed", range(6))
def test_generated_captures_import_alike_by_both_readers(seed, tmp_path):
    """Random captures of a TCP connection and of an SCTP association, with every case the
    import distinguishes, at a snap length that cuts data frames or none: the same samples
    (or the same error) from the Rust reader as from the Python one."""
    rng = np.random.default_rng(seed)
    ok = 0
    for kind, make in (("tcp", _synthetic_tcp), ("sctp", _synthetic_sctp)):
        path = tmp_path / f"{kind}.pcapng"
        _write_pcapng(path, make(rng, 3000), snap=96 if seed % 2 else 65535)
        ok += _imports_alike(path)
    assert ok >= 6  # most imports give samples: the comparison is not of errors alone
