"""Runs inside one network namespace (``ip netns exec NS python -m spikelab.emulate._nsctl``).

It does what needs the namespace's own view of ``/proc/sys/net`` and its devices, and nothing
that a shell would do: it reads one JSON request from its argument and prints one JSON answer.

Request keys (all optional, applied in this order):

- ``sysctl``: ``{"net.ipv4.tcp_frto": "0", ...}``, written to ``/proc/sys/...``
- ``offload_off``: interface names whose offloads (checksum, scatter-gather, TSO, GSO, GRO,
  LRO) are turned off with the ``SIOCETHTOOL`` ioctl (what ``ethtool -K`` does)
- ``rps``: ``{dev: cpu_mask_hex}``: receive packet steering, so that frames the emulator sends
  into a veth are processed (by the receiving host's TCP stack) on other CPUs than the
  emulator's, not inside the emulator's send call
- ``counters``: true to answer with the namespace's ``/proc/net/netstat`` and
  ``/proc/net/snmp`` counters

Answer: ``{"sysctl": {key: value read back}, "offloads": {dev: {feature: on}}, "counters": {...}}``.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import socket
import struct
import sys
from pathlib import Path

SIOCETHTOOL = 0x8946
# include/uapi/linux/ethtool.h: legacy get/set commands on struct ethtool_value {u32 cmd, data}
OFFLOADS = {
    # feature: (get, set)
    "rx-checksum": (0x14, 0x15),
    "tx-checksum": (0x16, 0x17),
    "scatter-gather": (0x18, 0x19),
    "tso": (0x1E, 0x1F),
    "gso": (0x23, 0x24),
    "gro": (0x2B, 0x2C),
}
ETHTOOL_GFLAGS, ETHTOOL_SFLAGS, ETH_FLAG_LRO = 0x25, 0x26, 1 << 15
# tx-checksum must go first: the kernel refuses scatter-gather/TSO changes that would need it.
OFF_ORDER = ("tso", "gso", "gro", "scatter-gather", "tx-checksum", "rx-checksum")


class _EthtoolValue(ctypes.Structure):
    _fields_ = [("cmd", ctypes.c_uint32), ("data", ctypes.c_uint32)]


def _ethtool(sock: socket.socket, dev: str, cmd: int, data: int = 0) -> int:
    """One SIOCETHTOOL call with a struct ethtool_value; returns its data field."""
    value = _EthtoolValue(cmd, data)
    name = dev.encode()
    if len(name) >= 16:
        raise ValueError(f"interface name too long: {dev!r}")
    # struct ifreq: char ifr_name[16]; union { void *ifr_data; ... } (40 bytes on 64-bit)
    ifreq = struct.pack("16sP", name, ctypes.addressof(value)).ljust(40, b"\0")
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifreq)
    return int(value.data)


def offloads(dev: str) -> dict[str, bool]:
    """The offload features of ``dev`` that the legacy ethtool commands report."""
    out = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for feature, (get, _) in OFFLOADS.items():
            try:
                out[feature] = bool(_ethtool(sock, dev, get))
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
        try:
            out["lro"] = bool(_ethtool(sock, dev, ETHTOOL_GFLAGS) & ETH_FLAG_LRO)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
    return out


def offload_off(dev: str) -> dict[str, bool]:
    """Turn every offload of ``dev`` off; return the features as read back afterwards."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for feature in OFF_ORDER:
            try:
                _ethtool(sock, dev, OFFLOADS[feature][1], 0)
            except OSError as exc:
                # A device without the feature says so; the read-back below is what counts.
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
        try:
            flags = _ethtool(sock, dev, ETHTOOL_GFLAGS)
            if flags & ETH_FLAG_LRO:
                _ethtool(sock, dev, ETHTOOL_SFLAGS, flags & ~ETH_FLAG_LRO)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
    state = offloads(dev)
    still_on = [f for f, on in state.items() if on and f != "rx-checksum"]
    if still_on:
        raise OSError(f"{dev}: could not turn off {', '.join(still_on)}")
    return state


def _sysctl_path(key: str) -> Path:
    if not key or key.startswith(".") or ".." in key or "/" in key:
        raise ValueError(f"bad sysctl name {key!r}")
    return Path("/proc/sys") / key.replace(".", "/")


def read_sysctl(key: str) -> str:
    return _sysctl_path(key).read_text().strip()


def write_sysctl(key: str, value: str) -> str:
    path = _sysctl_path(key)
    if not path.exists():
        raise FileNotFoundError(f"sysctl {key} does not exist in this kernel")
    try:
        path.write_text(f"{value}\n")
    except OSError as exc:  # EINVAL: a value the kernel does not take
        raise ValueError(f"sysctl {key}={value}: the kernel refused the value "
                         f"({exc.strerror or exc})") from None
    return read_sysctl(key)


def _pairs(path: str) -> dict[str, int]:
    """``/proc/net/netstat`` and ``/proc/net/snmp``: header line, value line, per protocol."""
    out: dict[str, int] = {}
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return out
    for head, vals in zip(lines[::2], lines[1::2], strict=False):
        proto, _, names = head.partition(":")
        _, _, values = vals.partition(":")
        for name, value in zip(names.split(), values.split(), strict=False):
            with contextlib.suppress(ValueError):
                out[f"{proto}{name}"] = int(value)
    return out


def counters() -> dict[str, int]:
    """nstat-style counters (``TcpExtTCPTimeouts``, ``TcpRetransSegs``...) of this namespace."""
    out = _pairs("/proc/net/snmp")
    out.update(_pairs("/proc/net/netstat"))
    return out


def set_rps(dev: str, mask: str) -> str:
    """Steer received frames of ``dev`` to the CPUs in ``mask`` (hex); returns the mask read
    back ("" if the kernel has no RPS)."""
    if "/" in dev or dev.startswith("."):
        raise ValueError(f"bad interface name {dev!r}")
    int(mask, 16)
    queues = sorted(Path(f"/sys/class/net/{dev}/queues").glob("rx-*/rps_cpus"))
    for q in queues:
        q.write_text(f"{mask}\n")
    return queues[0].read_text().strip() if queues else ""


def handle(request: dict) -> dict:
    answer: dict = {}
    if request.get("sysctl"):
        answer["sysctl"] = {k: write_sysctl(k, str(v)) for k, v in request["sysctl"].items()}
    if request.get("read_sysctl"):
        answer["read_sysctl"] = {}
        for k in request["read_sysctl"]:
            try:
                answer["read_sysctl"][k] = read_sysctl(k)
            except OSError:
                answer["read_sysctl"][k] = None
    if request.get("offload_off"):
        answer["offloads"] = {dev: offload_off(dev) for dev in request["offload_off"]}
    if request.get("rps"):
        answer["rps"] = {dev: set_rps(dev, mask) for dev, mask in request["rps"].items()}
    if request.get("counters"):
        answer["counters"] = counters()
    return answer


def main(argv: list[str]) -> int:
    try:
        answer = handle(json.loads(argv[0]))
    except (OSError, ValueError) as exc:
        print(json.dumps({"error": str(exc)}))
        return 1
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
