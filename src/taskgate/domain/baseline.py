"""What a submission changed against its baseline, and which of those changes a human must see.

The verifier finds the baseline (the merge-base of the submitted commit with the base branch)
and lists the paths the submission changes; the rules here say which of them are protected (the
test harness: a change there can make any test pass) and which are test files. Pure: the
verifier and the server apply the same rules, and the server's reading is the one that decides.

Protected paths are the verifier config's `protect` globs, or DEFAULT_PROTECT when it names
none, plus every file inside the checkout that a check's command runs by path, or that a
package.json script it runs through npm, pnpm or yarn runs (`npm test` runs pretest, test and
posttest; the baseline's scripts and the submission's), a preload named by an option included.
Three files are protected only in their test runner's part: `pyproject.toml` (its
`[tool.pytest...]` tables), `setup.cfg` (`[tool:pytest]`) and `package.json` (the `jest`,
`vitest`, `mocha` and `ava` keys, and the `test*`, `pretest*` and `posttest*` scripts). A change
elsewhere in them is no change to the harness; the verifier compares that part of both versions
(`harness_part`).

A test file is one a runner collects by its naming rules: Python's `test_*.py` and `*_test.py`
(and every `conftest.py`); JavaScript's `*.test.*`, `*.spec.*`, `*_test.*`, `*-test.*`,
`test.*`, `test-*`, every script under a `test/` directory (node --test's patterns: its JUnit
report names no file, so its rules are the only word on it) and anything but Python under a
`__tests__/` directory (jest's).
"""

from __future__ import annotations

import configparser
import json
import re
import shlex
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from taskgate.domain.chain import digest
from taskgate.domain.commit_ids import Sha

# The harness of pytest and of the common JavaScript runners: what a check's own outcome rests on.
DEFAULT_PROTECT: tuple[str, ...] = (
    "**/conftest.py",
    "pytest.ini",
    "tox.ini",
    "pyproject.toml",
    "setup.cfg",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "pytest.py",
    "pytest/",
    "_pytest/",
    ".venv/",
    "venv/",
    "**/node_modules/",
    "vitest.config.*",
    "vite.config.*",
    "jest.config.*",
    "package.json",
    # npm (and pnpm) pass its `node-options` to every script they run: a preload of its own.
    "**/.npmrc",
)
# Files protected only in their test runner's part (see harness_part).
SCOPED = frozenset({"pyproject.toml", "setup.cfg", "package.json"})
# How many changed paths a run records one by one. A submission changing more is held for a
# human: a protected change must not hide past the end of a list nobody reads.
MAX_CHANGED = 2000
DIFF_MAX_CHARS = 20_000  # of the protected files' diff kept on the run
MAX_SCRIPTS = 100  # package.json scripts a run records as run by its checks
SCRIPT_CHARS = 4000  # of each


class BaselineEvidence(BaseModel):
    """What the verifier found before any check ran, sent with the run's evidence."""

    model_config = ConfigDict(extra="forbid")
    branch: str | None = Field(default=None, max_length=200)
    commit: Sha | None = None  # None: no baseline
    why: str | None = Field(default=None, max_length=500)  # why there is none
    changed: list[str] = Field(default_factory=list, max_length=MAX_CHANGED)
    # More paths changed than MAX_CHANGED: `changed` holds the first of them (sorted).
    changed_total: int = Field(default=0, ge=0)
    # Of the changed SCOPED files, those whose test runner's part is as it was at the baseline.
    harness_unchanged: list[str] = Field(default_factory=list, max_length=len(SCOPED) * MAX_CHANGED)
    # `git diff` of the protected paths the submission changes (capped at DIFF_MAX_CHARS).
    diff: str = Field(default="", max_length=DIFF_MAX_CHARS + 200)
    # The package.json scripts the checks run through npm, pnpm or yarn (`npm test` runs pretest,
    # test, posttest), the baseline's and the submission's: a file they run by path is protected
    # like a check's own.
    scripts: list[Annotated[str, Field(max_length=SCRIPT_CHARS)]] = Field(
        default_factory=list, max_length=MAX_SCRIPTS
    )


