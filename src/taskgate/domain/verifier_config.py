"""The verifier config: human-owned, the only source of commands a verifier runs (seed 000)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

CHECK_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


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


class CheckSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1, max_length=4000)
    report: ReportSpec | None = None
    timeout_minutes: int | None = Field(default=None, ge=1, le=240)


class ReviewerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(default="claude -p", min_length=1, max_length=4000)
    base_branch: str = Field(default="main", min_length=1, max_length=200)


class VerifierConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    check_timeout_minutes: int = Field(default=15, ge=1, le=240)
    checks: dict[str, CheckSpec] = Field(default_factory=dict)
    reviewer: ReviewerSpec | None = None

    @field_validator("checks")
    @classmethod
    def _names(cls, v: dict[str, CheckSpec]) -> dict[str, CheckSpec]:
        for name in v:
            if not CHECK_NAME_RE.match(name):
                raise ValueError(f"check name {name!r} must match {CHECK_NAME_RE.pattern}")
        return v
