"""The smoke mode every bench has: `--smoke` runs the bench small (a few tasks, seconds) through
all of its code, figures printed as a full run prints them. The suite runs each bench this way
as a real subprocess (tests/bench/test_smoke.py), so a change that breaks a bench fails there,
not months later in the hands of whoever runs it next.

A bench declares its small sizes where it parses its arguments:

    args = smoke.parse(parser, agents=4, tasks=20, runs=1)

With --smoke those become the defaults (an option given on the command line still wins), and the
first line printed says the figures that follow come from a smoke run: they check the bench
runs, they measure nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

BANNER = "smoke=1 (a run of seconds: its figures check that the bench runs, they measure nothing)"


def parse(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None = None, **small: Any
) -> argparse.Namespace:
    """The bench's arguments; with --smoke, `small` replaces the defaults of the options it names."""
    sizes = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in small.items())
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"a run of seconds that prints every figure ({sizes or 'the defaults'}); its figures measure nothing",
    )
    first, _ = parser.parse_known_args(argv)
    unknown = sorted(set(small) - set(vars(first)))
    if unknown:
        raise ValueError(f"smoke sizes for options the bench does not have: {unknown}")
    if first.smoke:
        parser.set_defaults(**small)
    args = parser.parse_args(argv)
    if args.smoke:
        print(BANNER, flush=True)
    return args
