"""The test runner versions a check printed, read from its output (signed with the run as
`taskgate.checks.<name>.runner`).

The runners taskgate knows and the line each prints when it starts:
- pytest: its session header, `platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0`
  (older ones add `py-X` before pluggy; `-v` adds ` -- <python path>`). `pytest -q` prints no
  header, so a quiet pytest check has no runner line.
- vitest: `RUN  v1.6.0 /path/of/the/project` (the path is left out: it is the verifier's
  checkout, not a fact about the runner).
- jest and `node --test` print no version in a run's output (jest only with `--version`, which
  runs no test; node's test runner prints TAP or its spec reporter, neither names a version):
  their checks have no runner line unless the command prints one of the lines above.

What this yields is what the check printed, and the check runs the submitted code: it is a fact
about the output, not a verified version, and the statement says so by its name.
"""

from __future__ import annotations

import re

from taskgate.domain.text import plain

RUNNER_CHARS = 200  # the whole line kept per check
_PART = r"[0-9A-Za-z.+_-]{1,40}"  # one version: bounded, no spaces or commas
_PYTEST = re.compile(
    rf"^platform [^\s]{{1,40}} -- Python ({_PART}), pytest-({_PART})(?:, py-{_PART})?, pluggy-({_PART})",
    re.MULTILINE,
)
_VITEST = re.compile(rf"^ *RUN +v({_PART})(?: |$)", re.MULTILINE)


def _pytest(text: str) -> str | None:
    m = _PYTEST.search(text)
    return f"pytest {m[2]} (Python {m[1]}, pluggy {m[3]})" if m else None


def _vitest(text: str) -> str | None:
    m = _VITEST.search(text)
    return f"vitest {m[1]}" if m else None


def runner_line(*outputs: str) -> str | None:
    """The versions of the known runners found in a check's output (its head and its tail, in
    that order: a long run keeps only the end, and the header is at the start), one per runner,
    `; `-joined in the order above; None when no known runner printed one."""
    text = "\n".join(plain(o) for o in outputs)
    found = [v for v in (_pytest(text), _vitest(text)) if v is not None]
    return "; ".join(found)[:RUNNER_CHARS] if found else None
