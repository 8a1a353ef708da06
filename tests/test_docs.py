"""The docs work: every command and code block in README.md and docs/*.md is executed.

What runs, in document order (README first), in one scratch directory that sees the
repository's ``examples/`` and ``benches/`` (so later blocks read what earlier ones wrote, such
as ``out/lte``):

- every line of a ``sh``/``bash`` block, and every ``$ `` line of an output block, as a
  ``spikelab`` command; where the doc shows the output, the real output must match it (wall
  times masked, a documented line ending in ``...`` is a prefix), and an output that starts
  with ``spikelab: error:`` means exit status 2 instead of 0;
- every inline ``spikelab ...`` command of the prose that names a file or directory;
- every ``python`` block, written to a file and run as a script (as a user would);
- every ``sql`` block in DuckDB; every ``toml`` block through ``spikelab.validate`` (a scenario
  fragment), ``spikelab.sweep_plan`` (a ``[sweep]``) or the study parser (a ``[study]``).

Synopsis lines and inline references (placeholders such as OUTDIR, ``[--seed N]``, ``a|b``, or
a bare ``spikelab SUB``) cannot run as written: their subcommand and every option they name
must exist in ``spikelab SUB --help``.

Nothing is skipped or shortened silently: what is rewritten is in ``REWRITES``, what is not run
in ``NOT_RUN``, outputs that are measurements are in ``NO_COMPARE``, files a doc assumes in
``FILES``, and a block can be skipped only by a marker in the doc itself,
``<!-- doc-test: skip (reason) -->`` on the line before it.

Below the block tests: the detector table of docs/results.md is regenerated from real runs, and the
column tables of docs/results.md are compared with the columns the code writes.
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
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)

# Commands that are this test suite itself.
NOT_RUN = {
    "bash scripts/test-all.sh": "the test suite itself (this test is part of it)",
}
# Made shorter, visibly: (substring of the command, arguments appended).
REWRITES = [
    # The emulator runs in real time: 4 s of the 20 s scenario show it works.
    ("spikelab emulate examples/", ["--set", "sim.duration=4s"]),
]
# Documented outputs that are measurements of a real-time system, not reproducible.
NO_COMPARE = {
    "spikelab compare out/sim out/emu": "the emulated run is a real-time measurement",
}
# Files a doc's command assumes the reader has (docs/traces.md's ping log and Mahimahi trace
# ship in examples/traces/, which the scratch directory sees).
FILES = {
    # README: "A malformed scenario gets one line naming the field": the bad.toml shown.
    "bad.toml": "[[flow]]\n[flow.tcp.rto]\nmin = -1\n",
}
# Runnable commands without a path argument (inline, in prose) that are run, not only checked.
RUN_INLINE = {"spikelab bench", "spikelab study list"}
WALL = re.compile(r"in [\d.,]+ s wall")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    lang: str
    body: str
    skip: str | None
    inline: bool = False

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}:{'inline' if self.inline else self.lang or 'text'}"


def blocks() -> list[Block]:
    """Fenced blocks and inline ``spikelab ...`` spans of every doc, in document order."""
    out = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        doc = str(path.relative_to(ROOT))
        found = []
        for m in FENCE.finditer(text):
            line = text[: m.start()].count("\n") + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.search(before)
            found.append(Block(doc, line, m.group(1), m.group(2),
                               skip.group(1) if skip else None))
        # Inline spans, outside the fenced blocks (blanked keeping line numbers).
        prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for m in re.finditer(r"`(spikelab [^`]+)`", prose):
            line = prose[: m.start()].count("\n") + 1
            found.append(Block(doc, line, "sh", " ".join(m.group(1).split()), None,
                               inline=True))
        out += sorted(found, key=lambda b: b.line)
    return out


def shell_commands(block: Block) -> list[tuple[str, list[str]]]:
    """(command, documented output lines) of a shell block, or of the ``$ `` lines of an
    output block (the lines after a ``$ `` line up to the next one are its output)."""
    if block.lang in ("sh", "bash"):
        lines, out, current = block.body.splitlines(), [], ""
        for ln in lines:
            ln = re.sub(r"\s{2,}#.*$", "", ln).rstrip()
            if not ln.strip() or ln.lstrip().startswith("#"):
                continue
            if ln.endswith("\\"):
                current += ln[:-1] + " "
                continue
            out.append(((current + ln).strip(), []))
            current = ""
        return out
    out = []
    for ln in block.body.splitlines():
        if ln.startswith("$ "):
            out.append((ln[2:].strip(), []))
        elif out:
            out[-1][1].append(ln.rstrip())
    return out


def cases():
    out, seen = [], set()

    def unique(name: str) -> str:  # two inline commands on one line
        n = 2
        base = name
        while name in seen:
            name, n = f"{base}.{n}", n + 1
        seen.add(name)
        return name

    for b in blocks():
        if b.lang in ("sh", "bash", ""):
            for i, (cmd, expected) in enumerate(shell_commands(b)):
                out.append(pytest.param(b, cmd, expected, id=unique(f"{b.id}:{i}")))
        elif b.lang in ("python", "sql", "toml"):
            out.append(pytest.param(b, None, None, id=unique(b.id)))
    return out


CASES = cases()
DONE: set[str] = set()  # cases run in this session's scratch directory


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("docs")
    for name in ("examples", "benches"):
        (d / name).symlink_to(ROOT / name)
    for name, text in FILES.items():
        (d / name).write_text(text)
    return d


def _can_emulate() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None and \
        subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0


def _run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def is_synopsis(cmd: str) -> bool:
    """A synopsis or a reference in prose, not a command: placeholders (OUTDIR, FILE,
    KEY=VALUE, NAME|DIR), optional parts ``[--seed N]``, ``...``, or no argument at all."""
    args = shlex.split(cmd)
    for a in args:
        if " " in a:  # a quoted SQL statement or value
            continue
        if re.search(r"^\[|^[^\[]*\]$|\||\.\.\.|^[A-Z][A-Z0-9_]*(\.toml)?$|^[A-Z_]+=[A-Z_]+$"
                     r"|^[A-Z0-9]+:[A-Z0-9]+$", a):
            return True
    return False


def _subcommand(words: list[str]) -> list[str]:
    sub = [w for w in words[1:3] if re.fullmatch(r"[a-z]+", w)]
    return sub[:2] if sub and sub[0] in ("study", "trace") and len(sub) > 1 else sub[:1]


def _check_synopsis(cmd: str, cwd: Path) -> None:
    words = cmd.replace("[", " ").replace("]", " ").replace("|", " ").split()
    assert words[0] == "spikelab", cmd
    sub = _subcommand(words)
    proc = _run([sys.executable, "-m", "spikelab", *sub, "--help"], cwd)
    assert proc.returncode == 0, (cmd, proc.stderr)
    for option in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", cmd):
        assert option in proc.stdout, f"{cmd}: {option} is not an option of " \
                                      f"'spikelab {' '.join(sub)}'"


def _normalise(line: str) -> str:
    return WALL.sub("in X s wall", line.rstrip())


def _compare_output(cmd: str, expected: list[str], actual: str) -> None:
    """The documented output, line for line (a documented line ending in ``...`` is a
    prefix of the real one; wall times are masked)."""
    expected = [_normalise(x) for x in expected]
    got = [_normalise(x) for x in actual.rstrip("\n").splitlines()]
    assert len(got) == len(expected), f"{cmd}: the doc shows {len(expected)} lines, the " \
                                      f"command printed {len(got)}:\n{actual}"
    for want, have in zip(expected, got, strict=True):
        if want.endswith("..."):
            assert have.startswith(want[:-3].rstrip()), f"{cmd}:\n doc: {want}\n got: {have}"
        else:
            assert have == want, f"{cmd}:\n doc: {want}\n got: {have}"


@pytest.mark.parametrize(("block", "cmd", "expected"), CASES)
def test_doc_block_runs(block: Block, cmd: str | None, expected: list[str] | None,
                        scratch: Path, request):
    # A block may read what an earlier one wrote (out/lte): when this case was selected alone
    # (-k), the earlier cases run first, as the reader would have run them.
    this = request.node.callspec.id
    assert this in {c.id for c in CASES}, this
    for prior in CASES:
        if prior.id == this:
            break
        if prior.id not in DONE:
            DONE.add(prior.id)
            try:
                _execute(*prior.values, scratch)
            except pytest.skip.Exception:
                pass
            except BaseException as exc:
                pytest.fail(f"the earlier block {prior.id} failed: {exc}")
    DONE.add(this)
    _execute(block, cmd, expected, scratch)


def _execute(block: Block, cmd: str | None, expected: list[str] | None, scratch: Path) -> None:
    if block.skip:
        pytest.skip(f"marked in the doc: {block.skip}")
    if cmd is not None:
        _shell(cmd, expected or [], scratch, inline=block.inline)
    elif block.lang == "python":
        script = scratch / f"doc_{Path(block.doc).stem}_{block.line}.py"
        script.write_text(block.body)
        proc = _run([sys.executable, script.name], scratch)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
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


def _shell(cmd: str, expected: list[str], scratch: Path, inline: bool = False) -> None:
    if "&&" in cmd:  # "pip install . && spikelab run ...": the package is installed already
        cmd = cmd.split("&&")[-1].strip()
    if cmd in NOT_RUN:
        pytest.skip(NOT_RUN[cmd])
    args = shlex.split(cmd)
    if args[0] != "spikelab":
        pytest.fail(f"a documented command this test does not know how to run: {cmd}")
    if is_synopsis(cmd) or len(args) < 2:
        _check_synopsis(cmd, scratch)
        return
    if inline and cmd not in RUN_INLINE and not any(
            not a.startswith("-") and ("/" in a or a.endswith(".toml")) for a in args[2:]):
        _check_synopsis(cmd, scratch)  # a reference in prose, such as `spikelab run -o`
        return
    rewritten = False
    for part, extra in REWRITES:
        if part in cmd:
            args += extra
            rewritten = True
    # What a command needs from the machine: root and namespaces (emulation, the kernel and
    # usrsctp suites), libusrsctp (SCTP emulation), ns-2.35 (the ns-2 suite).
    real = args[1] == "emulate" or (args[1] == "compare" and "out/emu" in cmd)
    sctp = real and "sctp" in cmd
    if args[1] == "fidelity" and "--list" not in args:
        against = args[args.index("--against") + 1] if "--against" in args[:-1] else "kernel"
        if against == "ns2" and shutil.which("ns") is None:
            pytest.skip("the ns-2 suite needs ns-2.35 (apt install ns2)")
        real, sctp = against != "ns2", against == "usrsctp"
    if real and not _can_emulate():
        pytest.skip("emulation needs root and network namespaces")
    if sctp:
        from spikelab.emulate import usrsctp
        if not usrsctp.available():
            pytest.skip("SCTP emulation needs libusrsctp (apt install libusrsctp2)")
    proc = _run([sys.executable, "-m", "spikelab", *args[1:]], scratch)
    assert "Traceback" not in proc.stderr, proc.stderr
    error = bool(expected) and expected[0].startswith("spikelab: error:")
    assert proc.returncode == (2 if error else 0), f"{cmd}\n{proc.stderr}"
    if expected and not rewritten and cmd not in NO_COMPARE:
        _compare_output(cmd, expected, proc.stderr if error else proc.stdout)


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
    elif "flow" not in data and "path" in data:
        text += "\n[[flow]]\n"  # a path fragment: checked with the default flow over it
    spikelab.validate(text)


def test_every_doc_block_is_collected():
    """A block in a language this test does not run must be marked, not silently ignored;
    a block or inline command is found in every doc that shows one."""
    found = blocks()
    for b in found:
        assert b.lang in ("sh", "bash", "python", "sql", "toml", "") or b.skip, b.id
    assert {b.doc for b in found if b.inline} >= {"README.md", "docs/results.md"}
    assert sum(1 for b in found if b.lang == "python") >= 3


def test_synopsis_detection():
    """The rule that decides what runs and what is only checked against --help."""
    assert is_synopsis("spikelab run SCENARIO.toml -o OUTDIR [--seed N]")
    assert is_synopsis("spikelab study run NAME|DIR -o OUT")
    assert is_synopsis("spikelab run FILE --set KEY=VALUE ... --seed SEED")
    assert is_synopsis("spikelab plot OUTDIR --zoom 10:13")
    assert not is_synopsis("spikelab run examples/lte-handover.toml -o out/nr "
                           "--set 'flow[0].tcp.variant=\"newreno\"'")
    assert not is_synopsis("spikelab run x.toml -o o --set 'flow.tcp.spurious=[\"frto\"]'")
    assert not is_synopsis('spikelab query out/sw "SELECT variant FROM runs GROUP BY 1"')


def test_output_comparison_catches_a_stale_doc():
    """A documented output that no longer matches the command's is a failure."""
    doc = ["x.toml: seed 2, 57,736 events in 0.02 s wall", "  [holds] a-claim: In every..."]
    _compare_output("c", doc, "x.toml: seed 2, 57,736 events in 1.50 s wall\n"
                    "  [holds] a-claim: In every run the spike ...\n")
    with pytest.raises(AssertionError, match="doc: x.toml: seed 2, 57,736"):
        _compare_output("c", doc, "x.toml: seed 2, 57,737 events in 0.02 s wall\n"
                        "  [holds] a-claim: In every run\n")
    with pytest.raises(AssertionError, match="doc: "):
        _compare_output("c", doc, "x.toml: seed 2, 57,736 events in 0.02 s wall\n"
                        "  [FAILS] a-claim: In every run\n")


