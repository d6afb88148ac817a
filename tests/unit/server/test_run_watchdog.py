"""The run watchdog's rule and the routes it and the dev-route guard recognise (issue 32, items 4 and 8)."""

from __future__ import annotations

from typing import Any

import pytest

from tts_app.web import event_streams
from tts_app.web.event_streams import stream_key
from tts_app.web.guards.dev_routes import dev_route
from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.session.run_watchdog import RunWatchdog


class _Handle:
    def __init__(self) -> None:
        self.cancelled = False

    done = False  # a request still running: Stop counts it

    @property
    def cancel_asked(self) -> bool:
        return self.cancelled

    def cancel(self) -> None:
        self.cancelled = True


def _get(path: str, query: bytes = b"") -> dict[str, Any]:
    return {"type": "http", "method": "GET", "path": path, "query_string": query}


def test_a_run_nobody_hears_is_cancelled_and_a_read_one_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = ActiveRuns()
    dropped, read, read_by_event = [_Handle()], [_Handle()], [_Handle()]
    runs.add("dropped", dropped)
    runs.add("read", read)
    runs.add("rest", read_by_event)
    monkeypatch.setattr(event_streams, "_open_streams", event_streams.Counter({"read": 1, "event-1": 1}))
    watchdog = RunWatchdog(runs, lambda session: ("event-1",) if session == "rest" else (), grace_s=0.0)
    assert watchdog.check() == ["dropped"]
    assert dropped[0].cancelled and not read[0].cancelled and not read_by_event[0].cancelled
    assert sorted(runs.sessions()) == ["read", "rest"]


def test_a_run_is_given_its_grace_before_it_counts_as_abandoned() -> None:
    runs = ActiveRuns()
    handle = _Handle()
    runs.add("quiet", [handle])
    watchdog = RunWatchdog(runs, lambda session: (), grace_s=3600.0)
    assert watchdog.check() == [] and not handle.cancelled  # first seen unheard: the clock starts


@pytest.mark.parametrize(("scope", "key"), [
    (_get("/gradio_api/queue/data", b"session_hash=abc"), "abc"),
    (_get("/gradio_api/call/generate/e1"), "e1"),
    (_get("/gradio_api/call/v2/generate/e2"), "e2"),
    (_get("/gradio_api/queue/data"), None),
    (_get("/gradio_api/heartbeat/abc"), None),
    ({"type": "http", "method": "POST", "path": "/gradio_api/call/generate", "query_string": b""}, None),
])
def test_event_streams_are_recognised(scope: dict[str, Any], key: str | None) -> None:
    assert stream_key(scope) == key


@pytest.mark.parametrize(("path", "dev"), [
    ("/gradio_api/dev/reload", True), ("//gradio_api/dev/reload", True), ("/gradio_api/dev/reload/", True),
    ("/gradio_api/vibe-code", True), ("/gradio_api/undo-vibe-edit", True), ("/gradio_api/profiling/summary", True),
    ("/gradio_api/queue/join", False), ("/", False), ("/gradio_api/developer", False),
])
def test_development_routes_are_recognised(path: str, dev: bool) -> None:
    assert dev_route(path) is dev
