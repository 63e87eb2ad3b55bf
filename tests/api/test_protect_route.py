"""The verifier config's protect globs on their own route, through a real `taskgate serve`: the
globs in force and the default are shown, a change replaces protect alone, bad input and other
callers change nothing, and racing saves never write back an older copy of the config."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from taskgate.domain.baseline import DEFAULT_PROTECT
from tests.mcp.live import Live, serving

CONFIG: dict[str, Any] = {
    "check_timeout_minutes": 7,
    "checks": {
        "unit": {
            "command": "bash scripts/ci.sh && pytest --junitxml=reports/junit.xml",
            "report": {"path": "reports/junit.xml", "format": "junit"},
        }
    },
}
_n = itertools.count(1)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    yield from serving(tmp_path_factory.mktemp("protect-data"))


def _project(live: Live, *, config: bool = True) -> str:
    name = f"pr{next(_n)}-{os.getpid() % 10000}"
    live.project(name)
    if config:
        live.ok("PUT", f"/api/projects/{name}/verifier-config", CONFIG)
    return name


def _protect(live: Live, project: str, body: Any, token: str | None = None) -> tuple[int, dict[str, Any]]:
    r = live.rest("PUT", f"/api/projects/{project}/verifier-config/protect", body, token=token)
    return r.status_code, r.json()


def _config_events(live: Live, project: str) -> list[dict[str, Any]]:
    items = live.ok("GET", f"/api/projects/{project}/history?limit=200")["items"]
    return [e["detail"] for e in reversed(items) if e["action"] == "verifier_config_changed"]


def test_the_default_and_the_globs_in_force_are_shown(live: Live) -> None:
    project = _project(live)
    got = live.ok("GET", f"/api/projects/{project}/verifier-config")
    assert got["config"]["protect"] is None
    assert got["protect_default"] == list(DEFAULT_PROTECT)
    # the default, plus the script the check runs by path
    assert got["protect_in_force"] == [*DEFAULT_PROTECT, "scripts/ci.sh"]


def test_protect_alone_changes_and_round_trips(live: Live) -> None:
    project = _project(live)
    status, out = _protect(live, project, {"protect": ["tests/**/fixtures/", "Makefile"]})
    assert status == 200, out
    assert out["config"]["protect"] == ["tests/**/fixtures/", "Makefile"]
    # the rest of the config is as it was stored
    assert out["config"]["check_timeout_minutes"] == 7
    assert (
        out["config"]["checks"]
        == live.ok("GET", f"/api/projects/{project}/verifier-config")["config"]["checks"]
    )
    assert out["protect_in_force"] == ["tests/**/fixtures/", "Makefile", "scripts/ci.sh"]
    assert live.ok("GET", f"/api/projects/{project}/verifier-config")["config"]["protect"] == [
        "tests/**/fixtures/",
        "Makefile",
    ]
    status, out = _protect(live, project, {"protect": []})
    assert (status, out["config"]["protect"], out["protect_in_force"]) == (200, [], [])
    status, out = _protect(live, project, {"protect": None})
    assert (status, out["config"]["protect"]) == (200, None)
    assert out["protect_in_force"] == [*DEFAULT_PROTECT, "scripts/ci.sh"]
    # each change is in the project's history with its before and after
    changes = _config_events(live, project)
    assert [c["config"]["protect"] for c in changes] == [None, ["tests/**/fixtures/", "Makefile"], [], None]
    assert changes[1]["previous"]["protect"] is None and changes[2]["previous"]["protect"] == [
        "tests/**/fixtures/",
        "Makefile",
    ]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"protect": ["../outside"]}, 422, "E_VALIDATION"),
        ({"protect": [""]}, 422, "E_VALIDATION"),
        ({"protect": ["a" * 501]}, 422, "E_VALIDATION"),
        ({"protect": "**/conftest.py"}, 422, "E_VALIDATION"),
        ({"protect": ["x"] * 201}, 422, "E_VALIDATION"),
        ({}, 422, "E_VALIDATION"),
        ({"protect": [], "checks": {}}, 422, "E_VALIDATION"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(live: Live, body: Any, status: int, code: str) -> None:
    project = _project(live)
    before = live.dump()
    got, out = _protect(live, project, body)
    assert (got, out["code"]) == (status, code), out
    assert live.dump() == before


def test_a_project_without_a_config_is_refused(live: Live) -> None:
    project = _project(live, config=False)
    before = live.dump()
    status, out = _protect(live, project, {"protect": []})
    assert (status, out["code"]) == (409, "E_WRONG_STATE"), out
    assert out["message"] == f"{project} has no verifier config yet: save one with its checks first"
    assert live.dump() == before


def test_an_agent_or_a_verifier_cannot_change_it(live: Live) -> None:
    """An executor switching protection off would let its next commit rewrite conftest.py."""
    project = _project(live)
    agent, _ = live.key(f"exec-{project}", projects=[project], delegations=["human:alice"])
    verifier, _ = live.key(f"ci-{project}", kind="verifier", verifier_kind="local", projects=[project])
    before = live.dump()
    for token in (agent, verifier):
        status, out = _protect(live, project, {"protect": []}, token=token)
        assert (status, out["code"]) == (403, "E_FORBIDDEN"), out
    assert live.dump() == before
    assert live.ok("GET", f"/api/projects/{project}/verifier-config")["config"]["protect"] is None


def test_racing_saves_never_write_back_an_older_config(live: Live) -> None:
    """Protect saves race full config saves: every change the server took follows the one
    before it (its `previous` is that one's `config`), and the stored config is the last."""
    project = _project(live)
    results: list[tuple[str, int]] = []
    lock = threading.Lock()

    def save_protect(i: int) -> None:
        status, _ = _protect(live, project, {"protect": [f"guard{i}/"]})
        with lock:
            results.append(("protect", status))

    def save_config(i: int) -> None:
        r = live.rest(
            "PUT", f"/api/projects/{project}/verifier-config", {**CONFIG, "check_timeout_minutes": 20 + i}
        )
        with lock:
            results.append(("config", r.status_code))

    threads = [threading.Thread(target=save_protect, args=(i,)) for i in range(6)]
    threads += [threading.Thread(target=save_config, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 12
    assert all(status in (200, 409) for _, status in results), results
    changes = _config_events(live, project)
    assert len(changes) == 1 + sum(status == 200 for _, status in results)
    for earlier, later in itertools.pairwise(changes):
        assert later["previous"] == earlier["config"]
    stored = live.ok("GET", f"/api/projects/{project}/verifier-config")["config"]
    assert stored == changes[-1]["config"]
