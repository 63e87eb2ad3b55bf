"""What an API Gateway HTTP API v2 event says about its caller and its task, for log lines.

The principal is the one API Gateway established: the key authorizer's context (agents and
verifiers) or the JWT authorizer's claims (humans). The functions authenticate every request
again themselves; these values only label the log lines and traces, never decide anything.
Nothing here reads the Authorization header.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from taskgate.auth.resolve import human_from_claims
from taskgate.domain.errors import TaskgateError

# Paths that name a task: /api/tasks/<task id>/..., /api/verifier/runs/<task id>/<run id>/...
_TASK_PATH = re.compile(r"^/api/(?:tasks|verifier/runs)/([^/]+)")
_PROJECT_PATH = re.compile(r"^/api/projects/([^/]+)")
MAX_PEEK_BYTES = 64 * 1024  # bodies larger than this are not parsed just to label a log line


def principal(event: Mapping[str, Any]) -> dict[str, str | None]:
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    by_key = authorizer.get("lambda")
    if isinstance(by_key, Mapping) and by_key.get("actor"):
        return {"principal": str(by_key["actor"]), "credential_id": str(by_key.get("credential_id") or "")}
    claims = (authorizer.get("jwt") or {}).get("claims")
    if isinstance(claims, Mapping) and claims:
        try:
            who = human_from_claims(claims)
        except TaskgateError:
            return {"principal": None, "credential_id": None}
        return {"principal": who.actor, "credential_id": who.credential_id}
    return {"principal": None, "credential_id": None}


def body_json(event: Mapping[str, Any]) -> Any:
    raw = event.get("body")
    if not isinstance(raw, str) or not raw or len(raw) > MAX_PEEK_BYTES:
        return None
    try:
        text = base64.b64decode(raw).decode() if event.get("isBase64Encoded") else raw
        return json.loads(text)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        return None


def rest_keys(event: Mapping[str, Any]) -> dict[str, str | None]:
    """Log keys of a REST request: caller, route, and the task or project it names."""
    path = str(event.get("rawPath") or "")
    task = _TASK_PATH.match(path)
    project = _PROJECT_PATH.match(path)
    task_id = task.group(1) if task else None
    if task_id is None and path == "/api/verifier/runs":
        body = body_json(event)
        if isinstance(body, dict) and isinstance(body.get("task_id"), str):
            task_id = body["task_id"]
    method = ((event.get("requestContext") or {}).get("http") or {}).get("method")
    return {
        **principal(event),
        "route": f"{method} {path}" if method else path,
        "task_id": task_id,
        "project": project.group(1) if project else None,
    }


def mcp_keys(event: Mapping[str, Any]) -> dict[str, str | None]:
    """Log keys of an MCP request: caller, JSON-RPC method, tool, and the task it names."""
    body = body_json(event)
    keys: dict[str, str | None] = {**principal(event), "rpc": None, "tool": None, "task_id": None}
    if isinstance(body, dict):
        keys["rpc"] = body.get("method") if isinstance(body.get("method"), str) else None
        params = body.get("params")
        if isinstance(params, dict):
            keys["tool"] = params.get("name") if isinstance(params.get("name"), str) else None
            arguments = params.get("arguments")
            if isinstance(arguments, dict):
                for name in ("task_id", "project"):
                    if isinstance(arguments.get(name), str):
                        keys[name] = arguments[name]
    return keys
