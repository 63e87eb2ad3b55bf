"""Verification on the merge, end to end: a real `taskgate serve`, real git repositories, an
agent over MCP and `taskgate verify` as a real subprocess. What `verified` holds for is the
submission merged onto the base branch's tip; a conflict costs no attempt; a verdict goes stale
when the tip moves and is verified again by itself."""

from __future__ import annotations

import base64
import json
import shlex
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.mcp.live import Live
from tests.support.conf_project import (
    CONF,
    CONF_TEST,
    RENAME,
    RENAMED,
    RENAMED_TEST,
    USE,
    USE_PY,
    USES,
    conf_gate,
    on_branch,
)
from tests.verifier.support import Gate, Repo, git, pytest_config


def land(repo: Repo, branch: str) -> str:
    """A human merges `branch` into main; main's new tip."""
    git(repo.path, "merge", "--quiet", "--no-ff", "--no-edit", branch)
    return git(repo.path, "rev-parse", "HEAD")


def accept(gate: Gate, task_id: str) -> dict[str, Any]:
    out: dict[str, Any] = gate.live.ok("POST", f"/api/tasks/{task_id}/accept")
    return out


def test_two_that_pass_alone_fail_merged_and_the_second_goes_back_to_ready(
    live: Live, tmp_path: Path
) -> None:
    gate = conf_gate(live, tmp_path)
    repo = gate.repo
    fork = git(repo.path, "rev-parse", "HEAD")
    a, b = gate.task([RENAME]), gate.task([USE])
    sha_a = on_branch(repo, "a", fork, {"conf.py": RENAMED, "test_conf.py": RENAMED_TEST})
    sha_b = on_branch(repo, "b", fork, {"use.py": USE_PY, "test_use.py": USES})
    gate.submit(a, sha_a)
    [line] = gate.verify_json()
    assert (line["task_id"], line["verdict"], line["task_status"]) == (a, "passed", "verified")
    assert line["base"]["mode"] == "merge" and line["base"]["tip"] == fork
    accept(gate, a)
    tip = land(repo, "a")
    gate.submit(b, sha_b)
    [line] = gate.verify_json()
    assert (line["task_id"], line["verdict"], line["task_status"]) == (b, "failed", "ready")
    run = gate.detail(b)["runs"][-1]
    assert run["base"]["tip"] == tip and run["base"]["branch"] == "main"
    # the tree the checks ran on is main's tip with b merged: b's test next to a's rename
    merged_tree = git(repo.path, "rev-parse", f"{tip}^{{tree}}")
    assert run["base"]["tree"] != merged_tree
    task = gate.detail(b)["task"]
    assert task["attempts_used"] == 1 and task["verified_base"] is None
    assert (
        "AC-2.1" in task["findings"][-1]["summary"] or task["findings"][-1]["criteria"][0]["id"] == "AC-2.1"
    )


def test_merge_none_verifies_the_commit_alone_as_before(live: Live, tmp_path: Path) -> None:
    gate = conf_gate(live, tmp_path, merge="none")
    repo = gate.repo
    fork = git(repo.path, "rev-parse", "HEAD")
    a, b = gate.task([RENAME]), gate.task([USE])
    on_branch(repo, "a", fork, {"conf.py": RENAMED, "test_conf.py": RENAMED_TEST})
    sha_b = on_branch(repo, "b", fork, {"use.py": USE_PY, "test_use.py": USES})
    land(repo, "a")
    gate.submit(b, sha_b)
    [line] = gate.verify_json()
    # alone, b passes: exactly what breaks main once both land
    assert (line["task_id"], line["verdict"], line["task_status"]) == (b, "passed", "verified")
    assert line["base"] == {"mode": "none", "branch": None, "tip": None, "tree": None,
                            "why": "the verifier config sets merge: none"}  # fmt: skip
    assert gate.detail(b)["task"]["verified_on"] == "the commit alone (the verifier config sets merge: none)"
    assert a in gate.tasks


