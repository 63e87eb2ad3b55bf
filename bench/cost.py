"""What task lifecycles cost on AWS, all in, priced per 1,000 lifecycles; and with
--verification what one verification costs on Fargate; with --verification --fleet what a
fleet's verifications cost under one task per submission and under draining.

    python bench/cost.py [--n 50] [--text typical|minimal] [--spec] [--verification]
                         [--agents-via api|cloudfront] [--fleet-rate 0.1]
                         [--tracing ...] [--platform-log-level ...] [--auth-cache-s ...]
    python bench/cost.py --verification --fleet [--submissions 100] [--window-s 600]
                         [--check-wall-s S] [--container-start-s 30] [--concurrency N] [--idle-s S]
    python bench/cost.py --smoke

A lifecycle is: a human creates a task (REST, from the board), an agent claims it, heartbeats
twice and submits (MCP), a human accepts it (REST). It runs through the real Lambda handlers of
the stack (`taskgate.cloud.api`, `.mcp`, `.authorizer`, and with --verification `.dispatcher`
and the verifier's REST calls), in process, on DynamoDB served by moto with the table exactly as
template.yaml and store/schema.py define it (tests/functions/stack.py builds it). So the count
holds everything that really runs: the key lookups of the authorizer and of the MCP function,
the claim's brief, the accept's cascade query, the dispatcher's reads and writes.

What the stack is set to comes from template.yaml's defaults (read here, printed on the first
line): TracingMode, LogLevel, PlatformLogLevel, LogRetentionDays, the key authorizer's cache
(AgentKeyCacheSeconds, keyed by the Authorization header) and the verifier's size and capacity.

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

Lambda: one request per invocation. The key authorizer runs only when API Gateway has no fresh
answer for the request's Authorization header: the agent's calls are placed on a clock (its
heartbeats every HEARTBEAT_S, as the claim tells it to send them; its next claim NEXT_CLAIM_S
after a submit) and the cache holds an answer for the template's TTL. Duration: the handler's
own CPU time measured here (scaled to the share of a vCPU its memory buys) plus the DynamoDB
latency of its requests (see LATENCY_S). HTTP API: one request per REST or MCP call.

The rest of what a request costs in the deployed stack, each its own line item:
- CloudFront: a request for what the template routes through it. The board's API calls always
  (the board is on CloudFront, same origin); agents' MCP calls with --agents-via cloudfront
  (the McpCloudFrontUrl output); the verifier calls the API's own URL (its TASKGATE_SERVER).
- data out: each response's body and headers, at CloudFront's rate (gzip-compressed, as its
  cache behaviours do for a browser) or API Gateway's (uncompressed).
- logs: what the functions print at the template's LogLevel (measured), Lambda's START/REPORT
  lines if PlatformLogLevel keeps them, and the HTTP API's access log line per request (its
  format from the template, filled with sample values); ingestion, and storage for the
  retention.
- X-Ray: traces per TracingMode (see traces_per_lifecycle).

Prints, per request kind and per store item kind and index, where the units go; each line item
per 1,000 lifecycles; then
    requests_per_lifecycle=<n> wru_per_lifecycle=<n> rru_per_lifecycle=<n>
with --verification, per capacity (FARGATE on-demand, FARGATE_SPOT)
    cost_per_1000_verifications_usd[<capacity>]=<x>
and last
    cost_per_1000_lifecycles_usd=<x>
which is every line item. `requests_per_lifecycle` counts the DynamoDB requests of the use
cases (the services, as bench/lifecycle.py counts them); the key lookups that authenticate each
request are printed as `auth_requests` and are in the units and the price.

With --verification the verifier's wall time is measured by running bench/verify_overhead.py
(its repository, --check-seconds of checks, --verify-runs runs), or given (--check-wall-s); the
container's start on Fargate (image pull included, which Fargate bills) is CONTAINER_START_S, an
estimate.

--smoke: one lifecycle with verification on, the verifier's wall time given, then the fleet's
pricing as --fleet prints it, in one process (the stack's modules take most of its seconds).

--fleet (with --verification) prices the verifier tasks alone, for a fleet's load: --submissions
arriving at random (seeded) over --window-s, each verification taking the wall time measured as
above (or --check-wall-s). Two ways, each on-demand and on Spot:
- one task per submission (the stack before draining): each billed from its image pull to its
  end, a minute at least;
- draining (service/dispatch.py): a submission starts a task only when fewer than
  --concurrency (VerifierConcurrency) run and the queue holds more than the running ones take;
  a task verifies the queue in order, looks for more every DRAIN_POLL_S, and exits --idle-s
  (VerifierIdleSeconds) after its last run, plus the look it takes after giving its slot back.
Each task pays its secrets once; logs are per verification. The control plane (Lambda,
DynamoDB) is the same both ways and left out. Prints the tasks, billed task-seconds, the
submit-to-verdict p50/p95 of each way, its cost per 1,000 verifications, and last
    drain_cost_ratio=<draining / one task per submission, on-demand>
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import math
import random
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
# bench/ too: cloud-e2e imports this module as bench.cost, where benchkit is not on the path.
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "bench")]

from benchkit import smoke  # noqa: E402

# -- prices ------------------------------------------------------------------------------------
# Published on-demand prices, US East (N. Virginia), past the free tiers. Each line names its
# page and when it was read; check the page before relying on a figure.
PRICES_AS_OF = "AWS pricing pages as read in 2025 (dates per line in bench/cost.py), us-east-1"
# https://aws.amazon.com/dynamodb/pricing/on-demand/ (rates in force since 2024-11-01), Standard class
USD_PER_WRU = 0.625 / 1e6
USD_PER_RRU = 0.125 / 1e6
# https://aws.amazon.com/lambda/pricing/ (read 2025): requests; arm64 duration, first 7.5 billion GB-s
USD_PER_LAMBDA_REQUEST = 0.20 / 1e6
USD_PER_LAMBDA_GB_S = 0.0000133334
# https://aws.amazon.com/api-gateway/pricing/ (read 2025): HTTP API, first 300 million requests a month
USD_PER_HTTP_API_REQUEST = 1.00 / 1e6
# https://aws.amazon.com/cloudfront/pricing/ (read 2025): HTTPS requests and data out, US/Europe,
# first 10 TB (origin fetches from an AWS origin are free)
USD_PER_CLOUDFRONT_REQUEST = 0.0100 / 10_000
USD_PER_CLOUDFRONT_GB_OUT = 0.085
# https://aws.amazon.com/ec2/pricing/on-demand/#Data_Transfer (read 2025): data out to the internet,
# first 10 TB a month; API Gateway bills its responses at this rate
USD_PER_INTERNET_GB_OUT = 0.09
# https://aws.amazon.com/cloudwatch/pricing/ (read 2025): Logs ingestion, Standard class (Lambda's
# logs are "vended" logs since 2024-05-01: $0.50 per GB for the first 10 TB, the same); storage per
# GB-month (billed on the compressed size: pricing it uncompressed is an upper bound)
USD_PER_LOG_GB = 0.50
USD_PER_LOG_GB_MONTH = 0.03
# https://aws.amazon.com/xray/pricing/ (read 2025): traces recorded
USD_PER_TRACE = 5.00 / 1e6
# https://aws.amazon.com/fargate/pricing/ (read 2025): Linux per vCPU-hour and per GB-hour; arm64
# on-demand, and x86_64 on-demand and Spot (Fargate Spot has no arm64 capacity; its price moves with
# spare capacity and the page advertises "up to 70%" off: priced here at 70% under on-demand x86_64)
FARGATE_USD_H = {
    ("FARGATE", "ARM64"): (0.03238, 0.00356),
    ("FARGATE", "X86_64"): (0.04048, 0.004445),
    ("FARGATE_SPOT", "X86_64"): (0.04048 * 0.3, 0.004445 * 0.3),
}
# https://aws.amazon.com/vpc/pricing/ (in force since 2024-02-01): a public IPv4 address per hour
USD_PER_PUBLIC_IPV4_H = 0.005
# https://aws.amazon.com/secrets-manager/pricing/ (read 2025): per 10,000 API calls
USD_PER_SECRET_CALL = 0.05 / 10_000
# https://aws.amazon.com/kms/pricing/ (read 2026-12): kms:Sign is an asymmetric request, $0.15 per
# 10,000, except with an RSA 2048 key, $0.03 per 10,000 as symmetric requests (the page's calculator
# counts "asymmetric requests involving RSA 2048" apart; AWS's price list names it usagetype
# KMS-Requests-Asymmetric-RSA_2048, priced at $0.03 per 10k in us-east-1 as infracost's price
# tests read it, 2026-12). The key itself is $1 a month whatever the traffic: not per lifecycle.
USD_PER_KMS_SIGN = {"RSA_2048": 0.03 / 10_000, "ECC_NIST_P256": 0.15 / 10_000}

# Memory of each function in template.yaml (MB).
MEMORY_MB = {"mcp": 1024, "api": 1024, "authorizer": 512, "dispatcher": 512}
FULL_VCPU_MB = 1769  # Lambda gives a function one full vCPU at 1,769 MB, a share below that
# DynamoDB latency per request inside the function, seconds. Writes: as measured on DynamoDB
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
# Lambda's own START and REPORT lines per invocation in the JSON log format (a sample of each,
# ~250 and ~350 bytes): written when the template's PlatformLogLevel is INFO or DEBUG.
PLATFORM_LOG_BYTES = 600
# Response headers API Gateway (or CloudFront) adds to a body (date, content type and length,
# request id, apigw-requestid, via...): a sample's size, for data out.
RESPONSE_HEADER_BYTES = 350
# Lambda's own tracing when TracingMode is Active: the first request each second and 5% of the
# rest, per function ("Using AWS Lambda with AWS X-Ray": the rate cannot be configured).
LAMBDA_TRACE_RESERVOIR_PER_S, LAMBDA_TRACE_RATE = 1.0, 0.05
# A Fargate task is billed from the start of its image pull to its end, per second, one minute at
# least (Fargate pricing page). Pull plus start cannot be measured here (no Fargate): this is an
# estimate for a ~0.3 GB image (docs/deploy.md), to be replaced by a measured figure with
# --container-start-s.
CONTAINER_START_S = 30.0
BILLING_MINIMUM_S = 60.0
# The verifier's secret references (template.yaml: verifier_key, reviewer_key, git_token), each
# fetched when its task starts.
SECRET_CALLS_PER_TASK = 3
# What a verifier container logs per run (its progress lines and the verdict): a sample's size.
VERIFIER_LOG_BYTES = 2000

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
        # CPU time (process_time: this machine is shared, so wall time would count other
        # processes' work) spent in moto and in this meter's own reads: not the function's.
        self.moto_s = 0.0
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
        began = time.process_time()
        op = model.name
        before = [(k, key, self._get(key)) for k, key in self._written(op, params)] if op in WRITES else []
        context["cost"] = (op, params, before, began)

    def _after(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if "cost" not in context or self.where is None:
            return
        op, params, before, began = context.pop("cost")
        try:
            self._count(op, params, parsed, before)
        finally:
            self.moto_s += time.process_time() - began

    def _count(self, op: str, params: dict[str, Any], parsed: dict[str, Any], before: list[Any]) -> None:
        assert self.where is not None
        self.latency_s += LATENCY_S[op]
        step, function = self.where
        u = self.usage
        read = item_kind(params["Key"]) if op == "GetItem" else ""
        u.requests[(step, function, op, read)] += 1
        failed = "Error" in parsed
        if op in WRITES:
            # A transaction costs twice the units of each item; a cancelled one, or a failed
            # conditional write, still costs its items, but writes no index.
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
# The agent's clock between its calls (only API Gateway's authorizer cache reads it): heartbeats
# as the claim tells an agent to send them (every lease/2 minutes: 15 with the default 30-minute
# lease), the submit one interval after the last, the next claim a few seconds after the submit.
HEARTBEAT_S = 15 * 60.0
NEXT_CLAIM_S = 5.0
HUMAN_CLAIMS = {
    "sub": "4a7c-11",
    "cognito:username": "carol",
    "email": "carol@example.com",
    "iss": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_bench",
    "token_use": "id",
    "aud": "bench",
}


@dataclass(frozen=True)
class Settings:
    """What template.yaml deploys by default that the price depends on."""

    tracing: str  # TracingMode
    log_level: str  # LogLevel (the functions' application logs)
    platform_log_level: str  # PlatformLogLevel (Lambda's START/REPORT lines)
    retention_days: int  # LogRetentionDays
    auth_ttl_s: int  # the key authorizer's result cache (AuthorizerResultTtlInSeconds)
    auth_cache_key: tuple[str, ...]  # its identity sources: the cache key
    access_log_format: str  # the HTTP API stage's access log line
    verifier_cpu: int  # Fargate CPU units
    verifier_memory_mb: int
    verifier_capacity: str  # FARGATE | FARGATE_SPOT
    verifier_arch: dict[str, str]  # capacity -> CPU architecture of the task definition
    attestation_key_spec: str  # AttestationKeySpec: what a kms:Sign costs
    verifier_concurrency: int = 2  # VerifierConcurrency: draining tasks per project at once
    verifier_idle_s: float = 30.0  # VerifierIdleSeconds: a draining task's wait for more work

    @classmethod
    def from_template(cls) -> Settings:
        from tests.functions.stack import template

        tpl = template()
        params, res = tpl["Parameters"], tpl["Resources"]

        def value(node: Any) -> Any:
            return params[node["Ref"]]["Default"] if isinstance(node, dict) and "Ref" in node else node

        logging = res["McpFunction"]["Properties"]["LoggingConfig"]
        auth = res["AgentKeyAuthorizer"]["Properties"]
        arch = res["VerifierTaskDefinition"]["Properties"]["RuntimePlatform"]["CpuArchitecture"]
        condition, spot_arch, on_demand_arch = (
            arch["Fn::If"] if isinstance(arch, dict) else (None, arch, arch)
        )
        assert condition in (None, "SpotVerifier"), condition
        return cls(
            tracing=value(tpl["Globals"]["Function"]["Tracing"]),
            log_level=value(logging["ApplicationLogLevel"]),
            platform_log_level=value(logging["SystemLogLevel"]),
            retention_days=int(value(res["ApiLogs"]["Properties"]["RetentionInDays"])),
            auth_ttl_s=int(value(auth["AuthorizerResultTtlInSeconds"])),
            auth_cache_key=tuple(auth["IdentitySource"]),
            access_log_format=res["HttpApiStage"]["Properties"]["AccessLogSettings"]["Format"],
            verifier_cpu=int(value(res["VerifierTaskDefinition"]["Properties"]["Cpu"])),
            verifier_memory_mb=int(value(res["VerifierTaskDefinition"]["Properties"]["Memory"])),
            verifier_capacity=value({"Ref": "VerifierCapacity"}),
            verifier_arch={"FARGATE": on_demand_arch, "FARGATE_SPOT": spot_arch},
            attestation_key_spec=value({"Ref": "AttestationKeySpec"}),
            verifier_concurrency=int(value({"Ref": "VerifierConcurrency"})),
            verifier_idle_s=float(value({"Ref": "VerifierIdleSeconds"})),
        )

    def access_log_bytes(self, route: str, status: int) -> int:
        """One access log line of the HTTP API stage, its format filled with sample values."""
        sample = {
            "requestId": "JQ3fWg1SIAMEbVQ=",
            "identity.sourceIp": "203.0.113.10",
            "routeKey": route,
            "status": str(status),
            "responseLatency": "38",
            "integrationErrorMessage": "-",
            "authorizer.error": "-",
        }
        line = self.access_log_format
        for name in sorted(sample, key=len, reverse=True):
            line = line.replace(f"$context.{name}", sample[name])
        assert "$context." not in line, line
        return len(line.encode()) + 1


@dataclass
class Run:
    """The stack, its meter, and what the lifecycles cost outside DynamoDB."""

    stack: Any
    meter: Meter
    settings: Settings
    agents_via_cloudfront: bool
    heartbeat_s: float
    step: str = "setup"
    invocations: Counter[tuple[str, str]] = field(default_factory=Counter)  # (step, function)
    http: Counter[str] = field(default_factory=Counter)  # API Gateway requests by step
    cloudfront: Counter[str] = field(default_factory=Counter)  # of those, through CloudFront
    bytes_out: Counter[str] = field(default_factory=Counter)  # "cloudfront" | "api": bytes sent out
    own_s: defaultdict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    io_s: Counter[tuple[str, str]] = field(default_factory=Counter)  # DynamoDB latency (LATENCY_S)
    log_bytes: int = 0  # the functions' lines (and Lambda's own, at PlatformLogLevel INFO)
    access_log_bytes: int = 0
    # The agent's clock, and API Gateway's authorizer cache: Authorization header -> (answer, until)
    clock: float = 0.0
    auth_cache: dict[str, tuple[dict[str, Any], float]] = field(default_factory=dict)
    auth_cache_hits: int = 0

    def invoke(
        self, function: str, handler: Callable[[dict[str, Any], Any], Any], event: dict[str, Any]
    ) -> Any:
        m, where = self.meter, (self.step, function)
        moto, latency = m.moto_s, m.latency_s
        started = time.process_time()
        with m.counting(*where):
            out = self.stack.invoke(handler, event)
        self.own_s[where].append(time.process_time() - started - (m.moto_s - moto))
        self.io_s[where] += m.latency_s - latency
        self.invocations[where] += 1
        buffer = self.stack.output.buffer  # what the function printed: its log lines and metrics
        self.log_bytes += len(buffer.getvalue().encode())
        if self.settings.platform_log_level in ("INFO", "DEBUG"):
            self.log_bytes += PLATFORM_LOG_BYTES
        buffer.seek(0)
        buffer.truncate()
        return out

    def gb_s(self) -> Counter[tuple[str, str]]:
        """Lambda GB-seconds by (step, function): the median CPU time of its invocations here
        (robust to this shared machine's hiccups), slowed to the vCPU share its memory buys,
        plus the DynamoDB latency of its requests, each invocation rounded up to 1 ms."""
        out: Counter[tuple[str, str]] = Counter()
        for (step, function), runs in self.own_s.items():
            compute = statistics.median(runs) * max(1.0, FULL_VCPU_MB / MEMORY_MB[function])
            billed = math.ceil((compute + self.io_s[(step, function)] / len(runs)) * 1000) / 1000
            out[(step, function)] = billed * len(runs) * MEMORY_MB[function] / 1024
        return out

    def _delivered(self, response: dict[str, Any], route: str, *, via_cloudfront: bool) -> None:
        """What API Gateway (and CloudFront in front, if the caller came that way) bill for one
        answered request beyond the request itself: the access log line, the bytes sent back."""
        self.http[self.step] += 1
        if via_cloudfront:
            self.cloudfront[self.step] += 1
        body = (response.get("body") or "").encode()
        if via_cloudfront and len(body) >= 1000:
            # The API's cache behaviours compress (Compress: true) for a viewer that accepts
            # gzip, as browsers do, bodies of 1,000 bytes or more. API Gateway does not compress.
            body = gzip.compress(body)
        size = len(body) + RESPONSE_HEADER_BYTES
        self.bytes_out["cloudfront" if via_cloudfront else "api"] += size
        self.access_log_bytes += self.settings.access_log_bytes(route, int(response["statusCode"]))

    # -- requests as API Gateway delivers them -----------------------------------------------

    def _authorized(self, key: str, event: dict[str, Any]) -> dict[str, Any]:
        """The key authorizer's answer attached, as API Gateway does after it said yes: from its
        result cache while the answer for this Authorization header is fresh (the template's
        identity source and TTL), else from an invocation."""
        from taskgate.cloud import authorizer

        assert self.settings.auth_cache_key == ("$request.header.Authorization",), (
            self.settings.auth_cache_key
        )
        header = f"Bearer {key}"
        cached = self.auth_cache.get(header)
        if cached is not None and cached[1] > self.clock:
            self.auth_cache_hits += 1
            event["requestContext"]["authorizer"] = {"lambda": cached[0]}
            return event
        path = event["rawPath"]
        method = event["requestContext"]["http"]["method"]
        check = {
            "version": "2.0",
            "type": "REQUEST",
            "routeArn": f"arn:aws:execute-api:us-east-1:123456789012:abc123/$default/{method}{path}",
            "identitySource": [header],
            "routeKey": f"ANY {path}",
            "rawPath": path,
            "headers": dict(event["headers"]),
            "requestContext": {**event["requestContext"], "requestId": uuid.uuid4().hex},
        }
        answer = self.invoke("authorizer", authorizer.handler, check)
        assert answer["isAuthorized"], answer
        if self.settings.auth_ttl_s > 0:
            self.auth_cache[header] = (answer["context"], self.clock + self.settings.auth_ttl_s)
        event["requestContext"]["authorizer"] = {"lambda": answer["context"]}
        return event

    def rest(self, method: str, path: str, body: Any = None, *, key: str | None = None) -> Any:
        """One REST call: a human's from the board (JWT claims checked by API Gateway; the board
        is on CloudFront, so are its API calls) or a verifier key's (the container calls the
        API's own URL, template.yaml's TASKGATE_SERVER)."""
        from tests.mcp.events import response_json, v2_event

        from taskgate.cloud import api

        bearer = {"authorization": f"Bearer {key or 'cognito-id-token'}"}
        event = v2_event(
            body, method=method, path=path, headers=bearer, jwt_claims=None if key else HUMAN_CLAIMS
        )
        event["requestContext"]["requestId"] = uuid.uuid4().hex
        if key is not None:
            event = self._authorized(key, event)
        response = self.invoke("api", api.handler, event)
        self._delivered(response, "ANY /api/{proxy+}", via_cloudfront=key is None)
        if response["statusCode"] >= 300:
            raise RuntimeError(f"{method} {path}: {response['statusCode']} {response.get('body')}")
        return response_json(response)

    def tool(self, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One MCP tool call: the key authorizer (or its cached answer), then the MCP function."""
        from tests.mcp.events import LEGACY, mcp_headers, response_json, rpc, v2_event

        from taskgate.cloud import mcp

        body = rpc("tools/call", {"name": name, "arguments": arguments}, version=LEGACY)
        event = v2_event(body, headers=mcp_headers(key, LEGACY, body))
        event["requestContext"]["requestId"] = uuid.uuid4().hex
        response = self.invoke("mcp", mcp.handler, self._authorized(key, event))
        self._delivered(response, "ANY /mcp", via_cloudfront=self.agents_via_cloudfront)
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
        run.clock += run.heartbeat_s
        run.tool(keys.agent, "heartbeat", {"task_id": task_id, "claim_token": token})
    run.step = "submit"
    run.clock += run.heartbeat_s
    run.tool(
        keys.agent,
        "submit_task",
        {"task_id": task_id, "claim_token": token, "commit_sha": SHA, "evidence": text["evidence"]},
    )
    if keys.local is not None:
        verify(run, task_id, keys)
    run.clock += NEXT_CLAIM_S  # the agent's next claim (under the same key) follows its submit
    run.step = "accept"
    done = run.rest("POST", f"/api/tasks/{task_id}/accept")
    assert done["status"] == "done", done


