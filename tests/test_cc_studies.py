"""The congestion-control studies (issue 12, item 6): cc-delay-spike and cc-sharing run from
the CLI, their claims are computed (no query errors), and the numbers behind them agree with
a recount from the runs and timeseries tables."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest
from spikelab.cli import main


@pytest.fixture(scope="module")
def spike_study(tmp_path_factory):
    out = tmp_path_factory.mktemp("cc") / "cc-delay-spike"
    # 2 replications instead of 10: a quarter of the study's runs.
    assert main(["study", "run", "cc-delay-spike", "-o", str(out), "-j", "2",
                 "--replications", "2", "-q"]) == 0
    return out


def claims(out):
    return {c["id"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}


def test_spike_study_claims_are_computed_and_as_reported(spike_study):
    c = claims(spike_study)
    assert set(c) == {"frto-raises-bytes-for-every-algorithm", "westwood-shrugs-off-spike-loss",
                      "cubic-recovers-no-later-than-newreno"}
    assert all(v["status"] in ("holds", "fails") for v in c.values()), c
    # The verdicts docs/studies.md reports (seed 1).
    assert c["frto-raises-bytes-for-every-algorithm"]["status"] == "holds"
    assert c["westwood-shrugs-off-spike-loss"]["status"] == "holds"
    # cubic-recovers-no-later-than-newreno fails with 10 replications (docs/studies.md) but
    # its verdict depends on the loss draws: with 2 it can go either way, so not asserted.
    runs = duckdb.sql(f"SELECT * FROM '{spike_study}/runs.parquet'").df()
    assert set(runs.algo) == {"NewReno", "CUBIC", "BIC", "Westwood+", "Hybla"}
    assert len(runs) == 5 * 2 * 2 * 2
    # Recount the F-RTO gain from the runs table.
    m = runs.groupby(["algo", "loss", "frto"]).bytes_delivered.mean().unstack("frto")
    gain = m["on"] / m["off"]
    nums = c["frto-raises-bytes-for-every-algorithm"]["numbers"]
    assert nums["smallest_gain"] == pytest.approx(gain.min())
    assert nums["cases"] == 10


def test_recovery_time_recounted_from_rcv_nxt(spike_study):
    """The claim's recovery time for one run, recomputed in numpy from rcv_nxt."""
    runs = duckdb.sql(f"SELECT run_id, algo, loss, frto FROM '{spike_study}/runs.parquet'").df()
    per = {}
    for algo in ("CUBIC", "NewReno"):
        ids = runs[(runs.algo == algo) & (runs.loss == "lossless") & (runs.frto == "off")].run_id
        rx = duckdb.sql(f"SELECT t_ns, value FROM '{spike_study}/timeseries.parquet' "
                        f"WHERE run_id = '{ids.iloc[0]}' AND var = 'rcv_nxt' AND flow = 0 "
                        f"ORDER BY t_ns").df()
        t, v = rx.t_ns.to_numpy(), rx.value.to_numpy()

        def at(x):
            i = np.searchsorted(t, x, side="right") - 1
            return v[i] if i >= 0 else 0.0
        rate = (at(10e9) - at(5e9)) / 5
        starts = [11.5e9 + k * 1e8 for k in range(76)]  # windows ending by 19.0 + 1 s
        ok = [s for s in starts if at(s + 1e9) - at(s) >= 0.9 * rate]
        per[algo] = ok[0] / 1e9 - 11.5
    nums = claims(spike_study)["cubic-recovers-no-later-than-newreno"]["numbers"]
    assert nums["cubic_s_lossless"] == pytest.approx(per["CUBIC"], abs=1e-6)
    assert nums["newreno_s_lossless"] == pytest.approx(per["NewReno"], abs=1e-6)


def test_sharing_study_jfi_table_and_claims(tmp_path):
    out = tmp_path / "cc-sharing"
    assert main(["study", "run", "cc-sharing", "-o", str(out), "-j", "2", "-q"]) == 0
    c = claims(out)
    assert c["two-cubic-flows-fair"]["status"] == "holds"
    assert c["cubic-takes-more-than-newreno"]["status"] == "holds"
    runs = duckdb.sql(f"SELECT flows, flow, goodput_bps, jfi FROM '{out}/runs.parquet'").df()
    assert set(runs.groupby("flows").flow.count()) == {1, 2, 4}
    two = runs[runs.flows == "2x CUBIC"].goodput_bps.to_numpy()
    jain = two.sum() ** 2 / (len(two) * (two ** 2).sum())
    assert c["two-cubic-flows-fair"]["numbers"]["jfi"] == pytest.approx(jain, rel=1e-6)
    assert "Jain" in (out / "report.md").read_text()
