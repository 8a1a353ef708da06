"""``spikelab.emulate``: a scenario's path in real time, against the Linux TCP stack.

One run: build the topology (:mod:`.topology`), start the receiver, the emulator and the
sender in their namespaces, tell all three the same time 0, wait for the scenario's duration,
tear everything down, then turn the emulator's capture and the kernel's samples into the
simulator's result tables (:mod:`.tables`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

from .. import _core, figures
from .._interrupts import Latch, interrupts_deferred
from .._progress import ProgressBar
from ..scenario import ScenarioSource, check_seed, read_scenario
from ..scenario import overrides_list as _overrides
from ..store import results
from ..store.arrow import to_arrow
from ..store.run import RunResult, write_tables
from . import kernel, tables, usrsctp
from .kernel import EmulationError
from .probe import Probe
from .topology import Topology, TopologyError, in_ns
from .view import KernelView

log = logging.getLogger(__name__)

START_MARGIN_NS = 300_000_000  # between "everyone is ready" and time 0
READY_TIMEOUT_S = 30.0
FINISH_GRACE_S = 15.0
DEFAULT_SAMPLE_MS = 1.0


def resolve(text: str, overrides: list[str], base_dir: str
            ) -> tuple[dict[str, Any], KernelView, list[str], list[str]]:
    """Validate a scenario for emulation. Returns (resolved scenario, kernel view (typed by
    :mod:`.view`), overrides for the emulator, congestion control per flow).

    The simulator knows fewer congestion controls than the kernel; a TCP flow asking for one
    the simulator lacks (``bbr``, ``vegas``) is validated as ``reno`` and runs with the
    kernel's (the core says which, ``_core.emu_resolve``; the emulator's own processes read the
    scenario with ``flow[i].cc="reno"`` for those flows).
    """
    resolved_json, view_json, kernel_only = _core.emu_resolve(text, overrides, base_dir)
    resolved = json.loads(resolved_json)
    view = cast(KernelView, json.loads(view_json))
    extra = [f'flow[{i}].cc="reno"' for i, name in enumerate(kernel_only) if name is not None]
    names = [kernel_only[i] if i < len(kernel_only) and kernel_only[i] is not None
             else f["cc"] for i, f in enumerate(view["flows"])]
    for i, f in enumerate(resolved["flow"]):
        f["cc"] = names[i]
    return resolved, view, overrides + extra, names


class _Child:
    """One of the three processes of a run."""

    def __init__(self, name: str, argv: list[str], workdir: Path):
        self.name = name
        self.stderr_path = workdir / f"{name}.stderr"
        self._stderr = open(self.stderr_path, "w+b")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, start_new_session=True)

    def wait_ready(self, deadline: float) -> None:
        assert self.proc.stdout is not None
        line = b""
        done = Latch()

        def read() -> None:
            nonlocal line
            line = self.proc.stdout.readline()
            done.set()

        threading.Thread(target=read, daemon=True).start()
        in_time = done.wait(max(deadline - time.monotonic(), 0.0))
        if in_time and line.strip() == b"ready":
            return
        if in_time:  # it closed stdout: it is exiting; let it finish writing its error
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=2)
        raise EmulationError(f"the {self.name} did not start: {self.error() or 'timeout'}")

    def start(self, t0: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{t0}\n".encode())
        self.proc.stdin.flush()

    def error(self) -> str:
        self._stderr.flush()
        text = self.stderr_path.read_text(errors="replace").strip().splitlines()
        return text[-1] if text else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def close(self) -> None:
        self.stop()
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if f is not None:
                    f.close()
        self._stderr.close()


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (e.g. from a test harness or `timeout`) tears down like Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def cpu_plan() -> tuple[int | None, str | None]:
    """The CPU for the emulator thread and the CPU mask (hex) where the hosts process the
    frames it sends them: the last CPU we may use for the emulator, the others for the hosts.
    With one CPU, neither."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = list(range(os.cpu_count() or 1))
    if len(cpus) < 2:
        return None, None
    mask = sum(1 << c for c in cpus[:-1])
    return cpus[-1], f"{mask:x}"


