"""The ns-2 suite (docs/fidelity.md, "Against ns-2.35"): the Tcl writer's lines for known
inputs, its refusals naming the field, the counts read back from real ns runs, and one
scenario end to end. Tests that run ns-2 skip when it is not installed (apt-get install ns2).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spikelab import _core
from spikelab.fidelity import ns2

ROOT = Path(__file__).resolve().parent.parent
needs_ns = pytest.mark.skipif(shutil.which("ns") is None,
                              reason="ns-2 is not installed (apt-get install ns2)")

BASE = """
[sim]
duration = "5s"
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "10Mbps"
queue = 20
[[path.fwd.stage]]
type = "delay"
{delay}
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "25ms"
[[flow]]
app = {{ type = "bulk" }}
cc = "reno"
[flow.tcp]
profile = "ns2"
mss = 1448
variant = "newreno"
sack = false
timestamps = false
delayed_ack = false
rwnd = "144800B"
initial_window = 2
limited_transmit = true
{tcp}
"""


def scenario_text(delay: str = 'delay = "25ms"', tcp: str = "", extra: str = "") -> str:
    """BASE with ``tcp``'s keys in place of its own and ``extra`` stages after the fwd
    path's."""
    base = BASE
    for ln in tcp.splitlines():
        key = ln.split("=")[0].strip()
        base = "\n".join(b for b in base.splitlines() if b.split("=")[0].strip() != key)
    return base.format(delay=delay, tcp=tcp).replace("[path.rev]", extra + "[path.rev]")


def resolved(delay: str = 'delay = "25ms"', tcp: str = "", extra: str = "") -> dict:
    return json.loads(_core.resolve(scenario_text(delay, tcp, extra), [], "."))


def lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines()]


# ------------------------------------------------------------------------------- the writer


def test_queue_limit_counts_the_packet_on_the_wire_as_ns2s_droptail_does():
    out = lines(ns2.script(resolved()))
    assert "$ns simplex-link $H0 $H1 10000000 0.025 DropTail" in out
    assert "$ns queue-limit $H0 $H1 21" in out          # 20 waiting + 1 on the wire
    # The delay-only reverse path: a link fast enough to add nanoseconds, a queue that
    # never fills.
    assert "$ns simplex-link $H1 $H0 1000000000000 0.025 DropTail" in out
    assert "$ns queue-limit $H1 $H0 1000000" in out


def test_tcp_agent_sink_and_sizes():
    out = lines(ns2.script(resolved()))
    assert "set A(0) [new Agent/TCP/Newreno]" in out
    assert "set S(0) [new Agent/TCPSink]" in out
    assert "$A(0) set packetSize_ 1448" in out        # + 40 bytes of headers by ns-2
    assert "$A(0) set window_ 100" in out              # 144800 B / 1448
    assert "$A(0) set windowInit_ 2" in out
    assert "$A(0) set singledup_ 1" in out             # limited transmit
    assert "$A(0) set syn_ true" in out               # the profile's handshake
    assert "$S(0) set packetSize_ 40" in out
    assert '$ns at 0 "$F(0) start"' in out


@pytest.mark.parametrize(("variant", "sack", "delack", "agent", "sink"), [
    ("reno", "false", "false", "Agent/TCP/Reno", "Agent/TCPSink"),
    ("newreno", "false", "true", "Agent/TCP/Newreno", "Agent/TCPSink/DelAck"),
    ("sack", "true", "false", "Agent/TCP/Sack1", "Agent/TCPSink/Sack1"),
    ("sack", "true", "true", "Agent/TCP/Sack1", "Agent/TCPSink/Sack1/DelAck"),
])
def test_variant_and_receiver_pick_agent_and_sink(variant, sack, delack, agent, sink):
    text = BASE.replace('variant = "newreno"\nsack = false\n', "").replace(
        "delayed_ack = false\n", "").format(
        delay='delay = "25ms"',
        tcp=f'variant = "{variant}"\nsack = {sack}\ndelayed_ack = {delack}\n'
            'delack_timeout = "100ms"')
    out = lines(ns2.script(json.loads(_core.resolve(text, [], "."))))
    assert f"set A(0) [new {agent}]" in out
    assert f"set S(0) [new {sink}]" in out
    assert ("$S(0) set interval_ 0.1" in out) == (delack == "true")


