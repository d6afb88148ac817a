"""Fuzz every ``/v1`` route from the app's own OpenAPI schema (schemathesis), against a real server.

Valid and invalid bodies, parameters and content types: no reply may be a server error (503
"busy" aside), every reply must match what its route declares (status, content type, JSON
schema), and the server must be healthy afterwards. Bounded: a few examples per operation, so
the whole module takes well under three minutes on a CI machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from tests.support.app_server import serve_app
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance, status_code_conformance

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 8  # per operation: ~8 operations, each example a short request (speech ones a few seconds at most)
CALL_TIMEOUT_S = 60
MAX_INPUT_CHARS = 16  # speech per example stays a second or two

schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[str]:
    env = {"GRADIO_TEMP_DIR": str(tmp_path_factory.mktemp("fuzz_uploads"))}
    with serve_app(artifacts_dir / "fuzz_server.log", extra_env=env) as (base, _process):
        yield base


@pytest.fixture(scope="module")
def api_schema(fuzz_server: str) -> schemathesis.BaseSchema:
    loaded = schemathesis.openapi.from_url(f"{fuzz_server}/v1/openapi.json")
    paths = {operation.path for operation in (result.ok() for result in loaded.get_all_operations())}
    assert paths and all(path.startswith("/v1/") for path in paths), paths
    return loaded


def no_server_error(ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case) -> bool | None:
    """Any 5xx but 503 (the engine or the document queue is full: a retry-later the route declares) is a bug."""
    if response.status_code >= 500 and response.status_code != 503:
        raise AssertionError(f"{case.method} {case.path}: server error {response.status_code}: {response.text[:300]}")
    return None


CHECKS = [no_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_v1_routes_hold_under_fuzzing(case: schemathesis.Case, fuzz_server: str) -> None:
    if isinstance(case.body, dict) and isinstance(case.body.get("input"), str) and case.body["input"]:
        # Any text the schema allows is fair game, but minutes of speech per example would not fit the time
        # bound: the first characters keep what is hostile in them (odd code points, markup, digits).
        case.body["input"] = case.body["input"][:MAX_INPUT_CHARS]
    case.call_and_validate(base_url=fuzz_server, checks=CHECKS, timeout=CALL_TIMEOUT_S)


def test_the_server_is_healthy_after_the_fuzzing(fuzz_server: str) -> None:
    assert httpx.get(f"{fuzz_server}/healthz", timeout=10).status_code == 200
    reply = httpx.post(f"{fuzz_server}/v1/audio/speech", json={"model": "tts-1", "input": "Still here.", "response_format": "wav", "stream": False},
                       timeout=120)
    assert reply.status_code == 200 and reply.content[:4] == b"RIFF"
