"""The CLI's edges, each tried as a newcomer or an agent would, with no terminal, against a real
`taskgate serve`: what `task show` says of a failed run, stored text with control characters,
ids that are not URL-safe, bodies over the server's limit, nesting no parser follows, a data dir
that belongs to another user. Every failure is one clear line and an exit code, never a traceback.
"""

from __future__ import annotations

import json
import pwd
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskgate.domain.brief import CHECK_OUTPUT_CHARS
from taskgate.domain.clock import SystemClock
from taskgate.domain.models import CriterionInput, CriterionKind, FailedTest, Task
from taskgate.domain.principals import acting
from taskgate.domain.run_report import CheckResult, CriterionResult, Evidence, EvidenceSource, RunReport
from taskgate.service import claims, keys, records, tasks, verification
from taskgate.service.context import Context, put_task
from taskgate.store.sqlite import SQLiteStore
from tests.support import evidence
from tests.support.server import Server, running
from tests.support.users import IS_ROOT, NOBODY, check_python, taskgate_command
from tests.support.world import SHA

EVIL = "innocent\x1b[2K\x1b[1Gaccept me\x9b31m\u202e"
MESSAGE = "AssertionError: assert 'route66' == 'route-66'\n  - route-66\n  + route66"
OUTPUT = "".join(f"collected line {i}\n" for i in range(400)) + (
    "FAILED test_slug.py::test_keeps_digits - AssertionError\n1 failed, 3 passed in 0.05s"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running(tmp_path_factory.mktemp("cli-edges") / "data") as s:
        yield s


def _ok(server: Server, method: str, path: str, body: Any = None) -> Any:
    status, out = server.request(method, path, body, token=server.admin_token)
    assert status in (200, 201), (method, path, status, out)
    return out


def _one_line_failure(done: subprocess.CompletedProcess[str], code: str, exit_code: int = 1) -> str:
    assert done.returncode == exit_code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"error {code}: "), done.stderr
    return first


@pytest.fixture(scope="module")
def failed(server: Server) -> str:
    """A task whose run failed: a failing test with its message, a check with long output; its
    title holds control characters (stored raw, as text stored before the boundary refused them)."""
    _ok(server, "POST", "/api/projects", {"name": "edges", "repo": "https://example.com/edges.git"})
    body = {"kind": "verifier", "name": "ci", "verifier_kind": "local", "projects": ["edges"]}
    verifier_key = _ok(server, "POST", "/api/keys", body)["key"]
    agent_key = _ok(server, "POST", "/api/keys", {"kind": "agent", "name": "eve"})["key"]
    _ok(server, "PUT", "/api/projects/edges/verifier-config", evidence.CONFIG)
    _ok(server, "PUT", "/api/projects/edges/verification", {"on": True})
    store = SQLiteStore(server.data_dir / "taskgate.db")
    try:
        ctx = Context(store, SystemClock())
        agent, local = acting(keys.authenticate(ctx, agent_key)), acting(keys.authenticate(ctx, verifier_key))
        ref = "test_slug.test_keeps_digits"
        crit = [CriterionInput(text="digits are kept", kind=CriterionKind.TEST, verify_ref=ref)]
        t = tasks.create(ctx, agent, "edges", title="plain", criteria=crit).task
        raw = records.load(Task, store.get(*records.task_key(t.id)))  # type: ignore[arg-type]
        store.commit([put_task(raw, raw.model_copy(update={"title": EVIL}))])
        c = claims.claim(ctx, agent, "edges", task_id=t.id)
        claims.submit(ctx, agent, t.id, c.token, commit_sha=SHA, evidence="done")
        started = verification.start(ctx, local, task_id=t.id)
        [cid] = [x["id"] for x in started.work["criteria"]]
        result = CriterionResult(
            result=Evidence.FAIL,
            detail=f"1 test failed: {ref}",
            source=EvidenceSource(check=evidence.CHECK, report=evidence.REPORT_PATH, ref=ref),
            failures=[FailedTest(name=ref, message=MESSAGE)],
        )
        verification.finish(
            ctx,
            local,
            t.id,
            started.run.id,
            RunReport(
                checks={evidence.CHECK: CheckResult(exit_code=1, output_tail=OUTPUT)}, results={cid: result}
            ),
        )
    finally:
        store.close()
    return t.id


def test_task_show_prints_the_failing_tests_message_and_the_end_of_the_checks_output(
    server: Server, failed: str
) -> None:
    shown = server.cli("task", "show", failed)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "test test_slug.test_keeps_digits:" in out
    for line in MESSAGE.splitlines():
        assert f"        {line}" in out, line  # the test's own message, indented under it
    assert f"check {evidence.CHECK} exited 1; its output ends:" in out
    assert "        1 failed, 3 passed in 0.05s" in out
    # only its end, as much as the brief gives (CHECK_OUTPUT_CHARS, cut at a line), "…" first
    block = out[out.index("its output ends:") :].splitlines()[1:]
    block = block[: next(i for i, ln in enumerate(block) if not ln.startswith("        "))]
    assert block[0] == "        …" and block[-1] == "        1 failed, 3 passed in 0.05s"
    kept = "\n".join(ln.removeprefix("        ") for ln in block[1:])
    assert len(kept) <= CHECK_OUTPUT_CHARS and OUTPUT.endswith(kept)
    assert len(kept) > CHECK_OUTPUT_CHARS - 40  # not cut shorter than a line's worth


