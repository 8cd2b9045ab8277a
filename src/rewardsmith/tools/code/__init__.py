"""The `code` tool: a completion's program run against the tests in its reference, in the
sandbox, each test's verdict decided where the program cannot reach it.

One tool in several files, each one step of the way a reference becomes a verdict:

| file | what it holds |
|---|---|
| `tool.py` | `CodeTool`: the tool the library builds (`rewardsmith.tools.code:CodeTool`) |
| `suite.py` | the program in a completion, the tests in a reference (HumanEval, MBPP, stdin/stdout, assertions) |
| `split.py` | each test split into what the program's process runs and what is decided outside it |
| `ownership.py` | whose each name in test code is: the program's, or the test's own |
| `inputs.py` | what the program's process receives of a test: calls, holes, prepared values |
| `plan.py` | where each test is decided, and the judge run that prepares values once per suite |
| `screen.py` | which checks a judge run may evaluate (none that could run a returned value as code) |
| `verdict.py` | the runs' records read, each test decided |
| `dataset.py` | HumanEval and MBPP records turned into samples (`rewardsmith convert`) |
"""

from rewardsmith.tools.code.suite import extract_code, parse_reference
from rewardsmith.tools.code.tool import CodeTool

__all__ = ["CodeTool", "extract_code", "parse_reference"]
