"""The few calls of libusrsctp (the FreeBSD SCTP stack as a user-space library) that the
emulated SCTP endpoints need, through ctypes.

The kernels spikelab runs on usually have no SCTP sockets, so an emulated SCTP flow runs
usrsctp in the sender's and the receiver's namespaces instead: native SCTP (IP protocol 132)
over raw sockets, which needs root as the emulator does. The structures follow
``usrsctp.h`` of usrsctp 0.9.5 (Debian's ``libusrsctp2``); their layouts are the C ones on
Linux (natural alignment, ``sockaddr_storage`` of 128 bytes).
"""

from __future__ import annotations

import ctypes
import socket
from typing import Any

LIBRARY = "libusrsctp.so.2"
INSTALL_HINT = ("SCTP flows in spikelab emulate need libusrsctp, the FreeBSD SCTP stack as a "
                "library (Debian/Ubuntu: apt install libusrsctp2)")

AF_INET = 2
SOCK_STREAM = 1
IPPROTO_SCTP = 132
SCTP_FUTURE_ASSOC = 0
SCTP_NODELAY = 0x04
SCTP_PEER_ADDR_PARAMS = 0x0A
SCTP_STATUS = 0x100
SPP_HB_DISABLE = 0x02

# Indices into struct sctpstat as uint32s (two for the leading sctp_timeval): the counters an
# emulated run reports. They are those of usrsctp 0.9.5.0 (Debian's libusrsctp2), whose struct
# is 664 bytes; usrsctp_get_stat copies the library's own struct, whatever its size, so it is
# given a buffer far larger than any struct sctpstat and the size it wrote is checked.
STAT_BYTES = 664
_STAT_BUFFER_WORDS = 16384  # 64 KiB
_UNWRITTEN = 0xA5A5A5A5
STAT_INDEX = {
    "sendretransdata": 43,  # DATA chunks retransmitted
    "sendfastretrans": 44,  # DATA chunks fast-retransmitted
    "sendheartbeat": 46,
    "recvdupdata": 26,
    "timodata": 68,  # T3-rtx expiries
    "timoheartbeat": 73,
    "timoinit": 70,
}


class Unavailable(Exception):
    """libusrsctp cannot be loaded."""


class SockaddrIn(ctypes.Structure):
    _fields_ = [("family", ctypes.c_uint16), ("port", ctypes.c_uint16),
                ("addr", ctypes.c_uint8 * 4), ("zero", ctypes.c_uint8 * 8)]


def sockaddr(ip: str, port: int) -> SockaddrIn:
    s = SockaddrIn()
    s.family = AF_INET
    s.port = socket.htons(port)
    s.addr[:] = list(socket.inet_aton(ip))
    return s


SockaddrStorage = ctypes.c_uint64 * 16


class Paddrinfo(ctypes.Structure):
    _fields_ = [("address", SockaddrStorage), ("assoc_id", ctypes.c_uint32),
                ("state", ctypes.c_int32), ("cwnd", ctypes.c_uint32),
                ("srtt", ctypes.c_uint32), ("rto", ctypes.c_uint32), ("mtu", ctypes.c_uint32)]


class Status(ctypes.Structure):
    _fields_ = [("assoc_id", ctypes.c_uint32), ("state", ctypes.c_int32),
                ("rwnd", ctypes.c_uint32), ("unackdata", ctypes.c_uint16),
                ("penddata", ctypes.c_uint16), ("instrms", ctypes.c_uint16),
                ("outstrms", ctypes.c_uint16), ("fragmentation_point", ctypes.c_uint32),
                ("primary", Paddrinfo)]


