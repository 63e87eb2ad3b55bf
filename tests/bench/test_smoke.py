"""Every bench still runs: each script in bench/ in its smoke mode (`--smoke`: a few tasks,
seconds; bench/benchkit/smoke.py), as a real subprocess, printing each of its figures as a
number. A change that breaks a bench fails here, not in the hands of whoever next needs its
figures. The model test's long-run tools (tests/model/) run the same way, small.

Adding a bench: give it `smoke.parse(...)` and a line in SMOKES with the figures it prints; a
bench with no line fails test_every_bench_has_a_smoke_run.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
NUMBER = r"-?\d+(?:\.\d+)?"


def fig(name: str, line: str = "") -> str:
    """A figure as the benches print it, `name=<number>` (a word of its own), anywhere or on a
    line that starts with `line`."""
    return rf"(?m){'^' + line + '.*?' if line else ''}(?<!\S){name}={NUMBER}"


@dataclass(frozen=True)
class Smoke:
    command: tuple[str, ...]  # after the interpreter
    figures: tuple[str, ...]  # regular expressions, each must match the output

    @property
    def name(self) -> str:
        return " ".join(self.command)


def bench(script: str, *figures: str, args: tuple[str, ...] = ()) -> Smoke:
    return Smoke((f"bench/{script}", "--smoke", *args), figures)


SMOKES = [
    bench("audit.py", fig(r"audit_ms_per_task_\d+"), fig("linear_ratio"), fig("audit_vs_lifecycle")),
    bench(
        "brief.py",
        fig("brief_ms", "notes="),
        fig(r"ratio_\d+_to_\d+"),
        fig("decisions_in_brief", "decisions="),
    ),
    bench(
        "cold_start.py",
        fig("baseline"),
        *(fig("import_s", f"function={n} ") for n in ("mcp", "api", "authorizer", "sweeper", "dispatcher")),
    ),
    bench(
        "cost.py",
        fig("requests_per_lifecycle"),
        fig("wru_per_lifecycle"),
        fig(r"cost_per_1000_verifications_usd\[FARGATE\]"),
        fig(r"cost_per_1000_verifications_usd\[FARGATE_SPOT\]"),
        fig("cost_per_1000_lifecycles_usd"),
        fig("drain_cost_ratio"),
    ),
    bench(
        "fleet.py",
        r"(?m)^pattern=server-picked double_claims=0 ",
        r"(?m)^pattern=natural double_claims=0 ",
        fig("tasks_per_s", "pattern=natural "),
        *(
            fig("p50_ms", f"probe={p} clients=1 ")
            for p in ("get_next_tasks", "rest_health", "rest_task", "bare_echo")
        ),
        rf"(?m)^single_client_p50_ms mcp={NUMBER} rest={NUMBER} bare={NUMBER} mcp_over_bare={NUMBER}$",
        fig("fleet_ratio"),
    ),
    bench(
        "lifecycle.py",
        *(fig("writes_per_lifecycle", f"adapter={re.escape(a)} ") for a in ("sqlite", "dynamodb(moto)")),
        fig("kms_Sign", r"adapter=dynamodb\(moto\)\+kms "),
    ),
    bench(
        "mcp_cpu.py",
        *(fig(f"taskgate_own_us_per_call_{v}") for v in ("2025-11-25", "2026-07-28")),
        *(fig(f"cpu_ratio_{v}") for v in ("2025-11-25", "2026-07-28")),
    ),
    bench(
        "mcp_rate.py",
        *(
            fig("cpu_us_per_call", f"server={s} version={v} ")
            for s in ("taskgate", "bare", "bare-direct")
            for v in ("2025-11-25", "2026-07-28")
        ),
        fig("ratio"),
        *(fig(f"ratio_direct_{v}") for v in ("2025-11-25", "2026-07-28")),
        fig("ratio_direct"),
    ),
    bench(
        "merge_fleet.py",
        fig("landed", "mode=merge "),
        fig("landed", "mode=merge-batch "),
        fig("broke_main_merge"),
        fig("stale_runs_per_accepted"),
        fig("broke_main_merge_batch"),
    ),
    bench(
        "merge_fleet.py",
        fig("runs_per_landed_land"),
        fig("broke_main_land"),
        r"(?<!\S)landed_is_verified=[1-9]\d*/[1-9]\d*",
        fig("accept_to_landed_p50_s"),
        args=("--modes", "land"),
    ),
    bench(
        "reports.py",
        fig("parse_junit_s"),
        fig("vs_baseline"),
        fig("match_per_ref_ms"),
        fig("match_reports_ms"),
    ),
    bench(
        "screen.py",
        fig("import_ms"),
        *(
            fig(f"file{i}_{f}")
            for i in (0, 1)
            for f in ("kb", "tree_ms", "patterns_ms", "ratio", "tree_mb_per_s")
        ),
    ),
    bench(
        "stale_tip.py",
        *(fig("p50_ms", f"probe={p} ") for p in ("board_poll", "task_detail")),
        r"(?m)^commit_to_stale_ms=\d+(?:\.\d+)?$",  # seen (-1: never): the server read the tip
        rf"(?m)^tip_read_ms git_p50={NUMBER} stamp_p50={NUMBER}$",
    ),
    bench("verify_fleet.py", fig("verify_start_p50_s"), fig("jobs2_time_ratio"), fig("cache_speedup")),
    bench(
        "verify_overhead.py",
        fig("process_s", "run=1 verdict=passed "),  # bench/cost.py reads this one
        fig("baseline_direct_check_s"),
        fig("overhead_share"),
    ),
    Smoke(
        (
            "-m",
            "tests.model.long_run",
            "--sqlite-steps",
            "20",
            "--dynamodb-steps",
            "20",
            "--steps-per-example",
            "10",
        ),
        (
            fig("steps_per_s", "adapter=sqlite "),
            fig("steps_per_s", r"adapter=dynamodb\(moto\) "),
            fig("divergences", "steps="),
        ),
    ),
    Smoke(("-m", "tests.model.harness_cost", "--examples", "1", "--steps", "8"), (fig("speedup"),)),
]


def test_every_bench_has_a_smoke_run() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")}
    smoked = {Path(s.command[0]).name for s in SMOKES if s.command[0].startswith("bench/")}
    assert smoked == scripts


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


# bench/cost.py prices the stack as tests/functions/stack.py builds it on moto (the table, the
# functions' environment, the stream's filter), the one model of the deployment both share.
READS_THE_TEST_STACK = {"cost.py"}


def test_benches_import_src_and_their_own_helpers_never_the_test_suite() -> None:
    """A test helper changes for the tests' sake (that is how a bench broke unnoticed)."""
    leaning = {
        str(p.relative_to(BENCH))
        for p in BENCH.rglob("*.py")
        if any(m == "tests" or m.startswith("tests.") for m in _imports(p))
    }
    assert leaning == READS_THE_TEST_STACK


