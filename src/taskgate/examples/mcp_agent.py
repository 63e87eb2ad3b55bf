"""An agent's side of taskgate from a shell, with the MCP SDK's Client over Streamable HTTP.

    python -m taskgate.examples.mcp_agent look my-app    # what it would claim, and the brief
    python -m taskgate.examples.mcp_agent claim my-app   # claim one: the claim token and brief
    python -m taskgate.examples.mcp_agent submit my-app-1 --token TOKEN --commit SHA --evidence "..."
    python -m taskgate.examples.mcp_agent release my-app-1 --token TOKEN --reason "..."

The key is TASKGATE_AGENT_KEY (or --key), the server TASKGATE_SERVER (or --server; default
http://127.0.0.1:8765). `look` only reads (get_next_tasks, get_task_brief): a dry run that leaves
nothing in any task's history. A refusal prints the server's own code, message and hint on
stderr and exits 1, whether the tool refused (a JSON result with isError) or /mcp did (a 401 for
a wrong key: the SDK says only "Server returned an error response", the server says why).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

PROTOCOL = "2026-07-28"


class Refused(Exception):
    """The server said no: its own code, message and hint."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body.get("message", ""))
        self.body = body

    def __str__(self) -> str:
        said = f"error {self.body.get('code', '?')}: {self.body.get('message', '')}"
        return said + (f"\nhint: {self.body['hint']}" if self.body.get("hint") else "")


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured answer, or Refused with the server's own words."""
    result = await client.call_tool(tool, {k: v for k, v in arguments.items() if v is not None})
    if result.is_error:
        text = result.content[0].text if result.content and result.content[0].type == "text" else ""
        try:
            body = json.loads(text)
        except ValueError:
            body = {"message": text}
        raise Refused(body if isinstance(body, dict) else {"message": text})
    return dict(result.structured_content or {})


def brief_lines(brief: dict[str, Any]) -> list[str]:
    task = brief.get("task") or {}
    lines = [f"{task.get('id')}: {task.get('title')}"]
    lines += [
        f"  {c.get('id')} ({c.get('kind')}) {c.get('text')}"
        + (f"  `{c['verify_ref']}`" if c.get("verify_ref") else "")
        for c in brief.get("criteria") or []
    ]
    return lines


async def look(client: Client, args: argparse.Namespace) -> list[str]:
    ready = (await call(client, "get_next_tasks", project=args.project)).get("tasks") or []
    if not ready:
        return [f"nothing ready in {args.project}"]
    first = ready[0]["id"]
    brief = (await call(client, "get_task_brief", task_id=first)).get("brief") or {}
    return [f"would claim {first} (of {len(ready)} ready); nothing was claimed", *brief_lines(brief)]


async def claim(client: Client, args: argparse.Namespace) -> list[str]:
    claimed = await call(client, "claim_task", project=args.project, task_id=args.task)
    await call(
        client,
        "heartbeat",
        task_id=claimed["task_id"],
        claim_token=claimed["claim_token"],
        phase="implementing",
    )
    return [
        f"claimed {claimed['task_id']}; claim token {claimed['claim_token']}",
        *brief_lines(claimed.get("brief") or {}),
    ]


async def submit(client: Client, args: argparse.Namespace) -> list[str]:
    done = await call(
        client,
        "submit_task",
        task_id=args.task_id,
        claim_token=args.token,
        commit_sha=args.commit,
        evidence=args.evidence,
    )
    return [f"submitted {args.task_id}: it is {(done.get('task') or {}).get('status')}"]


async def release(client: Client, args: argparse.Namespace) -> list[str]:
    await call(client, "release_task", task_id=args.task_id, claim_token=args.token, reason=args.reason)
    return [f"released {args.task_id}"]


async def run(
    args: argparse.Namespace, act: Callable[[Client, argparse.Namespace], Awaitable[list[str]]]
) -> list[str]:
    refused: list[dict[str, Any]] = []

    async def keep_refusal(response: httpx2.Response) -> None:
        # A refusal of /mcp itself (401, 400): the SDK raises without the body; keep it.
        if response.status_code >= 400:
            await response.aread()
            try:
                body = response.json()
            except ValueError:
                body = {"message": response.text[:500]}
            refused.append({"code": f"HTTP {response.status_code}", **body} if isinstance(body, dict) else {})

    headers = {"Authorization": f"Bearer {args.key}"}
    url = args.server.rstrip("/") + "/mcp"
    try:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [keep_refusal]}) as http,
            Client(streamable_http_client(url, http_client=http), mode=PROTOCOL) as client,
        ):
            return await act(client, args)
    except Exception as exc:  # the SDK's task group wraps what went wrong in exception groups
        inner = _innermost(exc)
        if isinstance(inner, Refused):
            raise inner from None
        if refused:
            raise Refused(refused[-1]) from None
        raise Refused(
            {"code": "E_UNREACHABLE", "message": f"{url}: {type(inner).__name__}: {inner}"}
        ) from None


def _innermost(exc: BaseException) -> BaseException:
    """The first error inside an exception group (however deep), or the error itself."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m taskgate.examples.mcp_agent", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--server", default=os.environ.get("TASKGATE_SERVER", "http://127.0.0.1:8765"))
    p.add_argument("--key", default=os.environ.get("TASKGATE_AGENT_KEY"), help="default: $TASKGATE_AGENT_KEY")
    sub = p.add_subparsers(dest="command", required=True)
    lk = sub.add_parser("look", help="a dry run: what would be claimed, and its brief (claims nothing)")
    lk.add_argument("project")
    lk.set_defaults(act=look)
    cl = sub.add_parser("claim", help="claim a task of the project (or --task one)")
    cl.add_argument("project")
    cl.add_argument("--task", default=None)
    cl.set_defaults(act=claim)
    sm = sub.add_parser("submit", help="submit a commit for a claimed task")
    sm.add_argument("task_id")
    sm.add_argument("--token", required=True, help="the claim token `claim` printed")
    sm.add_argument("--commit", required=True)
    sm.add_argument("--evidence", required=True, help="what was done and how it was checked")
    sm.set_defaults(act=submit)
    rl = sub.add_parser("release", help="give a claimed task back, no attempt used")
    rl.add_argument("task_id")
    rl.add_argument("--token", required=True)
    rl.add_argument("--reason", default=None)
    rl.set_defaults(act=release)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.key:
        print("error: no agent key: set TASKGATE_AGENT_KEY or pass --key", file=sys.stderr)
        return 2
    try:
        lines = asyncio.run(run(args, args.act))
    except Refused as refused:
        print(refused, file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