LINUX_TCP = 'variant = "sack"\nsack = true\ndelayed_ack = true\ndelack_timeout = "40ms"'


@pytest.mark.parametrize("algo", ["cubic", "hybla"])
def test_cubic_and_hybla_run_in_agent_tcp_linux_with_its_1_ms_tick(algo):
    sc = json.loads(_core.resolve(scenario_text(tcp=LINUX_TCP).replace(
        'cc = "reno"', f'cc = "{algo}"'), [], "."))
    # The ns2 profile fills the tick select_ca installs (tcpTick_ = 1/JIFFY_RATIO).
    assert sc["flow"][0]["tcp"]["rto"]["granularity"] == "1ms"
    out = lines(ns2.script(sc))
    assert "set A(0) [new Agent/TCP/Linux]" in out
    assert "set S(0) [new Agent/TCPSink/Sack1/DelAck]" in out
    # select_ca after window_ and packetSize_ (it reads them), the tick after select_ca
    # (it sets tcpTick_ to 1 ms itself).
    i = out.index(f"$A(0) select_ca {algo}")
    assert out.index("$A(0) set window_ 100") < i
    assert out.index("$A(0) set packetSize_ 1448") < i
    assert out.index("$A(0) set tcpTick_ 0.001") == i + 1


def test_hybla_rtt0_and_a_ten_ms_tick_are_written_after_select_ca():
    text = scenario_text(tcp=LINUX_TCP + '\nrto = { granularity = "10ms" }').replace(
        'cc = "reno"', 'cc = { algo = "hybla", rtt0 = "50ms" }')
    out = lines(ns2.script(json.loads(_core.resolve(text, [], "."))))
    i = out.index("$A(0) select_ca hybla")
    assert out[i + 1:i + 3] == ["$A(0) set_ca_param hybla rtt0 50", "$A(0) set tcpTick_ 0.01"]


@pytest.mark.parametrize(("tcp", "cc", "message"), [
    ('variant = "newreno"\nsack = false', "cubic",
     (r"^flow\[0\]\.tcp\.variant: ns-2\.35's Agent/TCP/Linux \(cubic\) detects losses from "
      r"SACK blocks only")),
    (LINUX_TCP, '{ algo = "cubic", beta = 0.7 }', (r"^flow\[0\]\.cc\.beta: ns-2\.35's "
                                                  r"tcp_cubic\.c runs at its own values")),
    (LINUX_TCP, '"bic"', r"^flow\[0\]\.cc: the ns2 profile's agents grow as Reno"),
])
def test_the_profile_refuses_what_agent_tcp_linux_lacks(tcp, cc, message):
    text = scenario_text(tcp=tcp).replace('cc = "reno"', f"cc = {cc}" if cc[0] in "{\"" else
                                          f'cc = "{cc}"')
    with pytest.raises(ValueError, match=message):
        _core.resolve(text, [], ".")


def test_delay_steps_are_written_one_transmission_earlier():
    rows = ('profile = [[0, 25, 0], [2000, 25, 0], [2000, 525, 0], [3000, 525, 0], '
            '[3000, 25, 0]]\nreorder = true')
    out = lines(ns2.script(resolved(delay=rows)))
    tx = 1488 * 8 / 10e6                       # a full data packet at 10 Mbit/s: 1.1904 ms
    assert f'$ns at {2 - tx!r} "[[$ns link $H0 $H1] link] set delay_ 0.525"' in out
    assert f'$ns at {3 - tx!r} "[[$ns link $H0 $H1] link] set delay_ 0.025"' in out


