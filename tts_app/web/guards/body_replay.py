"""A request body read ahead by a guard, handed to the app as if it were still arriving."""

from __future__ import annotations

from starlette.types import Message, Receive


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
