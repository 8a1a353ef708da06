"""Kill a sweep's process with SIGKILL part-way, resume it, and check that nothing was lost or
repeated: the resume acceptance of docs/performance.md ("Sweeps").

    python3 benches/sweep_kill_resume.py --at 0.5 --same-as /tmp/s100k-dask -- \\
        spikelab sweep benches/sweep-100k.toml -o /tmp/s100k-j2 -j 2 --no-plots -q

Starts the command (which must write a sweep with ``-o DIR``; ``--fresh`` is added to the
first start), sends SIGKILL to its process once DIR holds ``--at`` of the runs as done, waits
for its workers to leave, counts the runs the directory keeps, then runs the same command
again (without ``--fresh``) and checks from its manifest that every kept run was reused and
every other run was run once: ``runs_reused`` equals the count kept and ``runs_ok`` the total.
With ``--same-as OTHER``, the resumed ``runs.parquet`` must equal OTHER's byte for byte (a
sweep run without interruption, e.g. on Dask). A benchmark, not a test: it takes as long as
the sweep; tests/test_sweep.py checks the same on small sweeps.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

from spikelab.store.sweep import progress


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--at", type=float, default=0.5, help="fraction of the runs done at the kill")
    ap.add_argument("--same-as", metavar="DIR", help="a finished sweep whose runs.parquet the "
                    "resumed one must equal")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if "-o" not in cmd or not 0 < args.at < 1:
        ap.error("give the sweep command with -o DIR after --, and --at between 0 and 1")
    out = Path(cmd[cmd.index("-o") + 1])
    first = subprocess.Popen([*cmd, "--fresh"])
    total = None
    while first.poll() is None:
        time.sleep(0.5)
        ident = out / "sweep.json"  # written once the sweep has claimed DIR
        if total is None and ident.is_file():
            try:
                total = json.loads(ident.read_text(encoding="utf-8"))["runs"]
            except (ValueError, KeyError):
                continue  # not all written yet
        done = progress(out)[0]
        if total and done >= args.at * total:
            workers = psutil.Process(first.pid).children(recursive=True)
            first.kill()
            first.wait()
            psutil.wait_procs(workers, timeout=30)
            break
    else:
        print("the sweep ended before the kill: raise --at's run count", file=sys.stderr)
        return 1
    kept = progress(out)[0]
    print(f"killed at {kept} runs done", file=sys.stderr)
    start = time.monotonic()
    rc = subprocess.call(cmd)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    ok = (rc == 0 and manifest["runs_reused"] == kept
          and manifest["runs_ok"] == manifest["runs_total"])
    print(f"resumed: exit {rc}, {time.monotonic() - start:.1f} s, runs_total "
          f"{manifest['runs_total']}, runs_reused {manifest['runs_reused']} (kept {kept}), "
          f"runs_ok {manifest['runs_ok']}", file=sys.stderr)
    if args.same_as:
        same = (Path(args.same_as) / "runs.parquet").read_bytes() == \
            (out / "runs.parquet").read_bytes()
        print(f"runs.parquet equals {args.same_as}'s: {same}", file=sys.stderr)
        ok = ok and same
    print("nothing lost, nothing repeated" if ok else "MISMATCH", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
