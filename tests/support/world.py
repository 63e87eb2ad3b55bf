"""A small world to drive the services with: a store, a manual clock, a human, agents."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from taskgate.domain.clock import ManualClock
from taskgate.domain.models import (
    AgentRole,
    CredentialKind,
    CriterionInput,
    CriterionKind,
    Risk,
    Spec,
    Task,
    VerifierKind,
)
from taskgate.domain.principals import Acting, acting, human
from taskgate.service import keys, projects, specs, tasks
from taskgate.service.claims import Claimed, claim, submit
from taskgate.service.context import Context
from taskgate.store import body
from taskgate.store.dynamodb import DynamoDBStore
from taskgate.store.port import Store
from taskgate.store.sqlite import SQLiteStore
from tests.support.dynamo import moto_table_items

SHA = "0123456789abcdef0123456789abcdef01234567"


def dump(store: Store) -> list[tuple[str, str, int, str]]:
    """Every item in the store, sorted: to prove a refused call wrote nothing."""
    if isinstance(store, SQLiteStore):
        db = sqlite3.connect(store.path)
        try:
            rows = db.execute("SELECT pk, sk, version, data FROM items ORDER BY pk, sk").fetchall()
        finally:
            db.close()
        return [(r[0], r[1], r[2], r[3]) for r in rows]
    if not isinstance(store, DynamoDBStore):
        raise TypeError(f"dump reads SQLite and DynamoDB (moto) stores, not {type(store).__name__}")
    out = [
        (it["PK"]["S"], it["SK"]["S"], int(it["V"]["N"]), json.dumps(body.decode(it)))
        for it in moto_table_items(store)
    ]
    return sorted(out)


@dataclass
class World:
    store: Store
    clock: ManualClock = field(default_factory=ManualClock)
    ctx: Context = field(init=False)
    human: Acting = field(init=False)

    def __post_init__(self) -> None:
        self.ctx = Context(self.store, self.clock)
        self.human = acting(human("alice"))

    def agent(
        self,
        name: str,
        *,
        role: AgentRole = AgentRole.EXECUTOR,
        delegations: list[str] | None = None,
        projects_: list[str] | None = None,
        on_behalf_of: str | None = None,
    ) -> Acting:
        minted = keys.create(
            self.ctx,
            self.human,
            kind=CredentialKind.AGENT,
            name=name,
            role=role,
            delegations=delegations,
            projects_=projects_,
        )
        return acting(keys.authenticate(self.ctx, minted.secret), on_behalf_of=on_behalf_of)

    def verifier(self, kind: VerifierKind = VerifierKind.LOCAL, name: str = "ci") -> Acting:
        minted = keys.create(
            self.ctx, self.human, kind=CredentialKind.VERIFIER, name=name, verifier_kind=kind
        )
        return acting(keys.authenticate(self.ctx, minted.secret))

    def project(self, name: str = "demo", **settings: Any) -> str:
        projects.create(self.ctx, self.human, name, repo="/tmp/repo")
        if settings:
            projects.update_settings(self.ctx, self.human, name, **settings)
        return name

    def spec(self, project: str = "demo", *, risk: Risk = Risk.LOW, approve: bool = True, n: int = 2) -> Spec:
        s = specs.create(
            self.ctx,
            self.human,
            project,
            title="Health endpoint",
            body="GET /healthz returns 200",
            risk=risk,
            criteria=[
                CriterionInput(
                    text=f"criterion {i}", kind=CriterionKind.TEST, verify_ref=f"tests.Health.t{i}"
                )
                for i in range(1, n + 1)
            ],
        )
        if approve:
            s, _ = specs.approve(self.ctx, self.human, project, s.id)
        return s

    def task(self, project: str = "demo", *, by: Acting | None = None, **kw: Any) -> Task:
        if "spec_id" not in kw and "criteria" not in kw:
            kw["criteria"] = [CriterionInput(text="it works")]
        kw.setdefault("title", "Do the thing")
        return tasks.create(self.ctx, by or self.human, project, **kw).task

    def claimed(self, who: Acting, project: str = "demo", **kw: Any) -> Claimed:
        t = self.task(project, **kw)
        return claim(self.ctx, who, project, task_id=t.id)

    def submitted(self, who: Acting, project: str = "demo", **kw: Any) -> Task:
        c = self.claimed(who, project, **kw)
        return submit(self.ctx, who, c.task.id, c.token, commit_sha=SHA, evidence="did it")

    def reload(self, task_id: str) -> Task:
        return self.ctx.task(task_id)
