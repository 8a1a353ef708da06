"""Paths from measurements: ``spikelab trace import`` turns a ping log, a Mahimahi trace, a
pcap of one TCP connection or a CSV into a profile file a scenario references.

Two output formats, the ones the stages read:

- a delay profile ``time_ms,delay_ms,loss`` (a delay stage's ``trace``): one-way delay and a
  loss probability, linearly interpolated between rows;
- a rate trace ``time_ms,rate_bps`` (a rate stage's ``trace``): piecewise constant, each row's
  rate holding until the next row.

Every importer returns :class:`Samples` (what was measured) and :func:`fit` turns them into a
profile (smoothing, resampling); :func:`write_profile` writes it whole or not at all. A line
that cannot be read is a :class:`TraceError` naming the file and the line number.

How each format is read (docs/traces.md has the full account):

- ping: each reply's RTT times ``share`` (0.5 by default: half the round trip each way) is a
  one-way delay sample at the time its probe was sent (``ping -D``'s reply time minus the RTT;
  the plain format has no time, so icmp_seq × the interval stands in); every icmp_seq
  missing between the first and the last is a loss at the time it would have been sent;
- Mahimahi: each line is one delivery opportunity of a 1500-byte packet at that millisecond;
  the rate of a bin is its opportunities × 1500 × 8 bits over the bin's length;
- pcap: the connection with the most payload, seen at its sender: RTT samples from the TCP
  timestamps an ACK echoes (RFC 7323), else from the data segment an ACK exactly covers,
  never from a retransmitted segment (Karn), each at its segment's send time (the delay
  that segment met); a retransmission is a loss at its original's
  send time, unless the receiver reported it as a duplicate (DSACK, RFC 2883): then the
  original had arrived;
- CSV: the columns named by the options.
"""

from __future__ import annotations

import bisect
import csv
import io
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..store.results import atomic_write

KINDS = ("ping", "mahimahi", "pcap", "csv")
STATS = ("mean", "median", "min", "max")

#: Mahimahi's packet: one delivery opportunity carries one MTU-sized packet.
MAHIMAHI_PACKET_BYTES = 1500

#: The largest trace file a stage reads (the simulator's ``MAX_TRACE_FILE_BYTES``).
MAX_TRACE_FILE_BYTES = 256 << 20
#: The most rows an import writes. A row is at most 48 bytes (a time and a delay of at most
#: 1e12 ms with three decimals, a loss in six digits), so 5,000,000 rows stay below the
#: 256 MiB a stage reads; the count is known before anything is allocated.
MAX_ROWS = 5_000_000
#: The most probes a ping log spans (first to last icmp_seq, the lost ones included).
MAX_PROBES = 10_000_000
#: The scenario's limit on a profile's times and delays, ms (1e9 s, about 31 years).
MAX_MS = 1e12
#: The scenario's limit on a rate stage's rate, bit/s.
MAX_RATE_BPS = 1e13
#: Input quoted in an error is cut to this many characters (with an ellipsis).
QUOTE_CHARS = 80


class TraceError(ValueError):
    """Input that cannot be read: one line naming the file and line (or field)."""


def _quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """``repr(text)``, cut to at most ``limit`` characters with an ellipsis: an error quotes a
    line, never a whole file of one line."""
    r = repr(text)
    if len(r) <= limit:
        return r
    n = min(len(text), limit)
    while n > 0 and len(repr(text[:n])) > limit - 1:
        n -= 1
    return repr(text[:n]) + "\u2026"


