"""Work for a bench to take, written through the services.

    python -m benchkit.seed DB PROJECT N

does it in a process of its own: with another checkout's src/ on PYTHONPATH, through that
checkout's services, on the database its server made.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchkit import BENCH


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


def ready_tasks_of(src: Path | None, db: Path, project: str, n: int) -> None:
    """`ready_tasks` through the code of checkout `src` (this one's when None)."""
    if src is None:
        ready_tasks(db, project, n)
        return
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(BENCH), str(src / "src")]))
    subprocess.run([sys.executable, "-m", "benchkit.seed", str(db), project, str(n)], env=env, check=True)


if __name__ == "__main__":
    ready_tasks(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
