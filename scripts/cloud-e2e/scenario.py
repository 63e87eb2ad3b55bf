"""The cloud shape, driven end to end: template.yaml deployed into an AWS emulator (ministack, with
podman behind its ECS), every step through the emulated API Gateway with the real `mcp` SDK client
and the real `taskgate` CLI, every check on state read back through the REST API.

Run by scripts/cloud-e2e.sh, which installs the emulator, builds and deploys the stack, and
passes what it made in the environment (CLOUD_E2E_*). One line per step, figures at the end, and
last `cloud-e2e: K/N passed`; exits 1 if any step failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
TASKGATE = str(Path(sys.executable).with_name("taskgate"))
ENV = os.environ
STACK = ENV["CLOUD_E2E_STACK"]
DEPLOY_STARTED = float(ENV["CLOUD_E2E_DEPLOY_STARTED"])  # epoch seconds: `sam deploy` began
MINISTACK_LOG = Path(ENV["CLOUD_E2E_MINISTACK_LOG"])  # LOG_LEVEL=DEBUG: one line per request
WORK = Path(ENV["CLOUD_E2E_WORK"])
REDEPLOY: list[str] = json.loads(ENV["CLOUD_E2E_REDEPLOY"])  # `sam deploy ...` with the stack's parameters
PODMAN = ["podman"]
FLEET = 16
FLEET_TASKS = 48
PASSWORD = "Correct-Horse-9-battery"
VERIFY_TIMEOUT_S = 300
NOTHING_READY, CONFLICT = "E_NOTHING_READY", "E_CONFLICT"
VERIFIED = "submit -> stream -> dispatcher -> RunTask -> verifier task -> verified"
ATTESTED = "the KMS-signed statement checks offline (taskgate attest verify)"

# The project the verifier clones: a check that runs its unittest suite and writes a JSON report;
# a commit that adds SLOW makes the suite take long enough to kill the verifier mid-run.
CHECK_PY = """\
import json, os, sys, time, unittest

if os.path.exists("SLOW"):
    time.sleep(float(open("SLOW").read()))
os.makedirs("reports", exist_ok=True)
suite = unittest.defaultTestLoader.discover(".", pattern="test_*.py")
tests = []


class Record(unittest.TextTestResult):
    def addSuccess(self, test):
        super().addSuccess(test)
        tests.append({"id": test.id(), "status": "passed"})

    def addFailure(self, test, err):
        super().addFailure(test, err)
        tests.append({"id": test.id(), "status": "failed", "message": str(err[1])})

    def addError(self, test, err):
        super().addError(test, err)
        tests.append({"id": test.id(), "status": "failed", "message": str(err[1])})


ok = unittest.TextTestRunner(resultclass=Record, verbosity=2).run(suite).wasSuccessful()
json.dump({"tests": tests}, open("reports/results.json", "w"))
sys.exit(0 if ok else 1)
"""
SLUG_PY = (
    'import re\n\n\ndef slugify(text):\n    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")\n'
)
TEST_SLUG_PY = """\
import unittest

from slug import slugify


class TestSlugify(unittest.TestCase):
    def test_keeps_digits(self):
        self.assertEqual(slugify("Route 66"), "route-66")
"""
VERIFIER_CONFIG = {
    "concurrency": 1,  # one draining task: the killed one's work waits for the sweep's
    "check_timeout_minutes": 5,
    "checks": {
        "unit": {"command": "python3 check.py", "report": {"path": "reports/results.json", "format": "json"}}
    },
}
DIGITS = {"text": "digits are kept", "kind": "test", "verify_ref": "test_slug.TestSlugify.test_keeps_digits"}


class Failed(AssertionError):
    pass


def check(condition: object, message: str) -> None:
    if not condition:
        raise Failed(message)


# -- the steps ------------------------------------------------------------------------------


def why(exc: BaseException) -> str:
    """The failure itself, out of the task groups the MCP client wraps it in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


@dataclass
class Steps:
    results: list[tuple[str, bool]] = field(default_factory=list)

    def run(self, name: str, body: Callable[[dict[str, str]], None], needs: tuple[str, ...] = ()) -> None:
        """One line per step: ok with what it saw, or FAIL with why. A step whose prerequisite
        failed fails too (it could not run: nothing is skipped into a pass)."""
        notes: dict[str, str] = {}
        began = time.monotonic()
        done = dict(self.results)
        missing = [n for n in needs if not done.get(n)]
        try:
            if missing:
                raise Failed(f"needs {', '.join(missing)}")
            body(notes)
        except Exception as exc:  # every failure is reported, the next step still runs
            self.results.append((name, False))
            print(f"cloud-e2e: FAIL {name}: {why(exc)}"[:2000], flush=True)
            return
        self.results.append((name, True))
        detail = "; ".join(f"{k} {v}" for k, v in notes.items())
        took = f"{time.monotonic() - began:.1f} s"
        print(f"cloud-e2e: ok   {name} ({detail + '; ' if detail else ''}{took})", flush=True)


# -- the stack and its people ---------------------------------------------------------------