# --- The detector table of docs/results.md, regenerated -----------------------------------------------

# The table's columns -> runs.parquet columns (one definition of the spurious count: "timeouts"
# and "spurious timeouts" count expiries, per-episode counts say "episodes").
DETECTOR_COLUMNS = {
    "timeouts": "rto_count",
    "spurious timeouts (truth)": "rto_spurious_true",
    "spurious episodes (truth)": "rto_episodes_spurious_true",
    "episodes detected": "rto_spurious_detected",
    "undos": "undo_count",
}


def _markdown_table(text: str, first_header: str) -> tuple[list[str], list[list[str]]]:
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines)
                 if ln.startswith("|") and ln.strip("| ").startswith(first_header))
    cells = lambda ln: [c.strip() for c in ln.strip().strip("|").split("|")]  # noqa: E731
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        rows.append(cells(ln))
    return cells(lines[start]), rows


def test_detector_table_matches_real_runs():
    """docs/results.md "Detectors scored against the ground truth": the lossless spike, Reno, block_fr_after_rto, seed
    1, one row per detector; every number regenerated from a run."""
    import spikelab

    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert "Reno, `block_fr_after_rto = true`, seed 1" in doc
    header, rows = _markdown_table(doc, "detector")
    assert header[0] == "detector" and header[-1] == "MB in 20 s", header
    assert set(header[1:-1]) == set(DETECTOR_COLUMNS), header
    assert [r[0] for r in rows] == ["none", "eifel", "dsack", "frto"]
    for row in rows:
        spurious = "[]" if row[0] == "none" else f'["{row[0]}"]'
        res = spikelab.run(ROOT / "examples" / "lte-handover-lossless.toml", seed=1,
                           overrides=[f"flow.tcp.spurious={spurious}",
                                      "flow.tcp.block_fr_after_rto=true"],
                           trace="summary", plots=False, progress=False)
        got = res.runs.to_pylist()[0]
        for name, cell in zip(header[1:-1], row[1:-1], strict=True):
            assert int(cell) == got[DETECTOR_COLUMNS[name]], (row[0], name, got)
        assert row[-1] == f"{got['bytes_delivered'] / 1e6:.2f}", (row[0], got)


