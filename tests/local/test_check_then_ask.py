"""A human-only command checks what the server would refuse before it asks the person at the
terminal anything: broken JSON, an unknown key, a project or task that does not exist, a switch
that lacks what it needs. Nothing is asked, nothing changes, and the refusal says what to do.
Then the small things the walk showed: what the prompts say, the key list's header, one spelling
of a person. A real `taskgate serve` started as `--admin-name Tester`, the real CLI at a pty."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import TASKGATE, Server, running
from tests.support.terminal import Ran, at_terminal

PROMPT = "to confirm (anything else cancels)"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running(tmp_path_factory.mktemp("ask") / "data", extra=["--admin-name", "Tester"]) as s:
        for name in ("my-app", "my-lib"):
            status, _ = s.request(
                "POST",
                "/api/projects",
                {"name": name, "repo": f"https://example.com/{name}.git"},
                token=s.admin_token,
            )
            assert status == 201
        yield s


def _env(server: Server) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
    return env | {"TASKGATE_SERVER": server.url, "TASKGATE_DATA_DIR": str(server.data_dir)}


def person(server: Server, *argv: str, answer: str | None = None) -> Ran:
    """The command at a terminal, typing `answer` if it asks (None: typing nothing)."""
    return at_terminal([TASKGATE, *argv], _env(server), answer=answer)


def rest(server: Server, path: str) -> Any:
    status, out = server.request("GET", path, token=server.admin_token)
    assert status == 200, (path, status, out)
    return out


def refused_unasked(r: Ran, code: int, *says: str) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr, r.terminal)
    assert PROMPT not in r.terminal, r.terminal  # nobody was asked
    for part in says:
        assert part in r.stderr, (part, r.stderr)


def test_verifier_config_set_with_broken_json_is_refused_before_asking(
    server: Server, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"checks": {"unit": {"command": "pytest",}}}')
    before = rest(server, "/api/projects/my-app/verifier-config")
    r = person(server, "verifier-config", "set", "my-app", "--file", str(broken), answer="my-app")
    refused_unasked(r, 2, f"{broken}: not valid JSON", "nothing was sent")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"check": {"unit": {"command": "pytest"}}}))
    r = person(server, "verifier-config", "set", "my-app", "--file", str(wrong), answer="my-app")
    refused_unasked(r, 2, "unknown key 'check'; did you mean 'checks'?")
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"checks": {"unit": {"command": "pytest"}}}))
    r = person(server, "verifier-config", "set", "nosuch-app", "--file", str(good), answer="nosuch-app")
    refused_unasked(r, 1, "E_NOT_FOUND", "project nosuch-app not found")
    assert rest(server, "/api/projects/my-app/verifier-config") == before


def test_set_says_what_it_saved_in_a_few_lines(server: Server, tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    config = {"checks": {"node-test": {"command": "node --test", "report": {"path": "reports/junit.xml"}}}}
    good.write_text(json.dumps(config))
    r = person(server, "verifier-config", "set", "my-lib", "--file", str(good), answer="my-lib")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.splitlines() == [
        "saved the verifier config of my-lib:",
        "  check node-test (report reports/junit.xml)",
        f"  protected paths: the default, {len(rest(server, '/api/projects/my-lib/verifier-config')['protect_in_force'])} in force",
        "`taskgate verifier-config get my-lib` prints it whole",
    ]


def test_verification_on_without_a_verifier_key_is_refused_before_asking(server: Server) -> None:
    r = person(server, "verification", "on", "my-app", answer="my-app")
    refused_unasked(
        r,
        1,
        "cannot switch verification on for my-app: missing a live local verifier key",
        "taskgate key create verifier ci --kind local --project my-app",
    )
    assert rest(server, "/api/projects/my-app/verification")["on"] is False


def test_a_key_for_a_project_that_does_not_exist_is_refused_before_asking(server: Server) -> None:
    keys = rest(server, "/api/keys")["items"]
    r = person(server, "key", "create", "agent", "alice", "--project", "my-ap", answer="alice")
    refused_unasked(r, 1, "E_NOT_FOUND", "project my-ap not found; the nearest: my-app")
    r = person(server, "key", "revoke", "k-nosuch", answer="k-nosuch")
    refused_unasked(r, 1, "E_NOT_FOUND", "key k-nosuch not found", "taskgate key list")
    assert rest(server, "/api/keys")["items"] == keys


def test_a_task_or_project_that_is_not_there_is_refused_before_asking(server: Server) -> None:
    r = person(server, "task", "accept", "my-app-99", answer="my-app-99")
    refused_unasked(r, 1, "E_NOT_FOUND", "task my-app-99 not found")
    r = person(server, "project", "create", "my-app", "--repo", "https://example.com/x.git", answer="my-app")
    refused_unasked(r, 1, "E_CONFLICT", "project my-app already exists")
    r = person(server, "project", "create", "My App", "--repo", "https://example.com/x.git", answer="My App")
    refused_unasked(r, 2, "lowercase letters, digits and '-'")


def test_spec_create_marks_guards_and_approve_shows_the_commands_it_authorises(
    server: Server, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.md"
    spec.write_text(
        "# Slugs\nrisk: low\n\nTitles become slugs.\n\n## Acceptance criteria\n\n"
        "- (test) digits are kept - `slugify > keeps digits`\n"
        "- (test, guard) words stay lowercase — `slugify > lowercases`\n"
        "- (command) it compiles — `node --check index.js`\n"
    )
    made = person(server, "spec", "create", "my-lib", "--file", str(spec))
    assert made.returncode == 0, made.stderr
    assert "criteria: AC-1.1 (test), AC-1.2 (test, guard), AC-1.3 (command)" in made.stdout
    r = person(server, "spec", "approve", "SPEC-1", "--project", "my-lib", answer="SPEC-1")
    assert r.returncode == 0, (r.stdout, r.stderr)
    asked = r.terminal[: r.terminal.index(PROMPT)]
    assert "approving it lets the verifier run these commands, as written:" in asked
    assert "AC-1.3: node --check index.js" in asked
    assert "the verifier may now run its command criteria:\n  AC-1.3: node --check index.js" in r.stdout


def test_key_list_has_a_header_row(server: Server) -> None:
    status, _ = server.request(
        "POST",
        "/api/keys",
        {"kind": "agent", "name": "lister", "projects": ["my-app"]},
        token=server.admin_token,
    )
    assert status == 201
    r = person(server, "key", "list")
    header, *rows = r.stdout.splitlines()
    assert header.split() == ["ID", "KIND", "NAME", "ROLE", "STATE", "PROJECTS"]
    [lister] = [row for row in rows if " lister " in row]
    assert lister.split()[1:] == ["agent", "lister", "executor", "live", "my-app"]
    # the columns line up under their headings
    assert lister.index("lister") == header.index("NAME")


def test_one_person_one_spelling(server: Server) -> None:
    """`serve --admin-name Tester` acts as human:tester, as a delegation to that person reads."""
    r = person(
        server, "project", "create", "spelled", "--repo", "https://example.com/s.git", answer="spelled"
    )
    assert r.returncode == 0, r.stderr
    [made] = [
        e for e in rest(server, "/api/projects/spelled/history")["items"] if e["action"] == "project_created"
    ]
    assert made["actor"] == "human:tester"
    r = person(server, "key", "create", "agent", "deputy", "--delegate", "human:Tester", answer="deputy")
    assert r.returncode == 0, r.stderr
    [deputy] = [k for k in rest(server, "/api/keys")["items"] if k["name"] == "deputy"]
    assert deputy["delegations"] == ["human:tester"]


def test_draft_names_checks_for_what_they_run_and_takes_a_rename(server: Server) -> None:
    node = (
        "mkdir -p reports && node --test --test-reporter=spec --test-reporter-destination=stdout "
        "--test-reporter=junit --test-reporter-destination=reports/junit.xml"
    )
    status, _ = server.request(
        "PUT",
        "/api/projects/my-lib/execution-defaults",
        {"verification_commands": ["npm ci", node]},
        token=server.admin_token,
    )
    assert status == 200
    drafted = person(server, "verifier-config", "draft", "my-lib")
    assert drafted.returncode == 0, drafted.stderr
    config = json.loads(drafted.stdout)
    assert list(config["checks"]) == ["install", "node-test"]
    assert config["checks"]["node-test"]["report"] == {"path": "reports/junit.xml", "format": "junit"}
    assert "null" not in drafted.stdout  # what is left to the default is left out ...
    assert (
        'note: "base_branch": null and "merge": null leave both to the repository' in drafted.stderr
    )  # ... and said
    renamed = person(server, "verifier-config", "draft", "my-lib", "--rename", "node-test=unit")
    assert list(json.loads(renamed.stdout)["checks"]) == ["install", "unit"]
    for bad, says in (
        ("mkdir=unit", "OLD one of the drafted checks: install, node-test"),
        ("node-test=install", "two checks would both be called install"),
        ("node-test=no good", "a check name matches"),
    ):
        r = person(server, "verifier-config", "draft", "my-lib", "--rename", bad)
        assert r.returncode == 2 and says in r.stderr and r.stdout == "", (bad, r.stdout, r.stderr)
