"""Output directories (issue 10, item 4, and the query limits of item 5): a directory knows
its kind, every file is whole, stale temporaries are swept wherever results writes them, a
zoom never replaces the full-length figures, an interruption at any point before the
complete manifest leaves one marked ``interrupted``, and ``query`` only reads the dataset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import spikelab
from spikelab.analysis.query import query
from spikelab.store import results
from spikelab.cli import main

SHORT = '[sim]\nduration = "1s"\n[[flow]]\n'
TRACED = '[sim]\nduration = "2s"\ntrace = "packets"\n[[flow]]\n'


def one_line_error(capsys, code: int) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spikelab: error: "), err
    for internal in ("Traceback", "KeyError", "AttributeError", "PermissionException",
                     "PanicException", "duckdb."):
        assert internal not in err
    return lines[0]


def temporaries(outdir: Path) -> list[str]:
    return sorted(str(p.relative_to(outdir)) for p in outdir.rglob("*.tmp"))


def dead_pid() -> int:
    out = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                         capture_output=True, text=True, check=True).stdout
    return int(out)


@pytest.fixture
def run_dir(tmp_path) -> Path:
    spikelab.run(SHORT, out=tmp_path / "run", progress=False, plots=False)
    return tmp_path / "run"


@pytest.fixture
def sweep_dir(tmp_path) -> Path:
    (tmp_path / "sw.toml").write_text(SHORT + '[sweep]\n[sweep.params]\n'
                                              '"flow.tcp.variant" = ["reno", "sack"]\n')
    spikelab.sweep(tmp_path / "sw.toml", tmp_path / "sw", jobs=1, progress=False)
    return tmp_path / "sw"


# ---------------------------------------------------------------------------------- kinds


def test_kind_of_reads_the_manifest_then_sweep_json_then_legacy_runs(tmp_path, run_dir,
                                                                     sweep_dir):
    assert results.kind_of(tmp_path / "absent") is None
    (tmp_path / "empty").mkdir()
    assert results.kind_of(tmp_path / "empty") is None
    assert results.kind_of(run_dir) == "run"
    assert results.kind_of(sweep_dir) == "sweep"
    legacy = json.loads((run_dir / "manifest.json").read_text())
    del legacy["kind"]
    (run_dir / "manifest.json").write_text(json.dumps(legacy))
    assert results.kind_of(run_dir) == "run"  # written before directories knew their kind


@pytest.mark.parametrize("path", ["", "   ", "\t"])
def test_claim_refuses_an_empty_path(tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(results.OutdirError, match="empty"):
        results.claim(path, "run")
    assert list(tmp_path.iterdir()) == []


def test_claim_refuses_a_file_and_another_kind_unless_forced(tmp_path, sweep_dir):
    (tmp_path / "f").write_text("mine")
    with pytest.raises(results.OutdirError, match="not a directory"):
        results.claim(tmp_path / "f", "run")
    assert (tmp_path / "f").read_text() == "mine"
    with pytest.raises(results.OutdirError) as err:
        results.claim(sweep_dir, "run")
    assert str(err.value) == (f"{sweep_dir}: holds a sweep's results; refusing to write a "
                              f"run's results there (use another directory, or --force to "
                              f"replace it)")
    (sweep_dir / "notes.txt").write_text("mine")
    assert results.claim(sweep_dir, "run", force=True) == sweep_dir
    # Replaced: nothing of the sweep stays beside the run to come (its parts, identity,
    # points, scenario copy, tables, figures), and nothing else is touched.
    assert sorted(p.name for p in sweep_dir.iterdir()) == ["notes.txt"]
    spikelab.run(SHORT, out=sweep_dir, progress=False, plots=False, force=True)
    assert results.kind_of(sweep_dir) == "run"
    assert not (sweep_dir / "parts").exists() and not (sweep_dir / "sweep.json").exists()


def test_emulate_onto_a_sweep_is_refused_before_anything_runs(tmp_path, sweep_dir, capsys,
                                                               monkeypatch):
    from spikelab.emulate import kernel

    monkeypatch.setattr(kernel, "require_privileges", lambda: None)
    monkeypatch.setattr(kernel, "check_congestion_control", lambda *a: None)
    (tmp_path / "s.toml").write_text(SHORT)
    before = sorted(p.name for p in sweep_dir.iterdir())
    line = one_line_error(capsys, main(["emulate", str(tmp_path / "s.toml"), "-o",
                                        str(sweep_dir)]))
    assert "holds a sweep's results" in line and "--force" in line
    assert sorted(p.name for p in sweep_dir.iterdir()) == before


# ---------------------------------------------------------------------------------- temporaries


def test_stale_temporaries_are_swept_in_nested_result_folders(tmp_path):
    """A killed writer's temporaries in figures/zoom-A-B/ or emulation/ (two levels down) are
    removed by the next write; a live writer's and files that are not ours stay."""
    out = tmp_path / "out"
    dead, live = dead_pid(), os.getpid()
    stale = [out / "figures" / "zoom-1-2" / f".seqack_flow0.png.{dead}-0123abcd.tmp",
             out / "emulation" / f".sender.json.{dead}-89abcdef.tmp",
             out / f".runs.parquet.{dead}-00000000.tmp"]
    kept = [out / "figures" / "zoom-1-2" / f".cwnd_flow0.png.{live}-0123abcd.tmp",
            out / "emulation" / "notes.tmp"]
    for p in stale + kept:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half")
    results.claim(out, "run")
    assert [p for p in stale if p.exists()] == []
    assert all(p.exists() for p in kept)


