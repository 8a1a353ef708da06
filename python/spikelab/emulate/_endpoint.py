"""The kernel TCP endpoints of an emulated run: ``python -m spikelab.emulate._endpoint
(sender|receiver) CONFIG.json``, started inside the sender's / receiver's namespace.

Both follow the same small protocol with ``spikelab emulate``: set up (sockets, congestion
control), print ``ready``, read the run's time 0 (CLOCK_REALTIME ns) from stdin, run until
``t0 + duration``, write the result file named in the configuration and exit 0. A setup
error is one line on stderr and exit code 2. If ``spikelab emulate`` dies, so do they
(``PR_SET_PDEATHSIG``).

The sender opens one connection per flow at ``t0 + start`` and sends (bulk: as fast as the
kernel takes data; file: ``size`` bytes) until the end, sampling ``TCP_INFO`` of every
connection every ``sample_ns``. The receiver accepts and reads, counting the bytes delivered
to it. Both record their namespace's TCP counters (``/proc/net/netstat``, ``/proc/net/snmp``)
before the first connection and after the end.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import tcpinfo
from ._nsctl import counters

TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_INFO = getattr(socket, "TCP_INFO", 11)
TCP_MAXSEG = getattr(socket, "TCP_MAXSEG", 2)
TCP_WINDOW_CLAMP = getattr(socket, "TCP_WINDOW_CLAMP", 10)
SIOCOUTQ = 0x5411  # bytes not yet acknowledged (sent or not)
SIOCOUTQNSD = 0x894B  # bytes not yet sent
PR_SET_PDEATHSIG = 1
PR_SET_TIMERSLACK = 29
CHUNK = 1 << 16
POLL_S = 0.02

# What the sender records per sample, besides the time.
SAMPLE_FIELDS = (
    "state", "ca_state", "retransmits", "backoff", "rto", "snd_mss", "unacked", "sacked",
    "lost", "retrans", "rtt", "rttvar", "snd_ssthresh", "snd_cwnd", "total_retrans",
    "bytes_acked", "bytes_sent", "bytes_retrans", "dsack_dups", "data_segs_out",
    "total_rto", "total_rto_recoveries", "reord_seen", "delivered",
)


class SetupError(Exception):
    pass


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` under a temporary name and rename it to ``path``. The temporary is named
    as spikelab.store.results names its own (``.NAME.PID-HEX.tmp``), so one left by a killed
    process is swept by the next write into the directory."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _die_with_parent() -> None:
    """Die with ``spikelab emulate``; sleep with 1 ns timer slack (the 1 ms sampling)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent is already gone
        raise SystemExit(1)


def available_congestion_controls() -> list[str]:
    try:
        text = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    except OSError:
        return []
    return text.split()


def set_congestion_control(sock: socket.socket, name: str) -> None:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, name.encode())
    except OSError as exc:
        have = " ".join(available_congestion_controls()) or "unknown"
        raise SetupError(f"congestion control {name!r} is not available in this kernel "
                         f"({exc.strerror}); available: {have}") from None


def _sleep_until(t_ns: int) -> None:
    while True:
        left = t_ns - time.time_ns()
        if left <= 0:
            return
        time.sleep(min(left / 1e9, 0.5))


def _read_t0() -> int:
    line = sys.stdin.readline()
    if not line.strip():
        raise SystemExit(1)  # the parent gave up before the start
    return int(line)


def _ready() -> None:
    print("ready", flush=True)