def _clip(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _count(n: float) -> str:
    """A row count for a message: exact while readable, else two digits."""
    if not math.isfinite(n):
        return "more than 1e+308"
    return f"{int(n):,}" if n < 1e9 else f"{n:.2g}"


def _check_ms(option: str, value: float, *, positive: bool = False) -> None:
    """An option in milliseconds: finite, >= 0 (> 0 if ``positive``), at most 1e12 ms."""
    if not (math.isfinite(value) and (value > 0 if positive else value >= 0)):
        raise TraceError(f"{option}: must be {'>' if positive else '>='} 0 ms, got {value:g}")
    if value > MAX_MS:
        raise TraceError(f"{option}: must be at most 1e12 ms (about 31 years), got {value:g}")


@dataclass
class Samples:
    """Measured samples, times in ms from the trace's start.

    ``delay``: (time, one-way delay ms) pairs; ``loss``: (time, 1 lost / 0 delivered) per probe
    or segment; ``rate``: (bin start, bits per second) for a rate trace."""

    kind: str
    t_ms: np.ndarray
    delay_ms: np.ndarray | None = None
    loss_t_ms: np.ndarray | None = None
    loss: np.ndarray | None = None
    rate_bps: np.ndarray | None = None
    #: What the importer inferred, for the command's report (e.g. counts, the method used).
    notes: dict | None = None
    #: pcap: times (ms) the sender sent new data (with the end byte) and received ACKs (with
    #: the cumulative ACK): the ACK-silence bound (:func:`silence_bound`).
    send_t_ms: np.ndarray | None = None
    send_end: np.ndarray | None = None
    ack_t_ms: np.ndarray | None = None
    ack_val: np.ndarray | None = None
    #: pcap: the RTT sample (ms) each ACK gave, NaN where none.
    ack_rtt_ms: np.ndarray | None = None
    share: float = 1.0
    #: pcap with a bottleneck rate: when each original left the virtual queue (ms).
    backlog_t_ms: np.ndarray | None = None
    backlog_end_ms: np.ndarray | None = None
    #: What the user should know about the input (e.g. a capture cut short), one line each.
    warnings: list[str] = field(default_factory=list)
    #: csv: the file's line of each row (errors about a row name it).
    line_no: list[int] | None = None


def _ack_gap(s: Samples, t_ms: np.ndarray) -> np.ndarray:
    """The length (ms) of the gap between ACK arrivals around each time (0 without ACKs)."""
    if s.ack_t_ms is None or s.ack_t_ms.size == 0:
        return np.zeros(np.shape(t_ms))
    i = np.searchsorted(s.ack_t_ms, t_ms, side="right")
    before = np.where(i > 0, s.ack_t_ms[np.maximum(i - 1, 0)], np.nan)
    after = np.where(i < s.ack_t_ms.size, s.ack_t_ms[np.minimum(i, s.ack_t_ms.size - 1)], np.nan)
    return np.nan_to_num(after - before)


def silence_bound(s: Samples, t_ms: np.ndarray) -> np.ndarray:
    """A lower bound on the one-way delay met by a segment sent at each time in ``t_ms``,
    from ACK silence: while data is outstanding, a segment sent at t is not acknowledged before
    the next ACK arrives, so its RTT is at least (next ACK's arrival - t). Zero where no data
    was outstanding or no ACK follows. During a delay spike no segment is sampled (the sender
    has stopped; its retransmissions are not sampled, Karn), and this bound is what shows it."""
    if s.ack_t_ms is None or s.send_t_ms is None or s.ack_t_ms.size == 0:
        return np.zeros(np.shape(t_ms))
    t = np.asarray(t_ms, dtype=np.float64)
    i_s = np.searchsorted(s.send_t_ms, t, side="right") - 1
    i_a = np.searchsorted(s.ack_t_ms, t, side="right") - 1
    sent = np.where(i_s >= 0, np.maximum.accumulate(s.send_end)[np.maximum(i_s, 0)], 0)
    acked = np.where(i_a >= 0, np.maximum.accumulate(s.ack_val)[np.maximum(i_a, 0)], 0)
    nxt = i_a + 1
    has_next = nxt < s.ack_t_ms.size
    nxt_c = np.minimum(nxt, s.ack_t_ms.size - 1)
    wait = np.where(has_next, s.ack_t_ms[nxt_c] - t, 0.0)
    if s.ack_rtt_ms is not None:
        # A silence is a delay only if the ACK that ends it measured an RTT about as long:
        # it acknowledges data sent before the silence. An ACK that ends a silence with a
        # short RTT acknowledges a retransmission: the data was lost, not delayed.
        gap = s.ack_t_ms[nxt_c] - np.where(i_a >= 0, s.ack_t_ms[np.maximum(i_a, 0)], -np.inf)
        rtt_after = s.ack_rtt_ms[nxt_c]
        has_next &= ~(rtt_after < 0.8 * gap)
    if s.backlog_t_ms is not None:
        # A segment sent at t would first wait for the virtual queue to drain.
        j = np.searchsorted(s.backlog_t_ms, t, side="right") - 1
        drained = np.where(j >= 0, np.maximum.accumulate(s.backlog_end_ms)[np.maximum(j, 0)], t)
        wait = wait - np.maximum(drained - t, 0.0)
    return np.where((sent > acked) & has_next, np.maximum(wait, 0.0) * s.share, 0.0)


@dataclass
class Profile:
    """A fitted profile: rows for a delay stage (``delay_ms``, ``loss``) or a rate stage."""

    t_ms: np.ndarray
    delay_ms: np.ndarray | None = None
    loss: np.ndarray | None = None
    rate_bps: np.ndarray | None = None

    @property
    def is_rate(self) -> bool:
        return self.rate_bps is not None


# ---------------------------------------------------------------------------------- readers


def _lines(path: Path) -> Iterable[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not UTF-8 text") from None
    for no, line in enumerate(text.splitlines(), start=1):
        yield no, line.rstrip("\r")


_PING_REPLY = re.compile(
    r"^(?:\[(?P<ts>\d+(?:\.\d+)?)\]\s+)?\d+\s+bytes\s+from\s+.*?"
    r"icmp_[sr]eq=(?P<seq>\S+).*?\btime[=<](?P<rtt>\S+)\s*(?P<unit>ms|s|us)?")
_PING_OTHER = re.compile(
    r"^(?:\[\d+(?:\.\d+)?\]\s+)?(?:PING\s|---\s|\d+\s+packets\s+transmitted|rtt\s|round-trip|"
    r"From\s|Request\s+timeout|no\s+answer\s+yet|pipe\s|\d+\s+bytes\s+from\s.*Unreachable|"
    r"ping:\s|WARNING|Warning|\s*$)")


def read_ping(path: str | Path, *, share: float = 0.5, interval_s: float | None = None) -> Samples:
    """A ping log (``ping -D`` or the plain format) → one-way delay and loss samples."""
    path = Path(path)
    seqs, times, rtts = [], [], []
    has_ts = None
    for no, line in _lines(path):
        m = _PING_REPLY.match(line.strip())
        if m is None:
            if _PING_OTHER.match(line.strip()):
                continue
            raise TraceError(f"{path} line {no}: not a ping reply or summary line: "
                             f"{_quote(line)}")
        if "(DUP!)" in line:
            continue
        try:
            seq = int(m["seq"])
            rtt = float(m["rtt"])
        except ValueError:
            raise TraceError(f"{path} line {no}: icmp_seq and time must be numbers: "
                             f"{_quote(line)}") from None
        if not math.isfinite(rtt) or rtt < 0 or seq < 0:
            raise TraceError(f"{path} line {no}: a negative or non-finite value: {_quote(line)}")
        if seq > 2**53:
            raise TraceError(f"{path} line {no}: icmp_seq must be at most 2^53, got "
                             f"{_clip(str(seq))}")
        rtt *= {"s": 1000.0, "us": 0.001}.get(m["unit"] or "ms", 1.0)
        if rtt > MAX_MS:
            raise TraceError(f"{path} line {no}: time must be at most 1e12 ms (about 31 years), "
                             f"got {rtt:g} ms")
        ts = m["ts"]
        if has_ts is None:
            has_ts = ts is not None
        elif has_ts != (ts is not None):
            raise TraceError(f"{path} line {no}: ping -D timestamps on some lines only")
        seqs.append(seq)
        times.append(float(ts) if ts is not None else math.nan)
        rtts.append(rtt)
    if not seqs:
        raise TraceError(f"{path}: no ping replies")
    seq = np.asarray(seqs, dtype=np.int64)
    # icmp_seq wraps at 65536: unwrap so that it only grows.
    seq = seq + 65536 * np.concatenate([[0], np.cumsum(np.diff(seq) < -32768)])
    probes = int(seq.max()) - int(seq.min()) + 1
    if probes > MAX_PROBES:  # said before the lost probes are listed
        raise TraceError(f"{path}: icmp_seq runs from {int(seq.min())} to {int(seq.max())}: "
                         f"{_count(probes)} probes, {_count(probes - np.unique(seq).size)} of "
                         f"them lost (at most {MAX_PROBES:,} probes); is it one ping run?")
    if has_ts:
        # ping -D stamps the reply's arrival; the probe left one RTT earlier.
        t = np.asarray(times) - np.asarray(rtts) / 1000.0
        if interval_s is None:
            d = np.diff(t) / np.maximum(np.diff(seq), 1)
            interval_s = float(np.median(d)) if d.size else 1.0
            if not interval_s > 0:
                raise TraceError(f"{path}: the ping -D timestamps do not advance with icmp_seq "
                                 f"(their median step is {interval_s:.6g} s); give "
                                 f"--ping-interval")
        t_ms = (t - t[0]) * 1000.0
    else:
        interval_s = 1.0 if interval_s is None else interval_s
        t_ms = (seq - seq[0]) * interval_s * 1000.0
    if not interval_s > 0:
        raise TraceError(f"{path}: the ping interval must be > 0, got {interval_s}")
    order = np.argsort(t_ms, kind="stable")
    t_ms, seq, rtt = t_ms[order], seq[order], np.asarray(rtts)[order]
    seen = np.unique(seq)
    all_seq = np.arange(seen[0], seen[-1] + 1)
    lost = np.setdiff1d(all_seq, seen)
    # A lost probe's time: interpolated from the replies' (seq, time).
    loss_t = np.interp(lost, seq, t_ms) if lost.size else np.empty(0)
    loss_t_all = np.concatenate([t_ms, loss_t])
    loss_all = np.concatenate([np.zeros(t_ms.size), np.ones(lost.size)])
    o = np.argsort(loss_t_all, kind="stable")
    return Samples("ping", t_ms, rtt * share, loss_t_all[o], loss_all[o],
                   notes={"replies": int(seen.size), "lost": int(lost.size),
                          "interval_s": interval_s, "share": share,
                          "timestamps": "ping -D" if has_ts else "icmp_seq x interval"})


def read_mahimahi(path: str | Path, *, bin_ms: float = 100.0) -> Samples:
    """A Mahimahi trace (one delivery opportunity per line, ms) → the rate of each bin."""
    path = Path(path)
    _check_ms("--bin", bin_ms, positive=True)
    stamps = []
    last = -1
    for no, line in _lines(path):
        s = line.strip()
        if not s:
            continue
        if not (s.isascii() and s.isdigit()):
            raise TraceError(f"{path} line {no}: expected a whole number of milliseconds, "
                             f"got {_quote(s)}")
        v = int(s) if len(s.lstrip("0")) <= 13 else math.inf  # 13 digits hold 1e12
        if v > MAX_MS:
            raise TraceError(f"{path} line {no}: a time must be at most 1e12 ms (about 31 "
                             f"years), got {_clip(s)}")
        if v < last:
            raise TraceError(f"{path} line {no}: timestamps must not decrease ({v} after {last})")
        last = v
        stamps.append(v)
    if not stamps:
        raise TraceError(f"{path}: no delivery opportunities")
    t = np.asarray(stamps, dtype=np.float64)
    # Mahimahi's trace covers [0, last]; it repeats from there.
    bins = (t[-1] + 1) / bin_ms
    if bins > MAX_ROWS:  # said before the bins are allocated
        raise TraceError(f"--bin: {bin_ms:g} ms over {(t[-1] + 1) / 1000:.3g} s gives "
                         f"{_count(math.ceil(bins) if math.isfinite(bins) else bins)} rows "
                         f"(at most {MAX_ROWS:,}); use a larger bin")
    n_bins = max(1, int(math.ceil(bins)))
    counts = np.bincount(np.minimum((t // bin_ms).astype(np.int64), n_bins - 1),
                         minlength=n_bins)
    starts = np.arange(n_bins) * bin_ms
    span = np.minimum(bin_ms, (t[-1] + 1) - starts)  # the last bin may be shorter
    rate = counts * MAHIMAHI_PACKET_BYTES * 8 / (span / 1000.0)
    return Samples("mahimahi", starts, rate_bps=rate,
                   notes={"opportunities": int(t.size), "duration_ms": float(t[-1] + 1),
                          "bin_ms": bin_ms,
                          "mean_rate_bps": float(t.size * MAHIMAHI_PACKET_BYTES * 8
                                                 / ((t[-1] + 1) / 1000.0))})


def read_csv_samples(path: str | Path, *, time_col: str = "time_ms", time_unit: str = "ms",
                     delay_col: str | None = None, loss_col: str | None = None,
                     rate_col: str | None = None, share: float = 1.0) -> Samples:
    """A CSV with a time column and delay (ms), loss (probability) or rate (bit/s) columns
    named by the options. ``share`` scales the delay (0.5 for an RTT column)."""
    path = Path(path)
    if delay_col is None and rate_col is None and loss_col is None:
        raise TraceError("name at least one of --delay-col, --loss-col, --rate-col")
    if rate_col is not None and (delay_col is not None or loss_col is not None):
        raise TraceError("--rate-col makes a rate trace; it cannot be combined with "
                         "--delay-col or --loss-col")
    scale = {"ms": 1.0, "s": 1000.0, "us": 0.001}.get(time_unit)
    if scale is None:
        raise TraceError(f"--time-unit: expected ms, s or us, got {time_unit!r}")
    lines = [(no, line) for no, line in _lines(path)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise TraceError(f"{path}: empty")
    header_no, header_line = lines[0]
    header = [h.strip() for h in next(csv.reader(io.StringIO(header_line)))]
    wanted = [c for c in (time_col, delay_col, loss_col, rate_col) if c is not None]
    for c in wanted:
        if c not in header:
            raise TraceError(f"{path} line {header_no}: no column {c!r} "
                             f"(columns: {_clip(', '.join(header))})")
    idx = {c: header.index(c) for c in wanted}
    cols: dict[str, list[float]] = {c: [] for c in wanted}
    last_t = -math.inf
    line_no: list[int] = []
    for no, line in lines[1:]:
        cells = next(csv.reader(io.StringIO(line)))
        for c in wanted:
            try:
                v = float(cells[idx[c]])
            except (IndexError, ValueError):
                got = cells[idx[c]] if idx[c] < len(cells) else ""
                raise TraceError(f"{path} line {no}: column {c!r}: expected a number, got "
                                 f"{_quote(got)}") from None
            if not math.isfinite(v):
                raise TraceError(f"{path} line {no}: column {c!r}: not finite: {v}")
            if c == loss_col and not 0 <= v <= 1:
                raise TraceError(f"{path} line {no}: column {c!r}: a loss probability must be "
                                 f"in [0, 1], got {v:g}")
            if c in (delay_col, rate_col) and v < 0:
                raise TraceError(f"{path} line {no}: column {c!r}: must be >= 0, got {v:g}")
            # What a stage takes as it is (docs/scenario.md): delays up to 1e12 ms, rates a
            # whole number of bit/s up to 1e13.
            if c == delay_col and v * share > MAX_MS:
                of = f" ({v:g} x share {share:g})" if share != 1 else ""
                raise TraceError(f"{path} line {no}: column {c!r}: a delay must be at most "
                                 f"1e12 ms (about 31 years), got {v * share:g}{of}")
            if c == rate_col and v > MAX_RATE_BPS:
                raise TraceError(f"{path} line {no}: column {c!r}: a rate must be at most "
                                 f"1e13 bit/s, got {v:g}")
            if c == rate_col and v != int(v):
                raise TraceError(f"{path} line {no}: column {c!r}: a rate must be a whole "
                                 f"number of bit/s, got {v:.15g}")
            cols[c].append(v)
        t = cols[time_col][-1]
        if t < last_t:
            raise TraceError(f"{path} line {no}: time must not decrease ({t:g} after {last_t:g})")
        if (t - cols[time_col][0]) * scale > MAX_MS:
            raise TraceError(f"{path} line {no}: column {time_col!r}: a time must be at most "
                             f"1e12 ms (about 31 years) after the first row's, got "
                             f"{(t - cols[time_col][0]) * scale:g} ms")
        last_t = t
        line_no.append(no)
    if not cols[time_col]:
        raise TraceError(f"{path}: no rows after the header")
    t = np.asarray(cols[time_col]) * scale
    t = t - t[0]
    out = Samples("csv", t, notes={"rows": int(t.size)}, line_no=line_no)
    if delay_col:
        out.delay_ms = np.asarray(cols[delay_col]) * share
    if loss_col:
        out.loss_t_ms, out.loss = t, np.asarray(cols[loss_col])
    if rate_col:
        out.rate_bps = np.asarray(cols[rate_col])
    return out


#: TCP sequence numbers and SCTP TSNs are 32-bit: offsets from the connection's start wrap.
_WRAP = 0xFFFFFFFF


@dataclass
class _Sends:
    """What a capture at the sender shows of one connection, in one sequence space (TCP:
    bytes; SCTP: TSNs), as arrays: each data packet sent (time, start, end, IP bytes, whether
    it resent anything), the duplicates the receiver reported (TCP DSACK blocks, SCTP
    duplicate TSNs), the RTT samples as (packet index, ACK arrival) and every ACK (arrival,
    cumulative ACK, its RTT sample: ms, NaN for none)."""

    conn: str
    protocol: str
    t0: int
    rtt_from: str
    d_t: np.ndarray
    d_seq: np.ndarray
    d_end: np.ndarray
    d_wire: np.ndarray
    d_retx: np.ndarray
    dsacked: list[tuple[int, int]]
    pair_idx: np.ndarray
    pair_t: np.ndarray
    ack_t: np.ndarray
    ack_v: np.ndarray
    ack_rtt: np.ndarray


def _largest(conn: np.ndarray, size: np.ndarray, conns: list, path: Path,
             what: str) -> tuple[int, int | None]:
    """The codes of the (forward, reverse) directions of the connection carrying the most
    payload (the first seen of equals; no reverse code if the capture never saw it)."""
    payload = np.bincount(conn, weights=size, minlength=len(conns))
    fwd = int(np.argmax(payload))
    if payload[fwd] == 0:
        raise TraceError(f"{path}: no {what}")
    s, sp, d, dp = conns[fwd]
    rev = next((i for i, k in enumerate(conns) if k == (d, dp, s, sp)), None)
    return fwd, (None if rev == fwd else rev)


def _before(keys: np.ndarray, rows: np.ndarray, want: np.ndarray, at: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """For each ``want[k]``: the position in ``keys`` of its first occurrence, and whether
    that occurrence (file row ``rows[pos]``) comes before row ``at[k]``: a lookup in a
    dictionary filled in file order, as it stood at row ``at[k]``."""
    if keys.size == 0:
        return np.zeros(want.size, dtype=np.int64), np.zeros(want.size, dtype=bool)
    uniq, first = np.unique(keys, return_index=True)
    p = np.minimum(np.searchsorted(uniq, want), uniq.size - 1)
    pos = first[p]
    return pos, (uniq[p] == want) & (rows[pos] < at)


def _ack_samples(s: dict, d_rows: np.ndarray, a_rows: np.ndarray, candidate: np.ndarray,
                 ok: np.ndarray, advanced: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RTT samples: an ACK that advances the cumulative ACK, paired with data packet
    ``candidate`` where ``ok``, gives a sample if it came no earlier than that packet.
    Returns (packet index, ACK time) of each sample in ACK order and every ACK's RTT (ms,
    NaN for none)."""
    a_t = s["ts_ns"][a_rows]
    d_t = s["ts_ns"][d_rows]
    take = ok & advanced
    take[take] = a_t[take] >= d_t[candidate[take]]
    idx = candidate[take]
    rtt = np.full(a_rows.size, np.nan)
    rtt[take] = (a_t[take] - d_t[idx]) / 1e6
    return idx, a_t[take], rtt


def _advancing(a_v: np.ndarray) -> np.ndarray:
    """Whether each cumulative ACK exceeds every one before it (the first always does)."""
    prev = np.concatenate([[-1], np.maximum.accumulate(a_v)[:-1]]) if a_v.size else a_v
    return a_v > prev


def _originals(d_rows: np.ndarray, d_end: np.ndarray, retx: np.ndarray, a_rows: np.ndarray,
               ack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each ACK: the packet sent once before it that it exactly ends, and whether there
    is one (Karn's rule: none if a retransmission sent before the ACK ends there too)."""
    orig = np.flatnonzero(~retx)
    pos, found = _before(d_end[orig], d_rows[orig], ack, a_rows)
    r = np.flatnonzero(retx)
    _, resent = _before(d_end[r], d_rows[r], ack, a_rows)
    return orig[pos], found & ~resent


def _tcp_sends(t: dict, conns: list, path: Path) -> _Sends:
    """The connection carrying the most payload (bytes; RTT samples from timestamps when
    the ACKs echo them, else from data/ACK pairs, Karn)."""
    fwd, rev = _largest(t["conn"], t["length"], conns, path, "TCP segment carries data")
    f = conns[fwd]
    n = t["ts_ns"].size
    rows = np.arange(n)
    seq = t["seq"].astype(np.int64)
    syn = (t["flags"] & 0x02) != 0
    is_fwd = t["conn"] == fwd
    fwd_syn = is_fwd & syn
    fwd_data = is_fwd & ~syn & (t["length"] > 0)
    # The sequence base: each SYN of the connection sets it (its ISN + 1); data before any
    # SYN starts at its first byte.
    event = fwd_syn.copy()
    value = np.where(fwd_syn, seq + 1, seq)
    first_data = np.flatnonzero(fwd_data)[:1]
    first_syn = np.flatnonzero(fwd_syn)[:1]
    if first_data.size and (not first_syn.size or first_data[0] < first_syn[0]):
        event[first_data[0]] = True
    last = np.maximum.accumulate(np.where(event, rows, -1))
    has_base = last >= 0
    base = np.where(has_base, value[np.maximum(last, 0)], 0)
    # The data segments sent: a retransmission starts below the highest byte sent before it.
    d_rows = np.flatnonzero(fwd_data)
    d_seq = (seq[d_rows] - base[d_rows]) & _WRAP
    d_end = d_seq + t["length"][d_rows]
    d_retx = d_seq < np.concatenate([[0], np.maximum.accumulate(d_end)[:-1]])
    # The ACKs of the reverse direction, after the base is known.
    if rev is None:
        a_rows = np.zeros(0, dtype=np.int64)
    else:
        a_rows = np.flatnonzero((t["conn"] == rev) & ((t["flags"] & 0x10) != 0) & has_base
                                & ~syn)
    a_base = base[a_rows]
    a_v = (t["ack"][a_rows].astype(np.int64) - a_base) & _WRAP
    advanced = _advancing(a_v)
    # A DSACK (RFC 2883): the first block below the ACK or inside the second.
    n_sack = t["sack_count"][a_rows]
    le0, re0, le1, re1 = ((t[c][a_rows].astype(np.int64) - a_base) & _WRAP
                          for c in ("sack_le0", "sack_re0", "sack_le1", "sack_re1"))
    dsack = (n_sack > 0) & ((re0 <= a_v) | ((n_sack > 1) & (le1 <= le0) & (re0 <= re1)))
    dsacked = list(zip(le0[dsack].tolist(), re0[dsack].tolist(), strict=True))
    # RTT samples: from the first ACK that echoes a timestamp on, the segment that first
    # carried the echoed TSval (RFC 7323); before it, the segment sent once that the ACK
    # exactly ends (Karn).
    has_ts = t["has_ts"][a_rows] != 0
    use_ts = np.logical_or.accumulate(has_ts) if a_rows.size else has_ts
    d_ts = np.flatnonzero(t["has_ts"][d_rows] != 0)
    pos, by_ts = _before(t["tsval"][d_rows[d_ts]], d_rows[d_ts], t["tsecr"][a_rows], a_rows)
    by_ts &= has_ts
    ended, by_end = _originals(d_rows, d_end, d_retx, a_rows, a_v)
    candidate = np.where(use_ts, d_ts[pos] if d_ts.size else 0, ended)
    ok = np.where(use_ts, by_ts, by_end)
    pair_idx, pair_t, ack_rtt = _ack_samples(t, d_rows, a_rows, candidate, ok, advanced)
    return _Sends(f"{f[0]}:{f[1]} -> {f[2]}:{f[3]}", "tcp", int(t["ts_ns"][0]),
                  "timestamps" if use_ts.size and use_ts[-1] else "data/ACK pairs (Karn)",
                  t["ts_ns"][d_rows], d_seq, d_end, t["wire"][d_rows], d_retx, dsacked,
                  pair_idx, pair_t, t["ts_ns"][a_rows], a_v, ack_rtt)


def _sctp_sends(s: dict, conns: list, path: Path) -> _Sends:
    """The association carrying the most DATA bytes: its DATA packets in TSN space (a packet
    covers its lowest to its highest TSN + 1), its SACKs' cumulative TSN + 1 as the ACK, the
    duplicate TSNs they report (RFC 9260 §3.3.4) as one-TSN blocks. RTT samples pair a SACK
    that advances the cumulative TSN to the end of a packet sent once (Karn, §6.3.1)."""
    offsets = s["data_offsets"]
    n_chunks = np.diff(offsets)
    packet_of = np.repeat(np.arange(n_chunks.size), n_chunks)
    payload = np.bincount(packet_of, weights=s["chunk_bytes"], minlength=n_chunks.size)
    fwd, rev = _largest(s["conn"], payload, conns, path, "SCTP packet carries DATA")
    f = conns[fwd]
    d_rows = np.flatnonzero((s["conn"] == fwd) & (n_chunks > 0))
    base = int(s["chunk_tsn"][offsets[d_rows[0]]])  # the first DATA chunk's TSN
    # Each packet's lowest and highest TSN relative to the base: its chunks are contiguous.
    mine = np.zeros(n_chunks.size, dtype=bool)
    mine[d_rows] = True
    rel = (s["chunk_tsn"][mine[packet_of]].astype(np.int64) - base) & _WRAP
    starts = np.concatenate([[0], np.cumsum(n_chunks[d_rows])[:-1]])
    d_seq = np.minimum.reduceat(rel, starts)
    d_end = np.maximum.reduceat(rel, starts) + 1
    highest = np.maximum.accumulate(d_end)
    d_retx = d_seq < np.concatenate([[0], highest[:-1]])
    if rev is None:
        a_rows = np.zeros(0, dtype=np.int64)
    else:
        a_rows = np.flatnonzero((s["conn"] == rev) & (s["has_cum"] != 0)
                                & (np.arange(s["conn"].size) > d_rows[0]))
    a_v = (s["cum_tsn"][a_rows].astype(np.int64) + 1 - base) & _WRAP
    # Before the first DATA (the handshake's TSN - 1): nothing acknowledged.
    sent_before = np.searchsorted(d_rows, a_rows)
    high = np.where(sent_before > 0, highest[np.maximum(sent_before - 1, 0)], 0)
    a_v = np.where(a_v > high, 0, a_v)
    advanced = _advancing(a_v)
    acks = np.zeros(n_chunks.size, dtype=bool)
    acks[a_rows] = True
    dup_of = np.repeat(np.arange(n_chunks.size), np.diff(s["dup_offsets"]))
    dups = ((s["dup_tsn"][acks[dup_of]].astype(np.int64) - base) & _WRAP).tolist()
    dsacked = [(d, d + 1) for d in dups]
    ended, ok = _originals(d_rows, d_end, d_retx, a_rows, a_v)
    pair_idx, pair_t, ack_rtt = _ack_samples(s, d_rows, a_rows, ended, ok, advanced)
    return _Sends(f"{f[0]}:{f[1]} -> {f[2]}:{f[3]}", "sctp", int(s["ts_ns"][0]),
                  "DATA/SACK pairs (Karn)", s["ts_ns"][d_rows], d_seq, d_end,
                  s["wire"][d_rows], d_retx, dsacked, pair_idx, pair_t, s["ts_ns"][a_rows], a_v,
                  ack_rtt)


def read_pcap(path: str | Path, *, share: float = 0.5, iface: str | None = None,
              rate_bps: float | None = None, queue: int | None = None) -> Samples:
    """A capture of one TCP connection or SCTP association, taken at its sender → delay and
    loss samples (the protocol carrying more payload is read). The capture is read by the
    Rust core as a stream (:func:`spikelab.traces.pcap.transport`); only its TCP and SCTP
    header columns reach Python.

    With ``rate_bps`` (the bottleneck rate a scenario's rate stage re-creates), each sample
    loses the time its segment would have queued behind the sender's own data at that rate
    (a virtual FIFO fed with the captured sends, losses left out), so the profile holds the
    path's delay without the queue the rate stage will build again. With ``queue`` too (that
    stage's queue, packets), a lost segment that found the virtual queue full is the rate
    stage's drop, not the path's, and stays out of the loss column."""
    if queue is not None and not rate_bps:
        raise TraceError("--queue needs --rate (the virtual queue's rate)")
    from . import pcap as _pcap

    path = Path(path)
    cap = _pcap.transport(path, iface)
    if iface is not None and not cap.matched:
        known = (f"interfaces: {_clip(', '.join(cap.iface_names))}" if cap.iface_names
                 else "it has no frames")
        raise TraceError(f"--interface: no frames on {iface!r} in {path} ({known})")
    tcp, sctp = cap.tcp, cap.sctp
    if not tcp["ts_ns"].size and not sctp["ts_ns"].size:
        # Say what was there instead: a capture of nothing, one cut short, one of a link
        # whose frames are not read.
        frames = cap.frames
        why = [f"in its {frames:,} frame{'' if frames == 1 else 's'}"]
        if cap.truncated_at is not None:
            why.append(f"the capture is cut short at byte {cap.truncated_at:,}")
        if cap.other_links:
            why.append("link type " + ", ".join(map(str, cap.other_links))
                       + " is not read (Ethernet, Linux cooked SLL/SLL2 and raw IP are)")
        raise TraceError(f"{path}: no TCP segments or SCTP packets " + "; ".join(why))
    tcp_bytes = int(tcp["length"].sum())
    sctp_bytes = int(sctp["chunk_bytes"].sum())
    sends = (_tcp_sends(tcp, cap.tcp_conns, path) if tcp["ts_ns"].size and tcp_bytes >= sctp_bytes
             else _sctp_sends(sctp, cap.sctp_conns, path))
    t0 = sends.t0
    d_seq, d_end, d_retx, dsacked = sends.d_seq, sends.d_end, sends.d_retx, sends.dsacked
    if not sends.pair_idx.size:
        raise TraceError(f"{path}: no RTT sample (no ACK of the data seen: was the capture "
                         f"taken at the sender?)")
    # Each DSACK says one copy of its bytes arrived twice (RFC 2883). Of a segment sent
    # 1 + r times with d DSACKs, r - d copies were lost: its original first, then its
    # earliest retransmissions.
    n = d_seq.size
    lost = np.zeros(n, dtype=bool)
    retx = np.flatnonzero(d_retx)
    orig = np.flatnonzero(~d_retx)
    order = np.argsort(d_seq[orig], kind="stable")
    orig_seq = d_seq[orig][order]
    at = np.minimum(np.searchsorted(orig_seq, d_seq[retx]), max(orig_seq.size - 1, 0))
    resent = (orig_seq[at] == d_seq[retx]) if orig_seq.size else np.zeros(retx.size, bool)
    copies: dict[int, list[int]] = {}  # a start sent once and again: its copies, in order
    for i, o in zip(retx[resent].tolist(), orig[order][at[resent]].tolist(), strict=True):
        copies.setdefault(int(d_seq[i]), [o]).append(i)
    retx_count = int(d_retx.sum())
    spurious = 0
    dsacked.sort()
    starts = [le for le, _ in dsacked]
    for seq, idxs in copies.items():
        end = int(d_end[idxs[0]])
        # The DSACK blocks covering the segment: among the 64 starting last at or below it
        # (a block covers a few segments at most).
        j = bisect.bisect_right(starts, seq)
        dups = sum(1 for le, re_ in dsacked[max(0, j - 64):j] if end <= re_)
        r = len(idxs) - 1
        spurious += min(dups, r)
        for i in idxs[:r - min(dups, r)]:
            lost[i] = True
    t_ns = sends.d_t.astype(np.float64)
    # The virtual bottleneck: when each segment would leave a FIFO of rate_bps (lost
    # originals never occupied it). A recurrence: one step per segment, in Python floats
    # (the same doubles numpy holds).
    vdep = t_ns.copy()
    if rate_bps:
        ser = sends.d_wire.astype(np.float64) * 8e9 / rate_bps
        free = -math.inf
        out_dep = []
        for ti, si, li in zip(t_ns.tolist(), ser.tolist(), lost.tolist(), strict=True):
            if li:
                out_dep.append(max(free, ti) + si)  # when it would have left
                continue
            free = max(free, ti) + si
            out_dep.append(free)
        vdep = np.asarray(out_dep, dtype=np.float64)
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
    idx = sends.pair_idx
    arrive = sends.pair_t.astype(np.float64)
    rtt_ms = (arrive - vdep[idx]) / 1e6
    keep = rtt_ms >= 0
    # A sample's (and a loss's) time: when its segment met the path after the bottleneck
    # (its virtual departure; without a rate, when it was sent).
    sent_ms = (vdep[idx] - t0) / 1e6
    od = np.argsort(sent_ms[keep], kind="stable")
    first = ~d_retx
    # Every transmission probes the path: lost or not.
    loss_t = (vdep - t0) / 1e6
    ol = np.argsort(loss_t, kind="stable")
    loss_v = lost.astype(np.float64)
    out = Samples("pcap", sent_ms[keep][od], rtt_ms[keep][od] * share, loss_t[ol], loss_v[ol],
                  notes={"connection": sends.conn, "protocol": sends.protocol,
                         "segments": int(first.sum()), "retransmissions": retx_count,
                         "dsacked": spurious, "losses": int(lost.sum()),
                         "rtt_samples": int(keep.sum()),
                         "rtt_from": sends.rtt_from,
                         "share": share},
                  send_t_ms=(t_ns[first] - t0) / 1e6,
                  send_end=d_end.astype(np.float64)[first],
                  ack_t_ms=(sends.ack_t.astype(np.float64) - t0) / 1e6,
                  ack_val=sends.ack_v.astype(np.float64),
                  ack_rtt_ms=sends.ack_rtt, share=share)
    if cap.truncated_at is not None:
        out.warnings.append(f"{path}: the capture is cut short at byte {cap.truncated_at} of "
                            f"{cap.size} (an incomplete last packet); the profile covers the "
                            f"packets before it")
    if rate_bps:
        out.notes["queue_removed_at_bps"] = rate_bps
        if queue is not None:
            out.notes["queue_drops"] = queue_drops
        # The virtual queue's backlog: what the ACK-silence bound must not count either.
        out.backlog_t_ms = (t_ns[first] - t0) / 1e6
        out.backlog_end_ms = (vdep[first] - t0) / 1e6
    return out


# ---------------------------------------------------------------------------------- fitting


def _binned(t: np.ndarray, v: np.ndarray, edges: np.ndarray, stat: str) -> np.ndarray:
    """``stat`` of the values in each bin [edges[i], edges[i+1]); NaN for an empty bin."""
    idx = np.searchsorted(edges, t, side="right") - 1
    out = np.full(edges.size - 1, np.nan)
    ok = (idx >= 0) & (idx < out.size)
    idx, v = idx[ok], v[ok]
    if stat == "mean":
        s = np.bincount(idx, v, out.size)
        n = np.bincount(idx, minlength=out.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(n > 0, s / np.maximum(n, 1), np.nan)
        return out
    order = np.argsort(idx, kind="stable")
    idx, v = idx[order], v[order]
    starts = np.searchsorted(idx, np.arange(out.size))
    ends = np.searchsorted(idx, np.arange(out.size), side="right")
    f = {"median": np.median, "min": np.min, "max": np.max}[stat]
    for i in np.nonzero(ends > starts)[0]:
        out[i] = f(v[starts[i]:ends[i]])
    return out


def _fill(v: np.ndarray) -> np.ndarray:
    """Empty bins (NaN) take the previous bin's value (the first ones the first value)."""
    v = v.copy()
    ok = ~np.isnan(v)
    if not ok.any():
        return v
    idx = np.where(ok, np.arange(v.size), 0)
    np.maximum.accumulate(idx, out=idx)
    v = v[idx]
    first = np.argmax(ok)
    v[:first] = v[first]
    return v


def smooth(t_ms: np.ndarray, v: np.ndarray, window_ms: float) -> np.ndarray:
    """A centred moving median over ``window_ms`` (0: the values as they are)."""
    if window_ms <= 0 or v.size < 2:
        return v
    _check_ms("--smooth", window_ms)
    import pandas as pd

    s = pd.Series(v, index=pd.to_timedelta(t_ms, unit="ms"))
    return s.rolling(pd.Timedelta(milliseconds=window_ms), center=True,
                     min_periods=1).median().to_numpy()


def _check_row_count(samples: Samples, interval_ms: float) -> None:
    """Refuses a fit of more than :data:`MAX_ROWS` rows, counted before any is allocated."""
    if samples.rate_bps is not None or samples.delay_ms is not None:
        t = samples.t_ms
    else:
        t = samples.loss_t_ms
    ends = [t[-1]] if t is not None and t.size else []
    if (samples.delay_ms is not None and samples.loss_t_ms is not None
            and samples.loss_t_ms.size):
        ends.append(samples.loss_t_ms[-1])
    end = max(ends, default=0.0)
    if interval_ms > 0:
        # fit's bin edges: np.arange(0, end + interval + 1e-9, interval), one row per bin.
        rows = (end + interval_ms + 1e-9) / interval_ms
        rows = math.ceil(rows) - 1 if math.isfinite(rows) else rows
        if rows > MAX_ROWS:
            raise TraceError(f"--interval: {interval_ms:g} ms over {end / 1000:.3g} s gives "
                             f"{_count(rows)} rows (at most {MAX_ROWS:,}); use a larger "
                             f"interval")
    elif t is not None and t.size > MAX_ROWS:
        raise TraceError(f"--interval 0: {t.size:,} samples give as many rows (at most "
                         f"{MAX_ROWS:,}); give --interval MS > 0 to resample")


def fit(samples: Samples, *, interval_ms: float = 0.0, smooth_ms: float = 0.0,
        stat: str = "mean") -> Profile:
    """A profile from samples: smoothed (moving median over ``smooth_ms``), then resampled
    every ``interval_ms`` (each row the ``stat`` of its bin's samples, loss the share of its
    bin's probes or segments lost; 0: one row per sample, loss over windows of ten probes)."""
    if stat not in STATS:
        raise TraceError(f"--stat: expected one of {', '.join(STATS)}, got {stat!r}")
    _check_ms("--interval", interval_ms)
    _check_ms("--smooth", smooth_ms)
    _check_row_count(samples, interval_ms)
    if samples.rate_bps is not None:
        t, r = samples.t_ms, smooth(samples.t_ms, samples.rate_bps, smooth_ms)
        if interval_ms > 0:
            edges = np.arange(0.0, t[-1] + interval_ms + 1e-9, interval_ms)
            r = _fill(_binned(t, r, edges, stat))
            t = edges[:-1]
        return Profile(np.asarray(t, dtype=np.float64), rate_bps=r)
    if samples.delay_ms is None:
        # A loss-only CSV: rows at its own times.
        t = samples.loss_t_ms
        loss = samples.loss
        if interval_ms > 0:
            edges = np.arange(0.0, t[-1] + interval_ms + 1e-9, interval_ms)
            loss = np.nan_to_num(_binned(t, loss, edges, "mean"))
            t = edges[:-1]
        return Profile(t, np.zeros(t.size), loss)
    t, d = samples.t_ms, smooth(samples.t_ms, samples.delay_ms, smooth_ms)
    lt, lv = samples.loss_t_ms, samples.loss
    if interval_ms > 0:
        end = max(t[-1], lt[-1] if lt is not None and lt.size else 0.0)
        edges = np.arange(0.0, end + interval_ms + 1e-9, interval_ms)
        d = _binned(t, d, edges, stat)
        mid = edges[:-1] + interval_ms / 2
        # A bin's delay is at least its ACK-silence bound (at the bin's middle); a bin without
        # samples inside a silence longer than itself takes the bound alone (the delay spike
        # that froze the ACKs), any other empty bin the value before it.
        bound = silence_bound(samples, mid)
        silent = np.isnan(d) & (bound > 0) & (_ack_gap(samples, mid) > interval_ms)
        d = np.where(silent, bound, d)
        d = np.maximum(_fill(d), bound)
        t = edges[:-1] + interval_ms / 2  # a bin's row at its middle
        loss = (np.nan_to_num(_binned(lt, lv, edges, "mean")) if lt is not None
                else np.zeros(t.size))
    else:
        d = np.maximum(d, silence_bound(samples, t))
        if lt is not None and samples.kind == "csv":
            loss = np.interp(t, lt, lv)
        elif lt is not None and lt.size:
            # Loss near each sample: the share lost among the ten probes around it.
            order = np.searchsorted(lt, t)
            c = np.concatenate([[0.0], np.cumsum(lv)])
            lo = np.clip(order - 5, 0, lv.size)
            hi = np.clip(order + 5, 0, lv.size)
            loss = (c[hi] - c[lo]) / np.maximum(hi - lo, 1)
        else:
            loss = np.zeros(t.size)
    return Profile(np.asarray(t, dtype=np.float64), d, np.clip(loss, 0.0, 1.0))


def _step_rows(times: list[str]) -> list[int]:
    """The rows to write of rows at ``times`` (as written): of three or more rows at one time,
    the first and the last. A stage reads two rows at one time as a step (the value before it,
    then the one that applies from it on) and refuses a third; the rows between are never
    used, so dropping them changes nothing (`--interval 0` keeps one row per sample, and
    samples closer than the 1 µs the CSV keeps, or simultaneous, would give them)."""
    n = len(times)
    return [i for i in range(n)
            if not (0 < i < n - 1 and times[i - 1] == times[i] == times[i + 1])]


def profile_csv(p: Profile) -> str:
    """The profile as the stage's CSV text."""
    out = io.StringIO()
    times = [f"{t:.3f}" for t in p.t_ms]
    keep = _step_rows(times)
    if p.is_rate:
        out.write("time_ms,rate_bps\n")
        for i in keep:
            out.write(f"{times[i]},{round(float(p.rate_bps[i]))}\n")
    else:
        out.write("time_ms,delay_ms,loss\n")
        for i in keep:
            out.write(f"{times[i]},{p.delay_ms[i]:.3f},{p.loss[i]:.6g}\n")
    return out.getvalue()


def check_profile(p: Profile, source: str | Path = "the profile", *,
                  line_no: list[int] | None = None, hint: str = "") -> None:
    """Refuses a profile that a stage would refuse or alter: more than :data:`MAX_ROWS` rows,
    a time or a delay outside [0, 1e12] ms, a loss outside [0, 1], a rate (as written: a
    whole number of bit/s) outside [0, 1e13] or a last rate of 0 (it holds forever). An
    error names ``source`` and the row: its line there (``line_no``, one per row) or its
    time; ``hint`` (what made the row) follows a fitted row's time."""
    n = p.t_ms.size
    if n > MAX_ROWS:
        raise TraceError(f"{source}: {n:,} rows (at most {MAX_ROWS:,})")

    def at(i: int) -> str:
        if line_no is not None and len(line_no) == n:
            return f"{source} line {line_no[i]}"
        return f"{source}: the row at {p.t_ms[i]:.6g} ms{hint}"

    def first(bad: np.ndarray) -> int | None:
        i = np.flatnonzero(bad)
        return int(i[0]) if i.size else None

    if (i := first(~((p.t_ms >= 0) & (p.t_ms <= MAX_MS)))) is not None:
        raise TraceError(f"{at(i)}: time must be in [0, 1e12] ms (about 31 years), got "
                         f"{p.t_ms[i]:.6g}")
    if p.is_rate:
        r = np.round(np.asarray(p.rate_bps, dtype=np.float64))
        if (i := first(~((r >= 0) & (r <= MAX_RATE_BPS)))) is not None:
            raise TraceError(f"{at(i)}: rate must be a whole number of bit/s in [0, 1e13], "
                             f"got {p.rate_bps[i]:.6g}")
        if n and not r[-1] > 0:
            raise TraceError(f"{at(n - 1)}: the last rate holds forever and must be > 0, "
                             f"got {p.rate_bps[-1]:.6g}")
        return
    d = p.delay_ms if p.delay_ms is not None else np.zeros(n)
    if (i := first(~((d >= 0) & (d <= MAX_MS)))) is not None:
        raise TraceError(f"{at(i)}: delay must be in [0, 1e12] ms (about 31 years), got "
                         f"{d[i]:.6g}")
    if p.loss is not None and (i := first(~((p.loss >= 0) & (p.loss <= 1)))) is not None:
        raise TraceError(f"{at(i)}: loss must be in [0, 1], got {p.loss[i]:.6g}")


def write_profile(p: Profile, path: str | Path) -> Path:
    """Writes the profile CSV whole (temporary name, then renamed), after
    :func:`check_profile`; an error writing it names ``path``, not the temporary."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a directory; give the profile's file name")
    check_profile(p, path)
    text = profile_csv(p)
    if len(text) > MAX_TRACE_FILE_BYTES:  # ASCII: one byte a character
        raise TraceError(f"{path}: the profile would be {len(text):,} bytes; a stage reads "
                         f"at most {MAX_TRACE_FILE_BYTES >> 20} MiB")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    return path


#: The options that only some kinds use (docs/traces.md), as the command spells them.
OPTION_KINDS = {
    "--share": ("ping", "pcap", "csv"),
    "--no-loss": ("ping", "pcap", "csv"),
    "--bin": ("mahimahi",),
    "--ping-interval": ("ping",),
    "--interface": ("pcap",),
    "--rate": ("pcap",),
    "--queue": ("pcap",),
    "--time-col": ("csv",),
    "--time-unit": ("csv",),
    "--delay-col": ("csv",),
    "--loss-col": ("csv",),
    "--rate-col": ("csv",),
}


def _check_options(kind: str, given: dict[str, bool]) -> None:
    """Refuses an option given for a kind that does not use it (it would be ignored)."""
    for option, on in given.items():
        kinds = OPTION_KINDS[option]
        if on and kind not in kinds:
            names = " and ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1
                                 else kinds)
            raise TraceError(f"{option} does not apply to {kind}: it is for {names} "
                             f"{'traces' if len(kinds) > 1 else 'only'}")
    if kind == "csv" and given["--share"] and not given["--delay-col"]:
        raise TraceError("--share scales a delay column: with csv it needs --delay-col")
    if kind == "csv" and given["--no-loss"] and not given["--loss-col"]:
        raise TraceError("--no-loss zeroes a loss column: with csv it needs --loss-col")


def import_trace(kind: str, path: str | Path, *, share: float | None = None,
                 interval_ms: float | None = None, smooth_ms: float = 0.0,
                 stat: str | None = None, bin_ms: float | None = None,
                 ping_interval_s: float | None = None, iface: str | None = None,
                 rate_bps: float | None = None, queue: int | None = None, loss: bool = True,
                 csv_columns: dict | None = None
                 ) -> tuple[Samples, Profile]:
    """Reads a trace of ``kind`` and fits its profile. Defaults per kind: ``share`` 0.5 for
    ping and pcap (RTT → one way), 1 for CSV; ``interval_ms`` 1000 for ping, 100 for pcap, 0
    (rows as they are) for CSV and Mahimahi (whose bins are ``bin_ms``, 100 by default);
    ``stat`` min for pcap (the lower envelope of the RTT leaves out the queueing a rate stage
    re-creates), mean otherwise. ``loss=False`` writes a zero loss column. An option the
    kind does not use (:data:`OPTION_KINDS`; ``csv_columns`` only for csv) is refused, as is
    a profile a stage would refuse or alter (:func:`check_profile`)."""
    if kind not in KINDS:
        raise TraceError(f"unknown trace kind {kind!r}; expected one of {', '.join(KINDS)}")
    csv_columns = {k: v for k, v in (csv_columns or {}).items() if v is not None}
    given = {"--share": share is not None, "--no-loss": not loss, "--bin": bin_ms is not None,
             "--ping-interval": ping_interval_s is not None, "--interface": iface is not None,
             "--rate": rate_bps is not None, "--queue": queue is not None}
    for option in OPTION_KINDS:
        if OPTION_KINDS[option] == ("csv",):
            given[option] = option[2:].replace("-", "_") in csv_columns
    unknown = set(csv_columns) - {"time_col", "time_unit", "delay_col", "loss_col", "rate_col"}
    if unknown:
        raise TraceError(f"csv_columns: unknown key {sorted(unknown)[0]!r}")
    _check_options(kind, given)
    if share is not None and not 0 < share <= 1:
        raise TraceError(f"--share: must be in (0, 1], got {share:g}")
    if interval_ms is not None:
        _check_ms("--interval", interval_ms)
    _check_ms("--smooth", smooth_ms)
    if ping_interval_s is not None:
        _check_ms("--ping-interval", ping_interval_s * 1000, positive=True)
    if kind == "ping":
        s = read_ping(path, share=0.5 if share is None else share, interval_s=ping_interval_s)
    elif kind == "mahimahi":
        s = read_mahimahi(path, bin_ms=100.0 if bin_ms is None else bin_ms)
    elif kind == "pcap":
        s = read_pcap(path, share=0.5 if share is None else share, iface=iface,
                      rate_bps=rate_bps, queue=queue)
    else:
        s = read_csv_samples(path, share=1.0 if share is None else share, **csv_columns)
    span = max((float(np.max(a)) for a in (s.t_ms, s.loss_t_ms) if a is not None and a.size),
               default=0.0)
    if not span <= MAX_MS:  # said before smoothing or resampling them
        raise TraceError(f"{path}: its samples span {span:.3g} ms; a profile's times must be "
                         f"at most 1e12 ms (about 31 years)")
    if interval_ms is None:
        interval_ms = {"ping": 1000.0, "pcap": 100.0}.get(kind, 0.0)
    if stat is not None and interval_ms == 0:  # it would be ignored: no bins to take it over
        raise TraceError(f"--stat: picks each resampled row's value from its bin, but {kind} "
                         f"rows are kept one per sample here; give --interval MS > 0 too")
    if stat is not None and s.delay_ms is None and s.rate_bps is None:
        raise TraceError("--stat: this CSV has only a loss column, whose bins are always "
                         "averaged; leave --stat out")
    if stat is None:
        stat = "min" if kind == "pcap" else "mean"
    prof = fit(s, interval_ms=interval_ms, smooth_ms=smooth_ms, stat=stat)
    if not loss and prof.loss is not None:
        prof.loss = np.zeros_like(prof.loss)
    # What is written is what a stage takes as it is: a row a fit made is named by its time
    # (and what made it), a CSV's row kept as it is by its line.
    check_profile(prof, path, line_no=s.line_no if interval_ms == 0 else None,
                  hint=(f" (--interval {interval_ms:g}, --stat {stat})" if interval_ms > 0
                        else ""))
    return s, prof
