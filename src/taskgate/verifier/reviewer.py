"""The reviewer's side of a run: a fixed prompt on stdin (the spec, the review criteria, the diff
against the base branch), and its answer validated against the reviewer's answer shape:
`{"results":[{"criterion","result","rationale"}]}`. Anything else is an error of the run."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskgate.domain.run_report import CriterionResult, Evidence

PROMPT = """\
You are the reviewer of taskgate, a verification gate for work done by AI coding agents.
Judge each acceptance criterion under CRITERIA against the DIFF of the submission, in the
context of the SPEC. Judge only what the diff shows; do not assume work that is not in it.
Answer with JSON only, no other text, in exactly this shape:
{"results":[{"criterion":"<criterion id>","result":"pass","rationale":"<why, citing the diff>"}]}
Give one entry for every criterion listed; "result" is "pass" or "fail". A pass without a
rationale counts as missing evidence.
"""
_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n\s*```", re.DOTALL)


class ReviewerError(Exception):
    """The reviewer failed or answered outside the agreed shape."""


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")
    criterion: str = Field(min_length=1, max_length=100)
    result: Literal["pass", "fail"]
    rationale: str | None = Field(default=None, max_length=20_000)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: list[_Item] = Field(max_length=500)


def prompt(
    spec: dict[str, Any] | None, criteria: Sequence[dict[str, Any]], diff: str, base_branch: str
) -> str:
    lines = [PROMPT, "SPEC"]
    if spec:
        lines += [f"{spec['id']}: {spec['title']}", spec.get("body") or "(no body)"]
    else:
        lines.append("(the task has no spec; its criteria are its own)")
    lines += ["", "CRITERIA"]
    lines += [f"- {c['id']}: {c['text']}" for c in criteria]
    lines += ["", f"DIFF (against {base_branch})", diff or "(empty diff)"]
    return "\n".join(lines) + "\n"


def _json_of(output: str) -> Any:
    text = output.strip()
    if not text:
        raise ReviewerError("the reviewer printed nothing")
    candidates = [text] if text.startswith("{") else _FENCED.findall(text)
    if len(candidates) != 1:
        raise ReviewerError("the reviewer's answer is not one JSON object")
    try:
        return json.loads(candidates[0])
    except ValueError as exc:
        raise ReviewerError(f"the reviewer's answer is not valid JSON: {exc}") from exc


def parse_answer(output: str, review_ids: Sequence[str]) -> dict[str, CriterionResult]:
    """The reviewer's results, one per review criterion; ReviewerError when it answered outside
    the shape, named criteria it was not asked about, or skipped one."""
    try:
        answer = _Answer.model_validate(_json_of(output))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ReviewerError(f"the reviewer's answer has the wrong shape at {where}: {first['msg']}") from exc
    asked = set(review_ids)
    out: dict[str, CriterionResult] = {}
    for item in answer.results:
        if item.criterion not in asked:
            raise ReviewerError(f"the reviewer answered for {item.criterion}, which it was not asked about")
        if item.criterion in out:
            raise ReviewerError(f"the reviewer answered twice for {item.criterion}")
        out[item.criterion] = CriterionResult(
            result=Evidence.PASS if item.result == "pass" else Evidence.FAIL,
            rationale=item.rationale.strip() if item.rationale and item.rationale.strip() else None,
        )
    skipped = [cid for cid in review_ids if cid not in out]
    if skipped:
        raise ReviewerError(f"the reviewer gave no answer for {', '.join(skipped)}")
    return out
