"""Helpers the `rewardsmith grpo` commands share."""

from __future__ import annotations

from rewardsmith.errors import MissingDependencyError


def require_torch() -> None:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("torch transformers", "rl") from exc


def default_data(policy: str) -> str:
    """The prompts a policy trains on when --data is not given."""
    return "testbed-multi" if policy.startswith("testbed-multi") else "testbed"