# --- docs/results.md against the tables the code writes --------------------------------------

_TYPES = {"int32": "int32", "int64": "int64", "double": "float64"}


def _doc_columns(section: str, first_header: str) -> dict[str, str]:
    """{column name or regex: documented type} of the first table after a heading."""
    return {k: v[0] for k, v in _doc_column_units(section, first_header).items()}


def _doc_column_units(section: str, first_header: str) -> dict[str, tuple[str, str]]:
    """{column name or regex: (documented type, documented unit)} of the first table after a
    heading."""
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    part = text[text.index(section):]
    _, rows = _markdown_table(part, first_header)
    out = {}
    for row in rows:
        for name in re.findall(r"`([^`]+)`", row[0]):
            pattern = re.escape(name).replace("<d>", "(eifel|dsack|frto|linux)")
            pattern = pattern.replace("<path>", "[a-z0-9]+").replace("<stage>", "[a-z0-9_]+")
            out[pattern] = (row[1] if len(row) > 1 else "", row[2] if len(row) > 2 else "")
    return out


def _type_name(arrow_type) -> str:
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        return f"dictionary<{arrow_type.value_type}>"
    return _TYPES.get(str(arrow_type), str(arrow_type))


def _match(documented: dict[str, tuple[str, str]], schema, what: str) -> None:
    """Every column written is documented with its type and its unit (the file's field
    metadata, which every column carries with a description), and every documented one is
    written."""
    names = [f.name for f in schema]
    for field in schema:
        hits = [p for p in documented if re.fullmatch(p, field.name)]
        # An exact name wins over a pattern (drops_total is also drops_<path>_<stage>).
        exact = [p for p in hits if p == re.escape(field.name)]
        assert hits, f"{what}: column {field.name} is written but not in docs/results.md"
        doc_type, doc_unit = documented[(exact or hits)[0]]
        assert doc_type == _type_name(field.type), \
            f"{what}.{field.name}: docs say {doc_type}, the file has {field.type}"
        meta = field.metadata or {}
        assert meta.get(b"description"), f"{what}.{field.name}: no description in the file"
        unit = meta.get(b"unit", b"?").decode()
        assert doc_unit == unit, \
            f"{what}.{field.name}: docs say unit {doc_unit!r}, the file's metadata {unit!r}"
    for pattern in documented:
        assert any(re.fullmatch(pattern, n) for n in names), \
            f"{what}: docs/results.md documents {pattern}, which the code does not write"


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory):
    """The loss example with every detector on, packets traced to the spike's end."""
    import spikelab

    out = tmp_path_factory.mktemp("cols") / "run"
    spikelab.run(ROOT / "examples" / "lte-handover.toml", out=out, trace="packets",
                 overrides=["sim.duration=12s", 'flow.tcp.profile="linux"',
                            'flow.tcp.spurious=["eifel", "dsack", "frto", "linux"]'],
                 plots=False,
                 progress=False)
    return out