def test_the_emulators_processes_write_their_results_whole_under_sweepable_names(
        tmp_path, monkeypatch):
    from spikelab.emulate._endpoint import write_whole

    target = tmp_path / "sender.json"
    seen = []
    real_replace = Path.replace

    def interrupted_rename(self, dest):
        seen.append(self.name)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "replace", interrupted_rename)
    with pytest.raises(KeyboardInterrupt):
        write_whole(target, '{"half": ')
    monkeypatch.setattr(Path, "replace", real_replace)
    assert list(tmp_path.iterdir()) == []  # nothing half-written, no temporary left
    assert len(seen) == 1 and results._TEMP.match(seen[0])  # a name the next write sweeps
    write_whole(target, "{}")
    assert target.read_text() == "{}" and temporaries(tmp_path) == []


# ---------------------------------------------------------------------------------- zoom


def test_a_new_run_removes_the_old_runs_zoomed_figures(tmp_path):
    out = tmp_path / "out"
    spikelab.run(TRACED, out=out, progress=False)
    spikelab.plot(out, zoom=(0.5, 1.5))
    zoomed = sorted((out / "figures" / "zoom-0.5-1.5").iterdir())
    assert zoomed
    (out / "figures" / "mine.png").write_bytes(b"not spikelab's")
    spikelab.run(TRACED, out=out, seed=5, progress=False)
    # The zoom showed the old run's data: it is gone; a file spikelab did not write stays.
    assert not (out / "figures" / "zoom-0.5-1.5").exists()
    assert (out / "figures" / "mine.png").read_bytes() == b"not spikelab's"
    listed = {f["path"] for f in results.read_manifest(out)["files"]}
    assert all(p.relative_to(out).as_posix() in listed
               for p in (out / "figures").glob("*_flow0.png"))


def test_plot_zoom_on_a_sweep_is_a_one_line_error(sweep_dir, capsys):
    before = sorted(p.relative_to(sweep_dir) for p in sweep_dir.rglob("*"))
    line = one_line_error(capsys, main(["plot", str(sweep_dir), "--zoom", "0:1"]))
    assert "zoom" in line and "sweep" in line
    assert sorted(p.relative_to(sweep_dir) for p in sweep_dir.rglob("*")) == before


