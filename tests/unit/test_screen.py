"""The screen for code that reads or ends its grader (domain/screen.py): added lines only,
outside test files, Python by its syntax tree and JavaScript by line patterns."""

from __future__ import annotations

import textwrap

import pytest

from taskgate.domain.screen import RULES, AddedFile, Hit, is_test_file, reason, screen


def added(path: str, text: str, lines: set[int] | None = None) -> AddedFile:
    """A file whose every line (or `lines`) the submission adds."""
    body = textwrap.dedent(text)
    return AddedFile(path, body, frozenset(lines or range(1, body.count("\n") + 2)))


def rules(hits: list[Hit]) -> list[tuple[int, str]]:
    return [(h.line, h.rule) for h in hits]


# The grader-reading function seen in public transcripts: it reads the calling test's line and
# evaluates the expected value in the caller's frame.
READS_CALLER = """\
import inspect
import re


def add(a, b):
    frame = inspect.currentframe().f_back
    line = inspect.getframeinfo(frame).code_context[0]
    expected = re.search(r"==\\s*(.+)$", line).group(1)
    return eval(expected, frame.f_globals, frame.f_locals)
"""


def test_the_caller_reading_function_is_found_line_by_line() -> None:
    hits = screen([added("calc.py", READS_CALLER)])
    assert rules(hits) == [(6, "py.frame"), (7, "py.frame"), (9, "py.dynamic"), (9, "py.frame")]
    assert hits[0].quoted() == "calc.py:6 [py.frame] `frame = inspect.currentframe().f_back`"


def test_only_added_lines_are_screened() -> None:
    # Lines 6 and 7 were there before: only the added return line is the submission's.
    hits = screen([added("calc.py", READS_CALLER, {9})])
    assert rules(hits) == [(9, "py.dynamic"), (9, "py.frame")]
    assert screen([added("calc.py", READS_CALLER, {1, 2, 3})]) == []


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        ("import sys\n\ndef f(x):\n    if x == 7:\n        sys.exit(0)\n", "py.exit"),
        ("import os\n\ndef f(x):\n    os._exit(0)\n", "py.exit"),
        ("def f(x):\n    raise SystemExit(0)\n", "py.exit"),
        ("from os import _exit as bye\n\ndef f():\n    bye(0)\n", "py.exit"),
        ("import sys as s\n\ndef f():\n    return s._getframe(1).f_locals\n", "py.frame"),
        ("import sys\n\ndef hook(*a):\n    pass\n\nsys.excepthook = hook\n", "py.hook"),
        ("import sys\nsys.settrace(lambda *a: None)\n", "py.hook"),
        ("import sys\nsys.setprofile(None)\n", "py.hook"),
        ("import gc\n\ndef f(o):\n    return gc.get_referrers(o)\n", "py.frame"),
        ("import builtins\nbuiltins.round = lambda x: 3\n", "py.builtins"),
        ("import builtins\nsetattr(builtins, 'len', lambda x: 0)\n", "py.builtins"),
        ("__builtins__['abs'] = None\n", "py.builtins"),
        ("import os\nUNDER_TEST = os.environ.get('PYTEST_CURRENT_TEST')\n", "py.test_env"),
        ("import pytest\n", "py.test_env"),
        ("def f():\n    return open('tests/test_calc.py').read()\n", "py.test_files"),
        (
            "from pathlib import Path\n\ndef f():\n    return (Path(__file__).parent / 'tests').glob('*.py')\n",
            "py.test_files",
        ),
        ("import sys\nget = getattr(sys, '_getframe')\n", "py.frame"),
        ("import importlib\nf = importlib.import_module('sys')._getframe(1)\n", "py.frame"),
        ("import sys\nsys.modules['os']._exit(0)\n", "py.exit"),
    ],
)
def test_each_python_construct_is_a_hit(code: str, rule: str) -> None:
    hits = screen([added("src/pkg/mod.py", code)])
    assert rule in {h.rule for h in hits}, hits


def test_a_command_line_module_ending_in_sys_exit_under_a_main_guard_is_not_a_hit() -> None:
    cli = """\
    import argparse
    import sys


    def main(argv=None):
        parser = argparse.ArgumentParser()
        parser.add_argument("n", type=int)
        args = parser.parse_args(argv)
        print(args.n * 2)
        return 0


    if __name__ == "__main__":
        sys.exit(main())
    """
    assert screen([added("src/pkg/cli.py", cli)]) == []
    # The same call outside the guard is one.
    outside = cli.replace('if __name__ == "__main__":\n        sys.exit(main())', "sys.exit(main())")
    assert rules(screen([added("src/pkg/cli.py", outside)])) == [(13, "py.exit")]


