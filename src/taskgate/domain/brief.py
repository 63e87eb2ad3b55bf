"""The brief: the whole contract for one run, under about 2,000 tokens (chars / 4) whatever the input.

Built from loaded records only, in one linear pass: prose is clipped to fixed lengths first,
then the brief is measured once, and whole items are dropped, least relevant first, each
item's size known from one measurement, until it fits. Identifiers (ids, test refs, commands,
check names) are never cut: an item either appears whole or is left out, and `omitted` says how
many of each kind were left out and where to read them (get_task, get_spec).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from taskgate.domain import merging
from taskgate.domain.baseline import protect_globs
from taskgate.domain.models import Criterion, CriterionKind, Decision, Finding, Note, Project, Spec, Task
from taskgate.domain.text import tail_lines

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
    "skipped does not pass. A ref matching more than one test or group is a spec error: it never "
    "passes, and a run whose only non-passing criteria are such refs sends the task to a human to "
    "fix the spec (no attempt is used); write tests so each ref names exactly one. A command "
    "criterion's verify_ref is a shell command run in a clean checkout; exit 0 passes. Review "
    "criteria are judged by a reviewer."
)

NEW_TESTS_RULE = (
    "A test you write for a test criterion whose test does not exist yet must fail on the code "
    "before your change: the verifier runs it on the baseline's code too, and one that passes there "
    "holds your submission for a human. A criterion marked guard expects its test to pass there."
)

# Prose is clipped to these lengths before anything is measured (marked with a trailing '…').
TITLE_CHARS = 300
TEXT_CHARS = 1500  # task description, spec body, a criterion's text
SHORT_TEXT_CHARS = 300  # what long texts shrink to when the brief is still too long
ITEM_TEXT_CHARS = 600  # a note, a decision's body, a finding, a lesson learned, a test's message
CHECK_OUTPUT_CHARS = 1500  # the end of a failing check's output
# What a check's output and a test's message shrink to when the brief is still too long.
SHORT_OUTPUT_CHARS = 400
SHORT_MESSAGE_CHARS = 200
CRITERION_SHORT_CHARS = 160  # a criterion's text, before any whole criterion is left out
# Room kept for the `omitted` / `clipped` / `see` lines the cutting adds.
RESERVE_CHARS = 700


def _size(node: Any) -> int:
    """The length of `node` as json.dumps writes it, compact and ASCII-escaped: the budget's
    measure. pydantic_core writes the same text, faster, for what a brief holds (dicts,
    lists, text, integers, booleans, None, and floats only as check timeouts, written alike)
    when the text is all ASCII but for DEL, which it leaves as is and json.dumps escapes: other
    text goes to json.dumps. (Values a brief never holds may measure a little differently: a
    datetime in ISO form, 1e-07 as 1e-7.)"""
    try:
        text = to_json(node)
    except PydanticSerializationError:
        text = b"\x80"  # a value pydantic_core cannot write: json.dumps measures it
    if text.isascii() and b"\x7f" not in text:
        return len(text)
    return len(json.dumps(node, separators=(",", ":"), default=str))


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
    notes_total: int | None = None,
    budget_tokens: int = TOKEN_BUDGET,
) -> dict[str, Any]:
    defaults = project.execution_defaults
    cfg = project.verifier_config
    clipped: list[str] = []

    def prose(text: str, limit: int, label: str) -> str:
        if len(text) > limit:
            clipped.append(label)
        return _clip(text, limit)

    def tail(text: str, limit: int, label: str) -> str:
        if len(text) > limit:
            clipped.append(label)
        return tail_lines(text, limit)

    linked_ids = {d.id for d in linked_decisions}
    brief: dict[str, Any] = {
        "task": {
            "id": task.id,
            "title": prose(task.title, TITLE_CHARS, "task title"),
            "description": prose(task.description, TEXT_CHARS, "task description"),
            "status": task.status.value,
            "priority": task.priority,
            "risk": task.risk.value,
            "attempts_used": task.attempts_used,
            "max_attempts": task.effective_max_attempts(project),
        },
        "spec": (
            {
                "id": spec.id,
                "title": prose(spec.title, TITLE_CHARS, "spec title"),
                "body": prose(spec.body, TEXT_CHARS, "spec body"),
                "risk": spec.risk.value,
                "status": spec.status.value,
            }
            if spec
            else None
        ),
        "criteria": [
            {
                **c.model_dump(mode="json", exclude_none=True),
                "text": prose(c.text, TEXT_CHARS, "criterion text"),
            }
            for c in criteria
        ],
        # Criteria changed after work on the task began: earlier attempts, findings and notes
        # may speak of criteria no longer held, or not know of new ones.
        "criteria_changes": [
            {"after_attempt": ch.after_attempt, "by": ch.by, "removed": ch.removed, "added": ch.added}
            for ch in task.criteria_changes
        ],
        "verification_commands": list(
            task.verification_commands
            if task.verification_commands is not None
            else defaults.verification_commands
        ),
        "verifier_checks": {
            "verification_on": project.verification_on,
            "checks": {n: c.model_dump(mode="json", exclude_none=True) for n, c in cfg.checks.items()}
            if cfg
            else {},
            # What the executor may not change without a human: a change there holds its run.
            **(
                {"protected_paths": protect_globs(cfg.protect, [c.command for c in cfg.checks.values()])}
                if cfg
                else {}
            ),
            **(
                {"new_tests": NEW_TESTS_RULE}
                if cfg and any(c.kind is CriterionKind.TEST for c in criteria)
                else {}
            ),
            **(
                {"hidden_tests": hidden_tests_note(cfg.hidden_tests.reveal)}
                if cfg and cfg.hidden_tests
                else {}
            ),
            # With no verifier config, nothing is verified: no merge rule to tell.
            **(
                merging.brief_lines(cfg.merge, cfg.base_branch_choice(), task, project.base_tip)
                if cfg
                else {}
            ),
        },
        "test_ref_rule": TEST_REF_RULE,
        "conventions": [prose(c, ITEM_TEXT_CHARS, "a convention") for c in defaults.conventions],
        "dependencies": [
            {"id": d.id, "title": prose(d.title, TITLE_CHARS, "a dependency title"), "status": d.status.value}
            for d in dependencies
        ],
        "previous_attempts": [
            {
                "attempt": a.number,
                "ending": a.ending.value if a.ending else "in progress",
                **({"failure_kind": a.failure_kind.value} if a.failure_kind else {}),
                **(
                    {"findings": [prose(f, ITEM_TEXT_CHARS, "a finding") for f in a.findings]}
                    if a.findings
                    else {}
                ),
                **({"learned": prose(a.learned, ITEM_TEXT_CHARS, "a lesson")} if a.learned else {}),
            }
            for a in task.attempts
            if a.ended_at is not None
        ],
        "findings": [_finding(f, prose, tail) for f in task.findings],
        "decisions": [
            {
                "id": d.id,
                "title": prose(d.title, TITLE_CHARS, "a decision title"),
                "body": prose(d.body, ITEM_TEXT_CHARS, "a decision"),
                "why": "spec" if d.id in linked_ids else "search",
            }
            for d in [*linked_decisions, *[r for r in ranked_decisions if r.id not in linked_ids]]
        ],
        "notes": [{"author": n.author, "body": prose(n.body, ITEM_TEXT_CHARS, "a note")} for n in notes],
    }
    omitted: dict[str, int] = {}
    older_notes = (notes_total or len(notes)) - len(notes)
    if older_notes > 0:
        omitted["notes"] = older_notes
    budget = budget_tokens * CHARS_PER_TOKEN
    reserve = RESERVE_CHARS
    while True:  # twice at most: the summary's own size is known only once it is written
        fit(brief, budget - reserve, omitted, clipped)
        brief["omitted"] = omitted
        brief["clipped"] = sorted(set(clipped))
        if omitted:
            where = f"get_spec('{task.project}', '{spec.id}') and " if spec else ""
            brief["see"] = f"Left out to stay short; {where}get_task('{task.id}') have everything."
        over = _size(brief) - budget
        if over <= 0:
            return brief
        for key in ("omitted", "clipped", "see"):
            brief.pop(key, None)
        reserve += over


Clip = Callable[[str, int, str], str]


def hidden_tests_note(reveal: str) -> str:
    """What the brief says of hidden tests: that they exist and what a failure reveals; never
    where they come from or what they hold."""
    said = "its name and its failure message" if reveal == "messages" else "its name only"
    return (
        "Hidden tests you cannot see also run in the checks: write the behaviour the spec asks for, "
        f"not code fitted to the visible tests. A failing hidden test fails the run; its finding gives {said}, "
        "and the checks' output is withheld."
    )


def _finding(f: Finding, prose: Clip, tail: Clip) -> dict[str, Any]:
    """A finding for the next executor: what failed, failing criteria first, each failing test by
    its full name with its own message, then each failing check with the end of its output."""
    out: dict[str, Any] = {
        "attempt": f.attempt,
        "source": f.source.value,
        "summary": prose(f.summary, ITEM_TEXT_CHARS, "a finding"),
    }
    if f.criteria:
        out["criteria"] = [
            {
                "id": c.id,
                "result": "spec error" if c.spec_error else c.result,
                **({"detail": prose(c.detail, ITEM_TEXT_CHARS, "a finding")} if c.detail else {}),
                **(
                    {
                        "tests": [
                            {"name": t.name, "message": prose(t.message, ITEM_TEXT_CHARS, "a test message")}
                            for t in c.tests
                        ]
                    }
                    if c.tests
                    else {}
                ),
            }
            for c in f.criteria
        ]
    if f.hidden_tests:
        out["hidden_tests"] = [
            {
                "name": t.name,
                **({"message": prose(t.message, ITEM_TEXT_CHARS, "a test message")} if t.message else {}),
            }
            for t in f.hidden_tests
        ]
    if f.checks:
        out["checks"] = [
            {
                "check": c.name,
                "exit_code": c.exit_code,
                "output_end": tail(c.output_end, CHECK_OUTPUT_CHARS, "a check's output"),
            }
            for c in f.checks
        ]
    if not f.criteria and not f.checks and f.details:
        # A human's findings (or a verifier's from before findings were structured): as written.
        out["details"] = [prose(d, ITEM_TEXT_CHARS, "a finding") for d in f.details]
    if f.self_report_mismatch:
        out["self_report_mismatch"] = f.self_report_mismatch
    return out


# -- fitting: one measurement, then whole items out, least relevant first ----------------------


def fit(brief: dict[str, Any], budget_chars: int, omitted: dict[str, int], clipped: list[str]) -> None:
    """Drop whole items, least relevant first, until the brief fits `budget_chars`. Linear in the
    size of the brief: every part is measured once; each drop subtracts what it saved."""
    size = _size(brief)
    if size <= budget_chars:
        return  # the common case: one measurement, nothing to cut

    def cut_list(
        key: str,
        label: str,
        *,
        from_end: bool,
        keep: int = 0,
        select: Callable[[Any], bool] = lambda _: True,
        holder: dict[str, Any] | None = None,
    ) -> None:
        nonlocal size
        container = holder if holder is not None else brief
        items: list[Any] = container[key]
        chosen = [i for i, it in enumerate(items) if select(it)]
        if size <= budget_chars or len(chosen) <= keep:
            return
        sizes = {i: _size(items[i]) for i in chosen}
        order = chosen[::-1] if from_end else chosen
        count = len(items)
        dropped: set[int] = set()
        for i in order[: len(order) - keep]:
            if size <= budget_chars:
                break
            size -= sizes[i] + (1 if count > 1 else 0)
            count -= 1
            dropped.add(i)
        if dropped:
            container[key] = [it for i, it in enumerate(items) if i not in dropped]
            omitted[label] = omitted.get(label, 0) + len(dropped)

    def cut_dict(holder: dict[str, Any], key: str, label: str) -> None:
        nonlocal size
        entries: dict[str, Any] = holder[key]
        if size <= budget_chars or not entries:
            return
        names = list(entries)
        count = len(names)
        dropped = []
        for name in reversed(names):
            if size <= budget_chars:
                break
            size -= _size(name) + 1 + _size(entries[name]) + (1 if count > 1 else 0)
            count -= 1
            dropped.append(name)
        for name in dropped:
            del entries[name]
        if dropped:
            omitted[label] = omitted.get(label, 0) + len(dropped)

    def shrink(path: tuple[str, str], label: str) -> None:
        nonlocal size
        holder = brief.get(path[0])
        if size <= budget_chars or not holder or len(holder[path[1]]) <= SHORT_TEXT_CHARS:
            return
        before = _size(holder[path[1]])
        holder[path[1]] = _clip(holder[path[1]], SHORT_TEXT_CHARS)
        size -= before - _size(holder[path[1]])
        clipped.append(label)

    def shrink_each(key: str, field: str, limit: int, label: str) -> None:
        nonlocal size
        for item in brief[key]:
            if size <= budget_chars:
                return
            if len(item.get(field, "")) > limit:
                before = _size(item[field])
                item[field] = _clip(item[field], limit)
                size -= before - _size(item[field])
                clipped.append(label)

    def shrink_findings() -> None:
        nonlocal size
        found = brief["findings"]
        outputs = [c for f in found for c in f.get("checks", [])]
        messages = [t for f in found for c in f.get("criteria", []) for t in c.get("tests", [])]
        for items, key, limit, label, cut in (
            (outputs, "output_end", SHORT_OUTPUT_CHARS, "a check's output", tail_lines),
            (messages, "message", SHORT_MESSAGE_CHARS, "a test message", _clip),
        ):
            for item in items:
                if size <= budget_chars:
                    return
                if len(item[key]) > limit:
                    before = _size(item[key])
                    item[key] = cut(item[key], limit)
                    size -= before - _size(item[key])
                    clipped.append(label)

    # Least relevant first.
    cut_list("decisions", "search-ranked decisions", from_end=True, select=lambda d: d["why"] == "search")
    cut_list("notes", "notes", from_end=False)
    cut_list("previous_attempts", "previous attempts", from_end=False, keep=1)
    cut_list("findings", "findings", from_end=False, keep=1)
    cut_list("criteria_changes", "criteria changes", from_end=False, keep=1)  # the newest stays
    cut_list("conventions", "conventions", from_end=True)
    cut_list("decisions", "spec decisions", from_end=True)
    shrink(("spec", "body"), "spec body")
    shrink(("task", "description"), "task description")
    # The last failed run's findings are what the next executor reads: its checks' output shrinks
    # before its failing tests' messages, and both before any finding is left out.
    shrink_findings()
    cut_list("previous_attempts", "previous attempts", from_end=False)
    cut_list("findings", "findings", from_end=False)
    cut_list("dependencies", "dependencies", from_end=True)
    cut_list("criteria_changes", "criteria changes", from_end=False)  # `omitted` still says so
    shrink_each("criteria", "text", CRITERION_SHORT_CHARS, "criterion text")
    cut_list("verification_commands", "verification commands", from_end=True)
    cut_dict(brief["verifier_checks"], "checks", "verifier checks")
    cut_list("criteria", "criteria", from_end=True)
