#!/usr/bin/env bash
# The whole test suite, from a fresh clone: venv, install, lint, types, tests.
set -euo pipefail
case "${1:-}" in
  -h|--help)
    cat <<'USAGE'
usage: bash scripts/test.sh [PYTEST ARGS...]

Runs taskgate's whole test suite from a fresh clone:
  1. makes .venv (with $PYTHON, default python3) and installs taskgate with its test, lint and
     browser extras from the package index pip is configured for, at the versions of the dev
     lock (requirements/dev.txt, made by scripts/lock.sh);
  2. makes .venv-sam with the SAM CLI (for tests/functions/test_sam.py), once;
  3. runs ruff (check and format --check), mypy over src, then pytest on two workers.
Arguments go to pytest, e.g. `bash scripts/test.sh tests/unit -x`. The browser tests drive
/usr/bin/chromium; nothing downloads a browser. Installing takes a few minutes the first time.
USAGE
    exit 0
    ;;
esac
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1  # the browser tests use Debian's /usr/bin/chromium
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# The suite, the static checks, the board's tests, at the dev lock's versions (scripts/lock.sh):
# a new release of ruff, mypy or a library they read changes nothing here until the lock moves.
.venv/bin/python -m pip install --quiet -c requirements/dev.txt -e '.[test,lint,browser]'
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
