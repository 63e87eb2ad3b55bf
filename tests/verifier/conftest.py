from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.live import Live, serving
from tests.support.users import shared_tmp


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """Where a test keeps its repositories and the files its checks write (markers, pid files,
    the fake reviewer's log): run as root, the verifier runs each check as an unprivileged
    user, who cannot reach pytest's own 0700 temp dirs."""
    yield from shared_tmp()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One real server per module; each test works in a project of its own."""
    yield from serving(tmp_path_factory.mktemp("taskgate-data"))
