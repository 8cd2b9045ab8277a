"""A server shared by the tests of a module: the `misbehaving` tool in its library, a short
deadline, small limits (so 413s are cheap to provoke)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_support import add_misbehaving_tool, running_server

from rewardsmith.library.store import Library
from rewardsmith.server import ServerConfig

DEADLINE = 3.0
MAX_BATCH = 200
MAX_BODY_BYTES = 256 * 1024


@pytest.fixture(scope="module")
def server_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("server") / "library.db"
    with Library(path) as lib:
        add_misbehaving_tool(lib)
    return path


@pytest.fixture(scope="module")
def server(server_library: Path) -> Iterator[str]:
    config = ServerConfig(
        library=str(server_library),
        tool="gsm8k",
        # Warm the misbehaving tool at start too (requests name it with "tool").
        task_map={"misbehaving": "misbehaving"},
        workers=2,
        deadline_seconds=DEADLINE,
        max_batch=MAX_BATCH,
        max_body_bytes=MAX_BODY_BYTES,
    )
    with running_server(config) as url:
        yield url