def test_compare_zoom_keeps_the_full_length_comparison(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    spikelab.run(TRACED, out=a, progress=False, plots=False)
    spikelab.run(TRACED, out=b, seed=3, progress=False, plots=False)
    assert main(["compare", str(a), str(b)]) == 0
    full = {p: p.read_bytes() for p in (b / "compare").glob("*.png")}
    assert full
    assert main(["compare", str(a), str(b), "--zoom", "0.5:1"]) == 0
    assert {p: p.read_bytes() for p in (b / "compare").glob("*.png")} == full
    assert sorted(p.name for p in (b / "compare" / "zoom-0.5-1").glob("*.png")) == \
        sorted(p.name for p in full)
    assert "compare/zoom-0.5-1" in capsys.readouterr().out


# ---------------------------------------------------------------------------------- interrupted


def test_an_interruption_while_the_tables_are_written_keeps_the_earlier_run(
        tmp_path, monkeypatch):
    """After the core has finished, every table is written whole under a temporary name
    before the directory changes: Ctrl-C (or a full disk) while runs.parquet is written
    leaves the earlier complete run as it was; once the directory has begun to change, an
    interruption leaves a manifest that says so."""
    out = tmp_path / "out"
    spikelab.run(SHORT, out=out, progress=False, plots=False)  # an earlier, complete run
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    real = results.stage_parquet

    def failing(exc):
        def stage(table, path):
            if Path(path).name == "runs.parquet":
                raise exc
            return real(table, path)
        return stage

    for exc in (KeyboardInterrupt(), OSError(28, "No space left on device")):
        monkeypatch.setattr(results, "stage_parquet", failing(exc))
        with pytest.raises(type(exc)) as raised:
            spikelab.run(TRACED, out=out, progress=False)
        if isinstance(exc, OSError):
            assert str(raised.value) == (f"[Errno 28] cannot write the results (No space left "
                                         f"on device); it holds what it held before: '{out}'")
        assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
        assert temporaries(out) == []
        assert spikelab.load(out).runs.num_rows == 1
    monkeypatch.setattr(results, "stage_parquet", real)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(results, "_finish", interrupted)  # the tables renamed into place
    with pytest.raises(KeyboardInterrupt):
        spikelab.run(TRACED, out=out, progress=False)
    manifest = results.read_manifest(out)
    assert manifest["status"] == "interrupted" and manifest["kind"] == "run"
    assert manifest["files"] == [] and manifest["reached_s"] == pytest.approx(2.0)
    assert temporaries(out) == []
    with pytest.raises(results.OutdirError, match="interrupted"):
        spikelab.load(out)


def test_a_full_disk_on_a_new_directory_leaves_nothing(tmp_path, monkeypatch, capsys):
    def full(table, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "stage_parquet", full)
    (tmp_path / "s.toml").write_text(TRACED)
    line = one_line_error(capsys, main(["run", str(tmp_path / "s.toml"), "-q",
                                        "-o", str(tmp_path / "new")]))
    assert line == (f"spikelab: error: {tmp_path / 'new'}: cannot write the results (No space "
                    f"left on device); nothing was written")
    assert not (tmp_path / "new").exists()


def test_an_emulation_interrupted_while_its_tables_are_built_says_so(tmp_path, monkeypatch):
    from spikelab.emulate import kernel, tables
    from spikelab.emulate import run as emu_run

    out = tmp_path / "emu"
    spikelab.run(SHORT, out=out, progress=False, plots=False)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(kernel, "require_privileges", lambda: None)
    monkeypatch.setattr(kernel, "check_congestion_control", lambda *a: None)
    monkeypatch.setattr(emu_run, "_run", lambda *a, **k: {})
    monkeypatch.setattr(tables, "build", interrupted)
    with pytest.raises(KeyboardInterrupt):
        emu_run.emulate(SHORT, out=out, progress=False)
    manifest = results.read_manifest(out)
    assert manifest["status"] == "interrupted" and manifest["kind"] == "emulate"
    assert manifest["files"] == [] and temporaries(out) == []


# ---------------------------------------------------------------------------------- query


def test_query_copy_to_writes_nothing_and_is_one_line(run_dir, tmp_path, capsys,
                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for sql in ("COPY (SELECT 1) TO 'x.csv'",
                "EXPLAIN ANALYZE COPY (SELECT 1) TO 'x.csv'",  # EXPLAIN ANALYZE runs it
                f"SELECT 1; COPY runs TO '{run_dir / 'runs.parquet'}'",
                "ATTACH 'x.duckdb' AS x",
                "EXPORT DATABASE 'exported'",
                "INSTALL httpfs",
                "SET enable_external_access = true"):
        line = one_line_error(capsys, main(["query", str(run_dir), sql]))
        assert "only SELECT statements are allowed" in line, sql
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_query_reads_nothing_but_the_directorys_tables(run_dir, tmp_path, capsys):
    secret = tmp_path / "secret.csv"
    secret.write_text("password\nhunter2\n")
    for sql in (f"SELECT * FROM read_csv('{secret}')",
                f"SELECT * FROM '{secret}'",
                f"SELECT * FROM read_parquet('{run_dir / 'runs.parquet'}')"):
        line = one_line_error(capsys, main(["query", str(run_dir), sql]))
        assert "hunter2" not in line and "disabled" in line, line
    # ... while the tables themselves, and EXPLAIN of a query, work.
    frame = query(run_dir, "SELECT flow, goodput_bps > 0 AS moved FROM runs")
    assert frame.to_dict("list") == {"flow": [0], "moved": [True]}
    assert len(query(run_dir, "EXPLAIN ANALYZE SELECT count(*) FROM runs")) == 1


def test_query_refuses_an_interrupted_or_incomplete_run(run_dir, capsys):
    """The tables left beside an interrupted run's manifest (or a killed run's, which has
    none) belong to an earlier run: query must not serve them as this one's."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    results.write_interrupted(run_dir, manifest, reached_s=0.5)
    line = one_line_error(capsys, main(["query", str(run_dir), "SELECT * FROM runs"]))
    assert "interrupted" in line
    (run_dir / "manifest.json").unlink()
    line = one_line_error(capsys, main(["query", str(run_dir), "SELECT * FROM runs"]))
    assert "no manifest.json" in line
    line = one_line_error(capsys, main(["query", str(run_dir / "nope"), "SELECT 1"]))
    assert "no such results directory" in line


def test_every_reader_says_what_a_directory_holds(run_dir, sweep_dir, tmp_path, capsys):
    """summary, figure, plot and query on a directory they cannot read: absent, interrupted,
    or of another kind, each one line saying which (not "its numbers are in runs.parquet"
    for a run that wrote none, nor "not a sweep's results" for a typo)."""
    nope = str(tmp_path / "nope")
    for argv in (["summary", nope], ["plot", nope], ["query", nope, "SELECT 1"],
                 ["figure", nope, "--kind", "bar", "--y", "goodput_bps", "--x", "variant"]):
        line = one_line_error(capsys, main(argv))
        assert line == f"spikelab: error: {nope}: no such results directory", argv
    manifest = json.loads((run_dir / "manifest.json").read_text())
    results.write_interrupted(run_dir, manifest, reached_s=0.5)
    line = one_line_error(capsys, main(["summary", str(run_dir)]))
    assert "the run was interrupted at 0.5 s" in line and "runs.parquet" not in line
    # An RTO study's directory: plot says what it holds; query reads its own tables.
    rto = tmp_path / "rto"
    rto.mkdir()
    spikelab.store.results.write_parquet(
        __import__("pyarrow").table({"alpha": [0.125], "beta": [0.25]}), rto / "rto_study.parquet")
    results.write_json({"kind": "rto-study", "status": "complete",
                        "files": [{"path": "rto_study.parquet"}]}, rto / "manifest.json")
    line = one_line_error(capsys, main(["plot", str(rto)]))
    assert "holds an RTO alpha/beta study's results; a single run's results were expected" \
        in line
    assert query(rto, "SELECT alpha FROM rto_study").to_dict("list") == {"alpha": [0.125]}
    line = one_line_error(capsys, main(["query", str(rto), "SELECT * FROM runs"]))
    assert line.endswith("(this directory's tables: rto_study)")
    line = one_line_error(capsys, main(["summary", str(rto)]))
    assert "holds an RTO alpha/beta study's results; spikelab summary reads a sweep's" in line
    assert main(["summary", str(sweep_dir)]) == 0


def test_scenario_errors_pickle(tmp_path):
    """A Dask worker's ScenarioError reaches the client (it is pickled on the way)."""
    import pickle

    with pytest.raises(spikelab.ScenarioError) as err:
        spikelab.validate('[[flow]]\ntcp = { mss = -5 }\n')
    again = pickle.loads(pickle.dumps(err.value))
    assert type(again) is spikelab.ScenarioError and str(again) == str(err.value)
    assert "flow[0].tcp.mss" in str(again)


@pytest.mark.parametrize("sql, message", [
    ("SELECT nope FROM runs", 'query failed: Referenced column "nope" not found'),
    ("SELEC 1", 'query failed: syntax error at or near "SELEC"'),
])
def test_query_errors_are_duckdbs_sentence_without_its_error_category(run_dir, capsys, sql,
                                                                      message):
    line = one_line_error(capsys, main(["query", str(run_dir), sql]))
    assert line.startswith(f"spikelab: error: {message}")
    assert " Error:" not in line


# ---------------------------------------------------------------------------------- failures


def test_an_interruption_while_simulating_keeps_the_earlier_complete_run(tmp_path,
                                                                          monkeypatch):
    """Interrupted before it replaced anything (in the core), a run leaves the complete run
    already in the directory readable: its manifest, tables and figures as they were."""
    import importlib

    run_module = importlib.import_module("spikelab.run")
    out = tmp_path / "out"
    spikelab.run(TRACED, out=out, progress=False)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "_run_in_thread", interrupted)
    with pytest.raises(KeyboardInterrupt):
        spikelab.run(TRACED, out=out, seed=9, progress=False)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert spikelab.load(out).manifest["status"] == "complete"
    # Into a directory without a complete result, the interrupted manifest says so.
    with pytest.raises(KeyboardInterrupt):
        spikelab.run(TRACED, out=tmp_path / "fresh", progress=False)
    assert results.read_manifest(tmp_path / "fresh")["status"] == "interrupted"


def test_an_interruption_while_drawing_leaves_no_partial_figure_set(tmp_path, monkeypatch):
    """Figures are drawn aside and moved in with their manifest: interrupted after the first
    figure, figures/ holds none of the new run's figures (the old run's are gone, they showed
    other data) and the complete manifest lists exactly the tables."""
    from spikelab.figures import run as figure_run

    out = tmp_path / "out"
    spikelab.run(TRACED, out=out, progress=False)
    assert list((out / "figures").glob("*.png"))
    real, drawn = figure_run._save, []

    def interrupted(fig, figdir, stem):
        if drawn:
            raise KeyboardInterrupt
        drawn.append(stem)
        return real(fig, figdir, stem)

    monkeypatch.setattr(figure_run, "_save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        spikelab.run(TRACED, out=out, seed=5, progress=False)
    manifest = results.read_manifest(out)
    assert manifest["status"] == "complete" and manifest["seed"] == 5
    assert [f["path"] for f in manifest["files"]] == ["runs.parquet", "timeseries.parquet",
                                                      "packets.parquet"]
    assert sorted(p.name for p in (out / "figures").iterdir()) == []
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")] == []
    # Redrawn the same way by plot: the manifest keeps the full-length figures it listed.
    monkeypatch.setattr(figure_run, "_save", real)
    spikelab.plot(out)
    listed = [f["path"] for f in results.read_manifest(out)["files"]]
    drawn.clear()
    monkeypatch.setattr(figure_run, "_save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        spikelab.plot(out, zoom=(0.5, 1.5))
    assert [f["path"] for f in results.read_manifest(out)["files"]] == listed
    assert not (out / "figures" / "zoom-0.5-1.5").exists()
    assert [p.name for p in (out / "figures").iterdir() if p.name.endswith(".tmp")] == []


def test_a_figure_folder_left_by_a_killed_writer_is_swept(tmp_path):
    stale = tmp_path / f".figures.{dead_pid()}-0badcafe.tmp"
    stale.mkdir()
    (stale / "cwnd_flow0.png").write_bytes(b"half a run's figures")
    assert results.sweep_temporaries(tmp_path) == [stale]
    assert not stale.exists()


def test_a_run_that_fails_removes_the_directory_it_created(tmp_path, capsys):
    """A run the core stops (a trace bound) writes nothing: the -o it created (parents too)
    is gone, and the error names the scenario file like a validation error."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(TRACED)
    out = tmp_path / "new" / "out"
    line = one_line_error(capsys, main(["run", str(scenario), "-o", str(out), "-q",
                                        "--set", "sim.max_packets_rows=10"]))
    assert line.startswith(f"spikelab: error: {scenario}: sim.max_packets_rows: ")
    assert not (tmp_path / "new").exists()
    # A directory that was there stays.
    (tmp_path / "mine").mkdir()
    one_line_error(capsys, main(["run", str(scenario), "-o", str(tmp_path / "mine"), "-q",
                                 "--set", "sim.max_packets_rows=10"]))
    assert (tmp_path / "mine").is_dir()


def test_a_sweep_that_fails_before_any_run_leaves_no_half_made_directory(tmp_path, capsys,
                                                                          monkeypatch):
    """An unreachable Dask scheduler: the sweep's identity, points and scenario copy are
    removed with the directory the sweep created; ``summary`` refuses a sweep directory
    without finished runs instead of printing an empty table."""
    import importlib

    def unreachable(*args, **kwargs):
        raise OSError("Timed out trying to connect to tcp://127.0.0.1:1 after 10 s")
        yield  # a generator, as the real executor

    monkeypatch.setattr(importlib.import_module("spikelab.sweep"), "_dask", unreachable)
    (tmp_path / "sw.toml").write_text(SHORT + '[sweep]\n[sweep.params]\n'
                                              '"flow.tcp.variant" = ["reno", "sack"]\n')
    out = tmp_path / "sw"
    line = one_line_error(capsys, main(["sweep", str(tmp_path / "sw.toml"), "-o", str(out),
                                        "--dask", "tcp://127.0.0.1:1", "-q"]))
    assert "Timed out" in line
    assert not out.exists()
    (out / "parts").mkdir(parents=True)
    (out / "sweep.json").write_text('{"kind": "sweep"}')
    line = one_line_error(capsys, main(["summary", str(out)]))
    assert line == f"spikelab: error: {out}: no finished runs to summarise (the sweep has no " \
                   f"manifest and no run in parts/ yet)"


def test_a_sweep_resumed_and_failing_keeps_its_complete_manifest(sweep_dir, capsys,
                                                                 monkeypatch):
    import importlib

    def unreachable(*args, **kwargs):
        raise OSError("no scheduler")
        yield

    before = (sweep_dir / "manifest.json").read_bytes()
    (sweep_dir / "parts" / "blocks.jsonl").write_text("")  # its runs to redo
    monkeypatch.setattr(importlib.import_module("spikelab.sweep"), "_dask", unreachable)
    one_line_error(capsys, main(["sweep", str(sweep_dir.parent / "sw.toml"), "-o",
                                 str(sweep_dir), "--dask", "tcp://x:1", "-q"]))
    assert (sweep_dir / "manifest.json").read_bytes() == before
    assert (sweep_dir / "sweep.json").is_file()


@pytest.mark.parametrize("zoom, message", [
    ("100:200", "zoom 100:200: the window starts at or after the run's end (it lasts 2 s)"),
    ("2:", "zoom 2:: the window starts at or after the run's end (it lasts 2 s)"),
    ("-5:3", "argument --zoom: times start at 0 s, got '-5:3'"),
    (":0", "argument --zoom: times start at 0 s, got ':0'"),
])
def test_a_zoom_outside_the_run_is_a_one_line_error(tmp_path, capsys, zoom, message):
    out = tmp_path / "out"
    spikelab.run(TRACED, out=out, progress=False, plots=False)
    try:
        code = main(["plot", str(out), f"--zoom={zoom}"])
    except SystemExit as exc:  # argparse refuses it
        code = exc.code
    assert message in one_line_error(capsys, code)
    assert not (out / "figures").exists()


def test_a_damaged_sweep_or_run_manifest_is_named_in_one_line(run_dir, sweep_dir, capsys,
                                                              tmp_path):
    (sweep_dir / "sweep.json").write_text("{\n")
    (tmp_path / "sw.toml").write_text(SHORT + '[sweep]\n[sweep.params]\n'
                                              '"flow.tcp.variant" = ["reno", "sack"]\n')
    line = one_line_error(capsys, main(["sweep", str(tmp_path / "sw.toml"), "-o",
                                        str(sweep_dir), "-j", "1", "-q"]))
    assert line.startswith(f"spikelab: error: {sweep_dir / 'sweep.json'}: not valid JSON")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["scenario"]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    line = one_line_error(capsys, main(["plot", str(run_dir)]))
    assert line == (f"spikelab: error: {run_dir}: manifest.json lacks scenario; not a "
                    f"manifest spikelab wrote")


def test_force_removes_only_what_the_other_result_wrote(tmp_path, sweep_dir):
    """A fidelity suite lists its files as plain names; a user's scenario.toml beside an RTO
    study or a run is not a sweep's copy of its scenario."""
    fid = tmp_path / "fid"
    fid.mkdir()
    for name in ("fidelity.parquet", "fidelity.csv", "report.md", "scenario.toml"):
        (fid / name).write_text("x")
    results.write_json({"kind": "fidelity", "status": "complete",
                        "files": ["fidelity.parquet", "fidelity.csv", "report.md"]},
                       fid / "manifest.json")
    results.claim(fid, "run", force=True)
    assert sorted(p.name for p in fid.iterdir()) == ["scenario.toml"]
    rto = tmp_path / "rto"
    (rto / "figures").mkdir(parents=True)
    (rto / "scenario.toml").write_text("mine")
    results.write_json({"kind": "rto-study", "files": []}, rto / "manifest.json")
    results.claim(rto, "sweep", force=True)
    assert sorted(p.name for p in rto.iterdir()) == ["scenario.toml"]
    # A sweep's own copy goes with it.
    assert (sweep_dir / "scenario.toml").is_file()
    results.claim(sweep_dir, "run", force=True)
    assert not (sweep_dir / "scenario.toml").exists()


def test_query_reads_a_fidelity_suites_table(tmp_path):
    import pyarrow as pa

    fid = tmp_path / "fid"
    fid.mkdir()
    results.write_parquet(pa.table({"scenario": ["a"], "agrees": [True]}),
                          fid / "fidelity.parquet")
    results.write_json({"kind": "fidelity", "status": "complete",
                        "files": ["fidelity.parquet", "fidelity.csv", "report.md"]},
                       fid / "manifest.json")
    assert query(fid, "SELECT agrees FROM fidelity").to_dict("list") == {"agrees": [True]}


def test_a_full_disk_after_the_captures_leaves_no_complete_manifest(tmp_path, monkeypatch,
                                                                     capsys):
    """The core replaces the captures in pcap/ as the run finishes: the earlier manifest no
    longer describes the directory, so a failure while the tables are written must not
    leave it saying complete."""
    out = tmp_path / "out"
    spikelab.run(SHORT, out=out, progress=False, plots=False, overrides=["sim.pcap=true"])

    def full(table, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "stage_parquet", full)
    (tmp_path / "s.toml").write_text(TRACED)
    line = one_line_error(capsys, main(["run", str(tmp_path / "s.toml"), "-q", "--pcap",
                                        "-o", str(out)]))
    assert line.endswith("cannot write the results (No space left on device); it holds no "
                         "complete result")
    with pytest.raises(FileNotFoundError):
        results.read_manifest(out)
    assert temporaries(out) == []


def test_infinite_numbers_are_shown_not_a_crash():
    from spikelab.analysis import stats

    assert stats.fmt_value("ratio", float("inf")) == "inf"
    assert stats.column_cells("x", [1.5, float("inf"), float("-inf")]) == ["1.5", "inf", "-inf"]
