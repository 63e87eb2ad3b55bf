"""Hostile checks and reports: each is refused as an error of the run (never a crash of the
verifier, never a pass), nothing outside the checkout is touched, no secret is recorded, and
nothing a check started is left running."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.live import Live
from tests.support.processes import alive as _alive
from tests.verifier.support import KEEPS_DIGITS, SLUGIFY, SLUGIFY_TESTS, Gate, Repo, pytest_config

REPORT = {"path": "reports/junit.xml", "format": "junit"}

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuites><testsuite name="s"><testcase classname="test_slug.TestSlugify" name="test_keeps_digits">&lol9;</testcase></testsuite></testsuites>
"""


def external_entity(target: Path) -> str:
    return f"""<?xml version="1.0"?>
<!DOCTYPE t [<!ENTITY xxe SYSTEM "file://{target}">]>
<testsuites><testsuite name="&xxe;"><testcase classname="test_slug.TestSlugify" name="test_keeps_digits"/></testsuite></testsuites>
"""


def hostile_gate(
    live: Live, tmp_path: Path, command: str, files: dict[str, str] | None = None
) -> tuple[Gate, str]:
    """A task whose only check is `command`, writing (or faking) the report."""
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS, **(files or {})}
    )
    gate = Gate.create(live, repo, {"checks": {"unit": {"command": command, "report": REPORT}}})
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, repo.commit({"README": "slugs\n"}))
    return gate, tid


def errored(gate: Gate, tid: str) -> dict[str, Any]:
    [line] = gate.verify_json()
    assert (line["verdict"], line["task_status"]) == ("error", "needs_verification"), line
    assert gate.detail(tid)["task"]["attempts_used"] == 0
    return line


def test_a_report_symlinked_out_of_the_checkout_is_refused(live: Live, tmp_path: Path) -> None:
    outside = tmp_path / "secret.xml"
    outside.write_text(
        '<testsuites><testsuite name="x"><testcase name="test_keeps_digits" classname="test_slug.TestSlugify"/></testsuite></testsuites>'
    )
    before = outside.read_bytes()
    gate, tid = hostile_gate(live, tmp_path, f"mkdir -p reports && ln -s {outside} reports/junit.xml")
    line = errored(gate, tid)
    assert "resolves outside the checkout" in line["summary"]
    assert outside.read_bytes() == before


def test_report_paths_that_escape_are_refused_by_the_config(live: Live, tmp_path: Path) -> None:
    repo = Repo.create(tmp_path / "repo", {"a": "b"})
    gate = Gate.create(live, repo, pytest_config())
    for path in ("../junit.xml", "/etc/passwd", "reports/../../x.xml", "~/x.xml"):
        bad = {"checks": {"unit": {"command": "true", "report": {"path": path, "format": "junit"}}}}
        resp = gate.live.rest("PUT", f"/api/projects/{gate.project}/verifier-config", bad)
        assert (resp.status_code, resp.json()["code"]) == (422, "E_VALIDATION"), path


def test_an_xml_bomb_is_refused(live: Live, tmp_path: Path) -> None:
    gate, tid = hostile_gate(
        live, tmp_path, "mkdir -p reports && cp bomb.xml reports/junit.xml", {"bomb.xml": BILLION_LAUGHS}
    )
    line = errored(gate, tid)
    assert "report of check unit" in line["summary"]


def test_an_external_entity_is_never_resolved(live: Live, tmp_path: Path) -> None:
    target = tmp_path / "host-secret.txt"
    target.write_text("TOP-SECRET")
    gate, tid = hostile_gate(
        live,
        tmp_path,
        "mkdir -p reports && cp xxe.xml reports/junit.xml",
        {"xxe.xml": external_entity(target)},
    )
    line = errored(gate, tid)
    assert "TOP-SECRET" not in str(gate.detail(tid))
    assert "report of check unit" in line["summary"]


def test_a_200_mb_report_is_refused_unread(live: Live, tmp_path: Path) -> None:
    gate, tid = hostile_gate(live, tmp_path, "mkdir -p reports && truncate -s 200M reports/junit.xml")
    line = errored(gate, tid)
    assert "209715200 bytes; the limit is" in line["summary"]


def test_a_fifo_at_the_report_path_does_not_hang_the_verifier(live: Live, tmp_path: Path) -> None:
    gate, tid = hostile_gate(live, tmp_path, "mkdir -p reports && mkfifo reports/junit.xml")
    assert "not a regular file" in errored(gate, tid)["summary"]


