#!/usr/bin/env bash
# Installs spikelab with its test dependencies and runs the whole test suite:
# rustfmt, clippy (warnings are errors), the Rust tests, ruff, the Python package's import
# floors, pytest, and the README's first command in a fresh virtual environment.
# The README's second command and .ci/run both call this script.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== install (spikelab + test dependencies)"
python3 -m pip install --disable-pip-version-check -q -e '.[test]'

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings

echo "== cargo test"
cargo test --locked --workspace

echo "== ruff (undefined names, unused imports)"
python3 -m ruff check python tests --select F,E9

echo "== lint-imports (the Python package's floors: pyproject.toml, [tool.importlinter])"
# lint-imports, through python3 as ruff is (the scripts directory need not be on PATH)
python3 -c 'import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())'

echo "== pytest"
python3 -m pytest -q

echo "== fresh venv: the README's first command"
bash scripts/fresh-venv-check.sh
