from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp.live import Live, serving


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One real server for the MCP-over-HTTP tests; each test works in its own project."""
    yield from serving(tmp_path_factory.mktemp("taskgate-data"))
