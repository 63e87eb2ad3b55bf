"""Stale verdicts in the cloud, on moto: the push webhook through the REST function (behind the
key authorizer, on DynamoDB) records the base branch's new tip and makes the verified tasks on
the old one stale; the record of that move on the table's stream, passed by template.yaml's
filter, makes the dispatcher start a draining verifier (ECS RunTask) under the same slots as
submissions; the work route hands the stale tasks out and a run on one is a re-verification;
the sweep starts a verifier where stale work waits with none; the nightly run starts one
wherever verdicts hold for a base tip, whose first look reads the tip from the repository
(verifier/tips.py, on a real git repository) and finds what went stale. Bad bodies, wrong keys
and unknown projects are refused with stable codes and change nothing.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskgate.cloud import api, authorizer
from taskgate.cloud.dispatcher import handler
from taskgate.cloud.ecs import drain_command
from taskgate.domain.models import CredentialKind, CriterionInput, CriterionKind, Status, VerifierKind
from taskgate.domain.principals import Acting, acting, human
from taskgate.domain.run_report import Evidence
from taskgate.service import claims, dispatch, keys, projects, records, staleness, tasks
from taskgate.verifier import tips
from taskgate.verifier.checkout import Git
from tests.functions.stack import Stack, stack, stream_event
from tests.mcp.events import v2_event
from tests.support.evidence import BASE0, BASE1, CONFIG, TIP0, TIP1, run_verifier
from tests.support.gateway_events import authorizer_event, behind_authorizer
from tests.support.world import SHA

HUMAN = acting(human("alice"))
CRITERIA = [CriterionInput(text="unit tests pass", kind=CriterionKind.TEST, verify_ref="tests.test_x")]
TIP2 = "a2" * 20


@pytest.fixture
def cloud() -> Iterator[Stack]:
    with stack() as s:
        yield s


class Rest:
    """Requests to the REST function as API Gateway makes them: the key authorizer first (a
    refused key never reaches the function), then the function with the authorizer's context."""

    def __init__(self, s: Stack) -> None:
        self.s = s

    def call(
        self, key: str, method: str, path: str, body: Any = None, query: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        answer = self.s.invoke(authorizer.handler, authorizer_event(key, route=f"{method} {path}"))
        if not answer["isAuthorized"]:
            return 401, None
        event = v2_event(body, method=method, path=path, headers={"authorization": f"Bearer {key}"})
        if query:
            event["rawQueryString"] = urllib.parse.urlencode(query)
            event["queryStringParameters"] = dict(query)
        response = self.s.invoke(api.handler, behind_authorizer(event, answer))
        return int(response["statusCode"]), json.loads(response["body"]) if response.get("body") else None


def _verifier_key(s: Stack, name: str, project: str | None, kind: VerifierKind = VerifierKind.LOCAL) -> str:
    return keys.create(
        s.ctx,
        HUMAN,
        kind=CredentialKind.VERIFIER,
        name=name,
        verifier_kind=kind,
        projects_=[project] if project else None,
    ).secret


def _project(s: Stack, name: str, *, repo: str = "", merge: str | None = None) -> Acting:
    """A project with verification on; its local verifier (the drain task's key)."""
    projects.create(s.ctx, HUMAN, name, repo=repo or f"https://git.example.com/{name}.git")
    verifier = acting(keys.authenticate(s.ctx, _verifier_key(s, f"{name}-ci", name)))
    config = {**CONFIG, **({"merge": merge} if merge else {})}
    projects.set_verifier_config(s.ctx, HUMAN, name, config)
    projects.set_verification(s.ctx, HUMAN, name, True)
    return verifier


def _agent(s: Stack) -> Acting:
    minted = keys.create(s.ctx, HUMAN, kind=CredentialKind.AGENT, name="builder")
    return acting(keys.authenticate(s.ctx, minted.secret))


def _verified(
    s: Stack, project: str, agent: Acting, verifier: Acting, base: Any = BASE0, commit: str = SHA
) -> str:
    """A task verified on the submission merged onto main at TIP0 (by default)."""
    task = tasks.create(s.ctx, HUMAN, project, title="Cart", criteria=CRITERIA).task
    token = claims.claim(s.ctx, agent, project, task_id=task.id).token
    claims.submit(s.ctx, agent, task.id, token, commit_sha=commit, evidence="did it")
    run_verifier(s.ctx, verifier, task.id, Evidence.PASS, base=base)
    assert s.ctx.task(task.id).status is Status.VERIFIED
    return task.id


def _commands(s: Stack) -> list[list[str]]:
    arns = s.ecs.list_tasks(cluster=s.cluster)["taskArns"]
    started = s.ecs.describe_tasks(cluster=s.cluster, tasks=arns)["tasks"] if arns else []
    return [o["command"] for t in started for o in t["overrides"]["containerOverrides"]]


def _logged(s: Stack, message: str) -> list[dict[str, Any]]:
    return [line for line in s.output.logs() if line.get("message") == message]


def _push(before: str, after: str, ref: str = "refs/heads/main") -> dict[str, Any]:
    """A GitHub-style push event's payload (the route reads `ref` and `after` only)."""
    return {
        "ref": ref,
        "before": before,
        "after": after,
        "created": False,
        "deleted": after == "0" * 40,
        "forced": False,
        "repository": {"full_name": "you/shop", "default_branch": "main"},
        "pusher": {"name": "carol", "email": "carol@example.com"},
        "commits": [{"id": after, "message": "Merge pull request #7"}],
        "head_commit": {"id": after},
    }


def test_the_push_webhook_marks_stale_work_and_the_dispatcher_starts_its_reverification(cloud: Stack) -> None:
    rest = Rest(cloud)
    ci = _project(cloud, "shop")
    ci_key = _verifier_key(cloud, "drain", "shop")  # the key the draining task holds
    webhook = _verifier_key(cloud, "webhook", "shop")
    agent = _agent(cloud)
    old, fresh = _verified(cloud, "shop", agent, ci), _verified(cloud, "shop", agent, ci)
    cloud.new_records()  # the submissions were verified: their drain task came and went

    status, moved = rest.call(webhook, "POST", "/api/verifier/projects/shop/base", _push(TIP0, TIP1))
    assert status == 200, moved
    assert moved == {
        "project": "shop",
        "branch": "main",
        "tip": TIP1,
        "changed": True,
        "ignored": None,
        "stale": [old, fresh],
    }
    known = cloud.ctx.project("shop").base_tip
    assert known is not None and (known.branch, known.tip, known.by) == ("main", TIP1, "verifier:webhook")

    # The move's one record on the stream reaches the dispatcher, which starts a task draining
    # the project (no submission waits: the stale tasks are its work).
    delivered = cloud.delivered(cloud.new_records())
    assert [r["dynamodb"]["Keys"]["SK"]["S"] for r in delivered] == [records.base_moved_key("shop")[1]]
    assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    assert _commands(cloud) == [drain_command("shop")]
    # Two stale tasks and a concurrency of 2: a redelivered record (or Lambda's retry) takes the
    # second slot, and nothing more.
    assert cloud.invoke(handler, stream_event(delivered + delivered)) == {"batchItemFailures": []}
    assert _commands(cloud) == [drain_command("shop")] * 2
    assert [(m["outcome"], m["project"], m["tip"]) for m in _logged(cloud, "base moved")] == [
        ("started", "shop", TIP1),
        ("started", "shop", TIP1),
        ("draining", "shop", TIP1),
    ]
    assert len({s.holder for s in dispatch.live_slots(cloud.ctx, "shop")}) == 2

    # The draining task's look at the queue: the stale tasks, oldest verdict first; starting a
    # run on one is a re-verification, which on the new tip keeps it verified, with TIP1.
    status, work = rest.call(ci_key, "GET", "/api/verifier/work", query={"project": "shop"})
    assert status == 200 and work["items"] == [old, fresh], work
    [queue] = work["projects"]
    assert (queue["stale"], queue["base_tip"], queue["waiting"]) == (2, TIP1, 0)
    status, started = rest.call(ci_key, "POST", "/api/verifier/runs", {"task_id": old})
    assert status == 201 and started["reverify"] is True, started
    status, finished = rest.call(
        ci_key,
        "POST",
        f"/api/verifier/runs/{old}/{started['run_id']}/finish",
        {
            "checks": {"unit": {"exit_code": 0, "duration_ms": 10}},
            "results": {
                c["id"]: {
                    "result": "pass",
                    "detail": "passed in the report",
                    "source": {"check": "unit", "report": "reports/junit.xml", "ref": c["verify_ref"]},
                }
                for c in started["criteria"]
            },
            "base": BASE1.model_dump(mode="json"),
        },
    )
    assert status == 200 and finished["task_status"] == "verified", finished
    base = cloud.ctx.task(old).verified_base
    assert base is not None and base.tip == TIP1
    status, work = rest.call(ci_key, "GET", "/api/verifier/work", query={"project": "shop"})
    assert work["items"] == [fresh]


def test_a_push_that_moves_nothing_starts_nothing(cloud: Stack) -> None:
    """Another branch, the tip already known, a deleted branch: answered, nothing recorded, no
    record for the dispatcher."""
    rest = Rest(cloud)
    ci = _project(cloud, "shop")
    webhook = _verifier_key(cloud, "webhook", "shop")
    _verified(cloud, "shop", _agent(cloud), ci)
    status, _ = rest.call(webhook, "POST", "/api/verifier/projects/shop/base", {"ref": "main", "tip": TIP1})
    assert status == 200
    cloud.new_records()
    version = cloud.ctx.project("shop").version

    answers = [
        rest.call(webhook, "POST", "/api/verifier/projects/shop/base", body)
        for body in (
            _push(TIP1, TIP2, ref="refs/heads/feature"),
            {"ref": "refs/heads/main", "tip": TIP1},  # the webhook and the verifier's read, both
            _push(TIP1, "0" * 40),  # main deleted on the host
        )
    ]
    assert [(s, a["changed"], a["ignored"]) for s, a in answers] == [
        (200, False, "feature is not the base branch (main)"),
        (200, False, None),
        (200, False, "the push deleted main"),
    ]
    assert cloud.ctx.project("shop").version == version
    known = cloud.ctx.project("shop").base_tip
    assert known is not None and known.tip == TIP1
    assert cloud.delivered(cloud.new_records()) == []
    assert _commands(cloud) == []


def test_a_move_that_left_nothing_stale_starts_no_verifier(cloud: Stack) -> None:
    rest = Rest(cloud)
    _project(cloud, "shop")  # nothing verified yet
    webhook = _verifier_key(cloud, "webhook", "shop")
    cloud.new_records()
    status, moved = rest.call(webhook, "POST", "/api/verifier/projects/shop/base", _push(TIP0, TIP1))
    assert status == 200 and moved["changed"] is True and moved["stale"] == []
    delivered = cloud.delivered(cloud.new_records())
    assert len(delivered) == 1
    assert cloud.invoke(handler, stream_event(delivered)) == {"batchItemFailures": []}
    assert _commands(cloud) == []
    assert [m["outcome"] for m in _logged(cloud, "base moved")] == ["nothing_stale"]


def test_bad_bodies_wrong_keys_and_unknown_projects_are_refused_and_change_nothing(cloud: Stack) -> None:
    rest = Rest(cloud)
    ci = _project(cloud, "shop")
    projects.create(cloud.ctx, HUMAN, "other", repo="https://git.example.com/other.git")
    task = _verified(cloud, "shop", _agent(cloud), ci)
    webhook = _verifier_key(cloud, "webhook", "shop")
    everywhere = _verifier_key(cloud, "everywhere", None)
    elsewhere = _verifier_key(cloud, "elsewhere", "other")
    reviewer = _verifier_key(cloud, "judge", "shop", VerifierKind.REVIEWER)
    agent_key = keys.create(cloud.ctx, HUMAN, kind=CredentialKind.AGENT, name="exec").secret
    cloud.new_records()
    before = cloud.ctx.store.get(*records.project_key("shop"))
    history = len(cloud.ctx.store.query("PH#shop", limit=500).items)
    path = "/api/verifier/projects/shop/base"

    refusals = [
        (webhook, path, {"ref": "refs/heads/main"}),  # no tip
        (webhook, path, {"tip": TIP1}),  # no ref
        (webhook, path, {"ref": "refs/tags/v1.0", "after": TIP1}),  # a tag, not a branch
        (webhook, path, {"ref": "main", "tip": "deadbeef"}),  # not a full commit id
        (webhook, path, {"ref": "main", "tip": TIP1, "after": TIP2}),  # two different tips
        (webhook, path, {"ref": "main", "tip": 7}),
        (webhook, path, "not json"),
        (agent_key, path, _push(TIP0, TIP1)),  # an agent's key: only a verifier may say so
        (reviewer, path, _push(TIP0, TIP1)),  # a reviewer judges review criteria only
        (elsewhere, path, _push(TIP0, TIP1)),  # a verifier of another project
        (everywhere, "/api/verifier/projects/nosuch/base", _push(TIP0, TIP1)),
        ("tgv_not-a-key", path, _push(TIP0, TIP1)),  # the authorizer refuses it
    ]
    answers = [rest.call(key, "POST", p, body) for key, p, body in refusals]
    codes = [(status, (answer or {}).get("code")) for status, answer in answers]
    assert codes == [
        (422, "E_VALIDATION"),
        (422, "E_VALIDATION"),
        (422, "E_VALIDATION"),
        (422, "E_VALIDATION"),
        (422, "E_VALIDATION"),
        (422, "E_VALIDATION"),
        (422, "E_VALIDATION"),
        (403, "E_FORBIDDEN"),
        (403, "E_FORBIDDEN"),
        (403, "E_FORBIDDEN"),
        (404, "E_NOT_FOUND"),
        (401, None),
    ], answers
    assert "a push payload's `after`" in answers[0][1]["message"]
    assert "different commits" in answers[4][1]["message"]

    assert cloud.ctx.store.get(*records.project_key("shop")) == before
    assert cloud.ctx.project("shop").base_tip is None
    assert cloud.ctx.store.get(*records.base_moved_key("shop")) is None
    assert cloud.ctx.store.get(*records.base_moved_key("nosuch")) is None
    assert len(cloud.ctx.store.query("PH#shop", limit=500).items) == history
    assert cloud.delivered(cloud.new_records()) == []
    assert cloud.ctx.task(task).status is Status.VERIFIED
    assert _commands(cloud) == []

    # The function checks the key itself too: a request that reached it without the
    # authorizer's yes (a misrouted integration) is refused the same.
    event = v2_event(_push(TIP0, TIP1), method="POST", path=path, headers={"authorization": "Bearer tgv_x"})
    response = cloud.invoke(api.handler, event)
    assert response["statusCode"] == 401 and json.loads(response["body"])["code"] == "E_UNAUTHORIZED"
    assert cloud.ctx.project("shop").base_tip is None


def test_the_sweep_starts_a_verifier_where_stale_work_waits_without_one(cloud: Stack) -> None:
    """The move's record was lost (the dispatcher gave up on it): the scheduled sweep finds the
    stale tasks and starts a task; a project whose verdicts are current gets none."""
    ci = _project(cloud, "shop")
    calm = _project(cloud, "calm")
    agent = _agent(cloud)
    _verified(cloud, "shop", agent, ci)
    _verified(cloud, "calm", agent, calm)
    staleness.base_moved(cloud.ctx, ci, "shop", ref="refs/heads/main", tip=TIP1)
    staleness.base_moved(cloud.ctx, calm, "calm", ref="refs/heads/main", tip=TIP0)
    cloud.new_records()  # lost

    event = {"sweep": True, "execution_id": "e-1", "scheduled_time": "2026-01-01T00:05:00Z"}
    report = cloud.invoke(handler, event)
    assert list(report["started"]) == ["shop"]
    assert _commands(cloud) == [drain_command("shop")]
    [line] = _logged(cloud, "sweep verifier started")
    assert (line["project"], line["why"]) == ("shop", "stale")
    # The next sweep: the task's slot is live and the one stale task is its work.
    assert cloud.invoke(handler, {**event, "execution_id": "e-2"}) == {"started": {}, "lapsed": []}
    assert len(_commands(cloud)) == 1


def _repo(tmp_path: Path) -> tuple[Path, str]:
    """A real repository whose main has one commit; its path and main's tip."""
    repo = tmp_path / "shop"
    repo.mkdir()
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
    }

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=repo,
            check=True,
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", **env},
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    (repo / "app.py").write_text("VALUE = 1\n")
    git("add", "app.py")
    git("commit", "-q", "-m", "first")
    return repo, git("rev-parse", "HEAD")


