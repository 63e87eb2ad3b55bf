"""`taskgate queue show`: a project's landing queue, in the order its tasks land."""

from __future__ import annotations

import argparse
from typing import Any

from taskgate.cli.client import Client
from taskgate.cli.output import authored, table


def queue_text(q: dict[str, Any]) -> str:
    """The queue as a person reads it: each entry's place and state, then the last steps."""
    head = f"landing queue of {q['project']} onto {q['branch']}" + ("" if q["land"] else " (landing is off)")
    if not q["entries"]:
        out = [f"{head}: empty"]
    else:
        rows = [
            [str(e["position"]), e["task_id"], e["commit_sha"][:12], e["accepted_at"][:19], e["state"]
             + (" (hotfix)" if e["hotfix"] else "")]
            for e in q["entries"]
        ]  # fmt: skip
        out = [f"{head}:", table(["#", "task", "commit", "accepted", "state"], rows)]
    for s in reversed(q["recent"][-5:]):
        said = {
            "landed": f"landed {', '.join(s['landed'])} at {(s.get('push') or '')[:12]}",
            "culprit": f"{s['culprit']} back to ready",
            "refused": f"push refused: {s.get('why') or ''}",
            "error": f"error: {s.get('why') or ''}",
            "nothing": "nothing landed",
        }.get(s.get("outcome") or "", s.get("outcome") or "")
        if s.get("outcome") == "landed" and s.get("culprit"):
            said += f"; {s['culprit']} back to ready"
        out.append(f"  step {s['run_id']}: {said}")
    return "\n".join(out)


def _show(args: argparse.Namespace, api: Client) -> tuple[Any, str]:
    q = api.call("GET", api.path("api", "projects", args.project, "queue"))
    return q, queue_text(q)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    queue = sub.add_parser("queue", help="the landing queue: accepted work waiting to land").add_subparsers(
        dest="sub", required=True
    )
    s = queue.add_parser("show", parents=[common], help="a project's landing queue, in landing order")
    s.add_argument("project")
    s.set_defaults(func=authored(_show))