def verify(run: Run, task_id: str, keys: Keys) -> None:
    """What verification adds: the dispatcher on the submission's stream record, then
    `taskgate verify --task`'s REST calls (start a run, the reviewer's answer, finish it with
    passing evidence), and the dispatcher on the records those writes make."""
    from tests.support.evidence import CHECK, OK, local_results, review_results

    from taskgate.domain.run_report import Evidence

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
    """Per lifecycle."""

    requests: float  # DynamoDB requests of the use cases
    auth_requests: float  # key lookups authenticating requests (functions and authorizer)
    wru: float
    rru: float
    invocations: dict[str, float]  # Lambda invocations by function
    gb_s: float
    http: float  # HTTP API requests
    cloudfront: float  # of those, through CloudFront
    bytes_out_cloudfront: float
    bytes_out_api: float
    log_bytes: float  # the functions' lines (and Lambda's own at PlatformLogLevel INFO)
    access_log_bytes: float
    traces: float  # X-Ray traces recorded
    kms_signs: float = 0.0  # kms:Sign per lifecycle: one per decided run and per acceptance

    def items(self, settings: Settings) -> dict[str, float]:
        """Each charge of one lifecycle, usd."""
        log_gb = (self.log_bytes + self.access_log_bytes) / 1e9
        return {
            "dynamodb_writes": self.wru * USD_PER_WRU,
            "dynamodb_reads": self.rru * USD_PER_RRU,
            "lambda_requests": sum(self.invocations.values()) * USD_PER_LAMBDA_REQUEST,
            "lambda_duration": self.gb_s * USD_PER_LAMBDA_GB_S,
            "http_api": self.http * USD_PER_HTTP_API_REQUEST,
            "cloudfront_requests": self.cloudfront * USD_PER_CLOUDFRONT_REQUEST,
            "data_out": self.bytes_out_cloudfront / 1e9 * USD_PER_CLOUDFRONT_GB_OUT
            + self.bytes_out_api / 1e9 * USD_PER_INTERNET_GB_OUT,
            "log_ingestion": log_gb * USD_PER_LOG_GB,
            # kept for the retention, priced uncompressed (an upper bound)
            "log_storage": log_gb * USD_PER_LOG_GB_MONTH * settings.retention_days / 30,
            "xray_traces": self.traces * USD_PER_TRACE,
            "kms_sign": self.kms_signs * USD_PER_KMS_SIGN[settings.attestation_key_spec],
        }


