"""The router: picks library tool(s) per task signature, or asks for a new tool.

Importing this package is cheap; the embedding model loads on the first `Router` built
with the embedded backend.
"""

from rewardsmith.router.decision import Decision, ToolWeight
from rewardsmith.router.router import Router

__all__ = ["Decision", "Router", "ToolWeight"]
