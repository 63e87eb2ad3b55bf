#!/usr/bin/env bash
# The locks, from pyproject.toml. Run it after changing a dependency, and commit the result.
#
# requirements/runtime.txt: the runtime set. The Lambda layer (layers/Makefile) and the verifier
# image (verifier_container/Dockerfile) install exactly these versions, checked against these
# hashes, so two builds a month apart ship the same bytes.
#
# requirements/dev.txt: everything scripts/test.sh installs (the runtime set, the tests, the
# browser driver, the lint and type tools with their stubs), at the runtime lock's versions where
# the two share a package. scripts/test.sh installs through it as a constraints file, so a new
# release of ruff, mypy, a stub package or a library whose types mypy reads cannot turn CI red
# by itself: moving a tool is a commit of this file. No hashes there: the editable install of
# the project itself cannot be hash-checked, and nothing in it ships.
#
# uv, not pip-tools: one resolution covers every platform the builds target (`--universal`
# writes environment markers), while pip-compile resolves for the machine it runs on, and the
# layer is built for Linux arm64 on whatever machine runs `sam build`.
#
# uvicorn serves `taskgate serve` only (and click only uvicorn): neither the functions nor the
# verifier run it, so the runtime lock leaves both out (the MCP SDK declares uvicorn but imports
# it only to serve by itself, which the functions never do). The dev lock has them.
#
# Arguments go to both compiles (e.g. `--upgrade-package ruff`).
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
"$UV" pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes \
  --no-emit-package uvicorn --no-emit-package click \
  --custom-compile-command "bash scripts/lock.sh" --quiet -o requirements/runtime.txt "$@"
"$UV" pip compile pyproject.toml --extra dev --universal --python-version 3.11 \
  --constraint requirements/runtime.txt \
  --custom-compile-command "bash scripts/lock.sh" --quiet -o requirements/dev.txt "$@"
