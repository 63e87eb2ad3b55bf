"""What the sweeper function is given in tests: its schedule's event, and a verification run
nobody will finish."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from taskgate.domain.models import CredentialKind, CriterionInput
from taskgate.domain.principals import Acting, acting, human
from taskgate.service import claims, keys, projects, tasks
from taskgate.service.context import Context

HUMAN = acting(human("alice"))


def scheduler_event(when: datetime) -> dict[str, Any]:
    """What the stack's schedule sends (template.yaml: the target's Input, with EventBridge
    Scheduler's context attributes filled in)."""
    return {
        "execution_id": "c2b7d1f0-5e5c-4b3f-9a51-0d5c0c1e0f00",
        "scheduled_time": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def abandoned_run(ctx: Context, project: str, agent: Acting, sha: str) -> tuple[str, str]:
    """A new project with verification on, whose one task was submitted and taken by a local
    verifier at `ctx`'s time, and then the verifier's container died: (task id, run id)."""
    from taskgate.domain.models import VerifierKind
    from taskgate.service import verification

    projects.create(ctx, HUMAN, project, repo=f"https://git.example.com/{project}.git")
    secret = keys.create(
        ctx, HUMAN, kind=CredentialKind.VERIFIER, name="ci", verifier_kind=VerifierKind.LOCAL
    ).secret
    verifier = acting(keys.authenticate(ctx, secret))
    projects.set_verifier_config(ctx, HUMAN, project, {"checks": {"unit": {"command": "pytest"}}})
    projects.set_verification(ctx, HUMAN, project, True)
    task = tasks.create(ctx, HUMAN, project, title="t", criteria=[CriterionInput(text="ok")]).task
    token = claims.claim(ctx, agent, project, task_id=task.id).token
    claims.submit(ctx, agent, task.id, token, commit_sha=sha, evidence="e")
    return task.id, verification.start(ctx, verifier, task_id=task.id).run.id
