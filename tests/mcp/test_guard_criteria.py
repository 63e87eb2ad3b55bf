"""A test criterion that guards behaviour the baseline already has, over MCP and REST on a real
server: `guard` round-trips through create_spec, get_spec, the spec's Markdown and the brief;
bad guard input is refused with E_VALIDATION and writes nothing; and the guard is frozen with
the criteria like the rest of them."""

from __future__ import annotations

import itertools
from typing import Any

from taskgate.domain.spec_markdown import parse_spec_markdown
from tests.mcp.events import MODERN
from tests.mcp.live import Live, agent, run

_n = itertools.count(1)
CRITERIA = [
    {"text": "slugs stay lowercase", "kind": "test", "verify_ref": "test_slug.test_lower", "guard": True},
    {"text": "digits are kept", "kind": "test", "verify_ref": "test_slug.test_digits"},
]


def _project(live: Live) -> tuple[str, str, str]:
    project = live.project(f"guard{next(_n)}")
    executor, _ = live.key(f"guard-exec{next(_n)}", projects=[project])
    architect, _ = live.key(f"guard-arch{next(_n)}", role="architect", projects=[project])
    return project, executor, architect


def test_a_guard_round_trips_through_the_spec_its_markdown_and_the_brief(live: Live) -> None:
    project, executor, architect = _project(live)
    live.ok(
        "PUT",
        f"/api/projects/{project}/verifier-config",
        {"checks": {"unit": {"command": "pytest", "report": {"path": "r.xml", "format": "junit"}}}},
    )

    async def go() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with agent(live.mcp_url, architect, MODERN) as a:
            made = await a.ok("create_spec", project=project, title="Slugs", criteria=CRITERIA, risk="low")
            await a.ok("approve_spec", project=project, spec_id=made["id"])
            read = await a.ok("get_spec", project=project, spec_id=made["id"])
            task = await a.ok("create_task", project=project, title="Slugs", spec_id=made["id"])
        async with agent(live.mcp_url, executor, MODERN) as e:
            claimed = await e.ok("claim_task", project=project, task_id=task["task"]["id"])
        return made, read, claimed["brief"]

    made, read, brief = run(go())
    for spec in (made, read):
        assert spec["criteria"][0]["guard"] is True
        assert "guard" not in spec["criteria"][1]  # written only when set
    assert [c.get("guard", False) for c in brief["criteria"]] == [True, False]
    assert "must fail on the code before your change" in brief["verifier_checks"]["new_tests"]
    exported = live.ok("GET", f"/api/projects/{project}/specs/{made['id']}/markdown")["markdown"]
    assert f"- **{made['id'].replace('SPEC', 'AC')}.1** (test, guard) slugs stay lowercase" in exported
    assert f"- **{made['id'].replace('SPEC', 'AC')}.2** (test) digits are kept" in exported
    again = parse_spec_markdown(exported)
    assert [c.model_dump(mode="json") for c in again.criteria] == CRITERIA


def test_bad_guard_input_is_refused_with_a_stable_code_and_writes_nothing(live: Live) -> None:
    project, executor, _ = _project(live)
    bad = [
        [{**CRITERIA[0], "guard": "yes"}],  # not a boolean: no coercion from text
        [{**CRITERIA[0], "guard": 1}],
        [{"text": "it builds", "kind": "command", "verify_ref": "make", "guard": True}],
        [{"text": "it reads well", "kind": "review", "guard": True}],
    ]

    async def go() -> list[dict[str, Any]]:
        out = []
        async with agent(live.mcp_url, executor, MODERN) as a:
            for criteria in bad:
                out.append(await a.refused("create_spec", project=project, title="S", criteria=criteria))
                out.append(await a.refused("create_task", project=project, title="T", criteria=criteria))
        return out

    before = live.dump()
    refusals = run(go())
    assert [b["code"] for b in refusals] == ["E_VALIDATION"] * len(refusals)
    assert "guard applies to test criteria only, not to a command" in refusals[4]["message"]
    # over REST: a guard that is not a boolean, or on a command or review criterion
    answers = [
        live.rest("POST", f"/api/projects/{project}/specs", {"title": "S", "criteria": c}) for c in bad
    ]
    assert [(r.status_code, r.json()["code"]) for r in answers] == [(422, "E_VALIDATION")] * len(bad)
    assert "guard applies to test criteria only" in answers[3].json()["message"]
    assert live.dump() == before


def test_the_guard_is_frozen_with_the_criteria(live: Live) -> None:
    """An executor cannot mark a criterion of its task a guard once the task exists."""
    project, executor, _ = _project(live)
    plain = [{k: v for k, v in c.items() if k != "guard"} for c in CRITERIA]

    async def go() -> tuple[dict[str, Any], str]:
        async with agent(live.mcp_url, executor, MODERN) as a:
            task = await a.ok("create_task", project=project, title="T", criteria=plain)
            tid = task["task"]["id"]
            refused = await a.refused("update_task", task_id=tid, criteria=CRITERIA)
        return refused, tid

    refused, tid = run(go())
    assert refused["code"] == "E_FORBIDDEN"
    held = live.ok("GET", f"/api/tasks/{tid}")["task"]["criteria"]
    assert all("guard" not in c for c in held)