def traces_per_lifecycle(settings: Settings, invocations: dict[str, float], fleet_rate: float) -> float:
    """X-Ray traces one lifecycle records. PassThrough: none (nothing upstream of the functions
    sends a sampled trace header: HTTP APIs and DynamoDB streams do not trace). Active: Lambda's
    own sampling per function, at the rate the fleet calls it (`fleet_rate` lifecycles/s spread
    evenly): every request up to one a second, then 5% of the rest."""
    if settings.tracing != "Active":
        return 0.0
    total = 0.0
    for per_lifecycle in invocations.values():
        rate = per_lifecycle * fleet_rate  # invocations/s of this function
        traced = min(rate, LAMBDA_TRACE_RESERVOIR_PER_S) + LAMBDA_TRACE_RATE * max(
            0.0, rate - LAMBDA_TRACE_RESERVOIR_PER_S
        )
        total += traced / fleet_rate
    return total


def is_auth(key: tuple[str, str, str, str]) -> bool:
    _, function, op, read = key
    return function == "authorizer" or (op == "GetItem" and read == "credential")


def report(run: Run, n: int, fleet_rate: float) -> Figures:
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
    invocations = by(run.invocations, lambda k: k[1])
    line("lambda invocations", invocations)
    gb_s = run.gb_s()
    line("lambda gb_s (estimated)", by(gb_s, lambda k: k[1]))
    line("http api requests", by(run.http, lambda k: k))
    line("of those through cloudfront", by(run.cloudfront, lambda k: k))
    return Figures(
        requests=sum(use_cases.values()) / n,
        auth_requests=sum(auth.values()) / n,
        wru=sum(u.wru.values()) / n,
        rru=sum(u.rru.values()) / n,
        invocations=invocations,
        gb_s=sum(gb_s.values()) / n,
        http=sum(run.http.values()) / n,
        cloudfront=sum(run.cloudfront.values()) / n,
        bytes_out_cloudfront=run.bytes_out["cloudfront"] / n,
        bytes_out_api=run.bytes_out["api"] / n,
        log_bytes=run.log_bytes / n,
        access_log_bytes=run.access_log_bytes / n,
        traces=traces_per_lifecycle(run.settings, invocations, fleet_rate),
    )


