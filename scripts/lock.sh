#!/usr/bin/env bash
# The lock of the runtime set: requirements/runtime.txt, from pyproject.toml's dependencies.
# The Lambda layer (layers/Makefile) and the verifier image (verifier_container/Dockerfile)
# install exactly these versions, checked against these hashes, so two builds a month apart ship
# the same bytes. Run it after changing a dependency, and commit the result.
#
# uv, not pip-tools: one resolution covers every platform the builds target (`--universal`
# writes environment markers), while pip-compile resolves for the machine it runs on, and the
# layer is built for Linux arm64 on whatever machine runs `sam build`.
#
# uvicorn serves `taskgate serve` only (and click only uvicorn): neither the functions nor the
# verifier run it, so the lock leaves both out (the MCP SDK declares uvicorn but imports it only
# to serve by itself, which the functions never do).
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
"$UV" pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes \
  --no-emit-package uvicorn --no-emit-package click \
  --custom-compile-command "bash scripts/lock.sh" --quiet -o requirements/runtime.txt "$@"
