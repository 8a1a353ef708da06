"""A resolved spikelab scenario as an ns-2.35 Tcl script (``ns script.tcl``).

What maps (everything else is refused by :func:`plan`, one line naming the field):

- A path is cut into hops, each an optional ``rate`` stage followed by an optional ``delay``
  stage, and each hop becomes one ``$ns simplex-link`` (bandwidth, delay, DropTail); hops are
  chained through router nodes, so a path keeps its own links and routing is forced. A hop
  without a rate gets a link of 1 Tbit/s (12 ns for a 1500-byte packet), one without a delay a
  delay of 0.
- Queue limits: ns-2's DropTail (``queue/drop-tail.cc``, ``DropTail::enque``) drops an
  arrival when ``q_->length() + 1 >= qlim_``, where the queue no longer holds the packet the
  link is sending (``Queue::recv`` dequeues it before handing it to the link, which blocks the
  queue until its transmission ends). So a limit of L holds L - 1 waiting packets beside the
  one on the wire. spikelab's rate stage counts waiting packets only
  (``crates/spikelab-net/src/rate.rs``), so ``queue = N`` is written ``queue-limit N + 1``: both
  then hold N waiting packets and one in transmission.
- A delay profile of steps (two rows at one time; constant between rows) becomes
  ``$ns at T "[[$ns link A B] link] set delay_ D"``. ns-2's ``LinkDelay::recv``
  (``link/delay.cc``) takes the delay when a packet *starts* its transmission, spikelab's delay
  stage when the packet leaves the rate stage before it, one transmission time later; so each
  change is written that transmission time (of a full-sized data packet on that link) earlier.
  After a fall of the delay a later packet overtakes an earlier one in ns-2 (each packet is
  scheduled at its own ``txtime + delay_``), which is spikelab's ``reorder = true``; a
  profile that falls under ``reorder = false`` is refused.
- A ``loss`` stage becomes an error model on the hop it borders: before the hop's rate stage
  ``$ns lossmodel`` (the link's head, before its queue: ``SimpleLink instproc errormodule``),
  after it ``$ns link-lossmodel`` (at the link's output: ``insert-linkloss``). ``nth``
  becomes an ``ErrorModel/List`` whose ``droplist`` counts from 0 (``ListErrorModel::corrupt``)
  where spikelab counts from 1. ``seqs`` (a data sequence number's next transmission) has no
  ns-2 error model: the runner finds the packet's index at that point by running ns-2 again
  with the drops found so far (``runner.py``). A loss profile whose rates are 0 or 1 in steps
  (a path that fails at a time) becomes an ``ErrorModel`` with ``rate_`` switched by
  ``$ns at`` (``ErrorModel::CorruptPkt`` drops when a uniform draw is below ``rate_``, so 0
  and 1 draw but never decide by chance).
- TCP flows with ``cc = "cubic"`` or ``"hybla"``, or ``"reno"`` with ``ns2_agent = "linux"``:
  ``Agent/TCP/Linux`` with ``select_ca``
  (after ``window_`` and ``packetSize_``, which it reads) and a ``TCPSink/Sack1`` sink
  (``variant = "sack"``); ``select_ca`` sets ``tcpTick_`` to 1 ms, so the scenario's tick is
  written after it; Hybla's ``rtt0`` becomes ``set_ca_param hybla rtt0``.
- TCP flows: ``Agent/TCP/Reno``, ``Agent/TCP/Newreno`` or ``Agent/TCP/Sack1`` with
  ``Agent/TCPSink``, ``TCPSink/DelAck``, ``TCPSink/Sack1`` or ``TCPSink/Sack1/DelAck`` and an
  FTP source. ``packetSize_`` is the MSS: with ``useHeaders_`` true (ns-2's default) the agent
  adds ``tcpip_base_hdr_size_`` (40 bytes) to every data packet (``TcpAgent::output``), so the
  wire size is MSS + 40, spikelab's without timestamps.
- SCTP flows: ``Agent/SCTP`` on both ends; several destinations become one interface node per
  destination on each side (``$ns multihome-add-interface``, ``multihome-attach-agent``), each
  destination's paths between its two interface nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .units import Unreadable, bits_per_second, nbytes, seconds

# A hop without a rate stage: fast enough that a packet's transmission takes nanoseconds.
NO_RATE_BPS = 1e12
# Its queue (spikelab's delay stage never drops).
NO_RATE_QUEUE = 1_000_000
TCP_HEADERS = 40            # ns-2's tcpip_base_hdr_size_
TCP_AGENTS = {"reno": "Agent/TCP/Reno", "newreno": "Agent/TCP/Newreno",
              "sack": "Agent/TCP/Sack1"}
# The congestion controls ns-2.35's Agent/TCP/Linux runs for spikelab (select_ca NAME).
LINUX_CC = ("cubic", "hybla")


class Refused(ValueError):
    """A scenario ns-2 cannot express: one line, the field first."""


@dataclass
class Loss:
    """An error model on a link: ``head`` (before its queue) or at its output."""

    where: str              # scenario field of the stage
    name: str               # Tcl variable
    head: bool
    nth: list[int] = field(default_factory=list)        # spikelab's, counted from 1
    seqs: list[int] = field(default_factory=list)       # spikelab's data sequence numbers
    steps: list[tuple[float, float]] = field(default_factory=list)  # (t s, rate 0/1)


@dataclass
class Link:
    name: str               # Tcl array key: L(name)
    path: str
    hop: int
    src: str                # Tcl node expressions
    dst: str
    rate_bps: float
    delay_s: float
    limit: int
    has_rate: bool
    rate_stage: str | None  # the rate stage's name (for the spikelab side's counts)
    delay_steps: list[tuple[float, float]] = field(default_factory=list)  # (t s, delay s)
    losses: list[Loss] = field(default_factory=list)
    traced: bool = False
    last: bool = False      # the path's last hop


@dataclass
class Flow:
    index: int
    protocol: str
    agent: str
    sink: str
    start_s: float
    mss: int = 0
    syn: bool = False
    file_packets: int | None = None
    seq_base: int = 0       # ns-2's seqno of the first data packet (1 after the SYN)
    linux: bool = False     # Agent/TCP/Linux (its fast retransmits: ncwndcuts_ - nrexmit_)
    dests: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Plan:
    """What the script holds: the links, the flows, and which links are the bottlenecks."""

    duration_s: float
    links: list[Link]
    flows: list[Flow]
    bottlenecks: list[Link]
    notes: list[str] = field(default_factory=list)
    traces: bool = True
    head: list[str] = field(default_factory=list)   # nodes and agents' globals
    body: list[str] = field(default_factory=list)   # agents, applications

    def script(self, extra_drops: dict[str, list[int]] | None = None) -> str:
        return render(self, extra_drops)

    def losses(self) -> list[tuple[Link, Loss]]:
        return [(lk, ls) for lk in self.links for ls in lk.losses]


# ------------------------------------------------------------------------------- planning


def _num(x: float) -> str:
    """A number as Tcl reads it, exactly enough (no exponent for small integers)."""
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


def _hops(path: str, stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cut a path's stages into hops: [loss...] [rate] [delay] [loss...]."""
    hops: list[dict[str, Any]] = []
    cur: dict[str, Any] = {"pre": [], "rate": None, "delay": None, "post": []}

    def new() -> dict[str, Any]:
        hops.append(cur)
        return {"pre": [], "rate": None, "delay": None, "post": []}

    for i, st in enumerate(stages):
        where = f"path.{path}.stage[{i}]"
        kind = st.get("type")
        if kind == "rate":
            if cur["rate"] is not None or cur["delay"] is not None or cur["post"]:
                cur = new()
            cur["rate"] = (where, st)
        elif kind == "delay":
            if cur["delay"] is not None or cur["post"]:
                cur = new()
            cur["delay"] = (where, st)
        elif kind == "loss":
            if cur["rate"] is None and cur["delay"] is None:
                cur["pre"].append((where, st))
            else:
                cur["post"].append((where, st))
        else:
            raise Refused(f"{where}.type: ns-2's links have no {kind} stage (a link is a "
                          "rate, a delay and drop-tail queue; loss lists and 0/1 loss "
                          "steps map to error models)")
    if cur["rate"] or cur["delay"] or cur["pre"] or cur["post"] or not hops:
        hops.append(cur)
    return hops


