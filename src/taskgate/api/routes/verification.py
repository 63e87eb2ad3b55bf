"""The verification switch and the verifier config: human-owned, recorded in project history."""

from __future__ import annotations

from taskgate import runtime
from taskgate.api.access import Access, caller, route
from taskgate.api.errors import RefusedWithDetail
from taskgate.api.schemas import (
    ProtectIn,
    VerificationState,
    VerificationSwitch,
    VerifierConfigDraft,
    VerifierConfigIn,
    VerifierConfigOut,
)
from taskgate.domain.errors import ErrorCode, TaskgateError
from taskgate.domain.models import Project
from taskgate.service import projects
from taskgate.service.context import Context

H = Access.HUMAN
TAGS = ("verification",)


def _state(ctx: Context, project: Project) -> VerificationState:
    missing = projects.verification_missing(ctx, project)
    warnings = [
        f"verification is on but the project lacks {m}; submitted work waits until it is fixed "
        "or verification is switched off"
        for m in missing
    ]
    return VerificationState(
        on=project.verification_on, missing=missing, warnings=warnings if project.verification_on else []
    )


@route(
    "GET",
    "/api/projects/<project>/verification",
    H,
    summary="Is verification on, what is missing to switch it on, warnings",
    tags=TAGS,
)
def get_verification(project: str) -> VerificationState:
    ctx = runtime.context()
    return _state(ctx, projects.get(ctx, caller(), project))


@route(
    "PUT",
    "/api/projects/<project>/verification",
    H,
    summary="Switch verification on or off (on needs a live local verifier key and a config with a check)",
    tags=TAGS,
    body=True,
)
def put_verification(project: str, body: VerificationSwitch) -> VerificationState:
    ctx, who = runtime.context(), caller()
    try:
        updated = projects.set_verification(ctx, who, project, body.on)
    except TaskgateError as exc:
        if exc.code is not ErrorCode.VALIDATION or not body.on:
            raise
        # Refused for what is missing: say it as a list, so the board can show each item.
        missing = projects.verification_missing(ctx, ctx.project(project))
        raise RefusedWithDetail(exc, missing=missing) from exc
    return _state(ctx, updated)


@route("GET", "/api/projects/<project>/verifier-config", H, summary="The verifier config", tags=TAGS)
def get_verifier_config(project: str) -> VerifierConfigOut:
    return VerifierConfigOut.of(projects.get(runtime.context(), caller(), project).verifier_config)


@route(
    "GET",
    "/api/projects/<project>/verifier-config/draft",
    H,
    summary="Start from project commands: a draft config built from the verification commands (not saved)",
    tags=TAGS,
)
def get_verifier_config_draft(project: str) -> VerifierConfigDraft:
    config, notes = projects.verifier_config_draft(runtime.context(), caller(), project)
    return VerifierConfigDraft(config=config, notes=notes)


@route(
    "PUT",
    "/api/projects/<project>/verifier-config",
    H,
    summary="Replace the verifier config: the only commands a verifier ever runs",
    tags=TAGS,
    body=True,
)
def put_verifier_config(project: str, body: VerifierConfigIn) -> VerifierConfigOut:
    updated = projects.set_verifier_config(
        runtime.context(), caller(), project, body.model_dump(mode="json", exclude_unset=True)
    )
    return VerifierConfigOut.of(updated.verifier_config)


@route(
    "PUT",
    "/api/projects/<project>/verifier-config/protect",
    H,
    summary="Replace the verifier config's protect globs alone (null: the default; []: off)",
    tags=TAGS,
    body=True,
)
def put_protect(project: str, body: ProtectIn) -> VerifierConfigOut:
    updated = projects.set_protect(runtime.context(), caller(), project, body.protect)
    return VerifierConfigOut.of(updated.verifier_config)
