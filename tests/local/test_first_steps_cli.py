"""A new user's first-step commands against a real `taskgate serve`: spec create (Markdown that
round-trips through spec export, and JSON), task create, project defaults, task show. Each runs
as an agent's shell would (no terminal): none of them is human-only, and each is read back
over REST."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskgate.domain.errors import TaskgateError
from taskgate.domain.models import Criterion, CriterionKind, Risk, Spec, SpecStatus
from taskgate.domain.spec_markdown import parse_spec_markdown
from taskgate.domain.specs import render_markdown
from tests.support.server import Server, running

SPEC_MD = """\
# Text helpers
risk: medium

Small helpers for text, with `backticks` and a list:

- not a criterion, part of the body

## Acceptance criteria

- (test) title_case capitalises each word — `test_text.test_title_case`
- (command) the module compiles -- `python -m py_compile text.py`
- (review) every new function has a docstring
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("first-steps")
    with running(tmp / "data") as s:
        s.script("project", "create", "app", "--repo", "https://example.com/app.git")
        yield s


def ok(server: Server, *args: str) -> Any:
    done = server.cli(*args, "--json")
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return json.loads(done.stdout)


def rest(server: Server, path: str) -> Any:
    status, out = server.request("GET", path, token=server.admin_token)
    assert status == 200, (path, status, out)
    return out


def test_spec_create_reads_markdown_and_export_then_create_round_trips(
    server: Server, tmp_path: Path
) -> None:
    (tmp_path / "spec.md").write_text(SPEC_MD)
    made = ok(server, "spec", "create", "app", "--file", str(tmp_path / "spec.md"))
    stored = rest(server, f"/api/projects/app/specs/{made['id']}")
    assert (stored["title"], stored["risk"], stored["status"]) == ("Text helpers", "medium", "draft")
    assert stored["body"].startswith("Small helpers") and "not a criterion" in stored["body"]
    asks = [(c["kind"], c["text"], c["verify_ref"]) for c in stored["criteria"]]
    assert asks == [
        ("test", "title_case capitalises each word", "test_text.test_title_case"),
        ("command", "the module compiles", "python -m py_compile text.py"),
        ("review", "every new function has a docstring", None),
    ]
    # export writes specs/SPEC-n.md; creating from that file makes the same spec again
    ok(server, "spec", "export", made["id"], "--project", "app", "--repo", str(tmp_path))
    again = ok(server, "spec", "create", "app", "--file", str(tmp_path / "specs" / f"{made['id']}.md"))
    copy = rest(server, f"/api/projects/app/specs/{again['id']}")
    assert again["id"] != made["id"]
    for field in ("title", "body", "risk"):
        assert copy[field] == stored[field], field
    assert [(c["kind"], c["text"], c["verify_ref"]) for c in copy["criteria"]] == asks


def test_spec_create_takes_the_rest_body_as_json(server: Server, tmp_path: Path) -> None:
    body = {"title": "J", "risk": "high", "criteria": [{"text": "x", "kind": "test", "verify_ref": "a.b"}]}
    (tmp_path / "spec.json").write_text(json.dumps(body))
    made = ok(server, "spec", "create", "app", "--file", str(tmp_path / "spec.json"))
    assert (made["risk"], made["criteria"][0]["verify_ref"]) == ("high", "a.b")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("no title\n## Acceptance criteria\n- (review) x\n", "title line"),
        ("# T\n\nbody only\n", "no `## Acceptance criteria`"),
        ("# T\n## Acceptance criteria\n- (tests) x — `a`\n", "'tests' is not one of"),
        ("# T\n## Acceptance criteria\n- (test) x without a ref\n", "needs its verify_ref"),
        ("# T\nrisk: severe\n## Acceptance criteria\n- (review) x\n", "risk 'severe'"),
        ("# T\n## Acceptance criteria\n\n", "lists no criterion"),
    ],
)
def test_a_bad_spec_file_is_refused_before_anything_is_sent(
    server: Server, tmp_path: Path, text: str, says: str
) -> None:
    before = rest(server, "/api/projects/app/specs")["items"]
    (tmp_path / "bad.md").write_text(text)
    done = server.cli("spec", "create", "app", "--file", str(tmp_path / "bad.md"))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "E_VALIDATION" in done.stderr and says in done.stderr
    assert rest(server, "/api/projects/app/specs")["items"] == before


