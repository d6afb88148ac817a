"""Await a result only while the HTTP client is still there.

Starlette cancels a streaming response when its client goes, but a plain endpoint
coroutine keeps waiting: a non-streaming request whose client gave up would stay in
the engine to the end. ``until_disconnect`` races the awaitable against the client's
``http.disconnect`` and cancels it (so the engine request is cancelled at its next step).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request

T = TypeVar("T")


class ClientGone(Exception):
    """The client disconnected before the result was ready."""


async def _disconnected(request: Request) -> None:
    # The body is already read, so the next ASGI message is the disconnect (or none, until it happens).
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def until_disconnect(request: Request, awaitable: Awaitable[T]) -> T:
    """``await awaitable``, or raise ClientGone (cancelling it) as soon as the client disconnects."""
    work = asyncio.ensure_future(awaitable)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not work.done():
            work.cancel()
    if work.cancelled() or not work.done():
        raise ClientGone()
    return work.result()