def test_a_conflict_goes_back_to_ready_without_an_attempt_and_three_go_to_a_human(
    live: Live, tmp_path: Path
) -> None:
    gate = conf_gate(live, tmp_path)
    repo = gate.repo
    fork = git(repo.path, "rev-parse", "HEAD")
    tid = gate.task([RENAME])
    tip = repo.commit(
        {"conf.py": "LIMIT = 20\n", "test_conf.py": CONF_TEST.replace("10", "20")}, "main moves"
    )
    sha = on_branch(repo, "old", fork, {"conf.py": RENAMED, "test_conf.py": RENAMED_TEST})
    expected = (
        f"merge conflict: commit {sha[:12]} does not merge cleanly onto main at {tip[:12]} "
        "(conflicting paths: conf.py, test_conf.py); no check ran and no attempt was used. Rebase your "
        f"work onto the current main (git fetch {shlex.quote(str(repo.path))} main && git rebase FETCH_HEAD), "
        "resolve the conflicts, commit, and submit the new commit"
    )
    for n in (1, 2, 3):
        gate.submit(tid, sha)
        [line] = gate.verify_json()
        assert line["verdict"] == "conflict" and line["checks"] == {} and line["criteria"] == {}
        assert line["conflict"] == {
            "mode": "merge",
            "branch": "main",
            "tip": tip,
            "paths": ["conf.py", "test_conf.py"],
        }
        task = gate.detail(tid)["task"]
        assert task["attempts_used"] == 0 and task["conflicts_in_row"] == n
        assert task["findings"][-1]["summary"] == expected
        if n < 3:
            assert line["task_status"] == "ready"
            assert (
                task["attempts"][-1]["state"] == "merge_conflict"
                or task["attempts"][-1]["ending"] == "merge_conflict"
            )
    assert line["task_status"] == "needs_human"
    assert task["needs_human"]["why"] == "merge_conflicts"
    assert task["needs_human"]["reason"] == f"3 merge conflicts in a row; the last: {expected}"
    # the brief of the next attempt carries the finding and says what the verifier checks
    gate.live.ok("POST", f"/api/tasks/{tid}/resolve", {"resolution": "requeue"})
    brief = gate.brief_after_claim(tid)
    assert brief["findings"][-1]["summary"] == expected
    assert brief["verifier_checks"]["checks_run_on"] == "your commit merged onto main's tip"
    # the repository's branches were never touched by the verifier
    assert git(repo.path, "rev-parse", "main") == tip and git(repo.path, "rev-parse", "old") == sha


def test_a_verified_task_goes_stale_and_is_verified_again_by_itself(live: Live, tmp_path: Path) -> None:
    gate = conf_gate(live, tmp_path)
    repo = gate.repo
    fork = git(repo.path, "rev-parse", "HEAD")
    keep, breaks = gate.task([USE]), gate.task([USE])
    sha_keep = on_branch(repo, "keep", fork, {"use.py": USE_PY, "test_use.py": USES})
    gate.submit(keep, sha_keep)
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"]
    # main gains an unrelated file: the verdict is stale, and the next poll verifies it again
    tip1 = repo.commit({"README": "hello\n"}, "docs")
    lines = gate.verify_json()
    assert [(x["task_id"], x["verdict"], x["task_status"]) for x in lines] == [(keep, "passed", "verified")]
    task = gate.detail(keep)["task"]
    assert task["verified_base"]["tip"] == tip1 and task["stale"] is False
    runs = gate.detail(keep)["runs"]
    assert [r["reverify"] for r in runs] == [False, True]
    assert task["attempts_used"] == 0
    # main then renames the limit (another task's accepted work): the verdict breaks on it
    assert breaks in gate.tasks
    tip2 = repo.commit({"conf.py": RENAMED, "test_conf.py": RENAMED_TEST}, "rename")
    [line] = gate.verify_json()
    assert (line["task_id"], line["verdict"], line["task_status"]) == (keep, "failed", "ready")
    finding = gate.detail(keep)["task"]["findings"][-1]["summary"]
    assert finding.startswith(
        f"breaks on the new base (the commit merged onto main at {tip2[:12]}; it was verified on "
        f"the commit merged onto main at {tip1[:12]})"
    ), finding
    # its own criterion failed: an attempt is used
    assert gate.detail(keep)["task"]["attempts_used"] == 1


