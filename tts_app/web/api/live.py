"""GET /live/{token}: a Speak run's audio for the page's low-latency player, as it is made.

The body is raw float32 little-endian mono samples at ``X-Sample-Rate`` (the engine's rate),
the run's lines in order with their pauses, ending when the run does. A token is made by
the Speak handler for one run, unguessable, and can be read once; anything else is a 404.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter
from fastapi.responses import Response, StreamingResponse

from tts_app.web.api.openai_speech import error_response
from tts_app.web.live_channel import LIVE_CHANNELS, LiveChannel

router = APIRouter()


@router.get("/live/{token}", include_in_schema=False)
async def live_audio(token: str) -> Response:
    channel = LIVE_CHANNELS.attach(token)
    if channel is None:
        return error_response(404, "no such live stream (it ended, was already opened, or never existed)")
    return StreamingResponse(
        _body(channel),
        media_type="application/octet-stream",
        headers={
            "X-Sample-Rate": str(channel.sample_rate),
            "X-Sample-Format": "f32le",
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )


async def _body(channel: LiveChannel) -> AsyncIterator[bytes]:
    try:
        async for data in channel.read():
            yield data
    finally:  # the run ended and all was sent, or the page went away
        LIVE_CHANNELS.release(channel)