def measure(
    n: int,
    *,
    text: dict[str, Any],
    spec: bool,
    verification: bool,
    settings: Settings,
    agents_via_cloudfront: bool,
    fleet_rate: float,
) -> tuple[Figures, float, Run]:
    import logging
    import warnings

    from tests.functions.stack import stack

    from taskgate import runtime
    from taskgate.cloud import observe
    from taskgate.store.schema import dynamodb_table_definition

    # Powertools warns when an invocation published no metric (a heartbeat counts none).
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    observe.logger.setLevel(logging.getLevelName(settings.log_level.replace("WARN", "WARNING")))
    with stack(attestation_key_spec=settings.attestation_key_spec) as s:
        client = runtime.context().store._client  # type: ignore[attr-defined]
        meter = Meter(client, s.dynamodb, s.table, dynamodb_table_definition(s.table))
        run = Run(s, meter, settings, agents_via_cloudfront, HEARTBEAT_S)
        signs: Counter[str] = Counter()
        attestor = runtime.context().attestor  # the stack's KMS attestation key
        if attestor is not None:
            kms = attestor.signer._client  # type: ignore[attr-defined]
            kms.meta.events.register("before-call.kms.Sign", lambda **_: signs.update(["Sign"]))
        project, keys, spec_id = setup(run, spec=spec, verification=verification, text=text)
        started = time.perf_counter()
        for _ in range(n):
            lifecycle(run, project, text, keys, spec_id)
        elapsed = time.perf_counter() - started
        figures = report(run, n, fleet_rate)
        figures.kms_signs = signs["Sign"] / n
        return figures, elapsed, run


