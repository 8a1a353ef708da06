"""From a scenario's TCP settings to the kernel's: sysctls, routes, socket options.

Linux takes most TCP settings per network namespace (sysctls) or per route, a few per socket.
:func:`plan` maps what can be mapped and lists, in plain words, what cannot
(``KernelPlan.unmapped``). The mapping is documented in ``docs/emulation.md``.

Spurious-timeout detectors (``[flow.tcp] spurious = [...]``, ``response = ...``):

================  =====================================================================
spikelab          Linux
================  =====================================================================
``eifel``         ``tcp_timestamps = 1``: the kernel's timestamp-based undo
                  (``tcp_packet_delayed``) is Eifel detection (RFC 3522); it cannot be
                  turned off while timestamps are on
``dsack``         ``tcp_sack = 1``, ``tcp_dsack = 1``: DSACK-based undo (RFC 3708 style)
``frto``          ``tcp_frto = 2``: Linux implements SACK-enhanced F-RTO (RFC 5682 §3);
                  ``frto = "auto"`` (SACK-enhanced with SACK, basic without) is what it does
``frto-basic``,   ``tcp_frto = 2`` as well: since Linux 3.10 the same algorithm runs
``frto = "basic"`` without SACK (set ``sack = false`` for the basic algorithm's inputs)
``linux``         all three: the kernel's defaults; with ``frto = "off"`` ``tcp_frto = 0``
response ``undo`` (or ``linux``): the kernel's full undo (prior cwnd and ssthresh)
response ``eifel`` (RFC 4015), ``none``: no kernel equivalent (the kernel always undoes)
================  =====================================================================

Without a ``spurious`` field (a scenario format without detectors) the kernel's F-RTO default
(``tcp_frto = 2``) is kept; ``spurious = []`` turns F-RTO off.
"""

from __future__ import annotations

import gzip
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .view import FlowView, KernelView, OwnQueueView, TcpView

MS = 1_000_000
SYSCTL_DIR = Path("/proc/sys/net/ipv4")
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21
MAX_VETH_MTU = 65535  # the largest MTU a veth device accepts
TCP_MIN_MSS = 88  # the smallest TCP_MAXSEG Linux accepts (include/net/tcp.h)
TCP_TIMESTAMPS_OPTION = 12  # bytes of the timestamps option as sent (with 2 NOPs)

DETECTORS = {
    "eifel": "eifel",
    "dsack": "dsack",
    "frto": "frto",
    "f-rto": "frto",
    "frto-sack": "frto",
    "frto_sack": "frto",
    "sack-frto": "frto",
    "frto-basic": "frto-basic",
    "frto_basic": "frto-basic",
    "basic-frto": "frto-basic",
    "linux": "linux",
}
RESPONSES_MAPPED = {"linux", "undo", "full-undo", "full_undo", "linux-undo"}


class EmulationError(ValueError):
    """A scenario or setting that the emulation cannot run (the message says why)."""


def has_privileges() -> bool:
    """Root, or both CAP_NET_ADMIN (veths, addresses) and CAP_SYS_ADMIN (``ip netns``)."""
    if os.geteuid() == 0:
        return True
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                caps = int(line.split()[1], 16)
                return bool(caps >> CAP_NET_ADMIN & 1) and bool(caps >> CAP_SYS_ADMIN & 1)
    except (OSError, ValueError):
        pass
    return False


def require_privileges() -> None:
    if not has_privileges():
        raise PermissionError(
            "spikelab emulate needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) to create "
            "network namespaces and veth pairs; run it as root, e.g. with sudo"
        )