def test_task_create_from_a_spec_and_with_own_criteria(server: Server, tmp_path: Path) -> None:
    spec = ok(server, "spec", "create", "app", "--file", _spec(tmp_path))
    sid = spec["id"]
    # a criterion the spec does not have: the server's refusal, passed on, nothing made
    wrong = server.cli("task", "create", "app", "--title", "T", "--spec", sid, "--criterion", "AC-99.1")
    assert wrong.returncode == 1 and "E_VALIDATION" in wrong.stderr, (wrong.stdout, wrong.stderr)
    held = f"AC-{sid.split('-')[1]}.1"
    made = ok(server, "task", "create", "app", "--title", "Title case", "--spec", sid, "--criterion", held)
    t = made["task"]
    assert (t["status"], t["spec_criteria"], t["risk"]) == ("backlog", [held], "medium")
    (tmp_path / "own.md").write_text("# mine\n- (test) it works — `test_x.test_works`\n- (review) tidy\n")
    own = ok(
        server,
        "task",
        "create",
        "app",
        "--title",
        "Own",
        "--criteria-file",
        str(tmp_path / "own.md"),
        "--blocked-by",
        t["id"],
        "--priority",
        "7",
        "--risk",
        "high",
    )["task"]
    stored = rest(server, f"/api/tasks/{own['id']}")["task"]
    assert (stored["status"], stored["priority"], stored["risk"], stored["blocked_by"]) == (
        "blocked",
        7,
        "high",
        [t["id"]],
    )
    assert [(c["kind"], c["verify_ref"]) for c in stored["criteria"]] == [
        ("test", "test_x.test_works"),
        ("review", None),
    ]


def _spec(tmp_path: Path) -> str:
    path = tmp_path / "spec.md"
    path.write_text(SPEC_MD)
    return str(path)


def test_project_defaults_sets_and_shows_commands_and_conventions(server: Server) -> None:
    cmd = "pytest --junitxml=reports/junit.xml"
    ok(server, "project", "defaults", "app", "--command", cmd, "--convention", "type hints")
    assert rest(server, "/api/projects/app")["execution_defaults"] == {
        "verification_commands": [cmd],
        "conventions": ["type hints"],
    }
    ok(server, "project", "defaults", "app", "--command", "npm ci", "--command", "npm test")
    shown = ok(server, "project", "defaults", "app")
    assert shown["execution_defaults"] == {
        "verification_commands": ["npm ci", "npm test"],
        "conventions": ["type hints"],  # not named: kept
    }
    draft = ok(server, "verifier-config", "draft", "app")
    assert [c["command"] for c in draft["config"]["checks"].values()] == ["npm ci", "npm test"]


def test_task_show_prints_criteria_attempts_and_history(server: Server, tmp_path: Path) -> None:
    spec = ok(server, "spec", "create", "app", "--file", _spec(tmp_path))
    t = ok(server, "task", "create", "app", "--title", "Shown", "--spec", spec["id"])["task"]
    done = server.cli("task", "show", t["id"])
    assert done.returncode == 0, done.stderr
    for c in spec["criteria"]:
        assert f"{c['id']} ({c['kind']}) {c['text']}" in done.stdout
    assert "create_draft" in done.stdout and "-> backlog" in done.stdout
    as_json = ok(server, "task", "show", t["id"])
    assert as_json["spec"]["id"] == spec["id"] and as_json["task"]["id"] == t["id"]


# -- the Markdown reader on its own -------------------------------------------------------------


