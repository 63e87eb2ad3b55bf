"""The tamper-evident history: each task event holds the sha256 of the event before it (`prev`),
and the task item holds the sha256 of its last event (`history_head`), written in the same commit.

Canonical form (what is hashed): the event's body as the store holds it (the JSON object the
adapters store, "nothing here" defaults left out), serialised by RFC 8785 (JSON Canonicalization
Scheme: sorted keys, no whitespace, UTF-8, ECMAScript number form), then sha256, lowercase hex.
Hashing the stored body, not a model's full dump, keeps old chains valid when a field with an
empty default is added later. rfc8785 is a library: the number and key-order rules of JCS are
easy to get subtly wrong by hand, so it stays the definition. It is pure Python, though, and every
state change hashes its event: for the values where JCS and the C `json` encoder provably write
the same bytes (no floats, integers in JCS's safe range, ASCII keys) `canonical` takes the C
encoder; anything else goes to rfc8785 (tests/attest/test_chain_canonical.py compares the two).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import rfc8785

# JCS writes numbers as ECMAScript does: integers are exact only within +-(2**53 - 1) (rfc8785
# refuses others), and floats have their own shortest form. Strings: JCS and json.dumps(...,
# ensure_ascii=False) escape the same characters (", \\, U+0000-U+001F, with the same short
# forms and lowercase \\u00XX) and nothing else. Keys: JCS sorts by UTF-16 code units, Python by
# code points; the two orders agree on ASCII keys.
_SAFE = 2**53 - 1


def _plain(value: Any) -> bool:
    """Whether json.dumps writes `value` exactly as RFC 8785 does (see above).

    Exact types, not isinstance: every state change hashes its event, and this walk (written
    with isinstance and generators) would cost more than the C encoder itself. A subclass (a str enum, say) is not plain here, so rfc8785, the definition,
    writes it: slower, never different."""
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return True
    if kind is int:
        return bool(-_SAFE <= value <= _SAFE)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                return False
            if type(item) is not str and item is not None and not _plain(item):
                return False
        return True
    if kind is list:
        for item in value:  # noqa: SIM110  (a loop, not all(genexpr): no generator per list)
            if type(item) is not str and item is not None and not _plain(item):
                return False
        return True
    return False  # floats, tuples and anything else: rfc8785 decides


def canonical(data: Any) -> bytes:
    """RFC 8785 form of a JSON value."""
    if _plain(data):
        try:
            return _ENCODER.encode(data).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: rfc8785 gives its own error
            pass
    return rfc8785.dumps(data)


# What json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
# allow_nan=False) would build on every call (any argument but the value makes it build a new
# encoder): built once.
_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def digest(data: Any) -> str:
    """sha256 (lowercase hex) of a JSON value's RFC 8785 form."""
    return hashlib.sha256(canonical(data)).hexdigest()


def event_sk(seq: int) -> str:
    """A task event's sort key: the task version it was committed with (records.event_item)."""
    return f"H#{seq:08d}"


@dataclass(frozen=True)
class Mismatch:
    """The first place a task's stored history does not match its chain."""

    task_id: str
    event: str | None  # the event's sort key (H#<seq>); None: the task item's head
    reason: str


@dataclass(frozen=True)
class Reading:
    """What one task's stored history says against its chain."""

    unchained: int  # events before the chain's first event: written before this server kept a chain
    mismatch: Mismatch | None  # the first place it does not match; None: it all matches


def read_chain(
    task_id: str,
    head: str | None,
    events: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    signed_from: int | None = None,
) -> Reading:
    """Walk one task's events (sort key and stored body, in key order) against the chain.

    Each event must sit under its own key and name its task. The chain runs from the last event
    of the leading run of events that hold no `prev` up to the task's head: every event after it
    must hold the hash of the event before it, and the head must be the hash of the last. Events
    before the chain's first one were written by a taskgate that kept no chain (neither `prev`
    nor a head): they are counted as unchained, neither a mismatch nor verified. Only a leading
    run can be unchained: the server never writes an event without `prev` after a chained one,
    so one in the middle of a chain is a mismatch, which is what stripping `prev` to cut a
    chain looks like. A task with no head and only events without `prev` is all unchained.

    signed_from: the task version of the task's first signed statement. Statements are signed
    only by a server that keeps the chain, and each names the head at its event: so the chain
    must exist by then, and a task that has statements must have a head. Without this, removing
    every `prev` and the head (or cutting the chain after a statement) would read as legacy."""
    prev: str | None = None
    prev_sk: str | None = None
    chained = False  # past the chain's first event, i.e. an event holding `prev` was seen
    start: tuple[int, str] | None = None  # index and key of the chain's first event so far
    for i, (sk, body) in enumerate(events):
        seq = body.get("seq")
        if body.get("task_id") != task_id or not isinstance(seq, int) or event_sk(seq) != sk:
            return Reading(
                0,
                Mismatch(
                    task_id, sk, f"event {sk} is not where it was written (it says {task_id!r} seq {seq!r})"
                ),
            )
        if not chained and body.get("prev") is None:
            start = (i, sk)  # unchained, or the chain's first event: the events after it say which
        else:
            chained = True
            if body.get("prev") != prev:
                before = f"event {prev_sk}" if prev_sk else "nothing (it would be the first event)"
                return Reading(
                    0,
                    Mismatch(
                        task_id,
                        sk,
                        f"event {sk} does not follow {before}: it holds prev {body.get('prev')!r}, "
                        f"the chain says {prev!r} (an event at or before it was changed, removed or moved)",
                    ),
                )
        try:
            prev = digest(dict(body))
        except (TypeError, ValueError) as exc:  # a value JCS cannot write: not what we stored
            return Reading(0, Mismatch(task_id, sk, f"event {sk} cannot be canonicalised: {exc}"))
        prev_sk = sk
    if head is None and not chained:
        if signed_from is not None:
            return Reading(
                0,
                Mismatch(
                    task_id,
                    None,
                    f"the task has no chain head, yet it has a signed statement (of {event_sk(signed_from)}) "
                    "naming one: its chain was removed",
                ),
            )
        return Reading(len(events), None)  # nothing written since the chain began: all unchained
    if head != prev:
        last = f"its last event {prev_sk}" if prev_sk else "no events"
        return Reading(
            0,
            Mismatch(
                task_id,
                None,
                f"the task's chain head {head!r} does not match {last} ({prev!r}): "
                "the last event was changed or removed",
            ),
        )
    unchained, first_sk = start if start is not None else (0, None)
    if first_sk is not None and signed_from is not None and event_sk(signed_from) < first_sk:
        return Reading(
            0,
            Mismatch(
                task_id,
                first_sk,
                f"event {first_sk} holds no prev, yet the signed statement of {event_sk(signed_from)}, "
                "before it, shows the history was chained by then: the chain was cut",
            ),
        )
    return Reading(unchained, None)
