"""Stable error codes. Clients (agents, the board, the CLI) branch on `code`, never on text."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    NOT_FOUND = "E_NOT_FOUND"
    WRONG_STATE = "E_WRONG_STATE"
    STALE_CLAIM = "E_STALE_CLAIM"
    SELF_ACCEPT = "E_SELF_ACCEPT"
    SELF_VERIFY = "E_SELF_VERIFY"
    FORBIDDEN = "E_FORBIDDEN"
    IDENTITY_MISMATCH = "E_IDENTITY_MISMATCH"
    VALIDATION = "E_VALIDATION"
    EMPTY_CRITERIA = "E_EMPTY_CRITERIA"
    CONFLICT = "E_CONFLICT"
    NOTHING_READY = "E_NOTHING_READY"
    UNAUTHORIZED = "E_UNAUTHORIZED"
    UNAVAILABLE = "E_UNAVAILABLE"  # a service the decision needs (the attestation key) did not answer
    # Refusals of the HTTP request itself, before any rule reads it: each has its own code so
    # that the code alone says which HTTP status came with it.
    TOO_LARGE = "E_TOO_LARGE"  # the request body is over the server's limit
    TIMEOUT = "E_TIMEOUT"  # the request body did not arrive in time
    METHOD_NOT_ALLOWED = "E_METHOD_NOT_ALLOWED"
    NOT_JSON = "E_NOT_JSON"  # the body is not sent as JSON (its Content-Type)
    NOT_ACCEPTABLE = "E_NOT_ACCEPTABLE"  # the Accept header takes none of the answer's types
    WRONG_HOST = "E_WRONG_HOST"  # the Host header names no host this server answers for


# A bug or unusable stored data on our side. Deliberately not an ErrorCode: no client should
# branch on it as an answer of the domain.
INTERNAL = "E_INTERNAL"

# What a caller should do next; shown to agents so a model can recover without a human.
HINTS: dict[ErrorCode, str] = {
    ErrorCode.NOT_FOUND: "Check the id; list_tasks / list_specs / list_projects show what exists.",
    ErrorCode.WRONG_STATE: "Re-read the task (get_task) and act on its current status.",
    ErrorCode.STALE_CLAIM: "Your claim ended (released, expired, failed or submitted). Stop work on it; "
    "claim a task again with claim_task if you should continue.",
    ErrorCode.SELF_ACCEPT: "Work cannot be accepted by the credential that claimed or submitted it. "
    "Ask a human to accept it on the board.",
    ErrorCode.SELF_VERIFY: "A verifier may not verify work submitted under its own credential.",
    ErrorCode.FORBIDDEN: "This action needs another role or a human; ask a human on the board.",
    ErrorCode.IDENTITY_MISMATCH: "Your identity comes from your key; omit the argument or pass your own id.",
    ErrorCode.VALIDATION: "Fix the arguments as the message says and call again.",
    ErrorCode.EMPTY_CRITERIA: "Give at least one non-empty acceptance criterion, or link an approved spec.",
    ErrorCode.CONFLICT: "Someone changed this at the same time; re-read and try again.",
    ErrorCode.NOTHING_READY: "No task is ready right now; try again later or ask for new tasks.",
    ErrorCode.UNAUTHORIZED: "Send a valid key as 'Authorization: Bearer <key>'.",
    ErrorCode.UNAVAILABLE: "Nothing was changed; call again in a minute.",
    ErrorCode.TOO_LARGE: "Nothing was changed. Send less: the message says the limit.",
    ErrorCode.TIMEOUT: "Nothing was changed. The body arrived too slowly; send the request again, whole.",
    ErrorCode.METHOD_NOT_ALLOWED: "Use the method the Allow header or the message names.",
    ErrorCode.NOT_JSON: "Send the body as JSON, with 'Content-Type: application/json'.",
    ErrorCode.NOT_ACCEPTABLE: "Accept what the server answers in: 'Accept: application/json, "
    "text/event-stream' for MCP.",
    ErrorCode.WRONG_HOST: "Call the server at the address it serves on; it answers only for its own hosts.",
}


# The HTTP status each code answers with, everywhere a refusal leaves over HTTP: the REST API,
# the MCP front door, `taskgate serve`'s own edge. One table, so a client can rely on status
# and code agreeing everywhere; `TaskgateError.status` reads it.
HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.SELF_ACCEPT: 403,
    ErrorCode.SELF_VERIFY: 403,
    ErrorCode.IDENTITY_MISMATCH: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.NOTHING_READY: 404,
    ErrorCode.WRONG_STATE: 409,
    ErrorCode.STALE_CLAIM: 409,
    ErrorCode.CONFLICT: 409,
    ErrorCode.VALIDATION: 422,
    ErrorCode.EMPTY_CRITERIA: 422,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.TOO_LARGE: 413,
    ErrorCode.TIMEOUT: 408,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.NOT_JSON: 415,
    ErrorCode.NOT_ACCEPTABLE: 406,
    ErrorCode.WRONG_HOST: 421,
}


class TaskgateError(Exception):
    """A refusal with a stable code. Raised by rules and services; never means a partial write."""

    def __init__(
        self, code: ErrorCode, message: str, *, current_status: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.current_status = current_status
        self._hint = hint

    @property
    def hint(self) -> str:
        """What an agent should do next: the refusal's own advice where the code's general one
        would send it the wrong way (a refused criteria change: say the criterion is wrong,
        do not ask for another role), else the code's."""
        return self._hint or HINTS[self.code]

    @property
    def status(self) -> int:
        """The HTTP status this refusal answers with (`HTTP_STATUS`)."""
        return HTTP_STATUS[self.code]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code.value, "message": self.message}
        if self.current_status is not None:
            out["current_status"] = self.current_status
        return out

    def __repr__(self) -> str:
        return f"TaskgateError({self.code.value}, {self.message!r})"


def not_found(what: str) -> TaskgateError:
    return TaskgateError(ErrorCode.NOT_FOUND, f"{what} not found")


def invalid(message: str) -> TaskgateError:
    return TaskgateError(ErrorCode.VALIDATION, message)