def test_render_then_parse_keeps_everything_a_spec_asks() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, tzinfo=UTC)
    spec = Spec(
        id="SPEC-4",
        project="p",
        number=4,
        title="Slugs: stable",
        body="First line.\n\n## Notes\n\n- a bullet (test) — `not a ref`",
        risk=Risk.HIGH,
        criteria=[
            Criterion(id="AC-4.1", text="keeps digits", kind=CriterionKind.TEST, verify_ref="a > b"),
            Criterion(id="AC-4.2", text="is tidy — really", kind=CriterionKind.REVIEW),
        ],
        status=SpecStatus.APPROVED,
        approved_by="human:alice",
        approved_at=now,
        created_by="human:alice",
        created_at=now,
        updated_at=now,
    )
    parsed = parse_spec_markdown(render_markdown(spec))
    assert (parsed.title, parsed.body, parsed.risk) == (spec.title, spec.body, spec.risk)
    assert [(c.text, c.kind, c.verify_ref) for c in parsed.criteria] == [
        (c.text, c.kind, c.verify_ref) for c in spec.criteria
    ]


def test_a_criterion_line_that_is_not_one_names_its_line() -> None:
    with pytest.raises(TaskgateError, match="line 4"):
        parse_spec_markdown("# T\n\n## Acceptance criteria\nsome prose\n")


# -- friendlier refusals -------------------------------------------------------------------------


def test_project_create_wants_a_git_repository_or_a_url(server: Server, tmp_path: Path) -> None:
    import subprocess

    plain = tmp_path / "plain"
    plain.mkdir()
    before = rest(server, "/api/projects")["items"]
    for repo, says in (
        (str(plain), "is not a git repository"),
        (str(tmp_path / "nope"), "no such directory"),
    ):
        done = server.script("project", "create", "nogit", "--repo", repo)
        assert done.returncode == 2 and says in done.stderr, (done.stdout, done.stderr)
    assert rest(server, "/api/projects")["items"] == before
    subprocess.run(["git", "init", "--quiet", str(plain)], check=True)
    made = server.script(
        "project", "create", "withgit", "--repo", str(plain / "." / ".." / "plain"), "--json"
    )
    assert made.returncode == 0, made.stderr
    assert rest(server, "/api/projects/withgit")["repo"] == str(plain.resolve())  # absolute
    for name, url in (
        ("byurl", "https://example.com/x.git"),
        ("byssh", "git@example.com:me/x.git"),
        ("byscp", "example.com:me/x.git"),
    ):
        assert server.script("project", "create", name, "--repo", url).returncode == 0
        assert rest(server, f"/api/projects/{name}")["repo"] == url


def test_piped_output_cut_short_prints_no_broken_pipe(server: Server) -> None:
    import os
    import subprocess

    from tests.support.server import TASKGATE

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write: every write fails with EPIPE
    try:
        done = subprocess.run(
            [TASKGATE, "board", "--data-dir", str(server.data_dir), "--server", server.url],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write)
    assert done.stderr == "" and done.returncode == 141


def test_a_refusal_says_what_to_do_next(server: Server) -> None:
    down = server.cli("task", "list", "app", "--server", "http://127.0.0.1:9")
    assert down.returncode == 1 and "E_UNREACHABLE" in down.stderr and "taskgate serve" in down.stderr
    import os
    import subprocess

    from tests.support.server import TASKGATE

    elsewhere = str(server.data_dir / "elsewhere")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    no_token = subprocess.run(
        [TASKGATE, "task", "list", "app", "--server", server.url, "--data-dir", elsewhere],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert no_token.returncode == 1 and "E_UNAUTHORIZED" in no_token.stderr
    assert str(server.data_dir / "elsewhere" / "admin-token") in no_token.stderr
    missing = server.cli("task", "show", "app-999")
    assert missing.returncode == 1 and "E_NOT_FOUND" in missing.stderr and "hint:" in missing.stderr
    config = ok(server, "mcp-config")
    assert "401" in config["unauthorized"] and "Server returned an error response" in config["unauthorized"]