# -- a verification on Fargate -----------------------------------------------------------------


def verifier_wall_s(runs: int, check_seconds: float) -> list[float]:
    """Wall time of `taskgate verify --task` (checkout, checks, reports, the REST calls) on
    bench/verify_overhead.py's repository, measured by running that bench."""
    import re
    import subprocess

    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "verify_overhead.py"),
            "--runs",
            str(runs),
            "--check-seconds",
            str(check_seconds),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    walls = [float(m) for m in re.findall(r"process_s=([0-9.]+)", out)]
    if len(walls) != runs:
        raise RuntimeError(f"bench/verify_overhead.py printed {len(walls)} runs, not {runs}:\n{out}")
    return walls


def verification_usd(settings: Settings, capacity: str, wall_s: float, start_s: float) -> dict[str, float]:
    """One verifier task on Fargate, each charge in usd: billed from the image pull to the end,
    per second, a minute at least; its public IPv4 for as long; its secrets; its log lines."""
    arch = settings.verifier_arch[capacity]
    vcpu_h, gb_h = FARGATE_USD_H[(capacity, arch)]
    billed_h = max(BILLING_MINIMUM_S, math.ceil(start_s + wall_s)) / 3600
    return {
        "fargate_vcpu": settings.verifier_cpu / 1024 * vcpu_h * billed_h,
        "fargate_memory": settings.verifier_memory_mb / 1024 * gb_h * billed_h,
        "public_ipv4": USD_PER_PUBLIC_IPV4_H * billed_h,
        "secrets": SECRET_CALLS_PER_TASK * USD_PER_SECRET_CALL,
        "logs": VERIFIER_LOG_BYTES
        / 1e9
        * (USD_PER_LOG_GB + USD_PER_LOG_GB_MONTH * settings.retention_days / 30),
    }


