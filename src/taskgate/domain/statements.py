"""The in-toto Statements taskgate signs (in-toto Attestation Framework v1).

- A decided verification run: predicate https://in-toto.io/attestation/test-result/v0.1 about
  the submitted commit (subject digest `gitCommit`: the full id, see `subject`).
- A human's acceptance: predicate https://slsa.dev/verification_summary/v1 (a VSA) about the
  same commit, naming the test-result statement it relied on.

Facts the predicate types do not name (keys and credentials, check exit codes, report digests
and the runner versions the checks printed, the history chain head, the statement before this
one) sit in one extra predicate field, `taskgate`: consumers of the standard predicates ignore
fields they do not know (in-toto parsing rules).
Digests are lowercase hex; timestamps RFC 3339 in UTC with a `Z`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from taskgate.domain.chain import digest
from taskgate.domain.clock import iso

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
TEST_RESULT = "https://in-toto.io/attestation/test-result/v0.1"
VSA = "https://slsa.dev/verification_summary/v1"
# A landing: the base branch moved, by fast-forward, to the commit the landing queue tested.
LANDING = "https://taskgate.dev/attestation/landing/v1"
PREDICATE_TYPES = (TEST_RESULT, VSA, LANDING)

# A run's verdict as a test-result `result`: an error (or a spec error) decided nothing about
# the code, so it is WARNED, with the reason in `taskgate.error`.
RESULTS = {
    "passed": "PASSED",
    "failed": "FAILED",
    "error": "WARNED",
    "spec_error": "WARNED",
    "needs_human": "WARNED",  # decided nothing about the code: a person does
    "conflict": "FAILED",  # the submission did not merge onto the base: nothing ran
}

# Our own verifiedLevels (VSA v1: custom values must not start with "SLSA_").
VERIFIED = "TASKGATE_VERIFIED"  # a passed run of the verifier backs the acceptance
ACCEPTED = "TASKGATE_ACCEPTED"  # a human (or a delegated agent, for low risk) accepted


# The DigestSet key of a subject whose full commit was never resolved (see `subject`).
COMMIT_PREFIX = "taskgateCommitPrefix"


def subject(repo: str, commit_sha: str, full: str | None) -> list[dict[str, Any]]:
    """The commit a statement is about. `full`: its full id (40 or 64 lowercase hex), when known.

    `gitCommit` holds the full id only (in-toto DigestSet: "the lowercase hex SHA-1 (40
    character) or SHA-256 (64 character) of a git commit"). When only the submitted
    abbreviation is known (verification off, or a run that ended before a verifier resolved
    it), the statement still needs a digest (Statement v1: every subject MUST have one), and
    an abbreviation is not a commit id: it goes under our own algorithm name, which the
    DigestSet spec allows ("a non-predefined algorithm", with its encoding documented: the
    lowercase hex prefix of the commit id, as submitted), and is named again in an annotation.
    Consumers MUST ignore algorithms they do not know, so such a statement matches no commit
    by `gitCommit`: it does not claim a commit nobody resolved."""
    name = repo or "repository"
    if full is not None:
        return [{"name": name, "digest": {"gitCommit": full}}]
    short = commit_sha.lower()
    return [
        {
            "name": name,
            "digest": {COMMIT_PREFIX: short},
            "annotations": {
                "abbreviatedCommit": short,
                "why": "only this abbreviation was submitted and no verifier resolved it to a full commit",
            },
        }
    ]


def statement(
    subjects: list[dict[str, Any]], predicate_type: str, predicate: dict[str, Any]
) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": predicate_type,
        "predicate": predicate,
    }


def resource_uri(repo: str, commit_sha: str) -> str:
    """The commit as a URI (SPDX downloadLocation style): git+<repository>@<sha>."""
    where = repo if "://" in repo or repo.startswith("git@") else f"file://{repo}"
    return f"git+{where}@{commit_sha.lower()}"


def spec_digest(spec: Mapping[str, Any]) -> str:
    """sha256 of a spec revision: what its criteria came from (id, revision, title, body, risk,
    criteria), RFC 8785 canonical JSON."""
    keep = ("id", "revision", "title", "body", "risk", "criteria")
    return digest({k: spec.get(k) for k in keep})


def criterion_name(c: Mapping[str, Any]) -> str:
    """A criterion as a test name: its id, kind and the ref that produced its evidence."""
    ref = c.get("verify_ref")
    return f"{c['id']} {c.get('kind', 'review')}" + (f" {ref}" if ref else "")


def _check(c: Mapping[str, Any]) -> dict[str, Any]:
    """A check's exit code; when it wrote a report the verifier read, that report's sha256 (an
    in-toto DigestSet); when its output named a test runner's version, that line
    (domain/runners.py: what the check printed, not what the verifier checked)."""
    out: dict[str, Any] = {"exitCode": c.get("exit_code")}
    if c.get("report_sha256"):
        out["reportDigest"] = {"sha256": c["report_sha256"]}
    if c.get("runner"):
        out["runner"] = c["runner"]
    return out


def _criterion(e: Mapping[str, Any]) -> dict[str, Any]:
    """A criterion's result; with, when its new named test passed on the baseline's code too,
    that it did (and how it did there, whenever it ran there)."""
    out: dict[str, Any] = {"result": e.get("result")}
    without = e.get("without_change")
    if isinstance(without, Mapping):
        out["withoutChange"] = without.get("result")
    if e.get("passes_without_change"):
        out["passesWithoutChange"] = True
    return out


def test_result(
    *,
    repo: str,
    commit_sha: str,
    full_commit: str | None,
    verdict: str,
    url: str | None,
    config: Mapping[str, Any] | None,
    spec: Mapping[str, Any] | None,
    criteria: Sequence[Mapping[str, Any]],
    evidence: Mapping[str, Mapping[str, Any]],
    checks: Mapping[str, Mapping[str, Any]],
    facts: dict[str, Any],
) -> dict[str, Any]:
    """The statement for a decided run. `commit_sha`: as submitted; `full_commit`: its full id
    when known (see `subject`). `criteria`: the run's criteria (id, kind, verify_ref);
    `evidence`: the stored result per criterion id; `checks`: the stored check results;
    `facts`: taskgate's own fields (see the module docstring)."""
    configuration: list[dict[str, Any]] = [
        {
            "name": "taskgate-verifier-config.json",
            "mediaType": "application/json",
            "digest": {"sha256": digest(config if config is not None else {})},
        }
    ]
    if spec is not None:
        configuration.append(
            {
                "name": f"{spec['id']}@r{spec['revision']}",
                "mediaType": "application/json",
                "digest": {"sha256": spec_digest(spec)},
            }
        )
    else:  # the task's own criteria stand where a spec would
        configuration.append(
            {
                "name": "task-criteria.json",
                "mediaType": "application/json",
                "digest": {"sha256": digest([dict(c) for c in criteria])},
            }
        )
    passed: list[str] = []
    failed: list[str] = []
    for c in criteria:
        result = (evidence.get(c["id"]) or {}).get("result")
        (passed if result == "pass" else failed).append(criterion_name(c))
    predicate: dict[str, Any] = {
        "result": RESULTS[verdict],
        "configuration": configuration,
        "passedTests": passed,
        "failedTests": failed,
    }
    if url:
        predicate["url"] = url
    predicate["taskgate"] = {
        **facts,
        "verdict": verdict,
        "checks": {name: _check(c) for name, c in sorted(checks.items())},
        "criteria": {cid: _criterion(e or {}) for cid, e in sorted(evidence.items())},
    }
    return statement(subject(repo, commit_sha, full_commit), TEST_RESULT, predicate)


