"""The detector studies: scores recounted from packet traces across a sweep; both studies run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import spikelab
from spikelab.analysis.query import query
from spikelab.cli import main

STUDIES = Path(spikelab.__file__).parent / "studies"
DETECTORS = ("eifel", "dsack", "frto")

# Every enabled detector's verdict rows, with the ground truth of their episode from the
# packet trace of the same run: spurious exactly when an earlier copy (lower tx) of the
# retransmitted segment was delivered.
RECOUNT = """
WITH v AS (
  SELECT t.run_id, replace(t.var, 'verdict_', '') AS det, t.value,
         EXISTS (SELECT 1 FROM packets p
                 WHERE p.run_id = t.run_id AND p.event = 'deliver' AND p.kind = 'data'
                   AND p.seq = t.seq AND p.tx < t.tx) AS spurious
  FROM timeseries t WHERE t.var LIKE 'verdict_%')
SELECT run_id, det,
       count(*) FILTER (WHERE value = 1 AND spurious) AS tp,
       count(*) FILTER (WHERE value = 1 AND NOT spurious) AS fp,
       count(*) FILTER (WHERE value <> 1 AND spurious) AS fn,
       count(*) FILTER (WHERE value <> 1 AND NOT spurious) AS tn
FROM v GROUP BY run_id, det
"""


def test_detector_scores_match_a_recount_from_the_packet_traces(tmp_path):
    """Random losses during the spike (3 seeds × 4 detector sets), packets traced."""
    scenario = STUDIES / "kato-lte-handover" / "scenario.toml"
    sweep = {
        "replications": 3,
        "trace": "packets",
        "params": {"flow.tcp.spurious": {
            "name": "detection", "labels": ["Eifel", "DSACK", "F-RTO", "Eifel+F-RTO"],
            "values": [["eifel"], ["dsack"], ["frto"], ["eifel", "frto"]]}},
    }
    result = spikelab.sweep(scenario, tmp_path / "out", jobs=2, sweep_spec=sweep,
                            overrides=["path.fwd.delay.profile=[[0, 50, 0.0], [10000, 50, 0.0], "
                                       "[10000, 1500, 0.05], [11460, 50, 0.05], "
                                       "[11460, 50, 0.0], [20000, 50, 0.0]]"],
                            progress=False)
    assert result.failed == 0 and result.runs.num_rows == 12
    runs = result.runs.to_pandas().set_index("run_id")
    recount = query(tmp_path / "out", RECOUNT)
    assert not recount.empty
    seen = set()
    for row in recount.itertuples(index=False):
        seen.add((row.run_id, row.det))
        for k in ("tp", "fp", "fn", "tn"):
            assert runs.loc[row.run_id, f"det_{row.det}_{k}"] == getattr(row, k), (row, k)
    # Every enabled detector of every run judged something; disabled ones score nothing.
    for run_id, r in runs.iterrows():
        enabled = {"Eifel": {"eifel"}, "DSACK": {"dsack"}, "F-RTO": {"frto"},
                   "Eifel+F-RTO": {"eifel", "frto"}}[r.detection]
        assert {d for (rid, d) in seen if rid == run_id} == enabled
        for d in set(DETECTORS) - enabled:
            assert r[f"det_{d}_tp"] + r[f"det_{d}_fp"] + r[f"det_{d}_fn"] == 0
    # The losses made the replications differ, and the spike's timeout was spurious in each.
    assert runs.groupby("detection")["bytes_delivered"].nunique().max() > 1
    assert (runs.rto_spurious_true >= 1).all()


@pytest.mark.parametrize(("name", "claims"), [("kato-lte-handover", 8), ("fu-delay-spike", 5)])
def test_the_detector_studies_run_from_the_cli_and_report(tmp_path, name, claims, capsys):
    out = tmp_path / name
    assert main(["study", "run", name, "-o", str(out), "-j", "2", "--replications", "1",
                 "-q"]) == 0
    data = json.loads((out / "claims.json").read_text())
    assert len(data["claims"]) == claims
    assert all(c["status"] in ("holds", "fails") for c in data["claims"]), data["claims"]
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3
    assert "claims hold; report:" in capsys.readouterr().out
