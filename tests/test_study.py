"""Studies: definitions, claims evaluated from the data, reports (HTML opened in a browser)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import spikelab
from spikelab import study
from spikelab.analysis.query import query
from spikelab.figures import sweep as sweepplots
from spikelab.cli import main

from test_sweep import LOSSY

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


@pytest.fixture(scope="module")
def basic(tmp_path_factory) -> Path:
    """The bundled lte-handover-basic study, 2 replications (the claims need only the data)."""
    out = tmp_path_factory.mktemp("study") / "basic"
    assert main(["study", "run", "lte-handover-basic", "-o", str(out), "-j", "2",
                 "--replications", "2", "-q"]) == 0
    return out


def test_study_list_names_the_bundled_study(capsys):
    assert main(["study", "list"]) == 0
    assert re.search(r"^lte-handover-basic\s+\S", capsys.readouterr().out, re.M)


def test_claims_are_evaluated_from_the_data(basic):
    data = json.loads((basic / "claims.json").read_text())
    definition = study.parse(basic / "study")
    assert [c["id"] for c in data["claims"]] == [c.id for c in definition.claims]
    for claim, result in zip(definition.claims, data["claims"], strict=True):
        frame = query(basic, claim.sql)
        verdict = bool(frame.iloc[0, 0])
        assert result["status"] == ("holds" if verdict else "fails"), claim.id
        assert set(result["numbers"]) == set(frame.columns[1:])
    # An independent check of the first claim straight from the runs table.
    runs = spikelab.load(basic).runs.to_pandas()
    assert len(runs) == 3 * 2 * 2
    # One line, nothing read beyond the runs table (it printed every column).
    assert repr(spikelab.load(basic)) == (f"SweepResult({str(basic)!r}, runs=12, failed=0, "
                                          f"rows=12, params=['variant', 'loss'])")
    expected = bool(((runs.rto_count >= 1) & (runs.rto_spurious_true >= 1)).all())
    assert data["claims"][0]["status"] == ("holds" if expected else "fails")


def test_report_has_claims_figures_and_provenance(basic):
    html = (basic / "report.html").read_text()
    md = (basic / "report.md").read_text()
    # 3 sweep figures + seq/ack and cwnd of 2 single runs (reno, replication 0).
    assert html.count("<img ") == 7 and html.count("data:image/png;base64,") == 7
    assert "src='figures/" not in html  # self-contained
    for c in study.parse(basic / "study").claims:
        assert c.id in html and c.id in md
    assert "spike-forces-spurious-rto" in html and "Mean ± 95% CI per grid point" in html
    assert "replication r of every grid point runs with seed base + r" in html
    for name in re.findall(r"\]\((figures/[^)]+)\)", md):
        assert (basic / name).is_file()


def test_single_run_figures_rerun_exactly_the_sweep_rows(basic):
    data = json.loads((basic / "claims.json").read_text())
    assert [r["run_id"] for r in data["run_figures"]] == ["p000-r00", "p001-r00"]
    sweep_rows = spikelab.load(basic).runs.to_pandas().set_index("run_id")
    for entry in data["run_figures"]:
        single = spikelab.load(basic / "runs-figures" / entry["run_id"])
        assert single.trace == "packets" and single.packets.num_rows > 0
        row = sweep_rows.loc[entry["run_id"]]
        assert single.runs.column("bytes_delivered")[0].as_py() == row.bytes_delivered
        assert single.seed == row.seed
        assert sorted(Path(f).name for f in entry["figures"]) == ["cwnd_flow0.png",
                                                                  "seqack_flow0.png"]
        assert single.manifest["figures_zoom"] == [9.5, 16.0]


def test_report_can_be_rewritten_from_the_directory_alone(basic, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(basic, copy)
    (copy / "report.html").unlink()
    assert main(["study", "report", str(copy)]) == 0
    assert "claims hold; report:" in capsys.readouterr().out
    assert (copy / "report.html").is_file()


def _tiny_study(root: Path, claims: str) -> Path:
    root.mkdir()
    (root / "scenario.toml").write_text(LOSSY, encoding="utf-8")
    (root / "study.toml").write_text(f"""
