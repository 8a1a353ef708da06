"""The SCTP endpoints of an emulated run, one process per flow and side:
``python -m spikelab.emulate._sctp_endpoint (sender|receiver) CONFIG.json``, started inside
the sender's / receiver's namespace with the same protocol as the TCP endpoints
(``_endpoint``): set up, print ``ready``, read time 0 from stdin, run until the end, write
the result file, exit 0 (a setup error: one line on stderr, exit code 2).

The stack is usrsctp (``usrsctp.py``), one per process, so its counters (T3-rtx expiries,
fast retransmissions) are the flow's own. Every usrsctp stack in a namespace sees every SCTP
packet there (raw sockets); ``sctp_blackhole = 2`` keeps one from answering another flow's
packets with an ABORT.

The sender connects at ``t0 + start`` and sends messages of ``message_size`` bytes (bulk: as
fast as the stack takes them; file: ``size`` bytes), sampling the association's status (the
primary destination's cwnd, srtt, RTO; outstanding chunks) and the stack's counters every
``sample_ns``. The receiver accepts and reads, counting the bytes delivered to it.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from typing import Any

from . import usrsctp as u
from ._endpoint import SetupError, _read_t0, _ready, _sleep_until, serve
from .view import SctpView

MS = 1_000_000
SAMPLE_FIELDS = ("t_ns", "state", "cwnd", "srtt_ms", "rto_ms", "unackdata", "penddata",
                 "peer_rwnd", *u.STAT_INDEX)


def _ms(ns: int) -> int:
    return max(1, round(ns / MS))


def _stack(s: SctpView, *, sndbuf: int) -> ctypes.CDLL:
    """usrsctp started with the flow's settings as its defaults (docs/emulation.md, "SCTP
    flows" lists what maps and what does not)."""
    try:
        lib = u.load()
    except u.Unavailable as exc:
        raise SetupError(str(exc)) from None
    lib.usrsctp_init(0, None, None)
    try:
        u.stats(lib)  # a library whose counters cannot be read is refused before any socket
    except u.Unavailable as exc:
        raise SetupError(str(exc)) from None
    settings = {
        "blackhole": 2,
        "ecn_enable": 0,
        "pr_enable": 0,
        "nrsack_enable": 0,
        "auth_enable": 0,
        "asconf_enable": 0,
        "reconfig_enable": 0,
        "default_cc_module": 0,  # RFC 4960's congestion control
        "rto_initial_default": _ms(s["rto_initial_ns"]),
        "rto_min_default": _ms(s["rto_min_ns"]),
        "rto_max_default": _ms(s["rto_max_ns"]),
        "init_rto_max_default": _ms(s["rto_max_ns"]),
        "assoc_rtx_max_default": s["assoc_max_retrans"],
        "path_rtx_max_default": s["path_max_retrans"],
        "init_rtx_max_default": s["max_init_retransmits"],
        "heartbeat_interval_default": _ms(s["hb_interval_ns"]),
        "delayed_sack_time_default": _ms(s["sack_delay_ns"]) if s["sack_delay_ns"] else 0,
        "sack_freq_default": s["sack_freq"],
        "max_burst_default": s["max_burst"] or 0,
        "use_cwnd_based_maxburst": 1 if s["max_burst_mode"] == "clamp" else 0,
        "recvspace": s["recv_buffer"],
        "sendspace": sndbuf,
    }
    if (pf := s.get("pf_max_retrans")) is not None:
        settings["path_pf_threshold"] = pf
    for name, value in settings.items():
        u.sysctl(lib, name, value)
    return lib


def _socket(lib: ctypes.CDLL, s: SctpView) -> int:
    so = lib.usrsctp_socket(u.AF_INET, u.SOCK_STREAM, u.IPPROTO_SCTP, None, None, 0, None)
    if not so:
        raise SetupError(f"usrsctp_socket: {u.errno_name(ctypes.get_errno())} (SCTP over raw "
                         "sockets needs root)")
    u.setsockopt(lib, so, u.SCTP_NODELAY, ctypes.c_int(1))
    if not s["heartbeats"]:
        p = u.PaddrParams(assoc_id=u.SCTP_FUTURE_ASSOC, flags=u.SPP_HB_DISABLE)
        u.setsockopt(lib, so, u.SCTP_PEER_ADDR_PARAMS, p)
    return so


# ------------------------------------------------------------------------------ sender