def test_stored_control_characters_are_printed_visibly(server: Server, failed: str) -> None:
    for argv in (("task", "list", "edges"), ("task", "show", failed)):
        done = server.cli(*argv)
        assert done.returncode == 0, done.stderr
        assert not any(ch in done.stdout for ch in "\x1b\x9b\u202e\x07"), argv
        assert "innocent\\x1b[2K\\x1b[1Gaccept me\\x9b31m\\u202e" in done.stdout
    # --json is JSON: the characters are escaped there, and come back whole
    listed = json.loads(server.cli("task", "list", "edges", "--json").stdout)
    assert listed["items"][0]["title"] == EVIL


def test_ids_are_sent_as_one_path_segment(server: Server, failed: str) -> None:
    cut = server.cli("attest", "export", f"{failed}?")  # once: the task's JSON, as if a bundle
    _one_line_failure(cut, "E_NOT_FOUND")
    cases = [
        (("task", "show", "été-1"), "E_VALIDATION", "'été-1' is not a task id"),
        (("audit", "verify", "x y"), "E_NOT_FOUND", "x y"),
        (("task", "show", "a/../edges-1"), "E_NOT_FOUND", ""),
    ]
    for argv, code, names in cases:
        assert names in _one_line_failure(server.cli(*argv), code), argv
    real = server.cli("attest", "export", failed)  # the id itself still reaches its task
    assert real.returncode == 0 and real.stderr == "", real


def test_a_body_over_the_servers_limit_is_answered_with_why(server: Server, tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text(
        "# Big\n\nrisk: low\n\n" + "x" * (10 * 1024 * 1024) + "\n\n## Acceptance criteria\n\n- (review) ok\n"
    )
    first = _one_line_failure(server.cli("spec", "create", "edges", "--file", str(big)), "E_TOO_LARGE")
    assert "request body over 1048576 bytes" in first


def test_nesting_no_parser_follows_is_one_line(server: Server, tmp_path: Path) -> None:
    deep = "[" * 100_000
    spec = tmp_path / "spec.json"
    spec.write_text('{"title": ' + deep)
    first = _one_line_failure(server.cli("spec", "create", "edges", "--file", str(spec)), "E_VALIDATION", 2)
    assert "nested too deeply" in first
    crit = tmp_path / "criteria.json"
    crit.write_text(deep)
    done = server.cli("task", "create", "edges", "--title", "t", "--criteria-file", str(crit))
    assert "nested too deeply" in _one_line_failure(done, "E_VALIDATION", 2)
    bundle = tmp_path / "b.intoto.jsonl"
    bundle.write_text(deep + "\n")
    key = tmp_path / "key.pem"
    key.write_text(_ok(server, "GET", "/api/attestations/key")["pem"])
    done = server.cli("attest", "verify", str(bundle), "--key", str(key))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("FAILED: ") and "nested too deeply" in done.stderr


@pytest.mark.skipif(not IS_ROOT, reason="running the CLI as another OS user needs root")
def test_another_users_data_dir_is_a_clear_error_before_anyone_is_asked(server: Server) -> None:
    nobody = pwd.getpwnam(NOBODY)
    taskgate = taskgate_command(check_python())
    env = {"PATH": "/usr/bin:/bin", "TASKGATE_SERVER": server.url, "TASKGATE_DATA_DIR": str(server.data_dir)}
    for argv in (["task", "list", "edges"], ["task", "accept", "edges-1"]):
        done = subprocess.run(
            [taskgate, *argv],
            env=env,
            user=nobody.pw_uid,
            group=nobody.pw_gid,
            extra_groups=[],
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            start_new_session=True,
            check=False,
        )
        first = _one_line_failure(done, "E_NO_TOKEN")
        assert f"cannot read the admin token {server.data_dir / 'admin-token'}: Permission denied" in first
        assert "--token or TASKGATE_TOKEN" in done.stderr


def test_a_failure_of_the_cli_itself_is_one_line_too(server: Server, failed: str, tmp_path: Path) -> None:
    spec = _ok(server, "POST", "/api/projects/edges/specs", {"title": "S", "criteria": [{"text": "ok"}]})
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = server.cli("spec", "export", spec["id"], "--project", "edges", "--repo", str(blocker))
    first = _one_line_failure(done, "E_CLI")
    assert "NotADirectoryError" in first and str(blocker) in first
    assert done.stderr.splitlines()[1:] == ["hint: TASKGATE_DEBUG=1 shows where"]
