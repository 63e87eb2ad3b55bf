"""The verifier's container: its Dockerfile linted (no Docker engine here, so nothing builds it
in the suite), and its entrypoint run as the container would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.mcp.live import Live
from tests.verifier.support import SLUGIFY, SLUGIFY_TESTS, Gate, Repo, pytest_config

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "verifier_container" / "Dockerfile"
IGNORE = ROOT / "verifier_container" / "Dockerfile.dockerignore"
BIN = Path(sys.executable).parent


def _instruction(name: str) -> list[str]:
    lines = [ln for ln in DOCKERFILE.read_text().splitlines() if ln.startswith(f"{name} ")]
    assert len(lines) == 1, lines
    value: list[str] = json.loads(lines[0][len(name) + 1 :])
    return value


def test_the_dockerfile_passes_hadolint() -> None:
    done = subprocess.run(
        [str(BIN / "hadolint"), str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_is_pinned_non_root_and_copies_only_what_the_ignore_file_lets_in() -> None:
    text = DOCKERFILE.read_text()
    # The base is an ARG (a machine without a registry passes a local one); its default is the pin.
    assert next(ln for ln in text.splitlines() if ln.startswith("FROM ")) == "FROM ${BASE}"
    [base] = [ln.split("=", 1)[1] for ln in text.splitlines() if ln.startswith("ARG BASE=")]
    tag = base.split(":")[1]
    assert (tag[0].isdigit() and tag.count(".") == 2) or "@sha256:" in base  # an exact tag or a digest
    assert "USER 10001" in text and "[dev]" not in text
    allowed = {ln[1:].rstrip("/") for ln in IGNORE.read_text().splitlines() if ln.startswith("!")}
    copied = [src for ln in text.splitlines() if ln.startswith("COPY ") for src in ln.split()[1:-1]]
    assert copied and all(src.rstrip("/") in allowed and (ROOT / src).exists() for src in copied), copied


def test_the_entrypoint_verifies_waiting_work(live: Live, tmp_path: Path) -> None:
    repo = Repo.create(tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS})
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task(
        [{"text": "digits", "kind": "test", "verify_ref": "test_slug.TestSlugify.test_keeps_digits"}]
    )
    gate.submit(tid, repo.commit({"README": "x\n"}))
    argv = [*_instruction("ENTRYPOINT"), *_instruction("CMD")]
    assert argv == ["taskgate", "verify", "--once"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    env |= {
        "PATH": f"{BIN}:{env.get('PATH', '')}",
        "TASKGATE_SERVER": live.base,
        "TASKGATE_VERIFIER_KEY": gate.verifier_key,
    }
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{tid}: passed -> verified" in done.stdout
    assert gate.detail(tid)["task"]["status"] == "verified"
