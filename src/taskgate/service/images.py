"""Each project's verifier image in the cloud: a task definition revision per image.

A verifier config may name an `image` (the verifier image, or one built FROM it with node, a
JDK...). In the cloud every Fargate task runs a task definition, and a task definition names
its image, so an image needs a revision of its own: the stack's verifier task definition with
only the image changed (same family, roles, log group, secrets, size). It is registered when a
human saves the config (the only moment anyone may choose an image), never by the dispatcher,
and cached by image reference in the store (`IMAGES / <reference>`), so saving a config with an
image already registered, or two projects sharing one, registers nothing more. The dispatcher
and the nightly run read the cache entry of the project's image; no image means the stack's
own task definition.

The cache entry remembers which revision of the stack's task definition it copied. After a
stack update changed that one, the next save of a config with the image registers a fresh
copy; until then the dispatcher keeps starting the older copy (a registered revision stays
runnable) and says so in its log.

`TaskDefinitions` is the port (ECS in cloud/ecs.py); a local server has none, and saves an
image in the config without registering anything (a local verifier ignores it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from taskgate.domain.errors import invalid
from taskgate.domain.models import Project
from taskgate.domain.principals import Acting
from taskgate.service import records
from taskgate.service.context import Context
from taskgate.store.port import Item, Op, Put


class ImageRefused(ValueError):
    """The image cannot get a task definition (outside the stack's repository, ECS refused)."""


class TaskDefinitions(Protocol):
    @property
    def base(self) -> str:
        """The stack's own verifier task definition (ARN): what runs without an image."""
        ...

    def register(self, image: str) -> str:
        """A new revision of the base with `image`; its ARN. ImageRefused if it cannot be."""
        ...


class Registered(BaseModel):
    model_config = ConfigDict(extra="forbid")

    image: str
    task_definition: str
    base: str  # the stack's task definition revision it was copied from
    at: datetime
    by: str


class NotRegistered(RuntimeError):
    """A project names an image no save registered (its config was saved without the cloud's
    registrar, e.g. restored from a local store): nothing can start it until a human saves it."""


def cached(ctx: Context, image: str) -> tuple[Registered, int] | None:
    item = ctx.store.get(*records.image_key(image))
    return None if item is None else (Registered.model_validate(item.data), item.version)


def on_save(ctx: Context, who: Acting, image: str | None) -> tuple[list[Op], dict[str, Any]]:
    """What a config save with `image` commits along with the project (the cache entry of a
    newly registered revision), and what its history event records. Registers at most once per
    image and stack revision; ImageRefused becomes E_VALIDATION and nothing is saved."""
    registry = ctx.task_definitions
    if image is None or registry is None:
        return [], {}
    found = cached(ctx, image)
    if found is not None and found[0].base == registry.base:
        return [], {"task_definition": found[0].task_definition}
    try:
        arn = registry.register(image)
    except ImageRefused as exc:
        raise invalid(f"verifier config: image {image}: {exc}") from exc
    entry = Registered(image=image, task_definition=arn, base=registry.base, at=ctx.clock.now(), by=who.actor)
    data = entry.model_dump(mode="json")
    if found is None:
        put = Put(Item(*records.image_key(image), data))  # must not exist: a racing save conflicts
    else:
        put = Put(Item(*records.image_key(image), data, found[1] + 1), found[1])
    return [put], {"task_definition": arn, "registered": True}


def task_definition_for(ctx: Context, project: Project, base: str) -> tuple[str, bool]:
    """The task definition that verifies `project` in the cloud (its image's revision, or the
    stack's `base` when its config names no image), and whether that revision was copied from
    an older revision of the base than `base`."""
    image = project.verifier_config.image if project.verifier_config else None
    if image is None:
        return base, False
    found = cached(ctx, image)
    if found is None:
        raise NotRegistered(
            f"project {project.name} names image {image}, which has no task definition: save its "
            "verifier config again (a save registers one)"
        )
    return found[0].task_definition, found[0].base != base
