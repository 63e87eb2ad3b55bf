"""Refuse early what cannot be verified, before anything is fetched: no check, command criteria
no human approved, review criteria without a reviewer key, test criteria without a report, a
config that names another image than the one this verifier runs in."""

from __future__ import annotations

from taskgate.domain.models import CriterionKind
from taskgate.domain.verifier_config import IMAGE_VAR, VerifierConfig
from taskgate.verifier.state import RunError, Verifier, Work


def admit(v: Verifier, work: Work) -> VerifierConfig:
    """The config the run goes by; RunError when the run cannot be made."""
    cfg = work.config
    if cfg is None or not cfg.checks:
        raise RunError("the project's verifier config has no check")
    commands = [c.id for c in work.of_kind(CriterionKind.COMMAND)]
    if commands and not work.command_criteria_allowed:
        raise RunError(
            f"command criteria ({', '.join(commands)}) were not approved by a human with their spec; "
            "none was run"
        )
    reviews = [c.id for c in work.of_kind(CriterionKind.REVIEW)]
    if reviews and not v.reviewer_available:
        raise RunError(
            f"review criteria ({', '.join(reviews)}) need a reviewer key (TASKGATE_REVIEWER_KEY); none is set"
        )
    tests = [c.id for c in work.of_kind(CriterionKind.TEST)]
    if tests and not any(c.report for c in cfg.checks.values()):
        raise RunError(f"test criteria ({', '.join(tests)}) need a check with a report; none is configured")
    mine = v.env.get(IMAGE_VAR)
    if cfg.image and mine and cfg.image != mine:
        # A container of another image would run the checks without their toolchain.
        raise RunError(
            f"this verifier runs in image {mine}, and the project's verifier config names {cfg.image} "
            "(changed since this container started?): a container of that image verifies it"
        )
    return cfg
