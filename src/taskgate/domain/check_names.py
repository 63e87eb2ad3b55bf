"""A check's name, drafted from what its command runs: the name every finding and the board
use for the check ("check node-test exited 1"), so it says which runner failed, not which
setup word came first (`mkdir -p reports && node --test ...` is `node-test`, not `mkdir`).

A command is read as the shell's simple commands (`&&`, `||`, `;`, `|`, groups), each without
its assignments and wrappers. The first that runs a test runner names the check; else the
first that installs dependencies (`install`); else the last that is not setup (mkdir, cd, cp,
echo...), by its leading words; else `check`. Pure: a command in, a name out.
"""

from __future__ import annotations

import re
import shlex

# `python -m X`, `npx X`, `uv run X`: the word after them is what runs.
_LAUNCHERS = {
    "npx": 1,
    "pnpx": 1,
    "bunx": 1,
    "uvx": 1,
    "pipx": 2,  # pipx run X
    "uv": 2,  # uv run X
    "poetry": 2,  # poetry run X
    "pipenv": 2,  # pipenv run X
    "hatch": 2,  # hatch run X
    "pdm": 2,  # pdm run X
}
_WRAPPERS = frozenset({"exec", "command", "env", "nohup", "nice", "time", "timeout", "xvfb-run"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_PYTHON = re.compile(r"^python[0-9.]*$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEPARATORS = frozenset({"&&", "||", ";", ";;", "|", "&", "(", ")", "|&", "{", "}", "!"})
_REDIRECT = re.compile(r"^[0-9]*(?:[<>]|>>|<<|<<-|>&|<&|&>|&>>|<>|>\|)$")

# Runners whose own name says what they run.
_RUNNERS = frozenset(
    {
        "pytest",
        "py.test",
        "tox",
        "nox",
        "unittest",
        "vitest",
        "jest",
        "mocha",
        "ava",
        "tap",
        "playwright",
        "cypress",
        "karma",
        "phpunit",
        "rspec",
        "ctest",
        "bats",
    }
)
# Tools whose subcommand `test` runs the tests: `go test` is go-test.
_TEST_SUBCOMMAND = frozenset(
    {
        "npm",
        "pnpm",
        "yarn",
        "bun",
        "go",
        "cargo",
        "mvn",
        "mvnw",
        "gradle",
        "gradlew",
        "dotnet",
        "make",
        "deno",
    }
)
# Linters and type checkers: named for themselves, after the runners.
_TOOLS = frozenset(
    {"ruff", "mypy", "pyright", "flake8", "pylint", "black", "eslint", "tsc", "prettier", "biome"}
)
_NODE_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_INSTALLS = frozenset({"ci", "install", "i", "sync", "add"})
_SETUP = frozenset(
    {
        "mkdir",
        "cd",
        "rm",
        "cp",
        "mv",
        "ln",
        "touch",
        "chmod",
        "echo",
        "printf",
        "export",
        "set",
        "true",
        "false",
        ":",
        "test",
        "[",
        "[[",
        "source",
        ".",
        "cat",
        "tee",
    }
)
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
FALLBACK = "check"


def simple_commands(command: str) -> list[list[str]]:
    """The shell's simple commands in `command`, each its words without assignments,
    redirections and wrappers; [] when the command cannot be read (an unbalanced quote)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
    except ValueError:
        return []
    out: list[list[str]] = [[]]
    skip = False
    for at, token in enumerate(tokens):
        if skip:
            skip = False
        elif token in _SEPARATORS:
            out.append([])
        elif _REDIRECT.match(token):
            skip = True  # its target is no word of the command
        elif token.isdigit() and at + 1 < len(tokens) and _REDIRECT.match(tokens[at + 1]):
            continue  # `2>err.log`: the 2 belongs to the redirection
        elif not out[-1] and (_ASSIGNMENT.match(token) or token in _WRAPPERS):
            continue
        else:
            out[-1].append(token)
    return [words for words in out if words]


def _base(word: str) -> str:
    """`.venv/bin/pytest` runs pytest: the program's own name."""
    return word.rsplit("/", 1)[-1]


def _script(path: str) -> str:
    """`scripts/test.sh` is called test."""
    name = _base(path)
    stem, dot, ext = name.rpartition(".")
    return stem if dot and stem and ext in ("sh", "bash", "py", "js", "mjs", "cjs", "ts") else name


def _operands(words: list[str]) -> list[str]:
    return [w for w in words if not w.startswith("-")]


def _what_runs(words: list[str]) -> tuple[int, str] | None:
    """What one simple command runs, ranked (0 a test runner, 1 an install, 2 a linter, 3
    anything else that is not setup), or None for setup."""
    program = _base(words[0])
    rest = words[1:]
    if _PYTHON.match(program) and rest:
        if rest[0] == "-m" and len(rest) > 1:
            found = _what_runs([rest[1], *rest[2:]])
            return found if found is not None and found[0] < 3 else (3, rest[1])
        script = next(iter(_operands(rest)), None)
        return (3, _script(script)) if script else None
    if program in _SHELLS and rest:
        script = next(iter(_operands(rest)), None)  # `bash -c '...'` has no script to name it
        return (3, _script(script)) if script and "-c" not in rest else None
    if program in _LAUNCHERS:
        skip = _LAUNCHERS[program]
        operands = _operands(rest)
        if skip == 2 and operands and operands[0] == "run":
            return _what_runs(operands[1:]) if len(operands) > 1 else None
        if skip == 1 and operands:
            return _what_runs(operands)
    if program == "node" and "--test" in rest:
        return 0, "node-test"
    if program in _RUNNERS:
        return 0, "pytest" if program == "py.test" else program
    operands = _operands(rest)
    first = operands[0] if operands else ""
    if program in ("pip", "pip3") or (program == "uv" and first in ("pip", "sync")):
        return (1, "install") if first in _INSTALLS or first in ("pip", "sync") else None
    if program in _NODE_PACKAGE_MANAGERS:
        if first in _INSTALLS or (not operands and program != "npm"):
            return 1, "install"
        if first in ("test", "t"):
            return 0, f"{program}-test"
        if first in ("run", "run-script", "exec") and len(operands) > 1:
            script = operands[1]
            return (0, f"{program}-test") if script == "test" else (3, script)
        if program in ("yarn", "pnpm") and first and _WORD.match(first):
            return 3, first  # `yarn lint` runs the lint script
    if program in _TEST_SUBCOMMAND and "test" in operands:
        return 0, f"{program.removesuffix('w')}-test"
    if program in ("poetry", "pipenv", "bundle", "composer") and first == "install":
        return 1, "install"
    if program in _SETUP:
        return None
    if "/" in words[0] and program not in _TOOLS:
        return 3, _script(words[0])  # `./run-tests.sh`: the script's own name
    lead = [program]  # `ruff check .` is ruff-check, `cargo build` cargo-build
    for w in rest:
        if w.startswith("-") or not _WORD.match(w) or len(lead) == 2:
            break
        lead.append(w)
    return 2 if program in _TOOLS else 3, "-".join(lead)


def drafted_name(command: str) -> str:
    """What to call a check that runs `command` (see the module's docstring); may be taken
    already, see `unique`."""
    found = [r for r in (_what_runs(words) for words in simple_commands(command)) if r is not None]
    if not found:
        return FALLBACK
    best = min(rank for rank, _ in found)
    ranked = [name for rank, name in found if rank == best]
    name = ranked[-1] if best == 3 else ranked[0]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:60] or FALLBACK
