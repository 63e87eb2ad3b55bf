"""Dependency caches in S3, for the cloud verifier: one gzipped tar object per cache key.

It implements verifier/cache.py's CacheStore port (restore a tree into a directory, save one):
which key a check's cache has, and that only a run on the base branch's own commit ever saves,
is decided there, not here. The container picks this store when TASKGATE_CACHE_BUCKET names
the stack's cache bucket (template.yaml), which only the verifier task's role may write.

S3 and not EFS: a cache is restored as a copy into each checkout anyway, so a file system
shared between tasks buys nothing over one object per key; S3 needs no mount targets or NFS
rules in the verifier's subnets (the stack's own VPC has public subnets and no NAT), costs a
fraction of EFS per GB-month, and its bucket policy can refuse every writer but one role.

The tar is read with tarfile's "tar" filter: no member lands outside the directory it is
restored into, and no setuid bit survives. Symbolic links are kept (a virtualenv's
interpreter is one, to an absolute path), which the stricter "data" filter refuses.
"""

from __future__ import annotations

import re
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from botocore.config import Config
from botocore.exceptions import ClientError

from taskgate.verifier import untar

BUCKET_VAR = "TASKGATE_CACHE_BUCKET"
PREFIX = "cache/"
# A key names one object: letters, digits and . _ - only, so it never reaches another prefix.
KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
# Explicit timeouts: a verifier stuck on a cache download holds its slot and its submission.
CLIENT_CONFIG = Config(
    connect_timeout=5,
    read_timeout=60,
    retries={"max_attempts": 4, "mode": "standard"},
)


class CacheKeyError(ValueError):
    """A cache key that is not one object name."""


def _object(key: str) -> str:
    if not KEY_RE.match(key):
        raise CacheKeyError(f"cache key {key!r} must match {KEY_RE.pattern}")
    return f"{PREFIX}{key}.tar.gz"


class S3CacheStore:
    def __init__(self, bucket: str, client: Any) -> None:
        self.bucket = bucket
        self.client = client

    def restore(self, key: str, into: Path) -> bool:
        """Copy the tree cached under `key` into `into` (made if missing); False if there is none."""
        name = _object(key)
        with tempfile.TemporaryFile() as spool:
            try:
                self.client.download_fileobj(self.bucket, name, spool)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
                    return False
                raise
            spool.seek(0)
            into.mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=spool, mode="r:gz") as tar:
                untar.extract(tar, into, links_out=True)
        return True

    def save(self, key: str, source: Path) -> None:
        """Store the tree at `source` under `key`, replacing what was there."""
        name = _object(key)
        if not source.is_dir():
            raise NotADirectoryError(f"cache source {source} is not a directory")
        with tempfile.TemporaryFile() as spool:
            with tarfile.open(fileobj=spool, mode="w:gz") as tar:
                for child in sorted(source.iterdir()):
                    tar.add(child, arcname=child.name)
            spool.seek(0)
            self.client.upload_fileobj(spool, self.bucket, name)


def from_env(env: Mapping[str, str], client: Any | None = None) -> S3CacheStore | None:
    """The S3 cache TASKGATE_CACHE_BUCKET names, or None. Made before `taskgate verify` clears
    AWS_* from its environment: the client resolves the task role's credentials here."""
    bucket = env.get(BUCKET_VAR, "").strip()
    if not bucket:
        return None
    if client is None:
        import boto3

        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None
        client = boto3.client("s3", region_name=region, config=CLIENT_CONFIG)
    return S3CacheStore(bucket, client)
