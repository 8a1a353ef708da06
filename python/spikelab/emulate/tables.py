"""An emulated run's result tables, in the simulator's columns.

Sources (also written to the manifest, ``emulation.sources``):

- ``packets``: the emulator's capture (``_core.emu_analyze``): every frame in, every stage's
  intended exit, every drop, every actual departure.
- ``timeseries``: the sender's TCP_INFO samples (cwnd, ssthresh, srtt, rttvar, rto, snd_una,
  snd_nxt, inflight, ca_state; recorded on change), markers for RTO expirations (from
  ``tcpi_total_rto``) and fast recoveries (entries into the Recovery state), each labelled
  spurious or genuine by the capture's ground truth; ``rtt_sample`` and ``rcv_nxt`` from the
  capture.
- ``runs``: bytes delivered and completion time from the receiving application; timeouts and
  fast retransmits from the kernel; everything about packets (segments, retransmissions,
  spurious ones, duplicate ACKs, DSACKs, RTT samples, stalls, drops) from the capture.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from .. import _core
from ..store import results, schema
from ..store.arrow import to_arrow
from ..store.run import RunResult
from . import tcpinfo
from .kernel import KernelPlan
from .view import KernelView

SERIES_VARS = ("cwnd", "ssthresh", "srtt", "rttvar", "rto", "snd_una", "snd_nxt", "inflight",
               "ca_state")
VAR_NAMES = [*SERIES_VARS, "rtt_sample", "rcv_nxt", "rto_expiry", "fast_retx"]
# Kernel counters worth reporting (TcpExt unless noted), as nstat names them.
COUNTERS = (
    "TcpExtTCPTimeouts", "TcpExtTCPSpuriousRTOs", "TcpExtTCPLossUndo", "TcpExtTCPFullUndo",
    "TcpExtTCPPartialUndo", "TcpExtTCPDSACKUndo", "TcpExtTCPSackRecovery",
    "TcpExtTCPRenoRecovery", "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans",
    "TcpExtTCPLostRetransmit", "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKOldSent",
    "TcpExtTCPDSACKOfoSent", "TcpExtTCPDSACKOfoRecv", "TcpExtTCPSACKReorder",
    "TcpExtTCPTSReorder", "TcpExtTCPRenoReorder", "TcpExtTCPLossProbes",
    "TcpExtTCPLossProbeRecovery", "TcpExtTCPSpuriousRtxHostQueues", "TcpExtTCPLossFailures",
    "TcpExtTCPDelivered", "TcpRetransSegs", "TcpOutSegs", "TcpInSegs", "TcpExtPAWSEstab",
)
UNDO_COUNTERS = ("TcpExtTCPLossUndo", "TcpExtTCPFullUndo", "TcpExtTCPPartialUndo",
                 "TcpExtTCPDSACKUndo")
RECOVERY_COUNTERS = ("TcpExtTCPSackRecovery", "TcpExtTCPRenoRecovery")
MARKER_WINDOW_NS = 50_000_000  # how far after an event its retransmission may be seen

SOURCES = {
    "runs.bytes_delivered": "receiving application (kernel); capture if absent",
    "runs.goodput_bps": "bytes_delivered over the flow's lifetime",
    "runs.completion_time_s": "receiving application",
    "runs.rto_count": "sender TCP_INFO tcpi_total_rto less the SYN's timeouts (kernel >= 6.7), "
                      "else TCPTimeouts",
    "runs.fast_retx_count": "one flow: the sender's TCPSackRecovery + TCPRenoRecovery "
                            "counters (every entry into fast recovery); several flows: "
                            "TCP_INFO samples entering the Recovery state (episodes shorter "
                            "than the sample period may merge)",
    "runs.paws_rejected": "one flow: the receiver's PAWSEstab counter (data it discarded by "
                          "PAWS, RFC 7323 §5.3); several flows: null (the counter is per host)",
    "runs.spurious_retx_true": "capture ground truth: the original left the emulator to the "
                               "receiver; a PAWS discard there (paws_rejected) counts as "
                               "delivered",
    "runs.local_cwr_count": "sender TCP_INFO samples entering the CWR state (the hosts do "
                            "not negotiate ECN: each is a segment the host's own qdisc "
                            "refused, a path's first stage with backpressure)",
    "runs.rto_spurious_true": "capture ground truth of the RTO's retransmission",
    "runs.fast_retx_spurious_true": "capture ground truth of the recovery's first "
                                    "retransmission",
    "runs.*": "capture (the emulator saw every frame)",
    "timeseries.cwnd..ca_state": "sender TCP_INFO every sample period, recorded on change",
    "timeseries.snd_una": "tcpi_bytes_acked - 1 (it counts the SYN)",
    "timeseries.snd_nxt": "snd_una + SIOCOUTQ - SIOCOUTQNSD",
    "timeseries.rtt_sample": "capture: ACK at the sender minus the segment's send time "
                             "(segments sent once)",
    "timeseries.rcv_nxt": "capture: in-order data that left the emulator to the receiver",
    "packets": "capture; stage_enter / stage_exit at the emulator's intended times, deliver "
               "at the actual departure",
}


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS if k in after}


def _series_from_samples(flow: int, fields: list[str], samples: list[list[int]],
                         t0: int) -> tuple[dict[str, list], list[dict[str, int]]]:
    """TCP_INFO samples to on-change rows; also returns the samples as dicts."""
    rows: dict[str, list] = {"t_ns": [], "flow": [], "var": [], "value": []}
    last: dict[str, float] = {}
    as_dicts = []
    for s in samples:
        d = dict(zip(fields, s, strict=True))
        as_dicts.append(d)
        mss = d["snd_mss"] or 1
        ssthresh = d["snd_ssthresh"]
        # tcpi_bytes_acked counts the SYN's sequence number too: the first data byte is 0.
        snd_una = float(max(d["bytes_acked"] - 1, 0))
        values = {
            "cwnd": float(d["snd_cwnd"] * mss),
            "ssthresh": math.inf if ssthresh >= tcpinfo.TCP_INFINITE_SSTHRESH
            else float(ssthresh * mss),
            "srtt": d["rtt"] / 1e6,
            "rttvar": d["rttvar"] / 1e6,
            "rto": d["rto"] / 1e6,
            "snd_una": snd_una,
            "snd_nxt": snd_una + d["in_flight_bytes"] if d["in_flight_bytes"] >= 0 else math.nan,
            "inflight": float(max(d["unacked"] - d["sacked"] - d["lost"] + d["retrans"], 0)
                              * mss),
            "ca_state": float(tcpinfo.SIM_CA_STATE.get(d["ca_state"], 0)),
        }
        t = max(d["t_ns"] - t0, 0)
        for var, v in values.items():
            if math.isnan(v) or last.get(var) == v:
                continue
            last[var] = v
            rows["t_ns"].append(t)
            rows["flow"].append(flow)
            rows["var"].append(var)
            rows["value"].append(v)
    return rows, as_dicts


PROBE_VARS = ("cwnd", "ssthresh", "srtt", "snd_una", "snd_nxt")


def _unwrapper():
    """Maps 32-bit sequence offsets, in order, to 64-bit ones (adds 2^32 at each wrap)."""
    last, high = None, 0

    def unwrap(v32: int) -> int:
        nonlocal last, high
        if last is not None and v32 + (1 << 31) < last:
            high += 1 << 32
        last = v32
        return high + v32

    return unwrap


def _series_from_probe(flow: int, events: list, isn: int, mss: int, t0: int
                       ) -> dict[str, list]:
    """tcp_probe events (one per ACK the sender received) to rows."""
    rows: dict[str, list] = {"t_ns": [], "flow": [], "var": [], "value": []}
    base = (isn + 1) & 0xFFFFFFFF
    una_of, nxt_of = _unwrapper(), _unwrapper()
    # tcp_probe reports the state as a segment arrives, before it is processed: the state
    # after ACK k is the state as ACK k+1 arrives, so each event takes its successor's values
    # when the successor follows closely (otherwise a timer may have acted in between).
    events = [(ev[0], *(nxt if nxt[0] - ev[0] <= PROBE_GAP_NS else ev)[1:])
              for ev, nxt in zip(events, [*events[1:], events[-1]], strict=True)]
    for t, _port, snd_nxt, snd_una, cwnd, ssthresh, srtt_us in events:
        una_full = una_of((snd_una - base) & 0xFFFFFFFF)
        nxt_full = nxt_of((snd_nxt - base) & 0xFFFFFFFF)
        values = {
            "cwnd": float(cwnd * mss),
            "ssthresh": math.inf if ssthresh >= tcpinfo.TCP_INFINITE_SSTHRESH
            else float(ssthresh * mss),
            "srtt": srtt_us / 1e6,
            "snd_una": float(una_full),
            "snd_nxt": float(nxt_full),
        }
        tt = max(t - t0, 0)
        for var, v in values.items():
            # Every event, not only changes: the merge with TCP_INFO keeps the changes.
            rows["t_ns"].append(tt)
            rows["flow"].append(flow)
            rows["var"].append(var)
            rows["value"].append(v)
    return rows


PROBE_GAP_NS = 2_000_000


def _merge_probe(info: dict[str, list], probe: dict[str, list]) -> dict[str, list]:
    """One flow's TCP_INFO rows and tcp_probe rows as one on-change series: for the variables
    tcp_probe has, its rows, plus the TCP_INFO rows that fall in gaps of the probe stream
    (no ACK for more than PROBE_GAP_NS: a timeout's cwnd reduction, for instance); the other
    variables from TCP_INFO."""
    probe_t = np.asarray(sorted(probe["t_ns"]), np.int64)
    rows = []
    for t, var, value, flow in zip(info["t_ns"], info["var"], info["value"], info["flow"],
                                   strict=True):
        if var in PROBE_VARS and probe_t.size:
            i = int(np.searchsorted(probe_t, t))
            near = any(abs(int(probe_t[j]) - t) <= PROBE_GAP_NS
                       for j in (i - 1, i) if 0 <= j < probe_t.size)
            if near:
                continue
        rows.append((t, var, value, flow))
    rows += list(zip(probe["t_ns"], probe["var"], probe["value"], probe["flow"], strict=True))
    rows.sort(key=lambda r: r[0])
    out: dict[str, list] = {"t_ns": [], "flow": [], "var": [], "value": []}
    last: dict[str, float] = {}
    for t, var, value, flow in rows:
        if last.get(var) == value:
            continue
        last[var] = value
        out["t_ns"].append(t)
        out["flow"].append(flow)
        out["var"].append(var)
        out["value"].append(value)
    return out


# TCP_INFO's tcpi_state while the SYN waits for its SYN-ACK (TCP_SYN_SENT).
_SYN_SENT = 2


def _expiries(prev: dict[str, int], s: dict[str, int], total_rto_ok: bool) -> int:
    """Data RTO expirations between two samples (a SYN's timeouts, while the previous sample
    was still in SYN-SENT, are the handshake's, which the simulator does not count)."""
    if prev.get("state") == _SYN_SENT:
        return 0
    if total_rto_ok:
        return max(s["total_rto"] - prev["total_rto"], 0)
    return int(s["ca_state"] == 4 and prev["ca_state"] != 4 or s["backoff"] > prev["backoff"])


def _host_queue_sources(queues: list[dict[str, Any]]) -> dict[str, str]:
    """A sender-side host queue sits before the capture: its wait is not in the capture's
    RTT samples."""
    paths = [q["path"] for q in queues if q.get("side") == "s"]
    if not paths:
        return {}
    return {"runs.rtt_mean_s, rtt_sd_s, timeseries.rtt_sample":
            "capture: ACK at the sender minus the segment's send time, which is when the "
            f"sender's own queue (path {', '.join(paths)}, a qdisc on its interface) let it "
            "go: the wait in that queue is left out (the kernel's srtt includes it)"}


# TCP_INFO's tcpi_ca_state for a window reduction without a loss (TCP_CA_CWR).
_CA_CWR = 2


def _cwr_entries(samples: list[dict[str, int]]) -> int:
    """Entries into the CWR state between samples. The emulator's hosts do not negotiate
    ECN, so each is a local congestion signal: a segment the host's own qdisc refused
    (``backpressure``), the simulator's ``local_cwr_count``."""
    prev = None
    n = 0
    for s in samples:
        if s["ca_state"] == _CA_CWR and (prev is None or prev["ca_state"] != _CA_CWR):
            n += 1
        prev = s
    return n


def _events(samples: list[dict[str, int]], t0: int, total_rto_ok: bool
            ) -> tuple[list[tuple[int, int, bool]], list[tuple[int, int, bool]]]:
    """(time, previous sample time, starts an episode) of each RTO expiration and each entry
    into Recovery. A timeout that recurs before snd_una advanced continues its episode, as
    in the simulator's ``rto_episodes``; every recovery starts one."""
    rtos, recoveries = [], []
    prev = None
    una_at_last_rto = None
    for s in samples:
        t = max(s["t_ns"] - t0, 0)
        if prev is not None:
            tp = max(prev["t_ns"] - t0, 0)
            n = _expiries(prev, s, total_rto_ok)
            for _ in range(n):
                # The timer fired at the state of the previous sample's snd_una.
                new = una_at_last_rto is None or prev["bytes_acked"] > una_at_last_rto
                rtos.append((t, tp, new))
                una_at_last_rto = prev["bytes_acked"]
            if s["ca_state"] == 3 and prev["ca_state"] != 3:
                recoveries.append((t, tp, True))
        prev = s
    return rtos, recoveries


def _timeout_times(samples: list[dict[str, int]], t0: int, stop_ns: int,
                   total_rto_ok: bool) -> tuple[float, float]:
    """(time in the Loss state, expired RTOs summed), seconds, from the TCP_INFO samples: the
    simulator's ``timeout_time_s`` (an open Loss state counts to ``stop_ns``) and
    ``rto_wait_s`` (each expiry counted at the RTO the previous sample showed, backoff
    included), to within one sample period."""
    in_loss = 0
    wait_us = 0
    since = None
    prev = None
    for s in samples:
        t = max(s["t_ns"] - t0, 0)
        if s["ca_state"] == 4 and since is None:
            since = t
        elif s["ca_state"] != 4 and since is not None:
            in_loss += t - since
            since = None
        if prev is not None:
            wait_us += _expiries(prev, s, total_rto_ok) * prev["rto"]
        prev = s
    if since is not None:
        in_loss += max(stop_ns - since, 0)
    return in_loss / 1e9, wait_us / 1e6


def _label(events: list[tuple], retx: list[dict[str, Any]]
           ) -> list[tuple[int, bool, int, int]]:
    """Each event (time, previous sample time, ...) with the ground truth, first byte and
    transmission number of the first retransmission seen after the sample before it (each
    retransmission used once); (time, False, -1, -1) if none follows within the window."""
    out = []
    used = 0
    times = [r["t_ns"] for r in retx]
    for t, tp, *_ in events:
        i = int(np.searchsorted(times, tp, side="left"))
        i = max(i, used)
        if i < len(retx) and retx[i]["t_ns"] <= t + MARKER_WINDOW_NS:
            r = retx[i]
            out.append((t, bool(r["spurious"]), int(r["seq"]), int(r["tx"])))
            used = i + 1
        else:
            out.append((t, False, -1, -1))
    return out


def build(raw: dict[str, Any], resolved: dict[str, Any], view: KernelView,
          plan: KernelPlan, seed: int, duration_ns: int, keep_capture: bool,
          template: pa.Table) -> RunResult:
    """The RunResult of an emulated run from what its processes left (see run._run).
    ``template`` is the simulator's runs table of the same scenario (any trace level): the
    emulated table has its columns, in its order and types."""
    t0 = int(raw["t0_ns"])
    an = _core.emu_analyze(raw["pcap"], duration_ns)
    packets = to_arrow(an["packets"])
    cap_series = to_arrow(an["series"])
    cap_flows = json.loads(an["flows"])
    timing = json.loads(an["timing"])
    stages = [tuple(s) for s in an["stages"]]
    paths = json.loads(an["paths"])
    snd, rcv = raw["sender"], raw["receiver"]
    fields = snd["fields"]

    ts_rows: dict[str, list] = {"t_ns": [], "flow": [], "var": [], "value": []}
    marker_rows: dict[str, list] = {"t_ns": [], "flow": [], "var": [], "value": [],
                                    "seq": [], "tx": []}
    flow_kernel = []
    run_rows = []
    probe_by_port: dict[int, list] = {}
    for ev in raw.get("probe_samples") or []:
        probe_by_port.setdefault(int(ev[1]), []).append(ev)
    probe_used = []
    sctp = plan.protocol == "sctp"
    for i, fl in enumerate(snd["flows"]):
        if sctp:
            rows, markers, row, fk = _sctp_flow(i, fl, snd["per_flow"][i], rcv["flows"][i],
                                                cap_flows[i], fields, t0, view, duration_ns,
                                                stages)
            for k in ts_rows:
                ts_rows[k] += rows[k]
            for k in marker_rows:
                marker_rows[k] += markers[k]
            row["seed"] = seed
            run_rows.append(row)
            flow_kernel.append(fk)
            continue
        rows, samples = _series_from_samples(i, fields, fl["samples"], t0)
        events = probe_by_port.get(int(plan.flows[i]["port"]), [])
        isn = cap_flows[i].get("isn")
        if events and isn is not None:
            mss = int(samples[-1]["snd_mss"]) if samples else int(view["flows"][i]["tcp"]["mss"])
            rows = _merge_probe(rows, _series_from_probe(i, events, isn, mss, t0))
            probe_used.append(i)
        for k in ts_rows:
            ts_rows[k] += rows[k]
        total_rto_ok = fl["tcp_info_bytes"] >= tcpinfo.SIZE
        rto_ev, rec_ev = _events(samples, t0, total_rto_ok)
        retx = cap_flows[i]["retransmissions"]
        rtos = _label(rto_ev, retx)
        recs = _label(rec_ev, retx)
        _add_markers(marker_rows, i, rtos, recs)
        last = samples[-1] if samples else {}
        flow_kernel.append({
            "flow": i,
            "tcp_info_bytes": fl["tcp_info_bytes"],
            "samples": len(samples),
            "final_tcp_info": last,
            "bytes_written": fl["bytes_written"],
            "rto_events": len(rtos),
            "recoveries": len(recs),
        })
        rcv_f = rcv["flows"][i]
        cf = cap_flows[i]
        row, stop_ns = _common_row(i, rcv_f, cf, view, t0, duration_ns, stages,
                                   int(rcv_f.get("bytes") or cf["bytes_delivered"]))
        # tcpi_total_rto counts the SYN's timeouts too (one per SYN after the first).
        syn_timeouts = max(int(cf.get("syns_sent", 1)) - 1, 0)
        rto_count = (max(int(last.get("total_rto", 0)) - syn_timeouts, 0) if total_rto_ok
                     else len(rtos))
        row.update({
            "seed": seed,
            "rto_count": rto_count,
            "rto_spurious_true": sum(r[1] for r in rtos),
            "fast_retx_count": len(recs),
            "fast_retx_spurious_true": sum(r[1] for r in recs),
            "dupacks_rcvd": cf["dupacks_rcvd"],
            "dsacks_rcvd": cf["dsacks_rcvd"],
            "mss": int(view["flows"][i]["tcp"]["mss"]),
        })
        row["timeout_time_s"], row["rto_wait_s"] = _timeout_times(samples, t0, stop_ns,
                                                                  total_rto_ok)
        starts = [lab for lab, ev in zip(rtos, rto_ev, strict=True) if ev[2]]
        row["rto_episodes"] = len(starts)
        row["rto_episodes_spurious_true"] = sum(lab[1] for lab in starts)
        row["fr_episodes"] = len(recs)
        row["fr_episodes_spurious_true"] = sum(r[1] for r in recs)
        row["local_cwr_count"] = _cwr_entries(samples)
        run_rows.append(row)

    if sctp:
        # usrsctp's own counters, per flow (one stack per flow and side).
        counters = {"sender": [{k: p["stats_after"][k] - p["stats_before"][k]
                                for k in p["stats_after"]} for p in snd["per_flow"]],
                    "receiver": [p["stats"] for p in rcv["per_flow"]]}
        undo = 0
    else:
        counters = {
            "sender": _delta(snd["counters_before"], snd["counters_after"]),
            "receiver": _delta(rcv["counters_before"], rcv["counters_after"]),
        }
        undo = sum(counters["sender"].get(k, 0) for k in UNDO_COUNTERS)
    if len(run_rows) == 1 and not sctp:
        # The kernel's counters are per namespace: per flow only when there is one flow.
        c = counters["sender"]
        run_rows[0]["undo_count"] = undo
        # Entries into fast recovery, counted by the kernel itself: TCP_INFO sampling misses
        # the episodes an undo ends within a sample period (reordering: 10 counted, 7 sampled).
        recoveries = [c[k] for k in RECOVERY_COUNTERS if k in c]
        if recoveries:
            run_rows[0]["fast_retx_count"] = sum(recoveries)
        run_rows[0]["rto_spurious_detected"] = c.get("TcpExtTCPLossUndo", 0)
        run_rows[0]["tlp_count"] = c.get("TcpExtTCPLossProbes", 0)
        run_rows[0]["tlp_recoveries"] = c.get("TcpExtTCPLossProbeRecovery", 0)
        run_rows[0]["fr_spurious_detected"] = sum(
            c.get(k, 0) for k in ("TcpExtTCPFullUndo", "TcpExtTCPPartialUndo",
                                  "TcpExtTCPDSACKUndo"))
        # The receiver's PAWS discards (RFC 7323 §5.3): data that reached the receiving host
        # and was dropped there, which the capture counts as delivered.
        run_rows[0]["paws_rejected"] = counters["receiver"].get("TcpExtPAWSEstab")
    runs, missing = _runs_table(run_rows, template)
    timeseries = _timeseries_table(ts_rows, marker_rows, cap_series)
    # The simulator stops at the scenario's end; so do the tables.
    timeseries = timeseries.filter(pa.compute.less_equal(timeseries["t_ns"], duration_ns))
    engine = raw["emulator"]
    manifest = results.new_manifest(resolved, seed, "packets", duration_ns / 1e9,
                                    raw["wall_s"], int(packets.num_rows))
    manifest["kind"] = "emulate"
    manifest["emulation"] = {
        "mode": "emulate",
        "t0_ns": t0,
        "run_id": raw["run_id"],
        "timing": timing,
        "timing_engine": engine.get("timing"),
        "engine": {k: v for k, v in engine.items() if k != "timing"},
        "kernel": plan.as_dict(),
        "counters": counters,
        "undo": undo,
        "flows": flow_kernel,
        "receiver": rcv["flows"],
        "topology": raw["topology"],
        "sources": {**(SCTP_SOURCES if sctp else SOURCES), **({
            "timeseries.cwnd, ssthresh, srtt, snd_una, snd_nxt":
                "tcp_probe tracepoint (the state after every ACK the sender received); "
                "TCP_INFO samples where no ACK came for 2 ms"}
            if probe_used else {}), **_host_queue_sources(raw.get("host_queues", []))},
        "tcp_probe": {**raw.get("probe", {}), "flows": probe_used},
        "unavailable": (_unavailable_sctp(missing) if sctp
                        else _unavailable(flow_kernel, missing)),
        "capture": "emulation/capture.pcapng" if keep_capture else None,
        "frames_unclassified": an["unclassified"],
        "paths": {p["name"]: {"frames": p["frames"], "drops": len(p["dropped"])}
                  for p in paths},
        # Paths whose first stage was a qdisc on a host's interface (backpressure): its
        # packets sent and refused (a refusal is a local drop the host's TCP resends).
        "host_queues": raw.get("host_queues", []),
    }
    return RunResult(
        runs=runs, timeseries=timeseries, packets=packets, scenario=resolved, seed=seed,
        trace="packets", duration_s=duration_ns / 1e9, wall_s=raw["wall_s"],
        events=int(packets.num_rows), manifest=manifest,
    )


SCTP_SOURCES = {
    "runs.bytes_delivered": "receiving application (usrsctp)",
    "runs.goodput_bps": "bytes_delivered over the flow's lifetime",
    "runs.rto_count": "the sender's usrsctp counter of T3-rtx expiries (sctps_timodata)",
    "runs.fast_retx_count": "samples in which the sender's usrsctp counter of fast-"
                            "retransmitted chunks (sctps_sendfastretrans) grew: fast "
                            "retransmissions closer than the sample period merge",
    "runs.rto_spurious_true, fast_retx_spurious_true":
        "capture ground truth of the first DATA chunk retransmitted after the event",
    "runs.setup_time_s": "from usrsctp_connect to its return (INIT to COOKIE-ACK)",
    "runs.*": "capture (the emulator saw every frame; one transmission per DATA chunk)",
    "timeseries.cwnd, srtt, rto": "the sender's SCTP_STATUS (primary destination) every "
                                  "sample period, recorded on change",
    "timeseries.rtt_sample": "capture: the cumulative TSN ack reaching the sender minus the "
                             "send time of the chunk it acknowledges last (chunks sent once)",
    "timeseries.rcv_nxt": "capture: payload bytes of the in-order TSNs that left the "
                          "emulator to the receiver",
    "packets": "capture; seq is the first DATA chunk's TSN (from 1), ack the cumulative TSN "
               "ack; stage_enter / stage_exit at the emulator's intended times",
}


def _add_markers(markers: dict[str, list], flow: int, rtos: list[tuple],
                 recs: list[tuple]) -> None:
    """The ``rto_expiry`` and ``fast_retx`` marker rows of labelled events (``_label``)."""
    for var, evs in (("rto_expiry", rtos), ("fast_retx", recs)):
        for t, sp, seq, tx in evs:
            markers["t_ns"].append(t)
            markers["flow"].append(flow)
            markers["var"].append(var)
            markers["value"].append(1.0 if sp else 0.0)
            markers["seq"].append(seq)
            markers["tx"].append(tx)


def _common_row(i: int, rcv_f: dict[str, Any], cf: dict[str, Any], view: KernelView,
                t0: int, duration_ns: int, stages: list[tuple[str, str]], delivered: int
                ) -> tuple[dict[str, Any], int]:
    """The runs columns a flow of either protocol fills the same way, from the receiving
    application (``delivered`` bytes, completion) and the capture (``cf``); and when the
    flow stopped, ns since t0 (its file's last byte, else the scenario's end)."""
    start_ns = int(view["flows"][i]["start_ns"])
    complete = rcv_f.get("complete_ns")
    stop_ns = (complete - t0) if complete else duration_ns
    row = {
        "flow": i,
        "goodput_bps": delivered * 8 / (max(stop_ns - start_ns, 1) / 1e9),
        "bytes_delivered": delivered,
        "retx_segments": cf["retx_segments"],
        "spurious_retx_true": cf["spurious_retx_true"],
        "segments_sent": cf["segments_sent"],
        "rtt_mean_s": cf["rtt_mean_s"],
        "rtt_sd_s": cf["rtt_sd_s"],
        "rtt_samples": cf["rtt_samples"],
        "longest_stall_s": cf["longest_stall_s"],
        "completion_time_s": (complete - t0 - start_ns) / 1e9 if complete else None,
    }
    for g, (path, stage) in enumerate(stages):
        row[f"drops_{path}_{stage}"] = cf["drops"][g]
    row["drops_total"] = sum(cf["drops"])
    return row, stop_ns


def _sctp_flow(i: int, fl: dict[str, Any], part: dict[str, Any], rcv_f: dict[str, Any],
               cf: dict[str, Any], fields: list[str], t0: int, view: KernelView,
               duration_ns: int, stages: list[tuple[str, str]]
               ) -> tuple[dict[str, list], dict[str, list], dict[str, Any], dict[str, Any]]:
    """One SCTP flow's series, markers, runs row and kernel-side summary, from the usrsctp
    sender's samples and counters, the receiver's bytes and the capture."""
    rows: dict[str, list] = {"t_ns": [], "flow": [], "var": [], "value": []}
    markers: dict[str, list] = {"t_ns": [], "flow": [], "var": [], "value": [], "seq": [],
                                "tx": []}
    samples = [dict(zip(fields, s, strict=True)) for s in fl["samples"]]
    last: dict[str, float] = {}
    t3, fr = [], []
    prev = None
    for d in samples:
        t = max(d["t_ns"] - t0, 0)
        for var, v in (("cwnd", float(d["cwnd"])), ("srtt", d["srtt_ms"] / 1e3),
                       ("rto", d["rto_ms"] / 1e3)):
            if last.get(var) != v:
                last[var] = v
                rows["t_ns"].append(t)
                rows["flow"].append(i)
                rows["var"].append(var)
                rows["value"].append(v)
        if prev is not None:
            tp = max(prev["t_ns"] - t0, 0)
            t3 += [(t, tp)] * max(d["timodata"] - prev["timodata"], 0)
            if d["sendfastretrans"] > prev["sendfastretrans"]:
                fr.append((t, tp))
        prev = d
    retx = cf["retransmissions"]
    rtos, recs = _label(t3, retx), _label(fr, retx)
    _add_markers(markers, i, rtos, recs)
    before, after = part["stats_before"], part["stats_after"]
    established = int(fl.get("established_ns") or 0)
    row, _ = _common_row(i, rcv_f, cf, view, t0, duration_ns, stages,
                         int(rcv_f.get("bytes") or 0))
    sctp = view["flows"][i]["sctp"]
    assert sctp is not None  # an SCTP flow has its settings
    row.update({
        "rto_count": after["timodata"] - before["timodata"],
        "rto_spurious_true": sum(r[1] for r in rtos),
        "fast_retx_count": len(recs),
        "fast_retx_spurious_true": sum(r[1] for r in recs),
        "dupacks_rcvd": None,  # TCP only
        "dsacks_rcvd": None,
        "mss": int(sctp["message_size"]),
        "cc": "sctp",
        "transport": "sctp",
        "heartbeats_sent": cf["heartbeats_sent"],
        "setup_time_s": (established - fl["connect_ns"]) / 1e9 if established else None,
        "assoc_failed": int(bool(fl.get("assoc_failed"))),
        "failovers": cf["failovers"],
    })
    primary = int(sctp["primary"])
    by_dest = cf["bytes_by_dest"]
    row["data_primary_bytes"] = by_dest[primary] if primary < len(by_dest) else 0
    row["data_other_bytes"] = sum(b for k, b in enumerate(by_dest) if k != primary)
    fk = {"flow": i, "samples": len(samples), "final_status": samples[-1] if samples else {},
          "bytes_written": fl["bytes_written"], "rto_events": len(rtos),
          "recoveries": len(recs), "usrsctp": {k: after[k] - before[k] for k in after}}
    return rows, markers, row, fk


def _unavailable(flow_kernel: list[dict[str, Any]], missing: list[str]) -> list[str]:
    out = [f"runs.{name}: null (the kernel does not provide it)" for name in missing]
    out += [
        "runs.rto_spurious_detected, fr_spurious_detected, undo_count: the kernel's undo "
        "counters (TCPLossUndo; TCPFullUndo + TCPPartialUndo + TCPDSACKUndo; their sum), per "
        "namespace, so null with more than one flow",
        "runs.rto_spurious_true, runs.fast_retx_spurious_true: the ground truth of the first "
        "retransmission after the kernel's event (the kernel does not say which segment its "
        "timer retransmitted)",
        "timeseries.rto_expiry / fast_retx: times are those of the TCP_INFO sample that saw "
        "the event (within one sample period)",
        "runs.timeout_time_s, rto_wait_s: from the TCP_INFO samples (time with ca_state Loss; "
        "the RTO the sample before each expiry showed), within one sample period",
    ]
    if any(f.get("tcp_info_bytes", tcpinfo.SIZE) < tcpinfo.SIZE for f in flow_kernel):
        out.append("runs.rto_count: this kernel's TCP_INFO has no tcpi_total_rto (< 6.7); "
                   "counted from Loss-state entries and backoff increases")
    return out


def _unavailable_sctp(missing: list[str]) -> list[str]:
    return [f"runs.{name}: null (usrsctp does not provide it)" for name in missing] + [
        "runs.rto_spurious_true, runs.fast_retx_spurious_true: the ground truth of the first "
        "DATA chunk retransmitted after the stack's event (usrsctp does not say which chunk "
        "its timer retransmitted)",
        "timeseries.rto_expiry / fast_retx: times are those of the sample that saw the "
        "counter grow (within one sample period)",
    ]


def _runs_table(rows: list[dict[str, Any]], template: pa.Table
                ) -> tuple[pa.Table, list[str]]:
    """The runs rows in the simulator's columns (``template``: its runs table for the same
    scenario, with its fields' units and descriptions): values the emulation has, the
    template's own for the scenario's settings (dictionary columns such as ``spurious``,
    ``response``), null for the rest; returns the table and the columns left null that apply
    to the flows (a count the template holds null does not: an SCTP column of a TCP flow, a
    detector that is off)."""
    cols: dict[str, pa.Array] = {}
    missing = []
    for field in template.schema:
        name, typ = field.name, field.type
        own = [template[name][min(i, template.num_rows - 1)] for i in range(len(rows))]
        if all(name in r for r in rows):
            values = [r[name] for r in rows]
        elif pa.types.is_dictionary(typ):
            values = [v.as_py() for v in own]
        else:
            values = [None] * len(rows)
            if not pa.types.is_integer(typ) or any(v.is_valid for v in own):
                missing.append(name)
        if pa.types.is_floating(typ):
            values = [None if v is None else float(v) for v in values]
        elif pa.types.is_integer(typ):
            values = [None if v is None else int(v) for v in values]
        cols[name] = pa.array(values).cast(typ) if values else pa.array([], typ)
    return pa.table(cols, schema=template.schema), missing


def _timeseries_table(ts: dict[str, list], markers: dict[str, list],
                      cap: pa.Table) -> pa.Table:
    """All series in time order, with the simulator's columns (``seq``/``tx`` name the
    retransmission of a marker; null elsewhere, and on a marker no retransmission followed)."""
    t = np.concatenate([np.asarray(ts["t_ns"], np.int64), np.asarray(markers["t_ns"], np.int64),
                        cap["t_ns"].to_numpy()])
    flow = np.concatenate([np.asarray(ts["flow"], np.int32),
                           np.asarray(markers["flow"], np.int32), cap["flow"].to_numpy()])
    var = list(ts["var"]) + list(markers["var"]) + [str(v) for v in cap["var"].to_pylist()]
    value = np.concatenate([np.asarray(ts["value"], np.float64),
                            np.asarray(markers["value"], np.float64),
                            cap["value"].to_numpy()])
    n_ts, n_cap = len(ts["t_ns"]), cap.num_rows
    # -1 marks "none" while the rows are put together; the table holds null there.
    seq = np.concatenate([np.full(n_ts, -1, np.int64), np.asarray(markers["seq"], np.int64),
                          np.full(n_cap, -1, np.int64)])
    tx = np.concatenate([np.full(n_ts, -1, np.int32), np.asarray(markers["tx"], np.int32),
                         np.full(n_cap, -1, np.int32)])
    order = np.argsort(t, kind="stable")
    codes = np.asarray([VAR_NAMES.index(v) for v in var], np.int32)[order]
    seq, tx = seq[order], tx[order]
    table = pa.table({
        "t_ns": pa.array(t[order], pa.int64()),
        "flow": pa.array(flow[order], pa.int32()),
        "var": pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()),
                                              pa.array(VAR_NAMES, pa.string())),
        "value": pa.array(value[order], pa.float64()),
        "seq": pa.array(seq, pa.int64(), mask=seq < 0),
        "tx": pa.array(tx, pa.int32(), mask=tx < 0),
        # The SCTP destination of a row: none (the kernel here runs TCP only).
        "dest": pa.nulls(len(t), pa.int32()),
    })
    return schema.annotate(table, "timeseries")


