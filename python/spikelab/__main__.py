"""``python -m spikelab`` and the ``spikelab`` command: a Ctrl-C even while the package is
still loading ends with one line and exit code 130, never a traceback."""

import os
import sys


def run() -> int:
    # numpy's OpenBLAS starts a thread per core that spins after start-up; the command line
    # makes no BLAS call worth them, and on a small machine they take a core from the
    # simulation (a third more CPU for a summary run). A user's own setting is kept; the
    # sweep workers inherit it.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from .cli import main
    except KeyboardInterrupt:
        print("spikelab: interrupted", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
