"""``POST /v1/audio/speech/captioned``: speech with word timestamps, or subtitles.

The body is ``/v1/audio/speech``'s. The reply is one JSON object
``{audio (base64), audio_format, sample_rate, words: [{word, start, end, source, text_start, text_end, written}]}``, or with
``"stream": true`` one such object per line (NDJSON) as audio is produced: the decoded
``audio`` pieces, joined in order, are the whole file, and each line's ``words`` are the
words whose audio has been handed to the encoder by then. ``response_format`` ``srt`` or
``vtt`` returns subtitles only. Times are seconds from the start of the audio; ``word`` is
the text as read (numbers and abbreviations expanded), ``written`` = ``input[text_start:text_end]``
the written token it came from (null where the text did not hold it, as in SSML); subtitles show
the written tokens. Models without word timings (Chatterbox,
``/v1/models`` ``capabilities.word_timings`` "none") return no words.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from tts_app.audio.formats import FORMATS, decoded_sample_rate
from tts_app.web.api.openapi_docs import BINARY, GUARD_ERRORS, JSON_OBJECT, json_body, replies
from tts_app.web.api.client_id import client_id
from tts_app.web.api.openai_speech import (
    SpeechRequest, Submitted, audio_with_slot, open_audio_encoder, submit_speech, until_shutdown, whole_encoded, whole_result,
    with_first,
)
from tts_app.captions.subtitles import as_json, to_srt, to_vtt

logger = logging.getLogger(__name__)

router = APIRouter()

SUBTITLES = {"srt": ("application/x-subrip", to_srt), "vtt": ("text/vtt", to_vtt)}


class CaptionedSpeechRequest(SpeechRequest):
    """``/v1/audio/speech``'s body; ``srt``/``vtt`` formats, and a whole reply unless ``stream`` is true."""

    response_format: Literal["mp3", "opus", "aac", "flac", "wav", "pcm", "srt", "vtt"] = "wav"  # type: ignore[assignment]
    stream: bool = False


def _line(data: bytes, fmt: str, sample_rate: int, words: list) -> dict[str, Any]:
    return {"audio": base64.b64encode(data).decode("ascii"), "audio_format": fmt, "sample_rate": sample_rate, "words": as_json(words)}


_REPLIES = {"application/json": JSON_OBJECT, "application/x-ndjson": BINARY, "application/x-subrip": BINARY, "text/vtt": BINARY}


@router.post("/v1/audio/speech/captioned", response_model=None, openapi_extra=json_body(CaptionedSpeechRequest),
             responses=replies(200, _REPLIES, *GUARD_ERRORS, 499, 500, 503))
async def create_captioned_speech(request: Request) -> Response:
    """Speech plus word timings (JSON, or NDJSON when streaming), or SRT/WebVTT subtitles."""
    client = client_id(request)  # who asks, once, here at the edge: everything below is handed it
    submitted = await submit_speech(request, CaptionedSpeechRequest, client)
    if isinstance(submitted, JSONResponse):
        return submitted
    body, handle = submitted.body, submitted.handle
    sample_rate = int(submitted.engine.sample_rate)
    if body.response_format in FORMATS:  # what the audio decodes at (Opus: 48 kHz)
        sample_rate = decoded_sample_rate(body.response_format, sample_rate)
    headers = {"X-Sample-Rate": str(sample_rate), "Cache-Control": "no-store"}
    if body.response_format in SUBTITLES:
        return await _subtitles(request, submitted, headers)
    encoder = open_audio_encoder(body.response_format, submitted)
    if isinstance(encoder, JSONResponse):
        return encoder

    if not submitted.stream:
        whole = await whole_encoded(request, handle, encoder, client)
        if isinstance(whole, Response):
            return whole
        return JSONResponse(_line(whole.read(), body.response_format, sample_rate, handle.words), headers=headers)

    words: list = []  # released by the engine, not yet sent

    async def audio() -> AsyncIterator[Any]:
        async with aclosing(handle.achunks(forget=True)) as chunks:  # the handle keeps no copy of what was sent
            async for chunk in chunks:
                words.extend(chunk.words)
                if chunk.audio.size:
                    yield chunk.audio

    flowing = until_shutdown(audio())
    first, refused = await audio_with_slot(request, handle, encoder, flowing, client)  # an ffmpeg slot once audio flows
    if refused is not None:
        encoder.release()
        return refused

    async def lines() -> AsyncIterator[bytes]:
        try:
            async with aclosing(encoder.stream(with_first(first, flowing))) as encoded:
                async for data in encoded:
                    sent, words[:] = list(words), []
                    yield (json.dumps(_line(data, body.response_format, sample_rate, sent)) + "\n").encode()
            if words:  # released with the last, empty step
                yield (json.dumps(_line(b"", body.response_format, sample_rate, words)) + "\n").encode()
        finally:
            handle.cancel()
            encoder.release()

    return StreamingResponse(lines(), media_type="application/x-ndjson", headers=headers)


async def _subtitles(request: Request, submitted: Submitted, headers: dict[str, str]) -> Response:
    media_type, render = SUBTITLES[submitted.body.response_format]
    gone = await whole_result(request, submitted.handle)
    if isinstance(gone, Response):
        return gone
    return Response(render(submitted.handle.words), media_type=f"{media_type}; charset=utf-8", headers=headers)
