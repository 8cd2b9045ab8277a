"""The `model` tool kind: a sequence-classification reward model scores (prompt, completion).

Any Hugging Face directory with a single-output `AutoModelForSequenceClassification` head
works (what `rewardsmith rm train` writes, or a downloaded reward model); an RBS bi-encoder
directory works too. The score is the raw head output (higher is better), also given as the
`logit` component; `needs_reference=False`, any reference is ignored.

The model loads on the first `score` call, not at construction, so registering a tool costs
nothing; the construction only checks that the directory looks like a model. A model in the
chat format (what `rm train` writes, `rm.formats`) reads the conversation its chat template
renders, chat prompts included, exactly as TRL and OpenRLHF feed it; an older one reads the
prompt as text clipped to its windows (the end of the prompt, the start of the completion, or
its end for a model trained with `--suffix-side end`). Samples are
scored in batches of `batch_size`, longest first. A batch that fails (out of memory, a
broken tokenizer) gives every sample in it `status="error"` and score 0.0.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.models.loading import torch_threads
from rewardsmith.tools.base import make_reward
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

log = logging.getLogger(__name__)

# Prompts and completions are clipped to tokens later; this only bounds tokenizer work on
# absurd inputs (tokenizing megabytes to keep 384 tokens).
MAX_INPUT_CHARS = 20_000


class ModelTool(RewardTool):
    """A reward model from a local directory; batch scoring of (prompt, completion)."""

    def __init__(
        self,
        spec: ToolSpec,
        *,
        path: str,
        batch_size: int = 16,
        device: str = "auto",
        prompt_max_tokens: int | None = None,
        completion_max_tokens: int | None = None,
        completion_side: str | None = None,
        threads: int | None = None,
    ) -> None:
        self.spec = spec
        self.path = Path(path).expanduser()
        if not (self.path / "config.json").is_file():
            raise ConfigError(
                f"model tool {spec.name!r}: {self.path} is not a Hugging Face model directory "
                "(no config.json); pass the directory `rm train --out` wrote"
            )
        if batch_size < 1:
            raise ConfigError(f"model tool {spec.name!r}: batch_size must be >= 1")
        self.batch_size = batch_size
        self.device = device
        self.prompt_max_tokens = prompt_max_tokens
        self.completion_max_tokens = completion_max_tokens
        self.completion_side = completion_side
        self._reads_end = completion_side == "end"  # settled from the saved windows on load
        self.threads = threads
        self._scorer: Any = None
        self._lock = threading.Lock()

    def windows(self) -> Any:
        """The token windows this tool reads with: its own settings over the saved ones."""
        from rewardsmith.rm.model import Windows, read_rbs_config

        saved = Windows(**read_rbs_config(self.path).get("windows", {}))
        return Windows(
            self.prompt_max_tokens or saved.prompt_max_tokens,
            self.completion_max_tokens or saved.completion_max_tokens,
            self.completion_side or saved.completion_side,  # type: ignore[arg-type]
        )

    def use_scorer(self, scorer: Any, windows: Any) -> None:
        """Score with `scorer` (anything with `score_texts`, e.g. Ray replicas) loaded with
        `windows` (from `windows()`), instead of loading the model here."""
        with self._lock:
            self._scorer = scorer
            self._reads_end = windows.completion_side == "end"

    def scorer(self) -> Any:
        """The loaded model (loaded once, on first use)."""
        with self._lock:
            if self._scorer is None:
                # rm.model imports torch: loaded on first use, not when the registry is built.
                from rewardsmith.rm.model import load_scorer

                torch_threads(self.threads)
                windows = self.windows()
                self._scorer = load_scorer(self.path, device=self.device, windows=windows)
                self._reads_end = windows.completion_side == "end"
            return self._scorer

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        if not samples:
            return []
        scorer = self.scorer()
        prompts, completions = self._inputs(scorer, samples)
        out: list[Reward] = []
        for start in range(0, len(samples), self.batch_size):
            stop = start + self.batch_size
            try:
                values = scorer.score_texts(
                    prompts[start:stop], completions[start:stop], self.batch_size
                )
            except Exception as exc:  # a bad batch is data, not a crash
                log.warning("%s failed on a batch of %d: %s", self.spec.ref, stop - start, exc)
                reason = f"{type(exc).__name__}: {exc}"
                out += [
                    make_reward(self.spec, 0.0, "error", reason=reason) for _ in samples[start:stop]
                ]
                continue
            out += [self._reward(v) for v in values]
        return out

    def _inputs(self, scorer: Any, samples: Sequence[Sample]) -> tuple[list[Any], list[str]]:
        text = [s.completion or "" for s in samples]
        if getattr(scorer, "chat", None) is not None:
            # The chat template clips by characters itself; chat prompts stay messages.
            return [s.prompt if s.prompt is not None else "" for s in samples], text
        prompts = [s.prompt_text()[-MAX_INPUT_CHARS:] for s in samples]
        if self._reads_end:
            return prompts, [c[-MAX_INPUT_CHARS:] for c in text]
        return prompts, [c[:MAX_INPUT_CHARS] for c in text]

    def _reward(self, value: float) -> Reward:
        if not math.isfinite(value):
            return make_reward(self.spec, 0.0, "error", reason=f"model returned {value}")
        return make_reward(
            self.spec, value, reason="reward model score", components={"logit": value}
        )

    def __getstate__(self) -> dict[str, Any]:
        # Picklable into worker processes: the model reloads there on first use.
        state = self.__dict__.copy()
        state["_scorer"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._scorer = None