def tcp_info_table(raw: dict[str, Any]) -> pa.Table:
    """Every TCP_INFO sample of every flow, all sampled fields (kernel units: packets, µs),
    time in ns since t0: ``emulation/tcp_info.parquet``."""
    from . import tcpinfo

    fields = raw["sender"]["fields"]
    t0 = int(raw["t0_ns"])
    cols: dict[str, list] = {"t_ns": [], "flow": []}
    cols.update({f: [] for f in fields[1:]})
    for i, fl in enumerate(raw["sender"]["flows"]):
        # A field the kernel did not fill (an older struct tcp_info) is null, not 0; so is
        # in_flight_bytes where the socket's queue could not be read (-1 in the sample).
        filled = fl.get("tcp_info_bytes") or tcpinfo.SIZE
        absent = set(tcpinfo.NAMES) - set(tcpinfo.available(filled))
        for sample in fl["samples"]:
            cols["t_ns"].append(max(sample[0] - t0, 0))
            cols["flow"].append(i)
            for f, v in zip(fields[1:], sample[1:], strict=True):
                cols[f].append(None if f in absent or (f == "in_flight_bytes" and v < 0)
                               else v)
    types = {"flow": pa.int32()}
    table = pa.table({k: pa.array(v, types.get(k, pa.int64())) for k, v in cols.items()})
    if "srtt_ms" in cols:  # usrsctp's samples (emulation/sctp_status.parquet)
        return schema.describe(table, SCTP_STATUS_COLUMNS, "sctp_status table")
    return schema.describe(table, TCP_INFO_COLUMNS, "tcp_info table")


