"""A fleet landing on one main: what verifying each submission merged onto the base tip buys.

    python bench/merge_fleet.py [--modes none,merge,merge-batch] [--agents 16] [--jobs 2] [--rounds 60]
                                [--tasks 16] [--smoke]

One small repository whose 16 tasks touch shared files, the way a fleet's tasks do:
- 5 stand alone (a module and its test each);
- 3 add a function to `units.py` and append it to its `__all__`: any two conflict;
- 4 pairs pass alone and fail together, each merging cleanly: a rename of `conf.LIMIT` and a new
  module that uses the old name; two plugins that take the same name while a shared test wants
  names unique; a required parameter added to `fmt.price` and a new caller without it; the page
  size changed and a new module whose test assumes the old one.

Each mode runs on a project of its own on one `taskgate serve`, and a fresh copy of the
repository, with the verifier config's `merge` set to the mode. 16 agents (threads, one agent key
each, the MCP SDK's Client over HTTP) each own a task: they claim it, branch from main as it is at
that moment, make the change and submit. An agent whose task comes back (a conflict, a failure, a
reopen) claims it again and redoes the change on the main it finds then, as an agent that read its
findings does. A real `taskgate verify --once --jobs N` then verifies what waits. The human (the
admin token) accepts verified tasks whose verdict holds for main as it is (not stale), one at a
time, oldest verdict first, lands each accepted commit on main (`git merge --no-ff`), runs the
checks on main, and tells the server the base moved (the push-webhook route a git host calls). A
landing that conflicts or leaves main's checks failing is counted, undone, and the task reopened
with a finding. Rounds repeat until every task has landed with main green, or --rounds.

--tasks K runs K of the 16 (SAMPLE: one standing alone, two that conflict, a pair that fails
together, then the rest); the smoke run takes 3 of them through one round of `merge` and of
`merge-batch`.

`land` (not run by default) is `merge` with the verifier config's `land: true`: the human accepts
every verified task (oldest verdict first, stale or not) and taskgate lands it: accepted tasks
wait in the landing queue, `taskgate verify` tests each on top of the ones ahead of it and pushes
main (a local repository with main checked out, clean: updateInstead) to exactly the commit it
tested. Afterwards main's checks are run at every commit it gained.

`merge-batch` (not run by default) is `merge` with a hastier human: each round, every verified
task is accepted in one batch, stale verdicts included (the server accepts them and says they are
stale, accept_stale being true by default), then all are landed.

Prints one line per mode (what landed, runs and re-verification runs per accepted task, how many
accepted tasks conflicted at landing or broke main), then:
    broke_main_none=<n>  broke_main_merge=<n> (goal 0)
    stale_runs_per_accepted=<re-verification runs per accepted task, merge mode>
    runs_ratio=<verification runs per landed task, merge / none>
and, with merge-batch, `broke_main_merge_batch=<n> stale_warnings=<n>`; with land,
    runs_per_landed_land=<verification runs per landed task> broke_main_land=<commits main gained
    whose checks fail> landed_is_verified=<k>/<landed> accept_to_landed_p50_s=<s>
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchkit import smoke
from benchkit.mcp import MODERN, sdk_agent
from benchkit.serve import Served, start
from benchkit.users import check_python

TASKGATE = str(Path(sys.executable).with_name("taskgate"))
CHECK = (
    f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {check_python()} -m pytest -q -p no:cacheprovider "
    "--junitxml=reports/junit.xml"
)
MAX_ATTEMPTS = 6  # room for a task that loses several races before a human is needed

# -- the repository ------------------------------------------------------------------------------

BASE: dict[str, str] = {
    ".gitignore": "reports/\n__pycache__/\n",
    "conf.py": "# How many items a cart holds.\nLIMIT = 10\n\n"
    "# Items per page in listings.\nPAGE = 20\n\n# The shop's currency.\nCURRENCY = 'EUR'\n",
    "cart.py": "import conf\n\n\ndef add(cart, item):\n    if len(cart) >= conf.LIMIT:\n"
    "        raise ValueError('cart is full')\n    return [*cart, item]\n",
    "test_cart.py": "import conf\nimport pytest\n\nfrom cart import add\n\n\ndef test_add():\n"
    "    assert add([], 'a') == ['a']\n\n\ndef test_full():\n    with pytest.raises(ValueError):\n"
    "        add(['x'] * conf.LIMIT, 'a')\n",
    "fmt.py": "def price(amount):\n    return f'{amount:.2f}'\n",
    "test_fmt.py": "from fmt import price\n\n\ndef test_price():\n    assert price(3) == '3.00'\n",
    "invoice.py": "from fmt import price\n\n\ndef line(name, amount):\n"
    "    return f'{name}: {price(amount)}'\n",
    "test_invoice.py": "from invoice import line\n\n\ndef test_line():\n"
    "    assert line('tea', 2.5) == 'tea: 2.50'\n",
    "units.py": "__all__ = [\n    'cm',\n    'inch',\n]\n\n\ndef cm(x):\n    return x / 100\n\n\n"
    "def inch(x):\n    return x * 0.0254\n",
    "test_units.py": "import units\n\n\ndef test_exports_exist():\n    for name in units.__all__:\n"
    "        assert callable(getattr(units, name))\n",
    "plugins/__init__.py": "import importlib\nimport pkgutil\n\n\ndef names():\n"
    "    return [\n        importlib.import_module(f'{__name__}.{m.name}').NAME\n"
    "        for m in pkgutil.iter_modules(__path__)\n    ]\n",
    "plugins/text.py": "NAME = 'text'\n\n\ndef render(rows):\n    return '\\n'.join(map(str, rows))\n",
    "test_plugins.py": "import plugins\n\n\ndef test_names_are_unique():\n    names = plugins.names()\n"
    "    assert len(names) == len(set(names)), names\n",
}


def sh(*cmd: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    return sh("git", "-c", "user.email=b@example.com", "-c", "user.name=bench", *args, cwd=repo, env=env,
              stdin=stdin)  # fmt: skip


def make_repo(path: Path) -> None:
    path.mkdir(parents=True)
    for name, text in BASE.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "the shop")


class Tree:
    """The files of one commit, read as an agent reads the main it branched from."""

    def __init__(self, repo: Path, commit: str) -> None:
        self.repo, self.commit = repo, commit
        self.paths = git(repo, "ls-tree", "-r", "--name-only", commit).splitlines()

    def read(self, path: str) -> str:
        return subprocess.run(
            ["git", "show", f"{self.commit}:{path}"],
            cwd=self.repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def python(self) -> list[str]:
        return [p for p in self.paths if p.endswith(".py")]


# -- the tasks: each a criterion and the change an agent makes on the main it finds ---------------

Change = Callable[[Tree], dict[str, str]]


@dataclass(frozen=True)
class Job:
    title: str
    ref: str  # the test criterion's verify_ref: a test the change adds (it fails on the baseline)
    change: Change


def standalone(k: int) -> Job:
    def change(_: Tree) -> dict[str, str]:
        return {
            f"helper{k}.py": f"def times{k}(x):\n    return x * {k}\n",
            f"test_helper{k}.py": f"from helper{k} import times{k}\n\n\ndef test_times():\n"
            f"    assert times{k}(2) == {2 * k}\n",
        }

    return Job(f"helper {k}", f"test_helper{k}.test_times", change)


def unit(name: str, factor: str) -> Job:
    def change(tree: Tree) -> dict[str, str]:
        src = tree.read("units.py")
        head, _, tail = src.partition("]\n")
        return {
            "units.py": f"{head}    '{name}',\n]\n{tail}\n\ndef {name}(x):\n    return x * {factor}\n",
            f"test_units_{name}.py": f"import units\n\n\ndef test_{name}():\n"
            f"    assert '{name}' in units.__all__ and units.{name}(0) == 0\n",
        }

    return Job(f"unit {name}", f"test_units_{name}.test_{name}", change)


def rename_limit(tree: Tree) -> dict[str, str]:
    out = {p: re.sub(r"\bLIMIT\b", "MAX_ITEMS", tree.read(p)) for p in tree.python()}
    out = {p: text for p, text in out.items() if text != tree.read(p)}
    out["test_max_items.py"] = "import conf\n\n\ndef test_max_items():\n    assert conf.MAX_ITEMS == 10\n"
    return out


def uses_limit(tree: Tree) -> dict[str, str]:
    name = "MAX_ITEMS" if "MAX_ITEMS" in tree.read("conf.py") else "LIMIT"
    return {
        "bulk.py": f"import conf\n\n\ndef room(cart):\n    return conf.{name} - len(cart)\n",
        "test_bulk.py": "from bulk import room\n\n\ndef test_room():\n    assert room(['a']) == 9\n",
    }


def plugin(module: str, fallback: str) -> Change:
    def change(tree: Tree) -> dict[str, str]:
        taken = {
            m
            for p in tree.paths
            if p.startswith("plugins/")
            for m in re.findall(r"NAME = '([^']+)'", tree.read(p))
        }
        name = "export" if "export" not in taken else fallback
        return {
            f"plugins/{module}.py": f"NAME = '{name}'\nSEP = '{fallback[-4:]}'\n\n\ndef render(rows):\n"
            "    return SEP.join(map(str, rows))\n",
            f"test_{module}.py": f"from plugins.{module} import render\n\n\ndef test_render():\n"
            f"    assert render([1, 2]) == '1{fallback[-4:]}2'\n",
        }

    return change


def add_places(tree: Tree) -> dict[str, str]:
    call = re.compile(r"(?<!def )\bprice\(([^(),]+)\)")
    out = {p: call.sub(r"price(\1, 2)", tree.read(p)) for p in tree.python() if p != "fmt.py"}
    out = {p: text for p, text in out.items() if text != tree.read(p)}
    out["fmt.py"] = "def price(amount, places):\n    return f'{amount:.{places}f}'\n"
    out["test_places.py"] = "from fmt import price\n\n\ndef test_places():\n    assert price(2, 1) == '2.0'\n"
    return out


def receipt(tree: Tree) -> dict[str, str]:
    args = "total, 2" if "places" in tree.read("fmt.py") else "total"
    return {
        "receipt.py": "from fmt import price\n\n\ndef receipt(amounts):\n    total = sum(amounts)\n"
        f"    return 'total ' + price({args})\n",
        "test_receipt.py": "from receipt import receipt\n\n\ndef test_receipt():\n"
        "    assert receipt([1, 2]) == 'total 3.00'\n",
    }


def bigger_pages(tree: Tree) -> dict[str, str]:
    out = {
        "conf.py": re.sub(r"^PAGE = \d+$", "PAGE = 50", tree.read("conf.py"), flags=re.M),
        "test_page_size.py": "import conf\n\n\ndef test_page_size():\n    assert conf.PAGE == 50\n",
    }
    if "test_pager.py" in tree.paths:  # a page count main already has: its expectation follows
        out["test_pager.py"] = re.sub(r"== \d+$", "== 1", tree.read("test_pager.py"), flags=re.M)
    return out


def pager(tree: Tree) -> dict[str, str]:
    page = int(re.search(r"^PAGE = (\d+)$", tree.read("conf.py"), flags=re.M).group(1))  # type: ignore[union-attr]
    return {
        "pager.py": "import conf\n\n\ndef pages(n):\n    return -(-n // conf.PAGE)\n",
        "test_pager.py": f"from pager import pages\n\n\ndef test_pages():\n    assert pages(45) == {-(-45 // page)}\n",
    }


JOBS: list[Job] = [
    *(standalone(k) for k in range(1, 6)),
    unit("ft", "0.3048"),
    unit("mm", "0.001"),
    unit("mile", "1609.344"),
    Job("rename LIMIT to MAX_ITEMS", "test_max_items.test_max_items", rename_limit),
    Job("room left in a cart", "test_bulk.test_room", uses_limit),
    Job("csv plugin", "test_csv_out.test_render", plugin("csv_out", "export-csv")),
    Job("tsv plugin", "test_tsv_out.test_render", plugin("tsv_out", "export-tsv")),
    Job("price takes decimal places", "test_places.test_places", add_places),
    Job("receipt totals", "test_receipt.test_receipt", receipt),
    Job("50 items per page", "test_page_size.test_page_size", bigger_pages),
    Job("page count", "test_pager.test_pages", pager),
]
# With --tasks K below 16, the first K of this order: one standing alone, two that conflict, a
# pair that fails together, then the rest.
SAMPLE = [0, 5, 6, 8, 9, *(i for i in range(len(JOBS)) if i not in (0, 5, 6, 8, 9))]


def chosen(k: int) -> list[Job]:
    return [JOBS[i] for i in sorted(SAMPLE[:k])]


# -- an agent's commit, made without a work tree (16 agents write to one repository at once) ----


def commit_on(repo: Path, parent: str, files: dict[str, str], message: str, branch: str, index: Path) -> str:
    env = dict(os.environ, GIT_INDEX_FILE=str(index))
    git(repo, "read-tree", parent, env=env)
    for path, text in files.items():
        blob = git(repo, "hash-object", "-w", "--stdin", env=env, stdin=text)
        git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    tree = git(repo, "write-tree", env=env)
    sha = git(repo, "commit-tree", tree, "-p", parent, "-m", message, env=env)
    git(repo, "update-ref", f"refs/heads/{branch}", sha, env=env)
    return sha


# -- one mode ------------------------------------------------------------------------------------


@dataclass
class Tally:
    mode: str
    tasks: int = 0
    landed: int = 0
    rounds: int = 0
    submissions: int = 0
    accepted: int = 0
    broke_main: int = 0  # accepted, landed cleanly, and main's checks failed
    conflicted_at_landing: int = 0  # accepted, and the human's merge onto main conflicted
    first_round_broke: int = 0  # of the first round's verified submissions (all verified alone)
    requeued: int = 0  # needs_human answered with requeue
    stale_warnings: int = 0  # "its verdict is stale", said by a batch acceptance
    runs: int = 0
    reverify_runs: int = 0
    conflict_runs: int = 0
    failed_runs: int = 0
    attempts_used: int = 0
    wall_s: float = 0.0
    broke: list[str] = field(default_factory=list)
    said: dict[str, str] = field(default_factory=dict)  # the first verifier finding of each kind
    landed_verified: int = 0  # land: landed commits that are the commit the queue tested (or reused)
    accept_to_landed_s: list[float] = field(default_factory=list)
    check_s: list[float] = field(default_factory=list)  # land: one check run's duration, each run

    def line(self) -> str:
        per = self.runs / self.landed if self.landed else float("nan")
        stale = self.reverify_runs / self.accepted if self.accepted else float("nan")
        return (
            f"mode={self.mode} tasks={self.tasks} landed={self.landed} rounds={self.rounds} "
            f"submissions={self.submissions} runs={self.runs} reverify_runs={self.reverify_runs} "
            f"conflict_runs={self.conflict_runs} failed_runs={self.failed_runs} "
            f"attempts_used={self.attempts_used} accepted={self.accepted} broke_main={self.broke_main} "
            f"conflicted_at_landing={self.conflicted_at_landing} first_round_broke={self.first_round_broke} "
            f"requeued={self.requeued} stale_warnings={self.stale_warnings} runs_per_landed={per:.2f} stale_runs_per_accepted={stale:.2f} "
            f"wall_s={self.wall_s:.1f}"
        )


FINDING_KINDS = {"conflict": "merge conflict", "stale and broken": "breaks on the new base"}


class Fleet:
    def __init__(
        self, live: Served, repo: Path, work: Path, mode: str, agents: int, jobs: int, tasks: list[Job]
    ) -> None:
        self.live, self.repo, self.work, self.mode, self.jobs = live, repo, work, mode, jobs
        self.project = f"shop-{mode}"
        self.tally = Tally(mode, tasks=len(tasks))
        live.rest("POST", "/api/projects", {"name": self.project, "repo": str(repo)})
        self.keys = [live.agent_key(f"a{i}-{mode}", projects=[self.project]) for i in range(agents)]
        self.verifier_key = live.rest("POST", "/api/keys", {"kind": "verifier", "name": f"ci-{mode}",
                                      "verifier_kind": "local", "projects": [self.project]})["key"]  # fmt: skip
        check = {"command": CHECK, "report": {"path": "reports/junit.xml", "format": "junit"}}
        self.batch = mode.endswith("-batch")
        self.lands = mode == "land"
        config: dict[str, Any] = {"check_timeout_minutes": 2, "checks": {"unit": check},
                                  "merge": "merge" if self.lands else mode.removesuffix("-batch")}  # fmt: skip
        if self.lands:
            config["land"] = True
        live.rest("PUT", f"/api/projects/{self.project}/verifier-config", config)
        live.rest("PUT", f"/api/projects/{self.project}/verification", {"on": True})
        self.ids: list[str] = []
        for job in tasks:
            criteria = [{"text": job.title, "kind": "test", "verify_ref": job.ref}]
            spec = live.rest("POST", f"/api/projects/{self.project}/specs",
                           {"title": job.title, "risk": "low", "criteria": criteria})  # fmt: skip
            live.rest("POST", f"/api/projects/{self.project}/specs/{spec['id']}/approve")
            made = live.rest("POST", f"/api/projects/{self.project}/tasks",
                           {"title": job.title, "spec_id": spec["id"], "max_attempts": MAX_ATTEMPTS})  # fmt: skip
            self.ids.append(made["task"]["id"])
        self.job_of = dict(zip(self.ids, tasks, strict=True))
        self.owner = {tid: i % agents for i, tid in enumerate(self.ids)}
        self.landed: set[str] = set()
        self.lock = threading.Lock()

    def task(self, tid: str) -> dict[str, Any]:
        out: dict[str, Any] = self.live.rest("GET", f"/api/tasks/{tid}")
        return out

    def statuses(self) -> dict[str, dict[str, Any]]:
        return {tid: self.task(tid)["task"] for tid in self.ids}

    # the agents

    def agents_work(self, ready: list[str]) -> None:
        """Each agent claims its ready tasks, branches from main as it is now, and submits."""
        mine: dict[int, list[str]] = {}
        for tid in ready:
            mine.setdefault(self.owner[tid], []).append(tid)
        errors: list[BaseException] = []
        go = threading.Barrier(len(mine))

        async def act(i: int, tids: list[str]) -> None:
            async with sdk_agent(self.live.mcp_url, self.keys[i], MODERN) as a:
                for tid in tids:
                    claimed = await a.ok("claim_task", project=self.project, task_id=tid)
                    with self.lock:  # main does not move while agents work; reading it is safe
                        tip = git(self.repo, "rev-parse", "main")
                    files = self.job_of[tid].change(Tree(self.repo, tip))
                    n = len(claimed["brief"].get("findings") or [])
                    sha = commit_on(self.repo, tip, files, f"{self.job_of[tid].title} (try {n + 1})",
                                    f"agent{i}/{tid}", self.work / f"index-{self.mode}-{i}")  # fmt: skip
                    await a.ok("submit_task", task_id=tid, claim_token=claimed["claim_token"],
                               commit_sha=sha, evidence="its test passes on my branch")  # fmt: skip
                    with self.lock:
                        self.tally.submissions += 1

        def thread(i: int, tids: list[str]) -> None:
            go.wait()
            try:
                asyncio.run(act(i, tids))
            except BaseException as exc:  # re-raised below: a failed agent invalidates the run
                errors.append(exc)

        threads = [threading.Thread(target=thread, args=(i, t)) for i, t in mine.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError(f"an agent failed: {errors[0]!r}")

    # the verifier

    def verify(self) -> list[dict[str, Any]]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")}
        env |= {"TASKGATE_SERVER": self.live.base, "TASKGATE_VERIFIER_KEY": self.verifier_key}
        done = subprocess.run(
            [TASKGATE, "verify", "--once", "--json", "--jobs", str(self.jobs), "--project", self.project],
            env=env, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"taskgate verify exited {done.returncode}: {done.stderr[-3000:]}")
        return [json.loads(x) for x in done.stdout.splitlines() if x.strip()]

    # the human

    def main_green(self) -> tuple[bool, str]:
        done = subprocess.run(CHECK, shell=True, cwd=self.repo, capture_output=True, text=True,
                              env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))  # fmt: skip
        failing = [ln for ln in done.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))]
        return done.returncode == 0, "; ".join(failing)[:500]

    def land(self, tid: str, sha: str, first_round: bool, *, accepted: bool = False) -> None:
        """Accept, merge into main, check main; a landing that conflicts or breaks is undone and
        the task reopened with what happened."""
        if not accepted:
            self.live.rest("POST", f"/api/tasks/{tid}/accept")
        self.tally.accepted += 1
        with self.lock:
            before = git(self.repo, "rev-parse", "main")
            merged = subprocess.run(
                ["git", "-c", "user.email=h@example.com", "-c", "user.name=human", "merge", "--no-ff",
                 "--no-edit", "--quiet", sha], cwd=self.repo, capture_output=True, text=True,
            )  # fmt: skip
            if merged.returncode != 0:
                git(self.repo, "merge", "--abort")
                self.tally.conflicted_at_landing += 1
                finding = f"{sha[:12]} does not merge onto main at {before[:12]}: rebase onto main"
            else:
                green, failing = self.main_green()
                if green:
                    self.landed.add(tid)
                    self.tally.landed += 1
                    self._tell_base_moved()
                    return
                git(self.repo, "reset", "--quiet", "--hard", before)
                self.tally.broke_main += 1
                self.tally.first_round_broke += first_round
                self.tally.broke.append(f"{tid} ({self.job_of[tid].title}): {failing}")
                finding = f"merged onto main at {before[:12]}, main's checks fail: {failing}"
        self.live.rest("POST", f"/api/tasks/{tid}/reopen", {"findings": [finding]})

    def _tell_base_moved(self) -> None:
        if self.mode == "none":  # the verifier does not follow main's tip then
            return
        tip = git(self.repo, "rev-parse", "main")
        self.live.rest("POST", f"/api/verifier/projects/{self.project}/base",
                       {"ref": "refs/heads/main", "after": tip}, token=self.verifier_key)  # fmt: skip

    def accept_to_land(self) -> None:
        """The human with landing on: accept every verified task, oldest verdict first; taskgate
        lands them (the next `taskgate verify`)."""
        for tid, t in self.statuses().items():
            if t["status"] == "needs_human":
                self.live.rest("POST", f"/api/tasks/{tid}/resolve", {"resolution": "requeue"})
                self.tally.requeued += 1
        shown = self.statuses()
        for t in sorted(
            (t for t in shown.values() if t["status"] == "verified"), key=lambda t: t["status_changed_at"]
        ):
            self.live.rest("POST", f"/api/tasks/{t['id']}/accept")
            self.tally.accepted += 1

    def settle_landed(self) -> None:
        """Land mode: the tasks done are the ones on main."""
        for tid, t in self.statuses().items():
            if t["status"] == "done":
                self.landed.add(tid)
        self.tally.landed = len(self.landed)

    def audit_main(self, start: str) -> None:
        """Land mode: main's checks at every commit it gained (in a scratch clone), and whether
        each landed task's commit is on main and is the commit its landing run tested."""
        scratch = self.work / f"audit-{self.mode}"
        git(self.work, "clone", "--quiet", str(self.repo), str(scratch))
        gained = git(scratch, "rev-list", "--first-parent", "--reverse", f"{start}..origin/main").split()
        for commit in gained:
            git(scratch, "checkout", "--quiet", "--detach", commit)
            done = subprocess.run(CHECK, shell=True, cwd=scratch, capture_output=True, text=True,
                                  env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))  # fmt: skip
            if done.returncode != 0:
                self.tally.broke_main += 1
                self.tally.broke.append(f"main at {commit[:12]} fails its checks")
        on_main = set(gained)
        for tid in self.landed:
            detail = self.task(tid)
            landed = detail["task"]["landed"]
            tree = git(scratch, "rev-parse", f"{landed['commit']}^{{tree}}")
            runs = {r["id"]: r for r in detail["runs"]}
            tested = runs.get(landed.get("run_id") or "")
            reused = runs.get(landed.get("reused_run") or "")
            ok = (
                landed["commit"] in on_main
                and tree == landed["tree"]
                and (
                    (
                        tested is not None
                        and tested["status"] == "passed"
                        and (tested.get("base") or {}).get("tree") == tree
                    )
                    or (
                        reused is not None
                        and reused["status"] == "passed"
                        and (reused.get("base") or {}).get("tree") == tree
                    )
                )
            )
            self.tally.landed_verified += ok
            events = {e["action"]: e["at"] for e in detail["history"]}
            if "accept" in events and "land" in events:
                self.tally.accept_to_landed_s.append(seconds(events["land"]) - seconds(events["accept"]))
            for r in detail["runs"]:
                ms = ((r.get("checks") or {}).get("unit") or {}).get("duration_ms")
                if ms:
                    self.tally.check_s.append(ms / 1000)
        shutil.rmtree(scratch, ignore_errors=True)

    def human(self, first_round: bool) -> None:
        if self.lands:
            self.accept_to_land()
            # A polling verifier is woken by the acceptances (the queue is work): it lands them
            # now, not at the next round's verification.
            self.verify()
            return
        while True:
            shown = self.statuses()
            for tid, t in shown.items():
                if t["status"] == "needs_human":
                    self.live.rest("POST", f"/api/tasks/{tid}/resolve", {"resolution": "requeue"})
                    self.tally.requeued += 1
            fresh = sorted(
                (t for t in shown.values() if t["status"] == "verified" and not t["stale"]),
                key=lambda t: t["status_changed_at"],
            )
            if self.batch:
                self.accept_all(shown, first_round)
                return
            if not fresh:
                return
            t = fresh[0]
            sub = t["attempts"][-1]["submission"]
            self.land(t["id"], sub.get("resolved_commit") or sub["commit_sha"], first_round)

    def accept_all(self, shown: dict[str, dict[str, Any]], first_round: bool) -> None:
        """The hasty human: every verified task in one batch acceptance, then each landed."""
        verified = sorted((t for t in shown.values() if t["status"] == "verified"),
                          key=lambda t: t["status_changed_at"])  # fmt: skip
        if not verified:
            return
        out = self.live.rest("POST", f"/api/projects/{self.project}/accept",
                           {"task_ids": [t["id"] for t in verified]})  # fmt: skip
        if out["refused"]:
            raise RuntimeError(f"batch acceptance refused: {out['refused']}")
        self.tally.stale_warnings += sum("its verdict is stale" in w for w in out["warnings"])
        for t in verified:
            sub = t["attempts"][-1]["submission"]
            self.land(t["id"], sub.get("resolved_commit") or sub["commit_sha"], first_round, accepted=True)

    def run(self, rounds: int) -> Tally:
        began = time.monotonic()
        start = git(self.repo, "rev-parse", "main")
        for r in range(rounds):
            if self.lands:
                self.settle_landed()
            shown = self.statuses()
            if all(tid in self.landed for tid in self.ids):
                break
            self.tally.rounds = r + 1
            ready = [tid for tid, t in shown.items() if t["status"] == "ready"]
            if ready:
                self.agents_work(ready)
            runs = self.verify()
            self.human(first_round=r == 0)
            if self.lands and not ready and not runs:
                break  # nothing moved: what is left waits for something a round cannot give
            print(f"  {self.mode} round {r + 1}: {len(ready)} submitted, {len(runs)} runs, "
                  f"{len(self.landed)} landed", file=sys.stderr, flush=True)  # fmt: skip
        if self.lands:
            self.verify()  # the last acceptances land
            self.settle_landed()
            self.audit_main(start)
        self.tally.wall_s = time.monotonic() - began
        for tid in self.ids:
            detail = self.task(tid)
            self.tally.attempts_used += detail["task"]["attempts_used"]
            for f in detail["task"]["findings"]:
                for kind, mark in FINDING_KINDS.items():
                    if mark in f["summary"]:
                        self.tally.said.setdefault(kind, f"{tid}: {f['summary']}")
            for run in detail["runs"]:
                self.tally.runs += 1
                self.tally.reverify_runs += bool(run.get("reverify"))
                self.tally.conflict_runs += run["status"] == "conflict"
                self.tally.failed_runs += run["status"] == "failed"
        return self.tally


