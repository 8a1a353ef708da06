"""A fuzz harness over scenario files: random valid scenarios from a small grammar of the
documented format, and mutations of them (wrong types, out-of-range and non-finite numbers,
unknown keys, truncated TOML, duplicate names, empty strings). Every case goes through
validation and, when valid, a short run. Nothing may crash or raise anything but a
ScenarioError (SimulationError for a run the core stops); an invalid scenario gets one line that
names a field; a valid file transfer is delivered exactly once, in order.

The fixed seed set runs in CI in well under a minute; ``pytest --fuzz-long`` runs many more.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys

import pytest

import spikelab
from spikelab import _core

FAST_SEEDS = range(120)
LONG_SEEDS = range(120, 3000)
# A field path at the start of a one-line error: "flow[0].tcp.rto.min: ..." or TOML trouble.
FIELD = r"^((sim|path|flow|sweep)[\w\[\].\"-]*|not valid TOML|flow): "


def _duration(r: random.Random) -> str:
    return r.choice(['"40ms"', '"1.5s"', "0.2", '"250us"', "1", '"2s"'])


def _stage(r: random.Random) -> list[str]:
    kind = r.choice(["rate", "delay", "delay", "loss"])
    lines = ["type = \"%s\"" % kind]
    if kind == "rate":
        lines.append(f'rate = "{r.choice([64, 384, 2000, 10000, 100000])}kbps"')
        lines.append(r.choice([f"queue = {r.randint(1, 300)}",
                               f'queue_bytes = "{r.randint(2, 400)}KB"', ""]))
    elif kind == "delay":
        choice = r.random()
        if choice < 0.5:
            lines.append(f"delay = {_duration(r)}")
        else:
            t1 = r.randint(10, 1500)
            lines.append(f"profile = [[0, {r.randint(0, 80)}, 0.0], [{t1}, {r.randint(0, 80)}, "
                         f"{r.choice([0.0, 0.01, 0.2])}], [{t1}, {r.randint(200, 1500)}, 0.0], "
                         f"[{t1 + r.randint(0, 800)}, {r.randint(0, 80)}, 0.0]]")
        if r.random() < 0.2:
            lines.append(f"reorder = {r.choice(['true', 'false'])}")
    else:
        model = r.choice(["bernoulli", "gilbert_elliott", "deterministic"])
        if model == "bernoulli":
            lines.append(f"p = {r.choice([0.0, 0.001, 0.02, 0.1])}")
        elif model == "gilbert_elliott":
            lines += ['model = "gilbert_elliott"', f"p = {r.choice([0.01, 0.05])}",
                      f"r = {r.choice([0.3, 0.8])}"]
        else:
            lines.append(f"nth = [{r.randint(1, 20)}, {r.randint(21, 60)}]")
    return [ln for ln in lines if ln]


def valid_scenario(r: random.Random) -> tuple[str, list[int | None]]:
    """A valid scenario and, per flow, its file size (None for bulk)."""
    out = ["[sim]", f'duration = "{r.choice([0.5, 1, 2])}s"', f"seed = {r.randint(0, 2**40)}",
           'trace = "summary"']
    for name in ("fwd", "rev"):
        if r.random() < 0.2:
            continue  # the default link
        out.append(f"[path.{name}]")
        # Keep a delay or a rate in every declared path: a bulk flow over a path with neither
        # would stop time (an error, tested elsewhere, and slow to reach).
        stages = [["type = \"delay\"", f'delay = "{r.randint(1, 60)}ms"']]
        stages += [_stage(r) for _ in range(r.randint(0, 3))]
        r.shuffle(stages)
        for st in stages:
            out.append(f"[[path.{name}.stage]]")
            out += st
    sizes: list[int | None] = []
    for i in range(r.randint(1, 3)):
        out.append("[[flow]]")
        if r.random() < 0.5:
            size = r.randint(1, 400_000)
            sizes.append(size)
            out.append(f'app = {{ type = "file", size = {size} }}')
        else:
            sizes.append(None)
        out.append(f'start = "{r.choice([0, 10, 300])}ms"')
        tcp = [f'variant = "{r.choice(["reno", "newreno", "sack"])}"',
               f"mss = {r.choice([536, 1000, 1448])}",
               f"initial_window = {r.choice([1, 2, 4, 10])}",
               f"delayed_ack = {r.choice(['true', 'false'])}",
               f"timestamps = {r.choice(['true', 'false'])}"]
        if r.random() < 0.4:  # the profile's Eifel detector needs timestamps
            tcp = [t for t in tcp if not t.startswith("timestamps")] + ['profile = "linux"']
        out.append("[flow.tcp]")
        out += tcp
    return "\n".join(out) + "\n", sizes


MUTATIONS = [
    ("wrong type", lambda r, t: t.replace("duration = ", "duration = true #", 1)),
    ("negative", lambda r, t: t.replace("mss = ", "mss = -", 1)),
    ("huge", lambda r, t: t.replace('duration = "', 'duration = "1e300', 1)),
    ("nan", lambda r, t: t.replace("initial_window = ", "initial_window = nan #", 1)),
    ("inf rate", lambda r, t: t + '[path.x]\n[[path.x.stage]]\ntype = "rate"\nrate = inf\n'),
    ("unknown key", lambda r, t: t.replace("[sim]", "[sim]\nspeed = 3", 1)),
    ("truncated", lambda r, t: t[: r.randint(1, max(1, len(t) - 1))]),
    ("empty string", lambda r, t: t.replace('variant = "', 'variant = "" #', 1)),
    ("duplicate stage name", lambda r, t: t + '[path.d]\n[[path.d.stage]]\ntype = "delay"\n'
                                          'name = "a"\ndelay = 1\n[[path.d.stage]]\n'
                                          'type = "delay"\nname = "a"\ndelay = 1\n'),
    ("seed overflow", lambda r, t: t.replace("seed = ", "seed = -", 1)),
    ("bad path name", lambda r, t: t.replace("[[flow]]", '[[flow]]\nfwd = ""', 1)),
    ("table for a number", lambda r, t: t.replace("mss = ", "mss = { a = 1 } #", 1)),
]


def _check_error(exc: Exception, text: str) -> None:
    import re

    msg = str(exc)
    assert "\n" not in msg, msg
    assert re.match(FIELD, msg), f"{msg!r} names no field\n{text}"
    for word in ("u64", "i64", "f64", "struct ", "Spec", "NumOrStr", "sequence", "panicked"):
        assert word not in msg, msg


def _check_run(text: str, sizes: list[int | None]) -> None:
    try:
        res = spikelab.run(text, progress=False)
    except _core.SimulationError as exc:  # a bound, never a crash
        assert "internal error" not in str(exc), f"{exc}\n{text}"
        return
    rows = res.runs.to_pylist()
    assert len(rows) == len(sizes)
    for row, size in zip(rows, sizes, strict=True):
        assert row["bytes_delivered"] >= 0
        if size is not None:
            assert row["bytes_delivered"] <= size, text
            if not math.isnan(row["completion_time_s"]):
                assert row["bytes_delivered"] == size, text


def _case(seed: int) -> None:
    r = random.Random(seed)
    text, sizes = valid_scenario(r)
    spikelab.validate(text)  # a valid scenario from the grammar must validate
    _check_run(text, sizes)
    name, mutate = MUTATIONS[seed % len(MUTATIONS)]
    mutated = mutate(r, text)
    try:
        spikelab.validate(mutated)
    except spikelab.ScenarioError as exc:
        _check_error(exc, mutated)
        return
    # Some mutations leave a valid scenario (a truncation at a line end): then it must run.
    _check_run(mutated, [None] * len(spikelab.validate(mutated)["flow"]))


@pytest.mark.parametrize("block", range(0, len(FAST_SEEDS), 20))
def test_fuzz_fixed_seeds(block):
    for seed in FAST_SEEDS[block:block + 20]:
        _case(seed)


def test_fuzz_long(request):
    if not request.config.getoption("--fuzz-long"):
        pytest.skip("the long fuzz run needs --fuzz-long")
    for seed in LONG_SEEDS:
        _case(seed)


@pytest.mark.parametrize("seed", [3, 5, 7, 11])
def test_the_cli_gives_one_line_errors_on_mutated_files(tmp_path, seed):
    r = random.Random(seed)
    text, _ = valid_scenario(r)
    name, mutate = MUTATIONS[seed % len(MUTATIONS)]
    (tmp_path / "s.toml").write_text(mutate(r, text))
    for cmd in (["validate", "s.toml"], ["run", "s.toml", "-o", "out", "-q"]):
        proc = subprocess.run([sys.executable, "-m", "spikelab", *cmd], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode in (0, 2), (name, proc.stderr)
        assert "Traceback" not in proc.stderr
        if proc.returncode == 2:
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("spikelab: error: s.toml: "), \
                proc.stderr