def test_a_break_names_only_the_work_accepted_since_its_verdict_last_held(live: Live, tmp_path: Path) -> None:
    """A passing re-verification moves the verdict onto the new tip: work accepted before it is
    in the base the verdict held for, so the finding does not blame it."""
    gate = conf_gate(live, tmp_path)
    repo = gate.repo
    fork = git(repo.path, "rev-parse", "HEAD")
    keep, early = gate.task([USE]), gate.task([USE])
    gate.submit(keep, on_branch(repo, "keep", fork, {"use.py": USE_PY, "test_use.py": USES}))
    gate.submit(early, on_branch(repo, "early", fork, {"use.py": USE_PY, "test_use.py": USES + "# early\n"}))
    assert sorted(x["verdict"] for x in gate.verify_json()) == ["passed", "passed"]
    accept(gate, early)
    repo.commit({"README": "hello\n"}, "docs")  # keep's verdict is stale, then holds again
    assert [(x["task_id"], x["verdict"]) for x in gate.verify_json()] == [(keep, "passed")]
    late = gate.task([USE])
    gate.submit(
        late,
        on_branch(
            repo,
            "late",
            git(repo.path, "rev-parse", "main"),
            {"use.py": USE_PY, "test_use.py": USES + "# late\n"},
        ),
    )
    assert [(x["task_id"], x["verdict"]) for x in gate.verify_json()] == [(late, "passed")]
    accept(gate, late)
    repo.commit({"conf.py": RENAMED, "test_conf.py": RENAMED_TEST}, "rename")
    lines = {x["task_id"]: x["verdict"] for x in gate.verify_json()}
    assert lines[keep] == "failed", lines
    finding = gate.detail(keep)["task"]["findings"][-1]["summary"]
    assert f"accepted since: {late} (" in finding and early not in finding, finding


def _post(url: str, key: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_the_push_webhook_marks_stale_and_accepting_stale_work_says_so(live: Live, tmp_path: Path) -> None:
    # The repository by URL, as a git host's: the server reads no tip of it itself (a local path's
    # it does, tests/verifier/test_stale_local.py), so only the webhook says main moved.
    repo = Repo.create(
        tmp_path / "repo", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    gate = Gate.create(live, repo, pytest_config(), url=f"file://{repo.path}")
    tid = gate.task([USE])
    verified_tip = repo.commit({"use.py": USE_PY, "test_use.py": USES}, "use")
    gate.submit(tid, verified_tip)
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"]
    tip = repo.commit({"README": "x\n"}, "moves")
    url = f"{live.base}/api/verifier/projects/{gate.project}/base"
    push = {"ref": "refs/heads/main", "after": tip, "before": "0" * 40, "repository": {"full_name": "o/r"}}
    # an agent's key cannot say the base moved; a verifier's (as the git host's webhook holds) can
    assert _post(url, gate.agent_key, push)[0] in (401, 403)
    status, other = _post(url, gate.verifier_key, {**push, "ref": "refs/heads/feature"})
    assert (status, other["ignored"], other["stale"]) == (200, "feature is not the base branch (main)", [])
    assert gate.detail(tid)["task"]["stale"] is False
    # a bad tip changes nothing
    status, bad = _post(url, gate.verifier_key, {**push, "after": "abc"})
    assert status == 422 and bad["code"] == "E_VALIDATION"
    status, moved = _post(url, gate.verifier_key, push)
    assert status == 200 and moved["changed"] is True and moved["stale"] == [tid]
    assert gate.detail(tid)["task"]["stale"] is True
    warning = (
        f"{tid} was verified on the commit merged onto main at {verified_tip[:12]}, and main is at {tip[:12]} now: "
        "its verdict is stale"
    )
    # with accept_stale false, accepting is refused until it is verified again
    gate.configure(pytest_config(accept_stale=False))
    refused = live.rest("POST", f"/api/tasks/{tid}/accept")
    assert refused.status_code == 409, refused.text
    assert (
        refused.json()["message"]
        == f"{warning}; this project accepts only after re-verification (accept_stale: false)"
    )
    assert gate.detail(tid)["task"]["status"] == "verified"
    # allowed by default, and said; the acceptance's summary signs the base and that it was stale
    gate.configure(pytest_config())
    out = live.ok("POST", f"/api/projects/{gate.project}/accept", {"task_ids": [tid]})
    assert [t["id"] for t in out["accepted"]] == [tid] and out["warnings"] == [warning]
    envelopes = [json.loads(x) for x in live.rest("GET", f"/api/tasks/{tid}/attestations").text.splitlines()]
    facts = json.loads(base64.b64decode(envelopes[-1]["payload"]))["predicate"]["taskgate"]
    assert facts["stale"] is True and facts["verifiedOn"]["tip"] == verified_tip
