"""The detector studies: scores recounted from packet traces across a sweep; both studies run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import spikelab
from spikelab.analysis.query import query
from spikelab.cli import main

STUDIES = Path(spikelab.__file__).parent / "studies"
DETECTORS = ("eifel", "dsack", "frto")
# kato-lte-handover's 'rfc' sender (spikelab's RFC detectors on a SACK sender) in place of the
# scenario's own, the paper's Linux sender.
KATO_RFC_SENDER = ('flow.tcp={ variant = "sack", mss = 1448, timestamps = true, sack = true, '
                   'dsack = true, delayed_ack = true, spurious = [], response = "undo", '
                   'rack = true, tlp = true, prr = true, rto = { estimator = "linux" } }')

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
                            overrides=[KATO_RFC_SENDER,
                                       ("path.fwd.delay.profile=[[0, 50, 0.0], [10000, 50, 0.0], "
                                        "[10000, 1500, 0.05], [11460, 50, 0.05], "
                                        "[11460, 50, 0.0], [20000, 50, 0.0]]")],
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
            # A detector that is off scores nothing: null, not 0 (docs/results.md).
            assert all(math.isnan(r[f"det_{d}_{k}"]) for k in ("tp", "fp", "fn", "tn"))
    # The losses made the replications differ, and each detector met a spurious timeout (a
    # seed whose losses hit the timeout's retransmission has none).
    assert runs.groupby("detection")["bytes_delivered"].nunique().max() > 1
    assert (runs.groupby("detection")["rto_spurious_true"].max() >= 1).all()
    assert (runs.rto_spurious_true >= 1).sum() >= 8


@pytest.mark.parametrize(("name", "claims"), [("kato-lte-handover", 15)])
def test_the_detector_studies_run_from_the_cli_and_report(tmp_path, name, claims, capsys):
    out = tmp_path / name
    assert main(["study", "run", name, "-o", str(out), "-j", "2", "--replications", "1",
                 "-q"]) == 0
    data = json.loads((out / "claims.json").read_text())
    assert len(data["claims"]) == claims
    assert all(c["status"] in ("holds", "fails", "undecided")  # one replication: no interval
               for c in data["claims"]), data["claims"]
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3
    assert "claims hold; report:" in capsys.readouterr().out


@pytest.mark.parametrize(("name", "claims", "paper"), [("fu-delay-spike", 12, 7),
                                                      ("fu-delay-spike-sctp", 10, 6)])
def test_the_fu_studies_run_from_the_cli_and_report(tmp_path, name, claims, paper, capsys):
    """Two replications (an override the report names): the claims evaluate, some may be
    undecided on two runs, and a paper claim that then fails unexplained gives exit 4."""
    out = tmp_path / name
    code = main(["study", "run", name, "-o", str(out), "-j", "2", "--replications", "2", "-q"])
    assert code in (0, 4)
    data = json.loads((out / "claims.json").read_text())
    assert len(data["claims"]) == claims
    assert sum(c["kind"] == "paper" for c in data["claims"]) == paper
    assert all(c["status"] in ("holds", "fails", "undecided") for c in data["claims"]), \
        data["claims"]
    md = (out / "report.md").read_text()
    assert md.startswith("paper results reproduced: ") and "replications" in md.splitlines()[0]
    assert (out / "report.html").read_text().count("data:image/png;base64,") >= 3
    assert "claims hold; report:" in capsys.readouterr().out


@pytest.fixture(scope="module")
def study_claims(tmp_path_factory):
    """Each study run as shipped (kato: 420 runs, fu: 5120, fu-sctp: 1536), once per module:
    claim id -> claim."""
    out = {}
    for name in ("kato-lte-handover", "fu-delay-spike", "fu-delay-spike-sctp"):
        d = tmp_path_factory.mktemp(name)
        assert main(["study", "run", name, "-o", str(d), "-j", "2", "-q"]) == 0
        data = json.loads((d / "claims.json").read_text())
        out.update({c["id"]: c for c in data["claims"]})
    return out


def _verdict(claims, cid, status):
    c = claims[cid]
    assert c["status"] == status, (cid, c["numbers"], c.get("error"))
    return c["numbers"]


def test_kato_claims_as_paper_000_states_them(study_claims):
    # The paper's setup (Linux Reno without SACK): with loss Eifel is worst, by a timeout
    # after the spike in the seeds that lose a segment in it; DSACK and F-RTO do not stall.
    n = _verdict(study_claims, "eifel-worst-under-loss", "holds")
    assert n["dsack_ci_low"] > 0 and n["frto_ci_low"] > 0
    assert 2e6 < n["dsack_minus_eifel_bytes"] < 4e6
    n = _verdict(study_claims, "fig11-dsack-frto-best", "holds")
    assert min(n["dsack_bytes"], n["frto_bytes"]) > n["eifel_ci_high"]
    n = _verdict(study_claims, "eifel-long-gap-under-loss", "holds")
    assert n["eifel_stall_max_s"] > 4 and 3 <= n["seeds_with_gap"] <= 8
    # Eifel+DSACK and DSACK+F-RTO are their members run for run (no SACK: tcp_dsack inert);
    # Eifel+F-RTO keeps Eifel's gap.
    n = _verdict(study_claims, "pairs-do-not-increase-throughput", "holds")
    assert n["ed_over_eifel"] == n["df_over_frto"] == 1.0
    assert n["ef_over_frto"] < 0.95 and n["ef_over_eifel"] == pytest.approx(1.0, abs=0.01)
    n = _verdict(study_claims, "spike-only-methods-similar", "holds")
    assert 0.98 < n["worst_ratio"] < 1.0
    n = _verdict(study_claims, "dsack-poor-in-lossless-spike", "holds")
    assert n["dsack_undos"] == 0 and n["dsack_runs"] == 10
    # §4.1's cut after Eifel's undo: the paper's kernel (3.10-4.x) moderated cwnd to the flight
    # + 3 when the Loss state, which a timestamp undo keeps without SACK, reached high_seq;
    # nothing else cuts it (two duplicate ACKs, TCP Small Queues, no loss probes without SACK).
    n = _verdict(study_claims, "eifel-cwnd-halved-after-undo", "holds")
    assert n["min_reductions"] == n["max_reductions"] == 1 and n["moderate_cwnd_cuts"] == 10
    n = _verdict(study_claims, "paper-sender-cut-is-the-moderate-clamp", "holds")
    assert n["other_reductions"] == 0 and n["max_dupacks"] == 2
    n = _verdict(study_claims, "no-sack-timestamp-undo-waits-for-a-timeout", "holds")
    assert n["paper_eifel_seeds_with_timeout"] >= 4 and n["linux_eifel_seeds_with_timeout"] <= 1
    # Today's linux profile (SACK): the loss result does not survive, the others do.
    n = _verdict(study_claims, "sack-removes-eifels-gap", "holds")
    assert n["eifel_stall_s"] < 1.5 and n["eifel_over_dsack"] > 0.98
    _verdict(study_claims, "linux-dsack-undoes-the-spike", "holds")
    _verdict(study_claims, "linux-spike-only-methods-similar", "holds")
    _verdict(study_claims, "linux-pairs-do-not-increase-throughput", "holds")
    n = _verdict(study_claims, "rfc-eifel-and-frto-detect-the-spike", "holds")
    assert n["false_positives"] == 0 and n["min_undos"] == 1
    n = _verdict(study_claims, "one-response-per-episode", "holds")
    assert n["genuine_undone_linux"] > 0  # the kernel's F-RTO undoes some genuine timeouts


def test_kato_cwnd_after_eifels_undo_over_the_time_series(tmp_path):
    """The series behind eifel-cwnd-halved-after-undo (lossless spike, seed 1). The paper's
    sender (kernels 3.10-4.x) restores cwnd, cuts it once when the Loss state's high_seq is
    reached (tcp_moderate_cwnd: the flight + 3 segments, the flight held small by TCP Small
    Queues), within 10 ms of the undo, and regrows to the value before the timeout within
    0.5 s. Without the moderation (today's kernels) it keeps the restored cwnd to the end. The
    RFC sender, without TCP Small Queues, puts the restored window into its own 100-packet
    queue at once, is refused, halves cwnd within 3 s of the undo and grows again."""
    scenario = STUDIES / "kato-lte-handover" / "scenario.toml"
    lossless = ("path.fwd.delay.profile=[[0, 50, 0.0], [10000, 50, 0.0], [10000, 1500, 0.0], "
                "[11460, 50, 0.0], [11460, 50, 0.0], [20000, 50, 0.0]]")

    def after_undo(extra):
        r = spikelab.run(scenario, seed=1, overrides=[lossless, *extra], trace="timeseries",
                         plots=False)
        ts = r.timeseries.to_pandas()
        undo = ts[ts["var"] == "undo"].t_ns.min()
        cw = ts[ts["var"] == "cwnd"].set_index("t_ns")["value"]
        before = cw[cw.index < 10e9].iloc[-1]  # the spike begins at 10 s
        restored = cw[cw.index <= undo].iloc[-1]
        soon = cw[(cw.index > undo) & (cw.index <= undo + 3e9)]
        low_at = soon.idxmin()
        back = cw[(cw.index > low_at) & (cw >= before)].index.min()
        return {"before": before, "restored": restored, "low": soon.min() / restored,
                "low_after_s": (low_at - undo) / 1e9, "back_after_s": (back - low_at) / 1e9,
                "min_after": cw[cw.index > undo].min() / restored,
                "regrowth": cw[cw.index > low_at].max() / soon.min(),
                "cuts": r.runs.column("moderate_cwnd_cuts")[0].as_py()}

    paper = after_undo([])
    assert paper["restored"] >= paper["before"] > 80 * 1448, paper
    assert paper["low"] < 0.5 and paper["low_after_s"] < 0.01 and paper["back_after_s"] < 0.5, paper
    assert paper["cuts"] == 1, paper
    today = after_undo(["flow.tcp.moderate_cwnd=false"])
    assert today["restored"] > 80 * 1448 and today["min_after"] > 0.95 and today["cuts"] == 0, today
    rfc = KATO_RFC_SENDER.replace("spurious = []", 'spurious = ["eifel"]')
    r = after_undo([rfc])
    assert 0.4 < r["low"] < 0.6 and r["regrowth"] > 1.5, r


def test_fu_claims_as_paper_002_states_them(study_claims):
    # Under the paper's setup (ns-2's Agent/TCP/Reno): the drop at 1280 kbit/s with rwnd 64 and
    # a 1 s round trip, from a second timeout in the spike in some phases; none with rwnd 8.
    n = _verdict(study_claims, "throughput-drop-large-rwnd", "holds")
    assert n["drop_at_kbps"] == 1280 and n["worst_step_rwnd64"] < 0.95
    assert n["worst_step_rwnd8"] >= 0.98 and n["worst_step_rtt200"] > 1.5
    assert 0.2 < n["share_two_timeouts"] < 0.9
    n = _verdict(study_claims, "drop-comes-with-a-second-timeout", "holds")
    assert (n["peak_kbps"], n["drop_kbps"]) == (640, 1280) and n["two_over_one"] < 0.8
    assert 0 < n["runs_two_timeouts"] < n["runs"] == 16
    n = _verdict(study_claims, "no-spurious-timeout-at-low-rates-large-rwnd", "holds")
    assert n["max_rtos_low"] == 0 and n["min_spurious_rtos_high"] >= 1
    n = _verdict(study_claims, "bug-fix-removes-spurious-fast-retransmit", "holds")
    assert n["sfr_without_fix"] > 0 and n["sfr_with_fix"] == 0
    n = _verdict(study_claims, "eifel-ahead-where-reno-times-out", "holds")
    assert n["cells_eifel_ahead"] > n["cells_with_spurious_rto"] / 2 and n["max_ratio"] > 1.2
    # The table's 'Eifel first' fails where no timeout happens: Eifel trails by its 10
    # timestamp bytes, no more.
    n = _verdict(study_claims, "eifel-first-in-all-lossless-cases", "fails")
    assert n["cases"] == 8 and n["cases_eifel_first"] == 5 and n["min_ratio"] > 0.99
    _verdict(study_claims, "eifel-behind-only-by-its-timestamps", "holds")
    n = _verdict(study_claims, "eifel-worst-with-losses", "holds")
    assert n["cases_reno_ahead"] == n["cases"] == 8 and n["min_reno_over_eifel"] > 1.1
    assert n["eifel_stall_s"] > 2 * n["reno_stall_s"]
    n = _verdict(study_claims, "eifel-restore-removes-the-drop", "holds")
    assert n["eifel_runs_two_timeouts"] >= 1 and n["eifel_step_ratio"] >= 1
    _verdict(study_claims, "drop-needs-the-window-limit", "holds")
    # A current stack: no drop (one timeout: RTO >= srtt + 200 ms), the lossy gap within 5 %.
    n = _verdict(study_claims, "linux-no-drop", "holds")
    assert n["max_timeouts"] == 1
    n = _verdict(study_claims, "linux-eifel-ranking", "holds")
    assert n["linux_lossy_max_reno_over_eifel"] < 1.05 < n["ns2_lossy_min_reno_over_eifel"]


def test_fu_sctp_claims_as_paper_002_states_them(study_claims):
    # ns-2's SCTP last in 7 of 8 lossless cases; the eighth is Reno's extra timeouts.
    n = _verdict(study_claims, "sctp-last-lossless", "fails")
    assert n["cases_sctp_last"] == 7 and n["cases_sctp_not_last"] == "200 ms/high/64"
    n = _verdict(study_claims, "reno-behind-sctp-only-after-more-timeouts", "holds")
    assert n["cases_reno_behind_sctp"] == 1
    # The header cause: per busy second SCTP carries 1040/1048 of Reno's payload.
    n = _verdict(study_claims, "sctp-behind-by-its-headers", "holds")
    assert n["timeouts"] == 0 and abs(n["min_busy_ratio"] - n["header_ratio"]) < 0.005
    assert n["max_sctp_over_reno"] < 1
    n = _verdict(study_claims, "sctp-spurious-timeout-without-spurious-fast-retransmit", "holds")
    assert n["min_spurious_t3"] >= 1 and n["min_retransmitted_chunks"] >= 56
    assert n["spurious_fast_retransmits"] == 0
    n = _verdict(study_claims, "sctp-first-lossy-low-rate-large-window", "holds")
    assert n["min_sctp_over_reno"] > 1.05 and n["max_eifel_over_reno"] < 1
    n = _verdict(study_claims, "eifel-last-lossy", "holds")
    assert n["cases_eifel_last"] == 8
    n = _verdict(study_claims, "ranking-table", "fails")
    assert n["cases"] == 16 and n["cases_as_paper"] == 11
    n = _verdict(study_claims, "ranking-differences-explained", "holds")
    assert n["cases_differing"] == 5 and n["unexplained"] is None
    n = _verdict(study_claims, "current-sctp-headers-not-larger", "holds")
    assert n["min_busy_ratio"] >= 1
    n = _verdict(study_claims, "current-ranking", "holds")
    assert n["current_cases_as_paper"] < n["ns2_cases_as_paper"]


FU = STUDIES / "fu-delay-spike" / "scenario.toml"


def _fu_ssthresh(tmp_path, kbps, eifel):
    """ns-2 Reno (or with Eifel), lossless, rwnd 64, RTT 1 s, no jitter: totals and the
    ssthresh trace (bytes) from 19 s to 40 s."""
    out = tmp_path / f"{kbps}-{eifel}"
    over = ['path.fwd.base.delay="1000ms"', f'path.fwd.sender.rate="{kbps}kbps"']
    if eifel:
        over += ["flow.tcp.timestamps=true", 'flow.tcp.spurious=["eifel"]',
                 'flow.tcp.response="undo"']
    spikelab.run(FU, out=out, trace="timeseries", plots=False, progress=False, overrides=over)
    run = query(out, "SELECT goodput_bps, rto_count, undo_count FROM runs").iloc[0]
    ss = query(out, "SELECT t_ns / 1e9 AS t, value FROM timeseries WHERE var = 'ssthresh' "
                    "AND t_ns BETWEEN 19e9 AND 40e9 ORDER BY t_ns")
    return run, ss


def test_the_second_timeout_leaves_ssthresh_at_two_packets_unless_eifel_restores_it(tmp_path):
    """The cause behind throughput-drop-large-rwnd, on the ssthresh trace: at 640 kbit/s one
    timeout in the spike halves ssthresh to 32 packets; at 1280 kbit/s a second one (the RTO
    is lower) takes it to 2 and Reno leaves the spike in congestion avoidance from there, a
    quarter less throughput at twice the link rate. Eifel restores 64 packets."""
    r640, ss640 = _fu_ssthresh(tmp_path, 640, False)
    r1280, ss1280 = _fu_ssthresh(tmp_path, 1280, False)
    assert (r640.rto_count, r1280.rto_count) == (1, 2)
    assert ss640.value.min() == 32_000 and ss1280.value.iloc[-1] == 2_000
    assert r1280.goodput_bps < 0.8 * r640.goodput_bps
    e1280, ess = _fu_ssthresh(tmp_path, 1280, True)
    assert e1280.rto_count == 2 and e1280.undo_count == 1
    assert ess.value.min() == 2_000 and ess.value.iloc[-1] == 64_000
    assert e1280.goodput_bps > 1.5 * r1280.goodput_bps


def test_jittered_replications_differ_and_repeat(tmp_path):
    """kato's lossless spike draws no random number but the start: replications differ, and
    the same seeds give the same table."""
    scenario = STUDIES / "kato-lte-handover" / "scenario.toml"
    lossless = ("path.fwd.delay.profile=[[0, 50, 0.0], [10000, 50, 0.0], [10000, 1500, 0.0], "
                "[11460, 50, 0.0], [11460, 50, 0.0], [20000, 50, 0.0]]")
    sweep = {"replications": 4, "trace": "summary",
             "params": {"flow.tcp.spurious": {"name": "detection", "labels": ["none"],
                                              "values": [[]]}}}
    tables = []
    for d in ("a", "b"):
        r = spikelab.sweep(scenario, tmp_path / d, jobs=2, sweep_spec=sweep,
                           overrides=[lossless], progress=False)
        assert r.failed == 0
        tables.append(r.runs.to_pandas().sort_values("seed")[
            ["seed", "bytes_delivered", "goodput_bps", "longest_stall_s"]].reset_index(drop=True))
    assert tables[0].equals(tables[1])
    assert tables[0].bytes_delivered.nunique() == 4
    # Without the jitter the same four replications are one run four times.
    r = spikelab.sweep(scenario, tmp_path / "c", jobs=2, sweep_spec=sweep,
                       overrides=[lossless, 'flow.start_jitter="0s"'], progress=False)
    assert r.runs.to_pandas().bytes_delivered.nunique() == 1
