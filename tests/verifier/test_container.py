"""The verifier's container: its Dockerfile linted (no Docker engine here, so nothing builds it
in the suite), and its entrypoint run as the container would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp.live import Live
from tests.support.container import Image
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


def test_the_image_is_pinned_and_copies_only_what_the_ignore_file_lets_in() -> None:
    text = DOCKERFILE.read_text()
    # The base is an ARG (a machine without a registry passes a local one); its default is the pin.
    assert next(ln for ln in text.splitlines() if ln.startswith("FROM ")) == "FROM ${BASE}"
    [base] = [ln.split("=", 1)[1] for ln in text.splitlines() if ln.startswith("ARG BASE=")]
    tag = base.split(":")[1]
    assert (tag[0].isdigit() and tag.count(".") == 2) or "@sha256:" in base  # an exact tag or a digest
    assert "[dev]" not in text
    allowed = {ln[1:].rstrip("/") for ln in IGNORE.read_text().splitlines() if ln.startswith("!")}
    copied = [src for ln in text.splitlines() if ln.startswith("COPY ") for src in ln.split()[1:-1]]
    assert copied and all(src.rstrip("/") in allowed and (ROOT / src).exists() for src in copied), copied


def test_the_image_starts_as_root_to_switch_to_two_users_of_its_own() -> None:
    """Root only at the start (no USER): the worker and the checks each get a user it creates,
    neither of them root, named by the environment `taskgate verify` reads."""
    image = Image.read()
    assert image.user is None
    assert image.users == [("taskgate-verifier", 10001), ("taskgate-check", 10002)]
    assert image.env["TASKGATE_WORKER_USER"] == "taskgate-verifier"
    assert image.env["TASKGATE_CHECK_USER"] == "taskgate-check"


@pytest.mark.skipif(os.geteuid() != 0, reason="the image starts as root to switch users")
def test_the_entrypoint_verifies_waiting_work(live: Live, tmp_path: Path) -> None:
    repo = Repo.create(tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS})
    gate = Gate.create(live, repo, pytest_config())
    tid = gate.task(
        [{"text": "digits", "kind": "test", "verify_ref": "test_slug.TestSlugify.test_keeps_digits"}]
    )
    gate.submit(tid, repo.commit({"README": "x\n"}))
    assert [*_instruction("ENTRYPOINT"), *_instruction("CMD")] == ["taskgate", "verify", "--once"]
    image = Image.read()
    # As root: the image's own users, created here with its names and uids (the repository stays
    # root's: the worker reads another user's repository through upload-pack).
    proc = image.popen({"TASKGATE_SERVER": live.base, "TASKGATE_VERIFIER_KEY": gate.verifier_key})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert f"{tid}: passed -> verified" in out
    assert f"checks run as taskgate-check (uid {dict(image.users)['taskgate-check']})" in out
    assert gate.detail(tid)["task"]["status"] == "verified"
