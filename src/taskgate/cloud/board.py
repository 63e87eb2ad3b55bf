"""Publishes the board: a CloudFormation custom resource that puts `web/` and `config.json` in S3.

The board is static files with no build step. `sam build` copies `web/` into this function's
package (functions/board/Makefile); on every stack create or update that changes the package
or the settings, this function

1. uploads each file with its content type (and `Cache-Control: no-cache`: the names carry no
   content hash, so browsers revalidate by ETag instead of holding an old board),
2. writes `config.json` from the stack's values (how the board signs in: Cognito's hosted UI,
   the app client, the scopes; the API is on the same origin),
3. deletes what an earlier version published and this one no longer has,
4. on an update, invalidates CloudFront's cache so the new board shows at once.

On delete it empties the bucket, so the stack can remove it. The answer to CloudFormation is
an HTTPS PUT of a small JSON document to the pre-signed URL in the event; written here
because it is that one request (cfn-response exists only for inline code, and crhelper would
add a dependency and a polling framework for it).
"""

from __future__ import annotations

import json
import mimetypes
import os
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from taskgate.cloud import observe

CONFIG_KEY = "config.json"
CACHE_CONTROL = "no-cache"
_TYPES = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".json": "application/json",
    ".svg": "image/svg+xml",
}


def _content_type(path: Path) -> str:
    known = (
        _TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    )
    return f"{known}; charset=utf-8" if known.startswith("text/") or known == "application/json" else known


def _files(root: Path) -> Iterator[tuple[str, Path]]:
    if not root.is_dir():
        return
    for path in sorted(root.rglob("*")):
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts):
            yield path.relative_to(root).as_posix(), path


def _keys(s3: Any, bucket: str) -> Iterator[str]:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            yield str(obj["Key"])


def _delete(s3: Any, bucket: str, keys: list[str]) -> None:
    for start in range(0, len(keys), 1000):  # DeleteObjects takes at most 1,000 keys
        batch = [{"Key": k} for k in keys[start : start + 1000]]
        s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})


def publish(s3: Any, bucket: str, root: Path, config: Mapping[str, Any]) -> list[str]:
    """Upload the board and its config; remove stale objects. The keys now published."""
    published = []
    for key, path in _files(root):
        if key == CONFIG_KEY:
            continue  # the stack's config wins over any file of that name
        s3.put_object(
            Bucket=bucket,
            Key=key,
            Body=path.read_bytes(),
            ContentType=_content_type(path),
            CacheControl=CACHE_CONTROL,
        )
        published.append(key)
    s3.put_object(
        Bucket=bucket,
        Key=CONFIG_KEY,
        Body=json.dumps(dict(config), separators=(",", ":")).encode(),
        ContentType="application/json; charset=utf-8",
        CacheControl=CACHE_CONTROL,
    )
    published.append(CONFIG_KEY)
    keep = set(published)
    _delete(s3, bucket, [k for k in _keys(s3, bucket) if k not in keep])
    return published


def empty(s3: Any, bucket: str) -> None:
    """Remove every object (the bucket keeps no versions). A bucket already gone is empty."""
    try:
        keys = list(_keys(s3, bucket))
    except s3.exceptions.NoSuchBucket:
        return
    _delete(s3, bucket, keys)


def invalidate(cloudfront: Any, distribution_id: str) -> None:
    cloudfront.create_invalidation(
        DistributionId=distribution_id,
        InvalidationBatch={
            "Paths": {"Quantity": 1, "Items": ["/*"]},
            "CallerReference": f"taskgate-{time.time_ns()}",
        },
    )


def respond(
    event: Mapping[str, Any], status: str, physical_id: str, reason: str = "", data: Any = None
) -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:2000] or status,
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "NoEcho": False,
            "Data": data or {},
        }
    ).encode()
    request = urllib.request.Request(  # CloudFormation's pre-signed S3 URL
        str(event["ResponseURL"]), data=body, method="PUT", headers={"Content-Type": ""}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()


def handle(event: Mapping[str, Any], s3: Any, cloudfront: Any, root: Path) -> None:
    """Do what the request asks and always answer CloudFormation (a silent failure would leave
    the stack waiting an hour)."""
    props = event.get("ResourceProperties") or {}
    bucket = str(props.get("Bucket") or "")
    physical_id = f"board:{bucket}" if bucket else str(event.get("PhysicalResourceId") or "board")
    kind = event.get("RequestType")
    try:
        if not bucket:
            raise ValueError("the resource needs a Bucket property")
        if kind == "Delete":
            # Also sent for the old bucket after a replacement, with that bucket's properties.
            empty(s3, bucket)
            respond(event, "SUCCESS", physical_id)
            return
        published = publish(s3, bucket, root, props.get("Config") or {})
        if kind == "Update" and props.get("DistributionId"):
            invalidate(cloudfront, str(props["DistributionId"]))
        observe.logger.info("board published", bucket=bucket, files=len(published))
        respond(event, "SUCCESS", physical_id, data={"Files": len(published)})
    except Exception as exc:
        observe.logger.exception("board publishing failed", bucket=bucket, request_type=kind)
        respond(event, "FAILED", physical_id, reason=f"{type(exc).__name__}: {exc}")


def _handler(event: dict[str, Any], context: Any) -> None:
    import boto3

    root = Path(os.environ.get("LAMBDA_TASK_ROOT") or ".") / "web"
    observe.bind(principal="system:cloudformation")
    handle(event, boto3.client("s3"), boto3.client("cloudfront"), root)


handler = observe.instrument(_handler, correlation_id_path="RequestId")
