"""The idle trim follows a request's end as well as its start (issue 46, hole 4: after a long request the
one trim had come while it ran, and what its end freed stayed mapped)."""

from __future__ import annotations

import asyncio

import pytest

from tts_app.web import memory_trim


def _run(app, scope_type: str = "http") -> None:
    async def receive() -> dict:
        return {"type": "http.request", "body": b""}

    async def send(message: dict) -> None:
        return None

    asyncio.run(memory_trim.RequestCounter(app)({"type": scope_type}, receive, send))


def test_a_request_counts_as_activity_when_it_ends():
    seen: list[int] = []

    async def app(scope, receive, send) -> None:
        seen.append(memory_trim.requests_seen())  # while the request runs

    before = memory_trim.requests_seen()
    _run(app)
    assert seen == [before + 1]  # its start
    assert memory_trim.requests_seen() == before + 2  # and its end


def test_a_failed_request_ends_too_and_other_scopes_do_not_count():
    async def failing(scope, receive, send) -> None:
        raise RuntimeError("boom")

    async def quiet(scope, receive, send) -> None:
        return None

    before = memory_trim.requests_seen()
    with pytest.raises(RuntimeError):
        _run(failing)
    assert memory_trim.requests_seen() == before + 2
    _run(quiet, "lifespan")
    assert memory_trim.requests_seen() == before + 2
