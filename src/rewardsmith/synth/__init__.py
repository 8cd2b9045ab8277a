"""Tool synthesis: the library grows when the data brings a task no tool grades.

- `primitives`: reward-program building blocks (extractors, normalizers, comparators), the
  compositions made of them and their rendering as readable Python; shared with the
  reward-function search (mutation and crossover);
- `codeverify` (offline search), `codeverify_llm` (an OpenAI-compatible model writes the
  code), `pipeline.codeverify` (examples in, gated tool out);
- `wrapllm`: find, calibrate and wrap a local reward model;
- `gate`, `probes`: the admission gate (held-out accuracy and AUC, reward-hacking probes);
- `admission`: build, gate and store a candidate (admitted, or retired with its reasons);
- `session`: synthesis while scoring (`Scorer(..., synthesize=True)`).

Nothing here imports torch at import time. See docs/synthesis.md.
"""

from rewardsmith.synth.admission import SynthOutcome
from rewardsmith.synth.examples import Example, load_examples
from rewardsmith.synth.gate import GateConfig, GateReport, gate_tool
from rewardsmith.synth.pipeline import codeverify
from rewardsmith.synth.wrapllm import wrapllm

__all__ = [
    "Example",
    "GateConfig",
    "GateReport",
    "SynthOutcome",
    "codeverify",
    "gate_tool",
    "load_examples",
    "wrapllm",
]
