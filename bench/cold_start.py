"""Cold start of each Lambda function: its entry module's import time in a fresh interpreter.

For each function (mcp, api, authorizer, sweeper, dispatcher) a new Python process imports
`functions/<name>/app.py` the way the Lambda runtime does and times it: everything the module
does at init (imports, Powertools Logger and Metrics, and whatever the function primes at
init). The baseline, a fresh interpreter doing `import boto3, mangum, mcp.server`, is measured
in the same run, interleaved with the functions so machine load hits both alike. Median of
N rounds (default 7).

What the processes can import is what Lambda can: the dependency layer, built by
layers/Makefile for this machine's platform and Python (cached in build/cold-start-layer,
rebuilt when pyproject.toml changes), plus this repository's src/, with no site-packages
(`python -S`). So a package the development environment has and the layer does not (e.g.
`rich`, which the MCP SDK imports when present) costs nothing here, as in Lambda; and the
layer's bytecode is precompiled, as layers/Makefile does for the Lambda runtime.

The environment is Lambda-like (LAMBDA_TASK_ROOT, AWS_LAMBDA_FUNCTION_NAME, region, the
stack's TASKGATE_* settings): inside Lambda the X-Ray SDK behind Powertools' Tracer builds no
sampling client (outside it costs ~0.4 s). Nothing is sent anywhere.

Goals: mcp <= 1.15x the baseline; the others never import the MCP SDK and stay <= 0.5x.

  python bench/cold_start.py [--rounds 7] [--warmup 1] [--layer build|env] [--smoke]

--layer env (the smoke run's) imports from this environment's site-packages instead of the built
layer: nothing is built or downloaded, and the figures hold whatever extra this environment has.

One line per function: `function=<name> ratio=<r> goal=<g> import_s=... imports_mcp=...`. Each
line also says what the function keeps out of its import and when that is paid (`deferred_s`,
`paid=`): the MCP and REST functions prime in a SnapStart before-snapshot hook (paid once, at
publish), the authorizer, sweeper and dispatcher on their first invocation.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from benchkit import ROOT, smoke

CACHE = ROOT / "build" / "cold-start-layer"
GOALS = {"mcp": 1.15, "api": 0.5, "authorizer": 0.5, "sweeper": 0.5, "dispatcher": 0.5}
BASELINE = "import boto3, mangum, mcp.server"

_TIMED = """
import sys, time
t = time.perf_counter()
{body}
elapsed = time.perf_counter() - t
loaded_mcp = int('mcp.server' in sys.modules)
t = time.perf_counter()
{prime}
primed = time.perf_counter() - t
print(f"{{elapsed:.6f}} {{loaded_mcp}} {{primed:.6f}}")
"""

_ENTRY = """
import importlib.util
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
assert callable(module.handler)
"""

_SNAPSHOT = "import snapshot_restore_py as s\nfor hook, a, kw in s.get_before_snapshot(): hook(*a, **kw)"
_PRIME = {
    "mcp": (_SNAPSHOT, "at publish (SnapStart)"),
    "api": (_SNAPSHOT, "at publish (SnapStart)"),
    "authorizer": ("from taskgate.cloud import observe\nobserve.prime()", "first invocation"),
    "sweeper": ("from taskgate.cloud import observe\nobserve.prime()", "first invocation"),
    "dispatcher": (
        "from taskgate.cloud import observe, dispatcher\nobserve.prime()\ndispatcher.launcher()",
        "first invocation",
    ),
}


def _platform_tag() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(machine)
    if sys.platform != "linux" or arch is None:
        raise SystemExit(
            f"this bench builds a Linux layer for the local machine; {sys.platform}/{machine} is not one"
        )
    return f"manylinux2014_{arch}"


def layer() -> Path:
    """The dependency layer for this machine, built by layers/Makefile (cached per pyproject.toml)."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + sys.version.encode()).hexdigest()[:16]
    out = CACHE / digest
    if (out / "python").is_dir():
        return out / "python"
    for old in CACHE.glob("*"):
        if old.name != "runtime":
            shutil.rmtree(old, ignore_errors=True)
    out.mkdir(parents=True)
    runtime = f"{sys.version_info.major}.{sys.version_info.minor}"
    print(f"building the layer for {_platform_tag()} / CPython {runtime} in {out} ...", file=sys.stderr)
    subprocess.run(
        [
            "make",
            "-s",
            "-C",
            str(ROOT / "layers"),
            "build-DependencyLayer",
            f"ARTIFACTS_DIR={out}",
            f"PLATFORM={_platform_tag()}",
            f"RUNTIME={runtime}",
            f"PYTHON={sys.executable}",
            f"PYC_PYTHON={sys.executable}",
        ],
        check=True,
    )
    # The layer's copy of taskgate is replaced by src/ (first on the path), so changes to the
    # code need no rebuild; only the dependencies are cached.
    return out / "python"


