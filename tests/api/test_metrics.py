"""Metrics per project, from the stored records, over a window of days (manual clock)."""

from __future__ import annotations

from typing import Any

from taskgate.domain.models import FailureKind, SelfReport
from taskgate.domain.run_report import Evidence
from taskgate.service import claims
from tests.api.support import Env
from tests.support.evidence import run_verifier
from tests.support.world import SHA


def _claim(env: Env, pid: str, tid: str) -> str:
    return claims.claim(env.ctx, env.actings["agent"], pid, task_id=tid).token


def _submit(env: Env, tid: str, token: str, report: dict[str, SelfReport] | None = None) -> None:
    claims.submit(
        env.ctx, env.actings["agent"], tid, token, commit_sha=SHA, evidence="done", self_report=report
    )


def _verify(env: Env, tid: str, evidence: Evidence | None, *, error: str | None = None) -> None:
    env.clock.advance(minutes=1)
    run_verifier(
        env.ctx, env.actings["verifier"], tid, evidence, reviewer=env.actings["reviewer"], error=error
    )


def _metrics(env: Env, pid: str, days: int = 7) -> dict[str, Any]:
    resp = env.call("GET", f"/api/projects/{pid}/metrics", query={"days": str(days)})
    assert resp.status == 200, resp
    return dict(resp.json)


def test_throughput_cycle_time_and_attempts(env: Env) -> None:
    clock = env.clock  # starts 2026-01-01T00:00Z
    pid = env.project("demo")
    a, b, c = env.task(pid), env.task(pid), env.task(pid)
    ta, tb, tc = _claim(env, pid, a), _claim(env, pid, b), _claim(env, pid, c)
    clock.advance(minutes=20)  # leases are 30 minutes: stay inside them
    _submit(env, a, ta)
    _submit(env, c, tc)
    claims.report_failure(env.ctx, env.actings["agent"], b, tb, kind=FailureKind.OTHER, findings=["flaky"])
    clock.advance(minutes=20)  # Jan 1 00:40
    assert env.call("POST", f"/api/tasks/{a}/accept").status == 200  # cycle 40 min, 1 attempt
    _submit(env, b, _claim(env, pid, b))
    clock.advance(hours=25)  # Jan 2 01:40
    assert env.call("POST", f"/api/tasks/{b}/accept").status == 200  # cycle 25h40, 2 attempts
    assert env.call("POST", f"/api/tasks/{c}/accept").status == 200  # cycle 25h40, 1 attempt
    clock.advance(hours=32, minutes=20)  # Jan 3 10:00
    assert env.call("POST", f"/api/tasks/{c}/reopen", body={"findings": ["regressed"]}).status == 200
    tc2 = _claim(env, pid, c)
    clock.advance(minutes=20)
    _submit(env, c, tc2)
    clock.advance(minutes=20)  # Jan 3 10:40
    assert env.call("POST", f"/api/tasks/{c}/accept").status == 200  # again: cycle 40 min, 2 attempts

    m = _metrics(env, pid)
    assert (m["since"], m["days"]) == ("2025-12-28T00:00:00Z", 7)
    per_day = {d["date"]: d["done"] for d in m["throughput_per_day"]}
    assert len(per_day) == 7 and sum(per_day.values()) == m["done"] == 4
    assert (per_day["2026-01-01"], per_day["2026-01-02"], per_day["2026-01-03"]) == (1, 2, 1)
    short, long = 40 * 60.0, (25 * 60 + 40) * 60.0
    assert m["cycle_time"] == {
        "count": 4,
        "mean_seconds": (short + long) / 2,
        "median_seconds": short,
        "p90_seconds": long,
    }
    assert m["attempts_per_task"] == {
        "tasks": 3,
        "mean": round(5 / 3, 3),
        "max": 2,
        "histogram": {"1": 1, "2": 2},
    }
    # no verification in this project
    assert m["first_pass_verification"] == {"tasks": 0, "passed": 0, "rate": None}
    assert m["verifier_errors"] == {"runs": 0, "errors": 0, "rate": None}

    # outside the window nothing counts
    clock.advance(days=30)
    later = _metrics(env, pid)
    assert (
        later["done"] == 0 and later["cycle_time"]["count"] == 0 and later["attempts_per_task"]["tasks"] == 0
    )
    assert _metrics(env, pid, days=40)["done"] == 4


def test_first_pass_verifier_errors_and_self_report_mismatches(env: Env) -> None:
    pid = env.project("vp", verification=True)
    crit = env.test_criterion()
    d = env.task(pid, criteria=crit)
    e = env.task(pid, criteria=crit)
    cid = f"AC-{d}.1"
    _submit(env, d, _claim(env, pid, d), {cid: SelfReport.PASS})
    _verify(env, d, Evidence.FAIL)  # fails a criterion the agent said passed: mismatch
    _submit(env, d, _claim(env, pid, d))
    _verify(env, d, None, error="checkout failed")
    _verify(env, d, Evidence.PASS)
    _submit(env, e, _claim(env, pid, e))
    _verify(env, e, Evidence.PASS)
    for tid in (d, e):
        assert env.call("POST", f"/api/tasks/{tid}/accept").json["status"] == "done"

    m = _metrics(env, pid)
    assert m["first_pass_verification"] == {"tasks": 2, "passed": 1, "rate": 0.5}
    assert m["verifier_errors"] == {"runs": 4, "errors": 1, "rate": 0.25}
    assert m["self_report_mismatches"] == {"findings": 1, "criteria": 1, "tasks": [d]}
    assert m["attempts_per_task"]["histogram"] == {"1": 1, "2": 1}


def test_metrics_need_a_project_and_a_sane_window(env: Env) -> None:
    assert env.call("GET", "/api/projects/nope/metrics").status == 404
    pid = env.project("demo")
    assert env.call("GET", f"/api/projects/{pid}/metrics", query={"days": "0"}).status == 422
    assert env.call("GET", f"/api/projects/{pid}/metrics", query={"days": "91"}).status == 422
    m = _metrics(env, pid, days=1)
    assert m["throughput_per_day"] == [{"date": "2026-01-01", "done": 0}]
