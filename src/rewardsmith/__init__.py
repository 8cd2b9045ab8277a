"""rewardsmith: a reward engine for reinforcement learning on language models.

Public API::

    from rewardsmith import Sample, Reward, Library, Router, score
"""

from rewardsmith.errors import RewardsmithError
from rewardsmith.library.store import Library
from rewardsmith.router import Decision, Router
from rewardsmith.scoring import Scorer, score
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

__all__ = [
    "Decision",
    "Library",
    "Reward",
    "RewardTool",
    "RewardsmithError",
    "Router",
    "Sample",
    "Scorer",
    "ToolSpec",
    "score",
]
__version__ = "0.1.0"
