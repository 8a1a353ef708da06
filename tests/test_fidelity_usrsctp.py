"""The fidelity suite against usrsctp (issue 37 item 4): spikelab.fidelity.usrsctp.

Everywhere: the suite's definition (every shipped scenario is one SCTP association on the
``rfc9260`` profile, valid for the simulator and accepted by the emulator's usrsctp mapping,
and the documented examples are its scenarios), the listing and selection, the verdict rules
on synthetic outcomes, the table and report, the metrics measured on simulated runs, and the
refusals. As root with libusrsctp (CI): one short scenario (loss-tsns, 10 s) through
:func:`run`, checked for the table's structure and real numbers.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import spikelab
from spikelab.emulate import kernel
from spikelab.emulate import usrsctp as usrsctp_lib
from spikelab.fidelity import suite
from spikelab.fidelity import usrsctp as fid
from spikelab.store import results

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _namespaces_work() -> bool:
    if not (kernel.has_privileges() and shutil.which("ip") and sys.platform == "linux"):
        return False
    name = f"fidusr-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True,
                          check=False).returncode == 0
    if made:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    return made


as_root_with_usrsctp = pytest.mark.skipif(
    not (_namespaces_work() and usrsctp_lib.available()),
    reason="needs root, network namespaces (ip netns add) and libusrsctp (apt install "
           "libusrsctp2) to emulate against usrsctp; CI runs as root with it installed",
)

COLUMNS = ["scenario", "metric", "label", "judged", "sim", "usrsctp", "diff", "agree", "why",
           "scenario_agrees", "error", "timing_p50_ms", "timing_p99_ms", "timing_max_ms",
           "timing_within_1ms", "usrsctp_version"]

SINGLE = fid.Scenario(name="single", path=Path("single.toml"), destinations=1, rto_max_s=60.0,
                      why={"rto_retx_count": "usrsctp's T3-rtx timer runs on"})
MULTI = fid.Scenario(name="multi", path=Path("multi.toml"), destinations=2, rto_max_s=2.0,
                     why={"failover_s": "known cause"})
BASE = {"goodput_mbps": 5.0, "rto_count": 1.0, "rto_retx_count": 1.0, "fast_retx_count": 10.0,
        "retx_chunks": 40.0, "spurious_chunks": 0.0, "failovers": 0.0, "failover_s": None}


# ---------------------------------------------------------------------- the suite itself


def test_the_suite_holds_the_documented_paths_each_one_rfc9260_sctp_association():
    scs = fid.select()
    names = [s.name for s in scs]
    on_disk = {p.stem for p in fid.SCENARIO_DIR.glob("*.toml")}
    assert set(names) == on_disk, "usrsctp_suite.toml and usrsctp_scenarios/ must agree"
    assert {"lossless", "loss-1pct", "delay-spike", "failover"} <= set(names)
    fid.check(scs)  # raises naming the scenario otherwise
    total = 0.0
    for s in scs:
        assert s.profile == "rfc9260", s.name
        assert 10 <= s.duration_s <= 30, s.name  # emulated in real time: keep each short
        total += s.duration_s
    assert total <= 180  # the whole suite stays a few minutes
    by = {s.name: s for s in scs}
    assert by["failover"].destinations == 2 and by["failover"].rto_max_s == 2.0
    assert by["failover"].primary == 0
    assert all(s.destinations == 1 for s in scs if s.name != "failover")


@pytest.mark.parametrize("name,example", [("loss-1pct", "sctp-loss"),
                                          ("delay-spike", "sctp-delay-spike"),
                                          ("failover", "sctp-failover")])
def test_the_suites_scenarios_are_the_documented_examples(name, example):
    """docs/fidelity.md's table came from the examples; the suite runs the same paths."""
    def resolved(path: Path) -> dict:
        r = spikelab.validate(str(path))
        for key in ("name", "description"):
            r.pop(key, None)
        return r

    assert resolved(fid.SCENARIO_DIR / f"{name}.toml") == resolved(EXAMPLES / f"{example}.toml")
    lossless = spikelab.validate(str(fid.SCENARIO_DIR / "lossless.toml"))
    assert [st["type"] for st in lossless["path"]["fwd"]["stage"]] == ["rate", "delay"]


