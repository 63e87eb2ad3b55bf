"""The roads to the grader the screen reads beyond its first rules (domain/screen.py,
domain/screen_js.py): lookups through sys.modules, finalizers and exits beyond atexit and
os._exit, code compiled at run time, the command line, writes to test, report and source files;
and JavaScript read through tree-sitter with its names followed. Each road hits, and the
honest code beside it does not."""

from __future__ import annotations

import textwrap

import pytest

from taskgate.domain.screen import RULES, AddedFile, Hit, screen


def added(path: str, text: str, lines: set[int] | None = None) -> AddedFile:
    body = textwrap.dedent(text)
    return AddedFile(path, body, frozenset(lines or range(1, body.count("\n") + 2)))


def rules_of(path: str, code: str, **kw: object) -> set[str]:
    return {h.rule for h in screen([added(path, code)], **kw)}  # type: ignore[arg-type]


def py(code: str) -> set[str]:
    return rules_of("src/slug/core.py", code)


def js(code: str, path: str = "lib/slug.js") -> set[str]:
    return rules_of(path, code)


# -- Python ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        # The grader through sys.modules, with no `import pytest` to see.
        ("import sys\nreports = sys.modules['_pytest.reports']\n", "py.modules"),
        ("import sys\nm = sys.modules.get(name)\n", "py.modules"),
        ("import sys as s\nfor m in list(s.modules.values()):\n    pass\n", "py.modules"),
        ("from sys import modules\n", "py.modules"),
        ("import sys\nsys.modules['slug'] = object()\n", "py.modules"),
        ("import sys\nsys.meta_path.insert(0, Finder())\n", "py.modules"),
        ("import sys\nsys.path_hooks.append(hook)\n", "py.modules"),
        ("import importlib\nm = importlib.import_module('_py' + 'test.reports')\n", "py.dynamic"),
        ("x = '_pytest.reports'\n", "py.test_env"),
        ("import os\nw = os.environ.get('PYTEST_XDIST_WORKER')\n", "py.test_env"),
        # Finalizers and exits beyond atexit and os._exit.
        ("import weakref\nweakref.finalize(obj, done)\n", "py.hook"),
        ("class Keeper:\n    def __del__(self):\n        report()\n", "py.hook"),
        ("import signal\nsignal.signal(signal.SIGTERM, handler)\n", "py.hook"),
        ("import threading\nthreading.excepthook = hook\n", "py.hook"),
        ("import faulthandler\nfaulthandler.dump_traceback_later(1, exit=True)\n", "py.hook"),
        ("import sys\nsys.addaudithook(watch)\n", "py.hook"),
        ("import sys\nsys.monitoring.use_tool_id(1, 'x')\n", "py.hook"),
        ("import gc\ngc.callbacks.append(cb)\n", "py.hook"),
        ("import os\nos.kill(os.getpid(), 9)\n", "py.exit"),
        ("import os, sys\nos.execv(sys.executable, ['python'])\n", "py.exit"),
        ("import signal\nsignal.raise_signal(signal.SIGKILL)\n", "py.exit"),
        ("import _thread\n_thread.interrupt_main()\n", "py.exit"),
        ("import sys, threading\nthreading.Thread(target=sys.exit).start()\n", "py.exit"),
        # Code compiled at run time.
        ("code = compile(src, 'x', 'exec')\n", "py.dynamic"),
        ("import marshal\ncode = marshal.loads(blob)\n", "py.dynamic"),
        ("import types\nf = types.FunctionType(code, {})\n", "py.dynamic"),
        ("from types import CodeType\nc = CodeType(*args)\n", "py.dynamic"),
        ("def f():\n    pass\nf.__code__ = g.__code__\n", "py.dynamic"),
        ("import runpy\nrunpy.run_path('x.py')\n", "py.dynamic"),
        ("import importlib.util\nspec = importlib.util.spec_from_file_location('m', p)\n", "py.dynamic"),
        # The command line: which tests were asked for.
        ("import sys\n\ndef f():\n    return '-k' in sys.argv\n", "py.argv"),
        ("from sys import argv\n", "py.argv"),
        # Writes to test, report and source files.
        ("def f():\n    open('report.xml', 'w').write('<testsuite/>')\n", "py.writes"),
        ("from pathlib import Path\nPath('tests/test_slug.py').write_text('')\n", "py.writes"),
        ("import os\nos.replace(tmp, 'junit.xml')\n", "py.writes"),
        ("import shutil\nshutil.copy('fake.py', 'tests/test_slug.py')\n", "py.writes"),
        ("def f():\n    with open(__file__, 'w') as out:\n        out.write('')\n", "py.writes"),
        ("from pathlib import Path\nPath(__file__).unlink()\n", "py.writes"),
        # Plugging into the runner without importing it; importing test files.
        ("def pytest_runtest_makereport(item, call):\n    pass\n", "py.test_env"),
        ("pytest_plugins = ['slug.plugin']\n", "py.test_env"),
        ("from tests.test_slug import EXPECTED\n", "py.test_files"),
        ("import test_utils\n", "py.test_files"),
    ],
)
def test_each_new_python_road_is_a_hit(code: str, rule: str) -> None:
    assert rule in py(code), py(code)


