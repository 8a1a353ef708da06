"""Packet captures, read by the Rust core (``spikelab_core::capture``): classic pcap (either
byte order, micro- or nanosecond timestamps) and pcapng (Section, Interface Description,
Enhanced and Simple Packet Blocks, each section in its own byte order; ``if_tsresol``;
``if_name``; ``epb_flags``; packet comments), with Ethernet (VLAN tags too), Linux cooked
(SLL, SLL2) and raw IP link types, and the IPv4/IPv6, TCP and SCTP headers a trace import
needs. It reads what tcpdump, Wireshark, the kernel-emulation capture and ``spikelab run
--pcap`` write.

The file is read as a stream (memory: one frame, plus the columns handed back) without the
GIL, and crosses into Python as columns, never one object per frame:

- :func:`transport`: the TCP segments and SCTP packets as numpy columns (what
  :func:`spikelab.traces.read_pcap` reads);
- :func:`frames`: every frame as an Arrow table (time, link type, interface, direction,
  lengths, bytes, comment); :func:`read` wraps it for tests and tools.

A capture cut short (a copy, or a capture stopped mid-write) gives the frames before the cut
and says where it was cut (``truncated_at``); anything else malformed raises
:class:`CaptureError`, one line naming the file and the byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import _core

#: A capture that cannot be read: one line naming the file and the byte.
CaptureError = _core.CaptureError

LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
#: The link types whose frames are read (Ethernet, Linux cooked SLL and SLL2, raw IP; 12
#: and 14 are raw IP on some systems).
LINKTYPES_READ = frozenset({LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2,
                            LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6, 12, 14})


def _arrays(cols: dict[str, tuple[str, bytes]]) -> dict[str, np.ndarray]:
    """The core's (dtype, little-endian bytes) columns as numpy arrays (no copy)."""
    return {name: np.frombuffer(data, dtype=dtype) for name, (dtype, data) in cols.items()}


@dataclass
class Transport:
    """A capture's TCP segments and SCTP packets, in file order, as columns.

    ``tcp``: ``ts_ns``, ``conn`` (a code into ``tcp_conns``), ``seq``, ``ack``, ``flags``,
    ``window``, ``length`` (payload bytes by the IP length), ``wire`` (IP bytes),
    ``has_ts``/``tsval``/``tsecr`` (RFC 7323), ``sack_count`` and the first two SACK blocks
    ``sack_le0``, ``sack_re0``, ``sack_le1``, ``sack_re1``, ``iface``, ``direction``.
    ``sctp``: ``ts_ns``, ``conn``, ``wire``, ``has_cum``/``cum_tsn`` (a SACK's cumulative
    TSN ack), the DATA chunks ``chunk_tsn``/``chunk_bytes`` of packet i at
    ``data_offsets[i]:data_offsets[i + 1]``, its duplicate TSNs ``dup_tsn`` at
    ``dup_offsets[i]:dup_offsets[i + 1]``, ``iface``, ``direction``."""

    tcp: dict[str, np.ndarray]
    sctp: dict[str, np.ndarray]
    #: (source, port, destination, port) of each ``conn`` code, in order of first appearance
    #: (IPv4 dotted, IPv6 as 32 hexadecimal digits).
    tcp_conns: list[tuple[str, int, str, int]]
    sctp_conns: list[tuple[str, int, str, int]]
    #: Frames in the file (every interface, dropped copies included).
    frames: int
    #: Link types seen whose frames are not read, ascending.
    other_links: list[int]
    #: With an interface asked for: the interfaces seen (name, else number).
    iface_names: list[str]
    #: Whether a frame was on the interface asked for (True without one).
    matched: bool
    #: A capture cut short: the byte where its incomplete last block or record starts.
    truncated_at: int | None
    #: The first section's comment (``spikelab run --pcap`` puts its flows' ISNs there).
    section_comment: str
    size: int


def transport(path: str | Path, iface: str | None = None) -> Transport:
    """The TCP segments and SCTP packets of a pcap or pcapng file (with ``iface``: of that
    pcapng interface only, by name or number). Frames the kernel emulator's capture records
    as dropped (comment ``drop …``) are left out: that copy never left the emulator."""
    d = _core.capture_transport(str(path), iface)
    return Transport(tcp=_arrays(d["tcp"]), sctp=_arrays(d["sctp"]),
                     tcp_conns=d["tcp_conns"], sctp_conns=d["sctp_conns"],
                     frames=d["frames"], other_links=d["other_links"],
                     iface_names=d["iface_names"], matched=d["matched"],
                     truncated_at=d["truncated_at"], section_comment=d["section_comment"],
                     size=d["size"])


@dataclass(frozen=True, slots=True)
class Frame:
    ts_ns: int
    linktype: int
    data: bytes
    orig_len: int
    iface: int = 0
    iface_name: str = ""
    #: ``epb_flags`` direction: 1 inbound, 2 outbound, 0 unknown.
    direction: int = 0
    comment: str = ""


@dataclass
class Capture:
    """A whole capture: its frames as an Arrow table (:func:`frames`), its first section's
    comment, and where it was cut short (None if whole)."""

    table: pa.Table
    section_comment: str = ""
    truncated_at: int | None = None
    size: int = 0
    _frames: list[Frame] | None = field(default=None, repr=False)

    @property
    def frames(self) -> list[Frame]:
        """The frames as objects (one per frame: for tests and small captures)."""
        if self._frames is None:
            cols = {name: self.table.column(name).to_pylist() for name in self.table.schema.names}
            self._frames = [Frame(*row) for row in zip(
                cols["ts_ns"], cols["linktype"], cols["data"], cols["orig_len"], cols["iface"],
                cols["iface_name"], cols["direction"], cols["comment"], strict=True)]
        return self._frames


def frames(path: str | Path) -> Capture:
    """Every frame of a pcap or pcapng file, in file order: ``table`` has the columns
    ``ts_ns`` (int64), ``linktype``, ``iface`` (uint32), ``iface_name`` (string),
    ``direction`` (uint8), ``orig_len`` (uint32), ``data`` (binary, as captured) and
    ``comment`` (string, decoded as UTF-8 with replacement). The whole capture is in memory."""
    d = _core.capture_frames(str(path))
    a = _arrays({k: d[k] for k in ("ts_ns", "linktype", "iface", "direction", "orig_len",
                                   "data_offsets", "comment_offsets", "iface_name")})
    n = a["ts_ns"].size
    data = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(a["data_offsets"]),
                                                        pa.py_buffer(d["data"])])
    comment = pa.Array.from_buffers(pa.large_string(), n,
                                    [None, pa.py_buffer(a["comment_offsets"]),
                                     pa.py_buffer(d["comment"])])
    names = pa.DictionaryArray.from_arrays(pa.array(a["iface_name"]),
                                           pa.array(d["iface_names"], pa.string()))
    table = pa.table({
        "ts_ns": pa.array(a["ts_ns"]), "linktype": pa.array(a["linktype"]),
        "iface": pa.array(a["iface"]), "iface_name": names.dictionary_decode(),
        "direction": pa.array(a["direction"]), "orig_len": pa.array(a["orig_len"]),
        "data": data, "comment": comment.cast(pa.string())})
    return Capture(table, d["section_comment"], d["truncated_at"], d["size"])


def read(path: str | Path) -> Capture:
    """All frames of a pcap or pcapng file (:func:`frames`)."""
    return frames(path)
