"""Study decicco-umts (paper 003): parses with its 75 cells and 23 claims (paper claims carry
the paper's section and value; the ones issue 38 lists as holding by construction are not of
kind paper); the full study (4,500 runs, most of 100 s) runs from the CLI within its 4-minute
budget and its report holds every target of MODELS.md section 4 with the paper's value, the
model's mean and 95 % interval; each failing paper claim names an explanation that holds; the
time-in-timeouts claim's numbers equal those of direct ``spikelab.run`` calls."""

from __future__ import annotations

import itertools
import json
import shutil
import time
from pathlib import Path

import pytest
import spikelab
from spikelab.analysis.query import query
from spikelab.cli import main
from spikelab.study import parse

STUDY = Path(spikelab.__file__).parent / "studies" / "decicco-umts"
PAPER = {"one-flow-far-from-saturating", "utilisation-32-45-84", "utilisation-rises-with-flows",
         "three-tcps-within-15pct", "file-goodput-flat-in-size", "westwood-least-queueing",
         "time-in-timeouts-35s"}
MODEL = {"timeouts-cost-a-lone-flow-a-fifth", "short-transfers-get-the-bearer",
         "lone-flow-rto-short", "downlink-goodput-in-band", "downlink-rtt-in-band",
         "downlink-rtt-sigma-in-band", "downlink-queueing-delay-in-band",
         "downlink-timeouts-in-band", "downlink-retransmissions-in-band", "jfi-near-paper",
         "uplink-timeouts-below-half", "uplink-goodput-in-band"}
BEYOND = {"linux-takes-the-conclusions-further", "linux-keeps-the-tcp-comparisons",
          "detectors-recover-capacity",
          "buffer-does-not-avoid-lone-flow-timeouts"}
CLAIMS = PAPER | MODEL | BEYOND
# Issue 38: hold by construction (the uplink rate is Table 2's, the bearer rate came from the
# four-flow goodput, the stall rate from Table 5's timeouts), so never of kind paper.
BY_CONSTRUCTION = {"uplink-goodput-in-band", "downlink-goodput-in-band", "downlink-timeouts-in-band"}


def test_study_parses():
    study = parse(STUDY)
    assert study.name == "decicco-umts"
    assert {c.id for c in study.claims} == CLAIMS
    kinds = {c.id: c.kind for c in study.claims}
    assert {i for i, k in kinds.items() if k == "paper"} == PAPER
    assert {i for i, k in kinds.items() if k == "beyond"} == BEYOND
    assert not BY_CONSTRUCTION & PAPER
    for c in study.claims:
        if c.kind == "paper":
            assert c.section and c.paper_value is not None and c.band, c.id
    assert study.sweep["replications"] == 60
    assert study.sweep["mode"] == "zip"
    cells = study.sweep["params"]["flow"]["labels"]
    assert len(cells) == 75
    assert sum(c.startswith("down ") and c.endswith(("x1", "x2", "x4")) for c in cells) == 9
    assert sum(c.startswith("up ") for c in cells) == 9
    assert sum(c.endswith("F-RTO") for c in cells) == sum(c.endswith("Eifel") for c in cells) == 9
    assert sum(c.startswith("buffer ") for c in cells) == 12
    assert sum(c.startswith("no stalls ") for c in cells) == 3
    assert sum(c.startswith("linux ") for c in cells) == 12


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    out = tmp_path_factory.mktemp("decicco") / "out"
    t0 = time.monotonic()
    assert main(["study", "run", str(STUDY), "-o", str(out), "-j", "2", "-q"]) == 0
    return out, time.monotonic() - t0


def _numbers(out: Path, claim: str) -> dict:
    data = json.loads((out / "claims.json").read_text())
    return next(c["numbers"] for c in data["claims"] if c["id"] == claim)


