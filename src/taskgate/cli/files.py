"""Reading what a command is given (a spec file, a task's criteria, a repository path) before
anything is sent: a file that does not say what it must is an InputError, and nothing is sent."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from taskgate.domain.errors import TaskgateError
from taskgate.domain.spec_markdown import parse_criteria, parse_spec_markdown


class InputError(Exception):
    """A file the command was given does not say what it must; nothing was sent."""

    code = "E_VALIDATION"


def read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).expanduser().read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


def parse_json(text: str, source: str) -> Any:
    """`text` as JSON, else InputError naming `source` (nesting too deep for the parser too)."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputError(f"{source}: not valid JSON: {exc}") from None
    except RecursionError:
        raise InputError(f"{source}: not valid JSON: nested too deeply") from None


def _json(text: str, source: str, shape: type, wrong: str) -> Any:
    """`text` parsed as JSON of `shape` (dict or list), else InputError naming `source`."""
    value = parse_json(text, source)
    if not isinstance(value, shape):
        raise InputError(f"{source}: {wrong}")
    return value


def spec_body(text: str, source: str) -> dict[str, Any]:
    """The REST body of a spec file: Markdown (domain/spec_markdown.py), or the JSON body
    itself (`{"title", "body", "risk", "criteria": [{"text", "kind", "verify_ref"}]}`)."""
    if text.lstrip().startswith("{"):
        body: dict[str, Any] = _json(text, source, dict, "a JSON spec is one object")
        return body
    try:
        spec = parse_spec_markdown(text)
    except TaskgateError as exc:
        raise InputError(f"{source}: {exc.message}") from None
    except RecursionError:
        raise InputError(f"{source}: nested too deeply to read") from None
    return {
        "title": spec.title,
        "body": spec.body,
        "risk": spec.risk.value,
        "criteria": [c.model_dump(mode="json", exclude_none=True) for c in spec.criteria],
    }


def criteria_body(text: str, source: str) -> list[dict[str, Any]]:
    """A task's own criteria: a JSON list, or Markdown `- (kind) text — \\`ref\\`` lines."""
    if text.lstrip().startswith("["):
        items: list[dict[str, Any]] = _json(text, source, list, "JSON criteria are a list")
        return items
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    try:
        return [c.model_dump(mode="json", exclude_none=True) for c in parse_criteria(lines)]
    except TaskgateError as exc:
        raise InputError(f"{source}: {exc.message}") from None
    except RecursionError:
        raise InputError(f"{source}: nested too deeply to read") from None


# scheme://..., user@host:path, or host.name:path (git's scp-like syntax)
_URL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|[^/@:]+@[^/:]+:|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+:)")


def checked_repo(repo: str) -> str:
    """`project create --repo`: a URL as given; a local path must be a git repository, and is
    sent as an absolute path (the verifier fetches from it, wherever it runs from)."""
    if _URL.match(repo):
        return repo
    path = Path(repo).expanduser().resolve()
    if not path.is_dir():
        raise InputError(f"--repo {repo}: no such directory (give a git repository's path or its URL)")
    done = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--git-dir"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise InputError(
            f"--repo {repo}: {path} is not a git repository (run `git init` there, or give the repository's URL)"
        )
    return str(path)
