"""Process-wide wiring: which store, built once per process (per Lambda container).

Settings come from the environment so the same handler code runs under `taskgate serve`
and on Lambda:

  TASKGATE_STORE            sqlite (default) | dynamodb
  TASKGATE_DB               SQLite file (default ~/.taskgate/taskgate.db)
  TASKGATE_TABLE            DynamoDB table name
  TASKGATE_DYNAMODB_ENDPOINT  endpoint URL (DynamoDB Local, tests)
  TASKGATE_ADMIN_TOKEN_HASH sha256 of the local admin token (set by `taskgate serve`)
  TASKGATE_ADMIN_NAME       the human the admin token stands for (default: admin)
  TASKGATE_ALLOWED_HOSTS    comma-separated Host values MCP accepts ("host:*" for any port)
  TASKGATE_ALLOWED_ORIGINS  comma-separated Origin values MCP accepts
  TASKGATE_FAULT            crash tests only: "<checkpoint>@<n>" kills the process (SIGKILL) the
                            n-th time it reaches that checkpoint (see Context.checkpoint)
  TASKGATE_WORKERS          blocking calls (key lookups, tool bodies) run at once per event loop
  TASKGATE_ECS_TASK_DEFINITION  cloud: the stack's verifier task definition; with it, a saved
                            verifier config's image gets a revision of its own (service/images.py)
  TASKGATE_ATTESTATION_KEY  local: the Ed25519 private key file decisions are signed with
                            (`taskgate serve` makes <data-dir>/attestation-key.pem, 0600)
  TASKGATE_KMS_KEY_ID       cloud: the KMS key (RSA_2048 or ECC_NIST_P256) decisions are signed with
  TASKGATE_PUBLIC_URL       the board's URL, named in signed statements (optional)
  TASKGATE_SERVER_ID        the URI signed summaries name as their verifier (default: the public
                            URL, else urn:taskgate:key:<key id>)
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from taskgate.service.context import Context
from taskgate.store.port import Store

if TYPE_CHECKING:
    from taskgate.service.attestations import Attestor
    from taskgate.signing.port import Signer


@dataclass(frozen=True)
class Settings:
    store: str = "sqlite"
    db_path: str = str(Path.home() / ".taskgate" / "taskgate.db")
    table: str = ""
    endpoint_url: str | None = None
    region: str | None = None
    admin_token_hash: str | None = None
    admin_name: str = "admin"
    allowed_hosts: tuple[str, ...] = ("127.0.0.1:*", "localhost:*", "[::1]:*")
    allowed_origins: tuple[str, ...] = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
    fault: str | None = None
    workers: int = 2  # as `taskgate serve --workers`; Lambda serves one request at a time anyway
    ecs_task_definition: str | None = None
    attestation_key: str | None = None
    kms_key_id: str | None = None
    public_url: str | None = None
    server_id: str | None = None

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        return cls(
            store=env.get("TASKGATE_STORE", "sqlite"),
            db_path=env.get("TASKGATE_DB", cls.db_path),
            table=env.get("TASKGATE_TABLE", ""),
            endpoint_url=env.get("TASKGATE_DYNAMODB_ENDPOINT") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            admin_token_hash=env.get("TASKGATE_ADMIN_TOKEN_HASH") or None,
            admin_name=env.get("TASKGATE_ADMIN_NAME") or "admin",
            allowed_hosts=_csv(env.get("TASKGATE_ALLOWED_HOSTS")) or cls.allowed_hosts,
            allowed_origins=_csv(env.get("TASKGATE_ALLOWED_ORIGINS")) or cls.allowed_origins,
            fault=env.get("TASKGATE_FAULT") or None,
            workers=_positive(env.get("TASKGATE_WORKERS"), cls.workers),
            ecs_task_definition=env.get("TASKGATE_ECS_TASK_DEFINITION") or None,
            attestation_key=env.get("TASKGATE_ATTESTATION_KEY") or None,
            kms_key_id=env.get("TASKGATE_KMS_KEY_ID") or None,
            public_url=env.get("TASKGATE_PUBLIC_URL") or None,
            server_id=env.get("TASKGATE_SERVER_ID") or None,
        )


def _csv(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def fault_hook(spec: str) -> Callable[[str], None]:
    """A checkpoint that kills this process with SIGKILL the n-th time it reaches the named
    point ("<point>@<n>"): a crash at an exact place, for the crash tests of a real server
    (tests/local/test_crash.py). Nothing sets TASKGATE_FAULT in normal use."""
    point, _, nth = spec.partition("@")
    if not point or not nth.isdigit() or int(nth) < 1:
        raise ValueError(f"TASKGATE_FAULT must look like 'cascade.spec@3', not {spec!r}")
    hits = itertools.count(1)
    lock = threading.Lock()

    def hook(name: str) -> None:
        if name != point:
            return
        with lock:
            if next(hits) == int(nth):
                os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _positive(value: str | None, default: int) -> int:
    try:
        n = int(value or default)
    except ValueError:
        raise ValueError(f"expected a positive integer, got {value!r}") from None
    if n < 1:
        raise ValueError(f"expected a positive integer, got {value!r}")
    return n


def open_store(settings: Settings) -> Store:
    if settings.store == "dynamodb":
        if not settings.table:
            raise ValueError("TASKGATE_TABLE is required with TASKGATE_STORE=dynamodb")
        from taskgate.store.dynamodb import DynamoDBStore  # boto3 only where it is used

        return DynamoDBStore(settings.table, region_name=settings.region, endpoint_url=settings.endpoint_url)
    if settings.store != "sqlite":
        raise ValueError(f"unknown TASKGATE_STORE {settings.store!r} (sqlite or dynamodb)")
    from taskgate.store.sqlite import SQLiteStore

    Path(settings.db_path).parent.mkdir(parents=True, exist_ok=True)
    return SQLiteStore(settings.db_path)


def attestor(settings: Settings) -> Attestor | None:
    """The attestation key the settings name: KMS in the cloud, a key file locally, else none."""
    from taskgate.service.attestations import Attestor

    if settings.kms_key_id:
        from taskgate.signing.kms import KmsSigner

        signer: Signer = KmsSigner(settings.kms_key_id, region_name=settings.region)
    elif settings.attestation_key:
        from taskgate.signing.local import LocalSigner

        signer = LocalSigner(Path(settings.attestation_key))
    else:
        return None
    return Attestor(signer, server_id=settings.server_id, public_url=settings.public_url)


_lock = threading.Lock()
_current: tuple[Settings, Context] | None = None


def context(settings: Settings | None = None) -> Context:
    """The process's Context: built from the environment on first use and kept (a warm Lambda
    reuses it; every request asks, so this path reads no environment). Explicit settings that
    differ rebuild it; `reset()` forgets it, e.g. after the environment changed."""
    global _current
    current = _current
    if current is not None and (settings is None or settings == current[0]):
        return current[1]
    with _lock:
        wanted = settings or Settings.from_env()
        if _current is None or _current[0] != wanted:
            if _current is not None:
                _current[1].store.close()
            ctx = Context(open_store(wanted))
            if wanted.fault:
                ctx.checkpoint = fault_hook(wanted.fault)
            if wanted.ecs_task_definition:
                from taskgate.cloud.ecs import EcsTaskDefinitions  # the cloud only; boto3 on first use

                ctx.task_definitions = EcsTaskDefinitions.from_env()
            ctx.attestor = attestor(wanted)
            _current = (wanted, ctx)
        return _current[1]


def reset() -> None:
    """Close and forget the process's Context; the next `context()` reads the environment again."""
    global _current
    with _lock:
        if _current is not None:
            _current[1].store.close()
        _current = None


def settings() -> Settings:
    return _current[0] if _current is not None else Settings.from_env()