@dataclass
class Stack:
    outputs: dict[str, str]
    api: str  # the API through the emulated gateway: http://127.0.0.1:4566/_aws/execute-api/<id>
    human_token: str = ""

    @classmethod
    def read(cls) -> Stack:
        found = boto3.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in found["Outputs"]}
        api_id = outputs["ApiUrl"].split("//", 1)[1].split(".", 1)[0]
        return cls(outputs, f"{ENV['CLOUD_E2E_ENDPOINT']}/_aws/execute-api/{api_id}")

    def sign_in(self, user: str) -> str:
        """A Cognito ID token, as an operator gets one for the CLI (docs/deploy.md, step 3)."""
        idp = boto3.client("cognito-idp")
        pool, client = self.outputs["UserPoolId"], self.outputs["UserPoolClientId"]
        idp.admin_create_user(
            UserPoolId=pool,
            Username=user,
            UserAttributes=[
                {"Name": "email", "Value": f"{user}@example.com"},
                {"Name": "email_verified", "Value": "true"},
            ],
            MessageAction="SUPPRESS",
        )
        idp.admin_set_user_password(UserPoolId=pool, Username=user, Password=PASSWORD, Permanent=True)
        auth = idp.admin_initiate_auth(
            UserPoolId=pool,
            ClientId=client,
            AuthFlow="ADMIN_USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": user, "PASSWORD": PASSWORD},
        )
        return str(auth["AuthenticationResult"]["IdToken"])

    def rest(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> httpx2.Response:
        """One call; a read is tried again (three times in all) when the emulator answered 5xx
        or not at all: its Lambda starts a cold worker for every concurrent request, which on
        a busy machine can take longer than the gateway waits."""
        for attempt in range(3 if method == "GET" else 1):
            try:
                r = httpx2.request(
                    method,
                    f"{self.api}{path}",
                    json=body,
                    headers={"Authorization": f"Bearer {token or self.human_token}"},
                    timeout=60,
                )
            except httpx2.TransportError:
                if attempt == 2 or method != "GET":
                    raise
                continue
            if r.status_code < 500 or method != "GET" or attempt == 2:
                return r
        raise AssertionError("unreachable")

    def ok(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> Any:
        r = self.rest(method, path, body, token=token)
        check(r.status_code in (200, 201), f"{method} {path}: {r.status_code} {r.text[:500]}")
        return r.json()

    def task(self, task_id: str) -> dict[str, Any]:
        out: dict[str, Any] = self.ok("GET", f"/api/tasks/{task_id}")
        return out

    def cli(self, *args: str, stdout: Path | None = None) -> str:
        """The real CLI, as the human (the Cognito token, `--yes` where it writes)."""
        env = {k: v for k, v in ENV.items() if not k.startswith("TASKGATE_")}
        env |= {"TASKGATE_SERVER": self.api, "TASKGATE_TOKEN": self.human_token}
        done = subprocess.run([TASKGATE, *args], env=env, capture_output=True, text=True, timeout=120)
        check(
            done.returncode == 0, f"taskgate {' '.join(args)} exited {done.returncode}: {done.stderr[-800:]}"
        )
        if stdout is not None:
            stdout.write_text(done.stdout)
        return done.stdout

    def key(self, name: str, project: str, *, kind: str = "agent", verifier_kind: str | None = None) -> str:
        body: dict[str, Any] = {"kind": kind, "name": name, "projects": [project]}
        body |= (
            {"role": "executor", "delegations": []} if kind == "agent" else {"verifier_kind": verifier_kind}
        )
        return str(self.ok("POST", "/api/keys", body)["key"])

    def wait_for(self, what: str, probe: Callable[[], Any], timeout_s: float, every_s: float = 2.0) -> Any:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                got = probe()
            except (httpx2.TransportError, Failed):  # one poll's failure is not the answer
                got = None
            if got:
                return got
            if time.monotonic() > deadline:
                raise Failed(f"no {what} within {timeout_s:.0f} s")
            time.sleep(every_s)


# -- agents over MCP ------------------------------------------------------------------------


class Agent:
    """One agent: the SDK's Client over Streamable HTTP through the emulated gateway. Each call's
    round trip is timed."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.latencies: list[float] = []

    async def call(self, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
        began = time.perf_counter()
        result = await self.client.call_tool(tool, arguments)
        self.latencies.append(time.perf_counter() - began)
        if result.is_error:
            text = result.content[0]
            return False, json.loads(text.text) if text.type == "text" else {}
        return True, dict(result.structured_content or {})

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        good, out = await self.call(tool, **arguments)
        check(good, f"{tool} refused: {out}")
        return out


async def _with_agent(url: str, key: str, body: Callable[[Agent], Any]) -> Any:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    async with http, Client(streamable_http_client(url, http_client=http)) as c:
        return await body(Agent(c))


def as_agent(stack: Stack, key: str, body: Callable[[Agent], Any]) -> Any:
    return asyncio.run(_with_agent(f"{stack.api}/mcp", key, body))


# -- a repository the verifier clones -------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    env = {**ENV, "GIT_AUTHOR_NAME": "e2e", "GIT_AUTHOR_EMAIL": "e2e@example.com"}
    env |= {"GIT_COMMITTER_NAME": "e2e", "GIT_COMMITTER_EMAIL": "e2e@example.com"}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=False
    )
    check(done.returncode == 0, f"git {' '.join(args)}: {done.stderr}")
    return done.stdout.strip()


@dataclass
class Served:
    """`git daemon` on 127.0.0.1: the verifier task (host networking) clones by URL, shallow."""

    root: Path
    port: int
    proc: subprocess.Popen[bytes]

    @classmethod
    def start(cls, root: Path) -> Served:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen(
            [
                "git",
                "daemon",
                f"--base-path={root}",
                "--export-all",
                "--enable=receive-pack",  # the landing step's push, as a git host would take it
                "--reuseaddr",
                "--listen=127.0.0.1",
                f"--port={port}",
                str(root),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return cls(root, port, proc)
            except OSError:
                check(time.monotonic() < deadline, "git daemon did not listen")
                time.sleep(0.05)

    def repo(self, name: str) -> Path:
        path = self.root / name
        path.mkdir()
        git(path, "init", "--quiet", "--initial-branch=main")
        return path

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", message)
    return git(repo, "rev-parse", "HEAD")


# -- measuring ------------------------------------------------------------------------------


class PeakMemory:
    """Peak resident memory of the whole run: the emulator and the Lambda workers it starts, the
    podman service, the containers (conmon and what it runs), this driver and its children.
    Sampled every half second from /proc."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> int:
        parent: dict[int, int] = {}
        rss: dict[int, int] = {}
        names: dict[int, str] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
                fields = stat[stat.rindex(")") + 2 :].split()
                pid = int(entry)
                parent[pid] = int(fields[1])
                rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
                names[pid] = stat[stat.index("(") + 1 : stat.rindex(")")]
            except (OSError, ValueError, IndexError):
                continue
        roots = {*self.roots, os.getpid(), *(p for p, n in names.items() if n == "conmon")}
        total = 0
        for pid in rss:
            p, seen = pid, 0
            while p > 1 and seen < 64:
                if p in roots:
                    total += rss[pid]
                    break
                p, seen = parent.get(p, 0), seen + 1
        return total

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(0.5)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def dynamodb_requests(since: int) -> tuple[int, int]:
    """DynamoDB requests the emulator logged after byte `since` of its log; and the log's end."""
    with MINISTACK_LOG.open("rb") as f:
        f.seek(since)
        data = f.read()
    return data.count(b"-> service=dynamodb "), since + len(data)


def log_end() -> int:
    return MINISTACK_LOG.stat().st_size


def pct(values: list[float], q: float) -> float:
    """The q quantile in milliseconds."""
    if len(values) < 2:
        return values[0] * 1000
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1] * 1000


# -- the scenario ---------------------------------------------------------------------------


@dataclass
class State:
    stack: Stack
    served: Served
    repo: Path | None = None
    project: str = "shop"
    agent_key: str = ""
    verifier_key: str = ""
    first: str = ""  # the first task verified in the cloud
    base_tip: str = ""
    figures: dict[str, str] = field(default_factory=dict)
    lapsing: str = ""  # a task claimed with a one-minute lease
    lapsing_at: float = 0.0
    statements: int = 0  # signed statements of the first task when it was verified


def health(s: State, notes: dict[str, str]) -> None:
    r = httpx2.get(f"{s.stack.api}/api/health", timeout=60)
    check(r.status_code == 200 and r.json()["status"] == "ok", f"{r.status_code} {r.text[:200]}")
    notes["answer"] = r.text.strip()


def jwt_authorizer(s: State, notes: dict[str, str]) -> None:
    s.stack.human_token = s.stack.sign_in("alice")
    header, payload, _ = s.stack.human_token.split(".")
    forged = f"{header}.{payload}.{'A' * 86}"  # alice's claims, a signature Cognito never made
    for token, what in ((forged, "forged signature"), ("not-a-jwt", "not a JWT")):
        r = httpx2.get(f"{s.stack.api}/api/me", headers={"Authorization": f"Bearer {token}"}, timeout=60)
        check(r.status_code == 401, f"{what}: {r.status_code} {r.text[:200]}")
    me = s.stack.ok("GET", "/api/me")
    check(me["actor"] == "human:alice", me)
    notes["forged"] = "401"
    notes["Cognito ID token"] = me["actor"]


def key_authorizer(s: State, notes: dict[str, str]) -> None:
    bad = "tga_000000000000_" + "x" * 32
    for path in ("/mcp", "/api/verifier/runs"):
        r = httpx2.post(
            f"{s.stack.api}{path}", json={}, headers={"Authorization": f"Bearer {bad}"}, timeout=60
        )
        check(r.status_code == 403, f"{path} with a bad key: {r.status_code} {r.text[:200]}")
    r = httpx2.post(f"{s.stack.api}/mcp", json={}, timeout=60)
    check(r.status_code == 401, f"/mcp without a key: {r.status_code}")
    notes["bad key"] = "403 on /mcp and /api/verifier"
    notes["no key"] = "401"


def _ramp(what: str, call: Callable[[int], None], up_to: int) -> int:
    """`call` at 2, 4, 8 ... `up_to` at once, each level until every call answered: the emulator
    starts a worker process per concurrent request, and a level adds only a few cold ones to the
    warm ones of the level before (sixteen cold at once on a busy machine outlast the functions'
    timeouts, and each killed worker is cold again). Returns the calls that failed and were
    made again."""
    retried, level = 0, 2
    while True:
        for _attempt in range(6):
            with ThreadPoolExecutor(level) as pool:
                failed = sum(1 for ok in pool.map(_answered(call), range(level)) if not ok)
            if not failed:
                break
            retried += failed
            time.sleep(2)
        else:
            raise Failed(f"{what}: {level} at once did not all answer in 6 tries")
        if level >= up_to:
            return retried
        level = min(up_to, level * 2)


def _answered(call: Callable[[int], None]) -> Callable[[int], bool]:
    def go(n: int) -> bool:
        try:
            call(n)
            return True
        except Exception:  # a cold start past its timeout: the level is tried again
            return False

    return go


def warm(s: State, notes: dict[str, str]) -> None:
    """Each function warm for as many callers at once as the scenario brings, before anything
    is measured: the emulator's cold starts are its own, not the product's (on AWS the MCP and
    REST functions start from a SnapStart snapshot). The key authorizer directly (each agent's
    first call needs it, with a key it has not seen), the MCP and REST functions through the
    gateway."""
    stack = s.stack
    stack.cli("project", "create", "warm", "--repo", "https://example.com/warm.git", "--yes")
    key = stack.key("warm", "warm")
    authorizer = physical("AuthorizerFunction")
    lam = boto3.client("lambda")

    def authorize(n: int) -> None:
        event = {
            "version": "2.0",
            "type": "REQUEST",
            "routeKey": "ANY /mcp",
            "headers": {"authorization": f"Bearer {key}"},
            "requestContext": {"requestId": f"warm-{n}-{uuid.uuid4().hex}", "http": {"method": "POST"}},
        }
        out = lam.invoke(FunctionName=authorizer, Payload=json.dumps(event).encode())
        answer = json.loads(out["Payload"].read())
        check("FunctionError" not in out and answer.get("isAuthorized") is True, answer)

    def mcp(_: int) -> None:
        as_agent(stack, key, lambda a: a.ok("list_tasks", project="warm"))

    began = time.monotonic()
    retried = _ramp("the key authorizer", authorize, FLEET)
    retried += _ramp("the MCP function", mcp, FLEET)
    retried += _ramp("the REST function", lambda _: stack.ok("GET", "/api/projects/warm"), 4)
    notes["authorizer, mcp"] = f"{FLEET} at once"
    notes["api"] = "4 at once"
    notes["calls made again"] = str(retried)
    notes["took"] = f"{time.monotonic() - began:.0f} s"


def fleet(s: State, notes: dict[str, str]) -> None:
    stack = s.stack
    stack.cli("project", "create", "fleet", "--repo", "https://example.com/fleet.git", "--yes")
    made = [
        stack.ok(
            "POST",
            "/api/projects/fleet/tasks",
            {"title": f"fleet task {n}", "criteria": [{"text": "works", "kind": "review"}]},
        )["task"]["id"]
        for n in range(FLEET_TASKS)
    ]
    keys = [stack.key(f"fleet-{n}", "fleet") for n in range(FLEET)]

    async def one(key: str) -> tuple[list[str], list[float]]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
        async with http, Client(streamable_http_client(f"{stack.api}/mcp", http_client=http)) as c:
            agent, claimed = Agent(c), []
            while True:
                good, out = await agent.call("claim_task", project="fleet")
                if not good:
                    check(out.get("code") in (NOTHING_READY, CONFLICT), out)
                    if out.get("code") == NOTHING_READY:
                        break
                    continue  # lost a race for the same task: ask again
                claimed.append(out["task_id"])
                await agent.ok(
                    "submit_task",
                    task_id=claimed[-1],
                    claim_token=out["claim_token"],
                    commit_sha="3f2a9c1b7e5d4a6f8b0c2e4d6a8b0c1d2e3f4a5b",
                    evidence="done",
                )
            return claimed, agent.latencies

    async def race() -> list[tuple[list[str], list[float]]]:
        return list(await asyncio.gather(*(one(k) for k in keys)))

    began = time.monotonic()
    results = asyncio.run(race())
    seconds = time.monotonic() - began
    claimed = [t for got, _ in results for t in got]
    doubles = len(claimed) - len(set(claimed))
    lost = sorted(set(made) - set(claimed))
    check(doubles == 0, f"{doubles} tasks claimed twice")
    check(not lost, f"{len(lost)} tasks never claimed: {lost[:5]}")
    listed = stack.ok("GET", "/api/projects/fleet/tasks?limit=200")["items"]
    statuses = {r["id"]: r["status"] for r in listed}
    after = {statuses.get(t) for t in made}  # each submitted once: all in the status a submit leads to
    check(len(after) == 1 and not after & {None, "ready", "claimed"}, f"statuses after the race: {after}")
    cold = [lat[0] for _, lat in results if lat]
    warm_ = [x for _, lat in results for x in lat[1:]]
    s.figures["mcp_cold_ms"] = (
        f"p50 {pct(cold, 0.5):.0f} ms, p95 {pct(cold, 0.95):.0f} ms ({len(cold)} first calls)"
    )
    s.figures["mcp_warm_ms"] = (
        f"p50 {pct(warm_, 0.5):.0f} ms, p95 {pct(warm_, 0.95):.0f} ms ({len(warm_)} calls)"
    )
    notes["agents"] = str(FLEET)
    notes["tasks"] = f"{len(made)} claimed and submitted once each, 0 double claims, 0 lost"
    notes["wall"] = f"{seconds:.1f} s"
    notes["per agent"] = f"{min(len(g) for g, _ in results)}-{max(len(g) for g, _ in results)} tasks"


def lease_claimed(s: State, notes: dict[str, str]) -> None:
    """An agent claims with a one-minute lease and goes silent; the sweeper settles it later."""
    stack = s.stack
    stack.cli("project", "create", "idle", "--repo", "https://example.com/idle.git", "--yes")
    tid = stack.ok(
        "POST",
        "/api/projects/idle/tasks",
        {"title": "abandoned", "criteria": [{"text": "works", "kind": "review"}]},
    )["task"]["id"]
    key = stack.key("silent", "idle")
    out = as_agent(stack, key, lambda a: a.ok("claim_task", task_id=tid, lease_minutes=1))
    check(stack.task(tid)["task"]["status"] == "claimed", stack.task(tid)["task"]["status"])
    s.lapsing, s.lapsing_at = tid, time.time()
    notes["task"] = f"{tid} claimed, lease until {out.get('expires_at', '+1 min')}"


def project_with_verification(s: State, notes: dict[str, str]) -> None:
    stack = s.stack
    s.repo = s.served.repo(s.project)
    commit(
        s.repo,
        {"check.py": CHECK_PY, "slug.py": SLUG_PY.replace("a-z0-9", "a-z"), ".gitignore": "reports/\n"},
        "base",
    )
    s.base_tip = git(s.repo, "rev-parse", "HEAD")
    git(s.repo, "checkout", "--quiet", "-b", "work")
    stack.cli("project", "create", s.project, "--repo", s.served.url(s.project), "--yes")
    s.agent_key = stack.cli(
        "key", "create", "agent", "builder", "--project", s.project, "--key-only", "--yes"
    ).strip()
    s.verifier_key = stack.cli(
        "key", "create", "verifier", "cloud", "--kind", "local", "--project", s.project, "--key-only", "--yes"
    ).strip()
    check(s.agent_key.startswith("tga_") and s.verifier_key.startswith("tgv_"), "keys")
    # The operator puts the verifier key in the stack's secret (docs/deploy.md, step 6).
    boto3.client("secretsmanager").put_secret_value(
        SecretId=stack.outputs["VerifierSecretArn"],
        SecretString=json.dumps({"verifier_key": s.verifier_key, "reviewer_key": "", "git_token": ""}),
    )
    config = WORK / "verifier.json"
    config.write_text(json.dumps(VERIFIER_CONFIG))
    stack.cli("verifier-config", "set", s.project, "--file", str(config), "--yes")
    stack.cli("verification", "on", s.project, "--yes")
    check(stack.ok("GET", f"/api/projects/{s.project}")["verification_on"] is True, "verification is not on")
    notes["repo"] = s.served.url(s.project)


def new_task(s: State) -> str:
    spec = s.stack.ok(
        "POST",
        f"/api/projects/{s.project}/specs",
        {"title": "Slugs", "body": "Titles become slugs.", "risk": "low", "criteria": [DIGITS]},
    )
    s.stack.ok("POST", f"/api/projects/{s.project}/specs/{spec['id']}/approve")
    return str(
        s.stack.ok(
            "POST", f"/api/projects/{s.project}/tasks", {"title": "Keep digits", "spec_id": spec["id"]}
        )["task"]["id"]
    )


def submit(s: State, tid: str, sha: str) -> None:
    async def go(a: Agent) -> None:
        claimed = await a.ok("claim_task", task_id=tid)
        await a.ok(
            "submit_task",
            task_id=tid,
            claim_token=claimed["claim_token"],
            commit_sha=sha,
            evidence="slugify keeps digits",
        )

    as_agent(s.stack, s.agent_key, go)


def status_is(s: State, tid: str, *wanted: str) -> Callable[[], dict[str, Any] | None]:
    def probe() -> dict[str, Any] | None:
        detail = s.stack.task(tid)
        return detail if detail["task"]["status"] in wanted else None

    return probe


def verified(s: State, notes: dict[str, str]) -> None:
    assert s.repo is not None
    tid = new_task(s)
    sha = commit(s.repo, {"slug.py": SLUG_PY, "test_slug.py": TEST_SLUG_PY}, "keep digits")
    submit(s, tid, sha)
    check(s.stack.task(tid)["task"]["status"] == "needs_verification", "not waiting for verification")
    detail = s.stack.wait_for("verified", status_is(s, tid, "verified", "ready"), VERIFY_TIMEOUT_S)
    [run] = detail["runs"]
    check(
        detail["task"]["status"] == "verified", f"{tid} is {detail['task']['status']}: {run.get('summary')}"
    )
    check(run["commit_sha"] == sha and run["id"] in detail["signed_runs"], run)
    s.first = tid
    s.figures["deploy_to_verified_s"] = f"{time.time() - DEPLOY_STARTED:.0f} s"
    notes["task"] = (
        f"{tid} verified ({run['evidence']['AC-1.1']['result']}), run signed with the stack's KMS key"
    )


def attest_offline(s: State, notes: dict[str, str]) -> None:
    key = WORK / "attestation-key.pem"
    bundle = WORK / f"{s.first}.intoto.jsonl"
    key.write_text(json.loads(s.stack.cli("attest", "key", "--json"))["pem"])
    s.stack.cli("attest", "export", s.first, stdout=bundle)
    out = json.loads(s.stack.cli("attest", "verify", str(bundle), "--key", str(key), "--json"))
    check(out["ok"] is True and out["result"].lower() == "passed", out)
    s.statements = int(out["statements"])
    notes["statements"] = f"{out['statements']} ({out['result']}, commit {out['commit'][:12]})"
    notes["key"] = f"KMS public key {out['keyid'][:16]}..., checked offline"


def _verifier_containers() -> list[str]:
    done = subprocess.run(
        [*PODMAN, "ps", "--quiet", "--filter", "label=com.amazonaws.ecs.container-name=verifier"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.split()


def killed_and_swept(s: State, notes: dict[str, str]) -> None:
    """A verifier task killed in the middle of a run; the work behind it waits for the sweep,
    which finds the dead task's slot lapsed and starts another."""
    assert s.repo is not None
    slow, after = new_task(s), new_task(s)
    git(s.repo, "checkout", "--quiet", "-b", "slow")  # the slow suite on a branch of its own
    slow_sha = commit(s.repo, {"SLOW": "600"}, "slow suite")
    git(s.repo, "checkout", "--quiet", "work")
    submit(s, slow, slow_sha)
    s.stack.wait_for("run started", lambda: s.stack.task(slow)["task"]["live_run"], VERIFY_TIMEOUT_S)
    submit(s, after, commit(s.repo, {"NOTES": "more\n"}, "notes"))
    running = _verifier_containers()
    check(len(running) == 1, f"verifier containers: {running}")
    subprocess.run([*PODMAN, "kill", running[0]], capture_output=True, check=True)
    killed_at = time.monotonic()
    check(s.stack.task(after)["task"]["status"] == "needs_verification", "the second submission did not wait")
    detail = s.stack.wait_for(
        "verification after the sweep", status_is(s, after, "verified", "ready"), 420, every_s=5
    )
    check(detail["task"]["status"] == "verified", detail["task"]["status"])
    check(s.stack.task(slow)["task"]["live_run"], "the killed run is no longer live")
    # Who started it: the sweep, after the dead task's slot lapsed (the dispatcher's log lines).
    check(
        dispatcher_said(s, "verifier slot lapsed"),
        "no lapsed slot logged",
    )
    check(dispatcher_said(s, "sweep verifier started"), "no sweep start logged")
    # The dead run stays live until its budget runs out (the sweeper then ends it as an error);
    # meanwhile every sweep would start a task for it. A human cancels it.
    s.stack.cli("task", "cancel", slow, "--yes")
    check(s.stack.task(slow)["task"]["status"] == "cancelled", "not cancelled")
    notes["killed"] = f"{slow} mid-run (then cancelled)"
    notes["restarted"] = f"{after} verified {time.monotonic() - killed_at:.0f} s after the kill"


def physical(logical_id: str) -> str:
    """The name CloudFormation gave one of the stack's resources."""
    found = boto3.client("cloudformation").describe_stack_resource(
        StackName=STACK, LogicalResourceId=logical_id
    )
    return str(found["StackResourceDetail"]["PhysicalResourceId"])


def lease_swept(s: State, notes: dict[str, str]) -> None:
    """Back in the queue with nobody touching it: the scheduled sweeper settled the lease (its
    log line names the task), not a later claim or read."""
    tid = s.lapsing
    wait = s.lapsing_at + 60 + 75 - time.time()  # the lease, then a sweeper run a minute apart
    detail = s.stack.wait_for("sweeper", status_is(s, tid, "ready"), max(wait, 5) + 60, every_s=5)
    expiry = [e for e in detail["history"] if e.get("to_status") == "ready"][-1]
    check(expiry["actor"] == "system:lease", expiry)
    events = boto3.client("logs").filter_log_events(
        logGroupName=physical("SweeperLogs"), filterPattern='"lease expired"'
    )["events"]
    swept = [json.loads(e["message"]) for e in events if e["message"].startswith("{")]
    check(any(x.get("task_id") == tid for x in swept), f"the sweeper logged no expiry of {tid}")
    notes["task"] = f"{tid} back to ready ({expiry['actor']}), settled by the scheduled sweeper"


def dispatcher_said(s: State, message: str) -> list[dict[str, Any]]:
    """The dispatcher's log lines about the project whose message starts so (CloudWatch Logs)."""
    events = boto3.client("logs").filter_log_events(
        logGroupName=s.stack.outputs["DispatcherLogGroup"], filterPattern=f'"{message}"'
    )["events"]
    lines = [json.loads(e["message"]) for e in events if e["message"].startswith("{")]
    return [x for x in lines if str(x.get("message")).startswith(message) and x.get("project") == s.project]


def nightly(s: State, notes: dict[str, str]) -> None:
    """The base branch moves with no webhook; the nightly schedule's task reads the tip and
    verifies the verified task again on it."""
    assert s.repo is not None
    # No verifier task running: a draining one reads the tip too, and would do the nightly's work.
    ecs, cluster = boto3.client("ecs"), s.stack.outputs["VerifierCluster"]
    s.stack.wait_for(
        "the verifier tasks to exit",
        lambda: not ecs.list_tasks(cluster=cluster, desiredStatus="RUNNING")["taskArns"],
        180,
        every_s=5,
    )
    git(s.repo, "checkout", "--quiet", "main")
    tip = commit(s.repo, {"README": "moved\n"}, "main moves")
    git(s.repo, "checkout", "--quiet", "work")
    before = len(s.stack.task(s.first)["runs"])
    at = datetime.now(UTC) + timedelta(minutes=1, seconds=40)
    params = [f"NightlyVerificationHour={at.hour}", f"NightlyVerificationMinute={at.minute}"]
    done = subprocess.run([*REDEPLOY, *params], capture_output=True, text=True, check=False)
    check(done.returncode == 0, f"sam deploy: {done.stdout[-1500:]} {done.stderr[-1500:]}")

    def moved() -> dict[str, Any] | None:
        project = s.stack.ok("GET", f"/api/projects/{s.project}")
        detail = s.stack.task(s.first)
        base = (project.get("base_tip") or {}).get("tip")
        return (
            detail
            if base == tip
            and len(detail["runs"]) > before
            and detail["task"]["status"] == "verified"
            and not detail["task"]["live_run"]
            else None
        )

    detail = s.stack.wait_for("nightly re-verification", moved, 360, every_s=5)
    # The dispatcher's own line for it (CloudWatch Logs): started by the nightly run.
    said = dispatcher_said(s, "nightly verifier started")
    check(said, "the dispatcher logged no nightly start for the project")
    notes["why"] = ", ".join(sorted({str(x.get("why")) for x in said}))
    notes["schedule"] = f"cron {at.minute} {at.hour} * * ? * (UTC)"
    notes["base"] = (
        f"tip {tip[:12]} read by the nightly task; {s.first} verified again ({len(detail['runs'])} runs)"
    )


def accepted(s: State, notes: dict[str, str]) -> None:
    s.stack.cli("task", "accept", s.first, "--yes")
    detail = s.stack.task(s.first)
    check(detail["task"]["status"] == "done", detail["task"]["status"])
    key, bundle = WORK / "attestation-key.pem", WORK / f"{s.first}.accepted.intoto.jsonl"
    s.stack.cli("attest", "export", s.first, stdout=bundle)
    lines = [json.loads(x) for x in bundle.read_text().splitlines() if x.strip()]
    out = json.loads(s.stack.cli("attest", "verify", str(bundle), "--key", str(key), "--json"))
    check(out["ok"] is True and len(lines) == out["statements"] > s.statements, (out, s.statements))
    notes["task"] = f"{s.first} done by human:alice; {len(lines)} signed statements verify offline"


def landed(s: State, notes: dict[str, str]) -> None:
    """With `land: true` an accepted task joins the landing queue; the queue's stream record wakes
    a draining verifier task, which merges it onto main's tip, tests it there and pushes that
    exact commit to the project's repository as a fast-forward: `done` means on main."""
    assert s.repo is not None
    stack = s.stack
    config = WORK / "verifier-land.json"
    config.write_text(json.dumps({**VERIFIER_CONFIG, "land": True}))
    stack.cli("verifier-config", "set", s.project, "--file", str(config), "--yes")
    tid = new_task(s)
    tip = git(s.repo, "rev-parse", "main")
    # Off main: the repository's checked-out branch is never the one a push moves.
    git(s.repo, "checkout", "--quiet", "-B", "to-land", tip)
    sha = commit(s.repo, {"slug.py": SLUG_PY, "test_slug.py": TEST_SLUG_PY}, "keep digits, to land")
    submit(s, tid, sha)
    detail = stack.wait_for(
        "verified", status_is(s, tid, "verified", "ready", "needs_human"), VERIFY_TIMEOUT_S
    )
    check(detail["task"]["status"] == "verified", f"{tid} is {detail['task']['status']}")
    stack.cli("task", "accept", tid, "--yes")
    check(stack.task(tid)["task"]["status"] in ("landing", "done"), "the accept did not queue it")
    detail = stack.wait_for("landed", status_is(s, tid, "done", "ready", "needs_human"), VERIFY_TIMEOUT_S)
    task = detail["task"]
    check(
        task["status"] == "done" and task.get("landed"), f"{tid} is {task['status']}: {task.get('findings')}"
    )
    on_main = git(s.repo, "rev-parse", "main")
    check(
        on_main == task["landed"]["commit"], f"main is {on_main}, the record says {task['landed']['commit']}"
    )
    check(task["landed"]["from_tip"] == tip, f"moved from {task['landed']['from_tip']}, not {tip}")
    ancestor = subprocess.run(["git", "merge-base", "--is-ancestor", sha, on_main], cwd=s.repo, check=False)
    check(ancestor.returncode == 0, "the submitted commit is not in main's history")
    notes["landed"] = f"{tid} on main at {on_main[:12]} (a fast-forward from {tip[:12]})"


def lifecycles(s: State, notes: dict[str, str]) -> None:
    """bench/cost.py's lifecycle (create, claim, two heartbeats, submit, accept) through the
    gateway, counted by the emulator's request log; beside the model's count."""
    sys.path.insert(0, str(ROOT))
    from bench.cost import TYPICAL

    stack, n = s.stack, 5
    stack.cli("project", "create", "count", "--repo", "https://example.com/count.git", "--yes")
    key = stack.key("counter", "count")
    as_agent(
        stack, key, lambda a: a.call("list_tasks", project="count")
    )  # its key cached, like a busy agent's
    start = log_end()
    for _ in range(n):
        tid = stack.ok(
            "POST",
            "/api/projects/count/tasks",
            {
                "title": TYPICAL["title"],
                "description": TYPICAL["description"],
                "criteria": TYPICAL["criteria"],
            },
        )["task"]["id"]

        async def life(a: Agent, tid: str = tid) -> None:
            token = (await a.ok("claim_task", task_id=tid))["claim_token"]
            for _ in range(2):
                await a.ok("heartbeat", task_id=tid, claim_token=token)
            await a.ok(
                "submit_task",
                task_id=tid,
                claim_token=token,
                commit_sha="3f2a9c1b7e5d4a6f8b0c2e4d6a8b0c1d2e3f4a5b",
                evidence=TYPICAL["evidence"],
            )

        as_agent(stack, key, life)
        check(stack.ok("POST", f"/api/tasks/{tid}/accept")["status"] == "done", "not done")
    counted, _ = dynamodb_requests(start)
    model = ENV.get("CLOUD_E2E_COST_MODEL", "")
    s.figures["dynamodb_requests_per_lifecycle"] = (
        f"{counted / n:.1f} counted by the emulator ({n} lifecycles; sweeps that ran meanwhile included); bench/cost.py: {model or 'not run'}"
    )
    notes["lifecycles"] = str(n)
    notes["dynamodb requests"] = f"{counted / n:.1f} per lifecycle"


def main() -> int:
    stack = Stack.read()
    steps = Steps()
    roots = [int(p) for p in ENV.get("CLOUD_E2E_PIDS", "").split()]
    tmp = Path(tempfile.mkdtemp(prefix="cloud-e2e-git-", dir=WORK))
    served = Served.start(tmp)
    s = State(stack, served)
    with PeakMemory(roots) as memory:
        try:
            jwt, warmed = "JWT authorizer: a Cognito token in, a forged one refused", "each function warmed"
            project, ok = "project, keys, verifier config, verification on (the CLI)", VERIFIED
            lease = "a claim with a one-minute lease, then silence"
            plan: list[tuple[str, Callable[[State, dict[str, str]], None], tuple[str, ...]]] = [
                ("health through the emulated API Gateway", health, ()),
                (jwt, jwt_authorizer, ()),
                ("key authorizer: a bad key refused", key_authorizer, ()),
                (lease, lease_claimed, (jwt,)),
                (project, project_with_verification, (jwt,)),
                (ok, verified, (project,)),
                (ATTESTED, attest_offline, (ok,)),
                (warmed, warm, (jwt,)),
                (f"{FLEET} agents race over MCP for {FLEET_TASKS} tasks", fleet, (warmed,)),
                ("a verifier killed mid-run; the sweep starts another", killed_and_swept, (ok,)),
                ("the lapsed lease settled by the scheduled sweeper", lease_swept, (lease,)),
                ("the nightly run reads a moved base and verifies again", nightly, (ok,)),
                ("a human accepts (the CLI); both signatures check offline", accepted, (ATTESTED,)),
                ("landing: the accepted work pushed to main by the verifier task", landed, (ATTESTED,)),
                ("DynamoDB requests per lifecycle", lifecycles, (jwt,)),
            ]
            for name, run, needs in plan:
                steps.run(name, lambda notes, run=run: run(s, notes), needs)
        finally:
            served.proc.terminate()
            shutil.rmtree(tmp, ignore_errors=True)
    s.figures["peak_memory"] = (
        f"{memory.peak / 2**20:.0f} MiB (emulator, Lambda workers, podman, containers, this driver)"
    )
    for name, value in s.figures.items():
        print(f"cloud-e2e: figure {name}: {value}", flush=True)
    (WORK / "figures.json").write_text(json.dumps(s.figures))
    passed = sum(ok for _, ok in steps.results)
    (WORK / "steps.json").write_text(json.dumps(steps.results))
    print(f"cloud-e2e: scenario {passed}/{len(steps.results)} steps passed", flush=True)
    return 0 if passed == len(steps.results) else 1


if __name__ == "__main__":
    sys.exit(main())
