"""Gradio's routes answer malformed requests in one line (issue 46, hole 8), through the real server.

First the outside tester's table: non-UTF-8 bodies, JSON of the wrong type, too few inputs, an unknown
``fn_index`` or ``api_name``, an unsatisfiable or odd ``Range`` on a ``file=`` route. On main these were a
plain 500 ("Internal Server Error", FastAPI's encoder failing on the bytes), a multi-line 500, or a 500 for
an ``fn_index`` no event has. Then hypothesis: random bodies (bytes, any JSON, event bodies whose fields have
the wrong types) to every POST route Gradio serves, and random Range headers: never a 5xx, never a reset,
every error one line of ``{"error", "detail"}``, and the server healthy afterwards.
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(60.0)
JSON = {"content-type": "application/json"}
NOT_UTF8 = b'{"data": ["\xff\xfe"], "fn_index": 0}'
POST_ROUTES = ["/gradio_api/run/predict", "/gradio_api/api/generate", "/gradio_api/run/generate", "/gradio_api/queue/join",
               "/gradio_api/call/engine_stats", "/gradio_api/stream/abc", "/gradio_api/stream/abc/close",
               "/gradio_api/reset", "/gradio_api/cancel", "/gradio_api/component_server"]


def assert_one_line_4xx(reply: httpx.Response, case: object) -> None:
    assert 400 <= reply.status_code < 500, (case, reply.status_code, reply.text[:300])
    text = reply.text.strip()
    assert "\n" not in text and "Traceback" not in text, (case, text[:300])
    payload = reply.json()
    assert set(payload) == {"error", "detail"} and isinstance(payload["error"], str) and payload["error"], (case, payload)


@pytest.fixture(scope="module")
def http(app_server: str):
    with httpx.Client(base_url=app_server, timeout=TIMEOUT) as client:
        yield client


@pytest.fixture(scope="module")
def uploaded(http: httpx.Client) -> str:
    reply = http.post("/gradio_api/upload", files={"files": ("note.txt", b"hello world")})
    assert reply.status_code == 200, reply.text
    return reply.json()[0]


def session_body(**fields: object) -> bytes:
    return json.dumps({"session_hash": uuid.uuid4().hex[:12], **fields}).encode()


CASES = [
    ("/gradio_api/run/predict", NOT_UTF8, JSON),
    ("/gradio_api/queue/join", NOT_UTF8, JSON),
    ("/gradio_api/stream/abc", NOT_UTF8, JSON),
    ("/gradio_api/reset", NOT_UTF8, JSON),
    ("/gradio_api/run/predict", NOT_UTF8, {}),  # no Content-Type: FastAPI handed the bytes to its encoder
    ("/gradio_api/queue/join", b"\xff", {"content-type": "text/plain"}),
    ("/gradio_api/stream/abc/close", b"[1, 2]", JSON),
    ("/gradio_api/api/generate", b"[1, 2]", JSON),
    ("/gradio_api/stream/abc", b'"text"', JSON),
    ("/gradio_api/run/generate", session_body(data=["too few"]), JSON),
    ("/gradio_api/run/predict", session_body(data=[], fn_index=99999), JSON),
    ("/gradio_api/queue/join", session_body(data=[1], fn_index=-1), JSON),
    ("/gradio_api/queue/join", b'{"data": [], "fn_index": 1e400}', JSON),
    ("/gradio_api/reset", b'{"event_id": 1e400}', JSON),
    ("/gradio_api/run/predict", b'{"data": [], "request": 5}', JSON),  # no event is named "predict"
    ("/gradio_api/queue/join", session_body(data=5, fn_index="x"), JSON),
    ("/gradio_api/call/generate", b'{"data": "x"}', JSON),
]


@pytest.mark.parametrize(("path", "body", "headers"), CASES)
def test_the_testers_malformed_bodies_get_one_line_4xx(http: httpx.Client, path: str, body: bytes, headers: dict) -> None:
    assert_one_line_4xx(http.post(path, content=body, headers=headers), (path, body))


@pytest.mark.parametrize("value", ["bytes=100-200", "bytes=0-1,3-4", "bytes=5-2", "bytes=abc", "bytes=-0", "items=0-1"])
def test_odd_or_unsatisfiable_ranges_on_a_file_route(http: httpx.Client, uploaded: str, value: str) -> None:
    reply = http.get(f"/gradio_api/file={uploaded}", headers={"range": value})
    if reply.status_code in (200, 206):
        assert reply.content in (b"hello world", b"hello world"[:2]), (value, reply.content)
    else:
        assert reply.status_code == 416, (value, reply.status_code, reply.text)
        assert_one_line_4xx(reply, value)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
EVENT_BODIES = st.fixed_dictionaries(
    {},
    optional={
        "data": JSON_VALUES, "fn_index": st.integers(-3, 200) | JSON_VALUES, "session_hash": st.text("abcdef0123", min_size=1, max_size=12) | JSON_VALUES,
        "event_id": JSON_VALUES, "trigger_id": JSON_VALUES, "batched": JSON_VALUES, "simple_format": JSON_VALUES,
        "event_data": JSON_VALUES,
    },
)
BODIES = (st.binary(max_size=64) | JSON_VALUES.map(lambda v: json.dumps(v).encode())
          | EVENT_BODIES.map(lambda v: json.dumps(v).encode()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(path=st.sampled_from(POST_ROUTES), body=BODIES, json_type=st.booleans())
def test_fuzzed_bodies_never_get_a_5xx_or_a_trace(http: httpx.Client, path: str, body: bytes, json_type: bool) -> None:
    reply = http.post(path, content=body, headers=JSON if json_type else {"content-type": "text/plain"})
    assert reply.status_code < 500 or reply.status_code == 503, (path, body, reply.status_code, reply.text[:300])
    if reply.status_code >= 400:
        assert_one_line_4xx(reply, (path, body))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(st.sampled_from("bytes=0123456789-, "), max_size=24).map(str.strip))  # httpx sends no edge spaces
def test_fuzzed_ranges_never_get_a_5xx(http: httpx.Client, uploaded: str, value: str) -> None:
    reply = http.get(f"/gradio_api/file={uploaded}", headers={"range": value})
    assert reply.status_code in (200, 206, 416), (value, reply.status_code, reply.text[:200])
    if reply.status_code == 416:
        assert_one_line_4xx(reply, value)


def test_the_server_is_healthy_after_the_fuzzing(http: httpx.Client) -> None:
    assert http.get("/healthz").status_code == 200
    assert http.post("/gradio_api/call/engine_stats", json={"data": []}).status_code == 200