def test_results_doc_lists_every_column_the_code_writes(traced_run):
    import pyarrow.parquet as pq

    for table, section in (("runs", "## runs.parquet"), ("timeseries", "## timeseries.parquet"),
                           ("packets", "## packets.parquet")):
        _match(_doc_column_units(section, "column"),
               pq.read_schema(traced_run / f"{table}.parquet"), table)


def test_results_doc_lists_every_timeseries_var_and_packet_event(traced_run, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    import spikelab

    # The SCTP variables and events come from an SCTP run: the walk-away example fails over.
    sctp = tmp_path / "sctp"
    spikelab.run(ROOT / "examples" / "sctp-walkaway.toml", out=sctp, trace="packets",
                 plots=False, progress=False)
    ts = [v for run in (traced_run, sctp)
          for v in pq.read_table(run / "timeseries.parquet").column("var").to_pylist()]
    documented = set(_doc_columns("| `var` | unit", "`var`"))
    assert {re.escape(v) for v in ts} == documented
    pk = pa.concat_tables([pq.read_table(run / "packets.parquet").select(["event", "cause"])
                           for run in (traced_run, sctp)], promote_options="permissive")
    events = set(_doc_columns("| `event` | meaning", "`event`"))
    seen = {re.escape(v) for v in pk.column("event").to_pylist()}
    # A probe leaves only when the flow runs TLP and a tail stalls: documented, maybe unseen.
    assert seen <= events and events - seen <= {"tlp"}, (seen, events)
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    for cause in set(pk.column("cause").drop_null().to_pylist()):
        assert f"`{cause}`" in text, cause


def test_results_doc_lists_the_sweep_columns(tmp_path):
    """docs/results.md, "Sweeps": run_id, point, replication, seed, the parameters, status,
    error, then the single-run metrics."""
    import pyarrow.parquet as pq
    import spikelab

    text = (ROOT / "examples" / "sweep.toml").read_text()
    text = text.replace('duration = "20s"', 'duration = "2s"').replace(
        "replications = 3", "replications = 1").replace(
        '["reno", "newreno", "sack"]', '["reno"]')
    (tmp_path / "s.toml").write_text(text)
    spikelab.sweep(tmp_path / "s.toml", tmp_path / "out", jobs=1)
    names = pq.read_schema(tmp_path / "out" / "runs.parquet").names
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert "`runs.parquet` columns: `run_id`, `point`, `replication`, `seed`, one column per " \
           "swept\nparameter, `status` (`ok` or `failed`), `error`" in doc
    assert names[:4] == ["run_id", "point", "replication", "seed"], names
    assert names[4:8] == ["variant", "loss", "status", "error"], names
    single = _doc_columns("## runs.parquet", "column")
    for n in names[8:]:
        assert any(re.fullmatch(p, n) for p in single), n
    # The sweep's own columns and its parameters carry a unit and a description too.
    for field in pq.read_schema(tmp_path / "out" / "runs.parquet"):
        assert b"unit" in field.metadata and field.metadata[b"description"], field.name
