"""The reward server: rewardsmith's scoring over HTTP (FastAPI + uvicorn).

    from rewardsmith.server import ServerConfig, create_app
    app = create_app(ServerConfig(tool="gsm8k"))      # uvicorn.run(app), or `rewardsmith serve`

See docs/server.md for the API, limits, deadlines and the OpenRLHF / veRL recipes.
"""

from rewardsmith.server.app import create_app
from rewardsmith.server.config import ServerConfig

__all__ = ["ServerConfig", "create_app"]
