"""The pure-Python capture reader and pcap import that the Rust reader replaced (issue 40),
kept verbatim as the reference the tests hold the new path against (tests/test_traces.py,
``test_the_rust_reader_imports_exactly_as_the_python_reader_did``): frames read here with
``struct`` one by one, their TCP/SCTP headers parsed into objects, and the connection's sends
and ACKs walked in a Python loop. Slow (about 12 s and 0.8 GB for 750,000 frames); not used
by spikelab itself.
"""


from __future__ import annotations

import bisect
import math
import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from spikelab.traces import Samples, TraceError, _clip


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


# ------------------------------------------------------------------ the import (traces.read_pcap)


@dataclass
class _Sends:
    """What a capture at the sender shows of one connection, in one sequence space (TCP:
    bytes; SCTP: TSNs): each data packet sent (time, start, end, IP bytes, whether it resent
    anything), the index of each start's first transmission, the duplicates the receiver
    reported (TCP DSACK blocks, SCTP duplicate TSNs), the RTT samples as (packet index, ACK
    arrival) and every ACK (arrival, cumulative ACK, its RTT sample: ms, NaN for none)."""

    conn: str
    protocol: str
    t0: int
    rtt_from: str = ""
    d_t: list[int] = field(default_factory=list)
    d_seq: list[int] = field(default_factory=list)
    d_end: list[int] = field(default_factory=list)
    d_wire: list[int] = field(default_factory=list)
    d_retx: list[bool] = field(default_factory=list)
    first_idx: dict[int, int] = field(default_factory=dict)
    #: end -> index of the original ending there; the ends of retransmissions.
    end_idx: dict[int, int] = field(default_factory=dict)
    retx_ends: set[int] = field(default_factory=set)
    dsacked: list[tuple[int, int]] = field(default_factory=list)
    pairs: list[tuple[int, int]] = field(default_factory=list)
    ack_t: list[int] = field(default_factory=list)
    ack_v: list[int] = field(default_factory=list)
    ack_rtt: list[float] = field(default_factory=list)
    highest: int = 0
    last_ack: int | None = None

    def send(self, ts_ns: int, seq: int, end: int, wire: int) -> int:
        """Records a data packet; returns its index."""
        i = len(self.d_t)
        is_retx = seq < self.highest
        self.d_t.append(ts_ns)
        self.d_seq.append(seq)
        self.d_end.append(end)
        self.d_wire.append(wire)
        self.d_retx.append(is_retx)
        if is_retx:
            self.retx_ends.add(end)
        else:
            self.first_idx[seq] = i
            self.end_idx[end] = i
        self.highest = max(self.highest, end)
        return i

    def ack(self, ts_ns: int, ack: int) -> bool:
        """Records an ACK; whether it advances the cumulative ACK."""
        self.ack_t.append(ts_ns)
        self.ack_v.append(ack)
        self.ack_rtt.append(math.nan)
        if self.last_ack is None or ack > self.last_ack:
            self.last_ack = ack
            return True
        return False

    def ended_original(self, ack: int) -> int | None:
        """The packet sent once that this ACK exactly ends (Karn's rule), if any."""
        return self.end_idx.get(ack) if ack not in self.retx_ends else None

    def sample(self, i: int | None, ts_ns: int) -> None:
        """The last ACK's RTT sample: packet ``i`` acknowledged at ``ts_ns``."""
        if i is not None and ts_ns >= self.d_t[i]:
            self.pairs.append((i, ts_ns))
            self.ack_rtt[-1] = (ts_ns - self.d_t[i]) / 1e6


def _largest(pkts: list, size, path: Path, what: str) -> tuple[tuple, tuple]:
    """The (forward, reverse) addresses of the connection carrying the most payload."""
    payload: dict[tuple, int] = {}
    for s in pkts:
        k = (s.src, s.sport, s.dst, s.dport)
        payload[k] = payload.get(k, 0) + size(s)
    fwd = max(payload, key=payload.get)
    if payload[fwd] == 0:
        raise TraceError(f"{path}: no {what}")
    return fwd, (fwd[2], fwd[3], fwd[0], fwd[1])


