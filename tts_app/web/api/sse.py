"""OpenAI's speech events: the plain route's byte stream, framed as server-sent events.

``stream_format: "sse"`` answers ``text/event-stream``: one ``speech.audio.delta`` event per piece
of the encoded stream (``{"type": "speech.audio.delta", "audio": base64}``; the pieces, decoded
and joined in order, are the body the plain route would have sent, in the asked ``response_format``),
then one ``speech.audio.done`` with ``usage``. Each event is a single ``data:`` line, as OpenAI
sends them. This is framing only: the chunks come from the same encoder stream as the plain route's,
so the first delta leaves when the plain stream's first bytes would, and closing this stream closes
that one (its ``finally`` cancels the engine request). A failure after the first event ends the
stream with one ``error`` event (a one-line message) instead of ``done``.

``usage`` counts what this server has, not tokens it does not make: ``input_tokens`` is the input's
characters and ``output_tokens`` the milliseconds of audio sent (``total_tokens`` their sum).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

logger = logging.getLogger(__name__)

MEDIA_TYPE = "text/event-stream"


def sse_event(payload: dict[str, Any]) -> bytes:
    """One server-sent event: a single ``data:`` line of compact JSON, then the blank line that ends it."""
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def usage(input_chars: int, audio_s: float) -> dict[str, int]:
    """``speech.audio.done``'s usage: characters in, milliseconds of audio out."""
    out = int(round(audio_s * 1000))
    return {"input_tokens": input_chars, "output_tokens": out, "total_tokens": input_chars + out}


async def speech_events(chunks: AsyncIterator[bytes], done_usage: Callable[[], dict[str, int]]) -> AsyncIterator[bytes]:
    """``chunks`` (the encoded body) as ``speech.audio.delta`` events, then ``speech.audio.done``
    with ``done_usage()`` (called once the audio has ended). ``chunks`` is closed when this ends or is closed."""
    async with aclosing(chunks) as pieces:
        try:
            async for data in pieces:
                if data:
                    yield sse_event({"type": "speech.audio.delta", "audio": base64.b64encode(data).decode("ascii")})
        except Exception as exc:  # noqa: BLE001 - the status line is long sent: an error event ends the stream cleanly
            logger.warning("speech events ended by an error: %s", exc)
            yield sse_event({"type": "error", "error": {"message": "speech synthesis failed; see the server log",
                                                        "type": "server_error", "code": "synthesis_failed"}})  # fmt: skip
            return
    yield sse_event({"type": "speech.audio.done", "usage": done_usage()})