def test_nth_drops_count_from_zero_in_ns2s_list_model():
    extra = '[[path.fwd.stage]]\ntype = "loss"\nnth = [5, 40]\n'
    text = BASE.format(delay='delay = "25ms"', tcp="").replace(
        "[path.rev]", extra + "[path.rev]")
    out = lines(ns2.script(json.loads(_core.resolve(text, [], "."))))
    assert "set E(fwd,0,post0) [new ErrorModel/List]" in out
    assert "$E(fwd,0,post0) droplist {4 39}" in out
    assert "$ns link-lossmodel $E(fwd,0,post0) $H0 $H1" in out


NS2_SCTP = ['flow.sctp.profile="ns2"', 'flow.sctp.rto_initial="2s"']   # below its RTO.Max


def test_sctp_multihomed_gets_an_interface_node_per_destination():
    text = (ROOT / "examples" / "sctp-failover.toml").read_text()
    p, script = ns2.plan(json.loads(_core.resolve(text, NS2_SCTP, str(ROOT / "examples"))))
    out = lines(script)
    assert "$ns multihome-add-interface $H0 $I0(1)" in out
    assert "$ns multihome-attach-agent $H0 $A(0)" in out
    assert "$A(0) set-primary-destination $I1(0)" in out
    assert "$A(0) set maxRto_ 2" in out
    # The failing network: a loss rate switched from 0 to 1 at 3 s, at the links' output.
    assert '$ns at 3 "$E(a_fwd,0,post0) set rate_ 1"' in out
    assert "$ns link-lossmodel $E(a_rev,0,post0) $I1(0) $I0(0)" in out
    assert [lk.path for lk in p.bottlenecks] == ["a_fwd", "b_fwd"]


# ------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("tcp", "delay", "extra", "message"), [
    ("", 'profile = [[0, 25, 0], [1000, 100, 0]]', "",
     "path.fwd.stage[1].profile: rows 0-1: a linear ramp"),
    ("", 'profile = [[0, 525, 0], [1000, 525, 0], [1000, 25, 0]]', "",
     "path.fwd.stage[1].reorder: after ns-2's link delay falls"),
    ("", 'profile = [[0, 25, 0.01]]', "", "path.fwd.stage[1].profile: row 0: ns-2's link has "
     "no loss rate"),
    ("", 'delay = "25ms"', '[[path.fwd.stage]]\ntype = "loss"\nmodel = "gilbert_elliott"\n'
     'p = 0.01\nr = 0.3\n', "path.fwd.stage[2].model: Gilbert-Elliott loss"),
    ("", 'delay = "25ms"', '[[path.fwd.stage]]\ntype = "rlc"\n',
     "path.fwd.stage[2].type: ns-2's links have no rlc stage"),
    ("", 'delay = "25ms"', '[[path.fwd.stage]]\ntype = "harq"\nsnr = 7\n',
     "path.fwd.stage[2].type: ns-2's links have no harq stage"),
])
def test_refusals_name_the_field(tcp, delay, extra, message):
    scenario = resolved(delay, tcp, extra)   # spikelab itself takes it
    with pytest.raises(ns2.Refused) as exc:
        ns2.script(scenario)
    assert str(exc.value).startswith(message)
    assert "\n" not in str(exc.value)


def test_the_profile_itself_refuses_what_ns2s_agents_lack():
    # Keys the agents have no equivalent of: the scenario is refused by spikelab itself
    # (profile = "ns2"), not only by --against ns2.
    with pytest.raises(ValueError, match=r"^flow\[0\]\.tcp\.abc: the ns2 profile runs "
                       r"ns-2\.35's Agent/TCP: it grows cwnd per ACK, without byte counting; "
                       r"drop the key"):
        resolved(tcp="abc = true")
    # ns-2's agents do have a timestamps option (timestamps_, paper 002's Eifel needs it).
    assert resolved(tcp="timestamps = true")


