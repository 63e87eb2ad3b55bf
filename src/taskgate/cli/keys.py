"""`taskgate key ...`: mint (agent or verifier), list and revoke keys."""

from __future__ import annotations

import argparse
from typing import Any

from taskgate.cli import presence
from taskgate.cli.human import PERSON, human_only, scope
from taskgate.cli.output import client, emit

KEY_ONLY = "print only the key, e.g. for `export TASKGATE_VERIFIER_KEY=$(taskgate key create ...)`"


def cmd_key_create(args: argparse.Namespace) -> None:
    body: dict[str, Any] = {"kind": args.kind, "name": args.name, "projects": args.project or []}
    if args.kind == "agent":
        body["role"] = args.role
        body["delegations"] = args.delegate or []
    else:
        body["verifier_kind"] = args.verifier_kind
    out = client(args).call("POST", "/api/keys", body)
    if args.key_only:  # for `export VAR=$(taskgate key create ...)`: the confirmation is on the terminal
        print(out["key"])
        return
    cred = out["credential"]
    text = (
        f"created {cred['kind']} key {cred['id']} for {cred['name']}\n"
        f"key (shown once, store it now): {out['key']}"
    )
    emit(args, out, text)


def cmd_key_list(args: argparse.Namespace) -> None:
    out = client(args).call("GET", "/api/keys")
    items = out["items"] if isinstance(out, dict) else out
    lines = [
        f"{k['id']}\t{k['kind']}\t{k['name']}\t{k.get('role') or k.get('verifier_kind') or ''}\t"
        f"{'revoked' if k.get('revoked_at') else 'live'}\t{','.join(k.get('projects') or []) or '*'}"
        for k in items
    ]
    emit(args, out, "\n".join(lines) or "(no keys)")


def cmd_key_revoke(args: argparse.Namespace) -> None:
    api = client(args)
    out = api.call("POST", api.path("api", "keys", args.id, "revoke"))
    warnings = out.get("warnings") or []
    emit(args, out, "\n".join([f"revoked {args.id}", *[f"warning: {w}" for w in warnings]]))


def _key_action(a: argparse.Namespace) -> presence.Action:
    if a.kind == "agent":
        what = f"mint agent key {a.name} ({a.role}) for {scope(a.project)}"
        detail = f"it may act on behalf of {', '.join(a.delegate)}" if a.delegate else ""
    else:
        what = f"mint {a.verifier_kind} verifier key {a.name} for {scope(a.project)}"
        detail = (
            "a local verifier key records the evidence that makes work verified"
            if a.verifier_kind == "local"
            else "a reviewer key judges review criteria"
        )
    return presence.Action(what, a.name, detail)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    key = sub.add_parser(
        "key", help=f"agent and verifier keys (create, revoke: each {PERSON})"
    ).add_subparsers(dest="sub", required=True)
    kc = key.add_parser("create", help=f"mint a key, shown once ({PERSON})").add_subparsers(
        dest="kind", required=True
    )
    ka = kc.add_parser("agent", parents=[common], help=f"an agent key ({PERSON})")
    ka.add_argument("name")
    ka.add_argument("--role", choices=["executor", "architect"], default="executor")
    ka.add_argument("--project", action="append", help="limit to a project (repeatable; default all)")
    ka.add_argument("--delegate", action="append", help="human:<name> this key may act for (repeatable)")
    ka.add_argument("--key-only", action="store_true", help=KEY_ONLY)
    ka.set_defaults(func=cmd_key_create)
    human_only(ka, _key_action)
    kv = kc.add_parser("verifier", parents=[common], help=f"a verifier key ({PERSON})")
    kv.add_argument("name", nargs="?", default="verifier")
    kv.add_argument("--kind", dest="verifier_kind", choices=["local", "reviewer"], required=True)
    kv.add_argument("--project", action="append", help="limit to a project (repeatable; default all)")
    kv.add_argument("--key-only", action="store_true", help=KEY_ONLY)
    kv.set_defaults(func=cmd_key_create)
    human_only(kv, _key_action)
    key.add_parser("list", parents=[common], help="list keys").set_defaults(func=cmd_key_list)
    kr = key.add_parser("revoke", parents=[common], help=f"revoke a key ({PERSON})")
    kr.add_argument("id")
    kr.set_defaults(func=cmd_key_revoke)
    human_only(kr, lambda a: presence.Action(f"revoke key {a.id}", a.id))
