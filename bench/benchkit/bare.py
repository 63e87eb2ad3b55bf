"""The bare MCP server taskgate is held to: the MCP SDK's stateless, JSON-response Streamable
HTTP app with a single `echo` tool, and nothing of taskgate's.

    python -m benchkit.bare [--translated]

serves it on a port the system picks (printed as the first line): directly by uvicorn, or with
--translated behind the local API-Gateway translation (each request a v2 event into a Lambda
handler running the app through Mangum, built per invocation), what that translation costs.
The listening socket is made by `taskgate serve`'s own bind(), so both servers' connections are
set up alike.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Any

from benchkit import BENCH, SRC


def app() -> Any:
    """The bare ASGI app (its lifespan runs the SDK's session manager)."""
    from mcp.server import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    server = MCPServer("bare", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, transport_security=security
    )


def lambda_handler() -> Any:
    """The bare app as a Lambda handler: built per invocation, run through Mangum."""
    from mangum import Mangum

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        response: dict[str, Any] = Mangum(app(), lifespan="auto")(event, context)
        return response

    return handler


def start(*, translated: bool = False) -> tuple[subprocess.Popen[str], int]:
    """The bare server in a subprocess, and its port once it listens."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(BENCH), str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchkit.bare", *(["--translated"] if translated else [])],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if not first.strip().isdigit():
        proc.kill()
        raise RuntimeError(f"the bare server did not start (it printed {first!r})")
    return proc, int(first)


def main() -> None:
    import logging

    import uvicorn

    from taskgate.local.gateway import Gateway
    from taskgate.local.serve import bind

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--translated", action="store_true", help="behind the API-Gateway translation")
    args = parser.parse_args()
    target = Gateway(handlers={"mcp": lambda_handler()}) if args.translated else app()
    for name in ("mangum", "mcp.server.streamable_http_manager", "mcp.server.streamable_http"):
        logging.getLogger(name).setLevel(logging.WARNING)
    sock = bind("127.0.0.1", 0)
    # The port, once listening: a client that read it is queued until uvicorn accepts.
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(target, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