def _tcp_sends(segs: list, path: Path) -> _Sends:
    """The connection carrying the most payload (bytes; RTT samples from timestamps when
    the ACKs echo them, else from data/ACK pairs, Karn)."""
    fwd, rev = _largest(segs, lambda s: s.length, path, "TCP segment carries data")
    out = _Sends(f"{fwd[0]}:{fwd[1]} -> {fwd[2]}:{fwd[3]}", "tcp", segs[0].ts_ns)
    tsval_idx: dict[int, int] = {}   # TSval -> index of the first segment that carried it
    base = None
    use_ts = None
    for s in segs:
        k = (s.src, s.sport, s.dst, s.dport)
        if k == fwd:
            if s.syn:
                base = s.seq + 1
                continue
            if s.length == 0:
                continue
            if base is None:
                base = s.seq
            seq = (s.seq - base) & 0xFFFFFFFF
            i = out.send(s.ts_ns, seq, seq + s.length, s.wire)
            if s.tsval is not None and s.tsval not in tsval_idx:
                tsval_idx[s.tsval] = i
        elif k == rev and s.has_ack and base is not None and not s.syn:
            ack = (s.ack - base) & 0xFFFFFFFF
            advanced = out.ack(s.ts_ns, ack)
            if s.sack:
                # A DSACK (RFC 2883): the first block below the ACK or inside the second.
                blocks = [((le - base) & 0xFFFFFFFF, (re_ - base) & 0xFFFFFFFF)
                          for le, re_ in s.sack]
                (le, re_), rest = blocks[0], blocks[1:2]
                if re_ <= ack or (rest and rest[0][0] <= le and re_ <= rest[0][1]):
                    out.dsacked.append((le, re_))
            if use_ts is None and s.tsecr is not None:
                use_ts = True
            if advanced:
                out.sample(tsval_idx.get(s.tsecr) if use_ts else out.ended_original(ack),
                           s.ts_ns)
    out.rtt_from = "timestamps" if use_ts else "data/ACK pairs (Karn)"
    return out


def _sctp_sends(pkts: list, path: Path) -> _Sends:
    """The association carrying the most DATA bytes: its DATA packets in TSN space (a packet
    covers its lowest to its highest TSN + 1), its SACKs' cumulative TSN + 1 as the ACK, the
    duplicate TSNs they report (RFC 9260 §3.3.4) as one-TSN blocks. RTT samples pair a SACK
    that advances the cumulative TSN to the end of a packet sent once (Karn, §6.3.1)."""
    fwd, rev = _largest(pkts, lambda s: sum(n for _, n in s.data), path,
                        "SCTP packet carries DATA")
    out = _Sends(f"{fwd[0]}:{fwd[1]} -> {fwd[2]}:{fwd[3]}", "sctp", pkts[0].ts_ns,
                 "DATA/SACK pairs (Karn)")
    base = None
    for s in pkts:
        k = (s.src, s.sport, s.dst, s.dport)
        if k == fwd and s.data:
            if base is None:
                base = s.data[0][0]
            rel = [(tsn - base) & 0xFFFFFFFF for tsn, _ in s.data]
            out.send(s.ts_ns, min(rel), max(rel) + 1, s.wire)
        elif k == rev and s.cum_tsn is not None and base is not None:
            ack = (s.cum_tsn + 1 - base) & 0xFFFFFFFF
            if ack > out.highest:  # before the first DATA (the handshake's TSN - 1): nothing
                ack = 0
            advanced = out.ack(s.ts_ns, ack)
            out.dsacked += [((d - base) & 0xFFFFFFFF, ((d - base) & 0xFFFFFFFF) + 1)
                            for d in s.dup_tsns]
            if advanced:
                out.sample(out.ended_original(ack), s.ts_ns)
    return out


