#!/usr/bin/env bash
# The README in a fresh virtual environment: installs spikelab from this checkout with nothing
# else installed, checks `spikelab --help`, runs the README's first command, then (with the test
# extra added) every command and code block of the README and docs/ (tests/test_docs.py).
# Catches a dependency that the test environment happens to have but the package does not ask for.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --disable-pip-version-check -q "$root"
cd "$work"
ln -s "$root/examples" examples
"$work/venv/bin/spikelab" --help >/dev/null
"$work/venv/bin/spikelab" run examples/lte-handover.toml -o out/lte-handover
test -s out/lte-handover/figures/seqack_flow0.png
"$work/venv/bin/python" -m pip install --disable-pip-version-check -q "$root[test]"
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$root/tests/test_docs.py"
echo "fresh venv: spikelab installed; the README's first command and every documented block ran"
