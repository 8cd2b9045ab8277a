"""A reward function as many projects write it: 1.0 when the reference appears in the
completion. Public audits found this kind of check accepts a large share of wrong answers;
`rewardsmith audit examples/audit/contains_reference.py --examples examples/audit/gsm8k.jsonl`
measures how large."""


def reward(completions, solution=None, **kwargs):
    """TRL-style: one score per completion."""
    out = []
    for completion, reference in zip(completions, solution or [], strict=False):
        gold = reference.rpartition("####")[2].strip()
        out.append(1.0 if gold and gold in completion else 0.0)
    return out
