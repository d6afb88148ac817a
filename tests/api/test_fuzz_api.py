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
    # Every example comes from one address: room for many short documents at once, so the fuzzer's jobs are
    # started (and followed) rather than refused by the per-client caps the other tests check.
    env = {"GRADIO_TEMP_DIR": str(tmp_path_factory.mktemp("fuzz_uploads")), "TTS_APP_DOCUMENTS_RUNNING": "8",
           "TTS_APP_DOCUMENTS_WAITING": "8", "TTS_APP_DOCUMENTS_PER_CLIENT": "1000", "TTS_APP_DOCUMENTS_MAX_KEPT": "1000"}
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
    # Any text the schema allows is fair game, but minutes of speech per example would not fit the time
    # bound: the first characters keep what is hostile in them (odd code points, markup, digits).
    _short_input(case)
    case.call_and_validate(base_url=fuzz_server, checks=CHECKS, timeout=CALL_TIMEOUT_S)


def _short_input(case: schemathesis.Case) -> None:
    if isinstance(case.body, dict) and isinstance(case.body.get("input"), str) and case.body["input"]:
        case.body["input"] = case.body["input"][:MAX_INPUT_CHARS]


def test_document_jobs_hold_under_stateful_fuzzing(api_schema: schemathesis.BaseSchema, fuzz_server: str) -> None:
    """Issue 46: the schema links ``POST /v1/documents`` to its id routes (and a share to its routes), so the
    fuzzer follows a real job: progress, files, stop, share, unshare and the shared routes with the ids the
    server gave, each reply checked as above. Before, it only ever met 404 for made-up ids."""
    followed: set[str] = set()

    class Documents(api_schema.as_state_machine()):  # type: ignore[misc]
        def before_call(self, case: schemathesis.Case) -> None:
            _short_input(case)

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, object]:
            return {"base_url": fuzz_server, "timeout": CALL_TIMEOUT_S}

        def validate_response(self, response: schemathesis.Response, case: schemathesis.Case,
                              additional_checks: object = None, **kwargs: object) -> None:  # fmt: skip
            if response.status_code < 400 and "{" in case.path:
                followed.add(f"{case.method} {case.path}")
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)

    Documents.run(settings=settings(max_examples=12, stateful_step_count=6, deadline=None, derandomize=True,
                                    database=None, suppress_health_check=list(HealthCheck)))
    # A real job's routes were reached with its id (not only the 404 of a made-up one).
    assert "GET /v1/documents/{job_id}" in followed or "DELETE /v1/documents/{job_id}" in followed, followed


def test_the_server_is_healthy_after_the_fuzzing(fuzz_server: str) -> None:
    assert httpx.get(f"{fuzz_server}/healthz", timeout=10).status_code == 200
    reply = httpx.post(f"{fuzz_server}/v1/audio/speech", json={"model": "tts-1", "input": "Still here.", "response_format": "wav", "stream": False},
                       timeout=120)
    assert reply.status_code == 200 and reply.content[:4] == b"RIFF"