# -- a fleet's verifications: one task per submission vs draining --------------------------------

DRAIN_POLL_S = 2.0  # cloud/ecs.py's DRAIN_POLL_S: a draining task's look at the queue
DRAIN_SETTLE_S = 1.0  # verifier/worker.py's DRAIN_SETTLE_S: its last look after giving the slot back


@dataclass(frozen=True)
class FleetTask:
    ready_at: float  # container started (after pull and start)
    end_at: float
    verifications: int
    start_s: float

    @property
    def billed_s(self) -> float:
        return max(BILLING_MINIMUM_S, math.ceil(self.start_s + self.end_at - self.ready_at))


@dataclass
class FleetRun:
    tasks: list[FleetTask]
    latencies: list[float]  # submit to verdict, per submission


def arrivals(n: int, window_s: float, seed: int) -> list[float]:
    """`n` submissions at random over the window (a Poisson process given its count)."""
    rng = random.Random(seed)
    return sorted(rng.uniform(0, window_s) for _ in range(n))


def one_task_each(times: list[float], wall_s: float, start_s: float) -> FleetRun:
    tasks = [FleetTask(t + start_s, t + start_s + wall_s, 1, start_s) for t in times]
    return FleetRun(tasks, [start_s + wall_s] * len(times))


def draining(
    times: list[float], wall_s: float, start_s: float, concurrency: int, idle_s: float, poll_s: float
) -> FleetRun:
    """Submissions in arrival order. Tasks take the oldest waiting one whenever free, so each
    goes to the task that can take it first (first in, first out over identical tasks): a busy
    task as its run ends, an idle one at its next look, one that gave its slot back at its last
    look. A task exits idle_s after its last run, plus that last look."""

    @dataclass
    class Task:
        ready_at: float
        free_at: float  # when its last run ends (its start, before any)
        done: int = 0

        def exit_at(self) -> float:
            return self.free_at + idle_s + DRAIN_SETTLE_S

        def takes_at(self, t: float) -> float:
            if t <= self.free_at:
                return self.free_at
            seen = self.free_at + math.ceil((t - self.free_at) / poll_s) * poll_s
            return seen if seen <= self.free_at + idle_s else self.exit_at()

    tasks: list[Task] = []
    verdicts: list[float] = []
    latencies: list[float] = []
    for t in times:
        running = [task for task in tasks if task.exit_at() > t]
        # What the dispatcher counts (service/dispatch.py): the submissions not decided yet,
        # this one included, against the live slots.
        queued = 1 + sum(1 for v in verdicts if v > t)
        if len(running) < min(concurrency, queued):
            started = Task(ready_at=t + start_s, free_at=t + start_s)
            tasks.append(started)
            running.append(started)
        task = min(running, key=lambda x: x.takes_at(t))
        task.free_at = task.takes_at(t) + wall_s
        task.done += 1
        verdicts.append(task.free_at)
        latencies.append(task.free_at - t)
    return FleetRun([FleetTask(x.ready_at, x.exit_at(), x.done, start_s) for x in tasks], latencies)