def _parse_sysctls(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not re.fullmatch(r"net\.[a-z0-9_.]+", key):
            raise EmulationError(f"--sysctl {item!r}: expected net.KEY=VALUE")
        out[key] = value.strip()
    return out


def emulate(
    scenario: ScenarioSource,
    *,
    out: str | os.PathLike[str] | None = None,
    seed: int | None = None,
    overrides: Iterable[str] = (),
    sysctls: Iterable[str] = (),
    realtime: bool = True,
    spin_us: float = 50.0,
    snaplen: int = 160,
    sample_ms: float = DEFAULT_SAMPLE_MS,
    tcp_probe: bool = True,
    plots: bool = True,
    progress: bool | None = None,
    force: bool = False,
) -> RunResult:
    """Emulate a scenario's paths in real time between two Linux TCP endpoints (usrsctp
    endpoints for a scenario of SCTP flows: docs/emulation.md, "SCTP flows").

    Needs root (network namespaces). ``seed`` and ``overrides`` as in :func:`spikelab.run`;
    ``sysctls`` are extra ``net.*=value`` settings for both hosts' namespaces. ``realtime``
    runs the emulator thread under SCHED_FIFO; ``spin_us`` is how long it busy-waits before
    each departure; ``snaplen`` the bytes of each frame kept in the capture (0: all);
    ``sample_ms`` the TCP_INFO sampling period; ``tcp_probe`` uses the kernel's tcp_probe
    tracepoint as well when tracefs is mounted. With ``out``, the results directory is
    written there (tables, figures, manifest, and ``emulation/`` with the capture); it must
    not hold a sweep or a study unless ``force``. Its old manifest is removed before the
    emulation starts, and an interrupted emulation leaves one marked ``interrupted``.
    Returns the same :class:`spikelab.RunResult` as :func:`spikelab.run`.
    """
    kernel.require_privileges()
    text, base_dir = read_scenario(scenario)
    resolved, view, emu_overrides, ccs = resolve(text, _overrides(overrides), base_dir)
    for i, cc in enumerate(ccs):
        if resolved["flow"][i].get("protocol", "tcp") == "tcp":
            kernel.check_congestion_control(cc, f"flow[{i}].cc")
    plan = kernel.plan(view, resolved, ccs, _parse_sysctls(sysctls))
    if plan.protocol == "sctp":
        try:
            usrsctp.load()
        except usrsctp.Unavailable as exc:
            raise EmulationError(str(exc)) from None
        if snaplen:
            # Whole frames: the chunks bundled after the first DATA chunk are past any
            # shorter snap length, and the analysis needs every TSN.
            snaplen = max(snaplen, plan.mtu + 14)
    seed = int(seed if seed is not None else view["seed"])
    check_seed(seed)
    duration_ns = int(view["duration_ns"])
    # The runs columns come from the simulator's table for this scenario, taken without
    # simulating (a bulk flow over an unimpaired path cannot be simulated, but is emulated).
    template = to_arrow(_core.Simulation(text, emu_overrides, base_dir, seed,
                                         "summary").runs_template())
    if out is not None:
        outdir = results.claim(out, "emulate", force=force)
        with contextlib.suppress(FileNotFoundError):
            (outdir / results.MANIFEST).unlink()  # no stale result survives a failed emulation
        workdir = outdir / "emulation"
        workdir.mkdir(exist_ok=True)
        tmp = None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="spikelab-emu-")
        workdir = Path(tmp.name)
    log.info("emulating %g s of %s flow(s) in network namespaces", duration_ns / 1e9,
             plan.protocol)
    try:
        try:
            raw = _run(text, emu_overrides, base_dir, seed, duration_ns, plan, workdir,
                       realtime=realtime, spin_ns=int(spin_us * 1000), snaplen=snaplen,
                       sample_ns=int(sample_ms * 1e6), tcp_probe=tcp_probe,
                       progress=progress)
            log.info("emulation done; reading the capture and the sender's samples")
            result = tables.build(raw, resolved, view, plan, seed, duration_ns,
                                  keep_capture=out is not None, template=template)
            if out is not None:
                # The sender's samples: TCP_INFO, or usrsctp's SCTP_STATUS and counters.
                name = "sctp_status" if plan.protocol == "sctp" else "tcp_info"
                results.write_parquet(tables.tcp_info_table(raw), workdir / f"{name}.parquet")
                result.manifest["emulation"][name] = f"emulation/{name}.parquet"
                write_tables(result, outdir)
                log.info("tables written to %s", outdir)
        except KeyboardInterrupt:
            # Until the complete manifest is written, an interruption leaves one that says so.
            if out is not None:
                with interrupts_deferred():
                    manifest = results.new_manifest(resolved, seed, "packets",
                                                    duration_ns / 1e9, 0.0, 0)
                    results.write_interrupted(outdir, dict(manifest, kind="emulate"))
            raise
    finally:
        if tmp is not None:
            tmp.cleanup()
    if out is not None:
        figures.draw_figures(result, outdir, plots=plots)
    return result


