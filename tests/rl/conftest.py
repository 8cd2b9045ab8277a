"""The tiny testbed policy, built once per test session (a few seconds) into its own cache."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_testbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    import torch

    from rewardsmith.rl.policies import TESTBED_TINY, build_testbed

    torch.set_num_threads(2)
    return build_testbed(TESTBED_TINY, cache_dir=tmp_path_factory.mktemp("testbed"))


@pytest.fixture(scope="session")
def tiny_multi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The multi-task testbed's pipeline at test size (seven families, six styles)."""
    pytest.importorskip("torch")
    import torch

    from rewardsmith.rl.policies import TESTBED_MULTI_TINY, build_testbed

    torch.set_num_threads(2)
    return build_testbed(TESTBED_MULTI_TINY, cache_dir=tmp_path_factory.mktemp("testbed_multi"))
