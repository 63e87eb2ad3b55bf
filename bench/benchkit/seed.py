"""Work for a bench to take, written through the services."""

from __future__ import annotations

from pathlib import Path


def ready_tasks(db: Path, project: str, n: int) -> None:
    """`n` ready tasks in `project` (which must exist), on a SQLite file; a running server may
    be serving it (the store's transactions keep both right)."""
    from taskgate.domain.models import CriterionInput
    from taskgate.domain.principals import acting, human
    from taskgate.service import tasks
    from taskgate.service.context import Context
    from taskgate.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    ctx = Context(store)
    admin = acting(human("bench"))
    try:
        for i in range(n):
            tasks.create(ctx, admin, project, title=f"task {i}", criteria=[CriterionInput(text="works")])
    finally:
        store.close()
