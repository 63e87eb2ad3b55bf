"""One limit per field on every interface (domain/limits.py): what MCP refuses, REST refuses too
(and `taskgate spec create`, which sends the REST body), and the limit itself is accepted."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from taskgate.domain import limits
from tests.mcp.events import LEGACY
from tests.mcp.live import Live, agent, run

_n = itertools.count(1)


def _criteria(n: int) -> list[dict[str, str]]:
    return [{"text": f"criterion {i}"} for i in range(n)]


CASES: list[tuple[str, str, dict[str, Any], str, dict[str, Any]]] = [
    # (what, MCP tool, its arguments, REST path under the project, its body); {over} marks the field
    (
        "criteria",
        "create_task",
        {"title": "t", "criteria": "{over}"},
        "tasks",
        {"title": "t", "criteria": "{over}"},
    ),
    (
        "criteria",
        "create_spec",
        {"title": "s", "criteria": "{over}"},
        "specs",
        {"title": "s", "criteria": "{over}"},
    ),
    (
        "title",
        "create_task",
        {"title": "{over}", "criteria": _criteria(1)},
        "tasks",
        {"title": "{over}", "criteria": _criteria(1)},
    ),
    ("title", "log_decision", {"title": "{over}"}, "decisions", {"title": "{over}"}),
]


def _at(template: dict[str, Any], value: Any) -> dict[str, Any]:
    return {k: value if v == "{over}" else v for k, v in template.items()}


def _value(what: str, n: int) -> Any:
    return _criteria(n) if what == "criteria" else "x" * n


@pytest.mark.parametrize(("what", "tool", "args", "path", "body"), CASES)
def test_mcp_and_rest_share_the_limit(
    live: Live, what: str, tool: str, args: dict[str, Any], path: str, body: dict[str, Any]
) -> None:
    project = live.project(f"limits{next(_n)}")
    key, _ = live.key(f"lim-arch{next(_n)}", role="architect", projects=[project])
    limit = limits.CRITERIA if what == "criteria" else limits.TITLE_CHARS
    over, at = _value(what, limit + 1), _value(what, limit)

    async def go() -> None:
        async with agent(live.mcp_url, key, LEGACY) as a:
            before = live.dump()
            refused = await a.refused(tool, project=project, **_at(args, over))
            assert refused["code"] == "E_VALIDATION", refused
            assert live.dump() == before
            await a.ok(tool, project=project, **_at(args, at))

    run(go())
    before = live.dump()
    r = live.rest("POST", f"/api/projects/{project}/{path}", _at(body, over))
    assert r.status_code == 422 and r.json()["code"] == "E_VALIDATION", r.text
    assert live.dump() == before
    r = live.rest("POST", f"/api/projects/{project}/{path}", _at(body, at))
    assert r.status_code in (200, 201), r.text