def changed_digest(paths: Sequence[str]) -> str:
    """sha256 of the changed-path list's RFC 8785 form: what a run's statement signs."""
    return digest(list(paths))


# -- globs ------------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    """A protect glob as a regex over a path relative to the checkout. `*` and `?` stay within
    one path segment, `**/` is any number of leading directories, a trailing `/` names a
    directory and everything under it; a pattern without `/` (other than a trailing one) is
    anchored at the top, like `pytest.ini`. Hand-written: fnmatch lets `*` cross `/`, and the
    few rules here are all a protect list needs."""
    directory = pattern.endswith("/")
    body = pattern.rstrip("/")
    out: list[str] = []
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            out.append("[^/]*")
            i += 1
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    tail = "(?:/.*)?" if directory else ""
    return re.compile("".join(out) + tail + r"\Z")


def matches(path: str, pattern: str) -> bool:
    return _glob(pattern).match(path) is not None


def valid_glob(pattern: str) -> str | None:
    """Why a protect glob cannot be used, or None."""
    if not pattern.strip() or pattern != pattern.strip():
        return "a protect glob must not be empty or start or end with whitespace"
    if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
        return f"protect glob {pattern!r} must be relative to the checkout"
    return None


# -- what a check runs by path ---------------------------------------------------------------

_INTERPRETERS = re.compile(r"^(python[0-9.]*|bash|sh|dash|zsh|node|deno|bun|ruby|perl|php)$")
# Interpreter options whose value is a file loaded before the script or the tests: node's
# preloads, loaders, env file (which may set NODE_OPTIONS) and test reporter.
_FILE_OPTIONS = frozenset(
    {
        "-r",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "--env-file",
        "--test-reporter",
    }
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _relative(word: str) -> str | None:
    """`word` as a path inside the checkout, if it is one (not absolute, not a bare name)."""
    if "/" not in word or word.startswith(("/", "~", "-", "$")) or "://" in word:
        return None
    path = word.removeprefix("./")
    while path.startswith("./"):
        path = path[2:]
    parts = path.split("/")
    if ".." in parts or not path:
        return None
    return path


def _words(command: str) -> list[str]:
    """A command line as the shell splits it (operators as words of their own); [] for what it
    cannot split (an unbalanced quote): the check fails to start either way."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return []


def _operator(word: str) -> bool:
    return bool(word) and all(ch in ";&|()<>" for ch in word)


def _option_file(value: str) -> str | None:
    """A file-valued option's value as a path in the checkout: a relative path, or a bare file
    name (`.env`, `setup.js`); a module name (`tsx`, `junit`) is none."""
    if value.startswith("-"):
        return None
    return _relative(value) or (value if re.fullmatch(r"[\w.-]*\.[\w.-]+", value) else None)


def command_paths(command: str) -> list[str]:
    """The files inside the checkout that a check's command runs by path: each simple command's
    program (`.venv/bin/python`, `./scripts/test.sh`), the script an interpreter is given
    (`bash scripts/ci.sh`, `python tools/run.py`, not `python -m pytest`) and the files its
    options load first (`node --require ./setup.js`, `--import=./register.mjs`). The operands
    of `node --test` are the tests it runs, judged as tests, not a harness."""
    found: list[str] = []
    program: str | None = None
    expect_script = False
    tests = False  # after `--test`: the operands are test files
    option_value = False  # the word is the value of a file-valued option
    for word in _words(command):
        if _operator(word):
            program, expect_script, tests, option_value = None, False, False, False
            continue
        if option_value:
            option_value = False
            if (path := _option_file(word)) is not None:
                found.append(path)
            continue
        if program is None:
            if _ASSIGNMENT.match(word):
                continue
            program = word
            path = _relative(word)
            if path is not None:
                found.append(path)
            expect_script = _INTERPRETERS.match(word.rsplit("/", 1)[-1]) is not None
            continue
        if expect_script:
            if word in ("-m", "-c", "-e", "-p", "--eval", "--print"):
                expect_script = False  # a module or inline code, not a file
                continue
            if word.startswith("-"):
                option, eq, value = word.partition("=")
                if option == "--test":
                    tests = True
                elif option in _FILE_OPTIONS:
                    if not eq:
                        option_value = True
                    elif (path := _option_file(value)) is not None:
                        found.append(path)
                continue
            if tests:
                continue
            path = _relative(word) or (
                word if re.fullmatch(r"[\w.-]+\.(py|sh|js|mjs|cjs|ts|rb|pl)", word) else None
            )
            if path is not None:
                found.append(path)
            expect_script = False
    return list(dict.fromkeys(found))