def task_usd(settings: Settings, capacity: str, task: FleetTask) -> float:
    """One task's charges: per billed second, its secrets once, its log lines per verification."""
    arch = settings.verifier_arch[capacity]
    vcpu_h, gb_h = FARGATE_USD_H[(capacity, arch)]
    billed_h = task.billed_s / 3600
    return (
        settings.verifier_cpu / 1024 * vcpu_h * billed_h
        + settings.verifier_memory_mb / 1024 * gb_h * billed_h
        + USD_PER_PUBLIC_IPV4_H * billed_h
        + SECRET_CALLS_PER_TASK * USD_PER_SECRET_CALL
        + task.verifications
        * VERIFIER_LOG_BYTES
        / 1e9
        * (USD_PER_LOG_GB + USD_PER_LOG_GB_MONTH * settings.retention_days / 30)
    )


def fleet(args: argparse.Namespace, settings: Settings) -> None:
    if args.check_wall_s is not None:
        wall, how = args.check_wall_s, "given"
    else:
        walls = verifier_wall_s(args.verify_runs, args.check_seconds)
        wall = statistics.median(walls)
        how = f"measured: bench/verify_overhead.py, checks {args.check_seconds:g} s, runs " + " ".join(
            f"{w:.2f}" for w in walls
        )
    concurrency = args.concurrency or settings.verifier_concurrency
    idle = args.idle_s if args.idle_s is not None else settings.verifier_idle_s
    times = arrivals(args.submissions, args.window_s, args.seed)
    print(
        f"fleet: submissions={args.submissions} window_s={args.window_s:g} verification_wall_s={wall:.2f} "
        f"({how}) container_start_s={args.container_start_s:g} concurrency={concurrency} idle_s={idle:g} "
        f"poll_s={DRAIN_POLL_S:g} cpu={settings.verifier_cpu} memory_mb={settings.verifier_memory_mb} "
        f"prices={PRICES_AS_OF!r}"
    )
    ways = {
        "per_submission": one_task_each(times, wall, args.container_start_s),
        "draining": draining(times, wall, args.container_start_s, concurrency, idle, DRAIN_POLL_S),
    }
    usd: dict[tuple[str, str], float] = {}
    for name, run in ways.items():
        assert sum(t.verifications for t in run.tasks) == len(times) == len(run.latencies), name
        lat = sorted(run.latencies)
        p50, p95 = statistics.median(lat), lat[min(len(lat) - 1, math.ceil(0.95 * len(lat)) - 1)]
        for capacity in ("FARGATE", "FARGATE_SPOT"):
            usd[(name, capacity)] = sum(task_usd(settings, capacity, t) for t in run.tasks)
        print(
            f"  {name}: tasks={len(run.tasks)} billed_task_s={sum(t.billed_s for t in run.tasks):.0f} "
            f"submit_to_verdict_p50_s={p50:.1f} p95_s={p95:.1f} "
            + " ".join(
                f"per_1000_verifications_usd[{c}]={usd[(name, c)] / len(times) * 1000:.4f}"
                for c in ("FARGATE", "FARGATE_SPOT")
            )
        )
    spot = usd[("draining", "FARGATE_SPOT")] / usd[("per_submission", "FARGATE_SPOT")]
    print(f"  drain_cost_ratio[FARGATE_SPOT]={spot:.3f} (goal <= 0.25)")
    print(f"drain_cost_ratio={usd[('draining', 'FARGATE')] / usd[('per_submission', 'FARGATE')]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # 50 by default: every figure but Lambda's CPU time is the same each lifecycle, and a run
    # on moto slows as its table grows (1,000 lifecycles take many minutes here).
    parser.add_argument("--n", type=int, default=50, help="lifecycles to run (default 50)")
    parser.add_argument(
        "--text",
        choices=["typical", "minimal"],
        default="typical",
        help="task text: typical (a real task's title, description, 3 criteria, evidence) "
        "or minimal (bench/lifecycle.py's one-word task)",
    )
    parser.add_argument("--spec", action="store_true", help="tasks under an approved spec")
    parser.add_argument(
        "--verification",
        action="store_true",
        help="verification on: dispatcher and verifier run, and one Fargate verification is priced",
    )
    parser.add_argument(
        "--agents-via",
        choices=["api", "cloudfront"],
        default="api",
        help="where agents send MCP: the API's own domain (the McpUrl output, default) or "
        "CloudFront (McpCloudFrontUrl)",
    )
    parser.add_argument(
        "--fleet-rate",
        type=float,
        default=0.1,
        help="lifecycles per second across the fleet, for X-Ray with TracingMode=Active (Lambda "
        "traces the first request each second per function) (default 0.1: ~8,600 a day)",
    )
    parser.add_argument("--tracing", choices=["PassThrough", "Active"], help="override TracingMode")
    parser.add_argument(
        "--platform-log-level", choices=["DEBUG", "INFO", "WARN"], help="override PlatformLogLevel"
    )
    parser.add_argument("--auth-cache-s", type=int, help="override AgentKeyCacheSeconds")
    parser.add_argument(
        "--attestation-key-spec", choices=sorted(USD_PER_KMS_SIGN), help="override AttestationKeySpec"
    )
    parser.add_argument("--verify-runs", type=int, default=3, help="verifier runs to time (--verification)")
    parser.add_argument(
        "--check-seconds", type=float, default=5.0, help="the checks' own time in those runs (default 5)"
    )
    parser.add_argument(
        "--container-start-s",
        type=float,
        default=CONTAINER_START_S,
        help=f"image pull and container start on Fargate, seconds (default {CONTAINER_START_S:.0f}, an estimate)",
    )
    parser.add_argument(
        "--fleet",
        action="store_true",
        help="with --verification: price a fleet's verifications, one task per submission vs draining "
        "(the lifecycles are not run)",
    )
    parser.add_argument("--submissions", type=int, default=100, help="--fleet: submissions (default 100)")
    parser.add_argument(
        "--window-s",
        type=float,
        default=600.0,
        help="--fleet: over how many seconds they arrive (default 600)",
    )
    parser.add_argument(
        "--check-wall-s",
        type=float,
        help="one verification's wall time, seconds (default: measured by running bench/verify_overhead.py)",
    )
    parser.add_argument("--concurrency", type=int, help="--fleet: override VerifierConcurrency")
    parser.add_argument("--idle-s", type=float, help="--fleet: override VerifierIdleSeconds")
    parser.add_argument("--seed", type=int, default=1, help="--fleet: the arrivals' random seed")
    args = smoke.parse(parser, n=1, verification=True, check_wall_s=5.0, submissions=20)
    if args.fleet and not args.verification:
        parser.error("--fleet prices verifications: give --verification with it")
    settings = Settings.from_template()
    overrides = {
        "tracing": args.tracing,
        "platform_log_level": args.platform_log_level,
        "auth_ttl_s": args.auth_cache_s,
        "attestation_key_spec": args.attestation_key_spec,
    }
    settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if v is not None})
    if args.fleet:
        fleet(args, settings)
        return
    lifecycles(args, settings)
    if args.smoke:
        fleet(args, settings)


