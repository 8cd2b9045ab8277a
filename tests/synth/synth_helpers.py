"""Helpers shared by the synthesis tests (imported as `synth_helpers`)."""

from __future__ import annotations

import random

TOPICS = ["apple", "river", "engine", "violin", "planet", "garden", "copper", "winter"]


def topic_text(word: str, rng: random.Random, n: int = 40) -> str:
    """A document about one word: the kind of text whose continuation an RBS model learns."""
    return " ".join(rng.choice([word, word, word, "the", "a", "of"]) for _ in range(n))
