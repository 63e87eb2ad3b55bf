"""What task lifecycles cost on AWS: DynamoDB units, Lambda, HTTP API, priced per 1,000 lifecycles.

    python bench/cost.py [--n 1000] [--text typical|minimal] [--spec] [--verification]

A lifecycle is: a human creates a task (REST), an agent claims it, heartbeats twice and submits
(MCP), a human accepts it (REST). It runs through the real Lambda handlers of the stack
(`taskgate.cloud.api`, `.mcp`, `.authorizer`, and with --verification `.dispatcher` and the
verifier's REST calls), in process, on DynamoDB served by moto with the table exactly as
template.yaml and store/schema.py define it (tests/functions/stack.py builds it). So the count
holds everything that really runs: the key lookups of the authorizer and of the MCP function,
the claim's brief, the accept's cascade query, the dispatcher's reads and writes.

DynamoDB requests are counted with a botocore event hook on the functions' client. moto reports
no consumed capacity for transactions, so the units are computed from what is sent and stored,
by DynamoDB's published rules (Developer Guide, "DynamoDB read and write operations",
"Provisioned throughput considerations for GSIs", "Capacity management for transactions";
"DynamoDB item sizes and formats"):

- item size: the sum of attribute name and value lengths (strings in UTF-8 bytes, numbers
  ~1 byte per two significant digits + 1, maps and lists 3 bytes + 1 per element);
- a write: 1 write unit per 1 KB (rounded up) of the larger of the item before and after
  (PutItem, UpdateItem), of the deleted item (DeleteItem); a ConditionCheck in a transaction is
  charged on the item it reads; TransactWriteItems costs twice the units of its items;
- each global secondary index the write touches: 1 write of the index entry (its key, the
  table key and the projected attributes; rounded up per 1 KB) when the item enters or leaves
  the index or only a projected attribute changes, 2 (a delete and a put) when its index key
  changes, none when the item is in the index neither before nor after or nothing projected
  changed; index writes are not doubled by a transaction;
- a read: 1 read unit per 4 KB (rounded up, at least 1) strongly consistent, half that
  eventually consistent (every GSI query); GetItem/BatchGetItem round each item, Query the sum
  of the items it returns.

Lambda: one request per invocation (the key authorizer is counted once per MCP request: API
Gateway caches its answer for 60 s per key, and an agent's calls in a lifecycle are minutes
apart), duration estimated as the handler's own compute measured here (scaled to the share of
a vCPU its memory buys) plus the DynamoDB latency of its requests (see LATENCY_S). HTTP API:
one request per REST or MCP call.

Prints, per request kind and per store item kind and index, where the units go; then
    requests_per_lifecycle=<n> wru_per_lifecycle=<n> rru_per_lifecycle=<n>
and last
    cost_per_1000_lifecycles_usd=<x>
which is DynamoDB + Lambda (requests and duration) + HTTP API. The other charges a request
makes in the deployed stack (CloudFront in front, log ingestion, X-Ray traces) are printed on
their own line before it. `requests_per_lifecycle` counts the DynamoDB requests of the use
cases (the services, as bench/lifecycle.py counts them); the key lookups that authenticate each
request are printed as `auth_requests_per_lifecycle` and are in the units and the price.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

# -- prices ------------------------------------------------------------------------------------
# Published on-demand prices, US East (N. Virginia), as read from the AWS pricing pages in
# 2025 (DynamoDB's on-demand rates are those in force since 2024-11-01). Check
# https://aws.amazon.com/dynamodb/pricing/on-demand/, https://aws.amazon.com/lambda/pricing/,
# https://aws.amazon.com/api-gateway/pricing/, https://aws.amazon.com/cloudfront/pricing/,
# https://aws.amazon.com/cloudwatch/pricing/ and https://aws.amazon.com/xray/pricing/ before
# relying on them. Free tiers are left out: these are the prices past them.
PRICES_AS_OF = "2025 (DynamoDB on-demand since 2024-11-01), us-east-1"
USD_PER_WRU = 0.625 / 1e6  # DynamoDB on-demand, Standard table class
USD_PER_RRU = 0.125 / 1e6
USD_PER_LAMBDA_REQUEST = 0.20 / 1e6
USD_PER_LAMBDA_GB_S = 0.0000133334  # arm64, first 7.5 billion GB-s a month
USD_PER_HTTP_API_REQUEST = 1.00 / 1e6  # first 300 million a month
USD_PER_CLOUDFRONT_REQUEST = 0.0100 / 10_000  # HTTPS, United States/Europe
USD_PER_LOG_GB = 0.50  # CloudWatch Logs ingestion, Standard class
USD_PER_TRACE = 5.00 / 1e6  # X-Ray traces recorded (the functions trace every invocation)
# KMS: kms:Sign with the ECC_NIST_P256 attestation key is an asymmetric request (not RSA 2048):
# $0.15 per 10,000 (https://aws.amazon.com/kms/pricing/). The key itself is $1 a month, whatever
# the traffic: not a per-lifecycle cost.
USD_PER_KMS_ASYMMETRIC_REQUEST = 0.15 / 10_000

# Memory of each function in template.yaml (MB).
MEMORY_MB = {"mcp": 1024, "api": 1024, "authorizer": 512, "dispatcher": 512}
FULL_VCPU_MB = 1769  # Lambda gives a function one full vCPU at 1,769 MB, a share below that
# DynamoDB latency per request inside the function, seconds. Writes: DESIGN.md section 5
# (p50 ~7.5 ms for a conditional write, ~25 ms for a transaction); reads: an assumption.
LATENCY_S = {
    "GetItem": 0.005,
    "BatchGetItem": 0.006,
    "Query": 0.006,
    "PutItem": 0.0075,
    "UpdateItem": 0.0075,
    "DeleteItem": 0.0075,
    "TransactWriteItems": 0.025,
}
# Lambda's own log lines per invocation (platform.start, platform.report), JSON log format.
PLATFORM_LOG_BYTES = 600

WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}

# -- DynamoDB's capacity rules -----------------------------------------------------------------


def value_size(value: dict[str, Any]) -> int:
    """Bytes of one attribute value (without its name), per "DynamoDB item sizes and formats"."""
    ((kind, v),) = value.items()
    if kind == "S":
        return len(v.encode("utf-8"))
    if kind == "N":
        digits = v.lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in v)
    if kind == "NS":
        return sum(value_size({"N": n}) for n in v)
    if kind == "BS":
        return sum(len(b) for b in v)
    if kind == "L":
        return 3 + sum(value_size(e) + 1 for e in v)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + value_size(e) + 1 for k, e in v.items())
    raise ValueError(f"unknown attribute type {kind}")


def item_size(raw: dict[str, Any] | None) -> int:
    if not raw:
        return 0
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in raw.items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def read_units(size: int) -> int:
    return max(1, math.ceil(size / 4096))


@dataclass(frozen=True)
class Index:
    name: str
    key: tuple[str, str]
    projection: str  # ALL | KEYS_ONLY | INCLUDE
    include: tuple[str, ...] = ()

    def entry(self, raw: dict[str, Any], table_key: tuple[str, ...]) -> dict[str, Any] | None:
        """The item as this index holds it, or None if the item is not in it (sparse)."""
        if any(k not in raw for k in self.key):
            return None
        if self.projection == "ALL":
            return dict(raw)
        keep = set(table_key) | set(self.key) | set(self.include)
        return {k: v for k, v in raw.items() if k in keep}


def indexes_of(definition: dict[str, Any]) -> list[Index]:
    out = []
    for gsi in definition.get("GlobalSecondaryIndexes", []):
        key = {k["KeyType"]: k["AttributeName"] for k in gsi["KeySchema"]}
        proj = gsi["Projection"]
        out.append(
            Index(
                gsi["IndexName"],
                (key["HASH"], key["RANGE"]),
                proj["ProjectionType"],
                tuple(proj.get("NonKeyAttributes", ())),
            )
        )
    return out


def index_writes(
    index: Index, before: dict[str, Any] | None, after: dict[str, Any] | None, table_key: tuple[str, ...]
) -> int:
    """Write units one item's change costs in one GSI."""
    old = index.entry(before, table_key) if before else None
    new = index.entry(after, table_key) if after else None
    if old is None and new is None:
        return 0
    if old is None:
        return write_units(item_size(new))
    if new is None:
        return write_units(item_size(old))
    if tuple(old[k] for k in index.key) != tuple(new[k] for k in index.key):
        return write_units(item_size(old)) + write_units(item_size(new))  # delete + put
    return write_units(item_size(new)) if old != new else 0


