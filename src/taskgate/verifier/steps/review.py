"""Review criteria: the submission's diff against its base, taken while git is still the
verifier's, and later the reviewer command's judgement of it (verifier/reviewer.py)."""

from __future__ import annotations

from taskgate.domain.models import CriterionKind
from taskgate.domain.run_report import CriterionResult
from taskgate.domain.tooling import ADVICE, no_tool
from taskgate.domain.verifier_config import ReviewerSpec
from taskgate.verifier import reviewer
from taskgate.verifier.checking import one_line, seconds
from taskgate.verifier.checkout import CheckoutError
from taskgate.verifier.state import RunError, RunState


def diff(state: RunState) -> None:
    if not state.work.of_kind(CriterionKind.REVIEW):
        return
    co, base = state.checkout, state.baseline
    spec = state.config.reviewer or ReviewerSpec()
    with state.timed("review"):
        if base.tip is None:
            raise RunError(f"reviewer: cannot diff against {spec.base_branch}: {base.why}")
        try:
            state.diff = co.diff_from(base)
        except CheckoutError as exc:
            raise RunError(f"reviewer: cannot diff against {base.branch}: {exc}") from exc


def judge(state: RunState) -> None:
    if state.diff is None:
        return
    with state.timed("review"):
        state.gathered.review = _review(state, state.diff)


def _review(state: RunState, text_diff: str) -> dict[str, CriterionResult]:
    v, cfg, dirs = state.verifier, state.config, state.dirs
    assert dirs is not None
    reviews = state.work.of_kind(CriterionKind.REVIEW)
    spec = cfg.reviewer or ReviewerSpec()
    text = reviewer.prompt(
        state.work.spec, [c.model_dump(mode="json") for c in reviews], text_diff, spec.base_branch
    )
    state.say(f"reviewer: {spec.command} on {len(reviews)} review criteria")
    done = v.run(spec.command, dirs, cfg.check_timeout_minutes, stdin=text.encode())
    if done.timed_out:
        raise RunError(f"the reviewer took longer than {seconds(cfg.check_timeout_minutes)}")
    tool = v.missing(spec.command, done)
    if tool is not None and done.exit_code is not None:
        raise RunError(no_tool(tool, "the reviewer", spec.command, done.exit_code) + ADVICE)
    if done.exit_code != 0:
        said = (done.errors.strip() or done.output.strip())[-500:]
        raise RunError(f"the reviewer exited {done.exit_code}: {said}")
    try:
        answer = reviewer.parse_answer(done.output, [c.id for c in reviews])
    except reviewer.ReviewerError as exc:
        raise RunError(str(exc)) from exc
    for cid, r in answer.items():
        state.say(f"{cid} {r.result.value} (reviewer): {one_line(r.rationale or 'no rationale')}")
    return answer