class PaddrParams(ctypes.Structure):
    _fields_ = [("address", SockaddrStorage), ("assoc_id", ctypes.c_uint32),
                ("hbinterval", ctypes.c_uint32), ("pathmtu", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("ipv6_flowlabel", ctypes.c_uint32),
                ("pathmaxrxt", ctypes.c_uint16), ("dscp", ctypes.c_uint8)]


assert ctypes.sizeof(Status) == 176 and ctypes.sizeof(PaddrParams) == 152


def load() -> ctypes.CDLL:
    """The library with the prototypes used here; :class:`Unavailable` if it is missing."""
    try:
        lib = ctypes.CDLL(LIBRARY, use_errno=True)
    except OSError as exc:
        raise Unavailable(f"{INSTALL_HINT}: {exc}") from None
    vp, u32 = ctypes.c_void_p, ctypes.c_uint32
    lib.usrsctp_init.argtypes = [ctypes.c_uint16, vp, vp]
    lib.usrsctp_init.restype = None
    lib.usrsctp_socket.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, vp, vp, u32, vp]
    lib.usrsctp_socket.restype = vp
    for name in ("usrsctp_bind", "usrsctp_connect"):
        getattr(lib, name).argtypes = [vp, vp, u32]
        getattr(lib, name).restype = ctypes.c_int
    lib.usrsctp_listen.argtypes = [vp, ctypes.c_int]
    lib.usrsctp_accept.argtypes = [vp, vp, vp]
    lib.usrsctp_accept.restype = vp
    lib.usrsctp_setsockopt.argtypes = [vp, ctypes.c_int, ctypes.c_int, vp, u32]
    lib.usrsctp_getsockopt.argtypes = [vp, ctypes.c_int, ctypes.c_int, vp, ctypes.POINTER(u32)]
    lib.usrsctp_sendv.argtypes = [vp, vp, ctypes.c_size_t, vp, ctypes.c_int, vp, u32,
                                  ctypes.c_uint, ctypes.c_int]
    lib.usrsctp_sendv.restype = ctypes.c_ssize_t
    lib.usrsctp_recvv.argtypes = [vp, vp, ctypes.c_size_t, vp, ctypes.POINTER(u32), vp,
                                  ctypes.POINTER(u32), ctypes.POINTER(ctypes.c_uint),
                                  ctypes.POINTER(ctypes.c_int)]
    lib.usrsctp_recvv.restype = ctypes.c_ssize_t
    lib.usrsctp_get_stat.argtypes = [vp]
    lib.usrsctp_get_stat.restype = None
    return lib


def available() -> bool:
    """Whether libusrsctp can be loaded here."""
    try:
        load()
    except Unavailable:
        return False
    return True


def sysctl(lib: ctypes.CDLL, name: str, value: int) -> None:
    """Set one of usrsctp's ``sctp_*`` defaults (before the sockets are made)."""
    fn = getattr(lib, f"usrsctp_sysctl_set_sctp_{name}")
    fn.argtypes = [ctypes.c_uint32]
    if fn(int(value)) != 0:
        raise OSError(ctypes.get_errno(), f"usrsctp refused sctp_{name} = {value}")


def setsockopt(lib: ctypes.CDLL, so: int, opt: int, value: Any) -> None:
    if lib.usrsctp_setsockopt(so, IPPROTO_SCTP, opt, ctypes.byref(value),
                              ctypes.sizeof(value)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"usrsctp setsockopt {opt:#x}: {errno_name(err)}")


def status(lib: ctypes.CDLL, so: int) -> Status | None:
    st = Status()
    n = ctypes.c_uint32(ctypes.sizeof(st))
    if lib.usrsctp_getsockopt(so, IPPROTO_SCTP, SCTP_STATUS, ctypes.byref(st),
                              ctypes.byref(n)) != 0:
        return None
    return st


def stats(lib: ctypes.CDLL) -> dict[str, int]:
    """The counters of STAT_INDEX. The first call in a process checks the size of the library's
    struct sctpstat (refused, Unavailable, unless it is the size whose layout the indices
    describe); later calls reuse the checked buffer (the endpoints sample the counters often)."""
    global _STATS
    if _STATS is None:
        words = (ctypes.c_uint32 * _STAT_BUFFER_WORDS)()
        ctypes.memset(words, _UNWRITTEN & 0xFF, ctypes.sizeof(words))
        lib.usrsctp_get_stat(words)
        read_stats(words)
        _STATS = words
    lib.usrsctp_get_stat(_STATS)
    return {k: int(_STATS[i]) for k, i in STAT_INDEX.items()}


_STATS: Any = None  # the checked buffer, once the first call has checked it


def read_stats(words: Any) -> dict[str, int]:
    """STAT_INDEX's counters from a buffer usrsctp_get_stat filled over _UNWRITTEN words."""
    raw = bytes(words)
    written = -(-len(raw.rstrip(_UNWRITTEN.to_bytes(4, "little")[:1])) // 4)
    if written * 4 != STAT_BYTES:
        raise Unavailable(f"libusrsctp's struct sctpstat is {written * 4} bytes, not the "
                          f"{STAT_BYTES} of usrsctp 0.9.5.0 whose counter positions spikelab "
                          f"reads; install libusrsctp 0.9.5.0 (Debian's libusrsctp2)")
    return {k: int(words[i]) for k, i in STAT_INDEX.items()}


def errno_name(err: int) -> str:
    import os
    return os.strerror(err) if err else "error"
