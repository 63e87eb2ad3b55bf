from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp.live import Live, start, stop


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One real server per module; each test works in a project of its own."""
    server = start(tmp_path_factory.mktemp("taskgate-data"))
    try:
        yield server
    finally:
        stop(server)