def _rst_close(sock: socket.socket) -> None:
    """Close at once with a RST (no FIN exchange through the emulated path after the end)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# ------------------------------------------------------------------------------ sender


class _Flow:
    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.connected = threading.Event()
        self.error: str | None = None
        self.note: str | None = None
        self.bytes_written = 0
        self.connect_ns = 0
        self.samples: list[tuple] = []
        self.outq_ok = True
        self.info_bytes = 0


def _sample(flow: _Flow) -> None:
    try:
        raw = flow.sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, tcpinfo.SIZE)
    except OSError:
        return
    now = time.time_ns()  # just after the kernel copied its state
    info, n = tcpinfo.parse(raw)
    flow.info_bytes = n
    in_flight_bytes = -1
    if flow.outq_ok:
        try:
            outq = struct.unpack("i", fcntl.ioctl(flow.sock.fileno(), SIOCOUTQ,
                                                  b"\0\0\0\0"))[0]
            notsent = struct.unpack("i", fcntl.ioctl(flow.sock.fileno(), SIOCOUTQNSD,
                                                     b"\0\0\0\0"))[0]
            in_flight_bytes = outq - notsent
        except OSError:
            flow.outq_ok = False
    flow.samples.append((now, *(info[f] for f in SAMPLE_FIELDS), in_flight_bytes))


def _send(flow: _Flow, dst: str, t0: int, end: int) -> None:
    spec = flow.spec
    try:
        _sleep_until(t0 + int(spec["start_ns"]))
        flow.sock.settimeout(max((end - time.time_ns()) / 1e9, 0.001))
        flow.connect_ns = time.time_ns()
        flow.sock.connect((dst, int(spec["port"])))
    except TimeoutError:
        # The path lost or held every SYN until the end: a result, not an error.
        flow.note = "not connected by the end of the run"
        return
    except OSError as exc:
        flow.error = f"flow[{spec['flow']}]: connect: {exc}"
        return
    flow.connected.set()
    flow.sock.settimeout(POLL_S)
    size = spec.get("size")
    data = memoryview(bytes(CHUNK))
    while time.time_ns() < end and (size is None or flow.bytes_written < size):
        want = CHUNK if size is None else min(CHUNK, size - flow.bytes_written)
        try:
            flow.bytes_written += flow.sock.send(data[:want])
        except TimeoutError:
            continue
        except OSError as exc:
            if time.time_ns() < end:  # at the end the main thread closes the socket
                flow.error = f"flow[{spec['flow']}]: send: {exc}"
            return


def run_sender(cfg: dict[str, Any]) -> dict[str, Any]:
    flows = [_Flow(spec) for spec in cfg["flows"]]
    for fl in flows:
        set_congestion_control(fl.sock, fl.spec["cc"])
        if fl.spec.get("maxseg"):
            fl.sock.setsockopt(socket.IPPROTO_TCP, TCP_MAXSEG, int(fl.spec["maxseg"]))
        if fl.spec.get("sndbuf"):
            fl.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(fl.spec["sndbuf"]))
    before = counters()
    _ready()
    t0 = _read_t0()
    end = t0 + int(cfg["duration_ns"])
    threads = [threading.Thread(target=_send, args=(fl, cfg["dst"], t0, end), daemon=True)
               for fl in flows]
    for th in threads:
        th.start()
    period = int(cfg.get("sample_ns", 1_000_000))
    tick = t0
    while True:
        now = time.time_ns()
        if now >= end:
            break
        for fl in flows:
            if fl.connected.is_set():
                _sample(fl)
        tick = tick + period if tick + period > now else now + period
        _sleep_until(min(tick, end))
    for fl in flows:
        if fl.connected.is_set():
            _sample(fl)
    after = counters()
    # The senders leave their loop within one send timeout after the end; closing a socket
    # under a send in progress would fail it (EBADF).
    for th in threads:
        th.join(timeout=2 * POLL_S)
    for fl in flows:
        _rst_close(fl.sock)
    return {
        "t0_ns": t0,
        "counters_before": before,
        "counters_after": after,
        "fields": ["t_ns", *SAMPLE_FIELDS, "in_flight_bytes"],
        "flows": [{
            "flow": fl.spec["flow"],
            "error": fl.error,
            "note": fl.note,
            "connect_ns": fl.connect_ns,
            "bytes_written": fl.bytes_written,
            "tcp_info_bytes": fl.info_bytes,
            "samples": fl.samples,
        } for fl in flows],
    }


# ------------------------------------------------------------------------------ receiver


def _receive(spec: dict[str, Any], lsock: socket.socket, end: int, result: dict) -> None:
    lsock.settimeout(max((end - time.time_ns()) / 1e9, 0.001))
    try:
        conn, _ = lsock.accept()
    except OSError:
        return
    result["accept_ns"] = time.time_ns()
    conn.settimeout(POLL_S)
    size = spec.get("size")
    buf = bytearray(1 << 18)
    got = 0
    while time.time_ns() < end:
        try:
            n = conn.recv_into(buf)
        except TimeoutError:
            continue
        except OSError:
            break
        if n == 0:
            break
        now = time.time_ns()
        if now <= end:
            got += n
            result["bytes"] = got
            result["last_ns"] = now
            if size is not None and got >= size and not result.get("complete_ns"):
                result["complete_ns"] = now
    try:
        raw = conn.getsockopt(socket.IPPROTO_TCP, TCP_INFO, tcpinfo.SIZE)
        result["tcp_info"] = tcpinfo.parse(raw)[0]
    except OSError:
        pass
    _rst_close(conn)


def run_receiver(cfg: dict[str, Any]) -> dict[str, Any]:
    listeners = []
    for spec in cfg["flows"]:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if spec.get("rwnd"):
            ls.setsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP, int(spec["rwnd"]))
        ls.bind((cfg["bind"], int(spec["port"])))
        ls.listen(4)
        listeners.append(ls)
    before = counters()
    _ready()
    t0 = _read_t0()
    end = t0 + int(cfg["duration_ns"])
    results = [{"flow": spec["flow"], "bytes": 0} for spec in cfg["flows"]]
    threads = [threading.Thread(target=_receive, args=(spec, ls, end, res), daemon=True)
               for spec, ls, res in zip(cfg["flows"], listeners, results, strict=True)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(max((end - time.time_ns()) / 1e9, 0) + 2.0)
    after = counters()
    return {"t0_ns": t0, "counters_before": before, "counters_after": after,
            "flows": results}


def serve(argv: list[str], module: str, sender: Any, receiver: Any) -> int:
    """The endpoints' command line (``python -m MODULE (sender|receiver) CONFIG.json``): run
    ``sender`` or ``receiver`` on the configuration and write its result file; 2 with one
    line on stderr for a usage or setup error."""
    _die_with_parent()
    if len(argv) != 2 or argv[0] not in ("sender", "receiver"):
        print(f"usage: python -m {module} (sender|receiver) CONFIG.json", file=sys.stderr)
        return 2
    cfg = json.loads(Path(argv[1]).read_text())
    try:
        result = sender(cfg) if argv[0] == "sender" else receiver(cfg)
    except (SetupError, OSError) as exc:
        print(f"{argv[0]}: {exc}", file=sys.stderr, flush=True)
        return 2
    write_whole(Path(cfg["out"]), json.dumps(result))
    return 0


def main(argv: list[str]) -> int:
    return serve(argv, "spikelab.emulate._endpoint", run_sender, run_receiver)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
