"""The spikelab command: errors are one line with exit code 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from spikelab import cli

ROOT = Path(__file__).resolve().parent.parent


def spikelab(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "spikelab", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("spikelab: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize("command", [
    ("run", "no-such.toml", "-o", "out"),
    ("validate", "no-such.toml"),
])
def test_missing_scenario_file(command, tmp_path):
    proc = spikelab(*command, cwd=tmp_path)
    assert_one_line_error(proc, "no-such.toml")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("bad", ["flow[0].tcp.variant", "=newreno", ""])
def test_bad_set_syntax(bad, tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text("")
    assert_one_line_error(spikelab("run", scenario, "--set", bad), "--set", "KEY=VALUE")


@pytest.mark.parametrize("args, fragment", [
    (("run", "x.toml", "--bogus"), "--bogus"),
    (("plot", "x", "--zoom", "13:10"), "--zoom"),
    (("run", "x.toml", "--trace", "everything"), "--trace"),
    (("bench", "--repeat", "0"), "--repeat"),
    ((), "COMMAND"),
])
def test_usage_errors_are_one_line(args, fragment):
    assert_one_line_error(spikelab(*args), fragment)


def test_plot_of_a_directory_without_results(tmp_path):
    assert_one_line_error(spikelab("plot", tmp_path), "manifest.json")


def test_unwritable_outdir(tmp_path, lte_handover):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = spikelab("run", lte_handover, "-o", blocker / "out", "--trace", "summary", "-q")
    assert_one_line_error(proc, str(blocker))


def test_invalid_override_names_the_file_and_field(lte_handover):
    proc = spikelab("validate", lte_handover, "--set", "sim.duration=-1")
    assert_one_line_error(proc, lte_handover.name, "sim.duration")


def test_zoom_parsing():
    assert cli._zoom("10:13") == (10.0, 13.0)
    assert cli._zoom("10:") == (10.0, None)
    assert cli._zoom(":2.5") == (None, 2.5)


def test_run_validate_plot_tour(lte_handover, tmp_path):
    out = tmp_path / "out"
    proc = spikelab("run", lte_handover, "-o", out, "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert "goodput Mbps" in proc.stdout and "figures:" in proc.stdout
    assert (out / "figures" / "cwnd_flow0.svg").exists()
    # The manifest's scenario is the one that ran: --seed reaches its sim.seed (the file says 2).
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == manifest["scenario"]["sim"]["seed"] == 3
    assert manifest["scenario"]["sim"]["trace"] == manifest["trace"]

    proc = spikelab("plot", out, "--zoom", "10:13")
    assert proc.returncode == 0, proc.stderr
    assert "figures:" in proc.stdout

    proc = spikelab("validate", lte_handover)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{lte_handover}: ok")


def test_bench_reports_rates(lte_handover):
    proc = spikelab("bench", "--scenario", lte_handover, "--repeat", "2")
    assert proc.returncode == 0, proc.stderr
    assert "data packets simulated per wall second" in proc.stdout
    assert proc.stdout.count("\n") == 5  # header, column names, 2 runs, best


def test_the_bench_grid_repeats_the_flows_and_measures_whole_processes(tmp_path):
    import spikelab
    from spikelab.cli import bench

    text = (ROOT / "benches" / "ns3-dumbbell.toml").read_text()
    assert len(spikelab.validate(bench.with_flows(text, 7))["flow"]) == 7
    row = bench.measure(text, 3, 2.0, "summary", tmp_path)
    assert (row.flows, row.sim_s, row.trace) == (3, 2.0, "summary")
    # The core is part of the process; a 10 Mbit/s bottleneck carries ~1,700 packets in 2 s.
    assert 0 < row.core_s < row.process_s and row.peak_mb > 10
    assert 1000 < row.data_packets < 2600 and row.events > row.data_packets


def test_the_trace_import_bench_times_whole_imports_of_the_lte_capture():
    """``spikelab bench --trace-import`` (docs/performance.md, "Trace import"), on 5 s of the
    LTE example instead of 600: each import a whole process, with and without its figure."""
    from spikelab.cli import bench

    lines: list[str] = []
    rows = bench.trace_import(repeat=1, seconds=5, echo=lines.append)
    assert [r.figure for r in rows] == [False, True]
    assert all(r.wall_s > 0 and r.cpu_s > 0 and r.peak_mb > 30 for r in rows)
    frames = int(lines[0].split(": ")[1].split(" frames")[0].replace(",", ""))
    assert 3000 < frames < 8000 and "5 s simulated" in lines[0]
    assert lines[-1].startswith("with its figure: median ")
    assert_one_line_error(spikelab("bench", "--trace-import", "--grid"),
                          "--trace-import: times the import of the LTE example's capture; it "
                          "takes no --grid, --against, --studies, --scenario or --set")


def test_an_os_error_without_text_is_a_sentence_not_a_class_name(monkeypatch, capsys):
    from spikelab import cli

    def fails(args):
        raise IsADirectoryError

    monkeypatch.setattr(cli, "cmd_validate", fails)
    assert cli.main(["validate", "x.toml"]) == 2
    err = capsys.readouterr().err
    assert err == "spikelab: error: an operating-system call failed\n"


def test_validate_lists_what_the_linux_profile_resolves_to_and_which_value_wins(tmp_path):
    """issue 13: `validate` shows the resolved profile fields; a key the file (or --set) sets
    itself is shown as winning over the profile's value."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('[[flow]]\ncc = "reno"\n[flow.tcp]\nprofile = "linux"\n'
                        'variant = "newreno"\n')
    proc = spikelab("validate", scenario, "--set", "flow.tcp.quickack=4")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "flow[0]: profile 'linux' resolves to" in lines
    assert "  tcp.initial_window = 10" in lines
    assert "  tcp.spurious = [\"linux\"]" in lines
    assert "  tcp.rto.min = \"200ms\"" in lines
    assert "  tcp.ssthresh_basis = \"cwnd\"" in lines
    assert "  tcp.quickack_idle = \"rto\"" in lines
    assert "  tcp.delack_timeout = \"ato\"" in lines
    wins = {line.split(" = ")[0].strip(): line for line in lines if "wins over" in line}
    assert set(wins) == {"cc", "tcp.variant", "tcp.quickack"}
    assert "profile's \"sack\"" in wins["tcp.variant"]
    assert "profile's 16" in wins["tcp.quickack"]
    assert 'flavor = "linux"' in wins["cc"]


