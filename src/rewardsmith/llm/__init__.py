"""OpenAI-compatible LLM access with token accounting (router, judges, generators)."""

from rewardsmith.llm.client import ChatResult, LLMClient, TokenUsage

__all__ = ["ChatResult", "LLMClient", "TokenUsage"]
