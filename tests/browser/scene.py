"""A project in every state the board shows, made the way it happens: an architect agent
writes a spec and tasks over MCP, executors claim, submit, escalate and fail over MCP, a
verifier runs over REST, a human approves and accepts over REST, a delegated agent accepts on
the human's behalf over MCP. Used by the browser tests and by the screenshot script."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.browser.support import ADMIN, CONFIG, Site, claim, mcp, submit


@dataclass
class Scene:
    project: str
    ids: dict[str, str] = field(default_factory=dict)  # role in the scene -> task id
    keys: dict[str, str] = field(default_factory=dict)  # agent name -> key


def build(site: Site, project: str) -> Scene:
    scene = Scene(project)
    site.project(project)
    arch = site.agent_key(f"arch-{project}", role="architect")
    ada = site.agent_key(f"ada-{project}")
    bob = site.agent_key(f"bob-{project}")
    deputy = site.agent_key(f"deputy-{project}", delegate=True)
    scene.keys = {"arch": arch, "ada": ada, "bob": bob, "deputy": deputy}

    spec = mcp(
        site,
        arch,
        (
            "create_spec",
            {
                "project": project,
                "title": "Health endpoint",
                "body": 'GET /healthz answers 200 with {"status": "ok"}.',
                "risk": "low",
                "criteria": [
                    {
                        "text": "GET /healthz returns 200",
                        "kind": "test",
                        "verify_ref": "tests.test_health.test_ok",
                    },
                    {"text": "The handler is documented", "kind": "review"},
                ],
            },
        ),
    )[0]
    made = mcp(
        site,
        arch,
        ("approve_spec", {"project": project, "spec_id": spec["id"]}),
        (
            "create_task",
            {"project": project, "title": "Implement /healthz", "spec_id": spec["id"], "priority": 8},
        ),
        (
            "create_task",
            {
                "project": project,
                "title": "Add request logging",
                "priority": 5,
                "risk": "medium",
                "description": "Log method, path, status and duration of every request.",
                "criteria": [
                    {"text": "tests.test_log passes", "kind": "test", "verify_ref": "tests.test_log"}
                ],
            },
        ),
        (
            "create_task",
            {
                "project": project,
                "title": "Rate-limit the API",
                "priority": 6,
                "risk": "high",
                "criteria": [{"text": "429 after 100 requests a minute"}],
            },
        ),
        (
            "create_task",
            {
                "project": project,
                "title": "Document the API",
                "priority": 3,
                "criteria": [{"text": "docs/api.md lists every route"}],
            },
        ),
        (
            "create_task",
            {
                "project": project,
                "title": "Pick a database",
                "priority": 4,
                "risk": "medium",
                "criteria": [{"text": "a decision is logged"}],
            },
        ),
        (
            "create_task",
            {
                "project": project,
                "title": "Write the changelog",
                "priority": 1,
                "criteria": [{"text": "CHANGELOG.md has the release"}],
            },
        ),
        (
            "create_task",
            {
                "project": project,
                "title": "Drop the XML endpoint",
                "priority": 0,
                "criteria": [{"text": "nothing answers XML"}],
            },
        ),
        ("log_decision", {"project": project, "title": "Health answers XML", "body": "Legacy clients."}),
    )
    health, logging, ratelimit, docs, database, changelog, xml = (t["task"]["id"] for t in made[1:8])
    scene.ids = {
        "health": health,
        "logging": logging,
        "ratelimit": ratelimit,
        "docs": docs,
        "database": database,
        "changelog": changelog,
        "xml": xml,
    }
    migrate = mcp(
        site,
        arch,
        (
            "create_task",
            {
                "project": project,
                "title": "Migrate the config",
                "blocked_by": [ratelimit],
                "criteria": [{"text": "old keys still load"}],
            },
        ),
        (
            "log_decision",
            {
                "project": project,
                "title": "Health answers JSON",
                "body": "Always JSON.",
                "supersedes": "DEC-1",
            },
        ),
    )[0]
    scene.ids["migrate"] = migrate["task"]["id"]
    draft = site.ok(
        "POST",
        f"/api/projects/{project}/specs",
        {
            "title": "Metrics endpoint",
            "risk": "medium",
            "criteria": [{"text": "GET /metrics is Prometheus text"}],
        },
    )
    scene.ids["backlog"] = str(
        site.ok(
            "POST", f"/api/projects/{project}/tasks", {"title": "Expose /metrics", "spec_id": draft["id"]}
        )["task"]["id"]
    )

    # Verification on: a local verifier key and a config.
    site.verifier_key(project)
    site.ok("PUT", f"/api/projects/{project}/verifier-config", CONFIG)
    site.ok("PUT", f"/api/projects/{project}/verification", {"on": True})

    submit(site, ada, project, health, self_report={"AC-1.1": "pass", "AC-1.2": "pass"})
    site.verify(project, health, output="2 passed in 0.41s")

    own = f"AC-{logging}.1"
    submit(site, ada, project, logging, self_report={own: "pass"})
    site.verify(
        project,
        logging,
        exit_code=1,
        output="FAILED tests/test_log.py::test_duration - KeyError: 'duration'\n1 failed, 3 passed",
        results={
            own: {
                "result": "fail",
                "detail": "test_duration failed: KeyError 'duration'",
                "source": {"check": "unit", "report": "reports/junit.xml", "ref": "tests.test_log"},
            }
        },
    )

    submit(site, ada, project, docs)
    site.verify(project, docs, error="checkout failed: commit not found")

    submit(site, ada, project, changelog)
    site.verify(project, changelog)
    mcp(
        site,
        deputy,
        ("accept_tasks", {"project": project, "task_ids": [changelog], "on_behalf_of": f"human:{ADMIN}"}),
    )

    token = claim(site, bob, project, database)
    mcp(
        site,
        bob,
        (
            "escalate",
            {
                "task_id": database,
                "claim_token": token,
                "question": "Postgres or SQLite? The spec does not say.",
            },
        ),
    )
    site.ok("POST", f"/api/tasks/{xml}/cancel", {"reason": "XML clients are gone"})

    claim(site, bob, project, ratelimit)
    mcp(site, bob, ("add_note", {"task_id": ratelimit, "body": "Using a token bucket per key."}))
    return scene


# A failing pytest run as a verifier records it: long output whose end holds the error and the
# summary, and a failing test with its full name and its own message.
FAILING_TEST = "tests/test_more.py::TestChunked::test_strict_chunks[7]"
FAILING_MESSAGE = (
    "AssertionError: assert [[1, 2, 3], [4, 5, 6], [7]] == [[1, 2, 3], [4, 5, 6]]\n"
    "  Left contains one more item: [7]"
)
FAILING_SUMMARY = "==================== 1 failed, 764 passed in 12.31s ===================="
FAILING_FIRST_LINE = "============================= test session starts =============================="


def failing_output() -> str:
    dots = [f"tests/test_more.py {'.' * 60} [{p:3d}%]" for p in range(1, 60)]
    return "\n".join(
        [
            FAILING_FIRST_LINE,
            "platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0",
            "rootdir: /tmp/checkout/more-itertools",
            "collected 765 items",
            "",
            *dots,
            "",
            "=================================== FAILURES ===================================",
            "____________________ TestChunked.test_strict_chunks[7] _____________________",
            "",
            "    def test_strict_chunks(self, n):",
            ">       assert list(chunked(range(1, n + 1), 3, strict=True)) == [[1, 2, 3], [4, 5, 6]]",
            "E       " + FAILING_MESSAGE.splitlines()[0],
            "E         " + FAILING_MESSAGE.splitlines()[1].strip(),
            "",
            "tests/test_more.py:412: AssertionError",
            "=========================== short test summary info ============================",
            f"FAILED {FAILING_TEST} - AssertionError: assert [[1, 2, 3], [4, 5, 6], [7]] == [[...",
            FAILING_SUMMARY,
        ]
    )


def long_failure(site: Site, project: str, key: str) -> str:
    """A task with two test criteria whose first run failed one of them: the agent said pass to
    both, the check exited 1 with a long output. Verification must be on in `project`."""
    tid = site.rest_task(
        project,
        "Make chunked strict",
        criteria=[
            {
                "text": "chunked keeps short input",
                "kind": "test",
                "verify_ref": "tests.test_more.TestChunked.test_short",
            },
            {
                "text": "strict chunked refuses a ragged end",
                "kind": "test",
                "verify_ref": "tests.test_more.TestChunked.test_strict_chunks",
            },
        ],
    )
    short, strict = f"AC-{tid}.1", f"AC-{tid}.2"
    submit(site, key, project, tid, self_report={short: "pass", strict: "pass"})
    site.verify(
        project,
        tid,
        exit_code=1,
        output=failing_output(),
        results={
            short: {
                "result": "pass",
                "detail": "1 passed",
                "source": {
                    "check": "unit",
                    "report": "reports/junit.xml",
                    "ref": "tests.test_more.TestChunked.test_short",
                },
            },
            strict: {
                "result": "fail",
                "detail": "1 of 9 tests failed",
                "source": {
                    "check": "unit",
                    "report": "reports/junit.xml",
                    "ref": "tests.test_more.TestChunked.test_strict_chunks",
                },
                "failures": [{"name": FAILING_TEST, "message": FAILING_MESSAGE}],
            },
        },
    )
    return tid