def test_honest_python_beside_the_new_roads_is_not_a_hit() -> None:
    code = """\
    import logging
    import re
    import sys
    from pathlib import Path
    from re import compile
    from types import FunctionType

    try:
        import numpy
    except ImportError:
        numpy = None

    HAVE_NUMPY = "numpy" in sys.modules
    THIS = sys.modules[__name__]
    SAME = sys.modules.get(__name__)
    WORD = re.compile(r"\\w+")
    DIGITS = compile(r"\\d+")
    log = logging.getLogger(__name__)


    def is_function(f):
        return isinstance(f, FunctionType)


    def save(data, where="out/cache.json"):
        Path(where).write_text(data)
        with open("out/log.txt", "a") as f:
            f.write(data)


    def read_tests_data():
        return "tests" in "contests"
    """
    assert screen([added("src/slug/core.py", code)]) == []


def test_an_optional_import_by_a_literal_name_is_not_a_hit_and_a_built_name_is() -> None:
    probe = "import importlib\ntry:\n    yaml = importlib.import_module('yaml')\nexcept ImportError:\n    yaml = None\n"
    assert py(probe) == set()
    assert py("import importlib\nm = importlib.import_module(name)\n") == {"py.dynamic"}
    assert "py.dynamic" in py("import importlib\nm = importlib.import_module('_pytest.reports')\n")
    assert "py.dynamic" in py("import importlib\nm = importlib.import_module('os')\n")
    assert py("from importlib import import_module as load\nm = load(name)\n") == {"py.dynamic"}
    assert py("from importlib import import_module as load\nm = load('yaml')\n") == set()


def test_sys_argv_in_a_command_line_module_is_not_a_hit() -> None:
    cli = """\
    import sys


    def main():
        return len(sys.argv)


    if __name__ == "__main__":
        sys.exit(main())
    """
    assert py(cli) == set()
    assert rules_of("src/slug/__main__.py", "import sys\nprint(sys.argv)\n") == set()


def test_a_python_file_with_a_byte_order_mark_is_read_by_its_tree() -> None:
    # Python skips the mark; the screen must read the same tree (not fall back to patterns).
    code = "\ufeffimport os as o\n\ndef f():\n    o._exit(0)\n"
    assert [(h.line, h.rule) for h in screen([added("src/slug/core.py", code)])] == [(4, "py.exit")]


def test_a_python_file_that_does_not_parse_is_read_for_the_new_roads_too() -> None:
    code = "def f(:\n    sys.modules['_pytest.reports']\n    compile(src, 'x', 'exec')\n"
    assert {"py.modules", "py.dynamic"} <= py(code)


# -- JavaScript and TypeScript, by their syntax tree -------------------------------------------


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        # Exits, through whatever name process goes by.
        ("const p = process;\np.exit(0);\n", "js.exit"),
        ("const { exit } = require('node:process');\nexit(0);\n", "js.exit"),
        ("import { exit as bye } from 'node:process';\nbye(0);\n", "js.exit"),
        ("process['exit'](0);\n", "js.exit"),
        ("globalThis.process.exit(0);\n", "js.exit"),
        ("process.exitCode = 0;\n", "js.exit"),
        ("process.reallyExit(0);\n", "js.exit"),
        ("process.kill(process.pid, 'SIGKILL');\n", "js.exit"),
        ("Object.defineProperty(process, 'exitCode', { get: () => 0 });\n", "js.exit"),
        # Hooks on the process's events.
        ("process.on('exit', () => {});\n", "js.hook"),
        ("process.once('SIGTERM', () => {});\n", "js.hook"),
        ("process.removeAllListeners('uncaughtException');\n", "js.hook"),
        ("process.setUncaughtExceptionCaptureCallback(() => {});\n", "js.hook"),
        # The module loader.
        ("delete require.cache[require.resolve('./slug')];\n", "js.require_cache"),
        ("const Module = require('module');\nModule._load = function () {};\n", "js.require_cache"),
        ("require('node:module')._resolveFilename = f;\n", "js.require_cache"),
        (
            "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n",
            "js.require_cache",
        ),
        ("const caller = module.parent;\n", "js.require_cache"),
        ("require.extensions['.js'] = f;\n", "js.require_cache"),
        ("const b = process.binding('fs');\n", "js.require_cache"),
        # Code built at run time.
        ("const f = new Function('a', 'return a');\n", "js.dynamic"),
        ("const vm = require('vm');\nvm.runInThisContext(code);\n", "js.dynamic"),
        ("const m = require(name);\n", "js.dynamic"),
        ("const m = await import(name);\n", "js.dynamic"),
        ("setTimeout('done()', 1);\n", "js.dynamic"),
        # The test runner, looked at or imported.
        ("import { test } from 'node:test';\n", "js.test_env"),
        ("const { vi } = require('vitest');\n", "js.test_env"),
        ("const name = expect.getState().currentTestName;\n", "js.test_env"),
        ("const w = process.env.VITEST_WORKER_ID;\n", "js.test_env"),
        # The assertion library and the framework, changed.
        ("import assert from 'node:assert';\nassert.deepStrictEqual = () => {};\n", "js.assert"),
        ("import * as a from 'node:assert/strict';\na.equal = () => {};\n", "js.assert"),
        ("const t = require('node:test');\nt.mock = null;\n", "js.assert"),
        ("delete assert.ok;\n", "js.assert"),
        ("const { strict: ok } = require('assert');\nok.equal = () => {};\n", "js.assert"),
        # The command line; writes; test files read or imported.
        ("const only = process.argv.includes('--only');\n", "js.argv"),
        ("const fs = require('fs');\nfs.writeFileSync('junit.xml', '<testsuites/>');\n", "js.writes"),
        ("import { writeFileSync } from 'node:fs';\nwriteFileSync(__filename, '');\n", "js.writes"),
        ("fs.renameSync(tmp, 'test/slug.test.js');\n", "js.writes"),
        ("import fs from 'fs';\nawait fs.promises.writeFile('report.xml', x);\n", "js.writes"),
        ("const h = require('../test/helpers.test.js');\n", "js.test_files"),
        ("const s = readFileSync('test/slug.test.js', 'utf8');\n", "js.test_files"),
    ],
)
def test_each_javascript_road_is_a_hit(code: str, rule: str) -> None:
    assert rule in js(code), js(code)


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        ("(process as any).exit(0);\n", "js.exit"),
        ("process!.exit(1);\n", "js.exit"),
        ("import fs = require('fs');\nfs.writeFileSync('report.xml', x);\n", "js.writes"),
        ("import assert from 'node:assert';\n(assert as any).equal = () => {};\n", "js.assert"),
    ],
)
def test_typescript_is_read_by_its_own_grammar(code: str, rule: str) -> None:
    assert rule in js(code, "src/slug.ts")
    assert rule in js(code.replace("as any", "as unknown"), "src/slug.mts")


