"""A stand-in for `claude -p` in the verifier config: it keeps what it was given on stdin and
answers the way it is told. The verifier's handling of the answer is what the tests check."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def main() -> int:
    mode, log = sys.argv[1], Path(sys.argv[2])
    prompt = sys.stdin.read()
    log.write_text(prompt)
    criteria = [line[2:].split(":", 1)[0] for line in prompt.splitlines() if re.match(r"^- AC-", line)]
    if mode == "garbage":
        print("Looks good to me!")
        return 0
    if mode == "crash":
        print("reviewer: out of credits", file=sys.stderr)
        return 3
    results = []
    for cid in criteria:
        if mode in ("pass", "fenced"):
            results.append({"criterion": cid, "result": "pass", "rationale": "the diff adds it, with a test"})
        elif mode == "fail":
            results.append({"criterion": cid, "result": "fail", "rationale": "the diff does not handle it"})
        elif mode == "no-rationale":
            results.append({"criterion": cid, "result": "pass"})
    print("warming up", file=sys.stderr)  # stderr is not part of the answer
    answer = json.dumps({"results": results})
    print(f"Here is my review:\n```json\n{answer}\n```" if mode == "fenced" else answer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
