"""Reading the start of a streamed reply, as a listener would, without waiting for its end."""

from __future__ import annotations

import httpx


async def first_bytes(reply: httpx.Response, at_least: int = 4096) -> bytes:
    """The first ``at_least`` bytes of a streamed body (fewer if it ends sooner); the rest stays unread."""
    first = b""
    async for data in reply.aiter_bytes():
        first += data
        if len(first) >= at_least:
            break
    return first
