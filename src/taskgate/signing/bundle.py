"""Offline verification of an exported bundle (JSON Lines, one DSSE envelope a line, oldest
first): what `taskgate attest verify` runs. Needs only the bundle and the public key."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from taskgate.domain import dsse, statements
from taskgate.domain.commit_ids import is_abbreviation, is_full
from taskgate.signing.keys import PublicKey


class Invalid(Exception):
    """The bundle does not verify; the message says where and why."""


@dataclass
class Verified:
    statements: list[dict[str, Any]] = field(default_factory=list)

    @property
    def last_commit(self) -> str | None:
        """The full commit the last statement is about; None if it names only an abbreviation."""
        sha = self.statements[-1]["subject"][0]["digest"].get("gitCommit")
        return str(sha) if sha is not None else None

    @property
    def last_abbreviation(self) -> str | None:
        """The abbreviated commit the last statement names when it names no full one."""
        short = self.statements[-1]["subject"][0]["digest"].get(statements.COMMIT_PREFIX)
        return str(short) if short is not None else None


def subject_commit(stmt: dict[str, Any], where: str) -> str:
    """The commit a statement is about: its full id (`gitCommit`), or `prefix:<abbreviation>` for
    a subject that names only the submitted abbreviation (domain.statements.subject)."""
    subjects = stmt.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise Invalid(f"{where}: the statement has no subject")
    commits = set()
    for s in subjects:
        digest = (s.get("digest") or {}) if isinstance(s, dict) else {}
        sha, short = digest.get("gitCommit"), digest.get(statements.COMMIT_PREFIX)
        if sha is not None:
            if not isinstance(sha, str) or not is_full(sha):
                raise Invalid(
                    f"{where}: subject digest gitCommit is not a full commit id (40 or 64 lowercase hex): {sha!r}"
                )
            commits.add(sha)
        elif isinstance(short, str) and is_abbreviation(short):
            commits.add(f"prefix:{short}")
        else:
            raise Invalid(f"{where}: the subject names no commit (no gitCommit digest): {digest!r}")
    if len(commits) != 1:
        raise Invalid(f"{where}: the statement names more than one commit")
    return commits.pop()


@dataclass
class Links:
    """How signed statements follow one another, oldest first: each names the payload digest of
    the one before it, and a summary relies only on passed test results of its own commit
    before it. `attest verify` checks a bundle by it, and the audit a task's stored statements."""

    last: str | None = None  # the payload sha256 of the last statement followed
    passes: set[tuple[str, str]] = field(default_factory=set)  # (payload sha256, commit) of passes
    accepted: set[str] = field(default_factory=set)  # payload sha256 of acceptances' summaries

    def follow(self, stmt: dict[str, Any], payload: bytes, commit: str) -> str | None:
        """Why `stmt` (its payload, the commit it is about) does not follow the statements
        before it; None when it does, and it is then the last."""
        predicate = stmt.get("predicate") or {}
        named = (predicate.get("taskgate") or {}).get("previous")
        if named != self.last:
            return (
                f"does not follow the signed statement before it (it names {named!r}, the one before "
                f"hashes to {self.last!r}): a signed statement was removed, added or reordered"
            )
        digest = hashlib.sha256(payload).hexdigest()
        if stmt.get("predicateType") == statements.TEST_RESULT:
            if predicate.get("result") == "PASSED":
                self.passes.add((digest, commit))
        elif stmt.get("predicateType") == statements.LANDING:
            # A landing carries out an acceptance signed before it, and is about the commit landed.
            ref = (predicate.get("acceptance") or {}).get("sha256")
            if ref not in self.accepted:
                return f"the landing carries out acceptance {ref!r}, which is no acceptance before it"
            if predicate.get("landedCommit") != commit:
                return f"the landing names commit {predicate.get('landedCommit')!r} and is about {commit}"
        else:
            for given in predicate.get("inputAttestations") or []:
                ref = (given.get("digest") or {}).get("sha256") if isinstance(given, dict) else None
                if (ref, commit) not in self.passes:
                    return f"the summary relies on statement {ref!r}, which is no passed run of its commit {commit} before it"
            self.accepted.add(digest)
        self.last = digest
        return None


def verify(lines: list[str], key: PublicKey, commit: str | None = None) -> Verified:
    """Every line's signature by `key`, statement type, predicate type and subject; that the
    statements chain (each names the payload digest of the one before it, a summary names a
    passed test result of the same commit earlier in the bundle); with `commit`, that the last
    statement is about that commit. Raises Invalid with the first reason it fails."""
    out = Verified()
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise Invalid("the bundle holds no statements")
    links = Links()
    task: str | None = None
    for n, line in enumerate(lines, start=1):
        where = f"line {n}"
        try:
            env = dsse.from_json(json.loads(line))
        except (ValueError, dsse.BadEnvelope) as exc:
            raise Invalid(f"{where}: not a DSSE envelope: {exc}") from exc
        if env.payload_type != dsse.INTOTO_PAYLOAD_TYPE:
            raise Invalid(f"{where}: payloadType is {env.payload_type!r}, not {dsse.INTOTO_PAYLOAD_TYPE}")
        mine = [s for s in env.signatures if s.keyid == key.key_id]
        if not mine:
            ids = ", ".join(s.keyid or "(none)" for s in env.signatures)
            raise Invalid(f"{where}: no signature by key {key.key_id} (key ids: {ids})")
        data = dsse.pae(env.payload_type, env.payload)
        if not any(key.verifies(s.sig, data) for s in mine):
            raise Invalid(f"{where}: the signature does not verify with key {key.key_id}")
        try:
            stmt = json.loads(env.payload)
        except ValueError as exc:
            raise Invalid(f"{where}: the payload is not JSON: {exc}") from exc
        if not isinstance(stmt, dict) or stmt.get("_type") != statements.STATEMENT_TYPE:
            raise Invalid(f"{where}: not an in-toto Statement v1")
        ptype = stmt.get("predicateType")
        if ptype not in statements.PREDICATE_TYPES:
            raise Invalid(f"{where}: predicateType {ptype!r} is not one taskgate signs")
        sha = subject_commit(stmt, where)
        predicate = stmt.get("predicate") or {}
        facts = predicate.get("taskgate") or {}
        if task is not None and facts.get("task") != task:
            raise Invalid(f"{where}: about task {facts.get('task')!r}, the bundle is about {task!r}")
        task = facts.get("task")
        why = links.follow(stmt, env.payload, sha)
        if why is not None:
            raise Invalid(f"{where}: {why}")
        out.statements.append(stmt)
    if commit is not None:
        last = out.last_commit
        if last is None:
            raise Invalid(
                f"the bundle's last statement names only the abbreviated commit {out.last_abbreviation} (no verifier "
                f"resolved it to a full commit), so it cannot be checked against {commit}"
            )
        if last != commit.lower():
            raise Invalid(f"the bundle's last statement is about commit {last}, not {commit}")
    return out
