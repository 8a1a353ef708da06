"""spikelab fidelity: the kernel-fidelity suite (issue 13 item 6).

Everywhere: the suite's definition (every shipped scenario is valid for the simulator and
accepted by the emulator's kernel mapping), the verdict rule, the report, and the command's
refusals. As root (CI): three of the suite's scenarios (rate-50mbit, spike-3s, tail-loss)
through ``spikelab fidelity``, about 45 s of real time, checked for the table's structure and
for real numbers.
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
from spikelab import cli, fidelity
from spikelab.emulate import kernel
from spikelab.fidelity import suite

ROOT = Path(__file__).resolve().parents[1]


def _namespaces_work() -> bool:
    if not (kernel.has_privileges() and shutil.which("ip") and sys.platform == "linux"):
        return False
    name = f"fidtest-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True,
                          check=False).returncode == 0
    if made:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    return made


as_root = pytest.mark.skipif(
    not _namespaces_work(),
    reason="needs root and network namespaces (ip netns add) to emulate; CI runs as root",
)

COLUMNS = ["scenario", "metric", "label", "judged", "sim", "kernel", "diff", "agree", "why",
           "scenario_agrees", "error", "timing_p50_ms", "timing_p99_ms", "timing_max_ms",
           "timing_within_1ms", "kernel_release"]


# ---------------------------------------------------------------------- the suite itself


def test_the_suite_has_at_least_12_scenarios_each_a_plain_scenario_file():
    scs = fidelity.select()
    assert len(scs) >= 12
    names = {s.name for s in scs}
    on_disk = {p.stem for p in suite.SCENARIO_DIR.glob("*.toml")}
    assert names == on_disk, "suite.toml and scenarios/ must name the same scenarios"
    required = {"paper000-spike", "paper000-spike-loss", "spike-0p3s", "spike-0p6s",
                "spike-1p5s", "spike-3s", "loss-0p1pct", "loss-1pct", "loss-bursty",
                "tail-loss", "reordering", "buffer-deep", "buffer-shallow", "delay-step-up",
                "delay-step-down", "rate-1mbit", "rate-50mbit"}
    assert required <= names


def test_every_scenario_simulates_with_the_linux_profile_and_the_emulator_accepts_it():
    scs = fidelity.select()
    fidelity.check(scs)  # raises naming the scenario otherwise
    import spikelab

    total = 0.0
    for s in scs:
        resolved = spikelab.validate(str(s.path))
        assert resolved["flow"][0]["tcp"].get("profile") == "linux", s.name
        assert 10 <= s.duration_s <= 30, s.name
        total += s.duration_s
    assert total < 15 * 60  # real time of the emulations; the suite must stay under 20 min
    spikes = {s.name: s.event_s for s in scs if s.name.startswith(("spike", "paper000"))}
    assert all(v is not None for v in spikes.values())


def test_the_receivers_acks_are_counted_from_the_packets_trace():
    import spikelab

    path = str(suite.SCENARIO_DIR / "tail-loss.toml")
    full = spikelab.run(path, trace="packets")
    acks = suite.measure(full, None, emulated=False)["acks"]
    pk = full.packets.to_pandas()
    data = pk[(pk.event == "deliver") & (pk.kind == "data") & (pk.len > 0)]
    # Delayed ACK: at least one ACK per two segments delivered, at most one per segment
    # (plus the handshake's and the duplicates' ACKs).
    assert len(data) / 2 <= acks <= len(data) + 20, (acks, len(data))
    assert acks == ((pk.event == "ack") & (pk.flow == 0)).sum()
    # Without a packets trace there is nothing to count: n/a, not 0.
    assert suite.measure(spikelab.run(path), None, emulated=False)["acks"] is None


def test_the_verdict_rule_goodput_within_5_percent_and_equal_counts():
    assert suite.agrees("goodput_mbps", 10.0, 10.49)
    assert not suite.agrees("goodput_mbps", 10.0, 10.51)
    assert suite.agrees("rto_count", 2, 2)
    assert not suite.agrees("undo_count", 1, 0)
    assert not suite.agrees("fast_retx_count", None, 3)
    assert suite.agrees("tlp_count", None, 4) is None  # shown, not judged
    assert suite.agrees("first_rto_s", 0.4, 0.2) is None
    assert suite.agrees("acks", 1129, 1254) is None
    assert suite._diff("acks", 1000, 1100) == pytest.approx(0.10)  # relative, as goodput
    sc = suite.Scenario(name="x", path=Path("x.toml"), why={"rto_count": "known cause"})
    base = {"goodput_mbps": 9.0, "rto_count": 1.0, "fast_retx_count": 2.0, "tlp_count": None,
            "undo_count": 0.0, "first_rto_s": 0.3}
    same = suite.Outcome(scenario=sc, sim=dict(base), kernel=dict(base, tlp_count=3.0))
    assert same.agrees
    off = suite.Outcome(scenario=sc, sim=dict(base), kernel=dict(base, rto_count=2.0))
    assert not off.agrees and off.misses() == ["rto_count"]
    tab = suite.table([same, off])
    assert tab.column_names == COLUMNS
    rows = [r for r in tab.to_pylist() if r["metric"] == "rto_count"]
    assert [r["why"] for r in rows] == [None, "known cause"]  # only beside a row that misses
    text = suite.report([same, off], {"kernel_release": "6.x", "spikelab": "0", "cpus": 2,
                                      "created": "now", "wall_s": 60.0, "status": "complete"})
    assert "**1 of 2 scenarios agree**" in text
    assert "| RTOs | 1 | 2 | +1 | **misses** | known cause |" in text
    assert "| TLPs | n/a | 3 |  | not judged |  |" in text


def test_a_bad_suite_file_is_a_one_line_error(tmp_path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "a.toml").write_text("[[flow]]\n")
    bad = {
        "[a]\nevent = \"soon\"\n": "[a].event: expected a duration",
        "[a]\ncolour = 1\n": "[a]: unknown key 'colour'",
        "[a.why]\ngoodput = \"x\"\n": "[a].why.goodput: unknown metric",
        "[b]\n": "no scenario file",
        "[a]\nsysctls = \"net.x=1\"\n": "[a].sysctls: expected a list",
    }
    for text, message in bad.items():
        (tmp_path / "suite.toml").write_text(text)
        with pytest.raises(fidelity.FidelityError, match=message.replace("[", r"\[")
                           .replace("]", r"\]").replace(".", r"\.")):
            suite.parse_suite(tmp_path / "suite.toml", tmp_path / "scenarios")


def test_cli_lists_the_suite_without_root(capsys):
    assert cli.main(["fidelity", "--list"]) == 0
    out = capsys.readouterr().out
    assert "paper000-spike " in out and "rate-50mbit" in out
    assert out.strip().splitlines()[-1].startswith(f"{len(fidelity.select())} scenarios")


def test_cli_refuses_an_unknown_scenario(capsys):
    assert cli.main(["fidelity", "--only", "no-such", "-o", "unused"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spikelab: error: unknown scenario 'no-such'") and "\n" not in err


def test_cli_refuses_without_root_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(kernel, "has_privileges", lambda: False)
    monkeypatch.setattr(kernel.os, "geteuid", lambda: 1000)
    assert cli.main(["fidelity", "-o", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "root" in err and "Traceback" not in err
    assert not (tmp_path / "f").exists()  # refused before anything is written


def test_cli_refuses_when_the_emulator_cannot_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(kernel, "require_privileges", lambda: None)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert cli.main(["fidelity", "-o", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("spikelab: error: spikelab fidelity needs the ip command (iproute2) for the "
                   "emulator's network namespaces")


def test_rewrite_refuses_a_directory_without_a_suite(tmp_path, capsys):
    assert cli.main(["fidelity", "--rewrite", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"spikelab: error: {tmp_path}: holds no fidelity suite's results"


# ---------------------------------------------------------------------- as root


@as_root
def test_three_scenarios_through_the_kernel(tmp_path, capsys):
    out = tmp_path / "fid"
    code = cli.main(["fidelity", "-o", str(out), "-q", "--only", "rate-50mbit", "spike-3s",
                     "tail-loss"])
    printed = capsys.readouterr().out
    print(printed)
    print((out / "report.md").read_text())
    assert code == 0
    assert "of 3 scenarios agree" in printed

    # Structure: one row per scenario x metric, the columns, the report, the manifest.
    tab = pq.read_table(out / "fidelity.parquet")
    assert tab.column_names == COLUMNS
    rows = tab.to_pylist()
    assert len(rows) == 3 * len(fidelity.METRICS)
    assert [r["scenario"] for r in rows[::len(fidelity.METRICS)]] == \
        ["spike-3s", "tail-loss", "rate-50mbit"]  # the suite's order
    assert all(r["error"] is None for r in rows)
    get = {(r["scenario"], r["metric"]): r for r in rows}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "fidelity" and manifest["status"] == "complete"
    assert manifest["total"] == 3
    assert manifest["agree"] == len({r["scenario"] for r in rows if r["scenario_agrees"]})
    report = (out / "report.md").read_text()
    assert f"**{manifest['summary']}**" in report
    for name in ("spike-3s", "tail-loss", "rate-50mbit"):
        assert f"## {name}" in report
        assert (out / name / "sim" / "runs.parquet").is_file()
        assert (out / name / "kernel" / "emulation" / "capture.pcapng").is_file()
        # The emulator's timing error is beside every row, and it kept time.
        r = get[(name, "goodput_mbps")]
        assert r["timing_p99_ms"] is not None and r["timing_within_1ms"] >= 0.9, r

    # Real numbers.
    fast = get[("rate-50mbit", "goodput_mbps")]
    assert 45 < fast["sim"] < 50.5
    assert math.isclose(fast["kernel"], fast["sim"], rel_tol=0.05), fast
    assert fast["agree"] is True
    spike = {m: get[("spike-3s", m)] for m in suite.METRIC_KEYS}
    assert spike["rto_count"]["sim"] >= 1
    assert spike["rto_count"]["kernel"] >= 1
    # Both time out during the 3 s spike (it starts at 5 s), not after it.
    assert 0 < spike["first_rto_s"]["sim"] < 3.0
    assert 0 < spike["first_rto_s"]["kernel"] < 3.0
    tail = {m: get[("tail-loss", m)] for m in suite.METRIC_KEYS}
    assert tail["tlp_count"]["kernel"] >= 1  # the kernel probes the lost tail
    assert tail["goodput_mbps"]["kernel"] > 1 and tail["goodput_mbps"]["sim"] > 1

    # --rewrite rebuilds the same table from the runs in the directory (no emulation).
    before = tab.drop(["why"])
    assert cli.main(["fidelity", "--rewrite", "-o", str(out)]) == 0
    assert pq.read_table(out / "fidelity.parquet").drop(["why"]).equals(before)
    assert (out / "report.md").read_text().startswith(report.splitlines()[0])
