"""Verify together, then accept, end to end: a real `taskgate serve`, real git repositories,
`taskgate verify` as a real subprocess running pytest, a delegated agent asking over MCP (the
SDK's Client) and a human over REST. A batch is merged in order onto main's tip and checked once;
a failing batch is bisected to the task that breaks it, which goes back to ready without using
an attempt, and the rest are accepted by the human who asked."""

from __future__ import annotations

import base64
import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx2

from tests.mcp.events import MODERN
from tests.mcp.live import ADMIN, Live, agent, run
from tests.support.conf_project import RENAME, RENAMED, RENAMED_TEST, USE, USE_PY, USES, conf_gate, on_branch
from tests.verifier.support import TASKGATE, Gate, git, pytest_config


def own_test(name: str) -> tuple[dict[str, str], dict[str, Any]]:
    """A task's files (a module of its own and its test) and its criterion on that test."""
    module = f"def {name}():\n    return '{name}'\n"
    body = f"from {name} import {name}\n\n\ndef test_{name}():\n    assert {name}().isalpha()\n"
    return {f"{name}.py": module, f"test_{name}.py": body}, {
        "text": f"{name} works",
        "kind": "test",
        "verify_ref": f"test_{name}.test_{name}",
    }


def verified_five(gate: Gate) -> tuple[list[str], str]:
    """Five tasks, each branched from main's tip and verified alone on it: the second renames the
    limit, the fourth uses the old name (each passes alone; together the fourth fails)."""
    repo = gate.repo
    fork = git(repo.path, "rev-parse", "HEAD")
    plan: list[tuple[dict[str, str], dict[str, Any]]] = [
        own_test("alpha"),
        ({"conf.py": RENAMED, "test_conf.py": RENAMED_TEST}, RENAME),
        own_test("gamma"),
        ({"use.py": USE_PY, "test_use.py": USES}, USE),
        own_test("epsilon"),
    ]
    ids = []
    for i, (files, criterion) in enumerate(plan):
        tid = gate.task([criterion])
        sha = on_branch(repo, f"t{i}", fork, files)
        gate.submit(tid, sha)
        ids.append(tid)
    lines = gate.verify_json()
    assert sorted((x["task_id"], x["verdict"]) for x in lines) == sorted((t, "passed") for t in ids)
    return ids, fork


def delegate(gate: Gate) -> str:
    """An agent key the human delegated to (not the executor's): it asks for the batch."""
    key, _ = gate.live.key(f"lead-{gate.project}", projects=[gate.project], delegations=[f"human:{ADMIN}"])
    return key


