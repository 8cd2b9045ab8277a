"""The reward server: rewardsmith's scoring over HTTP (FastAPI + uvicorn).

    from rewardsmith.server import ServerConfig, create_app
    app = create_app(ServerConfig(tool="gsm8k"))      # uvicorn.run(app), or `rewardsmith serve`

See docs/server.md for the API, limits, deadlines and the OpenRLHF / veRL recipes. FastAPI is
imported only when the app is built, so the CLI works without the `server` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rewardsmith.server.config import ServerConfig

if TYPE_CHECKING:
    from rewardsmith.server.app import create_app

__all__ = ["ServerConfig", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        try:
            from rewardsmith.server.app import create_app
        except ImportError as exc:
            from rewardsmith.errors import MissingDependencyError

            raise MissingDependencyError(exc.name or "fastapi", "server") from exc
        return create_app
    raise AttributeError(name)
