"""The TRL adapter: TRL's reward-function signature, None for "not applicable", pickling,
and a real `trl.GRPOTrainer` run that calls rewardsmith for its rewards."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.integrations.trl import RewardFunction, completion_text, reward_funcs
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec
from tiny_trl import tiny_llama, two_step_grpo_config


class RecordingTool(RewardTool):
    """Scores 1.0 when the completion contains a digit; remembers every sample and score.

    Rows whose reference is "n/a" are not applicable. Module-level, so it pickles.
    """

    spec = ToolSpec(name="recording", provenance="user", needs_reference=False)

    def __init__(self) -> None:
        self.seen: list[Sample] = []
        self.batches: list[list[float | None]] = []

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        out = []
        for s in samples:
            if s.reference == "n/a":
                out.append(Reward(None, "not_applicable", tool=self.spec.ref))
            else:
                has_digit = any(ch.isdigit() for ch in s.completion)
                out.append(Reward(1.0 if has_digit else 0.0, tool=self.spec.ref))
        self.seen.extend(samples)
        self.batches.append([r.score for r in out])
        return out


@pytest.fixture
def library(tmp_path: Path) -> Path:
    return tmp_path / "library.db"


# -- the call TRL makes ---------------------------------------------------------------------


def test_gsm8k_scores_plain_completions_against_the_solution_column(library: Path) -> None:
    (gsm8k,) = reward_funcs("gsm8k", library=library)
    rewards = gsm8k(
        prompts=["What is 2+2?"] * 4,
        completions=[
            "2 + 2 = 4. #### 4",  # marked final answer
            "The answer is 4.",  # answer phrase
            "I think it is 5",  # wrong last number
            "no idea",  # no number at all: 0.0, not None
        ],
        solution=["4"] * 4,
    )
    assert rewards == [1.0, 1.0, 0.0, 0.0]


def test_extra_trl_kwargs_are_accepted_and_status_is_logged(library: Path) -> None:
    (fmt,) = reward_funcs("format_tags", library=library)
    extra: dict[str, list[Any]] = {}
    rewards = fmt(
        prompts=["q", "q"],
        completions=["<thinking>a</thinking><solution>b</solution>", "b"],
        completion_ids=[[1, 2], [3]],
        trainer_state=object(),
        log_extra=lambda column, values: extra.setdefault(column, values),
        log_metric=lambda name, value: None,
        some_other_column=["x", "y"],
    )
    assert rewards == [1.0, 0.0]
    assert extra == {"rewardsmith_format_tags/status": ["ok", "ok"]}


def test_components_and_unscored_share_go_to_log_metric(library: Path) -> None:
    (gated,) = reward_funcs("gsm8k_with_format", library=library)
    metrics: dict[str, float] = {}
    gated(
        prompts=["q", "q", "q"],
        completions=[
            "<thinking>2+2</thinking><solution>4</solution>",
            "4",
            "<thinking>x</thinking><solution>4</solution>",
        ],
        solution=["4", "4", "not a number"],
        log_metric=metrics.__setitem__,
    )
    assert metrics["rewardsmith/gsm8k_with_format/not_applicable_frac"] == pytest.approx(1 / 3)
    assert metrics["rewardsmith/gsm8k_with_format/failed_frac"] == 0.0
    assert metrics["rewardsmith/gsm8k_with_format/format_tags"] == pytest.approx(2 / 3)


def test_one_function_over_several_tasks_logs_each_task(library: Path, tmp_path: Path) -> None:
    (func,) = reward_funcs(
        "gsm8k", task_map={"fmt": "format_tags"}, library=library, rollout_log=tmp_path / "r.jsonl"
    )
    # the name says every tool the function covers, not just its fallback
    assert func.__name__ == "rewardsmith_gsm8k+format_tags"
    metrics: dict[str, float] = {}
    func(
        prompts=["q1", "q1", "q2", "q3"],
        completions=["#### 4", "#### 5", "<thinking>a</thinking><solution>b</solution>", "#### 4"],
        solution=["4", "4", "", "not a number"],
        task=["math", "math", "fmt", "math"],
        log_metric=metrics.__setitem__,
    )
    # rewardsmith/<task>/<tool>/...: one scheme for every trainer (rewardsmith.reward_metrics)
    assert metrics["rewardsmith/math/gsm8k/mean"] == pytest.approx(0.5)
    assert metrics["rewardsmith/math/gsm8k/not_scored_frac"] == pytest.approx(1 / 3)
    assert metrics["rewardsmith/fmt/format_tags/mean"] == 1.0
    assert metrics["rewardsmith/fmt/format_tags/not_scored_frac"] == 0.0
    # the rollout log holds every scored completion, readable by rescore/compare/profile
    from rewardsmith.rollout_log import read_rollouts

    rows = read_rollouts(tmp_path / "r.jsonl")
    assert [r.stored.score if r.stored else None for r in rows] == [1.0, 0.0, 1.0, None]
    assert [r.sample.task for r in rows] == ["math", "math", "fmt", "math"]
    assert rows[0].group == rows[1].group != rows[2].group  # a prompt's completions: one group
    assert rows[3].stored is not None and rows[3].stored.status == "invalid_reference"


# -- conversational data --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # TRL's conversational completion: one assistant message
        ([{"role": "assistant", "content": "#### 4"}], "#### 4"),
        # several messages: the last assistant one counts, not a later tool message
        (
            [
                {"role": "assistant", "content": "first"},
                {"role": "assistant", "content": "final"},
                {"role": "tool", "content": "tool output"},
            ],
            "final",
        ),
        # multimodal content parts: the text parts joined
        ([{"role": "assistant", "content": [{"type": "text", "text": "#### 4"}]}], "#### 4"),
        # no role given: the last message
        ([{"content": "x"}], "x"),
        # plain strings pass through
        ("plain", "plain"),
    ],
)
def test_completion_text(completion: Any, expected: str) -> None:
    assert completion_text(completion) == expected


def test_conversational_prompts_and_completions(library: Path) -> None:
    (gsm8k,) = reward_funcs("gsm8k", library=library)
    prompts = [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]]
    completions = [[{"role": "assistant", "content": "It is 4."}]]
    assert gsm8k(prompts * 2, completions * 2, answer=["4", "5"]) == [1.0, 0.0]
    sample = gsm8k.samples(prompts, completions, {"answer": ["4"]})[0]
    assert sample.completion == "It is 4."
    assert sample.prompt_text() == "system: Be brief.\nuser: 2+2?"


# -- which column is the reference ----------------------------------------------------------


@pytest.mark.parametrize(
    ("columns", "reference_column", "expected"),
    [
        # "reference" wins over the other conventional names
        ({"reference": ["4"], "solution": ["5"], "answer": ["6"]}, None, "4"),
        ({"solution": ["5"], "answer": ["6"]}, None, "5"),
        ({"answer": ["6"], "ground_truth": ["7"]}, None, "6"),
        ({"ground_truth": ["7"]}, None, "7"),
        # an explicit column beats the conventional ones
        ({"solution": ["5"], "gold": ["8"]}, "gold", "8"),
        # non-string cells become text: numbers, and JSON for structures
        ({"answer": [6]}, None, "6"),
        ({"answer": [{"a": 1}]}, None, '{"a": 1}'),
        # no reference column at all
        ({"other": ["x"]}, None, None),
    ],
)
def test_reference_column_choice(
    library: Path, columns: dict[str, list[Any]], reference_column: str | None, expected: Any
) -> None:
    (func,) = reward_funcs("gsm8k", library=library, reference_column=reference_column)
    assert func.samples(["q"], ["c"], columns)[0].reference == expected


def test_missing_named_reference_column_is_a_clear_error(library: Path) -> None:
    (func,) = reward_funcs("gsm8k", library=library, reference_column="gold")
    with pytest.raises(ConfigError, match=r"'gold'.*\['solution'\]"):
        func(["q"], ["c"], solution=["4"], trainer_state=None)


# -- None where the reward does not apply ---------------------------------------------------


def test_none_for_not_applicable_and_invalid_reference(library: Path) -> None:
    (func,) = reward_funcs(RecordingTool(), library=library)
    assert func(["q"] * 3, ["1", "a", "2"], reference=["x", "x", "n/a"]) == [1.0, 0.0, None]
    (gsm8k,) = reward_funcs("gsm8k", library=library)
    # an unusable reference cannot be scored either way: None, not a 0.0 that would teach
    assert gsm8k(["q", "q"], ["4", "4"], solution=["4", "four-ish"]) == [1.0, None]


def test_task_map_routes_rows_and_unmapped_tasks_get_none(library: Path) -> None:
    (routed,) = reward_funcs(
        None, task_map={"gsm8k": "gsm8k", "fmt": "format_tags"}, library=library
    )
    # named after every tool it routes to, not one (TRL logs rewards/<name>/mean)
    assert routed.__name__ == "rewardsmith_gsm8k+format_tags"
    rewards = routed(
        ["q"] * 3,
        ["#### 4", "<thinking>a</thinking><solution>b</solution>", "#### 4"],
        solution=["4", "", "4"],
        task=["gsm8k", "fmt", "translation"],
    )
    assert rewards == [1.0, 1.0, None]
    # with a default tool, unmapped tasks fall back to it
    (fallback,) = reward_funcs("gsm8k", task_map={"fmt": "format_tags"}, library=library)
    assert fallback(["q", "q"], ["#### 4", "#### 4"], solution=["4", "4"], task=["x", "fmt"]) == [
        1.0,
        0.0,
    ]


# -- construction ---------------------------------------------------------------------------


def test_one_named_function_per_tool(library: Path) -> None:
    funcs = reward_funcs(["gsm8k", "format_tags", RecordingTool()], library=library)
    assert [f.__name__ for f in funcs] == [
        "rewardsmith_gsm8k",
        "rewardsmith_format_tags",
        "rewardsmith_recording",
    ]
    assert all(isinstance(f, RewardFunction) for f in funcs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tools": ["gsm8k", "format_tags"], "task_map": {"m": "math"}}, "single tool"),
        ({"tools": ["gsm8k", "gsm8k"]}, "listed twice"),
        ({"tools": []}, "at least one tool"),
        ({"tools": None}, "a tool, a task_map"),
    ],
)
def test_bad_configurations_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        reward_funcs(**kwargs)


def test_unknown_tool_fails_at_construction_naming_the_known_ones(library: Path) -> None:
    # before the trainer loads a model and generates, not at the first reward call
    with pytest.raises(KeyError, match="known tools: .*gsm8k"):
        reward_funcs("no_such_tool", library=library)
    with pytest.raises(KeyError, match="'nope'"):
        reward_funcs("gsm8k", task_map={"x": "nope"}, library=library)


# -- pickling -------------------------------------------------------------------------------


def test_pickle_round_trip_before_and_after_use(library: Path) -> None:
    funcs = reward_funcs(["gsm8k", "format_tags"], library=library)
    fresh = [pickle.loads(pickle.dumps(f)) for f in funcs]
    args = (["q"], ["<thinking>2+2</thinking><solution>4</solution>"])
    assert [f(*args, solution=["4"]) for f in fresh] == [[1.0], [1.0]]

    used = funcs[0]
    used(*args, solution=["4"])
    assert used._scorer is not None
    clone = pickle.loads(pickle.dumps(used))
    assert clone._scorer is None  # the SQLite connection stays behind
    assert clone.__name__ == "rewardsmith_gsm8k"
    assert clone.library == str(library)
    assert clone(*args, solution=["5"]) == [0.0]


def test_a_library_object_is_kept_as_its_path(tmp_path: Path) -> None:
    from rewardsmith.library.store import Library

    with Library(tmp_path / "lib.db") as lib:
        (func,) = reward_funcs("gsm8k", library=lib)
    clone = pickle.loads(pickle.dumps(func))
    assert clone.library == str(tmp_path / "lib.db")
    assert clone(["q"], ["#### 3"], answer=["3"]) == [1.0]


# -- inside a real GRPOTrainer --------------------------------------------------------------

_WORDS = ["<pad>", "<eos>", "<unk>", "what", "is", "plus", "the", "answer", "####"]
_WORDS += ["<thinking>", "</thinking>", "<solution>", "</solution>"]
_WORDS += [str(i) for i in range(20)]
_PROBLEMS = [(1, 2), (3, 4), (5, 6), (2, 2)]


def _tiny_tokenizer() -> Any:
    """A word-level tokenizer over a 33-word vocabulary, built in memory."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(_WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )


def test_grpo_trainer_trains_two_steps_on_rewardsmith_rewards(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from datasets import Dataset
    from trl import GRPOTrainer

    model = tiny_llama(len(_WORDS), 64, pad_token_id=0, bos_token_id=1, eos_token_id=1)
    dataset = Dataset.from_dict(
        {
            "prompt": [f"what is {a} plus {b}" for a, b in _PROBLEMS],
            "solution": [str(a + b) for a, b in _PROBLEMS],
        }
    )
    library = tmp_path / "library.db"
    recorder = RecordingTool()
    funcs = reward_funcs(["gsm8k", "format_tags"], library=library)
    funcs += reward_funcs(recorder, library=library)
    args = two_step_grpo_config(tmp_path / "out")
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=funcs,
        args=args,
        train_dataset=dataset,
        processing_class=_tiny_tokenizer(),
    )
    trainer.train()

    assert trainer.state.global_step == 2
    # the trainer called every rewardsmith function once per generation batch
    assert [f.calls for f in funcs] == [2, 2, 2]
    step_logs = [h for h in trainer.state.log_history if "reward" in h]
    assert len(step_logs) == 2
    for log, scores in zip(step_logs, recorder.batches, strict=True):
        for name in ("rewardsmith_gsm8k", "rewardsmith_format_tags", "rewardsmith_recording"):
            assert f"rewards/{name}/mean" in log
        # what rewardsmith returned is what the trainer logged
        expected = sum(s for s in scores if s is not None) / len(scores)
        assert log["rewards/rewardsmith_recording/mean"] == pytest.approx(expected)
        assert "rewardsmith/gsm8k/not_applicable_frac" in log
        # per-task metrics: this dataset has no task column
        assert "rewardsmith/no_task/gsm8k/mean" in log
        assert "rewardsmith/no_task/gsm8k/not_scored_frac" in log
    # each completion was scored against the solution of its own prompt
    assert len(recorder.seen) == 8
    for sample in recorder.seen:
        a, b = (int(w) for w in str(sample.prompt).split() if w.isdigit())
        assert sample.reference == str(a + b)