[study]
name = "tiny"
title = "Tiny"
scenario = "scenario.toml"
[sweep]
replications = 2
[sweep.params]
"flow.tcp.variant" = ["reno", "sack"]
[[figure]]
kind = "bar"
x = "variant"
y = "goodput_bps"
{claims}
""", encoding="utf-8")
    return root


def test_claim_verdicts_holds_fails_and_errors(tmp_path):
    root = _tiny_study(tmp_path / "tiny", """
[[claim]]
id = "positive"
claim = "every run delivers data"
source = "test"
sql = "SELECT bool_and(bytes_delivered > 0) AS holds, min(bytes_delivered) AS least FROM runs"
[[claim]]
id = "impossible"
claim = "a run delivers more than 1 GB in 2 s at 2 Mbit/s"
source = "test"
sql = "SELECT bool_or(bytes_delivered > 1e9) FROM runs"
[[claim]]
id = "not-boolean"
claim = "a number is not a verdict"
source = "test"
sql = "SELECT count(*) FROM runs"
[[claim]]
id = "many-rows"
claim = "one row per variant is not one verdict"
source = "test"
sql = "SELECT true FROM runs GROUP BY variant"
[[claim]]
id = "bad-sql"
claim = "a typo"
source = "test"
sql = "SELECT holds FROM nowhere"
[[claim]]
id = "null-count"
claim = "a NULL of an integer column is a number the report shows as none"
source = "test"
sql = "SELECT true, max(rto_count) FILTER (WHERE false) AS none_counted FROM runs"
""")
    data = spikelab.study.run(root, tmp_path / "out", jobs=1, progress=False)
    # claims.json was "NAType is not JSON serializable" for such a NULL.
    assert json.loads((tmp_path / "out" / "claims.json").read_text())["claims"][-1][
        "numbers"] == {"none_counted": None}
    status = {c["id"]: (c["status"], c["error"]) for c in data["claims"]}
    assert status["positive"] == ("holds", None)
    assert data["claims"][0]["numbers"]["least"] > 0
    assert status["impossible"] == ("fails", None)
    # The value as the user would write it, with its SQL type: not numpy's repr.
    assert status["not-boolean"] == (
        "error", "first column 'count_star()' is 4 (int64), not a boolean")
    assert status["many-rows"][0] == "error" and "returned 2 rows" in status["many-rows"][1]
    assert status["bad-sql"][0] == "error" and "query failed" in status["bad-sql"][1]


def test_a_claim_in_error_makes_study_run_and_report_exit_1(tmp_path, capsys):
    """A claim whose query is broken cannot give a verdict: the command says so and exits 1
    (it exited 0); a claim that fails is a finding, and the command still exits 0."""
    fails = ('[[claim]]\nid = "impossible"\nclaim = "c"\nsource = "s"\n'
             'sql = "SELECT bool_or(bytes_delivered > 1e12) FROM runs"\n')
    root = _tiny_study(tmp_path / "tiny", fails)
    assert main(["study", "run", str(root), "-o", str(tmp_path / "ok"), "-j", "1", "-q"]) == 0
    assert "[FAILS] impossible" in capsys.readouterr().out
    broken = fails + ('[[claim]]\nid = "bad-sql"\nclaim = "a typo"\nsource = "s"\n'
                      'sql = "SELECT holds FROM nowhere"\n')
    root = _tiny_study(tmp_path / "broken", broken)
    out = tmp_path / "out"
    assert main(["study", "run", str(root), "-o", str(out), "-j", "1", "-q"]) == 1
    captured = capsys.readouterr()
    assert "[ERROR] bad-sql" in captured.out
    assert captured.err == ("spikelab: error: 1 claim could not be evaluated "
                            "(bad-sql: see ERROR above)\n")
    assert main(["study", "report", str(out)]) == 1
    assert (out / "report.html").is_file()


def test_a_study_directory_of_another_engine_build_is_not_reused(tmp_path, capsys, monkeypatch):
    """`study run` into a finished directory reuses its runs only when the same engine
    build made them; after a rebuild it says so in one line (exit 2) and --fresh reruns."""
    from spikelab import _core

    root = _tiny_study(tmp_path / "tiny", "")
    out = tmp_path / "out"
    assert main(["study", "run", str(root), "-o", str(out), "-j", "1", "-q"]) == 0
    assert main(["study", "run", str(root), "-o", str(out), "-j", "1", "-q"]) == 0
    assert json.loads((out / "manifest.json").read_text())["runs_reused"] == 4
    capsys.readouterr()
    monkeypatch.setattr(_core, "__build__", _core.__version__ + "+0000000000000000")
    assert main(["study", "run", str(root), "-o", str(out), "-j", "1", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "or the spikelab engine changed" in err
    assert main(["study", "run", str(root), "-o", str(out), "-j", "1", "-q", "--fresh"]) == 0
    assert json.loads((out / "manifest.json").read_text())["runs_reused"] == 0


PAPER = """
[[claim]]
id = "reno-delivers"
kind = "paper"
claim = "Reno delivers data in every run."
source = "test paper §1"
section = "§1"
paper_value = [1, 2]
band = "every run > 0 bytes"
explained_by = "ablation"
sql = "SELECT bool_and(bytes_delivered > {bound}) FROM runs WHERE variant = 'reno'"
[[claim]]
id = "ablation"
kind = "{ablation_kind}"
claim = "An ablation."
source = "test"
sql = "SELECT {ablation} AS holds"
"""


def test_ci_macros_are_the_figures_student_t_interval(tmp_path):
    """ci_lo / ci_hi in claim SQL give exactly the interval the figures draw (Student's t,
    the analysis.stats table), and a claim whose interval straddles its threshold says so."""
    root = _tiny_study(tmp_path / "tiny", """