def seconds(at: str) -> float:
    """An ISO time from the API, as seconds."""
    from datetime import datetime

    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="none,merge")
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument(
        "--tasks", type=int, default=len(JOBS), help=f"how many of the {len(JOBS)} tasks (see SAMPLE)"
    )
    args = smoke.parse(ap, modes="merge,merge-batch", agents=3, tasks=3, rounds=1)
    work = Path(tempfile.mkdtemp(prefix="taskgate-bench-merge-"))
    tallies: dict[str, Tally] = {}
    live = start(work / "data")
    try:
        for mode in args.modes.split(","):
            repo = work / f"repo-{mode}"
            make_repo(repo)
            t = Fleet(live, repo, work, mode, args.agents, args.jobs, chosen(args.tasks)).run(args.rounds)
            tallies[mode] = t
            print(t.line(), flush=True)
            for b in t.broke:
                print(f"  broke main: {b}", flush=True)
            for kind, text in sorted(t.said.items()):
                print(f"  finding ({kind}): {text}", flush=True)
        none, merge, hasty = tallies.get("none"), tallies.get("merge"), tallies.get("merge-batch")
        if none is not None:
            print(
                f"broke_main_none={none.broke_main} conflicted_at_landing_none={none.conflicted_at_landing}"
            )
        if merge is not None:
            print(
                f"broke_main_merge={merge.broke_main} conflicted_at_landing_merge={merge.conflicted_at_landing}"
            )
            print(f"stale_runs_per_accepted={merge.reverify_runs / max(1, merge.accepted):.2f}")
        if hasty is not None:
            print(f"broke_main_merge_batch={hasty.broke_main} stale_warnings={hasty.stale_warnings}")
        landing = tallies.get("land")
        if landing is not None:
            waits = sorted(landing.accept_to_landed_s)
            p50 = waits[len(waits) // 2] if waits else float("nan")
            checks = sorted(landing.check_s)
            check = checks[len(checks) // 2] if checks else float("nan")
            print(
                f"runs_per_landed_land={landing.runs / max(1, landing.landed):.2f} "
                f"broke_main_land={landing.broke_main} "
                f"landed_is_verified={landing.landed_verified}/{landing.landed} "
                f"accept_to_landed_p50_s={p50:.1f} check_p50_s={check:.1f}"
            )
        if none is not None and merge is not None and none.landed and merge.landed:
            print(f"runs_ratio={(merge.runs / merge.landed) / (none.runs / none.landed):.2f}")
    finally:
        live.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