def available_congestion_controls() -> list[str]:
    try:
        return (SYSCTL_DIR / "tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


def check_congestion_control(name: str, where: str) -> None:
    have = available_congestion_controls()
    if have and name not in have:
        raise EmulationError(
            f"{where}: congestion control {name!r} is not available in this kernel "
            f"(available: {', '.join(have)})"
        )


def _sysctl_exists(name: str) -> bool:
    return (SYSCTL_DIR / name).exists()


MAX_SCTP_DESTINATIONS = 8  # the receiver's addresses 10.201.0.2 ... 10.201.7.2


def plan_sctp(view: KernelView, protocols: list[str],
              extra_sysctls: dict[str, str] | None = None, base_port: int = 5000
              ) -> KernelPlan:
    """The plan of a scenario whose flows are SCTP associations: usrsctp endpoints
    (``_sctp_endpoint``), one process per flow and side, with the flow's ``[flow.sctp]``
    settings as the stack's defaults. What has no usrsctp equivalent is listed in
    ``unmapped``."""
    for i, proto in enumerate(protocols):
        if proto != "sctp":
            raise ValueError(
                f"flow[{i}].protocol: an emulated scenario's flows are all TCP (the kernel's) "
                "or all SCTP (usrsctp); this one mixes them")
    p = KernelPlan(protocol="sctp")
    u = p.unmapped
    for i, f in enumerate(view["flows"]):
        s = f["sctp"]
        assert s is not None  # an SCTP flow has its settings
        if s["destinations"] > MAX_SCTP_DESTINATIONS:
            raise ValueError(
                f"flow[{i}].paths: emulation gives an SCTP peer at most "
                f"{MAX_SCTP_DESTINATIONS} addresses; this flow has {s['destinations']}")
        if s["mtu"] != 1500:
            raise ValueError(f"flow[{i}].sctp.mtu: emulation runs over veths of MTU 1500; "
                             f"{s['mtu']} is simulated only")
        if (s["rto_alpha"], s["rto_beta"]) != (0.125, 0.25):
            u.append(f"flow[{i}].sctp.rto_alpha/rto_beta: usrsctp's estimator has fixed gains "
                     "1/8 and 1/4")
        if s["profile"] == "rfc9260":
            u.append(f"flow[{i}].sctp.profile = rfc9260: usrsctp counts cwnd in MTUs (RFC "
                     "4960), not in PMDCS units")
        if s["psmr"] is not None:
            u.append(f"flow[{i}].sctp.psmr: usrsctp has no Primary.Switchover.Max.Retrans")
        if not s["cwnd_validation"]:
            u.append(f"flow[{i}].sctp.cwnd_validation = false: usrsctp always halves an "
                     "idle destination's cwnd")
        if not s["rto_max_cap_on_backoff"]:
            u.append(f"flow[{i}].sctp.rto_max_cap_on_backoff = false: usrsctp caps the "
                     "backed-off RTO at RTO.Max")
        p.flows.append({
            "flow": i,
            "port": base_port + i,
            "start_ns": f["start_ns"],
            "cc": "sctp",
            "size": f["size"] if f["app"] == "file" else None,
            "sctp": s,
        })
    for bp in view.get("backpressure") or []:
        u.append(f"path.{bp['path']}: backpressure: with SCTP flows no qdisc takes the "
                 "sender's own queue; it stays the emulator's stage and drops when full "
                 "(usrsctp does not answer a local drop as Linux TCP does)")
    for k, v in (extra_sysctls or {}).items():
        p.sysctl_snd[k] = str(v)
        p.sysctl_rcv[k] = str(v)
    p.unmapped = list(dict.fromkeys(u))
    return p


@dataclass
class KernelPlan:
    """What the kernel side of a run is set to."""

    sysctl_snd: dict[str, str] = field(default_factory=dict)
    sysctl_rcv: dict[str, str] = field(default_factory=dict)
    route_snd: list[str] = field(default_factory=list)
    route_rcv: list[str] = field(default_factory=list)
    mtu: int = 1500
    flows: list[dict[str, Any]] = field(default_factory=list)
    detectors: list[dict[str, Any]] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)
    # Paths whose first stage (`backpressure`) becomes a qdisc on the sender's interface:
    # {"path", "side" ("s", Topology.host_queue's host), "rate_bps", "limit_bytes",
    # "limit_packets"}.
    host_queues: list[dict[str, Any]] = field(default_factory=list)
    # "tcp": the kernel's TCP; "sctp": usrsctp endpoints (plan_sctp).
    protocol: str = "tcp"

    def as_dict(self) -> dict[str, Any]:
        return {
            "sysctl_sender": self.sysctl_snd,
            "sysctl_receiver": self.sysctl_rcv,
            "route_sender": self.route_snd,
            "route_receiver": self.route_rcv,
            "mtu": self.mtu,
            "flows": self.flows,
            "detectors": self.detectors,
            "unmapped": self.unmapped,
            "host_queues": self.host_queues,
            "protocol": self.protocol,
        }


