"""The screen (domain/screen.py) on the lines the submission adds against its baseline: git's
work, so before the checkout is handed over, and before the merge brings in the base's lines."""

from __future__ import annotations

from taskgate.domain import screen
from taskgate.domain.run_report import ScreenHit
from taskgate.verifier.checkout import CheckoutError, added_lines, read_committed
from taskgate.verifier.state import RunError, RunState


def read(state: RunState) -> None:
    cfg, co, base = state.config, state.checkout, state.baseline
    with state.timed("screen"):
        try:
            changed = co.changed_paths(base)
            into = [cfg.hidden_tests.into] if cfg.hidden_tests else []
            wanted = [
                p
                for p in changed
                if p.endswith(screen.PY_SUFFIXES + screen.JS_SUFFIXES) and not screen.is_test_file(p, into)
            ]
            lines = added_lines(co, base, wanted)
        except CheckoutError as exc:
            raise RunError(f"the screen could not read the submission's changes: {exc}") from exc
        files = [
            screen.AddedFile(p, text, lines[p])
            for p in wanted
            if p in lines and (text := read_committed(co, p)) is not None
        ]
        found = screen.screen(
            files,
            allow=cfg.screen_allow,
            test_dirs=into,
            # The baseline's bins: the submission's own package.json could name its library one.
            package_json=co.read_at(base, "package.json"),
        )
    for h in found:
        state.say(f"screen: {h.quoted()}")
    state.report.screened = [ScreenHit(path=h.path, line=h.line, rule=h.rule, text=h.text) for h in found]
