"""The README's Python example runs as printed."""

from __future__ import annotations

import re

from support import REPO_ROOT


def test_readme_python_example_runs() -> None:
    text = (REPO_ROOT / "README.md").read_text()
    block = re.search(r"```python\n(from rewardsmith import .*?)```", text, re.S)
    assert block is not None, "README lost its Python example"
    exec(compile(block.group(1), "README.md", "exec"), {})  # noqa: S102 - our own README