@pytest.mark.parametrize("field, word", [("quickack_idle", "rto"), ("delack_timeout", "ato")])
def test_a_duration_or_its_word_and_the_field_named_otherwise(tmp_path, field, word):
    """quickack_idle takes a duration or "rto", delack_timeout a duration or "ato"."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('[[flow]]\n[flow.tcp]\nquickack = 16\n')
    for good in (f'"{word}"', '"300ms"', "0.5"):
        proc = spikelab("validate", scenario, "--set", f"flow.tcp.{field}={good}")
        assert proc.returncode == 0, (good, proc.stderr)
    for bad, why in ((f'"{word}x"', f'"{word}"'), ('"0s"', "must be > 0"), ("-1", "must not be negative")):
        proc = spikelab("validate", scenario, "--set", f"flow.tcp.{field}={bad}")
        assert proc.returncode != 0 and field in proc.stderr, (bad, proc.stderr)
        assert why in proc.stderr, (bad, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("path, says", [
    ("examples", "is a directory, not a scenario file"),
    ("/dev/null", "not a regular file"),
])
def test_a_scenario_that_is_no_regular_file_says_what_it_is(tmp_path, path, says):
    """Both were "no such file"."""
    proc = spikelab("run", path, "-o", tmp_path / "out", cwd=ROOT)
    assert_one_line_error(proc, f"{path}: {says}")
    assert not (tmp_path / "out").exists()


def test_bench_finds_its_scenario_from_any_directory(tmp_path, monkeypatch, capsys):
    """It was "benches/ns3-dumbbell.toml: no such file" outside the repository root."""
    from spikelab.cli import bench

    monkeypatch.chdir(tmp_path)
    assert bench.default_scenario() == str(ROOT / "benches" / "ns3-dumbbell.toml")
    # An installed package has no benches/: the error says what to pass instead.
    monkeypatch.setattr(bench, "_REPO", tmp_path)
    assert cli.main(["bench", "--repeat", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spikelab: error: benches/ns3-dumbbell.toml: not found") and \
        "--scenario FILE" in err and err.count("\n") == 1


def test_every_command_takes_q_and_v():
    """-q and -v on every command (only some had -q, none had -v)."""
    commands = list(cli._commands(cli.parser()))
    names = {c.prog.removeprefix("spikelab ") for c in commands}
    assert {"run", "sweep", "study run", "study report", "query", "validate", "emulate",
            "fidelity", "trace import", "rto-study", "bench"} <= names
    for command in commands:
        options = command._option_string_actions
        assert {"-q", "--quiet", "-v", "--verbose"} <= set(options), command.prog


def test_verbose_logs_each_stage_and_quiet_prints_only_results(lte_handover, tmp_path):
    out = tmp_path / "out"
    proc = spikelab("run", lte_handover, "-o", out, "-v", "--no-plots")
    assert proc.returncode == 0, proc.stderr
    stages = [line.split("] ", 1)[1] for line in proc.stderr.splitlines()]
    assert stages[0].startswith("scenario read: 1 flow(s), 20 s simulated, seed 2")
    assert stages[1].startswith("simulated: ") and " events in " in stages[1]
    assert stages[2] == f"tables written to {out}"
    assert all(line.startswith("spikelab: [") for line in proc.stderr.splitlines())
    proc = spikelab("validate", lte_handover, "-q")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert_one_line_error(spikelab("validate", lte_handover, "-q", "-v"), "-q and -v: choose one")


def test_bench_studies_times_each_study_as_a_whole_process():
    from spikelab.cli import bench

    lines: list[str] = []
    rows = bench.studies(("lte-handover-basic",), jobs=2, echo=lines.append)
    (row,) = rows
    assert row.status == 0 and row.wall_s > 0 and row.cpu_s > 0 and row.peak_mb > 50
    assert row.paper.startswith("no paper claims · ") and "claims hold" in row.paper
    assert lines[1].startswith("lte-handover-basic") and lines[-1].startswith("together")
    assert "within" in lines[-1]
    assert_one_line_error(spikelab("bench", "-j", "2"), "-j/--jobs: only with --studies")
