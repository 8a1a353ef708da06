"""The simulator's linux-flavor CUBIC against the kernel's cubic (issue 12, item 5).

A lossless dumbbell: 10 Mbit/s behind a 100-packet drop-tail queue, 25 ms each way (50 ms
RTT), one bulk flow for 60 s with the `linux` TCP profile. The same scenario is simulated
(`cc = "cubic"`, `flavor = "linux"`) and emulated (the kernel's `cubic` through
`spikelab emulate`, as root) and compared through `spikelab compare`. Acceptance (issue 12):
goodput within 5 %, and the time between reductions (fast retransmits and timeouts: on this
path every reduction is a queue-overflow loss event) within 20 %.

"Time between reductions" is the mean interval between consecutive reductions from the first
to the last, (t_last - t_first) / (n - 1), taken from the `fast_retx` and `rto_expiry` markers
of timeseries.parquet (in an emulated run, entries into Recovery and `tcpi_total_rto`).

The emulated run takes 60 s of real time (about 70 s with set-up); the simulated one well
under a second. Measured numbers are printed (pytest -s) and recorded in docs/emulation.md.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
import spikelab
import spikelab.emulate
from spikelab.emulate import kernel

as_root = pytest.mark.skipif(
    not (kernel.has_privileges() and shutil.which("ip") and sys.platform == "linux"),
    reason="needs root (network namespaces); CI runs as root",
)

DUMBBELL = """
name = "dumbbell-cubic"
description = "Lossless dumbbell: 10 Mbit/s, 100-packet queue, 50 ms RTT, one bulk flow, 60 s"
[sim]
duration = "60s"
seed = 1
[path.fwd]
[[path.fwd.stage]]
type = "rate"
rate = "10Mbps"
queue = 100
[[path.fwd.stage]]
type = "delay"
delay = "25ms"
[path.rev]
[[path.rev.stage]]
type = "delay"
delay = "25ms"
[[flow]]
fwd = "fwd"
rev = "rev"
app = { type = "bulk" }
[flow.cc]
algo = "cubic"
flavor = "linux"
[flow.tcp]
profile = "linux"
"""


# Reno: the kernel's tcp_reno_cong_avoid counts acknowledged packets (one segment per window
# of packets acknowledged, whatever the ACK ratio); the simulator's Reno grows per ACK
# (RFC 5681) unless `abc = true`, so with delayed ACKs it grows half as fast. The `linux`
# profile sets `abc = true`; the comparison sets it as well, to say what it relies on.


def reductions(res) -> np.ndarray:
    """Times (s) of flow 0's reductions: fast retransmits and timeouts."""
    ts = res.timeseries.to_pandas()
    ts = ts[(ts.flow == 0) & ts["var"].isin(["fast_retx", "rto_expiry"])]
    return np.sort(ts.t_ns.to_numpy()) / 1e9


def mean_interval(times: np.ndarray) -> float:
    return float((times[-1] - times[0]) / (len(times) - 1))


def test_interval_is_first_to_last_over_gaps():
    assert mean_interval(np.array([1.0, 4.0, 12.0, 15.0])) == pytest.approx(14 / 3)


def test_the_dumbbell_simulates_with_reductions_every_few_seconds(tmp_path):
    """Everywhere (no root): the simulated half, so a model change that breaks it is caught
    without the kernel too."""
    path = tmp_path / "dumbbell.toml"
    path.write_text(DUMBBELL)
    sim = spikelab.run(path, trace="timeseries", plots=False, progress=False)
    row = sim.runs.to_pylist()[0]
    assert row["cc"] == "cubic" and row["rto_count"] == 0
    t = reductions(sim)
    assert 8 <= len(t) <= 16
    assert 4.0 < mean_interval(t) < 7.0
    assert row["goodput_bps"] > 9.4e6


@as_root
def test_linux_cubic_and_reno_match_the_kernel_goodput_5pct_reduction_interval_20pct(tmp_path):
    path = tmp_path / "dumbbell.toml"
    path.write_text(DUMBBELL)
    reno_path = tmp_path / "dumbbell-reno.toml"
    reno_path.write_text(DUMBBELL.replace('flavor = "linux"\n', "")
                         .replace('algo = "cubic"', 'algo = "reno"')
                         .replace("[flow.tcp]\n", "[flow.tcp]\nabc = true\n"))
    # The Reno run is emulated at the same time, in another process (its own namespaces),
    # so the test takes one minute of real time, not two.
    reno = subprocess.Popen([sys.executable, "-m", "spikelab", "emulate", str(reno_path),
                             "-o", str(tmp_path / "emu-reno"), "-q", "--no-plots"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        sim = spikelab.run(path, out=tmp_path / "sim", trace="timeseries", plots=False,
                           progress=False)
        emu = spikelab.emulate.emulate(path, out=tmp_path / "emu", plots=False,
                                       progress=False)
    finally:
        _, err = reno.communicate(timeout=300)
    assert reno.returncode == 0, err
    assert emu.manifest["emulation"]["kernel"]["flows"][0]["cc"] == "cubic"
    s, e = sim.runs.to_pylist()[0], emu.runs.to_pylist()[0]
    ts, te = reductions(sim), reductions(emu)
    gs, ge = s["goodput_bps"], e["goodput_bps"]
    ist, ie = mean_interval(ts), mean_interval(te)
    print(f"goodput: simulated {gs / 1e6:.3f} Mbit/s, kernel {ge / 1e6:.3f} Mbit/s "
          f"({100 * (gs / ge - 1):+.2f} %)")
    print(f"reductions: simulated {len(ts)} at {np.round(ts, 2).tolist()}")
    print(f"            kernel    {len(te)} at {np.round(te, 2).tolist()}")
    print(f"mean interval: simulated {ist:.3f} s, kernel {ie:.3f} s "
          f"({100 * (ist / ie - 1):+.1f} %)")
    assert s["rto_count"] == 0 and e["rto_count"] == 0  # lossless: no timeouts
    assert len(ts) >= 5 and len(te) >= 5
    assert abs(gs / ge - 1) <= 0.05
    assert abs(ist / ie - 1) <= 0.20
    # spikelab compare shows both runs side by side.
    text, figures = spikelab.emulate.compare(tmp_path / "sim", tmp_path / "emu",
                                             out=tmp_path / "cmp")
    print(text)
    assert "goodput Mbps" in text and figures

    # Reno (with abc = true, see RENO above) against the kernel's reno, same path.
    sim_r = spikelab.run(reno_path, trace="timeseries", plots=False, progress=False)
    emu_r = spikelab.load(tmp_path / "emu-reno")
    assert emu_r.manifest["emulation"]["kernel"]["flows"][0]["cc"] == "reno"
    s, e = sim_r.runs.to_pylist()[0], emu_r.runs.to_pylist()[0]
    ts, te = reductions(sim_r), reductions(emu_r)
    gs, ge = s["goodput_bps"], e["goodput_bps"]
    ist, ie = mean_interval(ts), mean_interval(te)
    print(f"reno goodput: simulated {gs / 1e6:.3f} Mbit/s, kernel {ge / 1e6:.3f} Mbit/s "
          f"({100 * (gs / ge - 1):+.2f} %)")
    print(f"reno reductions: simulated {np.round(ts, 2).tolist()}, kernel {np.round(te, 2).tolist()}")
    print(f"reno mean interval: simulated {ist:.3f} s, kernel {ie:.3f} s "
          f"({100 * (ist / ie - 1):+.1f} %)")
    assert s["rto_count"] == 0 and e["rto_count"] == 0
    assert abs(gs / ge - 1) <= 0.05
    assert abs(ist / ie - 1) <= 0.20
