"""Run an ns-2 script and read its counts back.

Per TCP flow (``finish`` in the script prints the agent's and the sink's counters):

- delivered packets: ``bytes_`` of the sink, which ``TcpSink::recv`` (``tcp/tcp-sink.cc``)
  grows by the wire size of each packet that ``Acker::update`` releases in order; every data
  packet is ``packetSize_`` + 40 bytes (and the SYN of ``syn_`` 40), so the count is exact;
- timeouts: ``nrexmit_``, counted in ``TcpAgent::timeout`` (``tcp/tcp.cc``) when the
  retransmission timer expires with data outstanding (not after an ECN cut);
- retransmitted packets: ``nrexmitpack_``, counted in ``TcpAgent::output`` for every data
  packet sent at or below ``maxseq_``;
- fast retransmits of ``Agent/TCP/Linux``: ``ncwndcuts_`` less ``nrexmit_``
  (``tcp/tcp-linux.cc`` counts a cut at each entry into Recovery and at each timeout);
- fast retransmits of the others: the agent's event trace (``$ns eventtrace-all``), one ``E`` line per
  entry into fast retransmit: ``RENO_FAST_RETX`` (``RenoTcpAgent::dupack_action``),
  ``NEWRENO_FAST_RETX`` (``NewRenoTcpAgent::dupack_action``), ``FAST_RECOVERY``
  (``Sack1TcpAgent::dupack_action``), ``FAST_RETX`` (``TcpAgent::dupack_action``, Tahoe). The
  later ``NEWRENO_FAST_RECOVERY`` lines (one per further duplicate ACK) are not entries.

Per SCTP association:

- fast retransmits: ``frCount_``, which ``SctpAgent::ProcessGapAckBlocks``
  (``sctp/sctp.cc``) increments once per SACK that marks chunks for fast retransmission;
- T3-rtx expiries: from the packet traces of the links next to the sender. ``timeoutCount_``
  cannot serve: ``SctpAgent::Timeout`` counts heartbeat expiries in it too, ``Reset`` bumps
  it to trigger its trace, and tracing it (``SctpAgent::TraceVar`` calls ``SetSource``)
  breaks a multihomed association's routing. A T3-rtx expiry runs ``TimeoutRtx``, which
  sends DATA already sent again at that instant; every other retransmission (fast
  retransmit, chunks marked earlier that an opened window lets out) leaves when a SACK
  arrives. So an expiry is an instant at which a TSN sent before leaves the sender while no
  packet reaches the sender. Retransmitted packets: the DATA chunks whose TSN left before.

Both: packets through the bottleneck, the ``-`` (dequeue: start of transmission) lines of the
bottleneck link's trace (``$ns trace-queue``), each packet once (``uid``).
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .tcl import Plan

INSTALL_HINT = "ns-2 is not installed (no ns command): apt-get install ns2"
FAST_RETX_EVENTS = ("RENO_FAST_RETX", "NEWRENO_FAST_RETX", "FAST_RECOVERY", "FAST_RETX")
TIMEOUT_S = 60.0


class Ns2Error(ValueError):
    """ns-2 missing, failing or silent (one line; the command line prints it as an error)."""


def ns_binary() -> str:
    path = shutil.which("ns")
    if path is None:
        raise Ns2Error(INSTALL_HINT)
    return path


@dataclass
class Counts:
    """One flow's numbers from ns-2."""

    delivered: float | None = None
    timeouts: float | None = None
    retx: float | None = None
    fast_retx: float | None = None
    sent: float | None = None
    bottleneck: float | None = None


@dataclass
class Ns2Run:
    flows: list[Counts]
    cpu_s: float
    wall_s: float
    runs: int = 1
    drops: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class _Pkt:
    ev: str
    t: float
    uid: int
    seq: int
    kind: str        # SCTP chunk type letter, "" for TCP
    fid: int
    ts: str = ""     # the time as printed (two events at one instant print alike)


