"""The ``fallon-sctp-rto`` study (paper 004 §6.3): it parses, runs from the CLI, writes its
report, each claim has the verdict docs/studies.md states, and its numbers match a direct
recomputation (runs of the scenario through the API, and paper 004 §5's failover arithmetic on
a run's timeseries)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
import spikelab
from spikelab import study

NAME = "fallon-sctp-rto"
SCENARIO = study.BUNDLED / NAME / "scenario.toml"
EXPECTED = {  # docs/studies.md, "fallon-sctp-rto"
    "failover-after-six-backed-off-timeouts": "holds",
    "best-pairs-deliver-much-more-than-default": "holds",
    "best-pairs-have-large-beta": "fails",
    "failover-time-against-data": "holds",
    "analytical-top-is-not-simulated-top": "holds",
}
WALK = 'path.wlan_fwd.walk.preset={{name="wlan-walkaway", noise=0.2, seed={}}}'


def pair(alpha, beta):
    return [f"flow[0].sctp.rto_alpha={alpha}", f"flow[0].sctp.rto_beta={beta}"]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    """The whole study (2,880 runs, about 50 s on 2 cores) from the command line."""
    cwd = tmp_path_factory.mktemp("fallon")
    proc = subprocess.run([sys.executable, "-m", "spikelab", "study", "run", NAME, "-o", "out"],
                          cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return cwd / "out"


def test_the_study_parses_with_121_pairs_plus_the_default_and_five_walks():
    s = study.find(NAME)
    params = s.sweep["params"]
    alphas = params["flow.sctp.rto_alpha"]["values"]
    betas = params["flow.sctp.rto_beta"]["values"]
    assert sorted(set(alphas) - {0.125}) == [k / 10 for k in range(11)]
    assert sorted(set(betas) - {0.25}) == [k / 10 for k in range(11)]
    assert len(params["path.wlan_fwd.walk.preset"]["values"]) == 5
    assert s.sweep["replications"] == 4  # run seeds 1-4: the primary's loss draws
    assert {c.id for c in s.claims} == set(EXPECTED)
    assert spikelab.validate(str(SCENARIO))["flow"][0]["protocol"] == "sctp"


def test_report_files_exist_and_claims_are_as_documented(out):
    for name in ("report.html", "report.md", "claims.json", "runs.parquet"):
        assert (out / name).is_file(), name
    for stem in ("data-heatmap", "failover-heatmap", "failover-vs-beta"):
        assert (out / "figures" / f"{stem}.png").is_file(), stem
    claims = json.loads((out / "claims.json").read_text())
    assert {c["id"]: c["status"] for c in claims["claims"]} == EXPECTED
    destinations = [f for r in claims["run_figures"] for f in r["figures"]
                    if "destinations_flow0" in f]
    # default, best (0/0) and the paper's best 0.7/0.7, walk 1, run seed 3
    assert len(destinations) == 3
    assert len(pq.read_table(out / "runs.parquet")) == 12 * 12 * 5 * 4


def test_claim_numbers_match_a_recomputation(out):
    """alpha and beta are labelled '0.125' (three decimals, the report's number rule), so
    they are text in the runs table."""
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    assert (runs["status"] == "ok").all()
    grid = runs[(runs.alpha != "0.125") & (runs.beta != "0.250")]
    default = runs[(runs.alpha == "0.125") & (runs.beta == "0.250")]
    means = grid.groupby(["alpha", "beta"])["bytes_delivered"].mean()
    best = means.idxmax()
    numbers = {c["id"]: c["numbers"]
               for c in json.loads((out / "claims.json").read_text())["claims"]}
    gain = numbers["best-pairs-deliver-much-more-than-default"]
    assert (gain["best_alpha"], gain["best_beta"]) == best
    assert gain["best_bytes_delivered"] == pytest.approx(means.max())
    assert gain["default_bytes_delivered"] == pytest.approx(default.bytes_delivered.mean())
    assert gain["gain_pct"] == pytest.approx(100 * (means.max() / default.bytes_delivered.mean()
                                                    - 1))
    failed = runs[runs.failovers > 0]
    six = numbers["failover-after-six-backed-off-timeouts"]
    assert six["runs_with_failover"] == len(failed)
    assert six["min_time_to_failover_s"] == pytest.approx(failed.time_to_failover_s.min())


def test_one_pair_of_the_sweep_equals_a_direct_run(out):
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    for (alpha, beta, walk, seed) in ((0.125, 0.25, 1, 3), (0.7, 0.7, 3, 2)):
        row = runs[(runs.alpha == f"{alpha:.3f}") & (runs.beta == f"{beta:.3f}")
                   & (runs.walk == walk) & (runs.seed == seed)].iloc[0]
        direct = spikelab.run(str(SCENARIO), seed=int(row["seed"]), trace="summary",
                              progress=False, overrides=[*pair(alpha, beta), WALK.format(walk)])
        got = direct.summary.iloc[0]
        assert int(got["bytes_delivered"]) == int(row["bytes_delivered"])
        assert int(got["failovers"]) == int(row["failovers"])


def backed_off_sum(rto0, rto_max=60.0, timeouts=6):
    return sum(min(rto0 * 2**k, rto_max) for k in range(timeouts))


@pytest.mark.parametrize(("overrides", "seed"), [
    (pair(0.125, 0.25), 3), ([*pair(0.125, 0.25), WALK.format(4)], 1), (pair(0.0, 0.0), 1),
    (pair(0.7, 0.7), 3)])
def test_time_to_failover_is_the_sum_of_six_backed_off_rtos(overrides, seed):
    """Paper 004 §5: the failover comes Path.Max.Retrans + 1 = 6 T3 expiries after the timer
    that began them started, and takes the RTO at that start doubled five times, capped at
    RTO.Max. The restarted timers wait for data to leave on the primary (docs/models.md
    'Failover timing'): tolerance 0.5 s."""
    res = spikelab.run(str(SCENARIO), seed=seed, trace="timeseries", progress=False,
                       overrides=overrides)
    row = res.summary.iloc[0]
    ts = res.to_pandas("timeseries")
    assert row["failovers"] >= 1
    t_fail = ts[ts["var"] == "failover"].t_ns.min() / 1e9
    expiries = np.sort(ts[(ts["var"] == "rto_expiry") & (ts.dest == 0)
                          & (ts.t_ns <= t_fail * 1e9)].t_ns.to_numpy()) / 1e9
    last_six = expiries[-6:]
    assert last_six[-1] == pytest.approx(t_fail)  # the sixth expiry declares it inactive
    errors = ts[(ts["var"] == "dest_errors") & (ts.dest == 0)].sort_values("t_ns")
    # The error counter climbs 1 … 6 over those six expiries without being cleared.
    during = errors[(errors.t_ns >= last_six[0] * 1e9) & (errors.t_ns <= t_fail * 1e9)]
    assert during.value.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    rto = ts[(ts["var"] == "dest_rto") & (ts.dest == 0)].sort_values("t_ns")
    rto0 = rto[rto.t_ns < last_six[0] * 1e9].value.iloc[-1]  # armed for the first of the six
    assert 1.0 <= rto0 <= 60.0
    assert row["time_to_failover_s"] == pytest.approx(backed_off_sum(rto0), abs=0.5)
    assert t_fail - (last_six[0] - rto0) == pytest.approx(row["time_to_failover_s"], abs=0.5)
