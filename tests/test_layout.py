"""The source layout issue 39 asks for: one place per model, files of one job.

- No Rust source file has more than 1,000 lines before its tests (``#[cfg(test)]``).
- A congestion control's quoted name (``"hybla"``) appears in at most two non-test Rust files:
  its own module (``CcParams::NAME``) and one registry; so does a stage type's (``"rlc"``).
  The stage types ``rate``, ``delay`` and ``loss`` are left out: those words are also keys of
  other tables (an RLC stage's ``loss``, a path's ``delay``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CRATES = ROOT / "crates"
MAX_LINES = 1000


def _sources() -> list[Path]:
    """Every Rust source file of the crates but their tests (``tests/``, ``tests.rs``)."""
    return sorted(p for p in CRATES.rglob("*.rs")
                  if "tests" not in p.relative_to(CRATES).parts and p.name != "tests.rs")


def _lines_before_tests(text: str) -> int:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]"):
            return i
    return len(lines)


def test_no_rust_file_has_more_than_1000_lines_before_its_tests():
    sources = _sources()
    assert len(sources) > 50, "the crates' sources were not found"
    over = {str(p.relative_to(ROOT)): n for p in sources
            if (n := _lines_before_tests(p.read_text(encoding="utf-8"))) > MAX_LINES}
    assert over == {}


def _cc_names() -> list[str]:
    """The congestion controls' names, from each module's ``CcParams::NAME``."""
    names = []
    for p in sorted((CRATES / "spikelab-tcp/src/cc").glob("*.rs")):
        names += re.findall(r"const NAME: &'static str = \"([a-z0-9_-]+)\";", p.read_text())
    return names


def test_a_models_quoted_name_is_in_its_module_and_one_registry_only():
    ccs = _cc_names()
    assert set(ccs) >= {"reno", "newreno", "cubic", "bic", "westwood", "hybla"}, ccs
    texts = {p: p.read_text(encoding="utf-8") for p in _sources()}
    where = {name: [str(p.relative_to(ROOT)) for p, t in texts.items() if f'"{name}"' in t]
             for name in [*ccs, "rlc", "harq", "stall"]}
    assert {n: w for n, w in where.items() if len(w) > 2} == {}
    # Each is written somewhere: the check looks where the names are.
    assert all(where.values()), where