def test_the_nightly_run_starts_a_verifier_that_reads_the_tip_and_reverifies_what_is_stale(
    cloud: Stack, tmp_path: Path
) -> None:
    """No webhook told the server that main moved. The nightly run starts a verifier for each
    project whose verdicts hold for a base tip (none where merging is off, nothing is verified,
    or verification is off); that task's first look at the queue reads main's tip from the
    repository, reports it, and is handed the tasks verified on the old tip."""
    rest = Rest(cloud)
    repo, tip = _repo(tmp_path)
    ci = _project(cloud, "shop", repo=str(repo))
    ci_key = _verifier_key(cloud, "drain", "shop")
    agent = _agent(cloud)
    task = _verified(cloud, "shop", agent, ci, commit=tip)  # on TIP0; the repository's main is elsewhere
    plain = _project(cloud, "plain", merge="none")
    _verified(cloud, "plain", agent, plain, base=None)
    _project(cloud, "fresh")  # verification on, nothing verified
    off = _project(cloud, "off")
    _verified(cloud, "off", agent, off)
    projects.set_verification(cloud.ctx, HUMAN, "off", False)
    cloud.new_records()

    nightly = {"nightly": True, "execution_id": "n-1", "scheduled_time": "2026-01-02T02:00:00Z"}
    report = cloud.invoke(handler, nightly)
    assert list(report["started"]) == ["shop"]
    assert _commands(cloud) == [drain_command("shop")]
    [line] = _logged(cloud, "nightly verifier started")
    assert (line["project"], line["why"]) == ("shop", "read_tip")
    assert cloud.invoke(handler, {**nightly, "execution_id": "n-2"})["started"] == {}  # it still drains

    # The started task's first look, as `taskgate verify --drain` makes it (worker.waiting):
    # the work route, then the tips of its projects read from the repository and reported.
    status, work = rest.call(ci_key, "GET", "/api/verifier/work", query={"project": "shop"})
    assert status == 200 and work["items"] == [] and work["projects"][0]["base_tip"] is None

    def report_tip(project: str, ref: str, new_tip: str) -> dict[str, Any]:
        path = f"/api/verifier/projects/{project}/base"
        code, answer = rest.call(ci_key, "POST", path, {"ref": ref, "after": new_tip})
        assert code == 200, answer
        out: dict[str, Any] = answer
        return out

    tips.notice_moves(Git({"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}), work["projects"], report_tip)
    known = cloud.ctx.project("shop").base_tip
    assert known is not None and known.tip == tip
    status, work = rest.call(ci_key, "GET", "/api/verifier/work", query={"project": "shop"})
    assert work["items"] == [task]
    status, started = rest.call(ci_key, "POST", "/api/verifier/runs", {"task_id": task})
    assert status == 201 and started["reverify"] is True
    # The move it reported is on the stream too: the task already holds a slot for the one
    # stale task, so no second one starts.
    assert cloud.invoke(handler, stream_event(cloud.delivered(cloud.new_records()))) == {
        "batchItemFailures": []
    }
    assert [m["outcome"] for m in _logged(cloud, "base moved")] == ["draining"]
    assert len(_commands(cloud)) == 1
