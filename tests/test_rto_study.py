"""``spikelab rto-study``: paper 004 §6.2's analytic alpha/beta study over an RTT trace (the
Rust ``spikelab_sctp::rto_study`` through ``spikelab._core``), its tables, figures and errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from spikelab import _core
from spikelab.analysis import rto_study

PNG = b"\x89PNG\r\n\x1a\n"
GRID = [(a / 10, b / 10) for a in range(11) for b in range(11)]


def spikelab(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "spikelab", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("spikelab: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def rfc4960_rto_ms(rtt_ms, alpha, beta, rto_min=1.0, rto_max=60.0):
    """An independent RFC 4960 §6.3.1 estimator: the RTO (ms) after each sample."""
    out, srtt, rttvar = [], None, None
    for r in rtt_ms:
        if srtt is None:
            srtt, rttvar = r, r / 2  # C2
        else:
            rttvar = (1 - beta) * rttvar + beta * abs(srtt - r)  # C3, the old SRTT
            srtt = (1 - alpha) * srtt + alpha * r
        out.append(min(max(srtt + 4 * rttvar, rto_min * 1e3), rto_max * 1e3))
    return out


def delay_and_spurious(rtt_ms, rto_ms):
    delay = sum((o - r) / 1e3 for r, o in zip(rtt_ms, rto_ms, strict=True) if o > r)
    return delay, sum(o < r for r, o in zip(rtt_ms, rto_ms, strict=True))


@pytest.fixture(scope="module")
def walkaway_run(tmp_path_factory):
    """``spikelab rto-study wlan-walkaway -o out`` once: (process, output directory)."""
    cwd = tmp_path_factory.mktemp("rto")
    proc = spikelab("rto-study", "wlan-walkaway", "-o", "out", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc, cwd / "out"


def test_cli_on_wlan_walkaway_ranks_121_pairs_once_each(walkaway_run):
    proc, out = walkaway_run
    table = pq.read_table(out / "rto_study.parquet")
    assert table.column_names == list(rto_study.COLUMNS)
    assert table.num_rows == 121
    assert sorted(table["rank"].to_pylist()) == list(range(1, 122))
    assert list(zip(table["alpha"].to_pylist(), table["beta"].to_pylist(), strict=True)) == GRID
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["kind"] == "rto-study" and manifest["status"] == "complete"
    assert manifest["trace"]["source"] == "wlan-walkaway"
    assert manifest["trace"]["samples"] == 221
    assert manifest["parameters"]["rto_min"] == 1.0
    listed = {f["path"] for f in manifest["files"]}
    assert {"rto_study.parquet", "rto_study.csv", "rto_series.parquet"} <= listed
    # The printed ranking: top 10, an ellipsis, bottom 3.
    lines = proc.stdout.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.split()[:3] == ["rank", "alpha", "beta"])
    ranks = [ln.split()[0] for ln in lines[head + 1:head + 15]]
    assert ranks == [*map(str, range(1, 11)), "…", "119", "120", "121"]


def test_figures_are_written_and_listed(walkaway_run):
    _, out = walkaway_run
    manifest = json.loads((out / "manifest.json").read_text())
    figures = sorted(f["path"] for f in manifest["files"] if f["path"].startswith("figures/"))
    assert figures == sorted(f"figures/{s}.png" for s in
                             ("rto_delay_sum", "rto_spurious", "rto_distance", "rto_grades",
                              "rto_series"))
    for name in figures:
        data = (out / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 5000, name


def test_no_plots_writes_tables_only(tmp_path):
    proc = spikelab("rto-study", "wlan-walkaway", "-o", "out", "--no-plots", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert (tmp_path / "out" / "rto_study.parquet").is_file()
    assert not (tmp_path / "out" / "figures").exists()


def test_default_pair_rto_at_100_and_110_s_matches_paper_004_section_5():
    rtt = _core.walkaway_rtt_ms(221)
    rto = _core.rto_series(rtt, 0.125, 0.25)
    assert rtt[100] == 7.0
    assert rto[100] == 1000.0  # SRTT + 4·RTTVAR ≈ 422 ms, raised to RTO.Min
    assert abs(rto[110] - 2802.0) <= 0.02 * 2802.0, rto[110]


@pytest.mark.parametrize("noise", [0.0, 0.2])
def test_delay_sum_and_spurious_seconds_match_an_independent_estimator(noise):
    trace = rto_study.load_trace("wlan-walkaway", noise=noise, seed=3 if noise else None)
    table = rto_study.study(trace).to_pydict()
    checked = 0
    for k, pair in enumerate(GRID):
        if pair not in {(0.0, 0.0), (0.1, 0.1), (0.2, 0.7), (0.5, 0.3), (1.0, 0.0), (0.0, 1.0)}:
            continue
        want_delay, want_spurious = delay_and_spurious(trace.rtt_ms,
                                                       rfc4960_rto_ms(trace.rtt_ms, *pair))
        assert math.isclose(table["delay_sum_s"][k], want_delay, rel_tol=1e-9, abs_tol=1e-6), pair
        assert table["spurious_s"][k] == want_spurious, pair
        checked += 1
    assert checked == 6


def test_grades_follow_the_metrics_and_ranks_follow_the_distance():
    table = rto_study.study(rto_study.load_trace("wlan-walkaway", noise=0.2, seed=5)).to_pydict()
    n = len(table["rank"])
    for metric, grade in (("delay_sum_s", "grade_delay"), ("spurious_s", "grade_spurious")):
        for i in range(n):
            assert 1 <= table[grade][i] <= n
            for j in range(n):
                if table[metric][i] < table[metric][j]:
                    assert table[grade][i] < table[grade][j], (metric, i, j)
                elif table[metric][i] == table[metric][j]:
                    assert table[grade][i] == table[grade][j], (metric, i, j)
        assert min(table[grade]) == 1
    for i in range(n):
        assert math.isclose(table["distance"][i],
                            math.hypot(table["grade_delay"][i], table["grade_spurious"][i]))
    by_rank = sorted(range(n), key=lambda i: table["rank"][i])
    assert all(table["distance"][a] <= table["distance"][b]
               for a, b in zip(by_rank, by_rank[1:], strict=False))


def _write_skeleton_csv(path: Path) -> list[float]:
    rtt = _core.walkaway_rtt_ms(221)
    path.write_text("time_s,rtt_ms\n" + "".join(f"{t},{r!r}\n" for t, r in enumerate(rtt)))
    return rtt


def test_a_time_s_rtt_ms_trace_gives_the_presets_table(tmp_path, walkaway_run):
    _write_skeleton_csv(tmp_path / "walk.csv")
    proc = spikelab("rto-study", "walk.csv", "-o", "out", "--no-plots", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = pq.read_table(tmp_path / "out" / "rto_study.parquet")
    assert got.equals(pq.read_table(walkaway_run[1] / "rto_study.parquet"))
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["trace"]["format"] == "time_s,rtt_ms" and manifest["trace"]["rows"] == 221


def test_a_delay_trace_is_resampled_at_whole_seconds_linearly(tmp_path):
    # Rows every 2 s (and a step at 6 s); the loss column is ignored.
    (tmp_path / "delay.csv").write_text(
        "# a delay stage's trace\ntime_ms,delay_ms,loss\n"
        "1000,100,0\n3000,300,0.1\n6000,600,0\n6000,50,0\n8000,250,0.5\n")
    trace = rto_study.load_trace(str(tmp_path / "delay.csv"))
    # t = 0 before the first row: its value; 1..8 interpolated; at the step the later row.
    assert trace.rtt_ms == [100.0, 100.0, 200.0, 300.0, 400.0, 500.0, 50.0, 150.0, 250.0]
    assert trace.format == "time_ms,delay_ms,loss" and trace.rows == 5
    longer = rto_study.load_trace(str(tmp_path / "delay.csv"), seconds=11)
    assert longer.rtt_ms[9:] == [250.0, 250.0]  # the last value holds
    proc = spikelab("rto-study", "delay.csv", "-o", "out", "--no-plots", "--alphas", "0:1:0.5",
                    "--betas", "0.25,0.5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = pq.read_table(tmp_path / "out" / "rto_study.parquet")
    assert table.num_rows == 6
    assert sorted(table["rank"].to_pylist()) == list(range(1, 7))


def test_same_inputs_give_identical_tables(tmp_path):
    for out in ("a", "b"):
        proc = spikelab("rto-study", "wlan-walkaway", "-o", out, "--noise", "0.2", "--seed", "4",
                        "--no-plots", "-q", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    for name in ("rto_study.parquet", "rto_study.csv", "rto_series.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    other = rto_study.study(rto_study.load_trace("wlan-walkaway", noise=0.2, seed=5))
    assert not other.equals(pq.read_table(tmp_path / "a" / "rto_study.parquet"))


@pytest.mark.parametrize("files, args, fragments", [
    ({}, ["no-such.csv"], ["no-such.csv", "no such file"]),
    ({"t.csv": "time,rtt\n0,5\n"}, ["t.csv"], ["t.csv", "header", "time_s,rtt_ms"]),
    ({"t.csv": "time_s,rtt_ms\n0,5\n1,fast\n"}, ["t.csv"], ["t.csv line 3", "1,fast"]),
    ({"t.csv": "time_s,rtt_ms\n0,5\n1,-3\n"}, ["t.csv"], ["t.csv line 3", "rtt_ms", "-3"]),
    ({"t.csv": "time_ms,delay_ms,loss\n"}, ["t.csv"], ["t.csv", "no samples"]),
    ({"t.csv": ""}, ["t.csv"], ["t.csv", "empty"]),
    ({"t.csv": "time_s,rtt_ms\n2,5\n1,6\n"}, ["t.csv"], ["t.csv line 3", "must not decrease"]),
    ({}, ["wlan-walkaway", "--alphas", "1.5"], ["--alphas", "[0, 1]", "1.5"]),
    ({}, ["wlan-walkaway", "--betas", "0:1"], ["--betas", "START:STOP:STEP"]),
    ({}, ["wlan-walkaway", "--rto-min", "2s", "--rto-max", "1s"], ["rto-max", "rto-min"]),
    ({}, ["wlan-walkaway", "--rto-min", "soon"], ["--rto-min", "soon"]),
    ({}, ["wlan-walkaway", "--rto-max", "0s", "--rto-min", "0s"], ["rto-max", "> 0", "0 s"]),
    ({}, ["wlan-walkaway", "--rto-initial", "0s", "--rto-min", "0s"],
     ["rto-initial", "> 0", "0 s"]),
    ({}, ["wlan-walkaway", "--rto-initial", "100s"], ["rto-initial", "rto-max (60 s)", "100 s"]),
    ({"t.csv": "time_s,rtt_ms\n0,5\n"}, ["t.csv", "--noise", "0.2"], ["--noise", "preset"]),
])
def test_bad_input_is_one_line_with_exit_code_2(tmp_path, files, args, fragments):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    proc = spikelab("rto-study", *args, "-o", "out", cwd=tmp_path)
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_another_kind_of_result_is_not_overwritten_without_force(tmp_path):
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"kind": "sweep"}))
    assert_one_line_error(spikelab("rto-study", "wlan-walkaway", "-o", out, "--no-plots"),
                          "sweep", "--force")
    proc = spikelab("rto-study", "wlan-walkaway", "-o", out, "--no-plots", "--force", "-q")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "manifest.json").read_text())["kind"] == "rto-study"


def test_rto_study_help_loads_nothing_heavy(tmp_path):
    probe = ("import contextlib, io, sys\nfrom spikelab.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    try:\n        main(['rto-study', '--help'])\n"
             "    except SystemExit:\n        pass\n"
             "print(sorted({m.split('.')[0] for m in sys.modules}))\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=True)
    tops = proc.stdout.strip().splitlines()[-1]
    for heavy in ("matplotlib", "pandas", "pyarrow"):
        assert f"'{heavy}'" not in tops


# ------------------------------------------------------------- --simulate (paper 004 §6.3)

SCTP_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sctp-walkaway.toml"


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory):
    """``spikelab rto-study wlan-walkaway --simulate examples/sctp-walkaway.toml -o out``."""
    cwd = tmp_path_factory.mktemp("rto-sim")
    proc = spikelab("rto-study", "wlan-walkaway", "--simulate", SCTP_EXAMPLE, "-o", "out",
                    cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc, cwd / "out"


def test_simulate_ranks_121_pairs_once_each_beside_the_analytical_table(simulated_run):
    proc, out = simulated_run
    table = pq.read_table(out / "rto_study.parquet")
    assert table.column_names == [*rto_study.COLUMNS, *rto_study.SIM_COLUMNS]
    assert sorted(table["sim_rank"].to_pylist()) == list(range(1, 122))
    assert list(zip(table["alpha"].to_pylist(), table["beta"].to_pylist(), strict=True)) == GRID
    cols = table.to_pydict()
    by_rank = sorted(range(121), key=lambda k: cols["sim_rank"][k])
    data = [cols["sim_bytes_delivered"][k] for k in by_rank]
    assert data == sorted(data, reverse=True)  # rank 1 = most data
    assert all(d > 0 for d in data)
    csv = (out / "rto_study.csv").read_text().splitlines()
    assert "sim_bytes_delivered" in csv[0] and "sim_rank" in csv[0] and len(csv) == 122
    assert "Spearman's rank correlation, analytical vs simulated:" in proc.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["simulation"]["runs"] == 122
    figures = {f["path"] for f in manifest["files"]}
    assert {"figures/rto_sim_bytes.png", "figures/rto_sim_ranks.png"} <= figures
    for name in ("figures/rto_sim_bytes.png", "figures/rto_sim_ranks.png"):
        assert (out / name).read_bytes().startswith(PNG)


def test_simulated_bytes_equal_a_direct_run_with_the_same_overrides(simulated_run):
    import spikelab as api

    _, out = simulated_run
    table = pq.read_table(out / "rto_study.parquet").to_pydict()
    manifest = json.loads((out / "manifest.json").read_text())["simulation"]
    direct = api.run(str(SCTP_EXAMPLE), trace="summary", progress=False,
                     overrides=["flow[0].sctp.rto_alpha=0.125", "flow[0].sctp.rto_beta=0.25"])
    row = direct.summary.iloc[0]
    assert manifest["default_bytes_delivered"] == int(row["bytes_delivered"])
    assert manifest["default_time_to_failover_s"] == pytest.approx(row["time_to_failover_s"])
    k = GRID.index((0.7, 0.7))
    again = api.run(str(SCTP_EXAMPLE), trace="summary", progress=False,
                    overrides=["flow[0].sctp.rto_alpha=0.7", "flow[0].sctp.rto_beta=0.7"])
    assert table["sim_bytes_delivered"][k] == int(again.summary.iloc[0]["bytes_delivered"])
    assert table["sim_failovers"][k] == int(again.summary.iloc[0]["failovers"])


def test_spearman_is_in_range_and_equals_an_independent_computation(simulated_run):
    import numpy as np

    _, out = simulated_run
    frame = pq.read_table(out / "rto_study.parquet").to_pandas()
    rho = json.loads((out / "manifest.json").read_text())["simulation"]["spearman"]
    assert -1.0 <= rho <= 1.0
    x = frame["distance"].rank(method="average")
    y = frame["sim_bytes_delivered"].rank(method="average", ascending=False)
    assert rho == pytest.approx(float(np.corrcoef(x, y)[0, 1]), abs=1e-12)
    assert rto_study.rank_correlation(pq.read_table(out / "rto_study.parquet")) == \
        pytest.approx(rho, abs=1e-12)


def test_average_ranks_share_ties_and_spearman_of_a_ranking_with_itself_is_one():
    assert rto_study.average_ranks([3.0, 1.0, 1.0, 7.0]) == [3.0, 1.5, 1.5, 4.0]
    assert rto_study.average_ranks([3.0, 1.0, 1.0, 7.0], descending=True) == [2.0, 3.5, 3.5, 1.0]
    assert rto_study.spearman([1, 2, 3, 4], [1, 2, 3, 4]) == pytest.approx(1.0)
    assert rto_study.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(rto_study.spearman([1, 1, 1], [1, 2, 3]))


@pytest.mark.parametrize("files, scenario, fragments", [
    ({}, "missing.toml", ["missing.toml", "no such file", "--simulate"]),
    ({"tcp.toml": "[[flow]]\n"}, "tcp.toml", ["tcp.toml", "flow[0] is tcp", "SCTP"]),
    ({"bad.toml": "x =\n"}, "bad.toml", ["bad.toml", "TOML"]),
])
def test_a_bad_simulate_scenario_is_one_line(tmp_path, files, scenario, fragments):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    proc = spikelab("rto-study", "wlan-walkaway", "--simulate", scenario, "-o", "out",
                    cwd=tmp_path)
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "out" / "manifest.json").exists()
