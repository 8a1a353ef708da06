#!/usr/bin/env bash
# The README's first command in a fresh virtual environment: installs spikelab from this
# checkout with nothing else installed, checks `spikelab --help`, and runs the bundled example.
# Catches a missing runtime dependency that the test environment happens to have.
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
echo "fresh venv: spikelab installed and the README's first command ran"