def test_listing_and_selection():
    lines = fid.listing()
    scs = fid.select()
    fid.check(scs)
    assert len(lines) == len(scs) + 1
    assert lines[-1] == (f"{len(scs)} scenarios, {sum(s.duration_s for s in scs):g} s of "
                         "emulated time")
    assert lines[0].startswith("lossless ") and " 10 s  One SCTP association" in lines[0]
    assert any(line.startswith("failover ") and "20 s" in line for line in lines)
    # --only keeps the suite's order, not the caller's, and drops duplicates.
    assert [s.name for s in fid.select(["failover", "lossless", "failover"])] == \
        ["lossless", "failover"]
    assert fid.listing(["failover"]) == [
        "failover    20 s  Multihomed SCTP, two networks of 5 Mbit/s, the primary fails at "
        "3 s (RTO.Max 2 s), 20 s", "1 scenarios, 20 s of emulated time"]
    with pytest.raises(fid.FidelityError) as exc:
        fid.select(["no-such"])
    text = str(exc.value)
    assert text.startswith("unknown scenario 'no-such' (known: lossless, ")
    assert text.endswith("; spikelab fidelity --against usrsctp --list)") and "\n" not in text


def test_docs_show_the_listing_as_it_is():
    """docs/fidelity.md prints the suite's listing (its doc test runs the Python that prints
    it, but cannot compare a Python block's output)."""
    text = (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8")
    assert "```\n" + "\n".join(fid.listing()) + "\n```" in text


def test_a_bad_suite_file_is_a_one_line_error(tmp_path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "a.toml").write_text('[[flow]]\nprotocol = "sctp"\n')
    bad = {
        "[a]\nevent = \"5s\"\n": "[a]: unknown key 'event' (known: why)",
        "[a.why]\nrto_expiries = \"x\"\n": "[a].why.rto_expiries: unknown metric",
        "[a.why]\nfailover_s = 2\n": "[a].why.failover_s: expected a string",
        "[b]\n": "[b]: no scenario file",
        "a = 1\n": "[a]: expected a table",
    }
    for text, message in bad.items():
        (tmp_path / "suite.toml").write_text(text)
        with pytest.raises(fid.FidelityError) as exc:
            fid.parse_suite(tmp_path / "suite.toml", tmp_path / "scenarios")
        assert message in str(exc.value) and "\n" not in str(exc.value), str(exc.value)


def test_check_refuses_what_the_suite_cannot_compare_naming_the_field(tmp_path):
    cases = {
        "tcp": ("[[flow]]\n", "scenario tcp: flow[0].protocol: the suite against usrsctp "
                              "compares SCTP associations, this flow is tcp"),
        "two": ('[[flow]]\nprotocol = "sctp"\n[[flow]]\nprotocol = "sctp"\n',
                "scenario two: the suite compares one association; it has 2 flows"),
        "jumbo": ('[[flow]]\nprotocol = "sctp"\nsctp = { mtu = 9000 }\n',
                  "scenario jumbo: flow[0].sctp.mtu: "),
        "broken": ('[[flow]]\nprotocol = "sctp"\nsctp = { rto_max = "-1s" }\n',
                   "scenario broken: "),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        with pytest.raises(fid.FidelityError) as exc:
            fid.check([fid.Scenario(name=name, path=path)])
        assert str(exc.value).startswith(message) and "\n" not in str(exc.value), exc.value


# ---------------------------------------------------------------------- verdicts


def test_goodput_agrees_within_10_percent_of_the_simulators():
    assert fid.agrees("goodput_mbps", 5.0, 5.5, SINGLE)
    assert fid.agrees("goodput_mbps", 5.0, 4.5, SINGLE)
    assert not fid.agrees("goodput_mbps", 5.0, 5.51, SINGLE)
    assert not fid.agrees("goodput_mbps", 5.0, 4.49, SINGLE)
    assert not fid.agrees("goodput_mbps", 5.0, None, SINGLE)
    assert fid.agrees("goodput_mbps", 0.0, 0.0, SINGLE)
    assert not fid.agrees("goodput_mbps", 0.0, 0.1, SINGLE)


def test_t3_expiries_with_a_retransmission_must_be_equal_and_all_expiries_are_only_shown():
    assert fid.agrees("rto_retx_count", 1, 1, SINGLE)
    assert not fid.agrees("rto_retx_count", 1, 2, SINGLE)
    assert not fid.agrees("rto_retx_count", 7, 6, MULTI)
    # usrsctp's timer runs on while SACKs advance: 5 expiries on a lossless path, shown only.
    assert fid.agrees("rto_count", 0, 5, SINGLE) is None
    assert fid.agrees("spurious_chunks", 89, 75, SINGLE) is None


def test_repairs_agree_within_one_or_10_percent_whichever_is_more():
    for metric in ("fast_retx_count", "retx_chunks"):
        assert fid.agrees(metric, 0, 1, SINGLE)
        assert not fid.agrees(metric, 0, 2, SINGLE)
        assert fid.agrees(metric, 3, 2, SINGLE) and not fid.agrees(metric, 3, 1, SINGLE)
        assert fid.agrees(metric, 33, 36, SINGLE)  # 10 % of 33 is 3.3
        assert not fid.agrees(metric, 33, 37, SINGLE)
        assert not fid.agrees(metric, 29, 0, MULTI)


def test_failover_both_or_neither_and_its_time_within_rto_max_multihomed_only():
    assert fid.agrees("failovers", 1, 1, MULTI) and fid.agrees("failovers", 1, 2, MULTI)
    assert fid.agrees("failovers", 0, 0, MULTI)
    assert not fid.agrees("failovers", 1, 0, MULTI) and not fid.agrees("failovers", 0, 1, MULTI)
    assert fid.agrees("failover_s", 16.0, 15.0, MULTI)
    assert fid.agrees("failover_s", 16.0, 18.0, MULTI)  # RTO.Max of MULTI: 2 s
    assert not fid.agrees("failover_s", 16.0, 18.01, MULTI)
    assert not fid.agrees("failover_s", 16.0, None, MULTI)
    assert fid.agrees("failover_s", None, None, MULTI)  # neither failed over
    # A single-homed association has nothing to fail over to: shown, not judged.
    assert fid.agrees("failovers", 0, 1, SINGLE) is None
    assert fid.agrees("failover_s", None, 3.0, SINGLE) is None


def test_an_outcome_agrees_when_every_judged_metric_does_and_names_its_misses():
    same = fid.Outcome(scenario=SINGLE, sim=dict(BASE), reference=dict(BASE, rto_count=6.0))
    assert same.agrees and same.misses() == []
    assert same.kernel is same.reference is same.usrsctp  # what the CLI's lines read
    off = fid.Outcome(scenario=SINGLE, sim=dict(BASE),
                      reference=dict(BASE, rto_retx_count=2.0, goodput_mbps=4.0))
    assert not off.agrees and off.misses() == ["goodput_mbps", "rto_retx_count"]
    multi = fid.Outcome(scenario=MULTI, sim=dict(BASE, failovers=1.0, failover_s=16.0),
                        reference=dict(BASE, failovers=1.0, failover_s=18.5))
    assert not multi.agrees and multi.misses() == ["failover_s"]
    failed = fid.Outcome(scenario=SINGLE, error="the receiver did not start")
    assert not failed.agrees
    assert failed.misses() == ["goodput_mbps", "rto_retx_count", "fast_retx_count",
                               "retx_chunks"]


def test_the_table_and_report_show_why_beside_a_miss_only():
    t = {"departures": 9, "p50_ns": 20_000, "p99_ns": 80_000, "max_ns": 240_000,
         "within_1ms": 1.0}
    same = fid.Outcome(scenario=SINGLE, sim=dict(BASE), reference=dict(BASE), timing=t)
    off = fid.Outcome(scenario=SINGLE, sim=dict(BASE), reference=dict(BASE, rto_retx_count=3.0))
    multi = fid.Outcome(scenario=MULTI, sim=dict(BASE, failovers=1.0, failover_s=16.0),
                        reference=dict(BASE, failovers=1.0, failover_s=19.0))
    failed = fid.Outcome(scenario=SINGLE, error="boom")
    outs = [same, off, multi, failed]
    tab = fid.table(outs, "0.9.5.0-2")
    assert tab.column_names == COLUMNS
    rows = tab.to_pylist()
    assert len(rows) == len(outs) * len(fid.METRICS)
    t3 = [r for r in rows if r["metric"] == "rto_retx_count"]
    assert [r["agree"] for r in t3] == [True, False, True, False]
    assert [r["why"] for r in t3] == [None, "usrsctp's T3-rtx timer runs on", None,
                                      "usrsctp's T3-rtx timer runs on"]
    fo = {(r["scenario"], r["metric"]): r for r in rows if r["scenario"] == "multi"}
    assert fo[("multi", "failover_s")]["agree"] is False
    assert fo[("multi", "failover_s")]["why"] == "known cause"
    assert fo[("multi", "failover_s")]["diff"] == pytest.approx(3.0)
    assert fo[("multi", "failover_s")]["judged"] is True
    single_fo = [r for r in rows if r["scenario"] == "single" and r["metric"] == "failovers"]
    assert all(r["judged"] is False and r["agree"] is None for r in single_fo[:2])
    assert rows[0]["timing_p99_ms"] == pytest.approx(0.08)
    assert {r["usrsctp_version"] for r in rows} == {"0.9.5.0-2"}
    meta = {"usrsctp": "0.9.5.0-2", "kernel_release": "6.x", "spikelab": "0", "cpus": 2,
            "created": "now", "wall_s": 90.0, "status": "complete"}
    text = fid.report(outs, meta, planned=["single"] * 3 + ["multi"])
    assert text.startswith("# SCTP fidelity: spikelab's SCTP against usrsctp 0.9.5.0-2\n")
    assert "**1 of 4 scenarios agree (1 could not run)**" in text
    assert ("| T3-rtx expiries with a retransmission | 1 | 3 | +2 | **misses** | "
            "usrsctp's T3-rtx timer runs on |") in text
    assert "| T3-rtx expiries | 1 | 1 | +0 | not judged |  |" in text
    assert "| failovers | 0 | 0 | +0 | not judged (single-homed) |  |" in text
    assert ("| first new DATA to an alternate, s | 16.00 | 19.00 | +3.00 | **misses** | "
            "known cause |") in text
    assert "| multi | differs | 5.000 / 5.000 | 1 (1) / 1 (1) | 10 / 10 | 40 (0) / 40 (0) | " \
           "16.00 / 19.00 | failover_s |" in text
    assert "| single | ERROR | | | | | | boom | |" in text


# ---------------------------------------------------------------------- measuring


def test_the_metrics_of_simulated_runs():
    fo = fid.select(["failover"])
    fid.check(fo)
    res = spikelab.run(str(fo[0].path), trace="packets", plots=False, progress=False)
    m = fid.measure(res, fo[0].primary)
    row = res.runs.to_pylist()[0]
    # Every simulated T3-rtx expiry retransmits (RFC 9260 §6.3.3 E3).
    assert m["rto_retx_count"] == m["rto_count"] == row["rto_count"] >= 6
    assert m["failovers"] == 1
    # The first new DATA to the alternate leaves with the failover, after the expiries that
    # took the primary's error counter past Path.Max.Retrans (5) at RTO.Max 2 s apart.
    assert 3 + 5 * 2 < m["failover_s"] < 20
    assert m["retx_chunks"] == row["retx_segments"] and m["goodput_mbps"] > 1
    tsns = fid.select(["loss-tsns"])
    res = spikelab.run(str(tsns[0].path), trace="packets", plots=False, progress=False)
    m = fid.measure(res, 0)
    # Three chunks dropped once each, each repaired by one fast retransmission.
    assert (m["fast_retx_count"], m["retx_chunks"], m["spurious_chunks"]) == (3, 3, 0)
    assert (m["rto_count"], m["rto_retx_count"], m["failovers"], m["failover_s"]) == \
        (0, 0, 0, None)
    # Without a packets trace the failover time and the expiries' retransmissions are n/a.
    m = fid.measure(spikelab.run(str(tsns[0].path), plots=False, progress=False), 0)
    assert m["failover_s"] is None and m["fast_retx_count"] == 3


def test_an_expiry_counts_as_retransmitting_only_when_its_marker_names_its_own_chunk():
    """An emulated run's ``rto_expiry`` marker has ``seq`` null when the capture shows no
    retransmission after it (usrsctp's timer ran on and marked nothing), and the seq and
    transmission of a fast retransmission that followed within 50 ms when there was one
    (loss-tsns: an expiry at 1.890 s, the fast retransmission of TSN 1200 at 1.931 s);
    neither counts as a T3-rtx expiry with a retransmission. Simulated markers (``tx`` null)
    name their own chunk and all count, even one whose chunk was fast-retransmitted before.
    Other flows' markers are not this flow's. Tables written before nulls held -1 for null:
    they count the same."""
    import types

    import pyarrow as pa

    rows = [  # (flow, var, seq, tx)
        (0, "rto_expiry", None, None),   # retransmitted nothing
        (0, "rto_expiry", 1200, 1),  # labelled with the fast retransmission below
        (0, "fast_retx", 1200, 1),
        (0, "rto_expiry", 17, 2),    # its own retransmission
        (1, "rto_expiry", 12, 1),    # another flow
        (0, "rto_expiry", 40, None),   # simulated: counts
        (0, "fast_retx", 40, None),
    ]
    ts = pa.table({
        "t_ns": pa.array(range(len(rows)), pa.int64()),
        "flow": pa.array([r[0] for r in rows], pa.int32()),
        "var": pa.array([r[1] for r in rows]).dictionary_encode(),
        "value": pa.array([0.0] * len(rows)),
        "seq": pa.array([r[2] for r in rows], pa.int64()),
        "tx": pa.array([r[3] for r in rows], pa.int32()),
    })
    assert fid._t3_with_retransmission(types.SimpleNamespace(timeseries=ts)) == 2
    legacy = ts.set_column(4, "seq", ts["seq"].fill_null(-1)).set_column(
        5, "tx", ts["tx"].fill_null(-1))
    assert fid._t3_with_retransmission(types.SimpleNamespace(timeseries=legacy)) == 2
    assert fid._t3_with_retransmission(types.SimpleNamespace(timeseries=None)) is None


# ---------------------------------------------------------------------- refusals


def test_run_refuses_without_root_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel, "has_privileges", lambda: False)
    with pytest.raises(PermissionError) as exc:
        fid.run(tmp_path / "f")
    assert "root" in str(exc.value) and "\n" not in str(exc.value)
    assert not (tmp_path / "f").exists()  # refused before anything is written


def test_run_refuses_without_libusrsctp_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel, "require_privileges", lambda: None)
    monkeypatch.setattr(usrsctp_lib, "available", lambda: False)
    with pytest.raises(fid.FidelityError) as exc:
        fid.run(tmp_path / "f", only=["lossless"])
    assert str(exc.value) == ("spikelab fidelity --against usrsctp needs libusrsctp, the "
                              "FreeBSD SCTP stack as a library (Debian/Ubuntu: apt install "
                              "libusrsctp2)")
    assert not (tmp_path / "f").exists()