[[claim]]
id = "interval"
claim = "the mean goodput's 95 % interval"
source = "test"
sql = '''SELECT true AS holds, ci_lo(goodput_bps) AS lo, ci_hi(goodput_bps) AS hi,
  avg(goodput_bps) AS mean FROM runs'''
[[claim]]
id = "straddles"
claim = "the mean goodput is above its own mean (the interval cannot exclude it)"
source = "test"
sql = '''SELECT avg(goodput_bps) > (SELECT avg(goodput_bps) FROM runs) AS holds,
  (ci_lo(goodput_bps) > (SELECT avg(goodput_bps) FROM runs)
   OR ci_hi(goodput_bps) < (SELECT avg(goodput_bps) FROM runs)) AS decided FROM runs'''
[[claim]]
id = "reno-delivers"
claim = "Reno's mean goodput is below 1 Tbit/s, its interval says so"
source = "test"
sql = '''SELECT ci_hi(goodput_bps) < 1e12 AS holds, ci_lo(goodput_bps) AS lo,
  ci_hi(goodput_bps) < 1e12 AS decided FROM runs WHERE variant = 'reno''''
""")
    data = spikelab.study.run(root, tmp_path / "out", jobs=1, progress=False)
    from spikelab.analysis.stats import mean_ci

    mean, half, n = mean_ci(spikelab.load(tmp_path / "out").runs.to_pandas().goodput_bps)
    assert n == 4 and half > 0
    got = data["claims"][0]["numbers"]
    assert got["lo"] == pytest.approx(mean - half, rel=1e-12)
    assert got["hi"] == pytest.approx(mean + half, rel=1e-12)
    assert data["claims"][1]["status"] == "undecided"
    assert "decided" not in data["claims"][1]["numbers"]
    # One run has no interval: its ci_lo is NULL, so is decided, and the claim is undecided.
    assert data["claims"][2]["status"] == "holds"
    one = spikelab.study.run(root, tmp_path / "one", jobs=1, progress=False, replications=1)
    lo = one["claims"][2]["numbers"]["lo"]
    assert lo is None or lo != lo  # NULL (NaN in a float column)
    assert one["claims"][2]["status"] == "undecided"


@pytest.mark.parametrize(("bound", "ablation", "kind", "status"), [
    ("0", "true", "model", 0),       # the paper claim holds
    ("1e12", "true", "model", 0),    # fails, explained by an ablation that holds
    ("1e12", "false", "beyond", 4),  # fails, and its ablation fails too: exit 4
])
def test_paper_claims_are_counted_and_an_unexplained_failure_exits_4(
        tmp_path, capsys, bound, ablation, kind, status):
    root = _tiny_study(tmp_path / "tiny", PAPER.format(bound=bound, ablation=ablation,
                                                        ablation_kind=kind))
    out = tmp_path / "out"
    assert main(["study", "run", str(root), "-o", str(out), "-j", "1", "-q"]) == status
    captured = capsys.readouterr()
    held = "1" if bound == "0" else "0"
    assert f"paper results reproduced: {held} of 1" in captured.out
    first = (out / "report.md").read_text().splitlines()[0]
    assert first.startswith(f"paper results reproduced: {held} of 1 · ")
    assert "NOT the study as written" not in first
    data = json.loads((out / "claims.json").read_text())
    assert data["claims"][0]["kind"] == "paper" and data["claims"][0]["paper_value"] == "1-2"
    if status:
        assert captured.err == ("spikelab: error: 1 paper claim fail without an explained_by "
                                "claim that holds (reno-delivers)\n")
        assert data["paper_results"]["unexplained"] == ["reno-delivers"]
    assert main(["study", "report", str(out)]) == status


def test_a_run_with_overrides_says_so_in_title_and_first_line(tmp_path):
    root = _tiny_study(tmp_path / "tiny", PAPER.format(bound="0", ablation="true",
                                                        ablation_kind="model"))
    out = tmp_path / "out"
    assert main(["study", "run", str(root), "-o", str(out), "-j", "1", "-q",
                 "--replications", "1", "--set", "sim.duration=1s"]) == 0
    md = (out / "report.md").read_text().splitlines()
    assert md[0].endswith("NOT the study as written: --replications 1 (the study has 2); "
                          "--set sim.duration=1s")
    assert md[2] == "# Tiny (with overrides)"
    html = (out / "report.html").read_text()
    assert "<title>Tiny (with overrides): spikelab study report</title>" in html


VIEWS = """
[[view]]
name = "per_variant"
sql = "SELECT variant, avg(goodput_bps) AS goodput FROM runs GROUP BY variant"
[[view]]
name = "spread"
sql = "SELECT max(goodput) / min(goodput) AS ratio, count(*) AS variants FROM per_variant"
[[table]]
title = "Goodput by variant"
sql = "SELECT variant, goodput FROM per_variant ORDER BY variant"
[[claim]]
id = "from-a-view"
claim = "the two variants' goodputs differ by less than a factor of 100"
source = "test"
sql = "SELECT ratio < 100 AS holds, ratio, variants FROM spread"
"""


def test_a_figure_draws_from_a_view(tmp_path):
    """A figure with source = VIEW shows the view's rows: its bars are the view's values."""
    root = _tiny_study(tmp_path / "tiny", VIEWS + """