def _rate(where: str, st: dict[str, Any]) -> tuple[float, int]:
    for key in ("schedule", "trace", "switching", "adapt"):
        if key in st:
            raise Refused(f"{where}.{key}: the ns-2 writer maps a constant rate only")
    if st.get("backpressure"):
        raise Refused(f"{where}.backpressure: ns-2's queues drop; they never push back on "
                      "the sender")
    if "queue_bytes" in st:
        raise Refused(f"{where}.queue_bytes: the ns-2 writer maps a queue in packets only "
                      "(ns-2 counts bytes in units of mean_pktsize_)")
    rate = bits_per_second(st["rate"], f"{where}.rate")
    queue = int(st.get("queue", 1000))
    return rate, queue


def _delay(where: str, st: dict[str, Any]) -> tuple[float, list[tuple[float, float]], bool]:
    """(initial delay s, [(t s, delay s)] changes, falls) of a fixed or stepped delay."""
    for key in ("trace", "preset", "leo"):
        if key in st:
            raise Refused(f"{where}.{key}: the ns-2 writer maps a fixed delay or a profile "
                          "of steps only")
    if "delay" in st:
        return seconds(st["delay"], f"{where}.delay"), [], False
    rows = st.get("profile") or []
    if not rows:
        raise Refused(f"{where}: a delay stage without a delay or profile")
    for i, row in enumerate(rows):
        if len(row) > 2 and float(row[2]) != 0.0:
            raise Refused(f"{where}.profile: row {i}: ns-2's link has no loss rate; the "
                          "profile's loss column must be 0 (use a loss stage)")
    for i in range(len(rows) - 1):
        (t0, d0), (t1, d1) = rows[i][:2], rows[i + 1][:2]
        if t1 > t0 and d1 != d0:
            raise Refused(f"{where}.profile: rows {i}-{i + 1}: a linear ramp ({d0:g} ms to "
                          f"{d1:g} ms) cannot be expressed in ns-2 (its link delay changes "
                          "in steps: give two rows at one time)")
    first = float(rows[0][1]) / 1e3
    changes, prev, falls = [], first, False
    for t, d in ((float(r[0]) / 1e3, float(r[1]) / 1e3) for r in rows[1:]):
        if d != prev:
            changes.append((t, d))
            falls = falls or d < prev
            prev = d
    return first, changes, falls


