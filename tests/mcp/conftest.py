from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp.live import Live, start, stop


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One real server for the MCP-over-HTTP tests; each test works in its own project."""
    server = start(tmp_path_factory.mktemp("taskgate-data"))
    try:
        yield server
    finally:
        stop(server)