def lifecycles(args: argparse.Namespace, settings: Settings) -> None:
    text = TYPICAL if args.text == "typical" else MINIMAL
    print(
        f"lifecycles={args.n} text={args.text} spec={'yes' if args.spec else 'no'} "
        f"verification={'on' if args.verification else 'off'} agents_via={args.agents_via} "
        f"tracing={settings.tracing} log_level={settings.log_level} "
        f"platform_log_level={settings.platform_log_level} log_retention_days={settings.retention_days} "
        f"auth_cache_s={settings.auth_ttl_s} attestation_key_spec={settings.attestation_key_spec} "
        f"prices={PRICES_AS_OF!r}"
    )
    f, elapsed, run = measure(
        args.n,
        text=text,
        spec=args.spec,
        verification=args.verification,
        settings=settings,
        agents_via_cloudfront=args.agents_via == "cloudfront",
        fleet_rate=args.fleet_rate,
    )
    print(
        f"  per lifecycle: auth_requests={fmt(f.auth_requests)} all_requests={fmt(f.requests + f.auth_requests)} "
        f"lambda_invocations={fmt(sum(f.invocations.values()))} "
        f"authorizer_invocations={fmt(f.invocations.get('authorizer', 0.0))} "
        f"(cache hits {fmt(run.auth_cache_hits / args.n)}) lambda_gb_s={fmt(f.gb_s)} "
        f"http_api_requests={fmt(f.http)} cloudfront_requests={fmt(f.cloudfront)} "
        f"bytes_out={f.bytes_out_api + f.bytes_out_cloudfront:.0f} log_bytes={f.log_bytes:.0f} "
        f"access_log_bytes={f.access_log_bytes:.0f} xray_traces={fmt(f.traces)} kms_signs={fmt(f.kms_signs)} "
        f"(moto run: {args.n / elapsed:.1f} lifecycles/s)"
    )
    k = 1000
    items = f.items(settings)
    print("  per 1,000 lifecycles (usd): " + " ".join(f"{name}={v * k:.4f}" for name, v in items.items()))
    control = {
        "dynamodb_writes",
        "dynamodb_reads",
        "lambda_requests",
        "lambda_duration",
        "http_api",
        "kms_sign",
    }
    print(
        f"  of which dynamodb+lambda+http_api={sum(v for n_, v in items.items() if n_ in control) * k:.4f} "
        f"cloudfront+data_out+logs+xray={sum(v for n_, v in items.items() if n_ not in control) * k:.4f}"
    )
    print(
        f"requests_per_lifecycle={fmt(f.requests)} wru_per_lifecycle={fmt(f.wru)} rru_per_lifecycle={fmt(f.rru)}"
    )
    lifecycle_usd = sum(items.values())
    if args.verification:
        if args.check_wall_s is not None:
            wall, how = args.check_wall_s, "given"
        else:
            walls = verifier_wall_s(args.verify_runs, args.check_seconds)
            wall = statistics.median(walls)
            how = f"runs {' '.join(f'{w:.2f}' for w in walls)}, checks {args.check_seconds:g} s"
        print(
            f"  verification: cpu={settings.verifier_cpu} memory_mb={settings.verifier_memory_mb} "
            f"verifier_wall_s={wall:.2f} ({how}) container_start_s={args.container_start_s:g} (estimate) "
            f"billed_s={max(BILLING_MINIMUM_S, math.ceil(args.container_start_s + wall)):.0f}"
        )
        for capacity in ("FARGATE", "FARGATE_SPOT"):
            charges = verification_usd(settings, capacity, wall, args.container_start_s)
            one = sum(charges.values())
            share = lifecycle_usd / (lifecycle_usd + one)
            print(
                f"  {capacity} ({settings.verifier_arch[capacity]}) per 1,000 verifications (usd): "
                + " ".join(f"{name}={v * k:.4f}" for name, v in charges.items())
                + f" control_plane_share_of_a_verified_lifecycle={share:.3f}"
            )
            # Where the control plane falls under 5% of a verified lifecycle: the billed time at
            # which a verification costs 19 times the lifecycle (the charges that grow with it).
            per_s = sum(verification_usd(settings, capacity, 3600.0, 0.0).values()) - sum(
                verification_usd(settings, capacity, 3599.0, 0.0).values()
            )
            fixed = one - per_s * max(BILLING_MINIMUM_S, math.ceil(args.container_start_s + wall))
            print(
                f"  {capacity}: control plane under 5% from a billed {(19 * lifecycle_usd - fixed) / per_s:.0f} s"
            )
            print(f"cost_per_1000_verifications_usd[{capacity}]={one * k:.4f}")
    print(f"cost_per_1000_lifecycles_usd={lifecycle_usd * k:.4f}")


if __name__ == "__main__":
    main()