def _loss(where: str, st: dict[str, Any], name: str, head: bool) -> Loss:
    model = st.get("model")
    loss = Loss(where=where, name=name, head=head)
    if model == "deterministic":
        loss.nth = [int(n) for n in st.get("nth") or []]
        loss.seqs = [int(s) for s in st.get("seqs") or []]
        return loss
    if model == "profile" and "profile" in st:
        rows = st["profile"]
        for i, row in enumerate(rows):
            if float(row[1]) not in (0.0, 1.0):
                raise Refused(f"{where}.profile: row {i}: a loss rate of {row[1]:g} draws at "
                              "random (ns-2 draws other numbers); only 0 and 1 map")
        for i in range(len(rows) - 1):
            if rows[i + 1][0] > rows[i][0] and rows[i + 1][1] != rows[i][1]:
                raise Refused(f"{where}.profile: rows {i}-{i + 1}: a ramp of the loss rate "
                              "draws at random; only steps of 0 and 1 map")
        prev = float(rows[0][1])
        loss.steps.append((0.0, prev))
        for t, p in ((float(r[0]) / 1e3, float(r[1])) for r in rows[1:]):
            if p != prev:
                loss.steps.append((t, p))
                prev = p
        return loss
    what = {"bernoulli": "random (Bernoulli) loss", "gilbert_elliott": "Gilbert-Elliott loss",
            "profile": "a loss preset"}.get(str(model), f"loss model {model!r}")
    raise Refused(f"{where}.model: {what} draws from spikelab's random numbers, which ns-2 "
                  "does not share; only deterministic losses and 0/1 steps map")


def _links(path: str, stages: list[dict[str, Any]], src: str, dst: str,
           wire: int) -> tuple[list[Link], list[str]]:
    """The simplex links of one path from node ``src`` to node ``dst`` (intermediate nodes
    get names ``R(path,k)``) and the Tcl lines that create its routers."""
    hops = _hops(path, stages)
    lines, links = [], []
    nodes = [src] + [f"$R({path},{k})" for k in range(1, len(hops))] + [dst]
    for k in range(1, len(hops)):
        lines.append(f"set R({path},{k}) [$ns node]")
    for k, hop in enumerate(hops):
        rate, queue, rate_stage = NO_RATE_BPS, NO_RATE_QUEUE, None
        if hop["rate"]:
            where, st = hop["rate"]
            rate, queue = _rate(where, st)
            rate_stage = str(st.get("name") or "rate")
        delay, steps = 0.0, []
        if hop["delay"]:
            where, st = hop["delay"]
            delay, steps, falls = _delay(where, st)
            if falls and not st.get("reorder"):
                raise Refused(f"{where}.reorder: after ns-2's link delay falls a later packet "
                              "overtakes an earlier one (LinkDelay::recv schedules each at "
                              "its own delay); set reorder = true so spikelab does the same")
        lk = Link(name=f"{path}.{k}", path=path, hop=k, src=nodes[k], dst=nodes[k + 1],
                  rate_bps=rate, delay_s=delay, limit=queue + 1 if hop["rate"] else queue,
                  has_rate=hop["rate"] is not None, rate_stage=rate_stage,
                  last=k == len(hops) - 1)
        # ns-2 takes the delay at the start of the transmission, spikelab at its end.
        tx = wire * 8 / rate
        lk.delay_steps = [(max(0.0, t - tx), d) for t, d in steps]
        for j, (where, st) in enumerate(hop["pre"]):
            lk.losses.append(_loss(where, st, f"E({path},{k},pre{j})", head=True))
        for j, (where, st) in enumerate(hop["post"]):
            lk.losses.append(_loss(where, st, f"E({path},{k},post{j})", head=False))
        if len([ls for ls in lk.losses if not ls.head]) > 1:
            raise Refused(f"{hop['post'][1][0]}: ns-2 takes one loss model at a link's output")
        links.append(lk)
    return links, lines


