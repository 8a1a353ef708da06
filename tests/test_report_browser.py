"""Reports as a reader sees them: each shipped study's report.html opened in headless Chromium
(Debian's package; .ci/run installs it when it can), every embedded figure decoded, no console
error, and a screenshot kept as a test artefact (SPIKELAB_TEST_ARTEFACTS, else pytest's tmp)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from spikelab import study
from spikelab.cli import main

BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                if shutil.which(b)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--virtual-time-budget=5000"]


@pytest.mark.skipif(BROWSER is None, reason="no headless browser (Debian's chromium) installed")
@pytest.mark.parametrize("name", sorted(study.available()))
def test_a_study_report_loads_every_figure_without_console_errors(name, tmp_path):
    out = tmp_path / name
    assert main(["study", "run", name, "-o", str(out), "-j", "2", "--replications", "1",
                 "-q"]) in (0, 3)
    report = out / "report.html"
    images = len(re.findall(r"<img ", report.read_text(encoding="utf-8")))
    assert images >= 2
    profile = tmp_path / "profile"
    proc = subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
                           "--v=0", "--dump-dom", report.as_uri()],
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The page's own load-time check: (images, images decoded).
    assert f'data-figures="{images} {images}"' in proc.stdout
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert not console, console
    artefacts = Path(os.environ.get("SPIKELAB_TEST_ARTEFACTS", tmp_path / "artefacts"))
    artefacts.mkdir(parents=True, exist_ok=True)
    shot = artefacts / f"report-{name}.png"
    subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={profile}", "--window-size=1280,2400",
                    f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=180, check=True)
    assert shot.stat().st_size > 10_000  # a rendered page, not an empty canvas
