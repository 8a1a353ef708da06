"""The kernel's ``tcp:tcp_probe`` tracepoint, when tracefs is mounted.

``tcp_probe`` fires for every segment a TCP socket receives; on the sender that is every ACK,
with cwnd, ssthresh, snd_una, snd_nxt and srtt as the kernel has them at that moment (what
paper 000 read with the old ``tcpprobe`` module). spikelab uses its own tracing instance
(``instances/spikelab-<id>``: its own ring buffer, filter and clock, so other tracing on the
machine is not disturbed), filtered to the run's ports, and removes it afterwards.

tracefs is host-wide state; spikelab does not mount it. If it is not mounted (the default on
many machines), the tracepoint is reported unavailable and TCP_INFO sampling alone gives the
time series.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import threading
import time
from pathlib import Path
from typing import Any

INSTANCE_PREFIX = "spikelab-"
BUFFER_KB = 8192
LINE = re.compile(
    rb"\s(\d+)\.(\d+): tcp_probe: family=AF_INET src=[\d.]+:(\d+) dest=[\d.]+:(\d+) "
    rb".*?snd_nxt=0x([0-9a-f]+) snd_una=0x([0-9a-f]+) snd_cwnd=(\d+) ssthresh=(\d+) "
    rb"snd_wnd=(\d+) srtt=(\d+)"
)


def tracefs() -> Path | None:
    """Where tracefs is mounted, if it is (and has the tcp_probe event)."""
    candidates = []
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[2] == "tracefs":
                candidates.append(Path(parts[1]))
            elif len(parts) > 2 and parts[2] == "debugfs":
                candidates.append(Path(parts[1]) / "tracing")
    except OSError:
        return None
    for c in candidates:
        if (c / "events" / "tcp" / "tcp_probe").is_dir() and (c / "instances").is_dir():
            return c
    return None


def _write(path: Path, text: str) -> None:
    path.write_text(text)


class Probe:
    """One run's tracing instance; ``start()`` before the run, ``stop()`` after."""

    def __init__(self, run_id: str, ports: list[int]):
        self.root = tracefs()
        self.ports = ports
        self.dir: Path | None = None
        self.error: str | None = None if self.root else "tracefs is not mounted"
        self.raw = bytearray()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd: int | None = None
        self.mono_to_real_ns = 0
        if self.root is not None:
            self.dir = self.root / "instances" / f"{INSTANCE_PREFIX}{run_id}"

    @property
    def available(self) -> bool:
        return self.dir is not None and self.error is None

    def start(self) -> None:
        if self.dir is None:
            return
        try:
            self.dir.mkdir()
            _write(self.dir / "buffer_size_kb", str(BUFFER_KB))
            _write(self.dir / "trace_clock", "mono")
            ev = self.dir / "events" / "tcp" / "tcp_probe"
            lo, hi = min(self.ports), max(self.ports)
            _write(ev / "filter", f"dport >= {lo} && dport <= {hi}")
            self.mono_to_real_ns = time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            self._fd = os.open(self.dir / "trace_pipe", os.O_RDONLY | os.O_NONBLOCK)
            _write(ev / "enable", "1")
        except OSError as exc:
            self.error = f"tcp_probe: {exc}"
            self.remove()
            return
        self._thread = threading.Thread(target=self._read, name="spikelab-tcp-probe",
                                        daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._fd is not None
        while True:
            ready, _, _ = select.select([self._fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self._fd, 1 << 20)
                except BlockingIOError:
                    chunk = b""
                self.raw += chunk
                if chunk:
                    continue
            if self._stop.is_set():
                return

    def stop(self) -> None:
        if self.dir is None or self._thread is None:
            self.remove()
            return
        with contextlib.suppress(OSError):
            _write(self.dir / "events" / "tcp" / "tcp_probe" / "enable", "0")
        self._stop.set()
        self._thread.join(5)
        self.remove()

    def remove(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self.dir is not None and self.dir.exists():
            with contextlib.suppress(OSError):
                self.dir.rmdir()

    def samples(self) -> list[tuple[int, int, int, int, int, int, int]]:
        """(realtime ns, port, snd_nxt, snd_una, snd_cwnd, ssthresh, srtt_us) per event."""
        out = []
        for m in LINE.finditer(bytes(self.raw)):
            sec, frac = m.group(1), m.group(2)
            t = int(sec) * 1_000_000_000 + int(frac.ljust(9, b"0")[:9])
            out.append((t + self.mono_to_real_ns, int(m.group(4)), int(m.group(5), 16),
                        int(m.group(6), 16), int(m.group(7)), int(m.group(8)),
                        int(m.group(10))))
        return out

    def report(self) -> dict[str, Any]:
        return {"available": self.available, "error": self.error,
                "events": len(self.samples()) if self.available else 0}


def remove_leftover_instances(keep=lambda run_id: False) -> list[str]:
    """Remove the tracing instances that crashed runs left (if tracefs is mounted), except
    those of runs for which ``keep(run_id)`` is true."""
    root = tracefs()
    removed: list[str] = []
    if root is None:
        return removed
    for d in (root / "instances").glob(f"{INSTANCE_PREFIX}*"):
        if keep(d.name.removeprefix(INSTANCE_PREFIX)):
            continue
        with contextlib.suppress(OSError):
            (d / "events" / "tcp" / "tcp_probe" / "enable").write_text("0")
            d.rmdir()
            removed.append(f"tracing instance {d.name}")
    return removed