# usrsctp's SCTP_STATUS (the primary destination's sctp_paddrinfo) and struct sctpstat
# counters as spikelab samples them (docs/emulation.md, "SCTP flows"): the metadata of
# emulation/sctp_status.parquet.
SCTP_STATUS_COLUMNS: dict[str, tuple[str, str]] = {
    "t_ns": ("ns", "time of the sample since the run's start"),
    "flow": ("", "flow index (order of [[flow]] in the scenario)"),
    "state": ("", "sstat_state: the association's SCTP state"),
    "cwnd": ("bytes", "spinfo_cwnd: the primary destination's congestion window"),
    "srtt_ms": ("ms", "spinfo_srtt: the primary destination's smoothed RTT"),
    "rto_ms": ("ms", "spinfo_rto: the primary destination's retransmission timeout"),
    "unackdata": ("chunks", "sstat_unackdata: DATA chunks sent and not yet acknowledged"),
    "penddata": ("chunks", "sstat_penddata: DATA chunks waiting to be sent"),
    "peer_rwnd": ("bytes", "sstat_rwnd: the peer's advertised receive window"),
    "sendretransdata": ("chunks", "sctps_sendretransdata: DATA chunks retransmitted"),
    "sendfastretrans": ("chunks", "sctps_sendfastretrans: DATA chunks fast-retransmitted"),
    "sendheartbeat": ("chunks", "sctps_sendheartbeat: HEARTBEAT chunks sent"),
    "recvdupdata": ("chunks", "sctps_recvdupdata: duplicate DATA chunks received"),
    "timodata": ("timeouts", "sctps_timodata: T3-rtx expiries"),
    "timoheartbeat": ("timeouts", "sctps_timoheartbeat: heartbeat timer expiries"),
    "timoinit": ("timeouts", "sctps_timoinit: T1-init expiries"),
}

