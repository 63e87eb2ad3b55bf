"""What the benches share: the smoke mode every bench has (smoke.py), a `taskgate serve` to
measure (serve.py), MCP clients (mcp.py), the bare MCP SDK server taskgate is held to
(bare.py), a Python the check user can run (users.py) and percentiles (stats.py).

Benches import from src/ and from here, never from the test suite: a test helper changes for
the tests' sake, and a bench that leant on one broke without anyone running it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
SRC = ROOT / "src"

# Run from a checkout without installing it. A taskgate already importable stays first: it may be
# another checkout's, put on PYTHONPATH to be measured.
if importlib.util.find_spec("taskgate") is None:
    sys.path.insert(0, str(SRC))