# Package managers whose `test` or `run <name>` runs a package.json script, and their words.
_MANAGERS = frozenset({"npm", "pnpm", "yarn"})
_TEST_WORDS = frozenset({"test", "t", "tst"})
_RUN_WORDS = frozenset({"run", "run-script", "rum", "urn"})


def _script_names(command: str, scripts: Mapping[str, str]) -> list[str]:
    """The package.json scripts `command` runs by name: `npm test` (`npm t`, `yarn test`),
    `npm run <name>` (`run-script`), and yarn's and pnpm's `yarn <name>` for a script that
    exists. What comes after a manager's options is read; `npm --prefix web test` names none."""
    names: list[str] = []
    words = _words(command)
    i = 0
    while i < len(words):
        start = i
        while i < len(words) and not _operator(words[i]):
            i += 1
        simple = [w for w in words[start:i] if not _ASSIGNMENT.match(w)]
        i += 1
        if not simple or simple[0].rsplit("/", 1)[-1] not in _MANAGERS:
            continue
        rest = [w for w in simple[1:] if not w.startswith("-")]
        if not rest:
            continue
        if rest[0] in _TEST_WORDS:
            names.append("test")
        elif rest[0] in _RUN_WORDS and len(rest) > 1:
            names.append(rest[1])
        elif simple[0].rsplit("/", 1)[-1] != "npm" and rest[0] in scripts:
            names.append(rest[0])
    return names


def package_scripts(commands: Iterable[str], *package_jsons: str | None) -> list[str]:
    """The scripts that `commands` run through a package manager, in each version of
    package.json given (the baseline's, then the submission's: a test script the submission
    rewrote runs its files too), each with its `pre` and `post` script and those the scripts
    run in turn (each once), in order, at most MAX_SCRIPTS."""
    commands = list(commands)
    out: list[str] = []
    for text in package_jsons:
        out += _scripts_run(commands, _scripts(text))
    return list(dict.fromkeys(out))[:MAX_SCRIPTS]


def _scripts(package_json: str | None) -> dict[str, str]:
    try:
        data = json.loads(package_json) if package_json else None
    except ValueError:
        return {}
    raw = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}


