"""SnapStart hooks of the MCP and REST functions: what runs before the snapshot, and that two
environments restored from one snapshot do not share their random state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for the Lambda runtime around a SnapStart function: import the entry point (init),
# run the before-snapshot hooks, freeze the random state as a snapshot would, then "restore"
# (set that frozen state, run the after-restore hooks) and draw numbers as a request would.
_RUNTIME = """
import importlib.util, json, random, sys
import snapshot_restore_py as hooks
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
app = importlib.util.module_from_spec(spec); spec.loader.exec_module(app)
before = [f.__module__ + "." + f.__qualname__ for f, _, _ in hooks.get_before_snapshot()]
after = [f.__module__ + "." + f.__qualname__ for f, _, _ in hooks.get_after_restore()]
assert "mcp.server" not in sys.modules or "taskgate.mcp.server" in sys.modules
primed_before = {"server": getattr(sys.modules.get("taskgate.mcp.server"), "_server", None) is not None}
for f, a, kw in hooks.get_before_snapshot():
    f(*a, **kw)
from taskgate import runtime
from taskgate.cloud import observe
primed = {
    "store": runtime._current is not None,
    "tracer": observe._tracer is not None,
    "server": getattr(sys.modules.get("taskgate.mcp.server"), "_server", None) is not None,
}
random.seed(1234)  # the state every environment restored from the snapshot starts from
frozen = [random.random() for _ in range(3)]
random.seed(1234)
for f, a, kw in hooks.get_after_restore():
    f(*a, **kw)
print(json.dumps({"before": before, "after": after, "primed_before": primed_before, "primed": primed,
                  "frozen": frozen, "draws": [random.random() for _ in range(3)]}))
"""


def _run(name: str, tmp_path: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKGATE_", "AWS_"))}
    env.update(
        {
            "AWS_LAMBDA_FUNCTION_NAME": f"taskgate-{name}",
            "LAMBDA_TASK_ROOT": str(tmp_path),
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "x",
            "AWS_SECRET_ACCESS_KEY": "x",
            "TASKGATE_STORE": "dynamodb",
            "TASKGATE_TABLE": "taskgate-test",
        }
    )
    out = subprocess.run(
        [sys.executable, "-c", _RUNTIME, str(ROOT / "functions" / name / "app.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_mcp_primes_before_the_snapshot_and_reseeds_after_each_restore(tmp_path: Path) -> None:
    one, two = _run("mcp", tmp_path), _run("mcp", tmp_path)
    assert one["before"] == ["taskgate.cloud.mcp.prime"]
    assert one["after"] == ["taskgate.cloud.snapstart.after_restore"]
    assert one["primed_before"] == {"server": False}  # the import itself stays light
    assert one["primed"] == {"store": True, "tracer": True, "server": True}
    assert one["frozen"] == two["frozen"]  # without the hook, restored environments would share it
    assert one["draws"] != two["draws"]  # with it: two restored environments, two random streams


def test_api_primes_before_the_snapshot_and_reseeds_after_each_restore(tmp_path: Path) -> None:
    one, two = _run("api", tmp_path), _run("api", tmp_path)
    assert one["before"] == ["taskgate.cloud.observe.prime"]
    assert one["after"] == ["taskgate.cloud.snapstart.after_restore"]
    assert one["primed"] == {"store": True, "tracer": True, "server": False}
    assert one["draws"] != two["draws"]
