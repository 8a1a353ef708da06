"""``spikelab trace import`` on bad input: one line naming the option or the file's line, exit
status 2, nothing written; and whatever it does write is a file the scenario takes as it is
(docs/traces.md, "What an import writes, and what it refuses")."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from spikelab import traces
from spikelab.cli import main

ROOT = Path(__file__).resolve().parents[1]
PING = ROOT / "examples" / "traces" / "ping.txt"
CELL = ROOT / "examples" / "traces" / "cell.down"


def run(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main(["trace", "import", *map(str, args)])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def error(capsys, *args) -> str:
    """The one-line error of a refused import (exit 2), without ``spikelab: error: ``."""
    code, _, err = run(capsys, *args)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spikelab: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0].removeprefix("spikelab: error: ")


def written(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.suffix in (".csv", ".png", ".tmp")
                  and p.name.startswith(("o", ".o")))


@pytest.fixture
def two_rows(tmp_path):
    f = tmp_path / "in2.csv"
    f.write_text("time_ms,d\n0,10\n10000,20\n")
    return f


# ------------------------------------------------------------ 1. rows counted before allocating


@pytest.mark.parametrize("kind, make, opts, message", [
    # Were "internal error: Unable to allocate 297. GiB ..." and the like.
    ("ping", None, ["--interval", "1e-7"],
     "--interval: 1e-07 ms over 3.99 s gives 4e+10 rows (at most 5,000,000); use a larger "
     "interval"),
    ("csv", "two", ["--delay-col", "d", "--interval", "1e-9"],
     "--interval: 1e-09 ms over 10 s gives 1e+13 rows (at most 5,000,000); use a larger "
     "interval"),
    ("mahimahi", None, ["--bin", "1e-9"],
     "--bin: 1e-09 ms over 2 s gives 2e+12 rows (at most 5,000,000); use a larger bin"),
    # Was 1,000,001 rows written.
    ("csv", "two", ["--delay-col", "d", "--interval", "0.00001"],
     "--interval: 1e-05 ms over 10 s gives 1e+09 rows (at most 5,000,000); use a larger "
     "interval"),
    # One row over the bound.
    ("csv", "two", ["--delay-col", "d", "--interval", "0.002"],
     "--interval: 0.002 ms over 10 s gives 5,000,001 rows (at most 5,000,000); use a larger "
     "interval"),
])
def test_the_row_count_is_bounded_before_anything_is_allocated(capsys, tmp_path, two_rows,
                                                               kind, make, opts, message):
    src = {"ping": PING, "mahimahi": CELL}.get(kind, two_rows)
    assert error(capsys, kind, src, "-o", tmp_path / "o.csv", "--no-figure", *opts) == message
    assert written(tmp_path) == []


def test_the_row_bound_fits_the_stages_file_limit():
    # A row is at most 48 bytes: 5,000,000 of them stay below the reader's 256 MiB.
    text = (ROOT / "crates/spikelab-net/src/config.rs").read_text()
    assert "pub const MAX_TRACE_FILE_BYTES: u64 = 256 << 20;" in text
    assert traces.MAX_TRACE_FILE_BYTES == 256 << 20
    worst = traces.Profile(np.array([1e12]), np.array([1e12]), np.array([1.23456789e-5]))
    row = max(len(line) + 1 for line in traces.profile_csv(worst).splitlines()[1:])
    rate = traces.Profile(np.array([1e12]), rate_bps=np.array([1e13]))
    row = max(row, *(len(line) + 1 for line in traces.profile_csv(rate).splitlines()[1:]))
    assert row == 48
    assert traces.MAX_ROWS * row <= traces.MAX_TRACE_FILE_BYTES
    # One row per sample (--interval 0) is bounded as well.
    n = traces.MAX_ROWS + 1
    s = traces.Samples("csv", np.arange(n, dtype=np.float64), delay_ms=np.zeros(n))
    with pytest.raises(traces.TraceError, match=r"^--interval 0: 5,000,001 samples give as "
                                                r"many rows \(at most 5,000,000\)"):
        traces.fit(s, interval_ms=0)


def test_a_ping_log_spanning_too_many_probes_is_refused(capsys, tmp_path):
    # icmp_seq 1 then 999999999999: "Unable to allocate 7.28 TiB" for the lost probes' list.
    log = tmp_path / "p.txt"
    log.write_text("[1.0] 64 bytes from 192.0.2.1: icmp_seq=1 ttl=57 time=1 ms\n"
                   "[2.0] 64 bytes from 192.0.2.1: icmp_seq=999999999999 ttl=57 time=1 ms\n")
    assert error(capsys, "ping", log, "-o", tmp_path / "o.csv") == (
        f"{log}: icmp_seq runs from 1 to 999999999999: 1e+12 probes, 1e+12 of them lost (at "
        f"most 10,000,000 probes); is it one ping run?")
    log.write_text("64 bytes from 192.0.2.1: icmp_seq=99999999999999999999 ttl=57 time=1 ms\n")
    assert error(capsys, "ping", log, "-o", tmp_path / "o.csv") == (
        f"{log} line 1: icmp_seq must be at most 2^53, got 99999999999999999999")


# ----------------------------------------------- 2. what is written, the scenario takes as it is


@pytest.mark.parametrize("text, opts, message", [
    # Was written; the scenario then said "the last rate holds forever and must be > 0".
    ("time_ms,r\n0,0\n", ["--rate-col", "r"],
     "line 2: the last rate holds forever and must be > 0, got 0"),
    # Was written as 2.
    ("time_ms,r\n0,1.5\n", ["--rate-col", "r"],
     "line 2: column 'r': a rate must be a whole number of bit/s, got 1.5"),
    ("time_ms,r\n0,2e13\n", ["--rate-col", "r"],
     "line 2: column 'r': a rate must be at most 1e13 bit/s, got 2e+13"),
    # Were written; the scenario's limit is 1e12 ms.
    ("time_ms,d\n0,1e20\n", ["--delay-col", "d"],
     "line 2: column 'd': a delay must be at most 1e12 ms (about 31 years), got 1e+20"),
    ("time_ms,d\n0,1.5e12\n", ["--delay-col", "d", "--share", "0.9"],
     "line 2: column 'd': a delay must be at most 1e12 ms (about 31 years), got 1.35e+12 "
     "(1.5e+12 x share 0.9)"),
    ("time_ms,d\n0,1\n1e15,2\n", ["--delay-col", "d"],
     "line 3: column 'time_ms': a time must be at most 1e12 ms (about 31 years) after the "
     "first row's, got 1e+15 ms"),
])
def test_a_value_the_scenario_refuses_is_refused_at_its_line(capsys, tmp_path, text, opts,
                                                             message):
    f = tmp_path / "in.csv"
    f.write_text(text)
    assert error(capsys, "csv", f, "-o", tmp_path / "o.csv", "--no-figure", *opts) == \
        f"{f} {message}"
    assert written(tmp_path) == []


def test_a_fitted_last_rate_of_zero_names_its_row(capsys, tmp_path):
    f = tmp_path / "in.csv"
    f.write_text("time_ms,r\n0,5\n50,0\n")
    assert error(capsys, "csv", f, "-o", tmp_path / "o.csv", "--rate-col", "r", "--interval",
                 "100", "--stat", "min") == (
        f"{f}: the row at 0 ms (--interval 100, --stat min): the last rate holds forever and "
        f"must be > 0, got 0")
    assert written(tmp_path) == []


def test_values_at_the_limits_are_written_and_the_scenario_takes_them(capsys, tmp_path):
    delay = tmp_path / "d.csv"
    delay.write_text("time_ms,d\n5,1e12\n1000000000005,3\n")
    rate = tmp_path / "r.csv"
    rate.write_text("time_ms,r\n0,10000000000000\n1e12,1\n")
    for kind_opts, src, out, stage in (
            (["--delay-col", "d"], delay, "od.csv", 'type = "delay"'),
            (["--rate-col", "r"], rate, "or.csv", 'type = "rate"\nqueue = 10')):
        code, _, err = run(capsys, "csv", src, "-o", tmp_path / out, "--no-figure", "-q",
                           *kind_opts)
        assert code == 0, err
        scenario = tmp_path / f"{out}.toml"
        scenario.write_text(f'[path.fwd]\n[[path.fwd.stage]]\n{stage}\ntrace = "{out}"\n'
                            f'[[flow]]\n')
        assert main(["validate", str(scenario)]) == 0, capsys.readouterr().err
    assert (tmp_path / "od.csv").read_text() == \
        "time_ms,delay_ms,loss\n0.000,1000000000000.000,0\n1000000000000.000,3.000,0\n"


def test_write_profile_refuses_what_a_stage_would_refuse(tmp_path):
    with pytest.raises(traces.TraceError, match="the last rate holds forever and must be > 0"):
        traces.write_profile(traces.Profile(np.array([0.0]), rate_bps=np.array([0.4])),
                             tmp_path / "o.csv")
    with pytest.raises(traces.TraceError, match=r"delay must be in \[0, 1e12\] ms"):
        traces.write_profile(traces.Profile(np.array([0.0]), np.array([2e12]), np.zeros(1)),
                             tmp_path / "o.csv")
    assert written(tmp_path) == []


# ------------------------------------------------ 3. an option the kind does not use is refused


@pytest.mark.parametrize("kind, opts, message", [
    ("ping", ["--rate", "1Mbps"], "--rate does not apply to ping: it is for pcap only"),
    ("ping", ["--queue", "5"], "--queue does not apply to ping: it is for pcap only"),
    ("ping", ["--bin", "7"], "--bin does not apply to ping: it is for mahimahi only"),
    ("ping", ["--time-col", "zz"], "--time-col does not apply to ping: it is for csv only"),
    ("ping", ["--interface", "3"], "--interface does not apply to ping: it is for pcap only"),
    ("mahimahi", ["--share", "0.3"],
     "--share does not apply to mahimahi: it is for ping, pcap and csv traces"),
    ("mahimahi", ["--ping-interval", "5"],
     "--ping-interval does not apply to mahimahi: it is for ping only"),
    ("mahimahi", ["--no-loss"],
     "--no-loss does not apply to mahimahi: it is for ping, pcap and csv traces"),
    ("pcap", ["--time-col", "x"], "--time-col does not apply to pcap: it is for csv only"),
    ("pcap", ["--time-unit", "s"], "--time-unit does not apply to pcap: it is for csv only"),
    ("csv", ["--rate-col", "r", "--share", "0.5"],
     "--share scales a delay column: with csv it needs --delay-col"),
    ("csv", ["--delay-col", "d", "--no-loss"],
     "--no-loss zeroes a loss column: with csv it needs --loss-col"),
])
def test_an_option_the_kind_does_not_use_is_refused(capsys, tmp_path, kind, opts, message):
    src = {"ping": PING, "mahimahi": CELL}.get(kind, tmp_path / "none")  # pcap: before reading
    assert error(capsys, kind, src, "-o", tmp_path / "o.csv", *opts) == message
    assert written(tmp_path) == []


@pytest.mark.parametrize("kind, opts", [
    ("ping", ["--share", "1", "--ping-interval", "500", "--no-loss", "--smooth", "0",
              "--stat", "max", "--interval", "500"]),
    ("mahimahi", ["--bin", "50", "--smooth", "300", "--interval", "200", "--stat", "median"]),
    ("csv", ["--time-col", "t", "--time-unit", "s", "--delay-col", "d", "--loss-col", "l",
             "--share", "0.5", "--no-loss", "--smooth", "10"]),
    ("mahimahi", []),  # the defaults
    ("ping", []),
])
def test_the_options_a_kind_uses_still_work(capsys, tmp_path, kind, opts):
    src = tmp_path / "in.csv"
    src.write_text("t,d,l\n0,10,0\n0.5,30,0.5\n1,20,0\n")
    src = {"ping": PING, "mahimahi": CELL}.get(kind, src)
    code, out, err = run(capsys, kind, src, "-o", tmp_path / "o.csv", "--no-figure", *opts)
    assert code == 0, err
    assert (tmp_path / "o.csv").is_file() and "rows)" in out


def test_smooth_applies_to_a_mahimahi_rate_trace(tmp_path):
    # --smooth is an option of every kind (docs/traces.md): it must keep working here.
    trace = tmp_path / "m.down"
    stamps = [t for b in range(10) for t in range(b * 100, b * 100 + 100)
              for _ in range(3 if b == 5 else 1)]
    trace.write_text("\n".join(map(str, stamps)) + "\n")
    _, plain = traces.import_trace("mahimahi", trace)
    _, smoothed = traces.import_trace("mahimahi", trace, smooth_ms=300)
    assert plain.rate_bps[5] == 36e6 and smoothed.rate_bps[5] == 12e6


# ------------------------------------------------ 4. range checks, not a library's own words


def test_out_of_range_values_name_the_option_or_the_line(capsys, tmp_path, two_rows):
    # Was "seconds=0, milliseconds=1e+300, microseconds=0, nanoseconds=0".
    assert error(capsys, "csv", two_rows, "-o", tmp_path / "o.csv", "--delay-col", "d",
                 "--smooth", "1e300") == (
        "argument --smooth: expected milliseconds >= 0 (at most 1e12), got '1e300' (see "
        "'spikelab trace import --help')")
    # Was "Maximum allowed size exceeded".
    f = tmp_path / "big.csv"
    f.write_text("time_ms,d\n0,1\n1e300,2\n")
    assert error(capsys, "csv", f, "-o", tmp_path / "o.csv", "--delay-col", "d", "--time-unit",
                 "s", "--interval", "100") == (
        f"{f} line 3: column 'time_ms': a time must be at most 1e12 ms (about 31 years) after "
        f"the first row's, got 1e+303 ms")
    assert error(capsys, "ping", PING, "-o", tmp_path / "o.csv", "--interval", "1e13") == (
        "argument --interval: expected milliseconds >= 0 (at most 1e12), got '1e13' (see "
        "'spikelab trace import --help')")
    assert written(tmp_path) == []
    # The library says the same, naming the option.
    s = traces.read_csv_samples(two_rows, delay_col="d")
    with pytest.raises(traces.TraceError, match=r"^--smooth: must be at most 1e12 ms"):
        traces.fit(s, smooth_ms=1e300)
    with pytest.raises(traces.TraceError, match=r"^--interval: must be at most 1e12 ms"):
        traces.fit(s, interval_ms=1e300)
    with pytest.raises(traces.TraceError, match=r"^--bin: must be at most 1e12 ms"):
        traces.read_mahimahi(CELL, bin_ms=1e300)
    m = tmp_path / "far.down"
    m.write_text("0\n10000000000000\n")
    with pytest.raises(traces.TraceError, match=r"line 2: a time must be at most 1e12 ms"):
        traces.read_mahimahi(m)


# ------------------------------------------------------------- 5. quoted input is cut short


def test_an_error_quotes_at_most_80_characters_of_the_line(capsys, tmp_path):
    # A file of NUL bytes (one line) was quoted whole: an 84 MB "one-line" error.
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"\x00" * 2_000_000)
    line = error(capsys, "ping", nul, "-o", tmp_path / "o.csv")
    assert line.startswith(f"{nul} line 1: not a ping reply or summary line: '\\x00")
    quoted = line.split(": ", 2)[2]
    assert len(quoted) <= 81 and quoted.endswith("'\u2026")
    m = tmp_path / "m.down"
    m.write_text("1\n" + "x" * 1_000_000 + "\n")
    line = error(capsys, "mahimahi", m, "-o", tmp_path / "o.csv")
    assert line == (f"{m} line 2: expected a whole number of milliseconds, got "
                    f"'{'x' * 77}'\u2026")
    c = tmp_path / "c.csv"
    c.write_text("time_ms," + ",".join(f"col{i}" for i in range(100_000)) + "\n0,1\n")
    line = error(capsys, "csv", c, "-o", tmp_path / "o.csv", "--delay-col", "d")
    assert len(line) < len(str(c)) + 150 and line.endswith("\u2026)")
    assert written(tmp_path) == []


# --------------------------------------------------- 6. a write error names the path as given


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_an_output_that_cannot_be_written_is_named_as_given(capsys, tmp_path):
    # Was "/proc/.o.csv.8132-491552c6.tmp: No such file or directory".
    line = error(capsys, "ping", PING, "-o", "/proc/o.csv", "--no-figure")
    assert line == "-o /proc/o.csv: cannot write: No such file or directory"
    line = error(capsys, "ping", PING, "-o", tmp_path / "o.csv", "--figure", "/proc/f.png")
    assert line == ("--figure /proc/f.png: cannot write: No such file or directory (the delay "
                    f"profile {tmp_path / 'o.csv'} is written)")
    assert not re.search(r"\.tmp\b", line)
    assert (tmp_path / "o.csv").is_file()  # as said


# ------------------------------------------------- 6b. options that would be silently ignored


def test_stat_without_bins_is_refused(capsys, tmp_path, two_rows):
    # Was accepted and ignored: a CSV keeps one row per sample unless --interval is given.
    assert error(capsys, "csv", two_rows, "-o", tmp_path / "o.csv", "--no-figure",
                 "--delay-col", "d", "--stat", "max") == (
        "--stat: picks each resampled row's value from its bin, but csv rows are kept one "
        "per sample here; give --interval MS > 0 too")
    assert error(capsys, "ping", PING, "-o", tmp_path / "o.csv", "--no-figure",
                 "--interval", "0", "--stat", "min").startswith("--stat: picks")
    assert written(tmp_path) == []
    # With bins it applies: max over 5 s bins of a 10 -> 20 ms ramp's two samples.
    code, _, err = run(capsys, "csv", two_rows, "-o", tmp_path / "o.csv", "--no-figure", "-q",
                       "--delay-col", "d", "--stat", "max", "--interval", "5000")
    assert code == 0, err


def test_stat_on_a_loss_only_csv_is_refused(capsys, tmp_path):
    f = tmp_path / "loss.csv"
    f.write_text("time_ms,p\n0,0.1\n1000,0.2\n")
    assert error(capsys, "csv", f, "-o", tmp_path / "o.csv", "--no-figure", "--loss-col",
                 "p", "--interval", "500", "--stat", "max") == (
        "--stat: this CSV has only a loss column, whose bins are always averaged; leave "
        "--stat out")


def test_figure_and_no_figure_together_are_refused(capsys, tmp_path):
    code, _, err = run(capsys, "ping", PING, "-o", tmp_path / "o.csv", "--no-figure",
                       "--figure", tmp_path / "f.png")
    assert code == 2 and "not allowed with argument" in err, err
    assert written(tmp_path) == []


# ---------------------------------------------------------- 7. "> 0" where 0 is refused too


@pytest.mark.parametrize("kind, option, value", [
    ("mahimahi", "--bin", "-1"), ("mahimahi", "--bin", "0"),
    ("ping", "--ping-interval", "-1"), ("ping", "--ping-interval", "0"),
])
def test_an_option_that_must_be_positive_says_so(capsys, tmp_path, kind, option, value):
    src = {"ping": PING, "mahimahi": CELL}[kind]
    assert error(capsys, kind, src, "-o", tmp_path / "o.csv", option, value) == (
        f"argument {option}: expected milliseconds > 0 (at most 1e12), got '{value}' (see "
        f"'spikelab trace import --help')")