@pytest.mark.parametrize("smoke", SMOKES, ids=lambda s: s.name)
def test_bench_runs_in_smoke_mode_and_prints_its_figures(smoke: Smoke) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKGATE_")} | {"PYTHONUNBUFFERED": "1"}
    done = subprocess.run(
        [sys.executable, *smoke.command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=280
    )
    assert done.returncode == 0, f"{smoke.name} exited {done.returncode}:\n{done.stderr[-4000:]}"
    if smoke.command[0].startswith("bench/"):
        assert done.stdout.startswith("smoke=1 "), done.stdout[:500]
    missing = [f for f in smoke.figures if not re.search(f, done.stdout)]
    assert not missing, f"{smoke.name} did not print {missing}:\n{done.stdout[-4000:]}"


# -- the convention itself -------------------------------------------------------------------


def _smoke_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_smoke", BENCH / "benchkit" / "smoke.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parser() -> object:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    return parser


def test_smoke_makes_the_small_sizes_the_defaults_and_says_so_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    smoke = _smoke_module()
    args = smoke.parse(_parser(), ["--smoke"], tasks=20, runs=1)
    assert (args.tasks, args.runs, args.smoke) == (20, 1, True)
    assert capsys.readouterr().out == smoke.BANNER + "\n"


def test_an_option_given_beside_smoke_wins(capsys: pytest.CaptureFixture[str]) -> None:
    args = _smoke_module().parse(_parser(), ["--smoke", "--tasks", "7"], tasks=20, runs=1)
    assert (args.tasks, args.runs) == (7, 1)


def test_without_smoke_the_defaults_stand_and_nothing_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    args = _smoke_module().parse(_parser(), [], tasks=20, runs=1)
    assert (args.tasks, args.runs, args.smoke) == (200, 3, False)
    assert capsys.readouterr().out == ""


def test_a_smoke_size_for_an_option_the_bench_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match="agents"):
        _smoke_module().parse(_parser(), ["--smoke"], agents=4)


def test_cost_imports_as_a_module_from_the_repository_root() -> None:
    """scripts/cloud-e2e/scenario.py reads bench/cost.py's lifecycle as `bench.cost`, from the
    root, where bench/'s own helpers are not on the path unless the module puts them there."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", "from bench.cost import TYPICAL; print(type(TYPICAL).__name__)"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
