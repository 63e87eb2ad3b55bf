"""One error table: every code has a hint for agents (domain/errors.HINTS), one for the REST
API's callers (api/errors.HINTS) and the HTTP status it answers with (domain/errors.HTTP_STATUS),
and no server-side module spells a code by hand, where its status could drift from the table's
(`taskgate serve`'s edge once answered E_VALIDATION with 408 and 413 while the table said 422)."""

from __future__ import annotations

import ast
from pathlib import Path

from taskgate.api import errors as api_errors
from taskgate.domain.errors import HINTS, HTTP_STATUS, ErrorCode, TaskgateError

SRC = Path(__file__).resolve().parents[2] / "src" / "taskgate"
# Clients of the REST API, which read the codes the server sends (the CLI, the verifier, the
# demo's agent), and the table itself.
CLIENTS = ("cli", "verifier", "demo")


def test_every_code_has_hints_and_a_status() -> None:
    for code in ErrorCode:
        assert HINTS.get(code, "").strip(), f"{code} has no hint for agents (domain/errors.HINTS)"
        assert api_errors.HINTS.get(code, "").strip(), (
            f"{code} has no hint for the REST API (api/errors.HINTS)"
        )
        assert 400 <= HTTP_STATUS.get(code, 0) < 600, f"{code} has no HTTP status (domain/errors.HTTP_STATUS)"
        assert TaskgateError(code, "m").status == HTTP_STATUS[code]
    assert set(HINTS) == set(api_errors.HINTS) == set(HTTP_STATUS) == set(ErrorCode)


def test_the_request_refusals_have_codes_of_their_own() -> None:
    """A code says its status: the refusals of the HTTP request itself are not E_VALIDATION."""
    expected = {
        ErrorCode.TOO_LARGE: 413,
        ErrorCode.TIMEOUT: 408,
        ErrorCode.METHOD_NOT_ALLOWED: 405,
        ErrorCode.NOT_JSON: 415,
        ErrorCode.NOT_ACCEPTABLE: 406,
        ErrorCode.WRONG_HOST: 421,
        ErrorCode.VALIDATION: 422,
    }
    assert {code: HTTP_STATUS[code] for code in expected} == expected
    for status in (405, 406, 408, 413, 415, 421):
        assert [c for c, s in HTTP_STATUS.items() if s == status] == [
            c for c, s in expected.items() if s == status
        ]


def test_no_server_module_spells_a_code_by_hand() -> None:
    codes = {code.value for code in ErrorCode}
    found = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC)
        if relative.parts[0] in CLIENTS or relative == Path("domain/errors.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in codes:
                found.append(f"{relative}:{node.lineno}: {node.value!r}")
    assert not found, "raise or build a TaskgateError(ErrorCode...) instead:\n" + "\n".join(found)
