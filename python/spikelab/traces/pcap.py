"""A small pure-Python reader of packet captures: classic pcap (either byte order, micro- or
nanosecond timestamps) and pcapng (Section, Interface Description, Enhanced and Simple Packet
Blocks; ``if_tsresol``; ``epb_flags``; packet comments), with Ethernet (VLAN tags too), Linux
cooked (SLL, SLL2) and raw IP link types, and the IPv4/IPv6 and TCP headers a trace import
needs. It reads what tcpdump, Wireshark, the kernel-emulation capture and ``spikelab run
--pcap`` write; no dependency beyond the standard library.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


class CaptureError(ValueError):
    """A capture that cannot be read: one line naming the file and the byte or frame."""


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


@dataclass(slots=True)
class Capture:
    frames: list[Frame] = field(default_factory=list)
    #: The first section's comment (``spikelab run --pcap`` puts its flows' ISNs there).
    section_comment: str = ""
    #: A capture cut short (a copy or a capture stopped mid-write): the byte where its last,
    #: incomplete block or record starts (the frames before it are read), else None.
    truncated_at: int | None = None


LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
#: Link types whose frames are bare IP packets (12 and 14: raw IP on some systems).
_RAW_IP = (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6, 12, 14)
#: The link types whose frames are read (Ethernet, Linux cooked SLL and SLL2, raw IP).
LINKTYPES_READ = frozenset({LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2,
                            *_RAW_IP})


def read(path: str | Path) -> Capture:
    """All frames of a pcap or pcapng file, in file order."""
    cap = Capture()
    cap.frames = list(iter_frames(path, cap))
    return cap


def iter_frames(path: str | Path, meta: Capture | None = None) -> Iterator[Frame]:
    """The frames of a pcap or pcapng file one by one, the file mapped rather than read
    (memory stays that of one frame); the section comment goes to ``meta`` if given."""
    import mmap

    meta = meta if meta is not None else Capture()
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 4:
            raise CaptureError(f"{path}: not a packet capture (too short)")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            magic = data[:4]
            if magic == b"\x0a\x0d\x0d\x0a":
                yield from _iter_pcapng(path, data, meta)
                return
            for endian in ("<", ">"):
                (m,) = struct.unpack(endian + "I", magic)
                if m in (0xA1B2C3D4, 0xA1B23C4D):
                    yield from _iter_pcap(path, data, endian, 1000 if m == 0xA1B2C3D4 else 1,
                                          meta)
                    return
            raise CaptureError(f"{path}: not a pcap or pcapng file (magic {magic.hex()})")


def _iter_pcap(path: str | Path, data, e: str, unit_ns: int, cap: Capture) -> Iterator[Frame]:
    if len(data) < 24:
        raise CaptureError(f"{path}: pcap header cut short")
    linktype = struct.unpack(e + "I", data[20:24])[0] & 0x0FFFFFFF
    i, end = 24, len(data)
    while i + 16 <= end:
        sec, frac, incl, orig = struct.unpack_from(e + "IIII", data, i)
        if i + 16 + incl > end:
            break  # a capture cut short: its complete frames
        yield Frame(sec * 1_000_000_000 + frac * unit_ns, linktype, data[i + 16:i + 16 + incl],
                    orig)
        i += 16 + incl
    if i < end:
        cap.truncated_at = i


def _options(body: bytes, e: str) -> Iterator[tuple[int, bytes]]:
    i = 0
    while i + 4 <= len(body):
        code, length = struct.unpack(e + "HH", body[i:i + 4])
        if code == 0:
            return
        yield code, body[i + 4:i + 4 + length]
        i += 4 + ((length + 3) & ~3)


def _iter_pcapng(path: str | Path, data, cap: Capture) -> Iterator[Frame]:
    e = "<"
    ifaces: list[tuple[int, int, str]] = []  # (linktype, ns per tick, name)
    i = 0
    while i + 12 <= len(data):
        if data[i:i + 4] == b"\x0a\x0d\x0d\x0a":  # a section: its byte order
            bom = data[i + 8:i + 12]
            e = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
            if bom not in (b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d"):
                raise CaptureError(f"{path}: byte {i}: bad pcapng byte-order magic")
            ifaces = []
        kind, total = struct.unpack(e + "II", data[i:i + 8])
        if total < 12 or total % 4:
            raise CaptureError(f"{path}: byte {i}: bad pcapng block length {total}")
        if i + total > len(data):
            break  # cut short: the frames before
        body = data[i + 8:i + total - 4]
        if kind == 0x0A0D0D0A:
            if not cap.section_comment:
                for code, v in _options(body[16:], e):
                    if code == 1:
                        cap.section_comment = v.decode("utf-8", "replace")
        elif kind == 1:
            linktype = struct.unpack(e + "H", body[:2])[0]
            tick, name = 1000, ""
            for code, v in _options(body[8:], e):
                if code == 9 and v:
                    r = v[0]
                    tick = (10 ** max(0, 9 - r)) if not r & 0x80 else max(1, int(1e9 / 2 ** (r & 0x7F)))
                elif code == 2:
                    name = v.decode("utf-8", "replace")
            ifaces.append((linktype, tick, name))
        elif kind in (6, 3):
            if kind == 6:
                iface, hi, lo, incl, orig = struct.unpack(e + "IIIII", body[:20])
                frame = body[20:20 + incl]
                opts = body[20 + ((incl + 3) & ~3):]
                ts = (hi << 32) | lo
            else:
                iface, ts, incl = 0, 0, 0
                (orig,) = struct.unpack(e + "I", body[:4])
                frame = body[4:4 + orig]
                opts = b""
            if iface >= len(ifaces):
                raise CaptureError(f"{path}: byte {i}: packet on undeclared interface {iface}")
            linktype, tick, name = ifaces[iface]
            direction, comment = 0, ""
            for code, v in _options(opts, e):
                if code == 2 and len(v) == 4:
                    direction = struct.unpack(e + "I", v)[0] & 3
                elif code == 1:
                    comment = v.decode("utf-8", "replace")
            yield Frame(ts * tick, linktype, bytes(frame), orig, iface, name, direction,
                        comment)
        i += total
    if i < len(data):
        cap.truncated_at = i


@dataclass(frozen=True, slots=True)
class Tcp:
    """The TCP header fields of one frame (numbers as on the wire)."""

    ts_ns: int
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    #: Payload bytes (from the IP length, so a frame cut at a snap length still counts).
    length: int
    #: The IP packet's bytes (headers and payload): its size on a link.
    wire: int
    tsval: int | None
    tsecr: int | None
    sack: tuple[tuple[int, int], ...]
    iface: int
    direction: int

    @property
    def syn(self) -> bool:
        return bool(self.flags & 0x02)

    @property
    def has_ack(self) -> bool:
        return bool(self.flags & 0x10)


def _ip_payload(frame: Frame) -> tuple[int, bytes] | None:
    """(IP version, the IP packet) of a frame, or None when it carries no IP."""
    d, lt = frame.data, frame.linktype
    if lt == LINKTYPE_ETHERNET:
        if len(d) < 14:
            return None
        etype, off = struct.unpack("!H", d[12:14])[0], 14
        while etype in (0x8100, 0x88A8) and len(d) >= off + 4:
            etype, off = struct.unpack("!H", d[off + 2:off + 4])[0], off + 4
    elif lt == LINKTYPE_LINUX_SLL:
        if len(d) < 16:
            return None
        etype, off = struct.unpack("!H", d[14:16])[0], 16
    elif lt == LINKTYPE_LINUX_SLL2:
        if len(d) < 20:
            return None
        etype, off = struct.unpack("!H", d[0:2])[0], 20
    elif lt in _RAW_IP:
        if not d:
            return None
        etype, off = (0x0800 if d[0] >> 4 == 4 else 0x86DD), 0
    else:
        return None
    if etype == 0x0800:
        return 4, d[off:]
    if etype == 0x86DD:
        return 6, d[off:]
    return None


def _transport(frame: Frame, proto: int) -> tuple[str, str, bytes, int, int] | None:
    """(source, destination, the transport header and what follows of it in the frame, its
    length by the IP header, the IP packet's bytes) of a frame carrying IP protocol
    ``proto``, or None (another protocol, a later fragment, or too short to tell)."""
    ip = _ip_payload(frame)
    if ip is None:
        return None
    version, p = ip
    if version == 4:
        if len(p) < 20 or p[9] != proto:
            return None
        if struct.unpack("!H", p[6:8])[0] & 0x1FFF:
            return None  # a later fragment
        ihl = (p[0] & 0x0F) * 4
        total = struct.unpack("!H", p[2:4])[0]
        src, dst = ".".join(map(str, p[12:16])), ".".join(map(str, p[16:20]))
        return src, dst, p[ihl:], total - ihl, total
    if len(p) < 40 or p[6] != proto:
        return None
    ip_len = struct.unpack("!H", p[4:6])[0]
    return p[8:24].hex(), p[24:40].hex(), p[40:], ip_len, ip_len + 40


def tcp_of(frame: Frame) -> Tcp | None:
    """The TCP header of a frame, or None when the frame is not TCP (or too short to tell)."""
    tr = _transport(frame, 6)
    if tr is None:
        return None
    src, dst, t, ip_len, wire = tr
    if len(t) < 20:
        return None
    sport, dport, seq, ack, off_flags, window = struct.unpack("!HHIIHH", t[:16])
    hlen = (off_flags >> 12) * 4
    tsval = tsecr = None
    sack: list[tuple[int, int]] = []
    opts = t[20:min(hlen, len(t))]
    j = 0
    while j < len(opts):
        kind = opts[j]
        if kind == 0:
            break
        if kind == 1:
            j += 1
            continue
        if j + 1 >= len(opts) or opts[j + 1] < 2:
            break
        length = opts[j + 1]
        body = opts[j + 2:j + length]
        if kind == 8 and len(body) == 8:
            tsval, tsecr = struct.unpack("!II", body)
        elif kind == 5 and len(body) % 8 == 0:
            sack = [struct.unpack("!II", body[k:k + 8]) for k in range(0, len(body), 8)]
        j += length
    return Tcp(frame.ts_ns, src, dst, sport, dport, seq, ack, off_flags & 0x3F, window,
               max(0, ip_len - hlen), wire, tsval, tsecr, tuple(sack), frame.iface, frame.direction)


@dataclass(frozen=True, slots=True)
class Sctp:
    """The SCTP chunks of one frame a trace import needs (RFC 9260 §3): its DATA chunks'
    TSNs and payload bytes, and its SACK (cumulative TSN ack and the duplicate TSNs it
    reports, §3.3.4)."""

    ts_ns: int
    src: str
    dst: str
    sport: int
    dport: int
    #: (TSN, user data bytes) of each DATA chunk, in packet order.
    data: tuple[tuple[int, int], ...]
    #: The SACK's cumulative TSN ack, or None without a SACK chunk.
    cum_tsn: int | None
    dup_tsns: tuple[int, ...]
    #: The IP packet's bytes (headers and payload): its size on a link.
    wire: int
    iface: int
    direction: int


def sctp_of(frame: Frame) -> Sctp | None:
    """The SCTP chunks of a frame, or None when the frame is not SCTP (or too short to tell).
    A chunk cut off by the capture's snap length ends the walk."""
    tr = _transport(frame, 132)
    if tr is None:
        return None
    src, dst, s, seg_len, wire = tr
    s = s[:seg_len]  # no link-layer padding
    if len(s) < 12:
        return None
    sport, dport = struct.unpack("!HH", s[:4])
    data: list[tuple[int, int]] = []
    cum, dups = None, ()
    j = 12
    while j + 4 <= len(s):
        ctype, _flags, length = struct.unpack("!BBH", s[j:j + 4])
        if length < 4:
            break
        body = s[j + 4:j + length]
        if ctype == 0 and len(body) >= 12:  # DATA: TSN, stream, SSN, PPID, user data
            data.append((struct.unpack("!I", body[:4])[0], length - 16))
        elif ctype == 3 and len(body) >= 12:  # SACK: cum TSN, a_rwnd, gap blocks, dups
            cum, _rwnd, n_gap, n_dup = struct.unpack("!IIHH", body[:12])
            k = 12 + 4 * n_gap
            dups = tuple(struct.unpack("!I", body[k + 4 * i:k + 4 * i + 4])[0]
                         for i in range(n_dup) if k + 4 * i + 4 <= len(body))
        j += (length + 3) & ~3
    return Sctp(frame.ts_ns, src, dst, sport, dport, tuple(data), cum, dups, wire,
                frame.iface, frame.direction)
