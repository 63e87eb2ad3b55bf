"""The brief: the whole contract for one run, under about 2,000 tokens (chars / 4).

Built from loaded records only. When it is too long, the least relevant parts are cut
first, in the order of CUT_ORDER, and the brief says what was cut.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from taskgate.domain.models import Criterion, Decision, Note, Project, Spec, Task

TOKEN_BUDGET = 2000
CHARS_PER_TOKEN = 4

TEST_REF_RULE = (
    "A test criterion's verify_ref names one test or one test group in the verifier's report, "
    "exactly (case-sensitive). It is matched against classname.name first, then read as a path "
    "through nested test suites, 'group > nested group > test', outer groups optional (a test named "
    "'describe > test', as vitest writes it, is that path); only if neither matches, it is read as "
    "a dotted path through classnames, outer parts optional ('TestSlug', 'test_x.TestSlug.test_a'), "
    "naming a test or the tests under a class, module or package. A group "
    "passes when at least one of its tests passed and none failed; a group whose tests were all "
    "skipped does not pass. A ref matching more than one test or group is a spec error and never "
    "passes. A command criterion's verify_ref is a shell command run in a clean checkout; exit 0 "
    "passes. Review criteria are judged by a reviewer."
)


def _size(brief: dict[str, Any]) -> int:
    return len(json.dumps(brief, separators=(",", ":"), default=str))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def build(
    *,
    task: Task,
    project: Project,
    spec: Spec | None,
    criteria: list[Criterion],
    linked_decisions: list[Decision],
    ranked_decisions: list[Decision],
    dependencies: list[Task],
    notes: list[Note],
    budget_tokens: int = TOKEN_BUDGET,
) -> dict[str, Any]:
    defaults = project.execution_defaults
    cfg = project.verifier_config
    brief: dict[str, Any] = {
        "task": {
            "id": task.id,
            "title": task.title,
            "description": task.description,
            "status": task.status.value,
            "priority": task.priority,
            "risk": task.risk.value,
            "attempts_used": task.attempts_used,
            "max_attempts": task.effective_max_attempts(project),
        },
        "spec": (
            {
                "id": spec.id,
                "title": spec.title,
                "body": spec.body,
                "risk": spec.risk.value,
                "status": spec.status.value,
            }
            if spec
            else None
        ),
        "criteria": [c.model_dump(mode="json", exclude_none=True) for c in criteria],
        "verification_commands": (
            task.verification_commands
            if task.verification_commands is not None
            else defaults.verification_commands
        ),
        "verifier_checks": {
            "verification_on": project.verification_on,
            "checks": {n: c.model_dump(mode="json", exclude_none=True) for n, c in cfg.checks.items()}
            if cfg
            else {},
        },
        "test_ref_rule": TEST_REF_RULE,
        "conventions": list(defaults.conventions),
        "dependencies": [{"id": d.id, "title": d.title, "status": d.status.value} for d in dependencies],
        "previous_attempts": [
            {
                "attempt": a.number,
                "ending": a.ending.value if a.ending else "in progress",
                **({"failure_kind": a.failure_kind.value} if a.failure_kind else {}),
                **({"findings": a.findings} if a.findings else {}),
                **({"learned": a.learned} if a.learned else {}),
            }
            for a in task.attempts
            if a.ended_at is not None
        ],
        "findings": [
            {
                "attempt": f.attempt,
                "source": f.source.value,
                "summary": f.summary,
                **({"details": f.details} if f.details else {}),
                **({"self_report_mismatch": f.self_report_mismatch} if f.self_report_mismatch else {}),
            }
            for f in task.findings
        ],
        "decisions": [
            {
                "id": d.id,
                "title": d.title,
                "body": d.body,
                "why": "spec" if d in linked_decisions else "search",
            }
            for d in [*linked_decisions, *[r for r in ranked_decisions if r not in linked_decisions]]
        ],
        "notes": [{"author": n.author, "body": n.body} for n in notes],
        "truncated": [],
    }
    return fit(brief, budget_tokens * CHARS_PER_TOKEN)


def fit(brief: dict[str, Any], budget_chars: int) -> dict[str, Any]:
    """Cut the least relevant parts first until the brief fits the budget."""
    cut: list[str] = brief["truncated"]
    if _size(brief) <= budget_chars:
        return brief  # the common case: one measurement, nothing to cut

    def pop_last(key: str, label: str, keep: int = 0) -> bool:
        items = brief[key]
        if len(items) > keep:
            items.pop()
            cut.append(label)
            return True
        return False

    def clip(path: tuple[str, ...], limit: int, label: str) -> bool:
        holder: Any = brief
        for p in path[:-1]:
            holder = holder.get(p) if holder else None
        if not holder or len(holder.get(path[-1]) or "") <= limit:
            return False
        holder[path[-1]] = _clip(holder[path[-1]], limit)
        cut.append(label)
        return True

    # Least relevant first: search-ranked decisions, notes, old attempts, long texts, then the rest.
    steps: list[Callable[[], bool]] = [
        lambda: _drop_ranked_decision(brief, cut),
        lambda: pop_first(brief, "notes", "oldest note", cut),
        lambda: pop_first(brief, "previous_attempts", "oldest attempt", cut, keep=1),
        lambda: pop_first(brief, "findings", "oldest finding", cut, keep=1),
        lambda: clip(("spec", "body"), 1500, "spec body"),
        lambda: clip(("task", "description"), 1500, "task description"),
        lambda: pop_last("conventions", "a convention"),
        lambda: pop_last("decisions", "a spec decision"),
        lambda: clip(("spec", "body"), 300, "spec body"),
        lambda: clip(("task", "description"), 300, "task description"),
        lambda: pop_first(brief, "previous_attempts", "oldest attempt", cut),
        lambda: pop_first(brief, "findings", "oldest finding", cut),
        lambda: pop_last("dependencies", "a dependency"),
        lambda: pop_last("verification_commands", "a verification command"),
    ]
    for step in steps:
        while _size(brief) > budget_chars and step():
            pass
    # Last resort, for briefs made large by what is never dropped (criteria, commands, checks):
    # shorten the longest texts until it fits.
    limit = 1000
    while _size(brief) > budget_chars and limit >= 40:
        if _clip_strings(brief, limit):
            cut.append("long texts")
        limit //= 2
    brief["truncated"] = sorted(set(cut))
    return brief


def _clip_strings(node: Any, limit: int) -> bool:
    """Clip every string longer than `limit` inside lists and dicts (keys and ids are short)."""
    changed = False
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in list(items):
        if isinstance(value, str) and len(value) > limit:
            node[key] = _clip(value, limit)
            changed = True
        elif isinstance(value, dict | list):
            changed = _clip_strings(value, limit) or changed
    return changed


def _drop_ranked_decision(brief: dict[str, Any], cut: list[str]) -> bool:
    for i in range(len(brief["decisions"]) - 1, -1, -1):
        if brief["decisions"][i]["why"] == "search":
            del brief["decisions"][i]
            cut.append("a search-ranked decision")
            return True
    return False


def pop_first(brief: dict[str, Any], key: str, label: str, cut: list[str], keep: int = 0) -> bool:
    items = brief[key]
    if len(items) > keep:
        items.pop(0)
        cut.append(label)
        return True
    return False
