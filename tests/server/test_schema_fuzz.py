"""The OpenAPI schema matches the server, and property-based fuzzing of every operation
(schemathesis: valid and invalid bodies, parameters and headers built from the schema)
finds no 5xx and no response that breaks the schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.generation import GenerationMode
from server_support import MAX_BATCH, MAX_BODY_BYTES, running_server

from rewardsmith.server import ServerConfig

# Fuzzed cases per operation and mode: enough to hit missing fields, wrong types, odd
# unicode and empty values, few enough for the default run on two cores.
EXAMPLES = 25


@pytest.fixture(scope="module")
def fuzz_server(server_library: Path) -> Iterator[str]:
    """Small limits; the rules router (no model to load) answers /v1/route."""
    config = ServerConfig(
        library=str(server_library),
        tool="gsm8k",
        router="rules",
        workers=2,
        max_batch=MAX_BATCH,
        max_body_bytes=MAX_BODY_BYTES,
    )
    with running_server(config) as url:
        yield url


def test_schema_documents_every_route_and_its_errors(server: str) -> None:
    spec = httpx.get(f"{server}/openapi.json").json()
    assert {"/v1/score", "/v1/openrlhf", "/v1/route", "/v1/tools", "/health", "/metrics"} <= set(
        spec["paths"]
    )
    score = spec["paths"]["/v1/score"]["post"]
    assert {"200", "401", "413", "422", "503"} <= set(score["responses"])
    body = spec["components"]["schemas"]["ScoreRequest"]
    assert body["required"] == ["samples"]
    sample = spec["components"]["schemas"]["SampleIn"]
    assert sample["required"] == ["completion"]
    reward = spec["components"]["schemas"]["RewardOut"]
    assert set(reward["properties"]) == {"score", "status", "components", "tool", "reason"}


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_input_gets_a_5xx(fuzz_server: str, mode: GenerationMode) -> None:
    schema = schemathesis.openapi.from_url(f"{fuzz_server}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 6
    for operation in operations:
        if mode is GenerationMode.NEGATIVE and operation.method.upper() == "GET":
            continue  # nothing to make invalid: the GET routes take no parameters

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def fuzz(case: schemathesis.Case) -> None:
            case.call_and_validate(
                checks=[
                    not_a_server_error,
                    status_code_conformance,
                    content_type_conformance,
                    response_schema_conformance,
                ]
            )

        fuzz()
