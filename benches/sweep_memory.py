"""Peak memory of a command and of every process below it (a sweep's workers), and its wall
time: the sweep benchmark of docs/performance.md ("Sweeps").

    python3 benches/sweep_memory.py -- spikelab sweep benches/sweep-100k.toml -o /tmp/s \\
        --dask local -j 2 --fresh --no-plots -q

Samples the resident set size (RSS) of the command's process and of each descendant every
0.2 s (psutil, which Dask installs) and prints, per process, its peak and what it is (the
sweep's process, a Dask worker, a run worker). A benchmark, not a test: the numbers depend on
the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import psutil


def role(cmdline: list[str]) -> str:
    text = " ".join(cmdline)
    if "_worker_main" in text:
        return "run worker"
    if "multiprocessing.spawn" in text:
        return "dask worker"
    if "resource_tracker" in text:
        return "resource tracker"
    return "other"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=float, default=0.2, help="seconds between samples")
    ap.add_argument("--json", metavar="FILE", help="also write the peaks as JSON")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("give the command to measure after --")
    start = time.monotonic()
    proc = subprocess.Popen(cmd)
    root = psutil.Process(proc.pid)
    peaks: dict[int, dict] = {}
    while proc.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            procs = [root]
        for p in procs:
            try:
                rss = p.memory_info().rss
                if p.pid not in peaks:
                    peaks[p.pid] = {"pid": p.pid, "role": "sweep process" if p is root
                                    else role(p.cmdline()), "peak_rss": 0}
            except psutil.Error:
                continue
            peaks[p.pid]["peak_rss"] = max(peaks[p.pid]["peak_rss"], rss)
        time.sleep(args.every)
    wall = time.monotonic() - start
    rows = sorted(peaks.values(), key=lambda r: -r["peak_rss"])
    print(f"exit status {proc.returncode}, {wall:.1f} s wall, {len(rows)} processes",
          file=sys.stderr)
    for r in rows:
        if r["role"] != "other" or r["peak_rss"] > 20 * 2**20:
            print(f"  {r['peak_rss'] / 2**20:8.1f} MB  {r['role']:<16} pid {r['pid']}",
                  file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"command": cmd, "exit": proc.returncode, "wall_s": wall,
                       "processes": rows}, f, indent=1)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