# -- what a store item is, for the breakdown ---------------------------------------------------


def item_kind(raw_key: dict[str, Any]) -> str:
    pk, sk = raw_key["PK"]["S"], raw_key["SK"]["S"]
    if pk == "KEYS":
        return "credential"
    if pk == "PROJECTS":
        return "project-directory"
    if pk.startswith("PH#"):
        return "project-history"
    if pk.startswith("T#"):
        return {"H": "task-history", "N": "note", "R": "run", "D": "dispatch"}.get(
            sk[:1], sk.split("#")[0].lower()
        )
    return {
        "TASK": "task",
        "SPEC": "spec",
        "DEC": "decision",
        "REQ": "request",
        "CASCADE": "cascade",
        "REF": "criterion-ref",
        "TASKS-OF": "spec-tasks",
    }.get(sk.split("#")[0], sk.lower())


# -- the meter ---------------------------------------------------------------------------------


@dataclass
class Usage:
    """What the lifecycles used, by (step, function, DynamoDB operation) and by what the units
    were spent on (a store item kind, or a GSI)."""

    requests: Counter[tuple[str, str, str, str]] = field(default_factory=Counter)  # + item kind read
    wru: Counter[tuple[str, str]] = field(default_factory=Counter)
    rru: Counter[tuple[str, str]] = field(default_factory=Counter)


