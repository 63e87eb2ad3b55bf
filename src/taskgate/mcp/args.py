"""Parameter types shared by the tools: the JSON schema (and its descriptions) comes from these."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from taskgate.domain.ids import DECISION_ID_RE, SPEC_ID_RE, TASK_ID_RE
from taskgate.domain.limits import Lines, Text, Title
from taskgate.domain.models import PROJECT_NAME_RE
from taskgate.service.requests import REQUEST_ID_RE

ProjectName = Annotated[
    str,
    Field(
        description="Project name, e.g. 'shop'. list_projects shows the projects your key may use.",
        pattern=PROJECT_NAME_RE.pattern,
    ),
]
TaskId = Annotated[
    str,
    Field(description="Task id '<project>-<number>', e.g. 'shop-12'.", pattern=TASK_ID_RE.pattern),
]
TaskIds = Annotated[list[TaskId], Field(min_length=1, max_length=50)]
SpecId = Annotated[
    str, Field(description="Spec id 'SPEC-<number>', e.g. 'SPEC-3'.", pattern=SPEC_ID_RE.pattern)
]
DecisionId = Annotated[
    str, Field(description="Decision id 'DEC-<number>', e.g. 'DEC-2'.", pattern=DECISION_ID_RE.pattern)
]
ClaimToken = Annotated[
    str,
    Field(
        description="The claim_token that claim_task returned for this task. It stops working when "
        "the claim ends (release, failure, escalation, submission or lease expiry).",
        min_length=1,
        max_length=200,
    ),
]
AgentId = Annotated[
    str | None,
    Field(
        description="Optional. Your own actor id, 'agent:<name>' (or just '<name>'). Your identity comes "
        "from your key; naming any other agent is refused with E_IDENTITY_MISMATCH. Usually omit it.",
        max_length=100,
    ),
]
OnBehalfOf = Annotated[
    str | None,
    Field(
        description="Optional 'human:<name>'. Only when that human explicitly asked you to do this and "
        "has delegated to your key: you then act with their permissions and history records both. "
        "Never for work you claimed or submitted yourself. Usually omit it.",
        max_length=100,
    ),
]
ShortText = Title
__all__ = ["Lines", "Text"]  # the tools import them from here with the other argument types
RequestId = Annotated[
    str | None,
    Field(
        description="Optional id you choose for this create (e.g. a UUID), so that calling again after a "
        "lost response answers with what the first call created instead of creating a second one.",
        pattern=REQUEST_ID_RE.pattern,
    ),
]
