"""The Gradio body checks and the one-line rewrite, without a server (through it: tests/e2e/test_gradio_bodies.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tts_app.web.guards.gradio_bodies import Refusal, _without_odd_range, check_body, one_line

BLOCKS = SimpleNamespace(fns={0: SimpleNamespace(api_name="speak", inputs=[1, 2, 3])})
JSON = b"application/json"


@pytest.mark.parametrize(("path", "body", "kind", "status"), [
    ("/gradio_api/run/speak", b'{"data": ["\xff"]}', JSON, 400),
    ("/gradio_api/run/speak", b'{"data": []}', b"text/plain", 415),
    ("/gradio_api/run/speak", b"[1]", JSON, 422),
    ("/gradio_api/run/speak", b'{"data": [1, 2]}', JSON, 400),  # too few inputs
    ("/gradio_api/run/other", b'{"data": [1, 2, 3]}', JSON, 404),  # no event of that api_name
    ("/gradio_api/queue/join", b'{"data": [], "fn_index": 7}', JSON, 400),  # no event 7
    ("/gradio_api/queue/join", b'{"data": [], "fn_index": true}', JSON, 422),
    ("/gradio_api/queue/join", b'{"data": [], "fn_index": 1e400}', JSON, 400),
    ("/gradio_api/queue/join", b'{"data": NaN}', JSON, 400),
    ("/gradio_api/queue/join", b'{"data": {}}', JSON, 422),
])
def test_malformed_bodies_are_refused(path: str, body: bytes, kind: bytes, status: int) -> None:
    with pytest.raises(Refusal) as refused:
        check_body(path, kind, body, BLOCKS)
    assert refused.value.status == status and "\n" not in str(refused.value)


@pytest.mark.parametrize(("path", "body"), [
    ("/gradio_api/run/speak", b'{"data": [1, 2, 3], "session_hash": "abc"}'),
    ("/gradio_api/queue/join", b'{"data": [1], "fn_index": 0}'),  # the queue fills missing inputs itself
    ("/gradio_api/stream/abc/close", b""),
    ("/gradio_api/cancel", b'{"event_id": "x"}'),
])
def test_well_formed_bodies_pass(path: str, body: bytes) -> None:
    check_body(path, JSON, body, BLOCKS)


def test_errors_become_one_line_without_the_request_echoed() -> None:
    validation = json.dumps({"detail": [{"loc": ["body", "data"], "msg": "Input should be a valid list", "input": "SECRET"}]})
    assert json.loads(one_line(422, validation.encode())) == {"error": "data: Input should be a valid list",
                                                              "detail": "data: Input should be a valid list"}
    trace = json.loads(one_line(500, b'{"error": "An event handler failed.\\nWanted inputs:\\n  [a, b]"}'))
    assert "\n" not in trace["error"] and trace["error"].startswith("An event handler failed.")
    assert json.loads(one_line(500, b"Internal Server Error"))["error"] == "Internal Server Error"
    assert json.loads(one_line(404, b""))["error"] == "Not Found"


@pytest.mark.parametrize(("value", "kept"), [("bytes=0-4", True), ("bytes=5-", True), ("bytes=-3", True),
                                             ("bytes=5-2", False), ("bytes=0-1,3-4", False), ("items=0-1", False), ("", False)])
def test_only_one_plain_range_is_kept(value: str, kept: bool) -> None:
    scope = {"headers": [(b"range", value.encode()), (b"host", b"x")]}
    assert (b"range" in dict(_without_odd_range(scope)["headers"])) is kept
