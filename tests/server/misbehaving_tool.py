"""A tool that misbehaves on purpose, for the server tests. Kept light (only rewardsmith's
types): scoring workers import it by its factory path, within a request's deadline."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence

from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

# A completion containing one of these makes `MisbehavingTool` misbehave on its batch.
HANG = "HANG"  # sleeps forever (a stuck remote call)
SPIN = "SPIN"  # a catastrophic regex: CPU-bound C code holding the GIL, for minutes
CRASH = "CRASH"  # the process dies (a segfault in an extension)
SLEEP = re.compile(r"SLEEP(\d+(?:\.\d+)?)")  # sleeps that many seconds, then scores


class MisbehavingTool(RewardTool):
    """Scores len(completion) / 100, unless a marker in the batch says to misbehave."""

    def __init__(self, spec: ToolSpec, start_seconds: float = 0.0) -> None:
        self.spec = spec
        time.sleep(start_seconds)  # a tool that takes a while to load (a model)

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        text = " ".join(s.completion for s in samples)
        if CRASH in text:
            os._exit(139)
        if SPIN in text:
            re.match(r"(a+)+$", "a" * 64 + "b")
        if HANG in text:
            while True:
                time.sleep(3600)
        for match in SLEEP.finditer(text):
            time.sleep(float(match.group(1)))
        return [Reward(len(s.completion) / 100, tool=self.spec.ref) for s in samples]
