"""``python -m spikelab`` and the ``spikelab`` command: a Ctrl-C even while the package is
still loading ends with one line and exit code 130, never a traceback."""

import sys


def run() -> int:
    try:
        from .cli import main
    except KeyboardInterrupt:
        print("spikelab: interrupted", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
