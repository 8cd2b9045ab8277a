"""An LLM judge: any OpenAI-compatible chat model grades each completion against its reference.

The reference-guided judge of "LLM-as-a-judge" setups: the model sees the question, the
reference answer and the response, and answers YES (the response's final answer is right) or
NO. 1.0 for YES, 0.0 for NO; an answer that is neither scores 0.0 with the model's words as
the reason (bad model output is data, not a crash); an endpoint that fails gives `error`.
Without a reference the sample is `invalid_reference`.

Every call's tokens are counted (`usage`, the client's `TokenUsage`), and a judge is asked
once per distinct (prompt, response, reference) in this process: GRPO groups repeat
completions, and a repeated question must get the same verdict anyway (temperature 0).
The question and response are clipped (`MAX_PROMPT_CHARS`, `MAX_RESPONSE_CHARS`) so one
long completion cannot blow the judge's context.

Not registered as a built-in: the router never picks it; build it with
`{"factory": "rewardsmith.tools.judge:LLMJudgeTool", "params": {...}}` (`tools add`) or in code.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Sequence
from typing import Any

from rewardsmith.config import clip_tail
from rewardsmith.errors import ConfigError, LLMError
from rewardsmith.llm.client import LLMClient, TokenUsage
from rewardsmith.tools.base import make_reward
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

log = logging.getLogger(__name__)

# Long enough for a word problem and a worked answer; short enough for a small model's context.
MAX_PROMPT_CHARS = 1_500
MAX_RESPONSE_CHARS = 1_500
# A verdict needs a word or two; a few more tokens let a chatty model still say YES first.
MAX_VERDICT_TOKENS = 4
# Verdicts kept per judge (each is a few bytes): a long run's distinct completions.
CACHE_SIZE = 200_000

SYSTEM_PROMPT = (
    "You grade answers to questions. You are given a question, the reference answer and a "
    "response. Reply with exactly one word: YES if the response's final answer is correct "
    "(it matches the reference answer), NO otherwise."
)
USER_TEMPLATE = (
    "Question:\n{prompt}\n\nReference answer: {reference}\n\nResponse:\n{response}\n\n"
    "Is the response's final answer correct? Reply YES or NO."
)
_VERDICT = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


class LLMJudgeTool(RewardTool):
    """YES/NO correctness judged by a chat model (module docstring)."""

    def __init__(
        self,
        spec: ToolSpec,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        client: LLMClient | None = None,
    ) -> None:
        self.spec = spec
        self._client_args: dict[str, Any] = {
            "base_url": base_url,
            "model": model,
            "api_key": api_key,
            "timeout": timeout,
        }
        self._client = client
        self._cache: dict[str, tuple[float | None, str, str]] = {}
        self._lock = threading.Lock()

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            try:
                self._client = LLMClient(**self._client_args)
            except ConfigError as exc:
                raise ConfigError(f"tool {self.spec.name!r}: {exc}") from exc
        return self._client

    @property
    def usage(self) -> TokenUsage:
        """Tokens of every call this judge made."""
        return self.client.usage

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        return [self._one(s) for s in samples]

    def _one(self, sample: Sample) -> Reward:
        if not sample.reference or not sample.reference.strip():
            return make_reward(self.spec, None, "invalid_reference", "the judge needs a reference")
        prompt = sample.prompt_text()[:MAX_PROMPT_CHARS]  # a question starts at its start
        response = clip_tail(sample.completion, MAX_RESPONSE_CHARS)
        key = hashlib.sha256(
            "\x00".join((prompt, response, sample.reference)).encode("utf-8")
        ).hexdigest()
        with self._lock:
            cached = self._cache.get(key)
        if cached is None:
            cached = self._ask(prompt, response, sample.reference)
            if cached[1] != "error":
                with self._lock:
                    if len(self._cache) >= CACHE_SIZE:
                        self._cache.clear()
                    self._cache[key] = cached
        score, status, reason = cached
        return make_reward(self.spec, score, status, reason)  # type: ignore[arg-type]

    def _ask(self, prompt: str, response: str, reference: str) -> tuple[float | None, str, str]:
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": USER_TEMPLATE.format(
                    prompt=prompt, reference=reference, response=response
                ),
            },
        ]
        try:
            answer = self.client.chat(messages, max_tokens=MAX_VERDICT_TOKENS).text
        except LLMError as exc:
            log.warning("judge %s: %s", self.spec.ref, exc)
            return 0.0, "error", f"judge call failed: {exc}"
        found = _VERDICT.search(answer)
        if found is None:
            return 0.0, "ok", f"judge said neither YES nor NO: {answer.strip()[:60]!r}"
        yes = found.group(1).lower() == "yes"
        return (1.0 if yes else 0.0), "ok", f"judge: {found.group(1).upper()}"

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