def test_a_check_printing_its_environment_records_no_key_token_or_credential(
    live: Live, tmp_path: Path
) -> None:
    repo = Repo.create(tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS})
    config = pytest_config()
    config["checks"]["env"] = {"command": "env; cat /proc/self/environ | tr '\\0' '\\n'"}
    gate = Gate.create(live, repo, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, repo.commit({"README": "x\n"}))
    secrets = {
        "AWS_SECRET_ACCESS_KEY": "aws-secret-value-123",
        "AWS_SESSION_TOKEN": "aws-session-value-456",
        "TASKGATE_GIT_TOKEN": "git-token-value-789",
        "TASKGATE_TOKEN": "tgh_admin-token-value",
    }
    [line] = gate.verify_json(env=secrets)
    assert line["verdict"] == "passed", line
    output = gate.detail(tid)["runs"][0]["checks"]["env"]["output_tail"]
    assert "PATH=" in output  # it did print its environment
    for value in [*secrets.values(), gate.verifier_key, gate.reviewer_key]:
        assert value not in output
    assert "TASKGATE_" not in output and "AWS_" not in output


def test_nothing_a_check_started_in_the_background_is_left_running(live: Live, tmp_path: Path) -> None:
    repo = Repo.create(tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS})
    config = pytest_config()
    bg, daemon = tmp_path / "bg.pid", tmp_path / "daemon.pid"
    config["checks"]["server"] = {
        "command": f"sleep 600 & echo $! > {bg}; setsid sleep 600 & echo $! > {daemon}; exit 0"
    }
    gate = Gate.create(live, repo, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, repo.commit({"README": "x\n"}))
    [line] = gate.verify_json()
    assert line["verdict"] == "passed", line
    for pidfile in (bg, daemon):
        pid = int(pidfile.read_text())
        assert not _alive(pid), f"{pidfile.name}: {pid} still running"


def test_a_check_that_detaches_and_empties_its_environment_is_still_stopped(
    live: Live, tmp_path: Path
) -> None:
    """A daemon in a session of its own with an empty environment (no run marker left on it)
    would outlive its run and watch the next one."""
    pidfile = tmp_path / "lurker.pid"
    lurk = 'env -i setsid sh -c \'echo $$ > "$1"; exec sleep 600\' sh "$1" &\n'
    repo = Repo.create(
        tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS, "lurk.sh": lurk}
    )
    config = pytest_config()
    config["checks"]["lurk"] = {
        "command": f"sh lurk.sh {pidfile}; while [ ! -s {pidfile} ]; do sleep 0.05; done"
    }
    gate = Gate.create(live, repo, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, repo.commit({"README": "x\n"}))
    [line] = gate.verify_json()
    assert line["verdict"] == "passed", line
    pid = int(pidfile.read_text())
    assert not _alive(pid), f"the detached check {pid} is still running"


@pytest.mark.skipif(os.geteuid() != 0, reason="run as another user, a check gets a HOME of its own")
def test_a_check_leaves_nothing_in_home_for_a_later_runs_checks(live: Live, tmp_path: Path) -> None:
    """Run as root, the verifier gives each run's checks a fresh HOME: a check cannot leave a
    ~/.local/.../usercustomize.py (or any file) behind for the next run's checks to load."""
    home, seen = tmp_path / "home", tmp_path / "seen"
    home.mkdir(mode=0o777)
    home.chmod(0o777)
    repo = Repo.create(tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS})
    config = pytest_config()
    config["checks"]["plant"] = {
        "command": f'if [ -e "$HOME/planted" ]; then echo found >> {seen}; else echo clean >> {seen}; fi; '
        'touch "$HOME/planted"'
    }
    gate = Gate.create(live, repo, config)
    for _ in range(2):
        tid = gate.task([KEEPS_DIGITS])
        gate.submit(tid, repo.commit({"README": f"{tid}\n"}))
    lines = gate.verify_json(env={"HOME": str(home)})
    assert [line["verdict"] for line in lines] == ["passed", "passed"], lines
    assert seen.read_text().split() == ["clean", "clean"]
    assert not (home / "planted").exists()


def test_what_a_check_left_to_end_on_its_own_is_reaped_not_kept_as_a_zombie(
    live: Live, tmp_path: Path
) -> None:
    """An orphan of a check comes back to the verifier (it is a child subreaper); one that ends
    by itself must be waited for, or a polling verifier collects zombies run after run."""
    count = tmp_path / "zombies"
    repo = Repo.create(tmp_path / "repo", {"slug.py": SLUGIFY, "test_slug.py": SLUGIFY_TESTS})
    config = pytest_config()
    config["checks"]["orphan"] = {"command": "sh -c 'sleep 0.2 &'; sleep 1"}
    config["checks"]["count"] = {  # its parent is the verifier: count the verifier's zombies
        "command": f"cat /proc/[0-9]*/stat 2>/dev/null | awk -v p=$PPID '$3 == \"Z\" && $4 == p' | wc -l > {count}"
    }
    gate = Gate.create(live, repo, config)
    tid = gate.task([KEEPS_DIGITS])
    gate.submit(tid, repo.commit({"README": "x\n"}))
    [line] = gate.verify_json()
    assert line["verdict"] == "passed", line
    assert count.read_text().split() == ["0"]
