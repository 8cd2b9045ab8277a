"""The OpenRLHF flags the documentation tells users to pass are flags of the pinned OpenRLHF
(0.11.2, installed by `make`): read from its own argument parsers' source, since importing
its CLI needs its GPU stack."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from support import REPO_ROOT

# The first-hour pages record what a user saw before a fix (the old flags among it): they
# are history, not instructions.
DOCS = [
    REPO_ROOT / "README.md",
    *sorted(p for p in (REPO_ROOT / "docs").glob("*.md") if not p.name.startswith("first-hour")),
]
SOURCES = sorted((REPO_ROOT / "src" / "rewardsmith").rglob("*.py"))
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+")  # OpenRLHF's dotted flags
# Names OpenRLHF no longer has (0.11 moved every flag into a dotted group).
OLD_NAMES = ("--remote_rm_url", "--label_key", "--input_key", "--prompt_data",
             "--reward_pretrain", "--advantage_estimator", "--n_samples_per_prompt",
             "--apply_chat_template")  # fmt: skip


def openrlhf_flags() -> set[str]:
    spec = importlib.util.find_spec("openrlhf")
    if spec is None or spec.origin is None:
        pytest.skip("openrlhf is not installed (make installs 0.11.2 with --no-deps)")
    cli = Path(spec.origin).parent / "cli"
    flags: set[str] = set()
    for script in ("train_ppo_ray.py", "serve_rm.py"):
        text = (cli / script).read_text(encoding="utf-8")
        flags |= set(re.findall(r"add_argument\(\s*f?\"(--[^\"]+)\"", text))
        # flags built in a loop: f"--{prefix}.adam.lr" for the actor and the critic
        for template in re.findall(r"add_argument\(\s*f\"(--\{prefix\}[^\"]+)\"", text):
            flags |= {template.replace("{prefix}", p) for p in ("actor", "critic")}
    return flags


@pytest.mark.parametrize("path", DOCS + SOURCES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_documented_openrlhf_flags_exist_in_the_pinned_release(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    old = [name for name in OLD_NAMES if re.search(re.escape(name) + r"(?![\w.])", text)]
    assert old == [], f"{path.name}: OpenRLHF 0.11.2 has no {old}"
    if "openrlhf" not in text.lower():
        return
    unknown = sorted(set(FLAG.findall(text)) - openrlhf_flags())
    assert unknown == [], f"{path.name}: not OpenRLHF 0.11.2 flags: {unknown}"
