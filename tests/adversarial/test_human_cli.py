"""A human's CLI, played as the gated agent: a shell as the human's own OS user, with
the admin token in the data dir the CLI reads by itself, but no person at a terminal.

The agent's shell is the CLI in a subprocess of its own session (no controlling terminal) with
stdin from /dev/null or holding the very answer the prompt wants; the human is the same command
with a pseudo-terminal as its controlling terminal, typing the confirmation
(tests/support/terminal.py). Every state is read back over REST from a real `taskgate serve`.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from taskgate.domain.clock import SystemClock
from taskgate.domain.models import CriterionInput
from taskgate.domain.principals import Acting, acting
from taskgate.service import claims, keys, tasks
from taskgate.service.context import Context
from taskgate.store.sqlite import SQLiteStore
from tests.support.server import TASKGATE, Server, running
from tests.support.terminal import Ran, at_terminal, no_terminal

SHA = "0123456789abcdef0123456789abcdef01234567"
CONFIG = {"checks": {"unit": {"command": "pytest -q --junitxml=r.xml", "report": {"path": "r.xml"}}}}


@dataclass
class Bench:
    server: Server
    tmp: Path
    _n: int = 0
    _agent: str = ""
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # What an agent's shell inherits: where the server is, and the data dir with the admin
        # token (the CLI's default; TASKGATE_DATA_DIR spares this test the real ~/.taskgate).
        self.env = {k: v for k, v in os.environ.items() if k != "TASKGATE_TOKEN"}
        self.env.update(TASKGATE_SERVER=self.server.url, TASKGATE_DATA_DIR=str(self.server.data_dir))

    def fresh(self, stem: str) -> str:
        self._n += 1
        return f"{stem}{self._n}"

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, out = self.server.request(method, path, body, token=self.server.admin_token)
        assert status in (200, 201), (method, path, status, out)
        return out

    def get(self, path: str) -> tuple[int, Any]:
        return self.server.request("GET", path, token=self.server.admin_token)

    def project(self, *, verification: bool = False, config: bool = False) -> str:
        name = self.fresh("p")
        self.ok("POST", "/api/projects", {"name": name, "repo": str(self.tmp)})
        if verification or config:
            body = {"kind": "verifier", "name": "ci", "verifier_kind": "local", "projects": [name]}
            self.ok("POST", "/api/keys", body)
            self.ok("PUT", f"/api/projects/{name}/verifier-config", CONFIG)
        if verification:
            self.ok("PUT", f"/api/projects/{name}/verification", {"on": True})
        return name

    def _as_agent(self, fn: Callable[[Context, Acting], str]) -> str:
        if not self._agent:
            self._agent = self.ok("POST", "/api/keys", {"kind": "agent", "name": "eve"})["key"]
        store = SQLiteStore(self.server.data_dir / "taskgate.db")
        try:
            ctx = Context(store, SystemClock())
            return fn(ctx, acting(keys.authenticate(ctx, self._agent)))
        finally:
            store.close()

    def task(self, project: str, *, then: str = "ready") -> str:
        """A task the agent made and took as far as `then`: ready, submitted or needs_human."""

        def work(ctx: Context, agent: Acting) -> str:
            crit = [CriterionInput(text="works")]
            t = tasks.create(ctx, agent, project, title="work", criteria=crit).task
            if then == "ready":
                return t.id
            c = claims.claim(ctx, agent, project, task_id=t.id)
            if then == "submitted":
                claims.submit(ctx, agent, t.id, c.token, commit_sha=SHA, evidence="done")
            else:
                claims.escalate(ctx, agent, t.id, c.token, question="which schema?")
            return t.id

        return self._as_agent(work)

    def status(self, tid: str) -> str:
        return str(self.ok("GET", f"/api/tasks/{tid}")["task"]["status"])


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    tmp = tmp_path_factory.mktemp("human-cli")
    with running(tmp / "data", extra=["--admin-name", "alice"]) as server:
        yield Bench(server, tmp)


@dataclass
class Case:
    argv: list[str]  # after `taskgate`
    confirm: str  # what the person types
    state: Callable[[], Any]  # read back over REST
    done: Any  # state() once the human did it


def _project_create(b: Bench) -> Case:
    name = b.fresh("new")
    return Case(
        ["project", "create", name, "--repo", f"https://example.com/{name}.git"],
        name,
        lambda: b.get(f"/api/projects/{name}")[0],
        200,
    )


def _key_names(b: Bench) -> Callable[[], list[str]]:
    return lambda: sorted(k["name"] for k in b.ok("GET", "/api/keys")["items"])


def _key_create_agent(b: Bench) -> Case:
    name = b.fresh("mallory")
    names = _key_names(b)
    return Case(
        ["key", "create", "agent", name, "--delegate", "human:alice"], name, names, sorted([*names(), name])
    )


def _key_create_verifier(b: Bench) -> Case:
    name = b.fresh("ci-")
    names = _key_names(b)
    return Case(["key", "create", "verifier", name, "--kind", "local"], name, names, sorted([*names(), name]))


def _key_revoke(b: Bench) -> Case:
    kid = b.ok("POST", "/api/keys", {"kind": "agent", "name": b.fresh("old")})["credential"]["id"]

    def live() -> bool:
        return bool(next(k for k in b.ok("GET", "/api/keys")["items"] if k["id"] == kid)["live"])

    return Case(["key", "revoke", kid], kid, live, False)


def _task_accept(b: Bench) -> Case:
    tid = b.task(b.project(), then="submitted")
    return Case(["task", "accept", tid], tid, lambda: b.status(tid), "done")


def _task_reopen(b: Bench) -> Case:
    tid = b.task(b.project(), then="submitted")
    return Case(["task", "reopen", tid, "--finding", "tests fail"], tid, lambda: b.status(tid), "ready")


def _task_cancel(b: Bench) -> Case:
    tid = b.task(b.project())
    return Case(["task", "cancel", tid, "--reason", "dup"], tid, lambda: b.status(tid), "cancelled")


def _task_resolve_requeue(b: Bench) -> Case:
    tid = b.task(b.project(), then="needs_human")
    return Case(["task", "resolve", tid, "--requeue"], tid, lambda: b.status(tid), "ready")


def _task_resolve_block(b: Bench) -> Case:
    p = b.project()
    blocker, tid = b.task(p), b.task(p, then="needs_human")
    return Case(
        ["task", "resolve", tid, "--block", "--blocked-by", blocker], tid, lambda: b.status(tid), "blocked"
    )


def _task_resolve_cancel(b: Bench) -> Case:
    tid = b.task(b.project(), then="needs_human")
    return Case(["task", "resolve", tid, "--cancel"], tid, lambda: b.status(tid), "cancelled")


def _task_resolve_backlog(b: Bench) -> Case:
    p = b.project()
    spec = b.ok("POST", f"/api/projects/{p}/specs", {"title": "S", "criteria": [{"text": "x"}]})
    b.ok("POST", f"/api/projects/{p}/specs/{spec['id']}/approve")

    def work(ctx: Context, agent: Acting) -> str:
        t = tasks.create(ctx, agent, p, title="work", spec_id=spec["id"]).task
        c = claims.claim(ctx, agent, p, task_id=t.id)
        claims.escalate(ctx, agent, t.id, c.token, question="is the spec right?")
        return t.id

    tid = b._as_agent(work)

    def state() -> tuple[str, str]:
        return b.status(tid), str(b.ok("GET", f"/api/projects/{p}/specs/{spec['id']}")["status"])

    return Case(["task", "resolve", tid, "--backlog"], tid, state, ("backlog", "draft"))


def _verification_off(b: Bench) -> Case:
    p = b.project(verification=True)
    return Case(
        ["verification", "off", p], p, lambda: b.ok("GET", f"/api/projects/{p}/verification")["on"], False
    )


def _verification_on(b: Bench) -> Case:
    p = b.project(config=True)
    return Case(
        ["verification", "on", p], p, lambda: b.ok("GET", f"/api/projects/{p}/verification")["on"], True
    )


def _verifier_config_set(b: Bench) -> Case:
    p = b.project(config=True)
    mine = {"checks": {"unit": {"command": "true"}}}  # a check that always passes
    path = b.tmp / f"{p}.json"
    path.write_text(json.dumps(mine))

    def command() -> str:
        return str(b.ok("GET", f"/api/projects/{p}/verifier-config")["config"]["checks"]["unit"]["command"])

    return Case(["verifier-config", "set", p, "--file", str(path)], p, command, "true")


def _spec_approve(b: Bench) -> Case:
    p = b.project()
    spec = b.ok(
        "POST", f"/api/projects/{p}/specs", {"title": "S", "risk": "high", "criteria": [{"text": "x"}]}
    )
    sid = spec["id"]
    return Case(
        ["spec", "approve", sid, "--project", p],
        sid,
        lambda: b.ok("GET", f"/api/projects/{p}/specs/{sid}")["status"],
        "approved",
    )


CASES: dict[str, Callable[[Bench], Case]] = {
    "project create": _project_create,
    "key create agent": _key_create_agent,
    "key create verifier": _key_create_verifier,
    "key revoke": _key_revoke,
    "task accept": _task_accept,
    "task reopen": _task_reopen,
    "task cancel": _task_cancel,
    "task resolve --requeue": _task_resolve_requeue,
    "task resolve --block": _task_resolve_block,
    "task resolve --cancel": _task_resolve_cancel,
    "task resolve --backlog": _task_resolve_backlog,
    "verification off": _verification_off,
    "verification on": _verification_on,
    "verifier-config set": _verifier_config_set,
    "spec approve": _spec_approve,
}


def _refused(r: Ran, code: str) -> dict[str, str]:
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    err: dict[str, str] = json.loads(r.stdout)["error"]
    assert err["code"] == code, err
    return err


@pytest.mark.parametrize("name", list(CASES))
def test_a_human_only_command_needs_a_person_at_the_terminal(bench: Bench, name: str) -> None:
    case = CASES[name](bench)
    before = case.state()
    assert before != case.done
    argv = [TASKGATE, *case.argv, "--json"]

    # The agent's shell: no controlling terminal, and the answer the prompt wants on stdin.
    r = no_terminal(argv, bench.env, stdin=f"{case.confirm}\n")
    err = _refused(r, "E_HUMAN_PRESENCE")
    assert "no controlling terminal" in err["message"] and "taskgate board" in err["hint"]
    assert "terminal" in err["hint"] and "board" in err["hint"]
    assert case.state() == before

    # A person at the terminal who types something else: nothing happens either.
    r = at_terminal(argv, bench.env, answer=f"{case.confirm}x")
    _refused(r, "E_NOT_CONFIRMED")
    assert f"Type {case.confirm} to confirm" in r.terminal
    assert case.state() == before

    # The person types what the prompt names: done, in one step.
    r = at_terminal(argv, bench.env, answer=case.confirm)
    assert r.returncode == 0, (r.stdout, r.stderr, r.terminal)
    assert case.confirm in r.terminal.splitlines()[0]  # the prompt names the task / project / key
    assert case.state() == case.done


def test_the_refusal_reads_as_a_sentence_with_its_hint_on_stderr(bench: Bench) -> None:
    tid = bench.task(bench.project(), then="submitted")
    r = no_terminal([TASKGATE, "task", "accept", tid], bench.env)
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"error E_HUMAN_PRESENCE: accept {tid} (it becomes done) needs a person at a terminal to "
        "confirm it, and this process has no controlling terminal (/dev/tty): nothing was done",
        "hint: A person does this: on the board (run `taskgate board` for a sign-in link) or by "
        "running this command themselves at a terminal. An agent asks its human to do it.",
    ]
    assert bench.status(tid) == "needs_verification"


def test_yes_counts_only_with_a_token_given_explicitly(bench: Bench) -> None:
    """A script of the human's own passes its token (--token or TASKGATE_TOKEN) and --yes; the
    admin token the CLI finds in the data dir never goes with --yes."""
    p = bench.project()
    first, second, third = (bench.task(p, then="submitted") for _ in range(3))
    r = no_terminal([TASKGATE, "task", "accept", first, "--yes", "--json"], bench.env)
    err = _refused(r, "E_HUMAN_PRESENCE")
    assert "--yes is refused with the admin token read from the data dir" in err["message"]
    assert bench.status(first) == "needs_verification"

    token = bench.server.admin_token
    r = no_terminal([TASKGATE, "task", "accept", first, "--yes", "--token", token], bench.env)
    assert r.returncode == 0, r.stderr
    assert bench.status(first) == "done"
    r = no_terminal([TASKGATE, "task", "accept", second, "--yes"], {**bench.env, "TASKGATE_TOKEN": token})
    assert r.returncode == 0, r.stderr
    assert bench.status(second) == "done"
    # An explicit token alone is no opt-in: still a person at the terminal.
    r = no_terminal([TASKGATE, "task", "accept", third, "--json"], {**bench.env, "TASKGATE_TOKEN": token})
    _refused(r, "E_HUMAN_PRESENCE")
    assert bench.status(third) == "needs_verification"


def test_read_only_commands_work_without_a_terminal(bench: Bench) -> None:
    p = bench.project(config=True)
    tid = bench.task(p)
    spec = bench.ok("POST", f"/api/projects/{p}/specs", {"title": "S", "criteria": [{"text": "x"}]})
    repo = bench.tmp / f"{p}-repo"
    for argv in [
        ["project", "list"],
        ["key", "list"],
        ["task", "list", p],
        ["task", "show", tid],
        ["verifier-config", "get", p],
        ["verifier-config", "draft", p],
        ["board"],
        ["mcp-config"],
        ["spec", "export", spec["id"], "--project", p, "--repo", str(repo)],
    ]:
        r = no_terminal([TASKGATE, *argv], bench.env)
        assert r.returncode == 0, (argv, r.stdout, r.stderr)
    assert (repo / "specs" / f"{spec['id']}.md").is_file()
    # ... while in the same shell, the one next step that changes something is refused
    r = no_terminal([TASKGATE, "verifier-config", "set", p, "--json"], bench.env, stdin=json.dumps(CONFIG))
    _refused(r, "E_HUMAN_PRESENCE")


def test_resolve_block_without_blockers_is_a_usage_error_before_any_question(bench: Bench) -> None:
    tid = bench.task(bench.project(), then="needs_human")
    r = at_terminal([TASKGATE, "task", "resolve", tid, "--block"], bench.env, answer=tid)
    assert r.returncode == 2 and "--blocked-by" in r.stderr and "confirm" not in r.terminal
    r = at_terminal([TASKGATE, "task", "resolve", tid, "--reverify"], bench.env, answer=tid)
    assert r.returncode == 1 and "E_VALIDATION" in r.stderr  # the server's rule: nothing to verify
    assert bench.status(tid) == "needs_human"


def test_help_says_which_commands_need_a_person_at_the_terminal() -> None:
    import contextlib
    import io
    import subprocess

    from taskgate.cli.main import build_parser

    r = subprocess.run([TASKGATE, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    top = " ".join(r.stdout.split())
    assert "E_HUMAN_PRESENCE" in top and "taskgate board" in top

    def helptext(*argv: str) -> str:  # the same parser, without a process per command
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            build_parser().parse_args([*argv, "--help"])
        return " ".join(out.getvalue().split())

    person = "asks a person at the controlling terminal"
    for argv in [
        ("project", "create"),
        ("key", "create", "agent"),
        ("key", "create", "verifier"),
        ("key", "revoke"),
        ("task", "accept"),
        ("task", "reopen"),
        ("task", "cancel"),
        ("task", "resolve"),
        ("verification",),
        ("verifier-config",),
        ("spec", "approve"),
    ]:
        assert person in helptext(*argv), argv
    # what an agent key may do itself over MCP (create_spec, create_task, set_execution_defaults)
    # and the demo, which acts only on a server of its own, ask nobody
    for argv in [
        ("project", "list"),
        ("key", "list"),
        ("task", "list"),
        ("task", "show"),
        ("board",),
        ("spec", "create"),
        ("task", "create"),
        ("project", "defaults"),
        ("demo",),
    ]:
        assert person not in helptext(*argv), argv
    assert "needs_human" in helptext("task", "resolve")
    assert "accept, reopen, cancel, resolve (each asks a person at the terminal)" in top


# -- path 4: key changes where a human looks ---------------------------------------------------


def test_a_key_for_every_project_shows_in_each_projects_history(bench: Bench) -> None:
    before = bench.project()
    r = at_terminal(
        [TASKGATE, "key", "create", "verifier", "sneaky", "--kind", "local", "--json"], bench.env, "sneaky"
    )
    assert r.returncode == 0, r.stderr
    kid = json.loads(r.stdout)["credential"]["id"]
    after = bench.project()  # made after the key: it covers this one too
    scoped = bench.ok("POST", "/api/keys", {"kind": "agent", "name": "scoped", "projects": [before]})
    r = at_terminal([TASKGATE, "key", "revoke", kid], bench.env, kid)
    assert r.returncode == 0, r.stderr

    def key_events(project: str) -> list[tuple[str, str, str]]:
        items = bench.ok("GET", f"/api/projects/{project}/history?limit=200")["items"]
        return [
            (e["action"], e["detail"]["key"], e["project"]) for e in items if "key" in e.get("detail", {})
        ]

    mine = [("key_revoked", kid, "*"), ("key_created", kid, "*")]
    assert [e for e in key_events(before) if e[1] == kid] == mine
    assert [e for e in key_events(after) if e[1] == kid] == mine
    sid = scoped["credential"]["id"]
    assert [e[1] for e in key_events(before)].count(sid) == 1
    assert sid not in [e[1] for e in key_events(after)]  # a key for one project stays there
    # The history of keys for every project, on its own.
    everywhere = bench.ok("GET", "/api/projects/*/history?limit=200")["items"]
    assert {e["project"] for e in everywhere} == {"*"}
    assert [(e["action"], e["detail"]["key"]) for e in everywhere if e["detail"]["key"] == kid] == [
        ("key_revoked", kid),
        ("key_created", kid),
    ]


# -- the data dir --------------------------------------------------------------------------------


def test_the_data_dir_is_0700_the_token_0600_and_an_open_one_is_reported(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh" / "data"
    with running(fresh) as server:
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
        assert stat.S_IMODE((fresh / "admin-token").stat().st_mode) == 0o600
        out = server.stop()
    assert "open to other users" not in out
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    with running(shared) as server:
        assert stat.S_IMODE((shared / "admin-token").stat().st_mode) == 0o600
        out = server.stop()
    assert f"data dir {shared} is open to other users (mode 755): `chmod 700 {shared}`" in out
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755  # the user's choice, reported, not changed