def test_full_study_runs_in_budget_and_reports_every_target(full):
    out, secs = full
    assert secs < 4 * 60
    data = json.loads((out / "claims.json").read_text())
    assert {c["id"] for c in data["claims"]} == CLAIMS
    assert all(c["status"] in ("holds", "fails", "undecided") for c in data["claims"]), data["claims"]
    n = query(out, "SELECT count(DISTINCT run_id) AS runs, count(*) FILTER (WHERE status <> 'ok') AS bad FROM runs")
    assert n["runs"][0] == 75 * 60 and n["bad"][0] == 0
    report = (out / "report.md").read_text()
    assert "Targets: paper 003 against the model" in report
    # 54 downlink targets (Tables 1, 3, 5, 6 for nine cells: goodput, E[RTT], sigma(RTT),
    # E[t_q], timeouts, retransmissions), 6 JFI ones (2 and 4 flows) and 3 uplink ones, each
    # with the paper's value, the mean, its interval and whether it is in band.
    rows = [line for line in report.splitlines() if line.startswith(("| down |", "| up |"))
            and ("True" in line or "False" in line)]
    assert len(rows) == 63
    assert len(list((out / "figures").glob("*.png"))) == 11
    assert (out / "figures" / "calibration.png").is_file()
    # The calibration figure's bars (mean deviation in bands per target) say in band exactly
    # where the targets table does.
    views = parse(out / "study").view_pairs()
    both = query(out, """
        WITH d AS (SELECT link, flows, tcp, metric, avg(deviation) AS dev FROM deviations
                   GROUP BY ALL)
        SELECT t.in_band, d.dev FROM targets t JOIN d ON t.link = d.link AND t.n = d.flows
          AND d.tcp = CASE t.cc WHEN 'newreno' THEN 'NewReno' WHEN 'bic' THEN 'BIC'
                                ELSE 'Westwood+' END
          AND d.metric = CASE t.metric WHEN 'goodput_kbps' THEN 'goodput' WHEN 'rtt_ms'
            THEN 'E[RTT]' WHEN 'rtt_sd_ms' THEN 'sigma(RTT)' WHEN 'tq_ms' THEN 'E[t_q]'
            WHEN 'timeouts_per_100s' THEN 'timeouts' WHEN 'retx_pct' THEN 'retransmissions'
            ELSE 'JFI' END""", views)
    assert len(both) == 63
    assert ((both.dev.abs() <= 1 + 1e-9) == both.in_band).all()
    # The intervals are over runs, not flows (a run's flows share the bearer): recomputed from
    # runs.parquet for the four-flow NewReno goodput, 1.96 standard errors of the 60 per-run
    # means; the per-flow formula would be wider here (the flows of a run split one bearer).
    runs = query(out, "SELECT run_id, goodput_bps FROM runs WHERE cell = 'down NewReno x4'")
    per_run = runs.groupby("run_id").goodput_bps.mean() / 1e3
    assert len(per_run) == 60
    half = 1.96 * per_run.std(ddof=1) / len(per_run) ** 0.5
    t = query(out, "SELECT spikelab, lo95, hi95 FROM targets WHERE link = 'down' AND cc = "
              "'newreno' AND n = 4 AND metric = 'goodput_kbps'", views)
    assert t.spikelab[0] == pytest.approx(per_run.mean(), rel=1e-9)
    assert t.hi95[0] - t.spikelab[0] == pytest.approx(half, rel=1e-9)
    per_flow = 1.96 * (runs.goodput_bps / 1e3).std(ddof=1) / len(runs) ** 0.5
    assert per_flow > half
    # The verdicts (docs/studies.md, decicco-umts, has the numbers).
    status = {c["id"]: c["status"] for c in data["claims"]}
    holds = {i for i, s in status.items() if s == "holds"}
    assert {"utilisation-rises-with-flows", "three-tcps-within-15pct", "westwood-least-queueing",
            "timeouts-cost-a-lone-flow-a-fifth", "short-transfers-get-the-bearer",
            "lone-flow-rto-short", "uplink-goodput-in-band", "uplink-timeouts-below-half",
            "linux-takes-the-conclusions-further", "linux-keeps-the-tcp-comparisons",
            "buffer-does-not-avoid-lone-flow-timeouts"} <= holds, status
    # Table 1's lone flow and utilisations and section 5's 35 s are not reproduced, decidedly;
    # Fig. 6's flatness is undecided (NewReno's 50 KB mean sits on the band's edge). Each
    # names an explanation that holds.
    assert {i: status[i] for i in ("one-flow-far-from-saturating", "utilisation-32-45-84",
                                   "time-in-timeouts-35s")} == dict.fromkeys(
        ("one-flow-far-from-saturating", "utilisation-32-45-84", "time-in-timeouts-35s"), "fails")
    assert status["file-goodput-flat-in-size"] == "undecided"
    explained = {c.id: c.explained_by for c in parse(STUDY).claims if c.kind == "paper"}
    for cid, s in status.items():
        if cid in PAPER and s != "holds":
            assert status[explained[cid]] == "holds", cid
    # The Fig. 6 test's numbers: a 50 KB download rarely meets a timeout and gets more than
    # Table 1's lone flow (139 kbit/s) in the model's bearer.
    fifty = query(out, "SELECT cc, avg(goodput_bps) / 1e3 AS g, avg((rto_count > 0)::INTEGER) AS p "
                       "FROM runs WHERE cell LIKE 'file 50 KB%' GROUP BY cc")
    assert (fifty.g > 139).all() and (fifty.p <= 0.15).all(), fifty