# TCP keys whose value ns-2's agents cannot take (key, the value ns-2 has, why).
_TCP_FIXED = (
    ("abc", False, "ns-2's agents grow cwnd per ACK (no byte counting)"),
    ("rack", False, "ns-2's agents have no RACK"),
    ("tlp", False, "ns-2's agents have no tail loss probe"),
    ("prr", False, "ns-2's agents have no proportional rate reduction"),
    ("timestamps", False, ("ns-2's timestamp option is 10 bytes (ts_option_size_), "
                           "spikelab's 12, so the packets would differ in size; set "
                           "timestamps = false")),
    ("quickack", 0, "ns-2's sinks have no quick-ACK mode"),
    ("comp_sack", 0, "ns-2's sinks do not compress SACKs"),
    ("rcv_autotune", False, "ns-2's window_ is fixed"),
    ("rearm_rto_on_sack", False, "ns-2's agents restart the timer on new cumulative ACKs only"),
    ("kernel_rtt_samples", False, "ns-2 times one segment per round trip (rtt_active_)"),
    ("timer_hz", 0, "ns-2 has no jiffies (its timers tick at tcpTick_: rto.granularity)"),
    ("ssthresh_basis", "flight", "ns-2 halves min(cwnd, window) (slowdown, windowd())"),
    ("cwnd_limited_check", False, "ns-2 grows cwnd on every ACK"),
    ("small_queue", 0, "ns-2 has no TCP Small Queues"),
    ("moderate_cwnd", False, "ns-2's Reno and NewReno agents keep cwnd when recovery ends"),
    ("spurious", [], ("ns-2's Reno, NewReno and Sack1 agents run no "
                      "spurious-retransmission detector")),
    ("delack_segments", 2, "ns-2's DelAck sinks ACK every second segment"),
)


