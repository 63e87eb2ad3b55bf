"""What a verdict holds for, on the board: a real `taskgate serve`, real git repositories,
`taskgate verify` as a real subprocess and a real Chromium. A verified card shows its base and
is marked stale when the base branch moves (told by the push webhook); the drawer shows the base,
each run with its base tip and outcome, re-verifications marked; a run's changed paths mark the
protected ones and the test files, and a held submission is allowed or reopened from the drawer;
the Verifiers tab edits `protect` and the server keeps what it shows."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, Route, expect

from tests.browser.support import Guard, Site, off_loop, sign_in, submit
from tests.mcp.live import Live
from tests.support.conf_project import USE, USE_PY, USES
from tests.support.users import shared_tmp
from tests.verifier.support import Gate, Repo, git, pytest_config

CONF = "LIMIT = 10\n"
CONF_TEST = "import conf\n\n\ndef test_limit():\n    assert conf.LIMIT == 10\n"
RENAMED = {"conf.py": "MAX_LIMIT = 10\n", "test_conf.py": CONF_TEST.replace("LIMIT", "MAX_LIMIT")}
# A file name an agent chose: the board must show it as text, never as markup.
MARKUP_NAME = "<b>bold</b><img src=x onerror=alert(1)>.txt"


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """The checks run as an unprivileged user when the suite runs as root: the repositories live
    where that user can read them."""
    yield from shared_tmp()


def gate_on(site: Site, tmp_path: Path, **config: object) -> Gate:
    repo = Repo.create(
        tmp_path / "repo", {"conf.py": CONF, "test_conf.py": CONF_TEST, ".gitignore": "reports/\n"}
    )
    live = Live(site.url, site.server.data_dir, site.server.proc)  # type: ignore[arg-type]
    return Gate.create(live, repo, pytest_config(**config))


def card(page: Page, tid: str) -> Locator:
    return page.locator(f'li.card[data-task="{tid}"]')


def runs(drawer: Locator) -> Locator:
    return drawer.locator("ol.runs > li")


def push(site: Site, gate: Gate, tip: str) -> None:
    """The git host's push webhook, authenticated with the verifier's key."""
    body = {"ref": "refs/heads/main", "after": tip, "before": "0" * 40, "repository": {"full_name": "o/r"}}
    site.ok("POST", f"/api/verifier/projects/{gate.project}/base", body, token=gate.verifier_key)


def test_a_verified_card_goes_stale_when_main_moves_and_the_drawer_shows_each_run_on_its_base(
    page: Page, guard: Guard, site: Site, tmp_path: Path
) -> None:
    gate = gate_on(site, tmp_path)
    repo = gate.repo
    tip0 = git(repo.path, "rev-parse", "HEAD")
    tid = gate.task([USE])
    git(repo.path, "checkout", "--quiet", "-b", "use")
    sha = repo.commit({"use.py": USE_PY, "test_use.py": USES}, "use")
    git(repo.path, "checkout", "--quiet", "main")
    off_loop(gate.submit, tid, sha)
    assert [x["verdict"] for x in gate.verify_json()] == ["passed"]

    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, site, f"?project={gate.project}")
    c = card(page, tid)
    expect(c.locator(".card-base")).to_have_text(f"on main @ {tip0[:7]}")
    expect(c.locator(".card-base")).to_have_attribute(
        "title", f"verified on the commit merged onto main at {tip0[:12]}"
    )
    expect(c.locator(".flag-stale")).to_have_count(0)
    expect(c).not_to_have_class(re.compile(r"\bstale\b"))
    c.locator(".card-title").click()
    drawer = page.locator("#drawer")
    note = drawer.get_by_role("note", name="What the verdict holds for")
    expect(note).to_have_text(f"Verified on: the commit merged onto main at {tip0[:12]}")

    # main gains a commit; the git host's webhook says so; the board marks the card by itself
    tip1 = repo.commit({"README": "hello\n"}, "docs")
    push(site, gate, tip1)
    stale = f"stale: main is at {tip1[:12]} now; it is verified again on that tip"
    expect(c.locator(".flag-stale")).to_have_text(stale)
    expect(c).to_have_class(re.compile(r"\bstale\b"))
    expect(note.locator(".stale-note")).to_contain_text(stale)
    expect(drawer.locator(":scope > ul.flags .flag-stale")).to_have_text(stale)
    # accepting it now says so before anything is done
    drawer.get_by_role("button", name="Accept", exact=True).click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator(".stale-warning")).to_have_text(
        f"Its verdict is stale ({stale}): it was verified on the commit merged onto main at {tip0[:12]}."
    )
    dialog.get_by_role("button", name="Back", exact=True).click()
    assert site.status(tid) == "verified"
    # a project that accepts only re-verified work refuses it, and the dialog says why
    gate.configure(pytest_config(accept_stale=False))
    guard.expect(409)
    drawer.get_by_role("button", name="Accept", exact=True).click()
    dialog.get_by_role("button", name="Accept", exact=True).click()
    expect(dialog.get_by_role("alert")).to_contain_text(
        f"{tid} was verified on the commit merged onto main at {tip0[:12]}, and main is at {tip1[:12]} now: its verdict "
        "is stale; this project accepts only after re-verification (accept_stale: false)"
    )
    dialog.get_by_role("button", name="Back", exact=True).click()
    assert site.status(tid) == "verified"
    gate.configure(pytest_config())
    # the whole board still fits 1,280 px with the marked card and the open drawer
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280
    assert page.evaluate(
        "() => { const d = document.getElementById('drawer'); return d.scrollWidth <= d.clientWidth; }"
    )

    # the verifier's next poll verifies it again on the new tip, with no human action
    lines = gate.verify_json()
    assert [(x["task_id"], x["verdict"], x["task_status"]) for x in lines] == [(tid, "passed", "verified")]
    expect(c.locator(".flag-stale")).to_have_count(0)
    expect(c.locator(".card-base")).to_have_text(f"on main @ {tip1[:7]}")
    expect(note).to_have_text(f"Verified on: the commit merged onto main at {tip1[:12]}")
    expect(runs(drawer)).to_have_count(2)
    newest, first = runs(drawer).nth(0), runs(drawer).nth(1)
    expect(newest.locator(".badge.reverify")).to_have_text("re-verification")
    expect(newest.locator(".badge.result-passed")).to_have_text("passed")
    expect(newest.locator(".run-base")).to_have_text(f"Checked on the commit merged onto main at {tip1[:12]}")
    expect(newest.locator(".run-base")).to_have_attribute("data-tip", tip1)
    expect(first.locator(".badge.reverify")).to_have_count(0)
    expect(first.locator(".run-base")).to_have_text(f"Checked on the commit merged onto main at {tip0[:12]}")

    # main then renames the limit under it: the re-verification fails and the run says so
    tip2 = repo.commit(RENAMED, "rename")
    push(site, gate, tip2)
    expect(c.locator(".flag-stale")).to_have_text(
        f"stale: main is at {tip2[:12]} now; it is verified again on that tip"
    )
    [line] = gate.verify_json()
    assert (line["task_id"], line["verdict"], line["task_status"]) == (tid, "failed", "ready")
    expect(runs(drawer)).to_have_count(3)
    failed = runs(drawer).nth(0)
    expect(failed.locator(".badge.reverify")).to_have_text("re-verification")
    expect(failed.locator(".badge.result-failed")).to_have_text("failed")
    expect(failed.locator(".run-base")).to_have_text(f"Checked on the commit merged onto main at {tip2[:12]}")
    expect(failed).to_contain_text(f"breaks on the new base (the commit merged onto main at {tip2[:12]}")
    expect(
        page.locator('section[data-status="ready"]').locator(f'li.card[data-task="{tid}"]')
    ).to_be_visible()
    expect(c.locator(".card-base")).to_have_count(0)
    expect(drawer.get_by_role("note", name="What the verdict holds for")).to_have_count(0)


def test_a_conflicting_run_names_its_base_and_paths(page: Page, site: Site, tmp_path: Path) -> None:
    gate = gate_on(site, tmp_path)
    repo = gate.repo
    fork = git(repo.path, "rev-parse", "HEAD")
    tid = gate.task([USE])
    tip = repo.commit(
        {"conf.py": "LIMIT = 20\n", "test_conf.py": CONF_TEST.replace("10", "20")}, "main moves"
    )
    git(repo.path, "checkout", "--quiet", "-b", "old", fork)
    sha = repo.commit({"conf.py": "LIMIT = 30\n", "use.py": USE_PY, "test_use.py": USES}, "old")
    git(repo.path, "checkout", "--quiet", "main")
    off_loop(gate.submit, tid, sha)
    assert [x["verdict"] for x in gate.verify_json()] == ["conflict"]
    sign_in(page, site, f"?project={gate.project}&task={tid}")
    run = runs(page.locator("#drawer")).nth(0)
    expect(run.locator(".badge.result-conflict")).to_have_text("conflict")
    expect(run.locator(".run-conflict")).to_have_text(
        f"Did not merge onto main at {tip[:12]}; conflicting paths: conf.py"
    )


def test_changed_paths_mark_protected_and_test_files_and_a_held_change_is_allowed(
    page: Page, guard: Guard, site: Site, tmp_path: Path
) -> None:
    gate = gate_on(site, tmp_path)
    repo = gate.repo
    tid = gate.task([USE])
    git(repo.path, "checkout", "--quiet", "-b", "held")
    conftest = "import pytest\n\n\n@pytest.fixture\ndef limit():\n    return 10\n"
    sha = repo.commit(
        {
            "conftest.py": conftest,
            "use.py": USE_PY,
            "test_use.py": USES,
            "notes/x.md": "x\n",
            MARKUP_NAME: "x\n",
        },
        "held",
    )
    git(repo.path, "checkout", "--quiet", "main")
    off_loop(gate.submit, tid, sha)
    [line] = gate.verify_json()
    assert line["task_status"] == "needs_human", line

    sign_in(page, site, f"?project={gate.project}&task={tid}")
    drawer = page.locator("#drawer")
    banner = drawer.get_by_role("note", name="Why it needs a human")
    expect(banner).to_contain_text("the submission changes protected paths: conftest.py")
    expect(banner.get_by_role("list", name="Protected paths the submission changes")).to_have_text(
        "conftest.py"
    )
    banner.locator("details summary").click()
    expect(banner.locator("details pre")).to_contain_text("+def limit():")
    changed = runs(drawer).nth(0).locator("details.changed-paths")
    expect(changed).to_have_attribute("open", "")  # open: it marks a protected path
    expect(changed.locator(":scope > summary")).to_contain_text("5 changed paths against main at")
    expect(changed.locator(":scope > summary")).to_contain_text("· 1 protected")
    rows = changed.locator(":scope > ul > li")
    expect(rows).to_have_count(5)
    marks = {
        rows.nth(i).locator("code").text_content(): rows.nth(i).locator(".badge").all_text_contents()
        for i in range(5)
    }
    assert marks == {
        MARKUP_NAME: [],
        "conftest.py": ["protected", "test"],  # pytest reads it as part of its tests
        "notes/x.md": [],
        "test_use.py": ["test"],
        "use.py": [],
    }, marks
    # the agent's file name is text: no element was made from it
    expect(drawer.locator("img")).to_have_count(0)
    expect(drawer.locator("code b")).to_have_count(0)
    actions = drawer.get_by_role("group", name="Actions")
    expect(actions.get_by_role("button", name="Reopen…")).to_be_visible()
    actions.get_by_role("button", name="Allow the change").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(f"Allow {tid}'s change to conftest.py?")
    dialog.get_by_role("button", name="Allow the change").click()
    expect(dialog).to_have_count(0)
    detail = site.task(tid)["task"]
    assert detail["status"] == "needs_verification"
    assert detail["allowed"]["paths"] == ["conftest.py"] and detail["allowed"]["by"] == "human:alice"

    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("passed", "verified"), line
    expect(runs(drawer)).to_have_count(2)
    newest = runs(drawer).nth(0).locator("details.changed-paths")
    protected = newest.locator("li.protected-path")
    expect(protected.locator("code")).to_have_text("conftest.py")
    expect(protected.locator(".badge.protected")).to_have_text("protected, allowed")


LIMIT_TEST = {"text": "the limit is 10", "kind": "test", "verify_ref": "test_conf.test_limit"}
HOLDS = {
    # the screen finds code that reads its grader (a frame read)
    "reads_grader": (
        USE,
        {
            "conf.py": "import sys\n\nLIMIT = sys._getframe(0).f_lineno * 0 + 10\n",
            "use.py": USE_PY,
            "test_use.py": USES,
        },
    ),
    # the named test passes only with the submission's own edit to it
    "tests_edited": (
        LIMIT_TEST,
        {"conf.py": "LIMIT = 20\n", "test_conf.py": CONF_TEST.replace("== 10", "== 20")},
    ),
}


@pytest.mark.parametrize("why", sorted(HOLDS))
def test_a_hold_not_on_protected_paths_is_reopened_not_allowed(
    page: Page, site: Site, tmp_path: Path, why: str
) -> None:
    """Allowing is for protected paths only: the drawer does not offer it for another hold (the
    server would refuse it), and reopening with findings sends the task back with an attempt used."""
    criterion, files = HOLDS[why]
    gate = gate_on(site, tmp_path)
    repo = gate.repo
    tid = gate.task([criterion])
    git(repo.path, "checkout", "--quiet", "-b", "held")
    sha = repo.commit(files, "held")
    git(repo.path, "checkout", "--quiet", "main")
    off_loop(gate.submit, tid, sha)
    [line] = gate.verify_json()
    assert line["task_status"] == "needs_human", line
    assert site.task(tid)["task"]["needs_human"]["why"] == why

    sign_in(page, site, f"?project={gate.project}&task={tid}")
    drawer = page.locator("#drawer")
    actions = drawer.get_by_role("group", name="Actions")
    expect(actions.get_by_role("button", name="Reopen…")).to_be_visible()
    expect(actions.get_by_role("button", name="Allow the change")).to_have_count(0)
    actions.get_by_role("button", name="Reopen…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Findings (one per line)").fill("compute the limit; leave its test as it is")
    dialog.get_by_role("button", name="Reopen", exact=True).click()
    expect(dialog).to_have_count(0)
    task = site.task(tid)["task"]
    assert (task["status"], task["attempts_used"]) == ("ready", 1)
    assert task["findings"][-1]["summary"] == "compute the limit; leave its test as it is"


def test_protect_is_edited_in_the_verifiers_tab_and_round_trips(page: Page, guard: Guard, site: Site) -> None:
    project = site.project(f"protect-{os.getpid() % 10000}", verification=True)
    sign_in(page, site, f"?project={project}&view=verifiers")
    panel = page.locator("section", has=page.get_by_role("heading", name="Protected paths", exact=True))
    expect(panel.locator(".protect-state")).to_contain_text("Protection is the default")
    in_force = panel.get_by_role("list", name="Protected paths in force")
    expect(in_force.locator("li").first).to_have_text("**/conftest.py")
    globs = panel.get_by_label("Our own globs, one per line")
    expect(globs).to_be_disabled()

    panel.get_by_label("Our own list").check()
    expect(globs).to_be_enabled()
    globs.fill("tests/**/fixtures/\nMakefile\n")
    panel.get_by_role("button", name="Save protected paths").click()
    expect(panel.locator(".protect-state")).to_contain_text("Protection is this project's own list")
    expect(in_force.locator("li")).to_have_text(["tests/**/fixtures/", "Makefile"])
    cfg = site.ok("GET", f"/api/projects/{project}/verifier-config")["config"]
    assert cfg["protect"] == ["tests/**/fixtures/", "Makefile"]
    assert cfg["checks"]["unit"]["command"] == "pytest --junitxml=reports/junit.xml"  # the rest kept
    expect(page.get_by_label("Verifier config (JSON)")).to_have_value(
        re.compile(r'"protect": \[\s*"tests/\*\*/fixtures/"')
    )

    # a fresh page reads it back from the server
    page.reload()
    panel = page.locator("section", has=page.get_by_role("heading", name="Protected paths", exact=True))
    expect(panel.get_by_label("Our own list")).to_be_checked()
    expect(panel.get_by_label("Our own globs, one per line")).to_have_value("tests/**/fixtures/\nMakefile")

    # a glob outside the checkout is refused by the server, shown, and changes nothing
    guard.expect(422)
    panel.get_by_label("Our own globs, one per line").fill("../secrets\n")
    panel.get_by_role("button", name="Save protected paths").click()
    alert = panel.get_by_role("alert")
    expect(alert).to_contain_text("E_VALIDATION")
    expect(alert).to_contain_text("must be relative to the checkout")
    assert site.ok("GET", f"/api/projects/{project}/verifier-config")["config"]["protect"] == [
        "tests/**/fixtures/",
        "Makefile",
    ]

    panel.get_by_label("Off").check()
    panel.get_by_role("button", name="Save protected paths").click()
    expect(panel.locator(".protect-state")).to_contain_text("Protection is off")
    expect(panel).to_contain_text("No path is protected.")
    assert site.ok("GET", f"/api/projects/{project}/verifier-config")["config"]["protect"] == []

    panel.get_by_label("The default").check()
    panel.get_by_role("button", name="Save protected paths").click()
    expect(panel.locator(".protect-state")).to_contain_text("Protection is the default")
    assert site.ok("GET", f"/api/projects/{project}/verifier-config")["config"]["protect"] is None
    events = [
        e
        for e in site.ok("GET", f"/api/projects/{project}/history")["items"]
        if e["action"] == "verifier_config_changed"
    ]
    assert [e["detail"]["config"]["protect"] for e in reversed(events)] == [
        None,
        ["tests/**/fixtures/", "Makefile"],
        [],
        None,
    ]


def test_evidence_flags_the_board_does_not_know_are_shown_as_words(page: Page, site: Site) -> None:
    """A flag a newer verifier sets on a criterion's evidence is shown, named in words and as
    text. The server's answer is extended in flight: no flag of this kind exists yet to record."""
    project = site.project(f"flags-{os.getpid() % 10000}", verification=True)
    tid = site.rest_task(
        project, "Add /ping", criteria=[{"text": "ping answers", "kind": "test", "verify_ref": "t.test_ping"}]
    )
    submit(site, site.agent_key(f"ada-{project}"), project, tid)
    site.verify(project, tid)
    own = f"AC-{tid}.1"

    def extend(route: Route) -> None:
        body = route.fetch().json()
        ev = body["runs"][-1]["evidence"][own]
        ev["flags"] = ["passes_without_change", {"kind": "odd", "text": "<img src=x onerror=alert(1)>"}]
        ev["brand_new_flag"] = True
        route.fulfill(json=body)

    page.route(re.compile(rf"/api/tasks/{re.escape(tid)}(\?.*)?$"), extend)
    sign_in(page, site, f"?project={project}&task={tid}")
    flags = page.locator(f'#drawer tr.criterion[data-criterion="{own}"] .evidence-flag')
    expect(flags).to_have_text(["passes without change", "<img src=x onerror=alert(1)>", "brand new flag"])
    expect(page.locator("#drawer img")).to_have_count(0)
