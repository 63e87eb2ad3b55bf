"""`taskgate serve`: MCP, REST API, board and sweeper in one process."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from taskgate.cli.client import DEFAULT_DATA_DIR


def cmd_serve(args: argparse.Namespace) -> None:
    from taskgate.local.serve import ServeOptions, serve

    if args.store == "dynamodb" and not args.table:
        raise SystemExit("taskgate serve: --store dynamodb needs --table")
    serve(
        ServeOptions(
            data_dir=Path(args.data_dir).expanduser(),
            host=args.host,
            port=args.port,
            store=args.store,
            table=args.table or "",
            endpoint_url=args.endpoint_url,
            admin_name=args.admin_name,
            workers=max(1, args.workers),
            port_file=Path(args.port_file) if args.port_file else None,
        )
    )


def register(sub: Any) -> None:
    s = sub.add_parser("serve", help="run MCP, REST API, board and sweeper in one process")
    s.add_argument("--data-dir", default=os.environ.get("TASKGATE_DATA_DIR", str(DEFAULT_DATA_DIR)))
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8765, help="0: any free port (printed; see --port-file)")
    s.add_argument("--port-file", default=None, help="write the port it listens on to this file")
    s.add_argument("--store", choices=["sqlite", "dynamodb"], default="sqlite")
    s.add_argument("--table", default=None, help="DynamoDB table (with --store dynamodb)")
    s.add_argument("--endpoint-url", default=None, help="DynamoDB endpoint URL (e.g. DynamoDB Local)")
    s.add_argument(
        "--admin-name",
        default=os.environ.get("USER") or "admin",
        help="the human the admin token stands for (default: $USER)",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=2,
        help="worker threads for REST calls, and as many again for MCP tool calls (default %(default)s)",
    )
    s.set_defaults(func=cmd_serve)
