"""The docs work: every command and code block in README.md and docs/*.md is executed.

Blocks run in document order (README first) in one scratch directory that sees the repository's
``examples/`` and ``benches/``, so later blocks can read what earlier ones wrote (``out/lte``).
What is rewritten to keep the suite short is listed in ``REWRITES``, visibly; a block can be
skipped only by a marker in the doc itself, ``<!-- doc-test: skip (reason) -->`` on the line
before it. Synopsis lines (with placeholders such as OUTDIR or [--seed N]) cannot run as written:
their subcommand and every option they name must exist in ``spikelab SUB --help``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!--\s*doc-test:\s*skip\s*\((.+?)\)\s*-->")

# Commands that are this test suite itself or the install step the suite already ran.
NOT_RUN = {
    "bash scripts/test-all.sh": "the test suite itself",
}
# Shortened, visibly: (substring of the command, what to append).
REWRITES = [
    ("spikelab study run lte-handover-basic", ["--replications", "1"]),
    ("spikelab study run path/to/my-study", None),  # a user's study that does not exist here
    ("spikelab emulate examples/", ["--set", "sim.duration=4s"]),
]
PLACEHOLDER = re.compile(r"\b(SCENARIO\.toml|OUTDIR|DIR|DIR_SIM|DIR_EMU|FILE|NAME\|DIR|ADDRESS|"
                         r"KEY=VALUE|T0:T1|SQL)\b|\[--|\[-j|\.\.\.")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    lang: str
    body: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}:{self.lang or 'text'}"


def blocks() -> list[Block]:
    out = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
            line = text[: m.start()].count("\n") + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.search(before)
            out.append(Block(str(path.relative_to(ROOT)), line, m.group(1), m.group(2),
                             skip.group(1) if skip else None))
    return out


def shell_commands(block: Block) -> list[str]:
    """The commands of a shell block, or the ``$ `` lines of an output block."""
    lines = block.body.splitlines()
    if block.lang not in ("sh", "bash"):
        lines = [ln[2:] for ln in lines if ln.startswith("$ ")]
    cmds, current = [], ""
    for ln in lines:
        ln = re.sub(r"\s{2,}#.*$", "", ln).rstrip()
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        if ln.endswith("\\"):
            current += ln[:-1] + " "
            continue
        cmds.append((current + ln).strip())
        current = ""
    return cmds


def cases():
    out = []
    for b in blocks():
        if b.lang in ("sh", "bash", ""):
            for i, cmd in enumerate(shell_commands(b)):
                out.append(pytest.param(b, cmd, id=f"{b.id}:{i}"))
        elif b.lang in ("python", "sql", "toml"):
            out.append(pytest.param(b, None, id=b.id))
    return out


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("docs")
    for name in ("examples", "benches"):
        (d / name).symlink_to(ROOT / name)
    return d


def _can_emulate() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None and \
        subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0


def _run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _check_synopsis(cmd: str, cwd: Path) -> None:
    words = cmd.replace("[", " ").replace("]", " ").replace("|", " ").split()
    assert words[0] == "spikelab", cmd
    sub = [w for w in words[1:3] if re.fullmatch(r"[a-z]+", w)]
    if sub and sub[0] == "study" and len(sub) > 1:
        sub = sub[:2]
    else:
        sub = sub[:1]
    proc = _run([sys.executable, "-m", "spikelab", *sub, "--help"], cwd)
    assert proc.returncode == 0, (cmd, proc.stderr)
    for option in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", cmd):
        assert option in proc.stdout, f"{cmd}: {option} is not an option of " \
                                      f"'spikelab {' '.join(sub)}'"


@pytest.mark.parametrize(("block", "cmd"), cases())
def test_doc_block_runs(block: Block, cmd: str | None, scratch: Path):
    if block.skip:
        pytest.skip(f"marked in the doc: {block.skip}")
    if cmd is not None:
        _shell(cmd, scratch)
    elif block.lang == "python":
        proc = _run([sys.executable, "-c", block.body], scratch)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    elif block.lang == "sql":
        import duckdb

        con = duckdb.connect(":memory:")
        try:
            os.chdir(scratch)
            con.execute(block.body).fetchall()
        finally:
            os.chdir(ROOT)
            con.close()
    elif block.lang == "toml":
        _toml(block, scratch)


def _shell(cmd: str, scratch: Path) -> None:
    if "&&" in cmd:  # "pip install . && spikelab run ...": the package is installed already
        cmd = cmd.split("&&")[-1].strip()
    if cmd in NOT_RUN:
        pytest.skip(NOT_RUN[cmd])
    args = shlex.split(cmd)
    if args[0] != "spikelab":
        pytest.fail(f"a documented command this test does not know how to run: {cmd}")
    if PLACEHOLDER.search(cmd):
        _check_synopsis(cmd, scratch)
        return
    for part, extra in REWRITES:
        if part in cmd:
            if extra is None:
                _check_synopsis(cmd, scratch)
                return
            args += extra
    if args[1] == "emulate" or (args[1] == "compare" and "out/emu" in cmd):
        if not _can_emulate():
            pytest.skip("emulation needs root and network namespaces")
    if args[1] == "validate" and args[2] == "bad.toml":
        (scratch / "bad.toml").write_text("[[flow]]\n[flow.tcp.rto]\nmin = -1\n")
        proc = _run([sys.executable, "-m", "spikelab", *args[1:]], scratch)
        assert proc.returncode == 2
        assert proc.stderr.strip() == ("spikelab: error: bad.toml: flow[0].tcp.rto.min: must "
                                       "be >= 0, got -1")
        return
    proc = _run([sys.executable, "-m", "spikelab", *args[1:]], scratch)
    assert proc.returncode == 0, f"{cmd}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr


def _toml(block: Block, scratch: Path) -> None:
    import spikelab

    text = block.body
    data = tomllib.loads(text)
    if "study" in data:
        from spikelab import study

        d = scratch / "doc-study"
        d.mkdir(exist_ok=True)
        (d / "study.toml").write_text(text)
        shutil.copy(ROOT / "examples" / "sweep.toml", d / "scenario.toml")
        study.parse(d)
        return
    if "sweep" in data and "flow" not in data:
        base = (ROOT / "examples" / "sweep.toml").read_text()
        base = base[: base.index("[sweep]")]
        spikelab.sweep_plan(base + text)
        return
    if "flow" in data and not isinstance(data["flow"], list):
        text = "[[flow]]\n" + text  # a [flow.tcp] fragment of the one flow
    spikelab.validate(text)


def test_every_doc_block_is_collected():
    """A block in a language this test does not run must be marked, not silently ignored."""
    for b in blocks():
        assert b.lang in ("sh", "bash", "python", "sql", "toml", "") or b.skip, b.id
