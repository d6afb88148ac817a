"""A request body read ahead by a guard (capped), handed to the app as if it were still arriving."""

from __future__ import annotations

from starlette.types import Message, Receive


class BodyTooLarge(Exception):
    """The body passed the guard's cap; nothing more of it was read."""


async def read_capped_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None when the client went away; BodyTooLarge once it passes ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"request body over {limit} bytes")
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A receive that gives ``body`` once (whole), then whatever ``receive`` gives (a disconnect)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
