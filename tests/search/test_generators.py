"""Generators: the offline one breeds from the ranking (better parents more often, rejected
ones never, nothing tried twice); the LLM one sends the task, the signature, the rules and
the ranking summary, and its rejected answers are kept and fed back."""

from __future__ import annotations

import collections
import random
from pathlib import Path

from search_helpers import crafted_pool

from fake_llm import chat_body, fake_llm
from rewardsmith.llm.client import LLMClient
from rewardsmith.search.feedback import Feedback
from rewardsmith.search.generator import OfflineGenerator, candidate_name
from rewardsmith.search.llm_generator import LLMGenerator
from rewardsmith.search.loop import Search, SearchConfig
from rewardsmith.search.program import RewardProgram, random_program
from rewardsmith.search.results import CandidateRecord, RunDir
from rewardsmith.search.task import TESTBED_TASK


def _record(name: str, fitness: float, genome: RewardProgram | None, admitted: bool = True):
    return CandidateRecord(
        round=1,
        name=name,
        generator="offline",
        admitted=admitted,
        stage=4 if admitted else 1,
        reason="admitted"
        if admitted
        else "stage 1 (static): line 1: import of 'os' is not allowed",
        proxy={"fitness": fitness, "separation": fitness, "probe_payout": 0.0}
        if admitted
        else None,
        genome=genome.to_dict() if genome else None,
    )


def test_offline_round_one_is_random_and_names_are_unique() -> None:
    proposals = OfflineGenerator(TESTBED_TASK, seed=1).propose(1, 10, Feedback(round=1))
    assert len({p.name for p in proposals}) == 10
    assert all(p.origin == "a random program" and p.genome for p in proposals)
    assert all(p.name.startswith("r1_") for p in proposals)


def test_offline_breeds_better_ranked_parents_more_often() -> None:
    rng = random.Random(0)
    records = [_record(f"r1_{i:02d}", 1.0 - i / 10, random_program(rng)) for i in range(6)]
    records.append(_record("r1_bad", 0.0, random_program(rng), admitted=False))
    feedback = Feedback.build(2, records, {})
    counts: collections.Counter[str] = collections.Counter()
    for seed in range(40):
        for p in OfflineGenerator(TESTBED_TASK, seed=seed).propose(2, 10, feedback):
            counts.update(p.parents)
    assert "r1_bad" not in counts
    assert counts["r1_00"] > counts["r1_05"] * 2
    tried = {RewardProgram.from_dict(r.genome) for r in records if r.genome}
    for p in OfflineGenerator(TESTBED_TASK, seed=3).propose(2, 10, feedback):
        assert RewardProgram.from_dict(p.genome) not in tried


def test_offline_is_deterministic_for_a_seed_and_resumes_mid_round() -> None:
    feedback = Feedback(round=1)
    a = OfflineGenerator(TESTBED_TASK, seed=5).propose(1, 6, feedback)
    b = OfflineGenerator(TESTBED_TASK, seed=5).propose(1, 6, feedback, start=4)
    assert [p.source for p in a[3:]] == [p.source for p in b]


def test_candidate_names_are_safe() -> None:
    assert candidate_name(3, 7, "Count the ../../ Lines!") == "r3_07_count_the_lines"
    assert candidate_name(1, 1) == "r1_01"


GOOD = """```python
# name: equation checker
import re
BOUNDS = (0.0, 1.0)

def reward(completions, references, prompts=None, **kwargs):
    return [1.0 if re.search(r"\\d+\\*\\d+=\\d+", c or "") else 0.0 for c in completions]
```"""
BAD = "```python\nimport os\ndef reward(completions, references, prompts=None):\n    return [0.0]\n```"
PROSE = "Sure! A good reward would count the steps of the reasoning."


def test_llm_prompt_holds_task_signature_rules_and_ranking() -> None:
    rng = random.Random(0)
    records = [_record("r1_01_best", 0.9, random_program(rng))]
    records.append(_record("r1_02_bad", 0.0, None, admitted=False))
    feedback = Feedback.build(2, records, {"r1_01_best": "+1.00 x answer_correct"})
    with fake_llm([(200, chat_body(GOOD))]) as fake:
        gen = LLMGenerator(TESTBED_TASK, crafted_pool(), LLMClient(base_url=fake.url), seed=1)
        (proposal,) = gen.propose(2, 1, feedback)
        prompt = fake.requests[0]["body"]["messages"][1]["content"]
    assert "def reward(completions, references, prompts=None, **kwargs)" in prompt
    assert '"prompt":' in prompt and '"a right response":' in prompt  # quoted data
    assert "import only these modules" in prompt
    assert "r1_01_best" in prompt and "+1.00 x answer_correct" in prompt
    # the rejected candidate and why
    assert "r1_02_bad" in prompt and "stage 1" in prompt
    assert "format_tags, format_tags_approx, gsm8k" in prompt
    assert proposal.name == "r2_01_equation_checker"
    assert proposal.source.startswith("# name: equation checker")
    assert gen.told(feedback, 1).startswith("## system")


def test_llm_candidates_mostly_rejected_are_kept_and_fed_back(
    tiny_task: Path, tmp_path: Path
) -> None:
    replies = [(200, chat_body(BAD)), (200, chat_body(PROSE)), (200, chat_body(GOOD))]
    with fake_llm(replies) as fake:
        config = SearchConfig(
            task=str(tiny_task), rounds=2, per_round=3, generator="llm", fidelity="proxy"
        )
        search = Search(config, tmp_path / "run", llm_client=LLMClient(base_url=fake.url))
        try:
            records = search.run()
        finally:
            search.close()
        round2_prompt = fake.requests[3]["body"]["messages"][1]["content"]
    rd = RunDir(tmp_path / "run")
    by_name = {r.name: r for r in records}
    first = sorted((r for r in records if r.round == 1), key=lambda r: r.name)
    assert [r.admitted for r in first] == [False, False, True]
    assert first[0].stage == 1 and "import of 'os'" in first[0].reason
    assert first[1].stage == 1 and "syntax error" in first[1].reason
    assert rd.source_path(first[0].name).read_text().startswith("import os")
    # round 2 was told about both rejections, and the file holds what it was told
    told = rd.read_feedback(2)
    assert told is not None
    for r in first[:2]:
        assert r.name in round2_prompt and r.name in told
    assert "r1_03_equation_checker" in round2_prompt
    assert by_name["r1_03_equation_checker"].proxy is not None
    assert by_name["r1_03_equation_checker"].details["model"] == "fake"