def _read_trace(path: Path) -> list[_Pkt]:
    out = []
    if not path.exists():
        return out
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            w = line.split()
            if len(w) < 12 or w[0] not in "+-rd":
                continue
            if w[4] == "sctp" and len(w) >= 15:
                # ... sctp SIZE FLAGS FID SRC DST NCHUNKS TSN UID STREAM SSN
                out.append(_Pkt(w[0], float(w[1]), int(w[12]), int(w[11]), w[6][-1],
                                int(w[7]), w[1]))
            else:
                # ... TYPE SIZE FLAGS FID SRC DST SEQNO UID
                out.append(_Pkt(w[0], float(w[1]), int(w[11]), int(w[10]), "", int(w[7]),
                                w[1]))
    return out


def run_script(text: str, workdir: Path, timeout: float = TIMEOUT_S) -> tuple[str, float, float]:
    """Run ``ns`` on ``text`` in ``workdir``: (stdout, CPU user+sys s of that process, wall
    s). The CPU time is the operating system's accounting of the finished child
    (``wait4``)."""
    ns = ns_binary()
    script = workdir / "scenario.tcl"
    script.write_text(text, encoding="utf-8")
    out_path, err_path = workdir / "ns.stdout", workdir / "ns.stderr"
    with out_path.open("w") as out_fh, err_path.open("w") as err_fh:
        start = time.monotonic()
        proc = subprocess.Popen([ns, script.name], cwd=workdir, stdout=out_fh, stderr=err_fh)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if wall >= timeout and proc.returncode != 0:
        raise Ns2Error(f"ns ran longer than {timeout:g} s on {script}")
    if proc.returncode != 0:
        err = err_path.read_text(encoding="utf-8", errors="replace").strip()
        last = (err.splitlines() or [f"exit status {proc.returncode}"])[0]
        raise Ns2Error(f"ns failed on {script}: {last}")
    return (out_path.read_text(encoding="utf-8", errors="replace"),
            usage.ru_utime + usage.ru_stime, wall)


