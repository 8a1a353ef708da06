"""Issue acceptance checks, end to end through the CLI and the Parquet files it writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "lte-handover.toml"


def spikelab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "spikelab", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture(scope="module")
def lte_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lte") / "out"
    r = spikelab("run", str(EXAMPLE), "-o", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    return out


def test_spike_packets_leave_between_11500_and_11510_ms(lte_run):
    p = pq.read_table(lte_run / "packets.parquet").to_pandas()
    p = p[(p.path == "fwd") & (p.stage == "delay") & (p.kind == "data")]
    enter = p[p.event == "stage_enter"].set_index("pkt").t_ns
    leave = p[p.event.isin(["stage_exit", "drop"])].set_index("pkt").t_ns
    spike = enter[(enter >= 10_000_000_000) & (enter <= 11_460_000_000)]
    assert len(spike) > 20
    out = leave.loc[spike.index]
    assert out.min() >= 11_500_000_000 and out.max() <= 11_510_000_000


def test_reno_spurious_timeout_drops_cwnd_to_one_segment(lte_run):
    runs = pq.read_table(lte_run / "runs.parquet").to_pandas()
    assert runs.rto_spurious_true[0] >= 1
    ts = pq.read_table(lte_run / "timeseries.parquet").to_pandas()
    rto = ts[(ts["var"] == "rto_expiry") & (ts.value == 1.0)].t_ns.iloc[0]
    assert 10_000_000_000 <= rto < 11_500_000_000
    cwnd = ts[(ts["var"] == "cwnd") & (ts.t_ns <= rto)].value.iloc[-1]
    assert cwnd == runs.mss[0]


def test_figures_written(lte_run):
    for name in ("seqack_flow0", "cwnd_flow0", "rtt_flow0"):
        for ext in ("png", "svg"):
            assert (lte_run / "figures" / f"{name}.{ext}").stat().st_size > 1000


MALFORMED = {
    "unknown key": ("[[flow]]\n[flow.tcp]\nmsss = 1448\n", "flow[0].tcp", "msss"),
    "wrong type": ("[[flow]]\n[flow.tcp]\nmss = \"large\"\n", "flow[0].tcp.mss", "invalid type"),
    "negative rate": (
        "[path.fwd]\n[[path.fwd.stage]]\ntype = \"rate\"\nrate = \"-10Mbps\"\n[[flow]]\n",
        "path.fwd.stage[0].rate",
        "positive",
    ),
    "unsorted profile": (
        "[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\n"
        "profile = [[0, 50, 0], [10000, 50, 0], [5000, 1500, 0]]\n[[flow]]\n",
        "path.fwd.stage[0].profile",
        "non-decreasing",
    ),
    "missing trace file": (
        "[path.fwd]\n[[path.fwd.stage]]\ntype = \"delay\"\ntrace = \"no-such.csv\"\n[[flow]]\n",
        "path.fwd.stage[0].trace",
        "cannot read",
    ),
    "negative rto": ("[[flow]]\n[flow.tcp.rto]\nmin = -1\n", "flow[0].tcp.rto.min", "must not be negative"),
    "unknown algorithm": ("[[flow]]\ncc = \"vegas\"\n", "flow[0].cc", "unknown congestion control"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_malformed_scenarios_give_one_line_naming_the_field(tmp_path, case, command):
    text, field, words = MALFORMED[case]
    f = tmp_path / "bad.toml"
    f.write_text(text)
    args = [command, str(f)] + (["-o", str(tmp_path / "out")] if command == "run" else [])
    r = spikelab(*args)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert field in lines[0] and words in lines[0], lines[0]
    if command == "run":
        # Nothing is left half-written.
        assert not (tmp_path / "out" / "manifest.json").exists()
        assert not list((tmp_path / "out").glob("*.parquet")) if (tmp_path / "out").exists() else True