def test_another_profile_is_refused_by_the_writer():
    scenario = resolved(tcp='profile = "rfc"\nmss = 1448')
    with pytest.raises(ns2.Refused, match=r'^flow\[0\]\.tcp\.profile: --against ns2 holds '):
        ns2.script(scenario)


def test_refusal_is_one_line_on_the_command_line(tmp_path, monkeypatch):
    import spikelab.fidelity.ns2.suite as suite

    d = tmp_path / "sc"
    d.mkdir()
    (d / "bad.toml").write_text(scenario_text(tcp='tlp = true\nvariant = "sack"\nsack = true'))
    (d / "suite.toml").write_text("[bad]\n")
    monkeypatch.setattr(suite, "SUITE_FILE", d / "suite.toml")
    monkeypatch.setattr(suite, "SCENARIO_DIR", d)
    with pytest.raises(ns2.Ns2SuiteError, match=r"^scenario bad: flow\[0\]\.tcp\.tlp: "):
        ns2.check(ns2.parse_suite(d / "suite.toml", d))


def test_the_suite_lists_at_least_twelve_scenarios_ns2_can_express():
    scenarios = ns2.select()
    assert len(scenarios) >= 12
    ns2.check(scenarios)
    assert {s.protocol for s in scenarios} == {"tcp", "sctp"}


# ------------------------------------------------------------------------------- ns-2 runs


def _planned_with_loss(rule: str):
    """BASE's plan (25 ms, a 1000-packet queue) with a loss stage of ``rule`` after the delay."""
    extra = f'[[path.fwd.stage]]\ntype = "loss"\n{rule}\n'
    text = BASE.format(delay='delay = "25ms"', tcp="").replace(
        "[path.rev]", extra + "[path.rev]").replace('queue = 20', 'queue = 1000')
    return ns2.plan(json.loads(_core.resolve(text, [], ".")))[0]


@needs_ns
def test_counts_of_a_real_run_one_drop_one_fast_retransmit(tmp_path):
    p = _planned_with_loss("nth = [30]")
    got = ns2.run_plan(p, tmp_path).flows[0]
    assert got.timeouts == 0
    assert got.retx == 1
    assert got.fast_retx == 1
    # Window-limited at 100 packets per ~51 ms RTT for 5 s: every packet sent but the ones
    # of the last round trip is delivered; the bottleneck saw every packet the agent sent.
    assert got.sent - 100 <= got.delivered <= got.bottleneck <= got.sent
    # At the end at most the window minus the path's ~43 packets waits in the queue.
    assert got.bottleneck >= got.sent - 100 + 43
    assert (tmp_path / "events.tr").read_text().count("NEWRENO_FAST_RETX") == 1


@needs_ns
def test_agent_tcp_linux_fast_retransmits_are_its_cuts_less_its_timeouts(tmp_path):
    # One drop: Agent/TCP/Linux traces no events; ncwndcuts_ - nrexmit_ counts its Recovery.
    extra = '[[path.fwd.stage]]\ntype = "loss"\nnth = [30]\n'
    text = scenario_text(tcp=LINUX_TCP, extra=extra).replace('cc = "reno"', 'cc = "cubic"') \
        .replace("queue = 20", "queue = 1000")
    p = ns2.plan(json.loads(_core.resolve(text, [], ".")))[0]
    got = ns2.run_plan(p, tmp_path).flows[0]
    assert (got.timeouts, got.retx, got.fast_retx) == (0, 1, 1)
    assert "NEWRENO_FAST_RETX" not in (tmp_path / "events.tr").read_text()