def test_tsx_is_read_by_its_grammar() -> None:
    code = "export const A = () => <div>{String(process.exit(0))}</div>;\n"
    assert js(code, "src/a.tsx") == {"js.exit"}


def test_honest_javascript_is_not_a_hit() -> None:
    code = """\
    'use strict';
    import fs from 'node:fs';
    import path from 'node:path';
    import assert from 'node:assert';

    const DATA = path.join(__dirname, 'data', 'words.json');
    const words = JSON.parse(fs.readFileSync(DATA, 'utf8'));

    export function slugify(text) {
      assert.ok(typeof text === 'string', 'text');
      if (process.env.NODE_ENV === 'development') console.log(text);
      return text.toLowerCase().replace(/[^a-z0-9]+/g, '-');
    }

    export function save(out, value) {
      try {
        fs.writeFileSync(path.join(out, 'slugs.json'), JSON.stringify(value));
      } catch (err) {
        console.error(err.stack);
      }
    }

    const same = assert.strictEqual === assert.equal;
    const warning = "never call process.exit(1) here";
    // process.exit(1) in a comment is no call
    module.exports = { slugify, save, same, warning };
    """
    assert screen([added("lib/slug.js", code)]) == []


def test_strings_and_comments_are_not_code() -> None:
    # A line pattern would take these for calls; the syntax tree does not.
    code = "const help = `run process.exit(0) or require.cache`;\n/* new Function('x') */\n"
    assert js(code) == set()


def test_only_added_lines_count_in_javascript() -> None:
    code = "const p = process;\nfunction stop() {\n  p.exit(0);\n}\n"
    assert screen([added("lib/a.js", code, {1, 2})]) == []
    assert [(h.line, h.rule) for h in screen([added("lib/a.js", code, {3})])] == [(3, "js.exit")]


def test_a_javascript_file_tree_sitter_cannot_parse_is_read_by_pattern() -> None:
    code = "function f( {\n  process.exit(0);\n"
    assert [(h.line, h.rule) for h in screen([added("lib/a.js", code)])] == [(2, "js.exit")]


def test_a_bin_file_may_exit_and_read_its_arguments() -> None:
    code = "#!/usr/bin/env node\nprocess.exit(run(process.argv.slice(2)));\n"
    package = '{"name": "slug", "bin": "bin/slug.js"}'
    assert screen([added("bin/slug.js", code)], package_json=package) == []
    assert {h.rule for h in screen([added("lib/x.js", code)], package_json=package)} == {"js.exit", "js.argv"}


def test_the_hit_quotes_its_line() -> None:
    hits = screen([added("lib/a.js", "const keep = 1;\nprocess.exitCode = 0;\n")])
    assert hits == [Hit("lib/a.js", 2, "js.exit", "process.exitCode = 0;")]


def test_every_rule_a_hit_can_carry_is_documented() -> None:
    for rule in ("py.modules", "py.argv", "py.writes", "js.argv", "js.writes"):
        assert RULES[rule]