def test_claims_are_bit_identical_when_evaluated_again(full, tmp_path):
    """Same results, same numbers: the claims' means over 1,800 runs come out to the last digit
    each time the report is rewritten (DuckDB aggregates on one thread, so its partial sums
    are added in one order)."""
    out, _ = full
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    first = (copy / "claims.json").read_bytes()
    for _ in range(3):
        assert main(["study", "report", str(copy)]) in (0, 1)
        assert (copy / "claims.json").read_bytes() == first


def test_the_buffer_cells_run_on_their_buffer(full):
    """The buffer sweep's cells reach the preset: four flows keep the RNC buffer full, so their
    mean RTT rises with every step of the buffer (15, 25, 35, 45, 60, 90 KB); at 45 KB, the
    preset's default, the cells are the paper's own four-flow cell run again."""
    out, _ = full
    rows = query(out, """
        SELECT CAST(regexp_extract(cell, 'buffer ([0-9]+) KB', 1) AS INTEGER) AS kb,
               avg(rtt_mean_s) AS rtt
        FROM runs WHERE status = 'ok' AND cell LIKE 'buffer % x4' GROUP BY kb ORDER BY kb""")
    assert rows["kb"].tolist() == [15, 25, 35, 45, 60, 90]
    rtts = rows["rtt"].tolist()
    assert all(a < b for a, b in itertools.pairwise(rtts)), rtts
    # From 15 to 90 KB the buffer holds 75 KB more, 1.8 s at 330 kbit/s when full; the flows'
    # sawtooth keeps it below full (1.2 s more measured).
    assert 0.6 < rtts[-1] - rtts[0] < 1.8, rtts

    same = query(out, """
        SELECT cell, avg(rtt_mean_s) AS rtt, avg(goodput_bps) AS g FROM runs
        WHERE cell IN ('buffer 45 KB NewReno x4', 'down NewReno x4') GROUP BY cell""")
    assert same["rtt"].nunique() == 1 and same["g"].nunique() == 1, same


def test_time_in_timeouts_equals_direct_runs(full):
    out, _ = full
    rows = query(out, "SELECT seed, rto_wait_s, timeout_time_s, rto_count FROM runs "
                      "WHERE cell = 'down NewReno x1' ORDER BY seed LIMIT 3")
    for seed, wait, tt, rtos in zip(*(rows[c] for c in rows.columns), strict=True):
        res = spikelab.run(STUDY / "scenario.toml", seed=int(seed), trace="summary", plots=False,
                           progress=False)
        row = res.runs.to_pylist()[0]
        assert row["rto_count"] == rtos
        assert row["rto_wait_s"] == pytest.approx(wait, rel=1e-12)
        assert row["timeout_time_s"] == pytest.approx(tt, rel=1e-12)
    n = _numbers(out, "time-in-timeouts-35s")
    all_rows = query(out, "WITH r AS (SELECT *, count(*) OVER (PARTITION BY run_id) AS n FROM runs "
                          "WHERE cell LIKE 'down %' AND cell NOT LIKE '%F-RTO' AND cell NOT LIKE '%Eifel') "
                          "SELECT avg(rto_wait_s) AS w FROM r WHERE n = 1")
    assert n["rto_wait_s"] == pytest.approx(all_rows["w"][0], rel=1e-9)


def test_a_calibration_override_reaches_every_cell(tmp_path, capsys):
    """--set preset.umts-downlink.KNOB changes the preset wherever a cell expands it (a cell's
    own knob still wins) and the report says so: without stalls the downlink's timeouts all but
    vanish (Table 5's ~5 per 100 s come from them), with a larger buffer its RTT grows."""
    out = tmp_path / "cal"
    assert main(["study", "run", str(STUDY), "-o", str(out), "-j", "2", "-q",
                 "--replications", "3", "--set", "preset.umts-downlink.stall_rate=0",
                 "--set", "preset.umts-downlink.buffer=60KB"]) in (0, 4)
    capsys.readouterr()
    cells = query(out, "SELECT cell, avg(rto_count) AS rto, avg(rtt_mean_s) AS rtt FROM runs "
                       "WHERE link = 'down' AND cell LIKE 'down % x1' GROUP BY cell")
    assert len(cells) == 3
    assert (cells.rto < 1.0).all(), cells
    base = tmp_path / "base"
    assert main(["study", "run", str(STUDY), "-o", str(base), "-j", "2", "-q",
                 "--replications", "3"]) in (0, 4)
    before = query(base, "SELECT avg(rto_count) AS rto, avg(rtt_mean_s) AS rtt FROM runs "
                         "WHERE cell LIKE 'down % x1'")
    assert before.rto[0] > 3.0
    assert cells.rtt.mean() > before.rtt[0]
    report = (out / "report.md").read_text()
    assert "overrides: preset.umts-downlink.stall_rate=0; preset.umts-downlink.buffer" in report