def _scripts_run(commands: list[str], scripts: Mapping[str, str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    queue = list(commands)
    while queue and len(out) < MAX_SCRIPTS:
        for name in _script_names(queue.pop(0), scripts):
            for each in (f"pre{name}", name, f"post{name}"):
                if each in scripts and each not in seen:
                    seen.add(each)
                    out.append(scripts[each][:SCRIPT_CHARS])
                    queue.append(scripts[each])
    return out


def check_commands(commands: Iterable[str], evidence: BaselineEvidence | None) -> list[str]:
    """What the checks run: their commands, and the package.json scripts the verifier found
    they run at the baseline."""
    return [*commands, *(evidence.scripts if evidence is not None else [])]


def protect_globs(protect: Sequence[str] | None, commands: Iterable[str]) -> list[str]:
    """The globs in force: the config's own (None: DEFAULT_PROTECT; empty: none) plus, unless
    protection is off, the files the checks run by path."""
    if protect is not None and not protect:
        return []
    base = list(DEFAULT_PROTECT if protect is None else protect)
    return list(dict.fromkeys([*base, *(p for c in commands for p in command_paths(c))]))


def protected(
    changed: Iterable[str], globs: Sequence[str], harness_unchanged: Iterable[str] = ()
) -> list[str]:
    """The changed paths that are protected; a SCOPED file whose test runner's part is as it
    was (`harness_unchanged`) is not."""
    same = set(harness_unchanged)
    out = []
    for path in changed:
        if path in same and path.rsplit("/", 1)[-1] in SCOPED:
            continue
        if any(matches(path, g) for g in globs):
            out.append(path)
    return out


# -- test files -------------------------------------------------------------------------------

_JS = r"\.(js|mjs|cjs|jsx|ts|mts|cts|tsx)\Z"
_TEST_FILE = re.compile(
    r"(^|/)(test_[^/]*|[^/]*_test|conftest)\.py\Z"
    r"|(^|/)[^/]+\.(test|spec)\.[A-Za-z0-9]+\Z"
    rf"|(^|/)[^/]+[_-]test{_JS}"
    rf"|(^|/)test(-[^/]*)?{_JS}"
    # node --test runs every script under a `test` directory, whatever its name
    rf"|(^|/)test/(.+/)?[^/]+{_JS}"
    # jest's directory: its scripts, snapshots and fixtures alike (Python files there are not
    # pytest's tests)
    r"|(^|/)__tests__/.*(?<!\.py)(?<!\.pyw)\Z"
)


def is_test_file(path: str) -> bool:
    """Whether a runner collects `path` as a test by its naming rules (the module docstring
    lists them; the screen skips the same files)."""
    return _TEST_FILE.search(path) is not None


# -- the test runner's part of a scoped file -------------------------------------------------

_PACKAGE_KEYS = ("jest", "vitest", "mocha", "ava")


def harness_part(name: str, text: str | None) -> Any:
    """The test runner's part of a SCOPED file (`name`: its base name), as a value two versions
    compare by; None for a file that does not exist. A file that does not parse is all harness:
    its whole text is the part, so any change to it counts."""
    if text is None:
        return None
    try:
        if name == "pyproject.toml":
            tool = tomllib.loads(text).get("tool", {})
            return tool.get("pytest") if isinstance(tool, dict) else text
        if name == "setup.cfg":
            parser = configparser.ConfigParser(interpolation=None)
            parser.read_string(text)
            return dict(parser["tool:pytest"]) if parser.has_section("tool:pytest") else None
        if name == "package.json":
            data = json.loads(text)
            if not isinstance(data, dict):
                return text
            scripts = data.get("scripts") or {}
            tests = (
                {k: v for k, v in scripts.items() if k.startswith(("test", "pretest", "posttest"))}
                if isinstance(scripts, dict)
                else scripts
            )
            return {"scripts": tests, **{k: data[k] for k in _PACKAGE_KEYS if k in data}}
    except (ValueError, configparser.Error):
        return text
    return text


def run_record(
    evidence: BaselineEvidence, globs: Sequence[str], held: Sequence[str], allowed: dict[str, Any] | None
) -> dict[str, Any]:
    """What a run keeps of its baseline: the verifier's findings with the server's reading of
    them (which changed paths are protected, which are test files), the digest its statement
    signs, and the diff when the run was held for it."""
    total = max(evidence.changed_total, len(evidence.changed))
    out: dict[str, Any] = {
        "branch": evidence.branch,
        "commit": evidence.commit,
        "why": evidence.why,
        "changed": list(evidence.changed),
        "changed_total": total,
        "changed_sha256": changed_digest(evidence.changed),
        "protected": protected(evidence.changed, globs, evidence.harness_unchanged),
        "test_files": [p for p in evidence.changed if is_test_file(p)],
    }
    if held:
        out["diff"] = evidence.diff[:DIFF_MAX_CHARS]
    if allowed is not None:
        out["allowed"] = allowed
    return out


def statement_facts(record: dict[str, Any] | None) -> dict[str, Any]:
    """What a run's signed statement says of its baseline: the commit (or that there is none,
    and why), the number of changed paths and the digest of their list, and a human's allowance."""
    if record is None:
        return {"recorded": False}
    facts: dict[str, Any] = {
        "branch": record.get("branch"),
        "commit": record.get("commit"),
        "changedPaths": record.get("changed_total", 0),
        "changedPathsSha256": record.get("changed_sha256"),
    }
    if record.get("commit") is None:
        facts["none"] = record.get("why") or "no baseline"
    if record.get("protected"):
        facts["protectedChanged"] = record["protected"]
    if record.get("allowed"):
        facts["allowed"] = record["allowed"]
    return facts