[[figure]]
name = "from-view"
kind = "bar"
source = "per_variant"
x = "variant"
y = "goodput"
scale = 1
hlines = [0]
""")
    out = tmp_path / "out"
    data = spikelab.study.run(root, out, jobs=1, progress=False)
    assert "figures/from-view.png" in data["figures"]
    definition = study.parse(root)
    frame = query(out, "SELECT * FROM per_variant", definition.view_pairs())
    fig = sweepplots.draw_one(frame, definition.figures[-1])
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights == pytest.approx(frame.goodput.tolist(), rel=1e-12)


def test_views_serve_claims_tables_and_later_views(tmp_path):
    """A [[view]] is a named query: a later view, a table and a claim select from it, and the
    numbers are the ones the same SQL gives over runs directly."""
    root = _tiny_study(tmp_path / "tiny", VIEWS)
    out = tmp_path / "out"
    data = spikelab.study.run(root, out, jobs=1, progress=False)
    (claim,) = data["claims"]
    assert (claim["status"], claim["error"]) == ("holds", None)
    direct = spikelab.query(out, "SELECT variant, avg(goodput_bps) AS g FROM runs "
                                 "GROUP BY variant ORDER BY variant")
    assert claim["numbers"]["variants"] == 2
    assert claim["numbers"]["ratio"] == pytest.approx(direct.g.max() / direct.g.min(), rel=1e-12)
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "## Goodput by variant" in md
    for variant in ("reno", "sack"):
        assert f"| {variant} |" in md
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "per_variant" in html and "max(goodput) / min(goodput)" in html


@pytest.mark.parametrize(("view_sql", "message"), [
    ("DELETE FROM runs", "view 'broken': must be one SELECT statement, got DELETE"),
    ("SELECT 1; SELECT 2", "view 'broken': must be one SELECT statement, got SELECT, SELECT"),
    ("SELECT goodput FROM nowhere", "view 'broken': Table with name nowhere does not exist"),
])
def test_a_broken_view_makes_every_claim_an_error_that_names_it(tmp_path, view_sql, message):
    root = _tiny_study(tmp_path / "tiny", f"""
