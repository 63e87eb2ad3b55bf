"""The `taskgate` command: one module per command group, and the helpers they share.

`main` (the console script `taskgate = "taskgate.cli:main"`) builds the parser only when run, so
the verifier and the demo can import the REST client (`taskgate.cli.client`) without loading
every command. Layout, imports pointing one way (no module imports one that imports it):

- client.py, presence.py: the REST client and a person at the terminal; they import nothing
  of the CLI.
- output.py (one JSON object or text; the client a command uses), human.py (marking a command
  as the human's), files.py (reading the files commands are given): helpers over those.
- serving.py, board.py, projects.py, keys.py, tasks.py, show.py, verification.py, verify.py,
  specs.py, attest.py: the command groups, each with its `register`.
- main.py: the parser, assembled from the groups, and the error handling every command shares.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from taskgate.cli.main import main as run

    return run(argv)