def run_sender(cfg: dict[str, Any]) -> dict[str, Any]:
    spec = cfg["flow"]
    s = spec["sctp"]
    lib = _stack(s, sndbuf=max(4 * s["recv_buffer"], 1 << 20))
    so = _socket(lib, s)
    if len(cfg.get("addrs", [])) > 1:
        # Every address of the host in the INIT, so the peer answers each network from its
        # own address there.
        any_addr = u.sockaddr("0.0.0.0", 0)
        if lib.usrsctp_bind(so, ctypes.byref(any_addr), ctypes.sizeof(any_addr)) != 0:
            raise SetupError(f"bind: {u.errno_name(ctypes.get_errno())}")
    before = u.stats(lib)
    _ready()
    t0 = _read_t0()
    end = t0 + int(cfg["duration_ns"])
    # A connect or send that fails during the run is the association failing (INIT or
    # DATA retransmissions used up, RFC 9260 §5.1 and §8.1): the flow's row says so.
    st: dict[str, Any] = {"error": None, "note": None, "assoc_failed": False,
                          "bytes_written": 0, "connect_ns": 0, "established_ns": 0}
    connected = threading.Event()

    def send() -> None:
        _sleep_until(t0 + int(spec["start_ns"]))
        st["connect_ns"] = time.time_ns()
        # The primary: the address connected to (a multihomed peer lists its others in
        # its INIT ACK).
        primary = cfg.get("addrs", [cfg["dst"]])[int(s.get("primary", 0))]
        dst = u.sockaddr(primary, int(spec["port"]))
        if lib.usrsctp_connect(so, ctypes.byref(dst), ctypes.sizeof(dst)) != 0:
            if time.time_ns() < end:
                st["assoc_failed"] = True
                st["note"] = f"connect: {u.errno_name(ctypes.get_errno())}"
            return
        st["established_ns"] = time.time_ns()
        connected.set()
        size = spec.get("size")
        msg = ctypes.create_string_buffer(b"\x5a" * int(s["message_size"]))
        left = size if size is not None else None
        while time.time_ns() < end and (left is None or left > 0):
            n = int(s["message_size"]) if left is None else min(int(s["message_size"]), left)
            r = lib.usrsctp_sendv(so, msg, n, None, 0, None, 0, 0, 0)
            if r < 0:
                if time.time_ns() < end:
                    st["assoc_failed"] = True
                    st["note"] = f"send: {u.errno_name(ctypes.get_errno())}"
                return
            st["bytes_written"] += r
            if left is not None:
                left -= r

    th = threading.Thread(target=send, daemon=True)
    th.start()
    period = int(cfg.get("sample_ns", MS))
    samples: list[list[int]] = []
    tick = t0
    while True:
        now = time.time_ns()
        if now >= end:
            break
        if connected.is_set():
            _sample(lib, so, samples)
        tick = tick + period if tick + period > now else now + period
        _sleep_until(min(tick, end))
    if connected.is_set():
        _sample(lib, so, samples)
    return {
        "t0_ns": t0,
        "stats_before": before,
        "stats_after": u.stats(lib),
        "fields": list(SAMPLE_FIELDS),
        "flows": [{"flow": spec["flow"], "error": st["error"], "note": st["note"],
                   "assoc_failed": st["assoc_failed"],
                   "connect_ns": st["connect_ns"], "established_ns": st["established_ns"],
                   "bytes_written": st["bytes_written"], "samples": samples}],
    }


def _sample(lib: ctypes.CDLL, so: int, out: list[list[int]]) -> None:
    now = time.time_ns()
    st = u.status(lib, so)
    if st is None:
        return
    c = u.stats(lib)
    p = st.primary
    out.append([now, st.state, p.cwnd, p.srtt, p.rto, st.unackdata, st.penddata, st.rwnd,
                *c.values()])


# ------------------------------------------------------------------------------ receiver


def run_receiver(cfg: dict[str, Any]) -> dict[str, Any]:
    spec = cfg["flow"]
    s = spec["sctp"]
    lib = _stack(s, sndbuf=1 << 16)
    ls = _socket(lib, s)
    # Bound to every address of the host when the association is multihomed: the INIT ACK
    # then lists them all (loopback aside), and the peer has one destination per address.
    multihomed = len(cfg.get("addrs", [])) > 1
    addr = u.sockaddr("0.0.0.0" if multihomed else cfg["bind"], int(spec["port"]))
    if lib.usrsctp_bind(ls, ctypes.byref(addr), ctypes.sizeof(addr)) != 0:
        raise SetupError(f"bind {cfg['bind']}:{spec['port']}: "
                         f"{u.errno_name(ctypes.get_errno())}")
    if lib.usrsctp_listen(ls, 1) != 0:
        raise SetupError(f"listen: {u.errno_name(ctypes.get_errno())}")
    _ready()
    t0 = _read_t0()
    end = t0 + int(cfg["duration_ns"])
    res: dict[str, Any] = {"flow": spec["flow"], "bytes": 0}
    size = spec.get("size")

    def receive() -> None:
        conn = lib.usrsctp_accept(ls, None, None)
        if not conn:
            return
        res["accept_ns"] = time.time_ns()
        buf = ctypes.create_string_buffer(1 << 16)
        frm = ctypes.create_string_buffer(128)
        info = ctypes.create_string_buffer(128)
        got = 0
        while True:
            fl, il = ctypes.c_uint32(128), ctypes.c_uint32(128)
            it, flags = ctypes.c_uint(0), ctypes.c_int(0)
            n = lib.usrsctp_recvv(conn, buf, len(buf), frm, ctypes.byref(fl), info,
                                  ctypes.byref(il), ctypes.byref(it), ctypes.byref(flags))
            now = time.time_ns()
            if n <= 0 or now > end:
                return
            got += n
            res["bytes"] = got
            res["last_ns"] = now
            if size is not None and got >= size and not res.get("complete_ns"):
                res["complete_ns"] = now

    threading.Thread(target=receive, daemon=True).start()
    _sleep_until(end)
    return {"t0_ns": t0, "flows": [dict(res)], "stats": u.stats(lib)}


def main(argv: list[str]) -> int:
    rc = serve(argv, "spikelab.emulate._sctp_endpoint", run_sender, run_receiver)
    if rc:
        return rc
    sys.stdout.flush()
    # usrsctp's threads and a receive or send still blocked in the library: leave at once.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
