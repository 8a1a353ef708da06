"""The emulation topology: three network namespaces joined by two veth pairs.

::

    spikelab-<id>-snd            spikelab-<id>-emu              spikelab-<id>-rcv
    ┌──────────────┐         ┌──────────────────────┐         ┌──────────────┐
    │ sender       │ sl<id>s │ emulator (AF_PACKET) │ sl<id>b │ receiver     │
    │ 10.201.0.1 ──┼─────────┼─ sl<id>a      ───────┼─────────┼─ 10.201.0.2  │
    └──────────────┘  veth   └──────────────────────┘  veth   └──────────────┘ sl<id>r

Sender and receiver share one subnet; the emulator namespace has no addresses and bridges the
two veths itself. Every veth end has its offloads off (checksum, scatter-gather, TSO, GSO, GRO,
LRO: with checksum offload on, frames reach the emulator with partial checksums and the
receiver drops them; with GRO, merged frames exceed the MTU). The hosts have static neighbour
entries (no ARP has to cross a delay spike) and IPv6 is off in all three namespaces.

Every name carries the run's id, and :func:`cleanup` removes whatever a crashed run left (a
run in progress is recognised by its owner file ``/run/spikelab/<id>.pid`` and left alone).
The ``ip`` tool is called with argument lists only; no shell, no string built from user input.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NS_PREFIX = "spikelab-"
NS_RE = re.compile(r"^spikelab-([0-9a-f]{6})-(snd|emu|rcv)$")
DEV_RE = re.compile(r"^sl[0-9a-f]{6}[sabr]$")
SUBNET = "10.201.0"
PREFIX_LEN = 24
IP_TIMEOUT_S = 20


def _owner_dir() -> Path:
    run = Path("/run")
    if os.access(run, os.W_OK):
        return run / "spikelab"
    return Path(tempfile.gettempdir()) / "spikelab-run"


def _owner_file(run_id: str) -> Path:
    return _owner_dir() / f"{run_id}.pid"


def _owner_alive(run_id: str) -> int | None:
    """The pid of the live process that owns run ``run_id``, if there is one."""
    try:
        pid = int(_owner_file(run_id).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"python" in cmdline or b"spikelab" in cmdline else None


class TopologyError(OSError):
    """An ``ip`` command or a namespace helper failed."""


def _iproute2(argv: list[str], shown: str, check: bool = True) -> str:
    """Run an iproute2 command line (no shell) and return its stdout; a failure is a
    :class:`TopologyError` that starts with ``shown`` and ends with the tool's last line."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=IP_TIMEOUT_S)
    except FileNotFoundError:
        raise TopologyError("the 'ip' command (iproute2) is not installed") from None
    except subprocess.TimeoutExpired:
        raise TopologyError(f"{shown}: no answer in {IP_TIMEOUT_S} s") from None
    if check and proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise TopologyError(f"{shown}: {msg[-1] if msg else 'failed'}")
    return proc.stdout


def ip(*args: str, check: bool = True) -> str:
    """Run ``ip ARGS...`` (no shell) and return its stdout."""
    return _iproute2(["ip", *args], f"ip {' '.join(args)}", check)


def in_ns(ns: str, argv: list[str]) -> list[str]:
    """The argument list that runs ``argv`` inside namespace ``ns``."""
    return ["ip", "netns", "exec", ns, *argv]


def nsctl(ns: str, request: dict[str, Any]) -> dict[str, Any]:
    """Run the in-namespace helper (:mod:`spikelab.emulate._nsctl`) once."""
    argv = in_ns(ns, [sys.executable, "-m", "spikelab.emulate._nsctl", json.dumps(request)])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=IP_TIMEOUT_S)
    try:
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        raise TopologyError(
            f"namespace helper in {ns} failed: {tail[-1] if tail else proc.returncode}"
        ) from None
    if "error" in answer:
        raise TopologyError(f"{ns}: {answer['error']}")
    return answer


def _mac(run_id: str, host: int) -> str:
    b = bytes.fromhex(run_id)
    return f"02:{b[0]:02x}:{b[1]:02x}:{b[2]:02x}:00:{host:02x}"


