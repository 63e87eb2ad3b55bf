"""A verifier config's `image` is for the cloud's containers. A local `taskgate verify` ignores
it (the checks run with this machine's tools) and says so once; a container of another image
refuses the run as its own error (no attempt used) rather than run checks without their
toolchain. Real `taskgate serve` and `taskgate verify`."""

from __future__ import annotations

from pathlib import Path

from tests.mcp.live import Live
from tests.verifier.support import SLUGIFY, SLUGIFY_TESTS, Gate, Repo, pytest_config

NODE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/verifier:node22"
DIGITS = {"text": "digits", "kind": "test", "verify_ref": "test_slug.TestSlugify.test_keeps_digits"}


def _gate(live: Live, tmp_path: Path) -> Gate:
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS, ".gitignore": "reports/\n"}
    )
    return Gate.create(live, repo, pytest_config(image=NODE))


def test_a_local_verifier_ignores_the_image_and_says_so_once(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    assert live.ok("GET", f"/api/projects/{gate.project}/verifier-config")["config"]["image"] == NODE
    tids = [gate.task([DIGITS]) for _ in range(2)]
    for tid in tids:
        gate.submit(tid, gate.repo.commit({"README": f"{tid}\n"}))
    done = gate.verify("--once", "--project", gate.project)
    assert done.returncode == 0, done.stdout + done.stderr
    said = [ln for ln in done.stdout.splitlines() if f"names image {NODE}" in ln]
    assert len(said) == 1 and "ignores it" in said[0], done.stdout
    for tid in tids:
        assert f"{tid}: passed -> verified" in done.stdout
        assert gate.detail(tid)["task"]["status"] == "verified"


def test_a_container_of_another_image_refuses_the_run_as_its_own_error(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    tid = gate.task([DIGITS])
    gate.submit(tid, gate.repo.commit({"README": "x\n"}))
    other = "123456789012.dkr.ecr.us-east-1.amazonaws.com/verifier:latest"
    [line] = gate.verify_json(env={"TASKGATE_VERIFIER_IMAGE": other})
    assert (line["verdict"], line["task_status"]) == ("error", "needs_verification"), line
    assert (
        f"this verifier runs in image {other}, and the project's verifier config names {NODE}"
        in line["error"]
    )
    assert line["checks"] == {}  # nothing ran
    task = gate.detail(tid)["task"]
    assert task["attempts_used"] == 0 and task["verifier_errors_in_row"] == 1
    # The container of the project's own image verifies it, and says nothing about ignoring it.
    done = gate.verify("--once", "--project", gate.project, env={"TASKGATE_VERIFIER_IMAGE": NODE})
    assert done.returncode == 0 and f"{tid}: passed -> verified" in done.stdout, done.stdout + done.stderr
    assert "ignores it" not in done.stdout + done.stderr


def test_an_image_without_a_tag_or_digest_is_refused(live: Live, tmp_path: Path) -> None:
    gate = _gate(live, tmp_path)
    for image in ("verifier", "Verifier:1", "a b:1", ""):
        r = live.rest("PUT", f"/api/projects/{gate.project}/verifier-config", pytest_config(image=image))
        assert r.status_code == 422 and r.json()["code"] == "E_VALIDATION", (image, r.text)
    assert live.ok("GET", f"/api/projects/{gate.project}/verifier-config")["config"]["image"] == NODE