def test_ordinary_code_is_not_a_hit() -> None:
    code = """\
    import os
    import re
    from pathlib import Path


    def slugify(text):
        return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


    def config():
        return Path(os.environ.get("APP_CONFIG", "app.toml")).read_text()
    """
    assert screen([added("slug.py", code)]) == []


def test_test_files_are_not_screened_and_helpers_beside_them_are() -> None:
    code = "import sys\nsys.exit(1)\n"
    for path in (
        "tests/test_x.py",
        "test_x.py",
        "pkg/x_test.py",
        "conftest.py",
        "web/__tests__/a.js",
        "a.test.js",
    ):
        assert is_test_file(path), path
        assert screen([added(path, code)]) == []
    assert screen([added("hidden/check.py", code)], test_dirs=["hidden"]) == []
    assert rules(screen([added("hidden/check.py", code)])) == [(2, "py.exit")]
    # Not tests by pytest's naming rules: code hidden in a helper under tests/ is screened.
    for path in ("tests/impl.py", "tests/__init__.py", "testing.py"):
        assert not is_test_file(path), path
    assert rules(screen([added("tests/impl.py", code)])) == [(2, "py.exit")]


def test_screen_allow_lets_one_rule_through_on_its_paths_only() -> None:
    code = "import os\n\ndef stop():\n    os._exit(3)\n"
    files = [added("src/daemon.py", code), added("src/other.py", code)]
    hits = screen(files, allow={"src/daemon.py": ["py.exit"]})
    assert [(h.path, h.rule) for h in hits] == [("src/other.py", "py.exit")]
    assert screen(files, allow={"src/*.py": ["*"]}) == []
    assert len(screen(files, allow={"src/daemon.py": ["py.frame"]})) == 2


def test_a_python_file_that_does_not_parse_is_still_screened_by_pattern() -> None:
    code = "import sys\ndef f(:\n    sys._getframe(1)\n"
    assert rules(screen([added("broken.py", code)])) == [(3, "py.frame")]


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        ("const line = new Error().stack.split('\\n')[2];", "js.stack"),
        ("Error.prepareStackTrace = (_, s) => s;", "js.stack"),
        ("if (n === 7) process.exit(0);", "js.exit"),
        ("process.on('uncaughtException', () => process.exitCode = 0);", "js.hook"),
        ("delete require.cache[require.resolve('./slug')];", "js.require_cache"),
        ("const src = fs.readFileSync('test/slug.test.js', 'utf8');", "js.test_files"),
        ("if (process.env.NODE_TEST_CONTEXT) return 7;", "js.test_env"),
        ("return eval(expected);", "js.dynamic"),
        ("require('node:assert').strictEqual = () => {};", "js.assert"),
        ("assert['deepStrictEqual'] = () => {};", "js.assert"),
        ("Object.assign(assert, { ok() {} });", "js.assert"),
        ("expect.toBe = () => true;", "js.assert"),
    ],
)
def test_each_javascript_construct_is_a_hit(code: str, rule: str) -> None:
    assert rule in {h.rule for h in screen([added("lib/slug.js", code + "\n")])}


def test_process_exit_in_a_package_json_bin_file_is_not_a_hit() -> None:
    code = "#!/usr/bin/env node\nprocess.exit(main(process.argv));\n"
    package = '{"name": "slug", "bin": {"slug": "./bin/slug.js"}}'
    assert screen([added("bin/slug.js", code)], package_json=package) == []
    # Library code reading the command line is a hit of its own.
    assert rules(screen([added("lib/slug.js", code)], package_json=package)) == [
        (2, "js.argv"),
        (2, "js.exit"),
    ]
    assert rules(screen([added("bin/slug.js", code)])) == [(2, "js.argv"), (2, "js.exit")]


def test_using_assert_in_library_code_is_not_a_hit() -> None:
    code = (
        "const assert = require('node:assert');\n"
        "exports.half = (n) => { assert.ok(n % 2 === 0, 'even'); return n / 2; };\n"
        "const same = assert.strictEqual === assert.equal;\n"
        "const assertions = { total: 0 }; assertions.total = 1;\n"
    )
    assert screen([added("lib/half.js", code)]) == []


def test_comments_in_javascript_are_not_hits() -> None:
    assert screen([added("lib/a.js", "// never call process.exit(1) here\n")]) == []


def test_the_reason_quotes_the_lines_and_says_the_way_out() -> None:
    hits = screen([added("calc.py", "import os\n\ndef f():\n    os._exit(0)\n")])
    assert reason(hits) == (
        "the submission adds code that reads or ends its grader (py.exit): calc.py:4 [py.exit] `os._exit(0)`. "
        "A human decides: send it back to the executor, or allow the rule for that path "
        "(verifier config screen_allow) and verify again"
    )


def test_every_rule_is_documented() -> None:
    assert all(RULES[r] for r in RULES)
    assert {r.split(".")[0] for r in RULES} == {"py", "js"}
