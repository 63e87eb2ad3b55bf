"""Divergences between the model and the code that issue 8 already lists as defects.

The model keeps DESIGN.md's intended behaviour for these; the fixes are being made separately.
The bench labels such divergences with the defect they come from; pytest's profile does not draw
the inputs that reach them (`skip_known`, see machine.py) until the fixes are merged. Once they
are, delete the entry here, the matching `skip_known` guard in machine.py, and run the bench:
the kind must be gone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    defect: str  # issue 8's numbering
    summary: str
    matches: Callable[[str, frozenset[str]], bool]  # (divergence kind, tags) -> bool


KNOWN: tuple[Known, ...] = (
    Known(
        "1/4",
        "a lone UTF-16 surrogate in a title is not refused with E_VALIDATION (pydantic error escapes)",
        lambda kind, tags: (
            "crashed with ValidationError" in kind and kind.startswith(("create_task", "create_spec"))
        ),
    ),
    Known(
        "6",
        "an agent lowers a draft spec's risk (lowering is a human action)",
        lambda kind, tags: kind.startswith("update_spec by") and "model E_FORBIDDEN, real ok" in kind,
    ),
    Known(
        "3",
        "a task lands in ready (not backlog) while its spec is a draft",
        lambda kind, tags: "draft-spec" in tags and "model=backlog real=ready" in kind,
    ),
    Known(
        "7",
        "a lapsed lease is not expired on this access (list_tasks, claim-next's ready view, resolve, cascades)",
        lambda kind, tags: "lapsed" in tags,
    ),
)


def classify(kind: str, tags: frozenset[str]) -> Known | None:
    return next((k for k in KNOWN if k.matches(kind, tags)), None)
