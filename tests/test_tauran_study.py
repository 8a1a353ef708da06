"""Study tauran-leo-delack (paper 001): parses; a reduced copy runs from the CLI and writes its
report; two claims' numbers equal those recomputed from direct ``spikelab.run`` calls."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import spikelab
from spikelab.analysis.query import query
from spikelab.cli import main
from spikelab.study import parse

STUDY = Path(spikelab.__file__).parent / "studies" / "tauran-leo-delack"
CLAIMS = {"no-buffer-goodput-low", "buffer-beats-no-buffer", "buffer-delack-lowers-goodput",
          "buffer-delack-more-rtos", "delack-helps-newreno-without-buffer",
          "delack-no-impact-cubic-without-buffer", "hybla-best",
          "hybla-delack-falls-up-to-40pct", "cubic-retransmits-more"}


def test_study_parses():
    study = parse(STUDY)
    assert study.name == "tauran-leo-delack"
    assert {c.id for c in study.claims} == CLAIMS
    assert study.sweep["replications"] == 5
    assert {p["name"] for p in study.sweep["params"].values()} == {"snr_db", "tcp", "delack", "buffer"}


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """The study at 7 and 13 dB, 2 replications, 120 s runs (48 runs)."""
    base = tmp_path_factory.mktemp("tauran")
    src = base / "tauran-leo-delack"
    shutil.copytree(STUDY, src)
    text = (src / "study.toml").read_text(encoding="utf-8")
    text = text.replace("values = [7, 9, 11, 13]", "values = [7, 13]")
    text = text.replace("replications = 5", "replications = 2")
    (src / "study.toml").write_text(text, encoding="utf-8")
    scen = (src / "scenario.toml").read_text(encoding="utf-8").replace('"600s"', '"120s"')
    (src / "scenario.toml").write_text(scen, encoding="utf-8")
    out = base / "out"
    assert main(["study", "run", str(src), "-o", str(out), "-j", "2", "-q"]) == 0
    return src, out


def test_reduced_study_writes_its_report(reduced):
    _, out = reduced
    for name in ("report.html", "report.md", "claims.json"):
        assert (out / name).is_file(), name
    data = json.loads((out / "claims.json").read_text())
    assert {c["id"] for c in data["claims"]} == CLAIMS
    assert all(c["status"] in ("holds", "fails") for c in data["claims"]), data["claims"]
    assert len(list((out / "figures").glob("*.png"))) == 8
    n = query(out, "SELECT count(*) AS n, count(DISTINCT goodput_bps) AS d FROM runs WHERE status = 'ok'")
    assert n["n"][0] == 48
    assert n["d"][0] == 48  # replications differ (the HARQ channel follows the run's seed)


def _direct(src: Path, out: Path, where: str) -> list[dict]:
    """Re-run the chosen runs of the sweep alone with spikelab.run (same seed and parameters)."""
    rows = query(out, f"SELECT seed, snr_db, tcp, delack, buffer FROM runs WHERE {where}")
    cc = {"NewReno": "newreno", "CUBIC": "cubic", "Hybla": "hybla"}
    got = []
    for seed, snr, tcp, delack, buffer in zip(*(rows[c] for c in rows.columns), strict=True):
        res = spikelab.run(src / "scenario.toml", seed=int(seed), trace="summary", plots=False,
                           progress=False,
                           overrides=[f"path.fwd.harq.snr={int(snr)}", f"flow.cc={cc[tcp]}",
                                      f"flow.tcp.delayed_ack={str(bool(delack)).lower()}",
                                      f"path.fwd.harq.reorder_buffer={str(bool(buffer)).lower()}"])
        row = res.runs.to_pylist()[0]
        got.append(dict(row, snr_db=int(snr), tcp=tcp, delack=bool(delack)))
    return got


def _numbers(out: Path, claim: str) -> dict:
    data = json.loads((out / "claims.json").read_text())
    return next(c["numbers"] for c in data["claims"] if c["id"] == claim)


def test_hybla_fall_equals_direct_runs(reduced):
    src, out = reduced
    rows = _direct(src, out, "tcp = 'Hybla' AND NOT buffer")
    falls = []
    for snr in (7, 13):
        on = [r["goodput_bps"] for r in rows if r["snr_db"] == snr and r["delack"]]
        off = [r["goodput_bps"] for r in rows if r["snr_db"] == snr and not r["delack"]]
        falls.append(1 - (sum(on) / len(on)) / (sum(off) / len(off)))
    n = _numbers(out, "hybla-delack-falls-up-to-40pct")
    assert n["max_fall"] == pytest.approx(max(falls), rel=1e-9)
    assert n["min_fall"] == pytest.approx(min(falls), rel=1e-9)


def test_table1_retransmissions_equal_direct_runs(reduced):
    src, out = reduced
    rows = _direct(src, out, "snr_db = 7 AND delack AND NOT buffer AND tcp IN ('NewReno', 'CUBIC')")
    mean = {t: sum(r["retx_segments"] for r in rows if r["tcp"] == t) / 2 for t in ("NewReno", "CUBIC")}
    n = _numbers(out, "cubic-retransmits-more")
    assert n["newreno_7db"] == pytest.approx(mean["NewReno"], rel=1e-9)
    assert n["cubic_7db"] == pytest.approx(mean["CUBIC"], rel=1e-9)


def _first_cwnd_above(rundir: Path, segments: int) -> float:
    """When the flow's cwnd first exceeds `segments` full segments (seconds)."""
    t = query(rundir, f"SELECT min(t_ns) / 1e9 AS t FROM timeseries, (SELECT mss FROM runs) "
                      f"WHERE var = 'cwnd' AND value > {segments} * mss")
    return float(t["t"][0])


def test_fig6_cwnd_growth_with_and_without_delayed_ack(reduced):
    """Paper 001 Fig. 6: the report re-runs NewReno and CUBIC on a lossless link with and without
    delayed ACK and draws both in one figure. Slow start grows cwnd by one segment per ACK (no
    byte counting here, RFC 5681), so ACKing every second segment makes it grow 1.5x per RTT
    instead of 2x: reaching 200 segments from 10 takes log(20)/log(1.5) = 7.4 RTTs instead of
    log(20)/log(2) = 4.3, about 1.7x as long."""
    _, out = reduced
    data = json.loads((out / "claims.json").read_text())
    compares = [r for r in data["run_figures"] if r["run_id"].startswith("delack")]
    assert all("snr_db = 13" in r["label"] and "buffer = True" in r["label"] for r in compares)
    assert {r["label"].split(", ")[1] for r in compares} == {"tcp = NewReno", "tcp = CUBIC"}
    for r in compares:
        assert len(r["figures"]) == 1 and (out / r["figures"][0]).is_file(), r
    report = (out / "report.md").read_text()
    assert "path.fwd.harq.snr=40" in report
    singles = [r for r in data["run_figures"] if not r["run_id"].startswith("delack")]
    assert len(singles) == 4
    times = {}
    for r in singles:
        rundir = out / "runs-figures" / r["run_id"]
        got = query(rundir, "SELECT drops_total, bytes_delivered FROM runs")
        assert got["drops_total"][0] == 0, r  # lossless, as the paper's Fig. 6
        delack = "delack = True" in r["label"]
        tcp = "NewReno" if "NewReno" in r["label"] else "CUBIC"
        times[tcp, delack] = _first_cwnd_above(rundir, 200)
    for tcp in ("NewReno", "CUBIC"):
        ratio = times[tcp, True] / times[tcp, False]
        assert 1.4 < ratio < 2.0, (tcp, times)