# struct tcp_info's fields as spikelab samples them (include/uapi/linux/tcp.h), in the
# kernel's units: the metadata of emulation/tcp_info.parquet.
TCP_INFO_COLUMNS: dict[str, tuple[str, str]] = {
    "t_ns": ("ns", "time of the sample since the run's start"),
    "flow": ("", "flow index (order of [[flow]] in the scenario)"),
    "state": ("", "tcpi_state: the socket's TCP state (1 = ESTABLISHED)"),
    "ca_state": ("", "tcpi_ca_state: 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss"),
    "retransmits": ("timeouts", "tcpi_retransmits: consecutive timeouts of the segment at snd_una"),
    "backoff": ("doublings", "tcpi_backoff: exponential backoff count of the RTO"),
    "rto": ("us", "tcpi_rto: the retransmission timeout"),
    "snd_mss": ("bytes", "tcpi_snd_mss: the sender's MSS"),
    "unacked": ("packets", "tcpi_unacked: packets in flight, not yet acknowledged"),
    "sacked": ("packets", "tcpi_sacked: packets selectively acknowledged"),
    "lost": ("packets", "tcpi_lost: packets marked lost"),
    "retrans": ("packets", "tcpi_retrans: retransmitted packets in flight"),
    "rtt": ("us", "tcpi_rtt: the smoothed RTT"),
    "rttvar": ("us", "tcpi_rttvar: the RTT's mean deviation"),
    "snd_ssthresh": ("packets", "tcpi_snd_ssthresh: slow-start threshold"),
    "snd_cwnd": ("packets", "tcpi_snd_cwnd: congestion window"),
    "total_retrans": ("packets", "tcpi_total_retrans: retransmissions since the start"),
    "bytes_acked": ("bytes", "tcpi_bytes_acked: bytes cumulatively acknowledged"),
    "bytes_sent": ("bytes", "tcpi_bytes_sent: bytes sent, retransmissions included"),
    "bytes_retrans": ("bytes", "tcpi_bytes_retrans: bytes retransmitted"),
    "dsack_dups": ("packets", "tcpi_dsack_dups: duplicate segments reported by DSACK"),
    "data_segs_out": ("packets", "tcpi_data_segs_out: data segments sent"),
    "total_rto": ("timeouts", "tcpi_total_rto: RTO expiries"),
    "total_rto_recoveries": ("episodes", "tcpi_total_rto_recoveries: RTO recovery episodes"),
    "reord_seen": ("events", "tcpi_reord_seen: reorderings detected"),
    "delivered": ("packets", "tcpi_delivered: packets delivered, retransmissions included"),
    "in_flight_bytes": ("bytes", "bytes written to the socket and not yet acknowledged "
                                 "(spikelab's count, not a tcp_info field)"),
}


def read_capture_path(outdir: str | Path) -> Path | None:
    """The capture of an emulated results directory, if it kept one."""
    m = results.read_manifest(outdir)
    rel = (m.get("emulation") or {}).get("capture")
    return Path(outdir) / rel if rel else None