@needs_ns
def test_seqs_drop_the_next_transmission_of_that_sequence_number(tmp_path):
    # Segment 10 (bytes 14480...) twice: the original and its fast retransmission, so
    # recovery needs the timer. It is ns-2's packet 11: the profile's SYN is packet 0.
    p = _planned_with_loss("seqs = [14480, 14480]")
    r = ns2.run_plan(p, tmp_path)
    assert r.runs == 3
    assert len(r.drops["E(fwd,0,post0)"]) == 2
    trace = [ln.split() for ln in (tmp_path / "link-fwd.0.tr").read_text().splitlines()]
    # The first two transmissions of seqno 10 leave the queue but never arrive; the third
    # (after the timeout) does.
    assert sum(1 for w in trace if w[0] == "-" and w[10] == "11") == 3
    assert sum(1 for w in trace if w[0] == "r" and w[10] == "11") == 1
    assert r.flows[0].timeouts == 1


@needs_ns
def test_sctp_failover_counts_t3_expiries_not_heartbeat_ones(tmp_path):
    text = (ROOT / "examples" / "sctp-failover.toml").read_text()
    p, _ = ns2.plan(json.loads(_core.resolve(text, NS2_SCTP, str(ROOT / "examples"))))
    got = ns2.run_plan(p, tmp_path).flows[0]
    # Path.Max.Retrans 5: the sixth T3 expiry on the primary fails it over; the failed
    # primary's heartbeats then time out too (RTO.Max 2 s apart), which timeoutCount_
    # counts (beside the one Reset adds) but a T3-rtx count must not.
    assert got.timeouts == 6
    raw = int((tmp_path / "ns.stdout").read_text().split()[-1])   # timeoutCount_
    assert raw > got.timeouts + 1
    assert got.bottleneck and got.bottleneck > 1000


@needs_ns
def test_one_scenario_end_to_end_writes_table_and_report(tmp_path):
    import pyarrow.parquet as pq

    res = ns2.run(tmp_path / "out", only=["newreno-overflow"])
    o = res.outcomes[0]
    assert o.error is None
    for key in ("delivered", "timeouts", "retx", "fast_retx", "bottleneck"):
        assert o.ns2[key] is not None and o.spikelab[key] is not None
    assert o.ns2["delivered"] > 5000
    tab = pq.read_table(res.dir / "fidelity.parquet").to_pylist()
    assert {r["metric"] for r in tab} == set(ns2.suite.METRIC_KEYS)
    report = (res.dir / "report.md").read_text()
    assert "## newreno-overflow" in report
    assert (res.dir / "newreno-overflow" / "ns2" / "scenario.tcl").is_file()
    manifest = json.loads((res.dir / "manifest.json").read_text())
    assert manifest["against"] == "ns2"


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "spikelab", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


def test_missing_ns_is_a_one_line_error(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))
    env["PYTHONPATH"] = str(ROOT / "python")
    proc = subprocess.run([sys.executable, "-m", "spikelab", "fidelity", "--against", "ns2",
                           "-o", str(tmp_path / "o"), "--only", "reno-overflow"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "spikelab: error: ns-2 is not installed (no ns command): apt-get install ns2"]


def test_list_needs_no_ns():
    proc = _cli("fidelity", "--against", "ns2", "--list")
    assert proc.returncode == 0, proc.stderr
    assert "sctp-failover" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith(f"{len(ns2.select())} scenarios")


def test_usrsctp_list_needs_no_root():
    from spikelab.fidelity import usrsctp

    proc = _cli("fidelity", "--against", "usrsctp", "--list")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines() == usrsctp.listing()


@needs_ns
def test_bench_against_ns2_prints_both_sides():
    proc = _cli("bench", "--against", "ns2", "--repeat", "1", "--set", 'sim.duration="5s"')
    assert proc.returncode == 0, proc.stderr
    rows = [ln.split() for ln in proc.stdout.splitlines() if ln.startswith(("spikelab ", "ns-2"))]
    assert [r[0] for r in rows] == ["spikelab", "ns-2"]
    spk, ns = int(rows[0][-1].replace(",", "")), int(rows[1][-1].replace(",", ""))
    assert abs(spk - ns) <= 0.01 * ns
