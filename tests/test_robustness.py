"""Nothing crashes, nothing is lost (issue 10): interruption of single runs, output directories
that know their kind, stale temporaries, read-only queries, range checks, the core's errors in
the CLI, bounded memory, sweeps that isolate a crashing run, sweep parameters checked up front,
and figures that scale to many flows. Each test pins a defect that was observed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import spikelab
from spikelab.figures import run as plots
from spikelab.store import results
from spikelab.cli import main
from conftest import PROMPT_EXIT_S

ROOT = Path(__file__).resolve().parents[1]
LONG = '[sim]\nduration = "100000s"\n[[flow]]\n'  # about 6 min uninterrupted


def spikelab_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "spikelab", *args]


def one_line_error(capsys, code: int, expected_code: int = 2) -> str:
    err = capsys.readouterr().err
    assert code == expected_code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spikelab: error: "), err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------------------- interrupts


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_exits_130_within_a_second_with_an_interrupted_manifest(tmp_path,
                                                                                   sig):
    (tmp_path / "s.toml").write_text(LONG)
    out = tmp_path / "out"
    proc = subprocess.Popen(spikelab_cmd("run", "s.toml", "-o", "out", "--trace",
                                         "timeseries"),
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 60
    # The streamed timeseries file appears (under a temporary name) once the run is going.
    while time.monotonic() < deadline and not list(out.glob(".timeseries.parquet.*.tmp")):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - sent < PROMPT_EXIT_S
    assert err.strip() == "spikelab: interrupted"  # not "FATAL: exception not rethrown"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["kind"] == "run"
    assert 0 < manifest["reached_s"] < 100000 and manifest["files"] == []
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))
    with pytest.raises(results.OutdirError, match="interrupted"):
        spikelab.load(out)


def test_stale_temporaries_of_a_dead_writer_are_swept_by_the_next_write(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = out / f".runs.parquet.{dead}-deadbeef.tmp"
    live = out / f".runs.parquet.{os.getpid()}-cafef00d.tmp"  # a writer still at work
    stale.write_bytes(b"half")
    live.write_bytes(b"busy")
    spikelab.run("[sim]\nduration = \"1s\"\n[[flow]]\n", out=out, progress=False)
    assert not stale.exists()
    assert live.exists()


# ---------------------------------------------------------------------------------- outdirs


@pytest.fixture
def sweep_dir(tmp_path) -> Path:
    (tmp_path / "sw.toml").write_text('[sim]\nduration = "1s"\n[[flow]]\n[sweep]\n'
                                      '[sweep.params]\n"flow.tcp.variant" = ["reno", "sack"]\n')
    spikelab.sweep(tmp_path / "sw.toml", tmp_path / "sw", jobs=1, progress=False)
    return tmp_path / "sw"


def test_a_run_is_not_written_onto_a_sweep_without_force(tmp_path, sweep_dir, capsys):
    (tmp_path / "s.toml").write_text('[sim]\nduration = "1s"\n[[flow]]\n')
    before = sorted(p.name for p in sweep_dir.iterdir())
    line = one_line_error(capsys, main(["run", str(tmp_path / "s.toml"), "-o",
                                        str(sweep_dir)]))
    assert line.endswith("holds a sweep's results; refusing to write a run's results there "
                         "(use another directory, or --force to replace it)")
    assert sorted(p.name for p in sweep_dir.iterdir()) == before
    assert main(["summary", str(sweep_dir)]) == 0  # the sweep is intact
    assert main(["run", str(tmp_path / "s.toml"), "-o", str(sweep_dir), "--force", "-q"]) == 0
    assert results.kind_of(sweep_dir) == "run"


def test_an_empty_output_directory_is_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text('[sim]\nduration = "1s"\n[[flow]]\n')
    line = one_line_error(capsys, main(["run", "s.toml", "-o", ""]))
    assert "output directory is empty" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_summary_on_a_run_and_compare_on_a_sweep_are_one_line_errors(tmp_path, sweep_dir,
                                                                     capsys):
    run_dir = tmp_path / "run"
    spikelab.run('[sim]\nduration = "1s"\n[[flow]]\n', out=run_dir, progress=False)
    line = one_line_error(capsys, main(["summary", str(run_dir)]))
    assert "holds a single run, not a sweep" in line
    line = one_line_error(capsys, main(["compare", str(sweep_dir), str(run_dir)]))
    assert "compare takes two single runs" in line


def test_an_interrupted_emulation_leaves_no_complete_looking_manifest(tmp_path, monkeypatch):
    from spikelab.emulate import kernel
    from spikelab.emulate import run as emu_run

    out = tmp_path / "emu"
    spikelab.run('[sim]\nduration = "1s"\n[[flow]]\n', out=out, progress=False)
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(kernel, "require_privileges", lambda: None)
    monkeypatch.setattr(kernel, "check_congestion_control", lambda *a: None)
    monkeypatch.setattr(emu_run, "_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        emu_run.emulate('[sim]\nduration = "1s"\n[[flow]]\n', out=out, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["kind"] == "emulate"


def test_emulation_checks_the_mss_against_the_veth_mtu():
    from spikelab.emulate import kernel
    from spikelab.emulate import run as emu_run

    text = '[[flow]]\ntcp = { mss = 65490, timestamps = true }\n'
    resolved, view, _, ccs = emu_run.resolve(text, [], ".")
    with pytest.raises(ValueError, match=r"^flow\[0\]\.tcp\.mss: 65490 bytes .* at most 65483$"):
        kernel.plan(view, resolved, ccs)


# ---------------------------------------------------------------------------------- limits


def test_query_is_read_only(tmp_path, capsys):
    out = tmp_path / "run"
    spikelab.run('[sim]\nduration = "1s"\n[[flow]]\n', out=out, progress=False)
    target = tmp_path / "leak.csv"
    for sql in (f"COPY (SELECT * FROM runs) TO '{target}'", "CREATE TABLE t AS SELECT 1",
                f"ATTACH '{tmp_path / 'x.db'}'", "SELECT 1; DROP VIEW runs"):
        line = one_line_error(capsys, main(["query", str(out), sql]))
        assert "only SELECT statements are allowed" in line
    assert not target.exists() and not (tmp_path / "x.db").exists()
    assert main(["query", str(out), "SELECT count(*) AS n FROM runs"]) == 0


@pytest.mark.parametrize("seed", ["-1", str(2**63)])
def test_seeds_outside_int64_are_one_line_errors(tmp_path, capsys, seed):
    (tmp_path / "s.toml").write_text('[sim]\nduration = "1s"\n[[flow]]\n')
    line = one_line_error(capsys, main(["run", str(tmp_path / "s.toml"), "--seed", seed]))
    assert "seed: must be in [0, 9223372036854775807]" in line


@pytest.mark.parametrize("args, expected", [
    (["--rate", "-1Mbps"], "argument --rate: expected a rate > 0 such as 10Mbps, got '-1Mbps'"),
    (["--share", "-0.5"], "argument --share: expected a number in (0, 1], got '-0.5'"),
])
def test_a_negative_option_value_gets_the_options_own_check(tmp_path, capsys, args, expected):
    # argparse took "-1Mbps" for an unknown option and said only "expected one argument".
    with pytest.raises(SystemExit) as exit_:
        main(["trace", "import", "pcap", str(tmp_path / "x.pcap"), "-o", str(tmp_path / "x.csv"),
              *args])
    line = one_line_error(capsys, exit_.value.code)
    assert expected in line
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("command", [["validate"], ["run", "-q"], ["sweep", "-q"]])
def test_a_scenario_that_is_not_utf8_is_named(tmp_path, capsys, command):
    # Was "spikelab: error: 'utf-8' codec can't decode byte 0xe9 ...", without the file.
    f = tmp_path / "s.toml"
    f.write_bytes(b"[[flow]]\n# caf\xe9\n")
    argv = [*command, str(f)] + (["-o", str(tmp_path / "out")] if command[0] != "validate"
                                  else [])
    line = one_line_error(capsys, main(argv))
    assert line == (f"spikelab: error: {f}: not UTF-8 text (byte 0xe9 at offset 14); "
                    f"a scenario is a UTF-8 TOML file")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["validate"], ["run", "-q", "--no-plots"]])
def test_a_byte_order_mark_is_read_past(tmp_path, capsys, command):
    # Windows editors start a UTF-8 file with one; it was "not valid TOML ... line 1, column 1".
    f = tmp_path / "s.toml"
    f.write_bytes(b'\xef\xbb\xbf[sim]\nduration = "1s"\n[[flow]]\n')
    argv = [*command, str(f)] + (["-o", str(tmp_path / "out")] if command[0] != "validate"
                                  else [])
    assert main(argv) == 0, capsys.readouterr().err
    # Scenario text given to the Python API (the core reads past it too).
    import spikelab

    res = spikelab.run('\ufeff[sim]\nduration = "1s"\n[[flow]]\n', trace="summary",
                       plots=False, progress=False)
    assert res.runs.num_rows == 1


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--spin-us", "nan", "expected a number >= 0 (at most 1e9), got 'nan'"),
    ("--spin-us", "inf", "expected a number >= 0 (at most 1e9), got 'inf'"),
    ("--sample-ms", "nan", "expected a number >= 0 (at most 1e9), got 'nan'"),
    # int(1e-9 * 1e6) was a sampling period of 0 ns.
    ("--sample-ms", "1e-9", "expected a period of at least 0.001 ms, got '1e-9'"),
    ("--snaplen", "-1", "expected 0 (whole frames) or a number of bytes up to 262144, got '-1'"),
])
def test_emulate_refuses_options_it_cannot_configure_before_starting(tmp_path, capsys, option,
                                                                      value, expected):
    # Were "cannot convert float NaN to integer" and, for a negative snaplen, the emulator
    # started and failed with "invalid value: integer `-1`, expected u32 at line 1 column 408".
    (tmp_path / "s.toml").write_text("[[flow]]\n")
    with pytest.raises(SystemExit) as stop:  # argparse's exit, status 2
        main(["emulate", str(tmp_path / "s.toml"), "-o", str(tmp_path / "out"),
              f"{option}={value}"])
    line = one_line_error(capsys, stop.value.code)
    assert line.startswith(f"spikelab: error: argument {option}: {expected}"), line
    assert not (tmp_path / "out").exists()


def test_compare_refuses_an_empty_output_directory(tmp_path, capsys, monkeypatch):
    # `-o ''` wrote the figures into the working directory.
    (tmp_path / "s.toml").write_text('[sim]\nduration = "1s"\n[[flow]]\n')
    assert main(["run", str(tmp_path / "s.toml"), "-o", str(tmp_path / "r"), "-q",
                 "--no-plots"]) == 0
    capsys.readouterr()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    r = str(tmp_path / "r")
    line = one_line_error(capsys, main(["compare", r, r, "-o", ""]))
    assert line == "spikelab: error: the output directory is empty; give a directory name with -o"
    assert list(work.iterdir()) == []


def test_a_run_the_core_stops_is_a_one_line_error_without_type_names(tmp_path, capsys):
    (tmp_path / "s.toml").write_text('[sim]\nduration = "1s"\n[path.fwd]\n[path.rev]\n'
                                     '[[flow]]\n')
    line = one_line_error(capsys, main(["run", str(tmp_path / "s.toml")]))
    assert "simulated time stopped advancing" in line
    assert "SimulationError" not in line and "internal error" not in line


def test_a_3600_s_run_with_default_settings_stays_under_500_mb(tmp_path):
    (tmp_path / "s.toml").write_text('[sim]\nduration = "3600s"\n[[flow]]\n')
    # The run's own peak, measured by a small wrapper process that starts it and reads its
    # wait4 usage. Not this process's RUSAGE_CHILDREN (the largest child it ever reaped), nor
    # wait4 on a child of this process: Linux carries the peak RSS of the memory a child
    # started from (this whole test process, forked or vforked) across exec.
    wrapper = ("import os, subprocess, sys\n"
               "p = subprocess.Popen(sys.argv[1:])\n"
               "_, status, usage = os.wait4(p.pid, 0)\n"
               "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", wrapper,
                          *spikelab_cmd("run", "s.toml", "-o", "out", "-q")],
                         cwd=tmp_path, capture_output=True, text=True, check=True, timeout=600)
    code, maxrss_kb = map(int, out.stdout.split())
    assert code == 0, out.stderr
    peak_mb = maxrss_kb / 1024
    assert peak_mb < 500, f"{peak_mb:.0f} MB"
    # It really ran an hour: 10 Mbit/s of bulk data.
    assert spikelab.load(tmp_path / "out").runs["bytes_delivered"][0].as_py() > 3e9


# ---------------------------------------------------------------------------------- sweeps


SWEEP = ('[sim]\nduration = "2s"\n[[flow]]\n[sweep]\nreplications = 2\n[sweep.params]\n'
         '"flow.tcp.variant" = ["reno", "newreno", "sack"]\n')


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_that_segfaults_fails_alone(tmp_path, jobs):
    (tmp_path / "sw.toml").write_text(SWEEP)
    env = dict(os.environ, SPIKELAB_TEST_CRASH_RUN="p001-r01")
    proc = subprocess.run(spikelab_cmd("sweep", "sw.toml", "-o", "out", "-j", jobs, "-q"),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr
    runs = spikelab.load(tmp_path / "out").runs.to_pylist()
    status = {r["run_id"]: (r["status"], r["error"]) for r in runs}
    assert len(status) == 6
    assert status.pop("p001-r01") == ("failed", "the worker process died with signal SIGSEGV "
                                                "during this run")
    assert all(s == ("ok", None) for s in status.values())


def test_a_parameter_path_that_does_not_exist_is_refused_before_any_run(tmp_path, capsys):
    text = SWEEP + '"path.fwd.loss.p" = [0.0, 0.01]\n'
    (tmp_path / "sw.toml").write_text(text)
    line = one_line_error(capsys, main(["validate", str(tmp_path / "sw.toml")]))
    assert 'sweep.params."path.fwd.loss.p": no value of this parameter gives a valid ' \
           'scenario' in line
    line2 = one_line_error(capsys, main(["sweep", str(tmp_path / "sw.toml"), "-o",
                                         str(tmp_path / "out")]))
    assert line2 == line
    assert not (tmp_path / "out" / "parts").exists()


def test_zip_takes_repeated_values(tmp_path):
    text = ('[sim]\nduration = "1s"\n[[flow]]\n[sweep]\nmode = "zip"\n[sweep.params]\n'
            '"flow.tcp.variant" = ["reno", "reno", "sack"]\n'
            '"flow.tcp.initial_window" = [4, 10, 10]\n')
    (tmp_path / "sw.toml").write_text(text)
    res = spikelab.sweep(tmp_path / "sw.toml", tmp_path / "out", jobs=1, progress=False)
    rows = res.runs.select(["variant", "initial_window"]).to_pylist()
    assert rows == [{"variant": "reno", "initial_window": 4},
                    {"variant": "reno", "initial_window": 10},
                    {"variant": "sack", "initial_window": 10}]


def test_fresh_removes_every_table_of_the_old_sweep(tmp_path, capsys):
    traced = SWEEP.replace("replications = 2", 'replications = 1\ntrace = "timeseries"')
    (tmp_path / "sw.toml").write_text(traced)
    spikelab.sweep(tmp_path / "sw.toml", tmp_path / "out", jobs=1, progress=False)
    assert list((tmp_path / "out" / "timeseries.parquet").glob("*.parquet"))
    (tmp_path / "sw.toml").write_text(traced.replace('trace = "timeseries"', ""))
    spikelab.sweep(tmp_path / "sw.toml", tmp_path / "out", jobs=1, progress=False, fresh=True)
    assert not (tmp_path / "out" / "timeseries.parquet").exists()
    assert not list((tmp_path / "out" / "parts").glob("**/*.timeseries.arrow"))
    capsys.readouterr()
    one_line_error(capsys, main(["query", str(tmp_path / "out"),
                                 "SELECT count(*) FROM timeseries"]))


def test_manifests_give_big_parameter_values_by_digest(tmp_path):
    rows = ", ".join(f"[{t}, 20, 0]" for t in range(0, 100_000))
    text = ('[sim]\nduration = "1s"\n[path.fwd]\n[[path.fwd.stage]]\ntype = "delay"\n'
            'profile = [[0, 10, 0]]\n[[flow]]\n[sweep]\n[sweep.params]\n'
            f'"path.fwd.delay.profile" = {{ name = "shape", labels = ["long"], '
            f'values = [[{rows}]] }}\n')
    (tmp_path / "sw.toml").write_text(text)
    res = spikelab.sweep(tmp_path / "sw.toml", tmp_path / "out", jobs=1, progress=False)
    assert res.failed == 0
    size = (tmp_path / "out" / "manifest.json").stat().st_size
    # The scenario text itself is small; the 100,000-row value is a digest.
    assert size < 100_000, size
    value = res.manifest["sweep"]["params"][0]["values"][0]
    assert set(value) == {"sha256", "chars"} and value["chars"] > 1_000_000


def test_the_last_replications_seed_must_fit_int64(tmp_path, capsys):
    (tmp_path / "sw.toml").write_text(SWEEP)
    line = one_line_error(capsys, main(["sweep", str(tmp_path / "sw.toml"), "-o",
                                        str(tmp_path / "o"), "--seed", str(2**63 - 1)]))
    assert "the last replication's seed" in line


# ---------------------------------------------------------------------------------- figures


def test_figures_for_a_thousand_flows_are_the_first_flows_and_one_overview(tmp_path):
    n = 1000
    runs = pa.table({"flow": pa.array(range(n), pa.int32()),
                     "mss": pa.array([1448] * n, pa.int64()),
                     "goodput_bps": pa.array(np.linspace(1e5, 2e6, n))})
    t = np.tile(np.arange(200, dtype=np.int64) * 100_000_000, n)
    flow = np.repeat(np.arange(n, dtype=np.int32), 200)
    ts = pa.table({"t_ns": t, "flow": flow,
                   "var": pa.array(["rcv_nxt"] * t.size).dictionary_encode(),
                   "value": (t / 1e3 * (flow + 1)).astype(float),
                   "seq": np.full(t.size, -1, np.int64), "tx": np.full(t.size, -1, np.int32)})
    written = plots.draw({"runs": runs, "timeseries": ts}, tmp_path, max_flows=3)
    names = sorted(p.name for p in written)
    assert "flows_overview.png" in names
    # cwnd/rtt need their variables; the delivered-data overview needs only rcv_nxt.
    assert not any(name.endswith(("_flow3.png", "_flow999.png")) for name in names)
    assert plots.jain(np.array([1.0, 1.0, 1.0])) == pytest.approx(1.0)
    assert plots.jain(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)


def test_the_loss_example_loses_packets_and_differs_from_the_lossless_one():
    root = Path(__file__).resolve().parent.parent / "examples"
    lossy = spikelab.run(root / "lte-handover.toml", trace="summary", progress=False)
    lossless = spikelab.run(root / "lte-handover-lossless.toml", trace="summary",
                            progress=False)
    assert lossy.runs["drops_fwd_delay"][0].as_py() > 0  # the spike's 1 % loss drops packets
    assert lossless.runs["drops_fwd_delay"][0].as_py() == 0
    assert lossy.runs["bytes_delivered"][0] != lossless.runs["bytes_delivered"][0]


def test_an_unimpaired_path_is_emulated_and_its_results_kept(tmp_path):
    from spikelab.emulate import emulate, kernel

    if not kernel.has_privileges():
        pytest.skip("emulation needs root and network namespaces")
    out = tmp_path / "emu"
    res = emulate('[sim]\nduration = "2s"\n[path.fwd]\n[path.rev]\n[[flow]]\n',
                           out=out, progress=False, plots=False)
    assert res.runs["bytes_delivered"][0].as_py() > 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["kind"] == "emulate"


def test_the_python_api_names_an_argument_of_the_wrong_type(tmp_path):
    """Each was an internal error (AttributeError on .partition, duckdb's binding error, a
    format error, a comparison of str and int)."""
    scenario = str(ROOT / "examples" / "minimal.toml")
    out = tmp_path / "m"
    spikelab.run(scenario, out=out, overrides=['sim.duration="1s"'])
    cases = [
        (lambda: spikelab.run(scenario, overrides=[1]), "overrides must be 'key=value' strings"),
        (lambda: spikelab.query(out, None), "sql must be a string"),
        (lambda: spikelab.query(out, "SELECT 1", views=[("a",)]),
         "views must be (name, sql) pairs of strings, got ('a',)"),
        (lambda: spikelab.plot(out, zoom=("1", "2")), "zoom must be a pair (T0, T1)"),
        (lambda: spikelab.plot(out, zoom="0:1"), "zoom must be a pair (T0, T1)"),
        (lambda: spikelab.sweep(scenario, tmp_path / "s", jobs="2"), "jobs must be an integer"),
        # A truthy string must not pass for True: fresh="no" discarded a sweep's runs,
        # force="x" replaced a sweep with a run.
        (lambda: spikelab.sweep(scenario, tmp_path / "s", fresh="no"),
         "fresh must be True or False, got 'no'"),
        (lambda: spikelab.run(scenario, out=tmp_path / "s", force="x"),
         "force must be True or False, got 'x'"),
        (lambda: spikelab.run(scenario, plots="no"), "plots must be True or False"),
        (lambda: spikelab.run(scenario, progress="x"), "progress must be True, False or None"),
        (lambda: spikelab.study.run("lte-handover-basic", tmp_path / "s", fresh=1),
         "fresh must be True or False, got 1"),
        (lambda: spikelab.run(5), "scenario must be a file path or TOML text, got int"),
        (lambda: spikelab.run(scenario, out=5), "out must be a directory path, got int"),
        (lambda: spikelab.run(scenario, overrides=None),
         "overrides must be a sequence of 'key=value' strings, got NoneType"),
        (lambda: spikelab.run(scenario, overrides={"sim.duration": "1s"}),
         "overrides must be a sequence of 'key=value' strings, got dict"),
        (lambda: spikelab.validate(scenario, overrides=5),
         "overrides must be a sequence of 'key=value' strings, got int"),
    ]
    for call, message in cases:
        with pytest.raises(TypeError) as info:
            call()
        assert message in str(info.value)
    assert not (tmp_path / "s").exists()
    with pytest.raises(ValueError, match="scenario: empty"):
        spikelab.run("")