def host_queues(backpressure: list[OwnQueueView], flows: list[FlowView],
                packet: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Which paths' first stage (``backpressure``: the sender's own queue) can be a qdisc on
    the sending host's interface, and notes on those that cannot. The sender's interface
    carries every flow's data, so the path must be the ``fwd`` path of every flow; its rate
    must be constant (a qdisc's rate does not follow a schedule or a load), and its queue must
    hold a data packet of ``packet`` bytes (a FIFO refuses what it cannot hold even when empty,
    where the simulated stage lets a packet onto an idle link). A ``rev`` path stays the
    emulator's: a host's qdisc refusing a pure ACK loses it (Linux does not send it again),
    which is what the emulator's stage does; the simulator holds it."""
    queues: list[dict[str, Any]] = []
    notes: list[str] = []
    for bp in backpressure:
        name = bp["path"]
        fwd = [f["fwd"] == name for f in flows]
        rev = [f["rev"] == name for f in flows]
        if not any(fwd) and not any(rev):
            continue
        where = f"path.{name}.stage[0].backpressure"
        fallback = ("the emulator's stage drops when full, and the kernel sees a loss, not a "
                    "local congestion signal")
        if not bp["constant"]:
            notes.append(f"{where}: a rate that changes (a schedule, trace, switching or "
                         f"adapt) cannot be a host's qdisc; {fallback}")
            continue
        if not all(fwd) or any(rev):
            notes.append(f"{where}: the sender's qdisc shapes every flow it sends, so the "
                         f"path must be the fwd path of every flow (and no flow's rev path); "
                         f"{fallback}")
            continue
        small = (bp["queue_bytes"] is not None and bp["queue_bytes"] < packet
                 or bp["queue_packets"] is not None and bp["queue_packets"] < 1)
        if small:
            notes.append(f"{where}: a queue that cannot hold one {packet}-byte data packet "
                         f"refuses every segment as a qdisc; {fallback}")
            continue
        queues.append({"path": name, "side": "s", "rate_bps": int(bp["rate_bps"]),
                       "limit_bytes": bp["queue_bytes"], "limit_packets": bp["queue_packets"]})
    return queues, notes


def map_detectors(tcp: dict[str, Any], flow: int) -> tuple[str | None, dict[str, Any],
                                                            list[str]]:
    """The ``tcp_frto`` value (None: leave the kernel default) for a flow's ``spurious`` and
    ``response`` fields (if the scenario format has them), a description, and notes on what
    does not map."""
    notes: list[str] = []
    at = f"flow[{flow}].tcp"
    spurious = tcp.get("spurious")
    response = tcp.get("response")
    info: dict[str, Any] = {"flow": flow, "spurious": spurious, "response": response}
    frto: str | None = None
    if spurious is not None:
        names = [spurious] if isinstance(spurious, str) else list(spurious)
        unknown = [n for n in names if str(n).lower() not in DETECTORS]
        if unknown:
            raise EmulationError(
                f"{at}.spurious: unknown detector(s) {', '.join(map(repr, unknown))} "
                f"(known: {', '.join(sorted(set(DETECTORS.values())))})"
            )
        wanted = {DETECTORS[str(n).lower()] for n in names}
        if "linux" in wanted:
            wanted |= {"eifel", "dsack", "frto"}
        variant = str(tcp.get("frto") or "auto").lower()
        # frto = "off": the linux detector without F-RTO, tcp_frto = 0.
        frto = "2" if wanted & {"frto", "frto-basic"} and variant != "off" else "0"
        if "frto-basic" in wanted or ("frto" in wanted and variant == "basic"):
            notes.append(f"{at}.frto: Linux has only SACK-enhanced F-RTO (RFC 5682 §3, which "
                         "also runs without SACK); the basic algorithm maps to it")
        if "frto" in wanted and variant == "sack" and not tcp.get("sack", True):
            notes.append(f"{at}.frto = sack with sack off: the kernel's F-RTO runs on "
                         "cumulative ACKs")
        if "eifel" in wanted and not tcp.get("timestamps", True):
            notes.append(f"{at}.spurious: eifel needs timestamps, which are off: no Eifel "
                         "detection in the kernel")
        if "eifel" not in wanted and tcp.get("timestamps", True):
            notes.append(f"{at}.spurious: without eifel but with timestamps on, the kernel "
                         "still undoes on timestamp evidence (it cannot be separated)")
        if "dsack" in wanted and not (tcp.get("sack", True) and tcp.get("dsack", True)):
            notes.append(f"{at}.spurious: dsack needs sack and dsack on: no DSACK undo")
        if "dsack" not in wanted and tcp.get("dsack", True) and tcp.get("sack", True):
            notes.append(f"{at}.spurious: without dsack but with DSACK on, the kernel still "
                         "undoes on DSACK evidence (it cannot be separated)")
        info["kernel"] = sorted(wanted - {"linux"})
    if response is not None and str(response).lower() not in RESPONSES_MAPPED:
        notes.append(f"{at}.response = {response!r}: the kernel always responds with its full "
                     "undo (prior cwnd and ssthresh); no Eifel response (RFC 4015) or none")
    info["tcp_frto"] = frto
    return frto, info, notes


def _ns_wide(values: list[Any], what: str) -> Any:
    if any(v != values[0] for v in values):
        raise EmulationError(
            f"flows differ in {what}, which the kernel sets per namespace: "
            "emulate them in separate runs"
        )
    return values[0]


# The kernel behaviours that are options in the simulator: (key, the value the kernel does
# not have, the note when a file sets it). The ``linux`` profile turns them all the kernel's way.
_KERNEL_FIXED = (
    ("rack", False, "the kernel detects losses with RACK (net.ipv4.tcp_recovery = 1)"),
    ("tlp", False, "the kernel sends tail loss probes (net.ipv4.tcp_early_retrans = 3)"),
    ("prr", False, "the kernel always reduces by PRR in recovery"),
    ("handshake", False, "the kernel opens with SYN, SYN-ACK, so its data start one RTT later"),
    ("ssthresh_basis", "flight", "the kernel computes ssthresh from cwnd"),
    ("cwnd_limited_check", False, "the kernel grows cwnd only when cwnd-limited"),
    ("rcv_autotune", False, "the kernel's receiver grows its window "
                            "(net.ipv4.tcp_moderate_rcvbuf = 1), up to rwnd (TCP_WINDOW_CLAMP)"),
    ("rearm_rto_on_retransmit", False, "the kernel restarts its retransmission timer when it "
                                       "resends the first unacknowledged segment"),
    ("rearm_rto_on_sack", False, "the kernel restarts its retransmission timer on a SACK of data "
                                 "sent before the first unacknowledged segment's last "
                                 "transmission"),
    ("kernel_rtt_samples", False, "the kernel takes its RTT samples from send times, ACKs that "
                                  "only SACK included"),
    ("paws", False, "the kernel's receiver always checks PAWS when timestamps are on "
                    "(RFC 7323 §5.3)"),
    ("moderate_cwnd", True, "this kernel no longer moderates cwnd when a connection without "
                            "SACK reaches the Loss state's high_seq (kernels 3.10-4.x did)"),
)


def kernel_hz() -> int | None:
    """This kernel's tick rate (``CONFIG_HZ`` from /proc/config.gz), or None if not exposed."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            for line in f:
                if line.startswith("CONFIG_HZ="):
                    return int(line.split("=", 1)[1])
    except (OSError, ValueError):
        return None
    return None


def _map_timer_hz(tcps: list[TcpView], u: list[str]) -> None:
    """The kernel's timers tick at its ``CONFIG_HZ``; a scenario modelling another rate (or
    exact timers) says so."""
    hz = tcps[0].get("timer_hz") if tcps else None
    if hz is None:
        return
    k = kernel_hz()
    if k is not None and hz != k:
        shown = "0 (exact timers)" if hz == 0 else str(hz)
        u.append(f"tcp.timer_hz = {shown}: this kernel's timers tick at CONFIG_HZ = {k}")


def _map_linux_options(raw_tcps: list[dict[str, Any]], u: list[str]) -> None:
    """Notes on the kernel behaviours that are options in the simulator (the ``linux``
    profile turns them all on); the kernel keeps its defaults."""
    if not raw_tcps:
        return
    t = raw_tcps[0]
    for key, other, note in _KERNEL_FIXED:
        if key in t and t[key] == other:
            shown = str(other).lower() if isinstance(other, bool) else other
            u.append(f"tcp.{key} = {shown}: {note}")
    if "small_queue" in t and t["small_queue"] != 5:
        u.append(f"tcp.small_queue = {t['small_queue']}: the kernel's TCP Small Queues keep "
                 "what they keep of a flow in its interface's queue (4-5 full-sized packets "
                 "measured behind a umts-uplink qdisc; the linux profile's 5)")
    if t.get("quickack", 16) != 16:
        u.append("tcp.quickack: the kernel ACKs up to 16 segments at once at the start and "
                 "after a duplicate")
    if t.get("paws", True) and t.get("paws_window", 1) != 1:
        u.append(f"tcp.paws_window = {t['paws_window']}: the kernel passes a TSval one tick "
                 "older than TS.Recent (TCP_PAWS_WINDOW)")
    idle = t.get("quickack_idle", "rto")
    if t.get("quickack", 16) and idle != "rto":
        u.append(f"tcp.quickack_idle = {idle}: the kernel re-enters quick-ACK mode after a "
                 "receive gap longer than the receiver's RTO (\"rto\")")


def plan(view: KernelView, resolved: dict[str, Any], ccs: list[str],
         extra_sysctls: dict[str, str] | None = None, base_port: int = 5000) -> KernelPlan:
    """Map a scenario (``view``: its kernel view, :mod:`.view`; ``resolved``: the
    resolved scenario, which may carry fields such as ``spurious``) to kernel settings.
    ``ccs`` are the congestion controls asked for, per flow."""
    protocols = [f.get("protocol", "tcp") for f in resolved.get("flow", [])]
    if "sctp" in protocols:
        return plan_sctp(view, protocols, extra_sysctls, base_port)
    p = KernelPlan()
    flows = view["flows"]
    tcps = [f["tcp"] for f in flows]
    raw_tcps = [(f.get("tcp") or {}) for f in resolved.get("flow", [])]
    u = p.unmapped

    ts = _ns_wide([t["timestamps"] for t in tcps], "tcp.timestamps")
    sack = _ns_wide([t["sack"] for t in tcps], "tcp.sack")
    dsack = _ns_wide([t["dsack"] for t in tcps], "tcp.dsack")
    both = {
        "net.ipv4.tcp_timestamps": "1" if ts else "0",
        "net.ipv4.tcp_sack": "1" if sack else "0",
        "net.ipv4.tcp_dsack": "1" if dsack else "0",
        # No cached metrics (RTT, ssthresh) from a connection before this one.
        "net.ipv4.tcp_no_metrics_save": "1",
        "net.ipv4.tcp_ecn": "0",
    }
    frtos = []
    for i, raw in enumerate(raw_tcps):
        frto, info, notes = map_detectors({**tcps[i], **raw}, i)
        frtos.append(frto)
        p.detectors.append(info)
        u.extend(notes)
    frto = _ns_wide(frtos, "tcp.spurious (F-RTO)") if frtos else None
    if frto is not None:
        both["net.ipv4.tcp_frto"] = frto
    dupthresh = _ns_wide([t["dupthresh"] for t in tcps], "tcp.dupthresh")
    both["net.ipv4.tcp_reordering"] = str(dupthresh)

    snd: dict[str, str] = {}
    rto = [t["rto"] for t in tcps]
    rto_min = _ns_wide([r["min_ns"] for r in rto], "tcp.rto.min")
    if _sysctl_exists("tcp_rto_min_us"):
        snd["net.ipv4.tcp_rto_min_us"] = str(max(1, rto_min // 1000))
    else:
        p.route_snd += ["rto_min", "lock", f"{max(1, rto_min // MS)}ms"]
    rto_max = _ns_wide([r["max_ns"] for r in rto], "tcp.rto.max")
    if _sysctl_exists("tcp_rto_max_ms"):
        ms = min(max(rto_max // MS, 1000), 120_000)
        snd["net.ipv4.tcp_rto_max_ms"] = str(ms)
        if ms * MS != rto_max:
            u.append(f"tcp.rto.max = {rto_max / 1e9:g} s: the kernel accepts 1-120 s; "
                     f"using {ms / 1000:g} s")
    elif rto_max != 120_000 * MS:
        u.append(f"tcp.rto.max = {rto_max / 1e9:g} s: this kernel's maximum is fixed at 120 s")
    for r in rto:
        if r["initial_ns"] != 1000 * MS:
            u.append(f"tcp.rto.initial = {r['initial_ns'] / 1e9:g} s: the kernel's initial "
                     "RTO is fixed at 1 s")
            break
    other = sorted({r["estimator"] for r in rto} - {"linux"})
    if other:
        u.append(f"tcp.rto.estimator = {', '.join(other)}: the kernel always uses its own "
                 "estimator (alpha, beta, k and granularity do not map; rto.min and rto.max do)")
    if any(t.get("profile") == "ns2" for t in raw_tcps):
        u.append("tcp.profile = ns2: the kernel runs its own TCP, not ns-2.35's one-way agent "
                 "and sink (its 40-byte SYN, packet-counted window, Sack1 recovery); the "
                 "profile's values map where the kernel has them")

    iw = _ns_wide([t["initial_window"] for t in tcps], "tcp.initial_window")
    p.route_snd += ["initcwnd", str(iw)]
    ssthresh = _ns_wide([t["initial_ssthresh"] for t in tcps], "tcp.initial_ssthresh")
    mss = _ns_wide([t["mss"] for t in tcps], "tcp.mss")
    if ssthresh is not None:
        p.route_snd += ["ssthresh", "lock", str(max(2, math.ceil(ssthresh / mss)))]
    delack = _ns_wide([t["delayed_ack"] for t in tcps], "tcp.delayed_ack")
    if not delack:
        p.route_rcv += ["quickack", "1"]
    for t in tcps:
        if t["delayed_ack"] and t["delack_timeout_ns"] != 40 * MS:
            u.append(f"tcp.delack_timeout = {t['delack_timeout_ns'] / MS:g} ms: the kernel's "
                     "delayed-ACK timeout starts at 40 ms and adapts (\"ato\")")
        if t["delayed_ack"] and t["delack_segments"] != 2:
            u.append("tcp.delack_segments: the kernel ACKs at least every second full segment")
        if t["variant"] == "reno":
            u.append("tcp.variant = reno: Linux has no pure Reno recovery; it handles partial "
                     "ACKs as NewReno does (and uses SACK when negotiated)")
        if t["variant"] != "sack" and sack:
            u.append(f"tcp.variant = {t['variant']} with sack on: Linux uses SACK-based "
                     "recovery whenever SACK is negotiated")
        if t["abc"]:
            u.append("tcp.abc: Linux grows cwnd by the segments an ACK covers; no ABC limit")
        if not t["limited_transmit"]:
            u.append("tcp.limited_transmit = false: Linux always uses limited transmit "
                     "(RFC 3042)")
        if not t["block_fr_after_rto"]:
            u.append("tcp.block_fr_after_rto = false: not a kernel setting")
        break
    _map_linux_options(raw_tcps, u)
    _map_timer_hz(tcps, u)
    p.mtu = max(1500, mss + 40 + (TCP_TIMESTAMPS_OPTION if ts else 0))
    if p.mtu > MAX_VETH_MTU:
        largest = MAX_VETH_MTU - 40 - (TCP_TIMESTAMPS_OPTION if ts else 0)
        raise ValueError(
            f"flow[0].tcp.mss: {mss} bytes of payload with 40 bytes of IP and TCP headers"
            f"{' and 12 of timestamps' if ts else ''} exceed the largest MTU of a veth link "
            f"({MAX_VETH_MTU}); emulation takes an MSS of at most {largest}")
    p.host_queues, notes = host_queues(view.get("backpressure") or [], flows,
                                       mss + 40 + (TCP_TIMESTAMPS_OPTION if ts else 0))
    u.extend(notes)
    maxseg = mss + (TCP_TIMESTAMPS_OPTION if ts else 0)
    if maxseg < TCP_MIN_MSS:
        smallest = TCP_MIN_MSS - (TCP_TIMESTAMPS_OPTION if ts else 0)
        raise ValueError(
            f"flow[0].tcp.mss: {mss} bytes is below the smallest MSS Linux accepts "
            f"({smallest} bytes{' with timestamps on' if ts else ''}); emulation takes an MSS "
            f"of at least {smallest}")

    rcv: dict[str, str] = {}
    # The receiver's SACK compression (the linux profile: the kernel's 44, 1 ms, 100 us; the
    # rfc profile: off, every out-of-order segment ACKed at once).
    for key, sysctl in (("comp_sack", "tcp_comp_sack_nr"),
                        ("comp_sack_delay_ns", "tcp_comp_sack_delay_ns"),
                        ("comp_sack_slack_ns", "tcp_comp_sack_slack_ns")):
        if key not in tcps[0]:
            continue
        value = _ns_wide([t[key] for t in tcps], "tcp." + key.removesuffix("_ns"))
        if _sysctl_exists(sysctl):
            rcv[f"net.ipv4.{sysctl}"] = str(value)
        else:
            u.append(f"tcp.{key.removesuffix('_ns')}: this kernel has no net.ipv4.{sysctl}")
    p.sysctl_snd = {**both, **snd}
    p.sysctl_rcv = {**both, **rcv}
    for k, v in (extra_sysctls or {}).items():
        p.sysctl_snd[k] = str(v)
        p.sysctl_rcv[k] = str(v)
    for i, f in enumerate(flows):
        if f["fwd"] == f["rev"]:
            u.append(f"flow[{i}]: fwd and rev are the same path {f['fwd']!r}: both directions "
                     "share its stages")
        p.flows.append({
            "flow": i,
            "port": base_port + i,
            "start_ns": f["start_ns"],
            "cc": ccs[i],
            "size": f["size"] if f["app"] == "file" else None,
            # TCP_MAXSEG excludes options: the payload per segment is mss.
            "maxseg": maxseg,
            "rwnd": tcps[i]["rwnd"],
        })
    # Duplicates (the same sentence from two flows) once.
    p.unmapped = list(dict.fromkeys(u))
    return p