def _run(text, overrides, base_dir, seed, duration_ns, plan, workdir, *, realtime, spin_ns,
         snaplen, sample_ns, tcp_probe, progress) -> dict[str, Any]:
    topo = Topology(mtu=plan.mtu)
    # A multihomed SCTP peer: the receiver's address k is destination k of each flow.
    dests = [fl["sctp"]["destinations"] if "sctp" in fl else 1 for fl in plan.flows]
    topo.extra_rcv_addrs = max(dests, default=1) - 1
    probe = Probe(topo.run_id, [f["port"] for f in plan.flows])
    sctp = plan.protocol == "sctp"
    if not tcp_probe or sctp:
        probe.dir, probe.error = None, "SCTP flows" if sctp else "not asked for"
    py = sys.executable
    emu_cpu, rps_mask = cpu_plan()
    pcap = workdir / "capture.pcapng"
    files = {
        "emulator": workdir / "emulator.json",
        "sender": workdir / "sender.json",
        "receiver": workdir / "receiver.json",
    }
    for f in [*files.values(), pcap]:
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
    emu_cfg = {
        "iface_a": topo.dev("a"), "iface_b": topo.dev("b"),
        "scenario": text, "overrides": overrides, "base_dir": base_dir, "seed": seed,
        "ports": [f["port"] for f in plan.flows], "stop_after_ns": duration_ns,
        "pcap": str(pcap), "snaplen": snaplen, "realtime": realtime, "spin_ns": spin_ns,
        "frame_buf": max(2048, plan.mtu + 64), "stats": str(workdir / "emulator-stats.json"),
        "cpu": emu_cpu,
        "dest_addrs": [[topo.rcv_addr(k) for k in range(n)] if n > 1 else [] for n in dests],
    }
    snd_cfg = {"dst": topo.addr_rcv, "flows": plan.flows, "duration_ns": duration_ns,
               "sample_ns": sample_ns, "out": str(files["sender"])}
    rcv_cfg = {"bind": topo.addr_rcv, "flows": plan.flows, "duration_ns": duration_ns,
               "out": str(files["receiver"])}
    for name, cfg in (("sender", snd_cfg), ("receiver", rcv_cfg)):
        results.write_json(cfg, workdir / f"{name}-config.json")
    # SCTP: one usrsctp process per flow and side (its counters are then the flow's).
    sctp_files: dict[str, list[Path]] = {"sender": [], "receiver": []}
    if sctp:
        for fl in plan.flows:
            for name, cfg in (("sender", snd_cfg), ("receiver", rcv_cfg)):
                out = workdir / f"{name}-{fl['flow']}.json"
                with contextlib.suppress(FileNotFoundError):
                    out.unlink()
                one = {k: v for k, v in cfg.items() if k != "flows"}
                n = fl["sctp"]["destinations"]
                one["addrs"] = [topo.rcv_addr(k) for k in range(n)]
                results.write_json({**one, "flow": fl, "out": str(out)},
                                   workdir / f"{name}-{fl['flow']}-config.json")
                sctp_files[name].append(out)
    installed: list[dict[str, Any]] = []
    children: list[_Child] = []
    bar = ProgressBar(duration_ns / 1e9, progress)
    started = time.monotonic()
    with _sigterm_as_interrupt():
        try:
            report = topo.create(plan.sysctl_snd, plan.sysctl_rcv, plan.route_snd,
                                 plan.route_rcv, rps_mask)
            installed = _install_host_queues(topo, plan)
            emu_cfg["host_queue_paths"] = [q["path"] for q in installed]
            results.write_json(emu_cfg, workdir / "emulator-config.json")
            mod = "spikelab.emulate"

            def endpoints(name: str, ns: str) -> None:
                if not sctp:
                    children.append(_Child(name, in_ns(ns, [
                        py, "-m", f"{mod}._endpoint", name,
                        str(workdir / f"{name}-config.json")]), workdir))
                    return
                for fl in plan.flows:
                    children.append(_Child(f"{name} of flow {fl['flow']}", in_ns(ns, [
                        py, "-m", f"{mod}._sctp_endpoint", name,
                        str(workdir / f"{name}-{fl['flow']}-config.json")]), workdir))

            endpoints("receiver", topo.ns_rcv)
            children.append(_Child("emulator", in_ns(topo.ns_emu, [
                py, "-m", f"{mod}._emulator", str(workdir / "emulator-config.json")]),
                workdir))
            endpoints("sender", topo.ns_snd)
            deadline = time.monotonic() + READY_TIMEOUT_S
            for c in children:
                c.wait_ready(deadline)
            probe.start()
            t0 = time.time_ns() + START_MARGIN_NS
            for c in children:
                c.start(t0)
            end = t0 + duration_ns
            while any(c.proc.poll() is None for c in children):
                now = time.time_ns()
                bar.update(min(max(now - t0, 0) / duration_ns, 1.0))
                if now > end + FINISH_GRACE_S * 1e9:
                    raise EmulationError(
                        "the run did not finish in time: "
                        + ", ".join(c.name for c in children if c.proc.poll() is None))
                failed = [c for c in children if c.proc.poll() not in (None, 0)]
                if failed:
                    c = failed[0]
                    raise EmulationError(f"the {c.name} failed: {c.error() or c.proc.returncode}")
                time.sleep(0.1)
            bar.close(1.0)
        except BaseException:
            bar.close(None)
            raise
        finally:
            # A second Ctrl-C must not cut the teardown short (namespaces would be left).
            with interrupts_deferred():
                probe.stop()
                for c in children:
                    c.close()
                for q in installed:
                    # Best effort: nothing may keep the teardown from running.
                    with contextlib.suppress(Exception):
                        q.update(topo.qdisc_stats(q["side"]))
                topo.teardown()
    raw: dict[str, Any] = {"t0_ns": t0, "topology": report, "run_id": topo.run_id,
                           "wall_s": time.monotonic() - started, "pcap": str(pcap),
                           "workdir": str(workdir), "probe": probe.report(),
                           "probe_samples": probe.samples() if probe.available else [],
                           "host_queues": installed}
    for name, path in files.items():
        src = workdir / "emulator-stats.json" if name == "emulator" else path
        try:
            if sctp and name != "emulator":
                parts = [json.loads(f.read_text()) for f in sctp_files[name]]
                raw[name] = {**parts[0], "flows": [p["flows"][0] for p in parts],
                             "per_flow": parts}
            else:
                raw[name] = json.loads(src.read_text())
        except (OSError, ValueError) as exc:
            raise EmulationError(f"the {name} left no result ({exc})") from None
    for fl in raw["sender"]["flows"]:
        if fl["error"]:
            raise EmulationError(f"sender: {fl['error']}")
    return raw


def _install_host_queues(topo: Topology, plan: kernel.KernelPlan) -> list[dict[str, Any]]:
    """The plan's host queues as qdiscs on the hosts' interfaces; one that the kernel
    refuses (no ``tc``, no ``tbf``) stays the emulator's stage, and the plan notes why."""
    installed = []
    for q in list(plan.host_queues):
        try:
            dev = topo.host_queue(q["side"], q["rate_bps"], q["limit_bytes"],
                                  q["limit_packets"])
        except TopologyError as exc:
            plan.host_queues.remove(q)
            plan.unmapped.append(
                f"path.{q['path']}.stage[0].backpressure: the host's qdisc could not be set "
                f"({exc}); the emulator's stage drops when full, and the kernel sees a loss, "
                "not a local congestion signal")
            continue
        installed.append(dict(q, dev=dev))
    return installed


def cleanup() -> dict[str, list[str]]:
    """Remove what crashed runs left behind (needs root); return what was removed."""
    kernel.require_privileges()
    from .topology import cleanup as _cleanup

    try:
        return _cleanup()
    except TopologyError as exc:
        raise EmulationError(str(exc)) from None