def _runtime_modules() -> Path:
    """What Lambda's Python runtime adds to the path for SnapStart: `snapshot_restore_py` (the
    runtime ships it; here it comes from the development environment)."""
    import snapshot_restore_py

    out = CACHE / "runtime"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(snapshot_restore_py.__file__, out / "snapshot_restore_py.py")
    return out


def lambda_env(name: str, task_root: str, path: list[str]) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(path),
        "LAMBDA_TASK_ROOT": task_root,
        "AWS_LAMBDA_FUNCTION_NAME": f"taskgate-{name}",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_SESSION_TOKEN": "bench",
        "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
        "TASKGATE_STORE": "dynamodb",
        "TASKGATE_TABLE": "taskgate-bench",
        "TASKGATE_ECS_CLUSTER": "taskgate-bench",
        "TASKGATE_ECS_TASK_DEFINITION": "arn:aws:ecs:us-east-1:123456789012:task-definition/bench:1",
        "TASKGATE_ECS_SUBNETS": "subnet-00000000",
        "TASKGATE_VERIFIER_SERVER": "https://taskgate-bench.example.com",
        "POWERTOOLS_SERVICE_NAME": "taskgate",
        "POWERTOOLS_METRICS_NAMESPACE": "taskgate",
    }


def once(body: str, env: dict[str, str], cwd: str, prime: str = "") -> tuple[float, bool, float]:
    out = subprocess.run(
        [sys.executable, "-S", "-c", _TIMED.format(body=body, prime=prime)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"import failed:\n{out.stderr}")
    seconds, mcp_loaded, primed = out.stdout.split()
    return float(seconds), mcp_loaded == "1", float(primed)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed passes first (files in the page cache)"
    )
    parser.add_argument(
        "--layer", choices=["build", "env"], default="build", help="where dependencies come from"
    )
    args = smoke.parse(parser, rounds=1, warmup=0, layer="env")
    deps = layer() if args.layer == "build" else Path(sysconfig.get_paths()["purelib"])
    path = [str(ROOT / "src"), str(deps), str(_runtime_modules())]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], check=True)
    names = list(GOALS)
    samples: dict[str, list[float]] = {"baseline": [], **{n: [] for n in names}}
    primes: dict[str, list[float]] = {n: [] for n in names}
    loads_mcp: dict[str, bool] = {}

    def measure(n: str) -> tuple[float, bool, float]:
        env = lambda_env(n, task_root, path)
        if n == "baseline":
            return once(BASELINE, env, task_root)
        entry = _ENTRY.format(path=str(ROOT / "functions" / n / "app.py"))
        return once(entry, env, task_root, _PRIME[n][0])

    with tempfile.TemporaryDirectory() as task_root:
        for _ in range(args.warmup):  # untimed: files in the page cache
            for n in ("baseline", *names):
                measure(n)
        for _ in range(args.rounds):
            for n in ("baseline", *names):
                seconds, mcp_loaded, primed = measure(n)
                samples[n].append(seconds)
                if n != "baseline":
                    loads_mcp[n] = mcp_loaded
                    primes[n].append(primed)
    base = statistics.median(samples["baseline"])
    print(f"baseline={base:.3f}s ({BASELINE}; median of {args.rounds})")
    for n in names:
        median = statistics.median(samples[n])
        ratio = median / base
        verdict = "ok" if ratio <= GOALS[n] else "OVER"
        deferred = (
            f" deferred_s={statistics.median(primes[n]):.3f} paid={_PRIME[n][1]!r}" if _PRIME[n][0] else ""
        )
        print(
            f"function={n} ratio={ratio:.2f} goal={GOALS[n]} import_s={median:.3f} "
            f"imports_mcp={'yes' if loads_mcp[n] else 'no'} {verdict}{deferred}"
        )


if __name__ == "__main__":
    main()
