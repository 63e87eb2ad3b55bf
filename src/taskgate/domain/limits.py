"""How much each free-text or list field may hold: one limit per field, the same on every
interface. The MCP tool arguments (mcp/args.py) and the REST bodies (api/schemas.py, which
`taskgate spec create` and the board send) are both declared with these, so a request one
interface refuses is refused by the other too."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

TITLE_CHARS = 500  # task, spec and decision titles: one line
TEXT_CHARS = 100_000  # descriptions, spec bodies, decision bodies, evidence
NOTE_CHARS = 20_000
CRITERIA = 100  # a task's own criteria, a spec's criteria, the spec criteria a task holds
BLOCKERS = 100  # tasks one task waits for
LINES = 200  # verification commands, conventions, findings
LINE_CHARS = 10_000

Title = Annotated[str, Field(max_length=TITLE_CHARS)]
Text = Annotated[str, Field(max_length=TEXT_CHARS)]
NoteText = Annotated[str, Field(min_length=1, max_length=NOTE_CHARS)]
Lines = Annotated[list[Annotated[str, Field(max_length=LINE_CHARS)]], Field(max_length=LINES)]