def _parse(p: Plan, workdir: Path, stdout: str) -> list[Counts]:
    counts = {f.index: Counts() for f in p.flows}
    by_index = {f.index: f for f in p.flows}
    for line in stdout.splitlines():
        w = line.split()
        if len(w) < 3 or w[0] != "flow":
            continue
        i = int(w[1])
        c, f = counts[i], by_index[i]
        if w[2] == "tcp":
            c.timeouts, c.retx, c.sent = float(w[3]), float(w[4]), float(w[5])
            if f.linux and len(w) > 7:
                # Agent/TCP/Linux traces no events; ncwndcuts_ counts its entries into
                # Recovery (tcp_fastretrans_alert) and its timeouts (enter_loss).
                c.fast_retx = float(w[7]) - c.timeouts
            # ns-2 adds the headers to every data packet but seqno 0 (TcpAgent::output:
            # the SYN of syn_ is 40 bytes, without syn_ the first data packet is packetSize_).
            got = int(w[6])
            if f.syn:
                c.delivered = float(max(0, got - 40) // (f.mss + 40))
            else:
                c.delivered = float(0 if got <= 0 else (got - f.mss) // (f.mss + 40) + 1)
        else:
            c.fast_retx = float(w[3])
    events = workdir / "events.tr"
    if events.exists():
        fr = collections.Counter()
        for line in events.read_text(encoding="utf-8", errors="replace").splitlines():
            w = line.split()
            if len(w) >= 7 and w[0] == "E" and w[4] == "TCP" and w[5] in FAST_RETX_EVENTS:
                fr[int(w[6])] += 1
        for f in p.flows:
            if f.protocol == "tcp" and not f.linux:
                counts[f.index].fast_retx = float(fr.get(f.index, 0))
    through = 0
    for lk in p.bottlenecks:
        through += len({k.uid for k in _read_trace(workdir / f"link-{lk.name}.tr")
                        if k.ev == "-"})
    for f in p.flows:
        counts[f.index].bottleneck = float(through) if len(p.flows) == 1 else None
        if f.protocol == "sctp":
            t3, again = _t3_expiries(p, workdir)
            counts[f.index].timeouts, counts[f.index].retx = float(t3), float(again)
    return [counts[f.index] for f in p.flows]


def _t3_expiries(p: Plan, workdir: Path) -> tuple[int, int]:
    """The T3-rtx expiries of the association (module doc): instants at which DATA sent
    before leaves the sender again while nothing reaches the sender at that instant (a fast
    retransmission, or one that a SACK's opened window lets out, happens when a SACK
    arrives; ``TimeoutRtx`` runs off the timer), and the DATA chunks sent again."""
    fwd = {d[0] for f in p.flows for d in f.dests}
    rev = {d[1] for f in p.flows for d in f.dests}
    sent: list[tuple[float, str, int]] = []
    arrivals: set[str] = set()
    for lk in p.links:
        if not lk.traced:
            continue
        if lk.hop == 0 and lk.path in fwd:
            sent += [(k.t, k.ts, k.seq) for k in _read_trace(workdir / f"link-{lk.name}.tr")
                     if k.ev == "+" and k.kind == "D"]
        if lk.last and lk.path in rev:
            arrivals |= {k.ts for k in _read_trace(workdir / f"link-{lk.name}.tr")
                         if k.ev == "r"}
    sent.sort()
    seen: set[int] = set()
    instants: set[str] = set()
    again = 0
    for _, ts, tsn in sent:
        if tsn in seen:
            again += 1
            if ts not in arrivals:
                instants.add(ts)
        seen.add(tsn)
    return len(instants), again


def _seq_drop(p: Plan, workdir: Path, drops: dict[str, list[int]],
              taken: dict[str, dict[int, int]]) -> tuple[float, str, int, int] | None:
    """The earliest packet a ``seqs`` entry still has to drop: (time, model, index, seq)."""
    best = None
    for lk, ls in p.losses():
        if not ls.seqs:
            continue
        pending = collections.Counter()
        for s in ls.seqs:
            pending[s] += 1
        mine = taken.get(ls.name, {})
        nth = {n - 1 for n in ls.nth}
        pkts = _read_trace(workdir / f"link-{lk.name}.tr")
        # The packets in the order they reach the model: at the head every arrival (a
        # packet the model drops has no "+"), at the output every packet the link delivered
        # or the model dropped after its "-".
        dequeued = {k.uid for k in pkts if k.ev == "-"}
        enqueued = {k.uid for k in pkts if k.ev == "+"}
        order, seen_uid = [], set()
        for k in pkts:
            if k.uid in seen_uid:
                continue
            hit = (k.ev == "+" or (k.ev == "d" and k.uid not in enqueued)) if ls.head else \
                (k.ev == "r" or (k.ev == "d" and k.uid in dequeued))
            if hit:
                order.append(k)
                seen_uid.add(k.uid)
        for n, k in enumerate(order):
            seq = _spikelab_seq(p, k)
            if n in mine:
                pending[mine[n]] -= 1
                continue
            if n in nth or seq is None:
                continue
            if pending.get(seq, 0) > 0:
                cand = (k.t, ls.name, n, seq)
                if best is None or cand < best:
                    best = cand
                break
    return best


def _spikelab_seq(p: Plan, k: _Pkt) -> int | None:
    """A trace line's data sequence number as spikelab's ``seqs`` count it."""
    f = next((f for f in p.flows if f.index == k.fid), p.flows[0])
    if f.protocol == "tcp":
        if k.seq < f.seq_base:
            return None
        return (k.seq - f.seq_base) * f.mss
    return k.seq + 1 if k.kind == "D" else None


def run_plan(p: Plan, workdir: Path | None = None, timeout: float = TIMEOUT_S) -> Ns2Run:
    """Run the plan's script (again with drops for ``seqs`` until every listed sequence
    number's transmission is dropped) and read the counts."""
    own = workdir is None
    wd = Path(tempfile.mkdtemp(prefix="spikelab-ns2-")) if own else workdir
    try:
        drops: dict[str, list[int]] = {}
        taken: dict[str, dict[int, int]] = {}
        cpu = wall = 0.0
        limit = sum(len(ls.seqs) for _, ls in p.losses()) + 1
        for runs in range(1, limit + 1):
            out, c, w = run_script(p.script(drops), wd, timeout)
            cpu, wall = cpu + c, wall + w
            nxt = _seq_drop(p, wd, drops, taken)
            if nxt is None:
                break
            _, name, n, seq = nxt
            drops.setdefault(name, []).append(n)
            taken.setdefault(name, {})[n] = seq
        return Ns2Run(flows=_parse(p, wd, out), cpu_s=cpu, wall_s=wall, runs=runs,
                      drops=drops)
    finally:
        if own:
            shutil.rmtree(wd, ignore_errors=True)

