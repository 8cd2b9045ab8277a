"""An exact-answer reward with a last-number extractor, the "flexible" GSM8K rule many
training scripts use: the last number of the completion must equal the reference's."""

import re

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """veRL-style: a score for one completion."""
    found = NUMBER.findall(solution_str.replace(",", ""))
    gold = ground_truth.rpartition("####")[2].strip().replace(",", "")
    return 1.0 if found and found[-1] == gold else 0.0
