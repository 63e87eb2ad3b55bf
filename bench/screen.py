"""What the screen costs on JavaScript: tree-sitter (domain/screen_js.py) against the line
patterns it replaced, on real third-party files as if a submission added every line.

    python bench/screen.py [FILE ...] [--rounds 3] [--smoke]

Without files it takes, from the JavaScript this environment has installed (Playwright's
driver), the largest hand-written file (short lines) and the largest minified one. Prints, per
file (best of the rounds):
    <name>_kb                    its size
    <name>_tree_ms               the screen as the verifier runs it (parse, queries, rules)
    <name>_patterns_ms           the old line patterns over the same lines, the same run's baseline
    <name>_ratio                 tree over patterns
    <name>_tree_mb_per_s         the screen's throughput
and import_ms: importing tree-sitter and its grammars (once per verifier process).
"""

from __future__ import annotations

import argparse
import site
import sys
import time
from pathlib import Path

from benchkit import smoke

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from taskgate.domain import screen


def _installed_js() -> list[Path]:
    """The largest hand-written and the largest minified JavaScript file installed."""
    roots = [Path(p) for p in site.getsitepackages()]
    files = [
        f for r in roots for f in r.glob("playwright/driver/package/**/*.js") if f.stat().st_size < 2_000_000
    ]
    if not files:
        raise SystemExit("no installed JavaScript found: name files to measure")

    def mean_line(f: Path) -> float:
        text = f.read_bytes()
        return len(text) / (text.count(b"\n") + 1)

    readable = max((f for f in files if mean_line(f) < 100), key=lambda f: f.stat().st_size)
    minified = max((f for f in files if mean_line(f) > 1000), key=lambda f: f.stat().st_size)
    return [readable, minified]


def _best(fn: object, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = smoke.parse(parser, rounds=1)
    start = time.perf_counter()
    from taskgate.domain import screen_js

    screen_js.screen(screen.AddedFile("warm.js", "1;\n", frozenset({1})), is_bin=False, test_dirs=())
    print(f"import_ms={1000 * (time.perf_counter() - start):.1f}")
    for i, path in enumerate(args.files or _installed_js()):
        text = path.read_text(encoding="utf-8", errors="replace")
        f = screen.AddedFile("lib/x.js", text, frozenset(range(1, text.count("\n") + 2)))
        tree = _best(lambda f=f: screen.screen([f]), args.rounds)
        patterns = _best(
            lambda f=f: screen._by_pattern(f, screen._JS_PATTERNS, (), "js.test_files"), args.rounds
        )
        name = f"file{i}"
        size = len(text.encode())
        print(f"# {name}: {path}")
        print(f"{name}_kb={size / 1024:.0f}")
        print(f"{name}_tree_ms={1000 * tree:.0f}")
        print(f"{name}_patterns_ms={1000 * patterns:.0f}")
        print(f"{name}_ratio={tree / patterns:.2f}")
        print(f"{name}_tree_mb_per_s={size / tree / 1e6:.2f}")


if __name__ == "__main__":
    main()
