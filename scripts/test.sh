#!/usr/bin/env bash
# The whole test suite, from a fresh clone: venv, install, lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1  # the browser tests use Debian's /usr/bin/chromium
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test,lint,browser]'  # the suite, the static checks, the board's tests
# The SAM CLI in a virtual environment of its own (its pins clash with the project's); the
# suite runs `sam validate --lint` and `sam build` with it (tests/functions/test_sam.py).
if [ ! -x .venv-sam/bin/sam ]; then
  "$PY" -m venv .venv-sam
  .venv-sam/bin/python -m pip install --quiet --upgrade pip
  .venv-sam/bin/python -m pip install --quiet 'aws-sam-cli>=1.140,<2'
fi
echo "== ruff"
.venv/bin/ruff check src tests bench functions
.venv/bin/ruff format --check src tests bench functions
echo "== mypy"
.venv/bin/mypy src
# tests/bench runs every bench in bench/ in its smoke mode (--smoke: seconds each, figures printed).
echo "== pytest"
.venv/bin/pytest -n 2 "$@"