[[view]]
name = "broken"
sql = "{view_sql}"
[[claim]]
id = "any"
claim = "c"
source = "s"
sql = "SELECT true"
""")
    data = spikelab.study.run(root, tmp_path / "out", jobs=1, progress=False)
    (claim,) = data["claims"]
    assert claim["status"] == "error"
    assert claim["error"].startswith(message)
    # the results are never written to: runs is still whole
    assert len(spikelab.query(tmp_path / "out", "SELECT * FROM runs")) == 4


@pytest.mark.parametrize(("claims", "message"), [
    ('[[view]]\nname = "runs"\nsql = "SELECT 1"\n', "view[0].name: 'runs' is one of the results"),
    ('[[view]]\nname = "Bad-Name"\nsql = "SELECT 1"\n', "view[0].name: 'Bad-Name' must be a"),
    ('[[view]]\nname = "a"\nsql = "SELECT 1"\n[[view]]\nname = "a"\nsql = "SELECT 2"\n',
     "view[1].name: view 'a' is defined twice"),
    ('[[view]]\nname = "a"\n', "view[0].sql: required"),
    ('[[figure]]\nkind = "cdf"\ny = "g"\nsource = "nowhere"\n',
     "figure[1].source: no view named 'nowhere' (views: none)"),

    ('[[claim]]\nid = "x"\nclaim = "c"\nsql = "SELECT true"\n', "claim[0].source: required"),
    ('[[claim]]\nid = "x"\nclaim = "c"\nsource = "s"\nsql = "SELECT true"\nwhy = 1\n',
     "claim[0].why: unknown key"),
    ('[[figure]]\nkind = "pie"\ny = "goodput_bps"\n', "figure[1].kind: must be one of"),
    ('[[claim]]\nid = "x"\nkind = "opinion"\nclaim = "c"\nsource = "s"\nsql = "SELECT true"\n',
     "claim[0].kind: 'opinion' is not a claim kind (expected paper, model, beyond)"),
    ('[[claim]]\nid = "x"\nkind = "paper"\nclaim = "c"\nsource = "s"\nsection = "§2"\n'
     'band = "b"\nsql = "SELECT true"\n', "claim[0].paper_value: required for a paper claim"),
    ('[[claim]]\nid = "x"\nkind = "paper"\nclaim = "c"\nsource = "s"\nsection = "§2"\n'
     'band = "b"\npaper_value = [2, 1]\nsql = "SELECT true"\n',
     "claim[0].paper_value: must be a number, a range [lo, hi] with lo <= hi, or a string"),
    ('[[claim]]\nid = "x"\nkind = "paper"\nclaim = "c"\nsource = "s"\nsection = "§2"\n'
     'band = "b"\npaper_value = 3\nexplained_by = "y"\nsql = "SELECT true"\n',
     "claim[0].explained_by: no claim 'y' in this study (claims: x)"),
    ('[[claim]]\nid = "x"\nclaim = "c"\nsource = "s"\nexplained_by = "x"\nsql = "SELECT true"\n',
     "claim[0].explained_by: only a paper claim names the ablation"),
    ('[run_figures]\nzoom = [5, 1]\n', "run_figures.zoom: must be [t0, t1]"),
    # Two figures drawn to one file: the second overwrote the first without a word.
    ('[[figure]]\nkind = "bar"\nx = "variant"\ny = "goodput_bps"\n',
     "figure[1].name: figure[0] is drawn to the same file ('bar-goodput_bps-variant')"),
    ('[[figure]]\nkind = "cdf"\ny = "goodput_bps"\nscale = nan\n',
     "figure[1].scale: must be a non-zero number, got nan"),
])
def test_bad_study_definitions_name_the_field(tmp_path, claims, message, capsys):
    root = _tiny_study(tmp_path / "tiny", claims)
    assert main(["study", "run", str(root), "-o", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("head", "message"), [
    ('sources = 5', "study.sources: must be an array of strings (one per source), got 5"),
    ('sources = "paper 000"', "study.sources: must be an array of strings"),
    ('description = 5', "study.description: must be a string, got int 5"),
    ('claim = 3', "claim: must be an array of tables ([[claim]])"),
])
def test_a_study_head_of_the_wrong_type_is_a_one_line_error(tmp_path, head, message, capsys):
    # These were "internal error: 'int' object is not iterable" (exit 1), or, for a string of
    # sources, one source per character.
    root = _tiny_study(tmp_path / "tiny", "")
    text = (root / "study.toml").read_text(encoding="utf-8")
    text = (f"{head}\n{text}" if head.startswith("claim")  # a top-level key
            else text.replace("[study]\n", f"[study]\n{head}\n", 1))
    (root / "study.toml").write_text(text, encoding="utf-8")
    assert main(["study", "run", str(root), "-o", str(tmp_path / "out"), "-q"]) == 2
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err, err


def test_a_failing_query_of_the_report_names_its_figure_table_or_run_figures(tmp_path, capsys):
    """A figure's where, a table's SQL, run_figures' where and set: each error names its
    source (it was a bare "query failed: syntax error at or near ...")."""
    root = _tiny_study(tmp_path / "tiny", "")
    out = tmp_path / "out"
    spikelab.study.run(root, out, jobs=1, progress=False)
    copy = out / study.COPY / "study.toml"
    good = copy.read_text(encoding="utf-8")
    for extra, message in [
        ('[[figure]]\nname = "w"\nkind = "cdf"\ny = "goodput_bps"\nwhere = "((("\n',
         "figure 'w': where '(((': syntax error"),
        ('[[table]]\ntitle = "T"\nsql = "SELEC 1"\n', "table[0] ('T'): syntax error"),
        ('[run_figures]\nwhere = "((("\n', "run_figures.where '(((': syntax error"),
        ('[run_figures]\nwhere = "replication = 0"\nset = { "sim.nope" = 1 }\n',
         "run_figures.set: sim.nope: unknown field"),
    ]:
        copy.write_text(good + extra, encoding="utf-8")
        assert main(["study", "report", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"spikelab: error: {message}"), err


def test_unknown_study_lists_the_known_ones(capsys):
    assert main(["study", "run", "no-such-study", "-o", "/tmp/never"]) == 2
    err = capsys.readouterr().err
    assert "no study named 'no-such-study' (available: " in err and "lte-handover-basic" in err


def _browser() -> str | None:
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


@pytest.mark.skipif(_browser() is None, reason="no headless browser (chromium) installed")
def test_report_opens_in_a_headless_browser_without_errors(basic, tmp_path):
    proc = subprocess.run(
        [_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
         "--dump-dom", (basic / "report.html").as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The report's own check: every embedded figure decoded (count, count decoded).
    assert 'data-figures="7 7"' in proc.stdout
    console = [line for line in proc.stderr.splitlines()
               if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
