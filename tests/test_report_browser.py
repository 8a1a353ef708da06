"""Reports as a reader sees them: each shipped study's report.html opened in headless Chromium
(Debian's package; .ci/run installs it when it can), every embedded figure decoded, no console
message, numbers by one rule per unit in every table, and a screenshot kept as a test artefact
(under SPIKELAB_TEST_ARTEFACTS, else pytest's tmp). Without a browser the page checks are
skipped (with the reason); the number rules are checked on report.html and report.md anyway."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from spikelab import study
from spikelab.study import render as report
from spikelab.cli import main

BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                if shutil.which(b)), None)
NO_BROWSER = "no headless browser: install Debian's chromium (.ci/run does so as root)"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--virtual-time-budget=5000"]
# Decimals of a number shown in a unit (the heading says which): stats.fmt_value's rule.
DECIMALS = {"Mbit/s": 2, "MB": 2, "s": 3, "%": 1}
NUMBER = re.compile(r"-?\d{1,3}(,\d{3})*(\.(\d+))?")


def _open(page: Path, profile: Path) -> tuple[str, list[str]]:
    """The DOM of ``page`` after its scripts ran, and the console lines Chromium logged."""
    proc = subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={profile}",
                           "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    return proc.stdout, console


class _Tables(HTMLParser):
    """Every <table> of a page as a list of rows of cell texts (headings included)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _decimals(cell: str) -> list[int] | None:
    """Decimals of each number in a numeric cell ("1.23" or "1.23 ± 0.04"); None if the cell
    is not a number."""
    parts = cell.split(" ± ")
    found = [NUMBER.fullmatch(p) for p in parts]
    if not all(found):
        return None
    return [len(m.group(3) or "") for m in found]


def check_numbers(tables: list[list[list[str]]]) -> list[str]:
    """Where a table breaks the rules: a column in a unit with other decimals than the unit
    has, or a numeric column whose cells differ in decimals. Returns the problems."""
    problems = []
    for table in tables:
        if len(table) < 2 or not table[0]:
            continue
        header, rows = table[0], [r for r in table[1:] if len(r) == len(table[0])]
        for i, name in enumerate(header):
            unit = re.search(r"\[(.+)\]$", name)
            seen = {tuple(d) for r in rows if (d := _decimals(r[i])) is not None}
            if unit and unit.group(1) in DECIMALS:
                want = DECIMALS[unit.group(1)]
                bad = {d for d in seen if any(x != want for x in d)}
                if bad:
                    problems.append(f"{name}: decimals {sorted(bad)}, the rule is {want}")
            elif len({x for d in seen for x in d}) > 1:
                problems.append(f"{name}: mixed decimals {sorted(seen)}")
    return problems


# --------------------------------------------------------------- the rules, without a browser

def test_a_column_has_one_number_of_decimals_and_its_unit():
    frame = pd.DataFrame({
        "network": ["lossless", "lossy"],
        "segments": np.array([8, 1_234_567], dtype=np.int64),  # numpy ints: separators too
        "reno_kbps": [42.2, 38.0],  # a rounded 38.0 keeps its decimal beside 42.2
        "stall_s": [0.05, 1.2],
        "goodput_bps": [7.07e6, np.nan],
        "ratio": [0.0523, 0.001],
    })
    header, rows = report._cells(frame)
    assert header == ["network", "segments", "reno_kbps", "stall_s [s]", "goodput_bps [Mbit/s]",
                      "ratio"]
    assert rows == [["lossless", "8", "42.2", "0.050", "7.07", "0.0523"],
                    ["lossy", "1,234,567", "38.0", "1.200", "-", "0.0010"]]
    assert check_numbers([[header, *rows]]) == []
    assert check_numbers([[["x"], ["42.2"], ["38"]]]) == ["x: mixed decimals [(0,), (1,)]"]
    assert check_numbers([[["t [s]"], ["1.5"]]]) == ["t [s]: decimals [(1,)], the rule is 3"]


def test_claim_numbers_carry_their_unit():
    text = report._numbers({"bytes": np.int64(17_685_872), "stall_s": 3.6394,
                            "goodput_bps": 7_074_000.0, "holds": True, "missing": None})
    assert text == ("bytes = 17.69 MB, stall_s = 3.639 s, goodput_bps = 7.07 Mbit/s, "
                    "holds = True, missing = -")


# ------------------------------------------------------------------------ shipped studies

@pytest.fixture(scope="module", params=sorted(study.available()))
def study_report(request, tmp_path_factory) -> Path:
    """A shipped study run with one replication (its report is what a reader opens)."""
    out = tmp_path_factory.mktemp("reports") / request.param
    assert main(["study", "run", request.param, "-o", str(out), "-j", "2",
                 "--replications", "1", "-q"]) in (0, 1, 3, 4)
    # One replication: a claim over held-out seeds has no rows (1), a paper claim's ablation
    # may be undecided (4), a run may fail (3); the report is written whatever the verdicts.
    return out


def test_report_numbers_follow_one_rule_per_unit_in_html_and_markdown(study_report):
    page = (study_report / "report.html").read_text(encoding="utf-8")
    parser = _Tables()
    parser.feed(page)
    summary = [t for t in parser.tables if t and "n" in t[0]]
    assert summary, "no summary table"
    assert check_numbers(parser.tables) == []
    # The markdown report shows the same cells.
    md = (study_report / "report.md").read_text(encoding="utf-8")
    md_rows = [[html.unescape(c.strip()).replace("\\|", "|") for c in line.strip("|").split(" | ")]
               for line in md.splitlines() if line.startswith("| ")]
    for row in summary[0][1:]:
        assert row in md_rows, row


@pytest.mark.skipif(BROWSER is None, reason=NO_BROWSER)
def test_the_browser_check_sees_a_broken_image_and_a_console_error(tmp_path):
    """The harness can fail: one image that does not decode and one console error are seen."""
    good = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ"
            "RU5ErkJggg==")
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>t</title></head>"
                    f"<body><img src='data:image/png;base64,{good}'>"
                    "<img src='data:image/png;base64,AAAA'>"
                    f"<script>{report._CHECK}</script>"
                    "<script>console.error('a figure failed');</script></body></html>")
    dom, console = _open(page, tmp_path / "profile")
    assert 'data-figures="2 1"' in dom
    assert any("a figure failed" in line for line in console), console


@pytest.mark.skipif(BROWSER is None, reason=NO_BROWSER)
def test_a_study_report_loads_every_figure_without_console_errors(study_report, tmp_path):
    page = study_report / "report.html"
    images = len(re.findall(r"<img ", page.read_text(encoding="utf-8")))
    assert images >= 2
    dom, console = _open(page, tmp_path / "profile")
    # The page's own load-time check: (images, images decoded).
    assert f'data-figures="{images} {images}"' in dom
    assert not console, console
    # The rendered page's tables follow the number rules too.
    parser = _Tables()
    parser.feed(dom)
    assert parser.tables and check_numbers(parser.tables) == []
    artefacts = Path(os.environ.get("SPIKELAB_TEST_ARTEFACTS", tmp_path / "artefacts"))
    artefacts.mkdir(parents=True, exist_ok=True)
    shot = artefacts / f"report-{study_report.name}.png"
    subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                    "--window-size=1280,2400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=180, check=True)
    assert shot.stat().st_size > 10_000  # a rendered page, not an empty canvas
