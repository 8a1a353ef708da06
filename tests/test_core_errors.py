"""Failures inside the Rust core reach Python as exceptions that name where the run was,
errors pickle (a pool or Dask worker's error reaches the parent intact), and the event loop
survives degenerate paths (zero delay, a stuck bulk flow) without a crash."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

import spikelab
from spikelab import _core

IDEAL_BULK = '[sim]\nduration = "1s"\n[path.fwd]\n[path.rev]\n[[flow]]\n'


def test_scenario_error_pickles_with_its_message():
    with pytest.raises(spikelab.ScenarioError) as info:
        spikelab.validate("[sim]\nduration = -1\n[[flow]]\n")
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is type(info.value)
    assert str(again) == str(info.value) == "sim.duration: must not be negative, got -1"


def test_a_bulk_flow_over_an_ideal_path_stops_with_a_simulation_error():
    sim = _core.Simulation(IDEAL_BULK, [], ".", None, "summary")
    with pytest.raises(_core.SimulationError) as info:
        sim.run()
    msg = str(info.value)
    assert "simulated time stopped advancing" in msg and "at t = 0 s" in msg
    assert pickle.loads(pickle.dumps(info.value)).args == info.value.args


def test_a_panic_in_the_core_is_an_exception_with_the_time_and_no_rust_noise():
    code = (
        "import spikelab._core as c\n"
        "s = c.Simulation('[[flow]]\\n', [], '.', None, 'summary')\n"
        "try:\n    s.run()\nexcept c.SimulationError as e:\n    print('caught:', e)\n"
    )
    env = dict(os.environ, SPIKELAB_TEST_PANIC="1")
    env.pop("SPIKELAB_DEBUG", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("caught: internal error in the simulator core: test-only "
                                 "failure requested by SPIKELAB_TEST_PANIC"), out.stdout
    assert "(at t = 0 s, after 1 events)" in out.stdout
    assert out.stderr == ""  # no "thread panicked at" from the default hook


def test_the_minimal_scenario_runs_and_delivers_over_the_default_link(tmp_path):
    (tmp_path / "s.toml").write_text("[[flow]]\n")
    out = subprocess.run([sys.executable, "-m", "spikelab", "run", "s.toml", "-o", "out"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    runs = spikelab.load(tmp_path / "out").runs.to_pylist()
    # 10 Mbit/s for 20 s: most of 25 MB arrives.
    assert 15_000_000 < runs[0]["bytes_delivered"] < 25_000_000


def test_zero_delay_paths_with_a_file_deliver_every_byte_once():
    text = ('[sim]\nduration = "1s"\n[path.fwd]\n[path.rev]\n[[flow]]\n'
            'app = { type = "file", size = 3000000 }\n')
    res = spikelab.run(text, trace="packets", progress=False)
    row = res.runs.to_pylist()[0]
    assert row["bytes_delivered"] == 3_000_000
    assert row["retx_segments"] == 0


def test_the_packets_bound_names_its_field():
    text = '[sim]\nduration = "5s"\nmax_packets_rows = 500\n[[flow]]\n'
    with pytest.raises(_core.SimulationError) as info:
        spikelab.run(text, trace="packets", progress=False)
    assert str(info.value).startswith("sim.max_packets_rows: the packets trace reached its "
                                      "bound of 500 rows")


def test_seeds_beyond_int64_are_refused_in_one_line():
    with pytest.raises(spikelab.ScenarioError, match=r"^seed: must be <= 9223372036854775807"):
        _core.Simulation("[[flow]]\n", [], ".", 2**63, "summary")


def test_the_runs_template_needs_no_simulation_even_where_one_would_stop():
    """Emulation takes its runs columns from here: an unimpaired path (which a bulk simulation
    cannot run) must still give them, so the emulated results are never lost."""
    from spikelab.store.arrow import to_arrow

    sim = _core.Simulation(IDEAL_BULK + 'tcp = { spurious = ["eifel"] }\n', [], ".", None,
                           "summary")
    runs = to_arrow(sim.runs_template())
    assert runs.num_rows == 1
    assert runs["spurious"].to_pylist() == ["eifel"]
    assert runs["bytes_delivered"].to_pylist() == [0]
    assert "drops_total" in runs.column_names