@dataclass
class Topology:
    """Names and addresses of one run's namespaces and veths."""

    run_id: str = field(default_factory=lambda: secrets.token_hex(3))
    mtu: int = 1500
    created: bool = False
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def ns_snd(self) -> str:
        return f"{NS_PREFIX}{self.run_id}-snd"

    @property
    def ns_emu(self) -> str:
        return f"{NS_PREFIX}{self.run_id}-emu"

    @property
    def ns_rcv(self) -> str:
        return f"{NS_PREFIX}{self.run_id}-rcv"

    @property
    def namespaces(self) -> tuple[str, str, str]:
        return (self.ns_snd, self.ns_emu, self.ns_rcv)

    def dev(self, which: str) -> str:
        """``s`` (sender), ``a`` (emulator, sender side), ``b`` (emulator, receiver side),
        ``r`` (receiver)."""
        return f"sl{self.run_id}{which}"

    addr_snd = f"{SUBNET}.1"
    addr_rcv = f"{SUBNET}.2"
    # More networks between the hosts (a multihomed SCTP association): network k = 1, 2, ...
    # is 10.201.k.0/24, the sender 10.201.k.1 and the receiver 10.201.k.2 on the same veths.
    extra_rcv_addrs: int = 0

    def rcv_addr(self, k: int) -> str:
        """The receiver's address in network ``k`` (0: :attr:`addr_rcv`)."""
        return self.addr_rcv if k == 0 else f"10.201.{k}.2"

    def snd_addr(self, k: int) -> str:
        """The sender's address in network ``k`` (0: :attr:`addr_snd`)."""
        return self.addr_snd if k == 0 else f"10.201.{k}.1"

    def create(self, sysctl_snd: dict[str, str], sysctl_rcv: dict[str, str],
               route_snd: list[str] = (), route_rcv: list[str] = (),
               rps_mask: str | None = None) -> dict[str, Any]:
        """Build everything; on any failure, remove what was built and re-raise.

        ``sysctl_*`` are written in the sender's / receiver's namespace; ``route_*`` are extra
        ``ip route`` options (e.g. ``initcwnd 10``) for the subnet route there; ``rps_mask``
        (hex CPU mask) steers the hosts' receive processing to those CPUs.
        """
        self.created = True
        owner = _owner_file(self.run_id)
        owner.parent.mkdir(parents=True, exist_ok=True)
        owner.write_text(f"{os.getpid()}\n")
        try:
            return self._create(sysctl_snd, sysctl_rcv, list(route_snd), list(route_rcv),
                                rps_mask)
        except BaseException:
            self.teardown()
            raise

    def _create(self, sysctl_snd, sysctl_rcv, route_snd, route_rcv, rps_mask
                ) -> dict[str, Any]:
        for ns in self.namespaces:
            ip("netns", "add", ns)
        s, a, b, r = (self.dev(c) for c in "sabr")
        mac = {dev: _mac(self.run_id, i + 1) for i, dev in enumerate((s, a, b, r))}
        ip("link", "add", s, "netns", self.ns_snd, "address", mac[s], "mtu", str(self.mtu),
           "type", "veth", "peer", "name", a, "netns", self.ns_emu, "address", mac[a],
           "mtu", str(self.mtu))
        ip("link", "add", b, "netns", self.ns_emu, "address", mac[b], "mtu", str(self.mtu),
           "type", "veth", "peer", "name", r, "netns", self.ns_rcv, "address", mac[r],
           "mtu", str(self.mtu))
        no_ipv6 = {"net.ipv6.conf.all.disable_ipv6": "1",
                   "net.ipv6.conf.default.disable_ipv6": "1"}
        if not os.path.exists("/proc/sys/net/ipv6"):
            no_ipv6 = {}
        report: dict[str, Any] = {"namespaces": list(self.namespaces)}
        rps = (lambda dev: {dev: rps_mask}) if rps_mask else (lambda dev: {})
        report["snd"] = nsctl(self.ns_snd, {"sysctl": {**no_ipv6, **sysctl_snd},
                                            "offload_off": [s], "rps": rps(s)})
        report["emu"] = nsctl(self.ns_emu, {"sysctl": no_ipv6, "offload_off": [a, b]})
        report["rcv"] = nsctl(self.ns_rcv, {"sysctl": {**no_ipv6, **sysctl_rcv},
                                            "offload_off": [r], "rps": rps(r)})
        ip("-n", self.ns_snd, "addr", "add", f"{self.addr_snd}/{PREFIX_LEN}", "dev", s)
        ip("-n", self.ns_rcv, "addr", "add", f"{self.addr_rcv}/{PREFIX_LEN}", "dev", r)
        for ns, dev in ((self.ns_snd, s), (self.ns_emu, a), (self.ns_emu, b),
                        (self.ns_rcv, r)):
            ip("-n", ns, "link", "set", dev, "up")
        for ns in self.namespaces:
            ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", self.ns_snd, "neigh", "replace", self.addr_rcv, "lladdr", mac[r], "dev", s,
           "nud", "permanent")
        ip("-n", self.ns_rcv, "neigh", "replace", self.addr_snd, "lladdr", mac[s], "dev", r,
           "nud", "permanent")
        subnet = f"{SUBNET}.0/{PREFIX_LEN}"
        if route_snd:
            ip("-n", self.ns_snd, "route", "replace", subnet, "dev", s, "proto", "kernel",
               "scope", "link", "src", self.addr_snd, *route_snd)
        if route_rcv:
            ip("-n", self.ns_rcv, "route", "replace", subnet, "dev", r, "proto", "kernel",
               "scope", "link", "src", self.addr_rcv, *route_rcv)
        for k in range(1, self.extra_rcv_addrs + 1):
            # Network k on the same veths: each host answers from its own address there
            # (the source address routing picks), so a packet's addresses name its network.
            a_snd, a_rcv = self.snd_addr(k), self.rcv_addr(k)
            ip("-n", self.ns_snd, "addr", "add", f"{a_snd}/{PREFIX_LEN}", "dev", s)
            ip("-n", self.ns_rcv, "addr", "add", f"{a_rcv}/{PREFIX_LEN}", "dev", r)
            ip("-n", self.ns_snd, "neigh", "replace", a_rcv, "lladdr", mac[r], "dev", s,
               "nud", "permanent")
            ip("-n", self.ns_rcv, "neigh", "replace", a_snd, "lladdr", mac[s], "dev", r,
               "nud", "permanent")
        report["routes"] = {"snd": route_snd, "rcv": route_rcv}
        self.report = report
        return report

    def _host(self, side: str) -> tuple[str, str]:
        """The namespace and the interface of the sender (``"s"``) or the receiver (``"r"``)."""
        return (self.ns_snd if side == "s" else self.ns_rcv), self.dev(side)

    def host_queue(self, side: str, rate_bps: int, limit_bytes: int | None,
                   limit_packets: int | None) -> str:
        """Give the sender's (``side`` ``"s"``) or the receiver's (``"r"``) interface a
        root qdisc that serialises at ``rate_bps`` and holds at most ``limit_bytes`` (or
        ``limit_packets``) waiting: a token bucket (``tbf``) whose bucket holds one packet,
        sizes counted as IP lengths (a size table takes the Ethernet header off), over a
        byte or packet FIFO. A full FIFO refuses the packet and the host's TCP sees a local
        drop. Returns the device name."""
        ns, dev = self._host(side)
        # The bucket must hold a whole packet: tc rounds a burst of exactly one MTU down.
        burst = self.mtu + 64
        fifo_limit = limit_bytes if limit_bytes is not None else 1 << 30
        tc(ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "stab", "overhead",
           "-14", "tbf", "rate", f"{rate_bps}bit", "burst", str(burst), "limit",
           str(fifo_limit))
        if limit_packets is not None:
            try:
                tc(ns, "qdisc", "replace", "dev", dev, "parent", "1:1", "handle", "10:",
                   "pfifo", "limit", str(limit_packets))
            except TopologyError:
                # Not half a queue: without its FIFO the token bucket goes too.
                with contextlib.suppress(TopologyError):
                    tc(ns, "qdisc", "del", "dev", dev, "root")
                raise
        return dev

    def qdisc_stats(self, side: str) -> dict[str, int]:
        """Packets sent and refused by the root qdisc of ``side``'s interface."""
        ns, dev = self._host(side)
        out = tc(ns, "-s", "-j", "qdisc", "show", "dev", dev, "root")
        try:
            q = next(q for q in json.loads(out) if q.get("root"))
        except (ValueError, StopIteration):
            raise TopologyError(f"tc -s qdisc show dev {dev}: no root qdisc") from None
        return {"packets": int(q.get("packets", 0)), "bytes": int(q.get("bytes", 0)),
                "drops": int(q.get("drops", 0))}

    def teardown(self) -> None:
        """Remove this run's namespaces (their veths go with them); kill what runs inside."""
        if not self.created:
            return
        for ns in self.namespaces:
            _remove_namespace(ns)
        self.created = False
        with contextlib.suppress(OSError):
            _owner_file(self.run_id).unlink()