def verification_summary(
    *,
    repo: str,
    commit_sha: str,
    full_commit: str | None,
    verifier_id: str,
    at: datetime,
    policy_uri: str,
    policy_digest: str,
    input_statement: tuple[str, str] | None,
    facts: dict[str, Any],
) -> dict[str, Any]:
    """The statement for an acceptance. `input_statement`: (uri, sha256 of its payload) of the
    passed run's test-result statement the acceptance relied on; None when verification was off."""
    inputs = (
        [{"uri": input_statement[0], "digest": {"sha256": input_statement[1]}}] if input_statement else []
    )
    predicate: dict[str, Any] = {
        "verifier": {"id": verifier_id},
        "timeVerified": iso(at),
        "resourceUri": resource_uri(repo, full_commit or commit_sha),
        "policy": {"uri": policy_uri, "digest": {"sha256": policy_digest}},
        "inputAttestations": inputs,
        "verificationResult": "PASSED",
        "verifiedLevels": [VERIFIED, ACCEPTED] if input_statement else [ACCEPTED],
        "taskgate": facts,
    }
    return statement(subject(repo, commit_sha, full_commit), VSA, predicate)


def landing(
    *,
    repo: str,
    branch: str,
    landed_commit: str,
    tree: str | None,
    from_tip: str,
    submitted_commit: str,
    verified_by: dict[str, Any],
    acceptance: str,
    at: datetime,
    facts: dict[str, Any],
) -> dict[str, Any]:
    """The statement of a landing: `branch` of `repo` moved from `from_tip` to `landed_commit`
    (its tree `tree`), which merges the accepted `submitted_commit`; `verified_by` names the run
    that tested that exact commit (or the task's own run whose tree it has); `acceptance` is the
    payload sha256 of the acceptance's summary it carries out."""
    predicate: dict[str, Any] = {
        "branch": branch,
        "landedCommit": landed_commit,
        "tree": tree,
        "fromTip": from_tip,
        "submittedCommit": submitted_commit,
        "verifiedBy": verified_by,
        "acceptance": {"sha256": acceptance},
        "timeLanded": iso(at),
        "taskgate": facts,
    }
    return statement(subject(repo, landed_commit, landed_commit), LANDING, predicate)