def _tcp_flow(i: int, fl: dict[str, Any], notes: list[str]) -> tuple[Flow, list[str]]:
    tcp = fl.get("tcp") or {}
    where = f"flow[{i}].tcp"
    cc = fl.get("cc")
    algo = cc.get("algo") if isinstance(cc, dict) else cc
    # Reno runs in Agent/TCP/Linux too with ns2_agent = "linux" (select_ca reno).
    linux = algo in LINUX_CC or (algo == "reno" and tcp.get("ns2_agent") == "linux")
    if algo not in ("reno", "newreno") and not linux:
        raise Refused(f"flow[{i}].cc: ns-2's Reno, NewReno and Sack1 agents grow cwnd as "
                      f"Reno does and its Agent/TCP/Linux runs {', '.join(LINUX_CC)}; "
                      f"{algo} does not map")
    for key, value, why in _TCP_FIXED:
        if key in tcp and tcp[key] != value:
            if key == "delack_segments" and not tcp.get("delayed_ack"):
                continue
            raise Refused(f"{where}.{key}: {why}")
    variant = str(tcp.get("variant", "newreno"))
    if variant not in TCP_AGENTS:
        raise Refused(f"{where}.variant: no ns-2 agent for {variant!r}")
    if linux and variant != "sack":
        raise Refused(f"{where}.variant: Agent/TCP/Linux detects losses from SACK blocks "
                      "only; variant = \"sack\" (TCPSink/Sack1)")
    delack = bool(tcp.get("delayed_ack"))
    sack = bool(tcp.get("sack"))
    interval = tcp.get("delack_timeout", "40ms")
    if delack and interval == "ato":
        raise Refused(f"{where}.delack_timeout: ns-2's DelAck sinks have a fixed interval_")
    if tcp.get("profile") != "ns2":
        raise Refused(f"{where}.profile: --against ns2 holds spikelab's ns2 profile against "
                      "ns-2.35's agents; set profile = \"ns2\"")
    rto = tcp.get("rto") or {}
    lines = []
    mss = int(tcp.get("mss", 1448))
    a, s = f"A({i})", f"S({i})"
    sink = "Agent/TCPSink" + ("/Sack1" if sack else "") + ("/DelAck" if delack else "")
    agent = "Agent/TCP/Linux" if linux else TCP_AGENTS[variant]
    lines += [f"set {a} [new {agent}]", f"set {s} [new {sink}]"]
    syn = bool(tcp.get("handshake"))
    sets = {
        "packetSize_": mss,
        "windowInit_": int(tcp.get("initial_window", 10)),
        "window_": max(1, int(nbytes(tcp.get("rwnd", 3145728), f"{where}.rwnd")) // mss),
        "numdupacks_": int(tcp.get("dupthresh", 3)),
        "singledup_": 1 if tcp.get("limited_transmit") else 0,
        "syn_": "true" if syn else "false",
        "timestamps_": "false",
        "minrto_": _num(seconds(rto.get("min", "1s"), f"{where}.rto.min")),
        "maxrto_": _num(seconds(rto.get("max", "60s"), f"{where}.rto.max")),
        "rtxcur_init_": _num(seconds(rto.get("initial", "1s"), f"{where}.rto.initial")),
        "tcpTick_": _num(seconds(rto.get("granularity", "1ms"), f"{where}.rto.granularity")),
    }
    bfr = tcp.get("block_fr_after_rto")
    if bfr is None:
        bfr = variant != "reno"
    sets["bugFix_"] = "true" if bfr else "false"
    if tcp.get("initial_ssthresh") is not None:
        ss = nbytes(tcp["initial_ssthresh"], f"{where}.initial_ssthresh")
        notes.append(f"{where}.initial_ssthresh: ns-2 starts ssthresh_ at window_ "
                     f"(TcpAgent::reset); {ss} bytes written as maxcwnd_ is not the same, "
                     "so it is left at window_")
    if rto.get("phase"):
        notes.append(f"{where}.rto.phase: ns-2 draws boot_time_ from its own generator; the "
                     "script cannot set it")
    tick = sets.pop("tcpTick_")
    for k, v in sets.items():
        lines.append(f"${a} set {k} {v}")
    if linux:
        # select_ca reads window_ and packetSize_ (load_to_linux_once) and sets tcpTick_ to
        # 1 ms (install_congestion_control); the scenario's tick is set after it.
        lines.append(f"${a} select_ca {algo}")
        rtt0 = cc.get("rtt0") if isinstance(cc, dict) else None
        if algo == "hybla" and rtt0 is not None:
            ms = seconds(rtt0, f"flow[{i}].cc.rtt0") * 1e3
            lines.append(f"${a} set_ca_param hybla rtt0 {round(ms)}")
    lines.append(f"${a} set tcpTick_ {tick}")
    lines.append(f"${s} set packetSize_ {TCP_HEADERS}")
    if delack:
        lines.append(f"${s} set interval_ "
                     f"{_num(seconds(interval, f'{where}.delack_timeout'))}")
    if sack:
        lines.append(f"${s} set generateDSacks_ {'true' if tcp.get('dsack') else 'false'}")
    app = fl.get("app") or {"type": "bulk"}
    f = Flow(index=i, protocol="tcp", agent=a, sink=s,
             start_s=seconds(fl.get("start", 0), f"flow[{i}].start"), mss=mss, syn=syn,
             seq_base=1 if syn else 0, linux=linux)
    if app.get("type") == "file":
        size = nbytes(app["size"], f"flow[{i}].app.size")
        if size % mss:
            raise Refused(f"flow[{i}].app.size: ns-2 sends whole packets of packetSize_ "
                          f"bytes; {size} is not a multiple of the MSS ({mss})")
        f.file_packets = size // mss
    elif app.get("type") != "bulk":
        raise Refused(f"flow[{i}].app.type: the ns-2 writer maps bulk and file apps only")
    if fl.get("start_jitter") and seconds(fl["start_jitter"], f"flow[{i}].start_jitter"):
        raise Refused(f"flow[{i}].start_jitter: a random start does not map (ns-2 draws "
                      "other numbers)")
    return f, lines


def _sctp_flow(i: int, fl: dict[str, Any], notes: list[str]) -> tuple[Flow, list[str]]:
    sc = fl.get("sctp") or {}
    where = f"flow[{i}].sctp"
    if sc.get("profile") != "ns2":
        raise Refused(f"{where}.profile: --against ns2 holds spikelab's ns2 profile against "
                      "ns-2.35's Agent/SCTP; set profile = \"ns2\"")
    for key in ("pf_max_retrans", "psmr"):
        if sc.get(key) is not None:
            raise Refused(f"{where}.{key}: ns-2's Agent/SCTP has no potentially-failed "
                          "state (RFC 7829; only its CMT-PF agent has one)")
    for key, default in (("rto_alpha", 0.125), ("rto_beta", 0.25)):
        if float(sc.get(key, default)) != default:
            raise Refused(f"{where}.{key}: ns-2 fixes RTO.Alpha and RTO.Beta at 1/8 and 1/4 "
                          "(sctp.h RTO_ALPHA, RTO_BETA)")
    if not sc.get("rto_max_cap_on_backoff", True):
        raise Refused(f"{where}.rto_max_cap_on_backoff: ns-2 caps the backed-off RTO at "
                      "RTO.Max (SctpAgent::Timeout)")
    if int(sc.get("max_burst", 4)) not in (0, 4):
        raise Refused(f"{where}.max_burst: ns-2's Max.Burst is 4 (sctp.h MAX_BURST) or off")
    if int(sc.get("sack_freq", 2)) != 2:
        raise Refused(f"{where}.sack_freq: ns-2 SACKs every second DATA packet")
    mtu = int(sc.get("mtu", 1500))
    msg = sc.get("message_size")
    chunk = (int(msg) if msg is not None else mtu - 20 - 12 - 16) + 16
    if chunk % 4:
        raise Refused(f"{where}.message_size: ns-2's dataChunkSize_ ({chunk}: the message "
                      "and its 16-byte chunk header) must be a multiple of 4")
    app = fl.get("app") or {"type": "bulk"}
    if app.get("type") != "bulk":
        raise Refused(f"flow[{i}].app.type: the ns-2 writer sends bulk SCTP data only")
    a, s = f"A({i})", f"S({i})"
    hb = seconds(sc.get("hb_interval", "30s"), f"{where}.hb_interval") \
        if sc.get("heartbeats", True) else 0.0
    sets = {
        "mtu_": mtu,
        "dataChunkSize_": chunk,
        "initialRto_": _num(seconds(sc.get("rto_initial", "1s"), f"{where}.rto_initial")),
        "minRto_": _num(seconds(sc.get("rto_min", "1s"), f"{where}.rto_min")),
        "maxRto_": _num(seconds(sc.get("rto_max", "60s"), f"{where}.rto_max")),
        "pathMaxRetrans_": int(sc.get("path_max_retrans", 5)),
        "associationMaxRetrans_": int(sc.get("assoc_max_retrans", 10)),
        "maxInitRetransmits_": int(sc.get("max_init_retransmits", 8)),
        "heartbeatInterval_": _num(hb),
        "useMaxBurst_": 1 if int(sc.get("max_burst", 4)) else 0,
        "numOutStreams_": 1,
    }
    lines = [f"set {a} [new Agent/SCTP]", f"set {s} [new Agent/SCTP]"]
    lines += [f"${a} set {k} {v}" for k, v in sets.items()]
    delay = seconds(sc.get("sack_delay", "200ms"), f"{where}.sack_delay")
    lines += [f"${s} set mtu_ {mtu}",
              f"${s} set initialRwnd_ {nbytes(sc.get('recv_buffer', 65536), where)}",
              f"${s} set useDelayedSacks_ {1 if delay > 0 else 0}",
              f"${s} set sackDelay_ {_num(delay)}",
              f"${s} set heartbeatInterval_ {_num(hb)}"]
    f = Flow(index=i, protocol="sctp", agent=a, sink=s,
             start_s=seconds(fl.get("start", 0), f"flow[{i}].start"),
             mss=chunk - 16)
    return f, lines


def plan(resolved: dict[str, Any], *, traces: bool = True) -> tuple[Plan, str]:
    """The ns-2 script of a resolved scenario (``spikelab validate``'s, ``_core.resolve``'s
    JSON) and what it holds. Raises :class:`Refused` naming the first field ns-2 cannot
    express. ``traces=False`` writes no trace files (the benchmark: only the counters of
    ``finish`` remain, so no fast retransmits, bottleneck counts or ``seqs`` drops)."""
    try:
        return _plan(resolved, traces)
    except Unreadable as exc:
        raise Refused(str(exc)) from None


def _plan(resolved: dict[str, Any], traces: bool) -> tuple[Plan, str]:
    sim = resolved.get("sim") or {}
    duration = seconds(sim.get("duration", "20s"), "sim.duration")
    flows = resolved.get("flow") or []
    paths = resolved.get("path") or {}
    if not flows:
        raise Refused("flow: the scenario has no flow")
    protos = {str(f.get("protocol", "tcp")) for f in flows}
    if len(protos) > 1:
        raise Refused("flow[1].protocol: the ns-2 writer runs one protocol per scenario")
    proto = protos.pop()
    for name, p in paths.items():
        if p.get("next"):
            raise Refused(f"path.{name}.next: the ns-2 writer does not join paths")
    notes: list[str] = []
    head = ["# Written by spikelab (spikelab fidelity --against ns2); run: ns THIS.tcl",
            "set ns [new Simulator]"]
    if traces:
        # Before any agent: Agent/TCP's init asks for its event trace (create-eventtrace).
        head += ["set ET [open events.tr w]", "$ns eventtrace-all $ET",
                 "Trace set show_sctphdr_ 1"]
    body: list[str] = []
    links: list[Link] = []
    fplans: list[Flow] = []
    if proto == "tcp":
        pairs = {(f.get("fwd", "fwd"), f.get("rev", "rev")) for f in flows}
        if len(pairs) > 1:
            raise Refused("flow[1].fwd: the ns-2 writer puts every TCP flow on the same fwd "
                          "and rev paths")
        fwd, rev = pairs.pop()
        mss = max(int((f.get("tcp") or {}).get("mss", 1448)) for f in flows)
        head += ["set H0 [$ns node]", "set H1 [$ns node]"]
        for name, src, dst, wire in ((fwd, "$H0", "$H1", mss + TCP_HEADERS),
                                     (rev, "$H1", "$H0", TCP_HEADERS)):
            lks, lines = _links(name, (paths.get(name) or {}).get("stage") or [], src, dst,
                                wire)
            links += lks
            head += lines
        for i, fl in enumerate(flows):
            f, lines = _tcp_flow(i, fl, notes)
            fplans.append(f)
            body += lines
            body += [f"$ns attach-agent $H0 ${f.agent}", f"$ns attach-agent $H1 ${f.sink}",
                     f"$ns connect ${f.agent} ${f.sink}", f"${f.agent} set fid_ {i}",
                     f"set F({i}) [${f.agent} attach-app FTP]"]
            what = "start" if f.file_packets is None else f"send {f.file_packets * f.mss}"
            body.append(f"$ns at {_num(f.start_s)} \"$F({i}) {what}\"")
        fwd_names = [fwd]
    else:
        if len(flows) > 1:
            raise Refused("flow[1]: the ns-2 writer runs one SCTP association")
        fl = flows[0]
        dests = fl.get("paths") or [{"fwd": fl.get("fwd", "fwd"), "rev": fl.get("rev", "rev")}]
        f, lines = _sctp_flow(0, fl, notes)
        f.dests = [(d["fwd"], d["rev"]) for d in dests]
        multi = len(dests) > 1
        head += ["set H0 [$ns node]", "set H1 [$ns node]"]
        for k, d in enumerate(dests):
            if multi:
                head += [f"set I0({k}) [$ns node]", f"set I1({k}) [$ns node]",
                         f"$ns multihome-add-interface $H0 $I0({k})",
                         f"$ns multihome-add-interface $H1 $I1({k})"]
                src, dst = f"$I0({k})", f"$I1({k})"
            else:
                src, dst = "$H0", "$H1"
            for name, a, b, wire in ((d["fwd"], src, dst, f.mss + 48),
                                     (d["rev"], dst, src, 48)):
                if any(lk.path == name for lk in links):
                    raise Refused(f"flow[0].paths[{k}]: the ns-2 writer gives each "
                                  f"destination paths of its own; {name} is used twice")
                lks, ls = _links(name, (paths.get(name) or {}).get("stage") or [], a, b,
                                 wire)
                links += lks
                head += ls
        fplans.append(f)
        body += lines
        attach = "multihome-attach-agent" if multi else "attach-agent"
        body += [f"$ns {attach} $H0 ${f.agent}", f"$ns {attach} $H1 ${f.sink}",
                 f"$ns connect ${f.agent} ${f.sink}"]
        if multi:
            primary = int((fl.get("sctp") or {}).get("primary", 0))
            body.append(f"${f.agent} set-primary-destination $I1({primary})")
        body += ["set F(0) [new Application/FTP]", "$F(0) attach-agent $A(0)",
                 f"$ns at {_num(f.start_s)} \"$F(0) start\""]
        fwd_names = [d[0] for d in f.dests]
    bottlenecks = []
    for name in fwd_names:
        cands = [lk for lk in links if lk.path == name and lk.has_rate]
        if cands:
            bottlenecks.append(min(cands, key=lambda lk: (lk.rate_bps, lk.hop)))
    rev_names = [d[1] for f in fplans for d in f.dests]
    for lk in links if traces else []:
        # The bottlenecks (packets through them), the links of a seqs loss (the drops are
        # placed from their traces) and, for SCTP, the first hop of each destination's
        # forward path and the last of its reverse path (what leaves and reaches the sender:
        # T3-rtx expiries, runner.py).
        lk.traced = (lk in bottlenecks or any(ls.seqs for ls in lk.losses)
                     or (proto == "sctp" and lk.hop == 0 and lk.path in fwd_names)
                     or (proto == "sctp" and lk.last and lk.path in rev_names))
    if not traces and any(ls.seqs for lk in links for ls in lk.losses):
        where = next(ls.where for lk in links for ls in lk.losses if ls.seqs)
        raise Refused(f"{where}.seqs: placing seqs drops needs the link traces")
    p = Plan(duration_s=duration, links=links, flows=fplans, bottlenecks=bottlenecks,
             notes=notes, head=head, body=body, traces=traces)
    return p, p.script()


def link_lines(lk: Link) -> list[str]:
    ref = f"[$ns link {lk.src} {lk.dst}]"
    out = [f"$ns simplex-link {lk.src} {lk.dst} {_num(lk.rate_bps)} {_num(lk.delay_s)} DropTail",
           f"$ns queue-limit {lk.src} {lk.dst} {lk.limit}"]
    if lk.traced:
        out += [f"set T({lk.name}) [open link-{lk.name}.tr w]",
                f"$ns trace-queue {lk.src} {lk.dst} $T({lk.name})"]
    for t, d in lk.delay_steps:
        out.append(f"$ns at {_num(t)} \"[{ref} link] set delay_ {_num(d)}\"")
    return out


def loss_lines(lk: Link, ls: Loss, drops: list[int]) -> list[str]:
    """An error model; ``drops`` are its packet indices (from 0) to drop."""
    verb = "lossmodel" if ls.head else "link-lossmodel"
    if ls.steps:
        out = [f"set {ls.name} [new ErrorModel]", f"${ls.name} unit pkt",
               f"${ls.name} set rate_ {_num(ls.steps[0][1])}"]
        out += [f"$ns at {_num(t)} \"${ls.name} set rate_ {_num(p)}\"" for t, p in ls.steps[1:]]
    else:
        out = [f"set {ls.name} [new ErrorModel/List]", f"${ls.name} unit pkt"]
        if drops:
            out.append(f"${ls.name} droplist {{{' '.join(str(n) for n in sorted(drops))}}}")
    # errormodule / insert-linkloss point the model's drop-target at the link's drophead_
    # (so its drops are traced as "d" on a traced link).
    out.append(f"$ns {verb} ${ls.name} {lk.src} {lk.dst}")
    return out


def render(p: Plan, extra_drops: dict[str, list[int]] | None = None) -> str:
    """The script; ``extra_drops`` adds packet indices to the error models by Tcl name (the
    runner's drops for ``seqs``)."""
    extra_drops = extra_drops or {}
    lines = list(p.head)
    for lk in p.links:
        lines += link_lines(lk)
    for lk, ls in p.losses():
        drops = [n - 1 for n in ls.nth] + list(extra_drops.get(ls.name, []))
        lines += loss_lines(lk, ls, drops)
    lines += p.body
    lines += finish_lines(p)
    return "\n".join(lines) + "\n"


def finish_lines(p: Plan) -> list[str]:
    """At the end of the run: each flow's counters on stdout, one ``flow`` line each, then
    the traces closed."""
    out = ["proc finish {} {", "    global ns A S F ET T"]
    for f in p.flows:
        if f.protocol == "tcp":
            out.append(f"    puts \"flow {f.index} tcp [$A({f.index}) set nrexmit_] "
                       f"[$A({f.index}) set nrexmitpack_] [$A({f.index}) set ndatapack_] "
                       f"[$S({f.index}) set bytes_] [$A({f.index}) set ncwndcuts_]\"")
        else:
            out.append(f"    puts \"flow {f.index} sctp [$A({f.index}) set frCount_] "
                       f"[$A({f.index}) set timeoutCount_]\"")
    if p.traces:
        out += ["    close $ET"]
    out += [f"    close $T({lk.name})" for lk in p.links if lk.traced]
    out += ["    exit 0", "}"]
    out += [f"$ns at {_num(p.duration_s)} \"finish\"", "$ns run"]
    return out
