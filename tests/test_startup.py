"""The command line starts at once: each command imports only what it uses. ``--help`` and
``validate`` load no pyarrow, pandas, matplotlib or emulator; a summary run loads no matplotlib,
pandas or emulator (the tables are built from buffers: ``pa.array`` would import pandas)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("matplotlib", "pandas", "pyarrow", "duckdb", "dask", "distributed")

PROBE = """
import contextlib, io, json, sys
from spikelab.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
tops = sorted({m.split(".")[0] for m in sys.modules})
emulator = sorted(m for m in sys.modules if m.startswith("spikelab.emulate."))
print(json.dumps({"tops": tops, "emulator": emulator}))
"""


def loaded(tmp_path: Path, *argv: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["validate", str(ROOT / "examples/sweep.toml")],
                                  ["run", "--help"]])
def test_help_and_validate_load_nothing_heavy(tmp_path, argv):
    got = loaded(tmp_path, *argv)
    assert not set(HEAVY) & set(got["tops"]), got["tops"]
    assert got["emulator"] == []


def test_a_summary_run_loads_no_matplotlib_and_no_emulator(tmp_path):
    (tmp_path / "s.toml").write_text('[sim]\nduration = "1s"\n[[flow]]\n')
    got = loaded(tmp_path, "run", "s.toml", "--trace", "summary", "-o", "out", "-q")
    assert not {"matplotlib", "pandas", "duckdb", "dask"} & set(got["tops"]), got["tops"]
    assert got["emulator"] == []
    assert (tmp_path / "out" / "runs.parquet").is_file()