def test_each_suites_rewrite_refuses_the_others_directory(tmp_path):
    with pytest.raises(fid.FidelityError, match="holds no fidelity suite's results"):
        fid.rewrite(tmp_path)
    kern = tmp_path / "kernel"
    kern.mkdir()
    results.write_json({"kind": "fidelity", "status": "complete", "scenarios": []},
                       kern / "manifest.json")
    with pytest.raises(fid.FidelityError) as exc:
        fid.rewrite(kern)
    assert str(exc.value) == f"{kern}: holds the fidelity suite against kernel, not usrsctp"
    usr = tmp_path / "usr"
    usr.mkdir()
    results.write_json({"kind": "fidelity", "against": "usrsctp", "status": "complete",
                        "scenarios": []}, usr / "manifest.json")
    with pytest.raises(fid.FidelityError) as exc:
        suite.rewrite(usr)
    assert str(exc.value) == f"{usr}: holds the fidelity suite against usrsctp, not the " \
                             "kernel's"


# ---------------------------------------------------------------------- as root


@as_root_with_usrsctp
def test_loss_tsns_against_usrsctp(tmp_path):
    """Three DATA chunks dropped once each by TSN: usrsctp repairs each by a fast
    retransmission as the simulated association does, so the scenario agrees on the repairs;
    the goodputs agree within 10 % (measured within 1 % on the lossless path)."""
    out = tmp_path / "fid"
    started, done = [], []
    res = fid.run(out, only=["loss-tsns"], progress=False,
                  on_start=lambda i, n, sc: started.append((i, n, sc.name)),
                  on_done=lambda i, n, o: done.append((i, n, o)))
    assert started == [(1, 1, "loss-tsns")] and [d[:2] for d in done] == [(1, 1)]
    o = done[0][2]
    print(fid.report(res.outcomes, res.manifest))
    assert o is res.outcomes[0] and o.error is None
    # Real numbers: the capture's three retransmissions, each a fast retransmission.
    assert o.reference["retx_chunks"] == 3 and o.reference["spurious_chunks"] == 0
    assert o.reference["fast_retx_count"] == 3
    assert o.reference["rto_retx_count"] == 0  # nothing waited for T3-rtx
    assert o.sim["fast_retx_count"] == 3 and o.sim["rto_count"] == 0
    assert math.isclose(o.reference["goodput_mbps"], o.sim["goodput_mbps"], rel_tol=0.10)
    assert o.agrees, o.misses()
    assert o.timing["within_1ms"] >= 0.9

    # Structure: the table, the report, the manifest, the runs.
    tab = pq.read_table(out / "fidelity.parquet")
    assert tab.column_names == COLUMNS and tab.num_rows == len(fid.METRICS)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "fidelity" and manifest["against"] == "usrsctp"
    assert manifest["status"] == "complete" and manifest["summary"] == "1 of 1 scenarios agree"
    assert manifest["usrsctp"] == tab["usrsctp_version"][0].as_py() != "unknown"
    report = (out / "report.md").read_text()
    assert "**1 of 1 scenarios agree**" in report and "## loss-tsns" in report
    assert (out / "loss-tsns" / "sim" / "runs.parquet").is_file()
    assert (out / "loss-tsns" / "usrsctp" / "emulation" / "capture.pcapng").is_file()

    # The rewrite rebuilds the same table from the runs in the directory (no emulation).
    again = fid.rewrite(out)
    assert again.summary_line() == "1 of 1 scenarios agree"
    assert pq.read_table(out / "fidelity.parquet").equals(tab)
