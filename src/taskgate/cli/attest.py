"""`taskgate attest ...` and `taskgate audit verify`: the proof-of-verification commands.

`attest verify` runs offline: the bundle and the public key are all it reads (the key from the
server only when --key is not given)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from taskgate.cli.output import client, emit
from taskgate.cli.text import visible
from taskgate.domain.principals import VIA_SAID, Via
from taskgate.domain.text import plural


def cmd_attest_key(args: argparse.Namespace) -> None:
    key = client(args).call("GET", "/api/attestations/key")
    emit(args, key, f"key id: {key['keyid']}\nscheme: {key['scheme']}\n{key['pem'].rstrip()}")


def cmd_attest_export(args: argparse.Namespace) -> None:
    api = client(args)
    body = api.call("GET", api.path("api", "tasks", args.task, "attestations"), as_text=True)
    # Redirected to a file the bundle goes out byte for byte (it is signed); on a terminal, any
    # control character in it is shown as its escape.
    sys.stdout.write(visible(body) if sys.stdout.isatty() else body)


def cmd_attest_verify(args: argparse.Namespace) -> int:
    from taskgate.domain.commit_ids import is_full
    from taskgate.signing import bundle
    from taskgate.signing.keys import PublicKey

    try:
        commit = args.commit.strip().lower() if args.commit is not None else None
        if args.task is not None:
            commit = _submitted_commit(args)
        if commit is not None and not is_full(commit):
            raise ValueError(
                f"--commit {args.commit!r} is not a full commit id: statements name the full commit "
                "(40 or 64 hex digits) they are about, never an abbreviation; "
                f"`git rev-parse {args.commit}` prints the full one"
            )
        if args.key:
            key = PublicKey.from_pem(Path(args.key).read_bytes())
        else:
            key = PublicKey.from_pem(client(args).call("GET", "/api/attestations/key")["pem"].encode())
        lines = Path(args.file).read_text(encoding="utf-8").splitlines()
        done = bundle.verify(lines, key, commit)
    except (OSError, ValueError, RecursionError, bundle.Invalid) as exc:
        if isinstance(exc, RecursionError):
            exc = ValueError(f"{args.file}: a line is nested too deeply to be a statement")
        if args.json:
            print(json.dumps({"ok": False, "reason": str(exc)}))
        else:
            print(visible(f"FAILED: {exc}"), file=sys.stderr)
        return 1
    kinds = [s["predicateType"].rsplit("/", 2)[-2] for s in done.statements]
    result, said = _last_result(done.statements[-1])
    payload = {
        "ok": True,
        "keyid": key.key_id,
        "statements": len(done.statements),
        "commit": done.last_commit,
        "result": result,
    }
    emit(
        args,
        payload,
        f"OK: {plural(len(done.statements), 'statement')} ({', '.join(kinds)}) signed by key {key.key_id}, "
        f"chained; the last is about "
        + (
            f"commit {done.last_commit}"
            + (f", the commit {args.task} was submitted with" if args.task else "")
            if done.last_commit
            else f"an abbreviated commit {done.last_abbreviation}"
        )
        + f": {said}",
    )
    return 0


def _submitted_commit(args: argparse.Namespace) -> str:
    """--task: the full commit the server holds for the task's last submission (what a verifier
    checked out for it), read over the API; the bundle is then checked offline against it."""
    api = client(args)
    task = api.call("GET", api.path("api", "tasks", args.task))["task"]
    submitted = [a["submission"] for a in task.get("attempts") or [] if a.get("submission")]
    if not submitted:
        raise ValueError(
            f"--task {args.task}: it has no submission, so no commit to check the bundle against"
        )
    last = submitted[-1]
    if not last.get("resolved_commit"):
        raise ValueError(
            f"--task {args.task}: its last submission {last['commit_sha']} was never checked out by a "
            "verifier, so the server holds no full commit for it; give --commit with the full one"
        )
    return str(last["resolved_commit"])


def _last_result(statement: dict[str, Any]) -> tuple[str, str]:
    """What the last statement decided, said with the OK: a bundle that verifies, even with
    --commit, may end in a failed or an errored run (exit 0 says the proof holds, not that the
    commit passed)."""
    from taskgate.domain import statements

    predicate = statement.get("predicate") or {}
    if statement.get("predicateType") == statements.LANDING:
        return "LANDED", (
            f"a landing on {predicate.get('branch')} at {predicate.get('landedCommit')} "
            f"(from {str(predicate.get('fromTip'))[:12]})"
        )
    if statement.get("predicateType") == statements.TEST_RESULT:
        result = str(predicate.get("result"))
        return result, f"a {result} test result"
    levels = ", ".join(str(v) for v in predicate.get("verifiedLevels") or [])
    return str(predicate.get("verificationResult")), f"an acceptance {_how(predicate)}({levels})"


def _how(predicate: dict[str, Any]) -> str:
    """How a signed acceptance says it was made ("" for one signed before it said so)."""
    facts = predicate.get("taskgate") or {}
    via = facts.get("acceptedVia")
    if not isinstance(via, str) or via not in {v.value for v in Via}:
        return ""
    said = VIA_SAID[Via(via)] + (f" for {facts['onBehalfOf']}" if facts.get("onBehalfOf") else "")
    return f"{said}{', in a batch' if facts.get('batch') else ''} "


def cmd_audit_verify(args: argparse.Namespace) -> int:
    api = client(args)
    out = api.call("GET", api.path("api", "projects", args.project, "audit"))
    lines = [f"{m['task']} {m['event'] or '(task)'}: {m['reason']}" for m in out["mismatches"]]
    lines += [
        f"{u['task']}: {plural(u['events'], 'unchained event')} (written before this server kept a hash chain), "
        "chain intact after them"
        for u in out["unchained_tasks"]
    ]
    summary = (
        f"{plural(out['tasks'], 'task')}, {plural(out['events'], 'event')}, "
        f"{plural(out['statements'], 'signed statement')}: "
    )
    made = out.get("acceptances") or {}
    if made:
        said = {
            **{v.value: VIA_SAID[v] for v in Via},
            "unrecorded": "how not recorded (accepted before it was)",
        }
        lines.insert(
            0, "acceptances: " + ", ".join(f"{n} {said.get(via, via)}" for via, n in sorted(made.items()))
        )
    if not out["ok"]:
        summary += "MISMATCH"
    elif out["unchained"]:
        summary += (
            f"{plural(out['unchained'], 'unchained event')} in {plural(len(out['unchained_tasks']), 'task')}, "
            "not verified; "
            "every chain intact"
        )
    else:
        summary += "every chain matches"
    emit(args, out, "\n".join([summary, *lines]))
    return 0 if out["ok"] else 1


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    attest = sub.add_parser("attest", help="signed statements of verification decisions").add_subparsers(
        dest="sub", required=True
    )
    k = attest.add_parser("key", parents=[common], help="print the server's public attestation key")
    k.set_defaults(func=cmd_attest_key)
    e = attest.add_parser(
        "export", parents=[common], help="print a task's signed statements (JSON Lines: > ID.intoto.jsonl)"
    )
    e.add_argument("task")
    e.set_defaults(func=cmd_attest_export)
    v = attest.add_parser(
        "verify",
        parents=[common],
        help="check an exported bundle offline: signatures, key id, subjects, predicate types, chain",
    )
    v.add_argument("file")
    v.add_argument("--key", help="the public key PEM (`taskgate attest key`); default: ask the server")
    about = v.add_mutually_exclusive_group()
    about.add_argument("--commit", help="the full commit (40 or 64 hex) the last statement must be about")
    about.add_argument(
        "--task",
        help="the last statement must be about the commit this task was submitted with (the full one "
        "a verifier checked out, read from the server; the bundle itself is checked offline)",
    )
    v.set_defaults(func=cmd_attest_verify)

    audit = sub.add_parser("audit", help="check history hash chains").add_subparsers(
        dest="sub", required=True
    )
    a = audit.add_parser(
        "verify",
        parents=[common],
        help="walk every task's history chain; exit 1 naming the first mismatch "
        "(events written before the chain was kept are counted as unchained: exit 0)",
    )
    a.add_argument("project")
    a.set_defaults(func=cmd_audit_verify)
