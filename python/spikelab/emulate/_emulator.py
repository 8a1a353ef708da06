"""The emulator process: ``python -m spikelab.emulate._emulator CONFIG.json``, started inside
the emulator's namespace. It opens the emulator (``spikelab._core.Emulator``: sockets on the
two veths), prints ``ready``, reads the run's time 0 from stdin and runs, without the GIL,
until the scenario's end or SIGTERM; then it writes the run's statistics (JSON) to the path
named by the configuration's ``stats`` key. A setup error is one line on stderr, exit code 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .._core import Emulator
from ._endpoint import _die_with_parent, _read_t0, _ready, write_whole


def main(argv: list[str]) -> int:
    _die_with_parent()
    if len(argv) != 1:
        print("usage: python -m spikelab.emulate._emulator CONFIG.json", file=sys.stderr)
        return 2
    cfg = json.loads(Path(argv[0]).read_text())
    stats_path = Path(cfg.pop("stats"))
    try:
        emulator = Emulator(json.dumps(cfg))
    except (OSError, ValueError) as exc:
        print(f"emulator: {exc}", file=sys.stderr, flush=True)
        return 2
    _ready()
    t0 = _read_t0()
    try:
        stats = emulator.run(t0)
    except OSError as exc:
        print(f"emulator: {exc}", file=sys.stderr, flush=True)
        return 1
    write_whole(stats_path, stats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
