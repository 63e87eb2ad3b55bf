"""The verifier config: human-owned, the only source of commands a verifier runs."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from taskgate.domain.baseline import valid_glob
from taskgate.domain.check_names import FALLBACK, drafted_name
from taskgate.domain.screen import RULES as SCREEN_RULES

CHECK_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Minutes, fractions allowed (a lint check may deserve 30 seconds); 15 per check by default.
MIN_TIMEOUT_MINUTES = 0.05
MAX_TIMEOUT_MINUTES = 240
# Cloud verifier tasks draining one project's queue at once (the stack's VerifierConcurrency
# when a config names none); each is a Fargate task billed while it runs.
MAX_CONCURRENCY = 20
# Set in a cloud container's environment by its task definition: the image it runs in.
IMAGE_VAR = "TASKGATE_VERIFIER_IMAGE"
# An OCI image reference with an explicit tag or digest: [registry[:port]/]path[:tag][@sha256:hex].
# Explicit, so a saved config says exactly what a cloud verifier runs in (and "latest" is a
# choice someone wrote down, not a default nobody saw).
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_RE = re.compile(
    rf"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$"
)


class ReportSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, max_length=512)
    format: Literal["junit", "json"] = "junit"

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        parts = v.replace("\\", "/").split("/")
        if v.startswith(("/", "~")) or ".." in parts:
            raise ValueError("report path must be relative and stay inside the checkout")
        return v


def _inside(v: str, what: str) -> str:
    parts = v.split("/")
    if v.startswith(("/", "~")) or "\\" in v or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{what} {v!r} must be a relative path inside the checkout (no '.', '..' or '//')")
    if parts[0] == ".git":
        raise ValueError(f"{what} {v!r} is inside .git")
    return v


class CacheSpec(BaseModel):
    """A dependency cache for one check: the files whose contents key it, and the paths it
    restores. Written only from the check run on the base branch (verifier/cache.py)."""

    model_config = ConfigDict(extra="forbid")
    key: list[str] = Field(min_length=1, max_length=20)
    paths: list[str] = Field(min_length=1, max_length=10)

    @field_validator("key")
    @classmethod
    def _key(cls, v: list[str]) -> list[str]:
        for pattern in v:
            if not 1 <= len(pattern) <= 200:
                raise ValueError("a cache key pattern has 1 to 200 characters")
            _inside(pattern, "cache key pattern")
        return v

    @field_validator("paths")
    @classmethod
    def _paths(cls, v: list[str]) -> list[str]:
        for path in v:
            if not 1 <= len(path) <= 200:
                raise ValueError("a cache path has 1 to 200 characters")
            _inside(path, "cache path")
            if any(c in path for c in "*?[]"):
                raise ValueError(f"cache path {path!r} is a path, not a pattern")
        for a in v:
            for b in v:
                if a != b and b.startswith(a + "/"):
                    raise ValueError(f"cache paths {a!r} and {b!r} overlap")
        if len(set(v)) != len(v):
            raise ValueError("cache paths must differ")
        return v


class CheckSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1, max_length=4000)
    report: ReportSpec | None = None
    timeout_minutes: float | None = Field(default=None, ge=MIN_TIMEOUT_MINUTES, le=MAX_TIMEOUT_MINUTES)
    cache: CacheSpec | None = None


class ReviewerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(default="claude -p", min_length=1, max_length=4000)
    base_branch: str = Field(default="main", min_length=1, max_length=200)


def _inside_hidden(v: str, what: str) -> str:
    parts = v.replace("\\", "/").split("/")
    if v.startswith(("/", "~")) or ".." in parts:
        raise ValueError(f"{what} must be relative and stay inside the checkout")
    return v


class HiddenTests(BaseModel):
    """Tests the executor never sees: fetched by the verifier with its own credentials from a
    repository of their own and placed at `into` in the checkout before the checks run."""

    model_config = ConfigDict(extra="forbid")
    repo: str = Field(
        min_length=1, max_length=2000, pattern=r"^[^-\s]\S*$", description="git URL or local path"
    )
    # Never starting with "-": git would read it as an option.
    ref: str = Field(min_length=1, max_length=200, pattern=r"^[^\s~^:?*\[\\-][^\s~^:?*\[\\]*$")
    into: str = Field(min_length=1, max_length=300)
    # What the executor's findings say of a failing hidden test: its name, or also its message.
    reveal: Literal["names", "messages"] = "names"

    @field_validator("into")
    @classmethod
    def _into(cls, v: str) -> str:
        v = _inside_hidden(v, "hidden_tests.into").strip("/")
        if not v or v == "." or v.split("/")[0] == ".git":
            raise ValueError("hidden_tests.into must name a directory inside the checkout (not . or .git)")
        return v


class VerifierConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    check_timeout_minutes: float = Field(default=15, ge=MIN_TIMEOUT_MINUTES, le=MAX_TIMEOUT_MINUTES)
    checks: dict[str, CheckSpec] = Field(default_factory=dict)
    reviewer: ReviewerSpec | None = None
    # The container image a cloud verifier runs this project's checks in (the dispatcher and the
    # nightly run start it): the verifier image, or one built FROM it with the project's
    # toolchain (docs/deploy.md). None: the stack's own verifier image. A local `taskgate
    # verify` runs where it is and ignores it.
    image: str | None = Field(default=None, min_length=1, max_length=500)
    # The branch a submission is judged against: its baseline is the merge-base with this
    # branch. None: the reviewer's base_branch, else `main`, else the repository's HEAD branch.
    base_branch: str | None = Field(default=None, min_length=1, max_length=200, pattern=r"^[^\s~^:?*\[\\]+$")
    # How many cloud verifier tasks may drain this project's queue at once. None: the stack's
    # VerifierConcurrency. A local `taskgate verify` ignores it (it has --jobs).
    concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY)
    # Globs of the paths a submission may not change without a human (domain/baseline.py):
    # None applies baseline.DEFAULT_PROTECT (the test harness of pytest and the JavaScript
    # runners); [] switches protection off.
    protect: list[str] | None = Field(default=None, max_length=200)

    # What the checks run on: the submission merged onto the base branch's tip ("merge"), rebased
    # onto it ("rebase"), or the commit alone ("none"). None: "merge" when the repository has
    # the base branch, else the commit alone.
    merge: Literal["merge", "rebase", "none"] | None = None
    # False: a verified task whose base has moved is not accepted until it is re-verified.
    accept_stale: bool = True
    # True: accepting a task puts it in the project's landing queue, and the verifier lands it on
    # the base branch, moving the branch by fast-forward only to exactly the commit it tested
    # (domain/landing.py); the task is done once it is there. False: humans land accepted work.
    land: bool = False

    hidden_tests: HiddenTests | None = None
    # path glob -> screen rule ids (domain/screen.py RULES) or "*": code a human allowed there.
    screen_allow: dict[str, list[str]] = Field(default_factory=dict, max_length=100)

    @field_validator("screen_allow")
    @classmethod
    def _screen_allow(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for glob, rules in v.items():
            if not glob or len(glob) > 300:
                raise ValueError("screen_allow: a path glob is 1 to 300 characters")
            unknown = sorted(r for r in rules if r != "*" and r not in SCREEN_RULES)
            if unknown or not rules:
                raise ValueError(
                    f"screen_allow[{glob!r}]: unknown rule {', '.join(unknown) or '(none given)'}; "
                    f"known: {', '.join(SCREEN_RULES)} or *"
                )
        return v

    def replaced_before_checks(self, path: str) -> bool:
        """Whether the verifier replaces `path` before any check runs (the hidden tests' `into`
        directory, placed whole): what the submission put there never runs, so it holds nothing."""
        into = self.hidden_tests.into if self.hidden_tests is not None else None
        return into is not None and (path == into or path.startswith(into + "/"))

    def base_branch_choice(self) -> str | None:
        """The base branch a human named (here or for the reviewer); None leaves it to the
        repository (`main` if it has one, else its HEAD branch)."""
        if self.base_branch:
            return self.base_branch
        return self.reviewer.base_branch if self.reviewer is not None else None

    @field_validator("protect")
    @classmethod
    def _protect(cls, v: list[str] | None) -> list[str] | None:
        for glob in v or []:
            problem = valid_glob(glob) if len(glob) <= 500 else "a protect glob is at most 500 characters"
            if problem is not None:
                raise ValueError(problem)
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        if v is None:
            return v
        m = IMAGE_RE.match(v)
        if m is None or not (m.group("tag") or m.group("digest")):
            raise ValueError(
                "image must be an image reference with a tag or a digest, e.g. "
                "123456789012.dkr.ecr.us-east-1.amazonaws.com/taskgate-verifier:node20"
            )
        return v

    @field_validator("checks")
    @classmethod
    def _names(cls, v: dict[str, CheckSpec]) -> dict[str, CheckSpec]:
        for name in v:
            if not CHECK_NAME_RE.match(name):
                raise ValueError(f"check name {name!r} must match {CHECK_NAME_RE.pattern}")
        return v


# Where common runners write a JUnit report when told on their command line (or environment).
_REPORT_FLAGS = (
    re.compile(r"--junit-?xml[= ](?P<path>\S+)"),  # pytest
    re.compile(r"--outputFile(?:\.junit)?[= ](?P<path>\S+)"),  # vitest
    re.compile(r"JEST_JUNIT_OUTPUT_FILE=(?P<path>\S+)"),  # jest-junit
    re.compile(r"LogFilePath=(?P<path>[^;\"'\s]+)"),  # dotnet test --logger "junit;LogFilePath=..."
)


def _check_name(command: str, taken: set[str]) -> str:
    """A unique check name for `command`: what it runs (check_names.py), numbered when two
    checks run the same thing (`pytest`, `pytest-2`)."""
    base = drafted_name(command)
    name, n = base, 2
    while name in taken or not CHECK_NAME_RE.match(name):
        name, n = f"{base}-{n}", n + 1
        if not CHECK_NAME_RE.match(name):
            base, name = FALLBACK, f"{FALLBACK}-{n}"
    return name


_NODE_REPORTER = re.compile(r"--test-reporter(?P<dest>-destination)?[= ](?P<value>\S+)")


def _node_junit(command: str) -> str | None:
    """Where `node --test` writes its JUnit report: its reporters and their destinations pair up
    in order (`--test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit
    --test-reporter-destination=reports/junit.xml`), so the junit one's, not the first one's."""
    reporters: list[str] = []
    destinations: list[str] = []
    for m in _NODE_REPORTER.finditer(command):
        (destinations if m.group("dest") else reporters).append(m.group("value").strip("'\""))
    if "junit" not in reporters:
        return None
    at = reporters.index("junit")
    return destinations[at] if at < len(destinations) else None


def _report_of(command: str) -> ReportSpec | None:
    found = [m.group("path") for flag in _REPORT_FLAGS if (m := flag.search(command)) is not None]
    paths = [_node_junit(command), *found]
    path = next((p.strip("'\"") for p in paths if p is not None), None)
    if path is None or path in ("stdout", "stderr"):
        return None
    try:
        return ReportSpec(path=path, format="junit")
    except ValueError:
        return None  # an absolute or escaping path: a human must choose one


def draft_from_commands(commands: list[str]) -> tuple[VerifierConfig, list[str]]:
    """The board's "Start from project commands": the project's verification commands (hints an
    agent may edit) copied into a draft config, for a human to review and save. Nothing runs a
    draft; the notes say what the human still has to decide."""
    notes = [
        "Review every command before saving: the verifier runs exactly these, in a clean checkout "
        "of each submission, with no keys or cloud credentials in its environment."
    ]
    checks: dict[str, CheckSpec] = {}
    for raw in dict.fromkeys(commands):  # each distinct command once, in order
        command = raw.strip()
        if not command or len(command) > 4000 or any(c.command == command for c in checks.values()):
            continue
        name = _check_name(command, set(checks))
        report = _report_of(command)
        checks[name] = CheckSpec(command=command, report=report)
        if report is None:
            notes.append(
                f"check {name!r} writes no report the draft could find; test criteria need one: "
                'add "report": {"path": "<file in the checkout>", "format": "junit" or "json"}'
            )
    for name, check in checks.items():
        if _junit_only_node(check.command):
            notes.append(
                f"check {name!r} gives node --test only a JUnit reporter, so its output is empty and "
                "a failure shows no message to read: add --test-reporter=spec "
                "--test-reporter-destination=stdout beside it"
            )
    if checks:
        notes.append(
            'Each check\'s name (its key under "checks") is what findings and the board call it: '
            f"rename it here if {', '.join(repr(n) for n in checks)} says less than you want."
        )
        notes.append(UNSET_NOTE)
    else:
        notes.append("the project has no verification commands: write the checks yourself")
    return VerifierConfig(checks=checks), notes


# What a draft leaves to the repository, said once for the fields a draft prints as null.
UNSET_NOTE = (
    '"base_branch": null and "merge": null leave both to the repository: submissions are judged '
    "against main if it has that branch, else its HEAD branch, and the checks run on each "
    "submission merged onto that branch's tip (on the commit alone when the repository has no such "
    'branch). Set "base_branch": "<branch>", or "merge": "merge", "rebase" or "none", to choose.'
)
_REPORTERS = re.compile(r"--test-reporter[= ](?P<name>\S+)")


def _junit_only_node(command: str) -> bool:
    """`node --test` told to write JUnit and nothing else: every reporter goes to a file, and a
    person reading the check's output finds nothing."""
    if "--test" not in command.split():
        return False
    reporters = [m.group("name").strip("'\"") for m in _REPORTERS.finditer(command)]
    return bool(reporters) and all(r == "junit" for r in reporters)