def ask_together(gate: Gate, key: str, ids: list[str]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with agent(gate.live.mcp_url, key, MODERN) as a:
            return await a.ok(
                "accept_tasks",
                project=gate.project,
                task_ids=ids,
                together=True,
                on_behalf_of=f"human:{ADMIN}",
            )

    return run(go())


def refused_together(gate: Gate, key: str, ids: list[str]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with agent(gate.live.mcp_url, key, MODERN) as a:
            return await a.refused(
                "accept_tasks",
                project=gate.project,
                task_ids=ids,
                together=True,
                on_behalf_of=f"human:{ADMIN}",
            )

    return run(go())


def batch_lines(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in lines if "batch_id" in x]


def acceptance_facts(live: Live, tid: str) -> dict[str, Any]:
    envelopes = [json.loads(x) for x in live.rest("GET", f"/api/tasks/{tid}/attestations").text.splitlines()]
    facts: dict[str, Any] = json.loads(base64.b64decode(envelopes[-1]["payload"]))["predicate"]["taskgate"]
    return facts


def test_a_batch_of_five_is_bisected_to_the_one_that_breaks_it(live: Live, tmp_path: Path) -> None:
    gate = conf_gate(live, tmp_path)
    ids, fork = verified_five(gate)
    queued = ask_together(gate, delegate(gate), ids)
    assert queued["accepted"] == [] and queued["refused"] == []
    assert queued["batch"]["task_ids"] == ids and queued["batch"]["status"] == "queued"
    batch_id = queued["batch"]["id"]
    # the tasks stay verified while the batch waits
    assert {gate.detail(t)["task"]["status"] for t in ids} == {"verified"}
    runs = batch_lines(gate.verify_json())
    # bors: all five fail; the first two pass, the first three pass, the first four fail: the
    # fourth breaks it (with the three before it); the other four then pass together
    assert [(r["tasks"], r["verdict"]) for r in runs] == [
        (ids, "failed"),
        (ids[:2], "passed"),
        (ids[:3], "passed"),
        (ids[:4], "failed"),
        ([*ids[:3], ids[4]], "passed"),
    ]
    assert {r["tip"] for r in runs} == {fork}
    last = runs[-1]
    assert last["batch_status"] == "done" and last["culprits"] == [ids[3]]
    assert last["accepted"] == [ids[0], ids[1], ids[2], ids[4]]
    for tid in last["accepted"]:
        assert gate.detail(tid)["task"]["status"] == "done"
        facts = acceptance_facts(live, tid)
        assert facts["together"]["said"] == f"verified together onto main at {fork} (batch {batch_id})"
        # as a delegated acceptance always reads: the agent that asked, for the human
        assert facts["acceptedBy"] == f"agent:lead-{gate.project}" and facts["onBehalfOf"] == f"human:{ADMIN}"
        assert facts["acceptedVia"] == "delegated"
    culprit = gate.detail(ids[3])
    task = culprit["task"]
    assert task["status"] == "ready" and task["attempts_used"] == 0 and task["verified_base"] is None
    assert task["findings"][-1]["summary"].startswith(
        f"batch {batch_id}: {ids[3]} passes alone but breaks verified together with "
        f"{ids[0]}, {ids[1]}, {ids[2]} merged onto main at {fork[:12]} (AC-"
    )
    assert task["findings"][-1]["summary"].endswith(
        "; no attempt was used. Once the others land on main, rebase your work onto it, make it pass "
        "with them, and submit again"
    )
    # each task keeps its own evidence: one run record per batch run it was merged in
    own = [r for r in culprit["runs"] if r["batch"] == batch_id]
    assert [r["status"] for r in own] == ["failed", "failed"]
    [(cid, evidence)] = own[-1]["evidence"].items()  # its own criterion only
    assert evidence["result"] == "fail" and evidence["source"]["ref"] == "test_use.test_uses_limit"
    assert f"({cid} fail: " in task["findings"][-1]["summary"]
    assert own[-1]["checks"]["unit"]["exit_code"] == 1 and own[-1]["base"]["tip"] == fork
    assert [r["status"] for r in gate.detail(ids[4])["runs"] if r["batch"] == batch_id] == [
        "failed",
        "passed",
    ]
    batch = live.ok("GET", f"/api/projects/{gate.project}/batches/{batch_id}")
    assert batch["requested_by"]["via"] == "delegated" and len(batch["steps"]) == 5
    # the repository's branches were never touched
    assert git(gate.repo.path, "rev-parse", "main") == fork


def test_a_batch_that_passes_together_is_accepted_after_one_run(live: Live, tmp_path: Path) -> None:
    gate = conf_gate(live, tmp_path)
    fork = git(gate.repo.path, "rev-parse", "HEAD")
    ids = []
    for name in ("one", "two", "three"):
        files, criterion = own_test(name)
        tid = gate.task([criterion])
        gate.submit(tid, on_branch(gate.repo, name, fork, files))
        ids.append(tid)
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"] * 3
    out = live.ok("POST", f"/api/projects/{gate.project}/accept", {"task_ids": ids, "together": True})
    assert out["accepted"] == [] and out["batch"]["status"] == "queued"
    runs = batch_lines(gate.verify_json())
    assert [(r["tasks"], r["verdict"], r["batch_status"]) for r in runs] == [(ids, "passed", "done")]
    assert runs[0]["accepted"] == ids and runs[0]["culprits"] == []
    for tid in ids:
        detail = gate.detail(tid)
        assert detail["task"]["status"] == "done"
        accepted = [e for e in detail["history"] if e["action"] == "accept"]
        assert accepted[-1]["actor"] == f"human:{ADMIN}" and accepted[-1]["detail"]["via"] == "script"
        assert accepted[-1]["detail"]["together"]["batch"] == out["batch"]["id"]
    # nothing is left to verify: the batch ended
    assert batch_lines(gate.verify_json()) == []


def test_refusals_change_nothing(live: Live, tmp_path: Path) -> None:
    gate = conf_gate(live, tmp_path)
    fork = git(gate.repo.path, "rev-parse", "HEAD")
    files, criterion = own_test("solo")
    ok = gate.task([criterion])
    gate.submit(ok, on_branch(gate.repo, "solo", fork, files))
    risky_files, risky_criterion = own_test("risky")
    risky = gate.task([risky_criterion], risk="medium")
    gate.submit(risky, on_branch(gate.repo, "risky", fork, risky_files))
    assert [x["verdict"] for x in gate.verify_json()] == ["passed", "passed"]
    waiting = gate.task([criterion])
    key = delegate(gate)
    before = live.dump()
    assert refused_together(gate, key, [ok, waiting])["code"] == "E_WRONG_STATE"
    assert refused_together(gate, key, [ok, risky])["code"] == "E_FORBIDDEN"
    assert refused_together(gate, key, [ok, ok])["code"] == "E_VALIDATION"
    too_many = live.rest(
        "POST",
        f"/api/projects/{gate.project}/accept",
        {"task_ids": [f"{gate.project}-{n}" for n in range(1, 34)], "together": True},
    )
    assert too_many.status_code == 422 and too_many.json()["code"] == "E_VALIDATION"
    assert "at most 32 tasks are verified together" in too_many.json()["message"]
    empty = live.rest("POST", f"/api/projects/{gate.project}/accept", {"task_ids": [], "together": True})
    assert empty.status_code == 422 and empty.json()["code"] == "E_VALIDATION"
    assert live.dump() == before
    # a task already in a waiting batch is not taken by a second one
    live.ok("POST", f"/api/projects/{gate.project}/accept", {"task_ids": [ok], "together": True})
    before = live.dump()
    again = refused_together(gate, key, [ok])
    assert (
        again["code"] == "E_CONFLICT"
        and again["message"] == f"{ok} is already in a batch waiting to be verified together"
    )
    assert live.dump() == before
    # merge: none verifies nothing merged, so there is nothing to verify together
    gate.configure(pytest_config(merge="none"))
    before = live.dump()
    none = refused_together(gate, key, [risky])
    assert none["code"] == "E_WRONG_STATE"
    assert none["message"] == (
        f"project {gate.project}'s verifier config sets merge: none, so nothing is verified merged; "
        "accept the tasks as a batch instead"
    )
    assert live.dump() == before


def _start(live: Live, key: str, project: str, batch_id: str) -> httpx2.Response:
    return live.rest("POST", f"/api/verifier/projects/{project}/batches/{batch_id}/runs", token=key)


def test_a_hostile_verifier_cannot_report_on_a_task_outside_the_batch(live: Live, tmp_path: Path) -> None:
    gate = conf_gate(live, tmp_path)
    fork = git(gate.repo.path, "rev-parse", "HEAD")
    ids = []
    for name in ("in", "out"):
        files, criterion = own_test(f"x{name}")
        tid = gate.task([criterion])
        gate.submit(tid, on_branch(gate.repo, name, fork, files))
        ids.append(tid)
    gate.verify_json()
    inside, outside = ids
    batch = live.ok("POST", f"/api/projects/{gate.project}/accept", {"task_ids": [inside], "together": True})[
        "batch"
    ]
    started = _start(live, gate.verifier_key, gate.project, batch["id"])
    assert started.status_code == 201, started.text
    work = started.json()
    assert [t["task_id"] for t in work["tasks"]] == [inside]
    crit_in = work["tasks"][0]["criteria"][0]["id"]
    [crit_out] = gate.detail(outside)["runs"][-1]["evidence"]
    finish = f"/api/verifier/projects/{gate.project}/batches/{batch['id']}/runs/{work['run_id']}/finish"
    passing = {"result": "pass", "detail": "1 passed"}
    body = {
        "tip": fork,
        "tree": git(gate.repo.path, "rev-parse", f"{fork}^{{tree}}"),
        "checks": {"unit": {"exit_code": 0}},
        "results": {inside: {crit_in: passing}, outside: {crit_out: passing}},
    }
    other, _ = live.key(
        f"ci2-{gate.project}", kind="verifier", verifier_kind="local", projects=[gate.project]
    )
    before = live.dump()
    refused = live.rest("POST", finish, body, token=gate.verifier_key)
    assert refused.status_code == 422 and refused.json()["code"] == "E_VALIDATION"
    assert refused.json()["message"] == (
        f"run {work['run_id']} of batch {batch['id']} merged {inside}; it sent evidence about tasks "
        f"outside it: {outside}. Nothing was recorded"
    )
    assert live.dump() == before
    # nor does naming the outside task as the one that conflicted
    conflicted = live.rest(
        "POST",
        finish,
        {"tip": fork, "conflict_task": outside, "conflict_paths": ["x"]},
        token=gate.verifier_key,
    )
    assert conflicted.status_code == 422 and live.dump() == before
    # another verifier key cannot finish this one's run
    stolen = live.rest("POST", finish, {**body, "results": {inside: {crit_in: passing}}}, token=other)
    assert stolen.status_code == 403 and live.dump() == before
    assert gate.detail(outside)["task"]["status"] == "verified"
    assert gate.detail(inside)["task"]["status"] == "verified"


def test_two_verifiers_racing_for_a_batch_make_one_run(live: Live, tmp_path: Path) -> None:
    gate = conf_gate(live, tmp_path)
    fork = git(gate.repo.path, "rev-parse", "HEAD")
    ids = []
    for name in ("ra", "rb"):
        files, criterion = own_test(name)
        tid = gate.task([criterion])
        gate.submit(tid, on_branch(gate.repo, name, fork, files))
        ids.append(tid)
    gate.verify_json()
    batch = live.ok("POST", f"/api/projects/{gate.project}/accept", {"task_ids": ids, "together": True})[
        "batch"
    ]
    # eight requests at once for the batch's run: exactly one starts it
    barrier = threading.Barrier(8)
    answers: list[int] = []

    def take() -> None:
        barrier.wait()
        answers.append(_start(live, gate.verifier_key, gate.project, batch["id"]).status_code)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [201] + [409] * 7, answers
    state = live.ok("GET", f"/api/projects/{gate.project}/batches/{batch['id']}")
    assert len(state["steps"]) == 1 and state["status"] == "running"


def test_two_verify_processes_racing_for_a_batch_make_one_run(live: Live, tmp_path: Path) -> None:
    gate = conf_gate(live, tmp_path)
    fork = git(gate.repo.path, "rev-parse", "HEAD")
    ids = []
    for name in ("pa", "pb"):
        files, criterion = own_test(name)
        tid = gate.task([criterion])
        gate.submit(tid, on_branch(gate.repo, name, fork, files))
        ids.append(tid)
    gate.verify_json()
    batch = live.ok("POST", f"/api/projects/{gate.project}/accept", {"task_ids": ids, "together": True})[
        "batch"
    ]
    cmd = [TASKGATE, "verify", "--once", "--project", gate.project, "--json"]
    procs = [
        subprocess.Popen(
            cmd, env=gate.verify_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    lines = [json.loads(x) for out, _ in outs for x in out.splitlines() if x.strip()]
    assert [(x["batch_id"], x["verdict"]) for x in batch_lines(lines)] == [(batch["id"], "passed")]
    state = live.ok("GET", f"/api/projects/{gate.project}/batches/{batch['id']}")
    assert len(state["steps"]) == 1 and state["accepted"] == ids
