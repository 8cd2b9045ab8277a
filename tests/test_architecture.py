"""The package layers of docs/architecture.md, checked on the source: a module may import only
from its own package and from packages in lower layers, at module level or inside a function
alike (an import moved into a function to dodge a cycle is still an upward import)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "rewardsmith"

# Lowest first. A package may import from any package of a lower layer, never from its own
# layer's other packages or from above. Keep in step with docs/architecture.md.
LAYERS: list[set[str]] = [
    {"sandbox"},  # runs untrusted code: imports nothing else of rewardsmith
    {"types", "errors", "config"},
    {
        "files",
        "plaintext",
        "samples",
    },  # folders others may have prepared; text from data, made inert; the sample reader
    {"combine", "jsonl", "llm", "client", "answers", "reward_metrics"},
    {"models", "report", "exploits", "rollout_log"},  # HF loading; plots; exploit corpus
    {"library", "rm"},
    {"tools"},
    {"router"},
    {"synth"},
    {"scoring", "audit"},
    {"integrations", "bench"},
    {"rl"},
    {"search", "server", "rollouts"},
    {"cli"},
    {"__init__"},
]
RANK = {package: rank for rank, layer in enumerate(LAYERS) for package in layer}
MAX_LINES = 500


def package_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def rewardsmith_imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported package) for every import of rewardsmith in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "rewardsmith":
                found.append((node.lineno, parts[1] if len(parts) > 1 else "__init__"))
    return found


SOURCES = sorted(SRC.rglob("*.py"))


def test_every_package_has_a_layer() -> None:
    packages = {package_of(p) for p in SOURCES}
    assert packages - set(RANK) == set(), "add new packages to LAYERS and docs/architecture.md"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_only_go_down_the_layers(path: Path) -> None:
    own = package_of(path)
    if own not in RANK:
        pytest.skip("no layer yet (see test_every_package_has_a_layer)")
    upward = [
        f"line {line}: {own} imports {target}"
        for line, target in rewardsmith_imports(path)
        if target != own and RANK.get(target, len(LAYERS)) >= RANK[own]
    ]
    assert upward == []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SRC)))
def test_files_stay_small(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{lines} lines: split it by responsibility"
