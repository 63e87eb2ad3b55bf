"""`taskgate key ...`: mint (agent or verifier), list and revoke keys."""

from __future__ import annotations

import argparse
from typing import Any

from taskgate.cli import presence
from taskgate.cli.client import ApiError
from taskgate.cli.human import PERSON, human_only, scope
from taskgate.cli.output import client, emit, table

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
    rows = [
        [
            k["id"],
            k["kind"],
            k["name"],
            k.get("role") or k.get("verifier_kind") or "",
            "revoked" if k.get("revoked_at") else "live",
            ",".join(k.get("projects") or []) or "* (every project)",
        ]
        for k in items
    ]
    header = ["ID", "KIND", "NAME", "ROLE", "STATE", "PROJECTS"]
    emit(args, out, table(header, rows) if rows else "(no keys)")


def cmd_key_revoke(args: argparse.Namespace) -> None:
    api = client(args)
    out = api.call("POST", api.path("api", "keys", args.id, "revoke"))
    warnings = out.get("warnings") or []
    emit(args, out, "\n".join([f"revoked {args.id}", *[f"warning: {w}" for w in warnings]]))


def _check_projects(args: argparse.Namespace) -> None:
    """Each --project must exist (the server's 404 names the nearest), before anyone is asked."""
    api = client(args)
    for project in args.project or []:
        api.call("GET", api.path("api", "projects", project))


def _check_revoke(args: argparse.Namespace) -> None:
    """The key must exist and be live, before anyone is asked; its name goes into the prompt."""
    items = client(args).call("GET", "/api/keys")["items"]
    key = next((k for k in items if k["id"] == args.id), None)
    if key is None:
        raise ApiError(
            404,
            {
                "code": "E_NOT_FOUND",
                "message": f"key {args.id} not found (nothing was asked or changed)",
                "hint": "`taskgate key list` shows each key's id",
            },
        )
    args.key_record = key


def _revoke_action(a: argparse.Namespace) -> presence.Action:
    key = getattr(a, "key_record", None) or {}
    detail = f"{key['kind']} key {key['name']}, for {scope(key.get('projects'))}" if key else ""
    if key.get("revoked_at"):
        detail += " (revoked already)"
    return presence.Action(f"revoke key {a.id}", a.id, detail)


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
    human_only(ka, _key_action, _check_projects)
    kv = kc.add_parser("verifier", parents=[common], help=f"a verifier key ({PERSON})")
    kv.add_argument("name", nargs="?", default="verifier")
    kv.add_argument("--kind", dest="verifier_kind", choices=["local", "reviewer"], required=True)
    kv.add_argument("--project", action="append", help="limit to a project (repeatable; default all)")
    kv.add_argument("--key-only", action="store_true", help=KEY_ONLY)
    kv.set_defaults(func=cmd_key_create)
    human_only(kv, _key_action, _check_projects)
    key.add_parser("list", parents=[common], help="list keys").set_defaults(func=cmd_key_list)
    kr = key.add_parser("revoke", parents=[common], help=f"revoke a key ({PERSON})")
    kr.add_argument("id")
    kr.set_defaults(func=cmd_key_revoke)
    human_only(kr, _revoke_action, _check_revoke)