def tc(ns: str, *args: str) -> str:
    """Run ``tc ARGS...`` inside namespace ``ns`` (no shell) and return its stdout."""
    return _iproute2(in_ns(ns, ["tc", *args]), f"tc {' '.join(args)}")


def _ns_pids(ns: str) -> list[int]:
    out = ip("netns", "pids", ns, check=False)
    return [int(p) for p in out.split() if p.isdigit()]


def _remove_namespace(ns: str) -> None:
    for pid in _ns_pids(ns):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    ip("netns", "del", ns, check=False)


def leftovers() -> dict[str, list[str]]:
    """Namespaces and root-namespace veths that spikelab runs left behind."""
    names = [line.split()[0] for line in ip("netns", "list", check=False).splitlines()
             if line.strip()]
    devs = []
    for line in ip("-o", "link", "show", check=False).splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            dev = parts[1].strip().split("@")[0]
            if DEV_RE.match(dev):
                devs.append(dev)
    return {"namespaces": [n for n in names if NS_RE.match(n)], "links": devs}


def cleanup() -> dict[str, list[str]]:
    """Remove every namespace and veth a spikelab run left behind (killing what runs in
    them), except those of runs still in progress; return what was removed and what is in
    use (``in_use``: ``"<namespace> (pid N)"``)."""
    found = leftovers()
    removed: dict[str, list[str]] = {"namespaces": [], "links": [], "in_use": []}
    for ns in found["namespaces"]:
        run_id = NS_RE.match(ns).group(1)
        pid = _owner_alive(run_id)
        if pid is not None and pid != os.getpid():
            removed["in_use"].append(f"{ns} (pid {pid})")
            continue
        _remove_namespace(ns)
        removed["namespaces"].append(ns)
        with contextlib.suppress(OSError):
            _owner_file(run_id).unlink()
    for dev in found["links"]:
        ip("link", "del", dev, check=False)
        removed["links"].append(dev)
    from .probe import remove_leftover_instances

    removed["links"] += remove_leftover_instances(
        keep=lambda run_id: _owner_alive(run_id) not in (None, os.getpid()))
    return removed