def read_pcap(path: str | Path, *, share: float = 0.5, iface: str | None = None,
              rate_bps: float | None = None, queue: int | None = None) -> Samples:
    """A capture of one TCP connection or SCTP association, taken at its sender → delay and
    loss samples (the protocol carrying more payload is read).

    With ``rate_bps`` (the bottleneck rate a scenario's rate stage re-creates), each sample
    loses the time its segment would have queued behind the sender's own data at that rate
    (a virtual FIFO fed with the captured sends, losses left out), so the profile holds the
    path's delay without the queue the rate stage will build again. With ``queue`` too (that
    stage's queue, packets), a lost segment that found the virtual queue full is the rate
    stage's drop, not the path's, and stays out of the loss column."""
    if queue is not None and not rate_bps:
        raise TraceError("--queue needs --rate (the virtual queue's rate)")
    _pcap = sys.modules[__name__]

    path = Path(path)
    names: set[str] = set()
    matched = False
    segs = []
    chunks = []
    meta = _pcap.Capture()
    frames = 0
    other_links: set[int] = set()
    for f in _pcap.iter_frames(path, meta):  # one frame at a time: only the headers are kept
        frames += 1
        if f.linktype not in _pcap.LINKTYPES_READ:
            other_links.add(f.linktype)
        if iface is not None:
            names.add(f.iface_name or str(f.iface))
            if iface not in (f.iface_name, str(f.iface)):
                continue
        matched = True
        # The kernel emulator's capture also records each dropped frame (comment "drop ..."):
        # that copy never left the emulator.
        if f.comment.startswith("drop "):
            continue
        t = _pcap.tcp_of(f)
        if t is not None:
            segs.append(t)
            continue
        c = _pcap.sctp_of(f)
        if c is not None:
            chunks.append(c)
    if iface is not None and not matched:
        known = (f"interfaces: {_clip(', '.join(sorted(names)))}" if names
                 else "it has no frames")
        raise TraceError(f"--interface: no frames on {iface!r} in {path} ({known})")
    if not segs and not chunks:
        # Say what was there instead: a capture of nothing, one cut short, one of a link
        # whose frames are not read.
        why = [f"in its {frames:,} frame{'' if frames == 1 else 's'}"]
        if meta.truncated_at is not None:
            why.append(f"the capture is cut short at byte {meta.truncated_at:,}")
        if other_links:
            why.append("link type " + ", ".join(map(str, sorted(other_links)))
                       + " is not read (Ethernet, Linux cooked SLL/SLL2 and raw IP are)")
        raise TraceError(f"{path}: no TCP segments or SCTP packets " + "; ".join(why))
    tcp_bytes = sum(s.length for s in segs)
    sctp_bytes = sum(n for c in chunks for _, n in c.data)
    sends = (_tcp_sends(segs, path) if segs and tcp_bytes >= sctp_bytes
             else _sctp_sends(chunks, path))
    t0, pairs = sends.t0, sends.pairs
    d_t, d_seq, d_end, d_wire, d_retx = (sends.d_t, sends.d_seq, sends.d_end, sends.d_wire,
                                          sends.d_retx)
    first_idx, dsacked = sends.first_idx, sends.dsacked
    ack_t, ack_v, ack_rtt = sends.ack_t, sends.ack_v, sends.ack_rtt
    if not pairs:
        raise TraceError(f"{path}: no RTT sample (no ACK of the data seen: was the capture "
                         f"taken at the sender?)")
    # Each DSACK says one copy of its bytes arrived twice (RFC 2883). Of a segment sent
    # 1 + r times with d DSACKs, r - d copies were lost: its original first, then its
    # earliest retransmissions.
    n = len(d_t)
    lost = np.zeros(n, dtype=bool)
    copies: dict[int, list[int]] = {}
    for i in range(n):
        if d_retx[i] and d_seq[i] in first_idx:
            copies.setdefault(d_seq[i], [first_idx[d_seq[i]]]).append(i)
    retx_count = int(sum(d_retx))
    spurious = 0
    dsacked.sort()
    starts = [le for le, _ in dsacked]
    for seq, idxs in copies.items():
        end = d_end[idxs[0]]
        # The DSACK blocks covering the segment: among the 64 starting last at or below it
        # (a block covers a few segments at most).
        j = bisect.bisect_right(starts, seq)
        dups = sum(1 for le, re_ in dsacked[max(0, j - 64):j] if end <= re_)
        r = len(idxs) - 1
        spurious += min(dups, r)
        for i in idxs[:r - min(dups, r)]:
            lost[i] = True
    t_ns = np.asarray(d_t, dtype=np.float64)
    # The virtual bottleneck: when each segment would leave a FIFO of rate_bps (lost
    # originals never occupied it).
    vdep = t_ns.copy()
    if rate_bps:
        ser = np.asarray(d_wire, dtype=np.float64) * 8e9 / rate_bps
        free = -np.inf
        for i in range(n):
            if lost[i]:
                vdep[i] = max(free, t_ns[i]) + ser[i]  # when it would have left
                continue
            free = max(free, t_ns[i]) + ser[i]
            vdep[i] = free
    queue_drops = 0
    if rate_bps and queue is not None:
        # Packets in the virtual system (queued or in service) when each lost original came:
        # the kept ones sent before it that had not yet left.
        kept = np.nonzero(~lost)[0]
        left_sorted = vdep[kept]  # a FIFO: in send order, leaving in order
        for i in np.nonzero(lost)[0]:
            arrived = np.searchsorted(kept, i)  # kept packets sent before it
            departed = np.searchsorted(left_sorted[:arrived] if arrived else left_sorted[:0],
                                       t_ns[i], side="right")
            if arrived - departed >= queue:  # the queue was full (one more in service)
                lost[i] = False
                queue_drops += 1
    idx = np.asarray([p[0] for p in pairs])
    arrive = np.asarray([p[1] for p in pairs], dtype=np.float64)
    rtt_ms = (arrive - vdep[idx]) / 1e6
    keep = rtt_ms >= 0
    # A sample's (and a loss's) time: when its segment met the path after the bottleneck
    # (its virtual departure; without a rate, when it was sent).
    sent_ms = (vdep[idx] - t0) / 1e6
    od = np.argsort(sent_ms[keep], kind="stable")
    orig = ~np.asarray(d_retx, dtype=bool)
    # Every transmission probes the path: lost or not.
    loss_t = (vdep - t0) / 1e6
    ol = np.argsort(loss_t, kind="stable")
    loss_v = lost.astype(np.float64)
    out = Samples("pcap", sent_ms[keep][od], rtt_ms[keep][od] * share, loss_t[ol], loss_v[ol],
                  notes={"connection": sends.conn, "protocol": sends.protocol,
                         "segments": int(orig.sum()), "retransmissions": retx_count,
                         "dsacked": spurious, "losses": int(lost.sum()),
                         "rtt_samples": int(keep.sum()),
                         "rtt_from": sends.rtt_from,
                         "share": share},
                  send_t_ms=(t_ns[orig] - t0) / 1e6,
                  send_end=np.asarray(d_end, dtype=np.float64)[orig],
                  ack_t_ms=(np.asarray(ack_t, dtype=np.float64) - t0) / 1e6,
                  ack_val=np.asarray(ack_v, dtype=np.float64),
                  ack_rtt_ms=np.asarray(ack_rtt, dtype=np.float64), share=share)
    if meta.truncated_at is not None:
        out.warnings.append(f"{path}: the capture is cut short at byte {meta.truncated_at} of "
                            f"{path.stat().st_size} (an incomplete last packet); the profile "
                            f"covers the packets before it")
    if rate_bps:
        out.notes["queue_removed_at_bps"] = rate_bps
        if queue is not None:
            out.notes["queue_drops"] = queue_drops
        # The virtual queue's backlog: what the ACK-silence bound must not count either.
        out.backlog_t_ms = (t_ns[orig] - t0) / 1e6
        out.backlog_end_ms = (vdep[orig] - t0) / 1e6
    return out


