"""`rewardsmith serve` and the `--ray [ADDRESS]` option's optional value."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rewardsmith.cli.main import app
from rewardsmith.cli.serve import LOCAL_RAY, expand_ray_flag


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # bare --ray before another option, before the input file, or last: a local Ray
        (["serve", "--ray", "--port", "1"], ["serve", "--ray", LOCAL_RAY, "--port", "1"]),
        (["score", "--ray", "in.jsonl"], ["score", "--ray", LOCAL_RAY, "in.jsonl"]),
        (
            ["score", "in.jsonl", "-o", "o", "--ray"],
            ["score", "in.jsonl", "-o", "o", "--ray", LOCAL_RAY],
        ),
        # an address is kept
        (["serve", "--ray", "auto"], ["serve", "--ray", "auto"]),
        (["serve", "--ray", "ray://head:10001"], ["serve", "--ray", "ray://head:10001"]),
        (["serve", "--ray", "10.0.0.5:6379"], ["serve", "--ray", "10.0.0.5:6379"]),
        (["serve", "--ray=auto"], ["serve", "--ray=auto"]),
        # no --ray: unchanged
        (["score", "in.jsonl", "-o", "o"], ["score", "in.jsonl", "-o", "o"]),
    ],
)
def test_bare_ray_flag_means_a_local_ray(argv: list[str], expected: list[str]) -> None:
    assert expand_ray_flag(argv) == expected


def test_serve_refuses_a_public_bind_without_a_token() -> None:
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code != 0
    assert "without a token" in str(result.exception)


def test_serve_help_lists_the_documented_options() -> None:
    result = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    for option in (
        "--host",
        "--port",
        "--token",
        "--library",
        "--tool",
        "--task-map",
        "--synthesize",
        "--ray",
    ):
        assert option in result.output
