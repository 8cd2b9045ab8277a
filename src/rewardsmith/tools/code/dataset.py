"""Turn HumanEval and MBPP records into rewardsmith samples for the `code` tool.

Field mapping (the reference carries the tests as JSON, which `rewardsmith.tools.code` reads):

| dataset | prompt | reference | completion (`--completion canonical`) |
|---|---|---|---|
| HumanEval (`task_id, prompt, entry_point, canonical_solution, test`) | `prompt` | `{prompt, test, entry_point}` | `canonical_solution` (a body continuing the prompt) |
| MBPP (`task_id, prompt` or `text`, `code, test_list, test_imports`) | the task text and its tests, as in the MBPP paper | `{test_list, test_imports}` (+ `test_setup_code`) | `code` |

`completion` may also be `"return_none"` (HumanEval: the body replaced by `return None`;
MBPP: every function returns None), a negative control that must score below 1.0, or
`"empty"` (for filling in completions from a policy later).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from rewardsmith.errors import InputError
from rewardsmith.jsonl import read_jsonl
from rewardsmith.tools.code.split import parse_quietly

CompletionChoice = Literal["canonical", "return_none", "empty"]
COMPLETION_CHOICES: tuple[CompletionChoice, ...] = ("canonical", "return_none", "empty")


def read_dataset(path: Path) -> list[dict[str, Any]]:
    """Records from `.jsonl`, `.jsonl.gz` or a `.json` array (MBPP's sanitized file); a bad
    line raises `InputError` naming the path and the line."""
    records: list[dict[str, Any]] = read_jsonl(path, allow_array=True)
    return records


def dataset_kind(record: Mapping[str, Any]) -> Literal["humaneval", "mbpp"]:
    if "entry_point" in record and "test" in record:
        return "humaneval"
    if "test_list" in record:
        return "mbpp"
    raise InputError(
        f"unknown code record with fields {sorted(record)}: expected HumanEval "
        "(prompt, test, entry_point) or MBPP (test_list)"
    )


def humaneval_sample(record: Mapping[str, Any], completion: CompletionChoice) -> dict[str, Any]:
    reference = {k: record[k] for k in ("prompt", "test", "entry_point")}
    text = {
        "canonical": record.get("canonical_solution", ""),
        "return_none": "    return None\n",
        "empty": "",
    }[completion]
    return {
        "id": record.get("task_id"),
        "prompt": record["prompt"],
        "completion": text,
        "reference": json.dumps(reference),
        "task": "humaneval",
    }


def mbpp_sample(record: Mapping[str, Any], completion: CompletionChoice) -> dict[str, Any]:
    tests = list(record["test_list"])
    reference: dict[str, Any] = {"test_list": tests, "test_imports": record.get("test_imports", [])}
    if record.get("test_setup_code"):
        reference["test_setup_code"] = record["test_setup_code"]
    task = record.get("prompt") or record.get("text") or ""
    prompt = f"{task} Your code should pass these tests:\n\n" + "\n".join(tests)
    code = record.get("code", "")
    text = code if completion == "canonical" else ""
    if completion == "return_none":
        text = _stub_functions(code)
    return {
        "id": str(record.get("task_id")),
        "prompt": prompt,
        "completion": text,
        "reference": json.dumps(reference),
        "task": "mbpp",
    }


def _stub_functions(code: str) -> str:
    """The same top-level functions, each with the body `return None`."""
    try:
        module = parse_quietly(code)
    except SyntaxError:
        return "pass\n"
    lines = []
    for node in module.body:
        if isinstance(node, ast.FunctionDef):
            lines.append(f"def {node.name}({ast.unparse(node.args)}):\n    return None\n")
    return "\n".join(lines) or "pass\n"


def to_samples(
    records: Iterable[Mapping[str, Any]], completion: CompletionChoice = "canonical"
) -> Iterator[dict[str, Any]]:
    """Samples (JSONL input lines) for the `code` tool, one per record."""
    if completion not in COMPLETION_CHOICES:
        raise InputError(f"completion must be one of {COMPLETION_CHOICES}, got {completion!r}")
    for record in records:
        if dataset_kind(record) == "humaneval":
            yield humaneval_sample(record, completion)
        else:
            yield mbpp_sample(record, completion)