class Meter:
    """Counts every DynamoDB request the functions' client makes and what it costs.

    The state before a write is read through a second client that is not counted (moto serves
    both from one backend), the state after it likewise; the rules above turn both into units."""

    def __init__(self, client: Any, peek: Any, table: str, definition: dict[str, Any]) -> None:
        self.peek = peek
        self.table = table
        self.indexes = indexes_of(definition)
        self.table_key = tuple(k["AttributeName"] for k in definition["KeySchema"])
        self.usage = Usage()
        self.where: tuple[str, str] | None = None  # (step, function) while counting
        self.moto_s = 0.0  # time spent inside moto (not the function's own compute)
        self.latency_s = 0.0  # what the same requests would take on DynamoDB (LATENCY_S)
        events = client.meta.events
        events.register("before-parameter-build.dynamodb.*", self._before)
        events.register("after-call.dynamodb.*", self._after)

    def _get(self, key: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.peek.get_item(
            TableName=self.table, Key=key, ConsistentRead=True
        ).get("Item")
        return found

    def _written(self, op: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """(action, key) of each item a write request names."""
        if op == "PutItem":
            return [("Put", {k: params["Item"][k] for k in self.table_key})]
        if op in ("UpdateItem", "DeleteItem"):
            return [(op.removesuffix("Item"), params["Key"])]
        out = []
        for action in params["TransactItems"]:
            ((kind, body),) = action.items()
            key = {k: body["Item"][k] for k in self.table_key} if kind == "Put" else body["Key"]
            out.append((kind, key))
        return out

    def _before(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if self.where is None:
            return
        op = model.name
        before = [(k, key, self._get(key)) for k, key in self._written(op, params)] if op in WRITES else []
        context["cost"] = (op, params, before, time.perf_counter())

    def _after(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if "cost" not in context or self.where is None:
            return
        op, params, before, started = context.pop("cost")
        self.moto_s += time.perf_counter() - started
        self.latency_s += LATENCY_S[op]
        step, function = self.where
        u = self.usage
        read = item_kind(params["Key"]) if op == "GetItem" else ""
        u.requests[(step, function, op, read)] += 1
        failed = "Error" in parsed
        if op in WRITES:
            # A transaction costs twice the units of each item; a cancelled one, or a failed
            # conditional write, still costs its items (DESIGN.md section 5), but writes no index.
            factor = 2 if op == "TransactWriteItems" else 1
            for kind, key, old in before:
                new = (
                    old
                    if kind == "ConditionCheck"
                    else None
                    if failed or kind == "Delete"
                    else self._get(key)
                )
                u.wru[(step, item_kind(key))] += factor * write_units(max(item_size(old), item_size(new)))
                if failed or kind == "ConditionCheck":
                    continue
                for index in self.indexes:
                    u.wru[(step, f"{index.name} ({index.projection})")] += index_writes(
                        index, old, new, self.table_key
                    )
            return
        if failed:
            return
        if op == "GetItem":
            units = read_units(item_size(parsed.get("Item")))
            what = f"GetItem {item_kind(params['Key'])}"
            consistent = bool(params.get("ConsistentRead"))
        elif op == "BatchGetItem":
            ((table, req),) = params["RequestItems"].items()
            got = parsed.get("Responses", {}).get(table, [])
            units = sum(read_units(item_size(r)) for r in got) + len(req["Keys"]) - len(got)
            what, consistent = "BatchGetItem", bool(req.get("ConsistentRead"))
        else:  # Query: the items returned, as the index holds them, summed then rounded
            index = next((i for i in self.indexes if i.name == params.get("IndexName")), None)
            rows = parsed.get("Items", [])
            size = sum(item_size(index.entry(r, self.table_key) if index else r) for r in rows)
            units = read_units(size)
            what = f"Query {index.name if index else 'table'}"
            consistent = bool(params.get("ConsistentRead"))
        u.rru[(step, what)] += units if consistent else units / 2

    @contextmanager
    def counting(self, step: str, function: str) -> Iterator[None]:
        self.where = (step, function)
        try:
            yield
        finally:
            self.where = None


# -- the lifecycle through the handlers --------------------------------------------------------

TYPICAL: dict[str, Any] = {
    "title": "Checkout: apply the member discount to the cart total before tax",
    "description": (
        "Members get 10% off every item in the cart except gift cards. The discount applies "
        "before tax and before shipping is added. The cart page, the order summary and the "
        "confirmation email show the discounted line totals and the discount as its own line. "
        "Guests see no change. The discount rate comes from settings (members.discount_rate), "
        "not from a constant. Keep the existing rounding: half-even, to the cent, per line. "
        "Touch only the cart service and its templates; the payment service is out of scope."
    ),
    "criteria": [
        {
            "text": "A member's cart total is discounted by the configured rate before tax",
            "kind": "test",
            "verify_ref": "tests.cart.test_discount.test_member_discount_before_tax",
        },
        {
            "text": "Gift cards in a member's cart are never discounted",
            "kind": "test",
            "verify_ref": "tests.cart.test_discount.test_gift_cards_not_discounted",
        },
        {"text": "The order summary and the email show the discount as its own line", "kind": "review"},
    ],
    "evidence": (
        "Added Cart.member_discount() and applied it in Cart.total() before tax and shipping; "
        "gift cards are skipped by product type. The rate is read from settings "
        "members.discount_rate (default 0.10). Templates cart.html, summary.html and "
        "confirmation.txt show a 'Member discount' line. Tests: test_member_discount_before_tax "
        "and test_gift_cards_not_discounted pass; the full suite passes (412 tests). Rounding "
        "unchanged (half-even per line)."
    ),
}
MINIMAL: dict[str, Any] = {
    "title": "t",
    "description": "",
    "criteria": [{"text": "works", "kind": "review"}],
    "evidence": "done",
}
SHA = "3f2a9c1b7e5d4a6f8b0c2e4d6a8b0c1d2e3f4a5b"
HUMAN_CLAIMS = {
    "sub": "4a7c-11",
    "cognito:username": "carol",
    "email": "carol@example.com",
    "iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_bench",
    "token_use": "id",
    "aud": "bench",
}


@dataclass
class Run:
    """The stack, its meter, and what the lifecycles cost outside DynamoDB."""

    stack: Any
    meter: Meter
    step: str = "setup"
    invocations: Counter[tuple[str, str]] = field(default_factory=Counter)  # (step, function)
    http: Counter[str] = field(default_factory=Counter)  # API Gateway requests by step
    own_s: defaultdict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    io_s: Counter[tuple[str, str]] = field(default_factory=Counter)  # DynamoDB latency (LATENCY_S)
    log_bytes: int = 0

    def invoke(
        self, function: str, handler: Callable[[dict[str, Any], Any], Any], event: dict[str, Any]
    ) -> Any:
        m, where = self.meter, (self.step, function)
        moto, latency = m.moto_s, m.latency_s
        started = time.perf_counter()
        with m.counting(*where):
            out = self.stack.invoke(handler, event)
        self.own_s[where].append(time.perf_counter() - started - (m.moto_s - moto))
        self.io_s[where] += m.latency_s - latency
        self.invocations[where] += 1
        buffer = self.stack.output.buffer  # what the function printed: its log lines and metrics
        self.log_bytes += len(buffer.getvalue().encode()) + PLATFORM_LOG_BYTES
        buffer.seek(0)
        buffer.truncate()
        return out

    def gb_s(self) -> Counter[tuple[str, str]]:
        """Lambda GB-seconds by (step, function): the median compute of its invocations here
        (robust to this shared machine's hiccups), slowed to the vCPU share its memory buys,
        plus the DynamoDB latency of its requests, each invocation rounded up to 1 ms."""
        out: Counter[tuple[str, str]] = Counter()
        for (step, function), runs in self.own_s.items():
            compute = statistics.median(runs) * max(1.0, FULL_VCPU_MB / MEMORY_MB[function])
            billed = math.ceil((compute + self.io_s[(step, function)] / len(runs)) * 1000) / 1000
            out[(step, function)] = billed * len(runs) * MEMORY_MB[function] / 1024
        return out

    # -- requests as API Gateway delivers them -----------------------------------------------

    def _authorized(self, key: str, event: dict[str, Any]) -> dict[str, Any]:
        """The key authorizer's answer attached, as API Gateway does after it said yes."""
        from taskgate.cloud import authorizer

        path = event["rawPath"]
        method = event["requestContext"]["http"]["method"]
        check = {
            "version": "2.0",
            "type": "REQUEST",
            "routeArn": f"arn:aws:execute-api:us-east-1:123456789012:abc123/$default/{method}{path}",
            "identitySource": [f"Bearer {key}"],
            "routeKey": f"ANY {path}",
            "rawPath": path,
            "headers": dict(event["headers"]),
            "requestContext": {**event["requestContext"], "requestId": uuid.uuid4().hex},
        }
        answer = self.invoke("authorizer", authorizer.handler, check)
        assert answer["isAuthorized"], answer
        event["requestContext"]["authorizer"] = {"lambda": answer["context"]}
        return event

    def rest(self, method: str, path: str, body: Any = None, *, key: str | None = None) -> Any:
        """One REST call: a human's (JWT claims checked by API Gateway) or a verifier key's."""
        from tests.mcp.events import response_json, v2_event

        from taskgate.cloud import api

        self.http[self.step] += 1
        bearer = {"authorization": f"Bearer {key or 'cognito-id-token'}"}
        event = v2_event(
            body, method=method, path=path, headers=bearer, jwt_claims=None if key else HUMAN_CLAIMS
        )
        event["requestContext"]["requestId"] = uuid.uuid4().hex
        if key is not None:
            event = self._authorized(key, event)
        response = self.invoke("api", api.handler, event)
        if response["statusCode"] >= 300:
            raise RuntimeError(f"{method} {path}: {response['statusCode']} {response.get('body')}")
        return response_json(response)

    def tool(self, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One MCP tool call: the key authorizer, then the MCP function."""
        from tests.mcp.events import LEGACY, mcp_headers, response_json, rpc, v2_event

        from taskgate.cloud import mcp

        self.http[self.step] += 1
        body = rpc("tools/call", {"name": name, "arguments": arguments}, version=LEGACY)
        event = v2_event(body, headers=mcp_headers(key, LEGACY, body))
        event["requestContext"]["requestId"] = uuid.uuid4().hex
        response = self.invoke("mcp", mcp.handler, self._authorized(key, event))
        result: dict[str, Any] = response_json(response)["result"]
        if result.get("isError"):
            raise RuntimeError(f"{name}: {result['content'][0]['text']}")
        return dict(result["structuredContent"])

    def stream(self) -> None:
        """Deliver the table's new stream records the dispatcher's filter passes (one batch)."""
        from tests.functions.stack import stream_event

        from taskgate.cloud import dispatcher

        records = self.stack.delivered(self.stack.new_records())
        if records:
            self.invoke("dispatcher", dispatcher.handler, stream_event(records))


@dataclass
class Keys:
    agent: str
    local: str | None = None
    reviewer: str | None = None


def lifecycle(run: Run, project: str, text: dict[str, Any], keys: Keys, spec_id: str | None) -> None:
    run.step = "create"
    body: dict[str, Any] = {"title": text["title"], "description": text["description"]}
    body |= {"spec_id": spec_id} if spec_id else {"criteria": text["criteria"]}
    task_id = run.rest("POST", f"/api/projects/{project}/tasks", body)["task"]["id"]
    run.step = "claim"
    token = run.tool(keys.agent, "claim_task", {"project": project, "task_id": task_id})["claim_token"]
    run.step = "heartbeat"
    for _ in range(2):
        run.tool(keys.agent, "heartbeat", {"task_id": task_id, "claim_token": token})
    run.step = "submit"
    run.tool(
        keys.agent,
        "submit_task",
        {"task_id": task_id, "claim_token": token, "commit_sha": SHA, "evidence": text["evidence"]},
    )
    if keys.local is not None:
        verify(run, task_id, keys)
    run.step = "accept"
    done = run.rest("POST", f"/api/tasks/{task_id}/accept")
    assert done["status"] == "done", done


def verify(run: Run, task_id: str, keys: Keys) -> None:
    """What verification adds: the dispatcher on the submission's stream record, then
    `taskgate verify --task`'s REST calls (start a run, the reviewer's answer, finish it with
    passing evidence), and the dispatcher on the records those writes make."""
    from tests.support.evidence import CHECK, OK, local_results, review_results

    from taskgate.domain.outcome import Evidence

    assert keys.local is not None and keys.reviewer is not None
    run.step = "dispatch"
    run.stream()
    run.step = "verify"
    work = run.rest("POST", "/api/verifier/runs", {"task_id": task_id}, key=keys.local)
    base = f"/api/verifier/runs/{task_id}/{work['run_id']}"
    review = review_results(work["criteria"], Evidence.PASS)
    if review:
        run.rest("POST", f"{base}/review", {"results": _json(review)}, key=keys.reviewer)
    finish = {
        "checks": {CHECK: OK.model_dump(mode="json")},
        "results": _json(local_results(work["criteria"], Evidence.PASS)),
        "error": None,
    }
    assert run.rest("POST", f"{base}/finish", finish, key=keys.local)["task_status"] == "verified"
    run.step = "dispatch"
    run.stream()


def _json(results: dict[str, Any]) -> dict[str, Any]:
    return {cid: r.model_dump(mode="json") for cid, r in results.items()}


def setup(run: Run, *, spec: bool, verification: bool, text: dict[str, Any]) -> tuple[str, Keys, str | None]:
    """The project, an agent key (and a spec, verifier keys and config), through the services:
    not counted."""
    from tests.support.evidence import CONFIG

    from taskgate.domain.models import CredentialKind, CriterionInput, VerifierKind
    from taskgate.domain.principals import acting, human
    from taskgate.service import keys, projects, specs

    ctx, admin, project = run.stack.ctx, acting(human("carol")), "shop"
    projects.create(ctx, admin, project, repo="https://git.example.com/shop.git")
    minted = Keys(agent=keys.create(ctx, admin, kind=CredentialKind.AGENT, name="builder").secret)
    spec_id = None
    if spec:
        made = specs.create(
            ctx,
            admin,
            project,
            title="Member discount",
            body=text["description"],
            criteria=[CriterionInput.model_validate(c) for c in text["criteria"]],
        )
        specs.approve(ctx, admin, project, made.id)
        spec_id = made.id
    if verification:
        for kind in (VerifierKind.LOCAL, VerifierKind.REVIEWER):
            secret = keys.create(
                ctx, admin, kind=CredentialKind.VERIFIER, name=f"ci-{kind.value}", verifier_kind=kind
            ).secret
            setattr(minted, kind.value, secret)
        projects.set_verifier_config(ctx, admin, project, CONFIG)
        projects.set_verification(ctx, admin, project, True)
    run.stack.new_records()  # the setup's stream records are nobody's lifecycle
    return project, minted, spec_id


# -- report ------------------------------------------------------------------------------------


def fmt(x: float) -> str:
    return f"{x:.4f}".rstrip("0").rstrip(".") or "0"


@dataclass
class Figures:
    requests: float  # DynamoDB requests of the use cases, per lifecycle
    auth_requests: float  # key lookups authenticating requests (functions and authorizer)
    wru: float
    rru: float
    invocations: float
    gb_s: float
    http: float
    log_bytes: float
    kms_signs: float = 0.0  # kms:Sign per lifecycle: one per decided run and per acceptance

    @property
    def kms_usd(self) -> float:
        return self.kms_signs * USD_PER_KMS_ASYMMETRIC_REQUEST

    @property
    def dynamodb_usd(self) -> float:
        return self.wru * USD_PER_WRU + self.rru * USD_PER_RRU

    @property
    def lambda_usd(self) -> float:
        return self.invocations * USD_PER_LAMBDA_REQUEST + self.gb_s * USD_PER_LAMBDA_GB_S

    @property
    def http_usd(self) -> float:
        return self.http * USD_PER_HTTP_API_REQUEST

    @property
    def usd(self) -> float:
        return self.dynamodb_usd + self.lambda_usd + self.http_usd + self.kms_usd

    @property
    def other_usd(self) -> float:
        """CloudFront in front of every request, log ingestion, an X-Ray trace per invocation."""
        return (
            self.http * USD_PER_CLOUDFRONT_REQUEST
            + self.log_bytes / 1e9 * USD_PER_LOG_GB
            + self.invocations * USD_PER_TRACE
        )


def is_auth(key: tuple[str, str, str, str]) -> bool:
    _, function, op, read = key
    return function == "authorizer" or (op == "GetItem" and read == "credential")


def report(run: Run, n: int) -> Figures:
    u = run.meter.usage

    def by(counter: Counter[Any], key: Callable[[Any], str]) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for k, v in counter.items():
            out[key(k)] += v / n
        return dict(sorted(out.items()))

    def line(title: str, values: dict[str, float]) -> None:
        print(f"  {title}: " + " ".join(f"{k}={fmt(v)}" for k, v in values.items() if v))

    use_cases = Counter({k: v for k, v in u.requests.items() if not is_auth(k)})
    auth = Counter({k: v for k, v in u.requests.items() if is_auth(k)})
    line("requests by kind", by(use_cases, lambda k: k[2] + (f"({k[3]})" if k[3] else "")))
    line("requests by step", by(use_cases, lambda k: k[0]))
    line("auth requests by function", by(auth, lambda k: k[1]))
    line("wru by item and index", by(u.wru, lambda k: k[1]))
    line("wru by step", by(u.wru, lambda k: k[0]))
    line("rru by read", by(u.rru, lambda k: k[1]))
    line("rru by step", by(u.rru, lambda k: k[0]))
    line("lambda invocations", by(run.invocations, lambda k: k[1]))
    gb_s = run.gb_s()
    line("lambda gb_s (estimated)", by(gb_s, lambda k: k[1]))
    line("http api requests", by(run.http, lambda k: k))
    return Figures(
        requests=sum(use_cases.values()) / n,
        auth_requests=sum(auth.values()) / n,
        wru=sum(u.wru.values()) / n,
        rru=sum(u.rru.values()) / n,
        invocations=sum(run.invocations.values()) / n,
        gb_s=sum(gb_s.values()) / n,
        http=sum(run.http.values()) / n,
        log_bytes=run.log_bytes / n,
    )


def measure(n: int, *, text: dict[str, Any], spec: bool, verification: bool) -> tuple[Figures, float]:
    import warnings

    from tests.functions.stack import stack

    from taskgate import runtime
    from taskgate.store.schema import dynamodb_table_definition

    # Powertools warns when an invocation published no metric (a heartbeat counts none).
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    with stack() as s:
        client = runtime.context().store._client  # type: ignore[attr-defined]
        meter = Meter(client, s.dynamodb, s.table, dynamodb_table_definition(s.table))
        run = Run(s, meter)
        project, keys, spec_id = setup(run, spec=spec, verification=verification, text=text)
        signs: Counter[str] = Counter()
        attestor = runtime.context().attestor  # the stack's KMS attestation key
        if attestor is not None:
            kms = attestor.signer._client  # type: ignore[attr-defined]
            kms.meta.events.register("before-call.kms.Sign", lambda **_: signs.update(["Sign"]))
        started = time.perf_counter()
        for _ in range(n):
            lifecycle(run, project, text, keys, spec_id)
        elapsed = time.perf_counter() - started
        figures = report(run, n)
        figures.kms_signs = signs["Sign"] / n
        return figures, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1000, help="lifecycles to run (default 1000)")
    parser.add_argument(
        "--text",
        choices=["typical", "minimal"],
        default="typical",
        help="task text: typical (a real task's title, description, 3 criteria, evidence) "
        "or minimal (bench/lifecycle.py's one-word task)",
    )
    parser.add_argument("--spec", action="store_true", help="tasks under an approved spec")
    parser.add_argument(
        "--verification", action="store_true", help="verification on: dispatcher and verifier run"
    )
    args = parser.parse_args()
    text = TYPICAL if args.text == "typical" else MINIMAL
    print(
        f"lifecycles={args.n} text={args.text} spec={'yes' if args.spec else 'no'} "
        f"verification={'on' if args.verification else 'off'} prices={PRICES_AS_OF!r}"
    )
    f, elapsed = measure(args.n, text=text, spec=args.spec, verification=args.verification)
    print(
        f"  per lifecycle: auth_requests={fmt(f.auth_requests)} all_requests={fmt(f.requests + f.auth_requests)} "
        f"lambda_invocations={fmt(f.invocations)} lambda_gb_s={fmt(f.gb_s)} http_api_requests={fmt(f.http)} "
        f"log_bytes={f.log_bytes:.0f} (moto run: {args.n / elapsed:.1f} lifecycles/s)"
    )
    k = 1000
    print(
        f"  per 1,000 lifecycles (usd): dynamodb={f.dynamodb_usd * k:.4f} lambda={f.lambda_usd * k:.4f} "
        f"http_api={f.http_usd * k:.4f}; not in the figure below: cloudfront+logs+xray={f.other_usd * k:.4f} "
        f"(all in: {(f.usd + f.other_usd) * k:.4f})"
    )
    print(
        f"requests_per_lifecycle={fmt(f.requests)} wru_per_lifecycle={fmt(f.wru)} rru_per_lifecycle={fmt(f.rru)}"
    )
    print(
        f"  signing: kms_sign_per_lifecycle={fmt(f.kms_signs)} kms_usd_per_1000_lifecycles={f.kms_usd * k:.4f}"
    )
    print(f"cost_per_1000_lifecycles_usd={f.usd * k:.4f}")


if __name__ == "__main__":
    main()
