"""Projects: create, read, settings, execution defaults, verification switch, history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from taskgate.domain.errors import ErrorCode, TaskgateError, invalid
from taskgate.domain.models import (
    MAX_LEASE_MINUTES,
    PROJECT_NAME_RE,
    Credential,
    CredentialKind,
    ExecutionDefaults,
    HistoryEvent,
    Project,
    VerifierKind,
    check_max_attempts,
)
from taskgate.domain.permissions import Op, authorize
from taskgate.domain.principals import Acting
from taskgate.domain.verifier_config import VerifierConfig, draft_from_commands
from taskgate.service import images, project_history, records
from taskgate.service.context import Context, event, put_event
from taskgate.store.port import Item, Page, Put
from taskgate.store.port import Op as StoreOp


def create(ctx: Context, who: Acting, name: str, *, repo: str = "", description: str = "") -> Project:
    authorize(Op.CREATE_PROJECT, who)
    if not PROJECT_NAME_RE.match(name):
        raise invalid(
            "project name: lowercase letters, digits and '-', 1-40 chars, starting with a letter or digit"
        )
    now = ctx.clock.now()
    project = Project(name=name, repo=repo, description=description, created_by=who.actor, created_at=now)
    ops = [
        Put(records.project_item(project)),
        Put(Item(*records.counter_key(name), {"task": 0, "spec": 0, "decision": 0})),
        Put(Item(*records.directory_key(name), {"name": name})),
        put_event(event(who, "project_created", project=name, at=now, repo=repo)),
    ]
    try:
        ctx.commit(ops)
    except TaskgateError as exc:
        raise TaskgateError(ErrorCode.CONFLICT, f"project {name} already exists") from exc
    return project.model_copy(update={"version": 1})


def get(ctx: Context, who: Acting, name: str) -> Project:
    authorize(Op.READ, who, project=name)
    return ctx.project(name)


def list_all(ctx: Context, who: Acting) -> list[Project]:
    authorize(Op.READ, who)
    names = [n for n in ctx.project_names() if who.principal.may_use_project(n)]
    items = ctx.store.get_many([records.project_key(n) for n in names])
    return [records.load(Project, i) for i in items]


def _save(
    ctx: Context,
    who: Acting,
    old: Project,
    new: Project,
    action: str,
    also: Sequence[StoreOp] = (),
    /,
    **detail: Any,
) -> Project:
    ops = [
        Put(records.project_item(new), old.version),
        put_event(event(who, action, project=old.name, at=ctx.clock.now(), **detail)),
        *also,
    ]
    ctx.commit(ops)
    return new.model_copy(update={"version": old.version + 1})


def update_settings(
    ctx: Context,
    who: Acting,
    name: str,
    *,
    max_attempts: int | None = None,
    lease_minutes: int | None = None,
    description: str | None = None,
    repo: str | None = None,
) -> Project:
    authorize(Op.UPDATE_PROJECT, who, project=name)
    check_max_attempts(max_attempts)
    if lease_minutes is not None and not 1 <= lease_minutes <= MAX_LEASE_MINUTES:
        raise invalid(f"lease_minutes must be between 1 and {MAX_LEASE_MINUTES}")
    changes = {
        k: v
        for k, v in {
            "max_attempts": max_attempts,
            "lease_minutes": lease_minutes,
            "description": description,
            "repo": repo,
        }.items()
        if v is not None
    }
    old = ctx.project(name)
    return _save(ctx, who, old, old.model_copy(update=changes), "settings_changed", **changes)


def set_execution_defaults(
    ctx: Context,
    who: Acting,
    name: str,
    *,
    verification_commands: list[str] | None = None,
    conventions: list[str] | None = None,
) -> Project:
    authorize(Op.SET_EXECUTION_DEFAULTS, who, project=name)
    old = ctx.project(name)
    current = old.execution_defaults
    defaults = ExecutionDefaults(
        verification_commands=[c.strip() for c in verification_commands if c.strip()]
        if verification_commands is not None
        else current.verification_commands,
        conventions=[c.strip() for c in conventions if c.strip()]
        if conventions is not None
        else current.conventions,
    )
    return _save(
        ctx,
        who,
        old,
        old.model_copy(update={"execution_defaults": defaults}),
        "execution_defaults_changed",
        verification_commands=defaults.verification_commands,
        conventions=defaults.conventions,
    )


def live_local_verifier_keys(ctx: Context, project: str) -> list[Credential]:
    items = ctx.all_pages(lambda c: ctx.store.query("KEYS", limit=200, cursor=c))
    keys = [records.load(Credential, i) for i in items]
    return [
        k
        for k in keys
        if k.kind is CredentialKind.VERIFIER
        and k.verifier_kind is VerifierKind.LOCAL
        and k.live
        and k.covers(project)
    ]


def verification_missing(ctx: Context, project: Project) -> list[str]:
    """What the project lacks before verification can be switched on (the board shows this)."""
    missing = []
    if not live_local_verifier_keys(ctx, project.name):
        missing.append("a live local verifier key that covers this project")
    if project.verifier_config is None or not project.verifier_config.checks:
        missing.append("a saved verifier config with at least one check")
    return missing


def set_verification(ctx: Context, who: Acting, name: str, on: bool) -> Project:
    authorize(Op.SET_VERIFICATION, who, project=name)
    old = ctx.project(name)
    if on:
        missing = verification_missing(ctx, old)
        if missing:
            raise TaskgateError(
                ErrorCode.VALIDATION, "cannot switch verification on: missing " + "; ".join(missing)
            )
    if old.verification_on == on:
        return old
    return _save(
        ctx,
        who,
        old,
        old.model_copy(update={"verification_on": on}),
        "verification_on" if on else "verification_off",
    )


def set_verifier_config(
    ctx: Context, who: Acting, name: str, config: dict[str, Any], *, expected: Project | None = None
) -> Project:
    """`expected`: the project as the caller read it, to change only that version of it."""
    authorize(Op.SET_VERIFIER_CONFIG, who, project=name)
    try:
        parsed = VerifierConfig.model_validate(config)
    except ValidationError as exc:
        raise invalid(f"verifier config: {exc.errors(include_url=False)}") from exc
    old = expected if expected is not None else ctx.project(name)
    # In the cloud, an image gets its task definition now, in the same commit as the config.
    also, registered = images.on_save(ctx, who, parsed.image)
    return _save(
        ctx,
        who,
        old,
        old.model_copy(update={"verifier_config": parsed}),
        "verifier_config_changed",
        also,
        config=parsed.model_dump(mode="json"),
        # The config it replaced, so the history can show the change as a diff of old and new
        # ({} when there was none: an event drops None values, and a missing key means an event
        # written before this was recorded).
        previous=old.verifier_config.model_dump(mode="json") if old.verifier_config else {},
        **registered,
    )


def set_protect(ctx: Context, who: Acting, name: str, protect: list[str] | None) -> Project:
    """Replace only the verifier config's `protect` (None: the default harness; []: off) on the
    config as stored now: the commit is guarded by the project's version, so a config saved in
    between is never overwritten with an older copy of itself."""
    authorize(Op.SET_VERIFIER_CONFIG, who, project=name)
    old = ctx.project(name)
    if old.verifier_config is None:
        raise TaskgateError(
            ErrorCode.WRONG_STATE, f"{name} has no verifier config yet: save one with its checks first"
        )
    return set_verifier_config(
        ctx, who, name, {**old.verifier_config.model_dump(mode="json"), "protect": protect}, expected=old
    )


def verifier_config_draft(ctx: Context, who: Acting, name: str) -> tuple[VerifierConfig, list[str]]:
    """A draft verifier config from the project's verification commands (a starting point
    from the hints agents see): returned for a human to review and save; nothing is written."""
    authorize(Op.SET_VERIFIER_CONFIG, who, project=name)
    return draft_from_commands(ctx.project(name).execution_defaults.verification_commands)


def history(
    ctx: Context, who: Acting, name: str, *, limit: int = 50, cursor: str | None = None
) -> tuple[list[HistoryEvent], str | None]:
    """A project's history, newest first, with the changes to keys that cover every project
    (project_history.py); project "*" alone is the history of those keys."""
    everyone = name == project_history.ALL_PROJECTS
    authorize(Op.READ, who, project=None if everyone else name)
    if everyone:
        page: Page = ctx.store.query(
            project_history.partition(name), limit=limit, cursor=cursor, descending=True
        )
        items, next_cursor = page.items, page.cursor
    else:
        ctx.project(name)
        items, next_cursor = project_history.page(ctx, name, limit=limit, cursor=cursor)
    return [records.load(HistoryEvent, i) for i in items], next_cursor
