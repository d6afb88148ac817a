"""An OpenAI-compatible ``POST /v1/audio/speech`` served by the app's one engine.

Request fields follow OpenAI's: ``model``, ``input``, ``voice``, ``response_format``
(``wav`` or ``pcm`` here), ``speed``. The body streams as the engine produces audio.
``pcm`` is raw signed 16-bit little-endian mono at the engine's sample rate, which
the ``X-Sample-Rate`` header states (OpenAI's own pcm is 24 kHz; ours is the model's
rate, 22,050 Hz for the default Piper voice, never resampled). Extensions: ``seed``,
``voice_strength``, ``stream`` (false returns a complete WAV with exact sizes), ``normalize`` (false
reads numbers and abbreviations as written) and ``lexicon`` (word -> respelling or /ipa/, over the saved one).
Every invalid request gets a 4xx with an OpenAI-shaped JSON error.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tts_app.shared_engine import get_engine
from tts_app.voice_names import DEFAULT_VOICE, voice_names
from tts_app.wav_io import streaming_wav_header, to_pcm16, wav_bytes

logger = logging.getLogger(__name__)

router = APIRouter()

MODEL_ID = "piper-joe-medium"
# Names OpenAI clients send by default; all of them mean the one model served here.
MODEL_ALIASES = frozenset({MODEL_ID, "tts-1", "tts-1-hd", "gpt-4o-mini-tts", "default"})
MAX_INPUT_CHARS = 4096  # OpenAI's limit for this endpoint


class SpeechRequest(BaseModel):
    """The JSON body of ``POST /v1/audio/speech``; unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str = MODEL_ID
    input: str = Field(min_length=1, max_length=MAX_INPUT_CHARS)
    voice: str = DEFAULT_VOICE
    response_format: Literal["wav", "pcm"] = "wav"
    speed: float = Field(default=1.0, ge=0.25, le=4.0)
    stream: bool = True
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    voice_strength: float = Field(default=1.0, ge=0.0, le=1.0)
    normalize: bool = True  # false reads numbers, dates and abbreviations as written
    lexicon: dict[str, str] | None = Field(default=None, max_length=500)  # word -> respelling or /ipa/, over the saved one


def error_response(
    status: int, message: str, param: str | None = None, code: str | None = None, error_type: str = "invalid_request_error"
) -> JSONResponse:
    """An OpenAI-shaped error body."""
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    headers = {"Retry-After": "1"} if status in (429, 503) else None
    return JSONResponse(status_code=status, content=body, headers=headers)


def _validation_error(exc: ValidationError) -> JSONResponse:
    first = exc.errors()[0]
    param = ".".join(str(part) for part in first.get("loc", ())) or None
    message = first.get("msg", "invalid request")
    if first.get("type") == "literal_error" and param == "response_format":
        message = "response_format must be 'wav' or 'pcm' (mp3, opus, aac and flac are not supported)"
    elif first.get("type") == "missing":
        message = f"'{param}' is required"
    else:
        message = f"{param}: {message}" if param else message
    return error_response(400, message, param=param, code="invalid_value")


@router.get("/v1/models")
async def list_models() -> dict[str, Any]:
    """The models this server speaks with (OpenAI's list shape)."""
    return {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "tts_app"}]}


@router.get("/v1/audio/voices")
async def list_voices() -> dict[str, Any]:
    """Voice names ``/v1/audio/speech`` accepts (``default`` is the model's own voice)."""
    return {"voices": [DEFAULT_VOICE, *voice_names()]}


@router.post("/v1/audio/speech", response_model=None)
async def create_speech(request: Request) -> Response:
    """Synthesize ``input`` and stream it back as WAV or raw PCM."""
    try:
        payload = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return error_response(400, "the request body must be JSON", code="invalid_json")
    if not isinstance(payload, dict):
        return error_response(400, "the request body must be a JSON object", code="invalid_json")
    try:
        body = SpeechRequest.model_validate(payload)
    except ValidationError as exc:
        return _validation_error(exc)

    if body.model not in MODEL_ALIASES:
        return error_response(
            400, f"model {body.model!r} is not served here; use {MODEL_ID!r}", param="model", code="model_not_found"
        )
    if not body.input.strip():
        return error_response(400, "input is empty", param="input", code="invalid_value")
    voice: str | None = None
    if body.voice != DEFAULT_VOICE:
        known = voice_names()
        if body.voice not in known:
            choices = ", ".join([DEFAULT_VOICE, *known])
            return error_response(
                400, f"unknown voice {body.voice!r}; choose one of: {choices}", param="voice", code="voice_not_found"
            )
        voice = body.voice

    from tts_app.engine import EngineBusy  # the engine package is heavy; imported on first request

    from tts_app.text import parse_lexicon, saved_lexicon

    engine = await asyncio.to_thread(get_engine)
    try:
        lexicon = await asyncio.to_thread(saved_lexicon)
        if body.lexicon:
            lexicon = parse_lexicon({**(lexicon.to_json_dict() if lexicon else {}), **body.lexicon})
        handle = await asyncio.to_thread(
            engine.submit,
            body.input,
            voice=voice,
            seed=body.seed,
            speed=body.speed,
            voice_strength=body.voice_strength,
            normalize=body.normalize,
            lexicon=lexicon,
        )
    except EngineBusy:
        return error_response(503, "the engine queue is full; retry shortly", code="engine_busy", error_type="server_error")
    except ValueError as exc:
        return error_response(400, str(exc), param="input", code="invalid_value")

    sample_rate = int(engine.sample_rate)
    headers = {"X-Sample-Rate": str(sample_rate), "Cache-Control": "no-store"}
    media_type = "audio/wav" if body.response_format == "wav" else "audio/pcm"

    if not body.stream:
        try:
            audio = await handle.aresult()
        finally:
            handle.cancel()  # a no-op once done; frees the request if this coroutine was cancelled
        data = wav_bytes(audio, sample_rate) if body.response_format == "wav" else to_pcm16(audio)
        return Response(content=data, media_type=media_type, headers=headers)

    async def body_chunks() -> AsyncIterator[bytes]:
        try:
            if body.response_format == "wav":
                yield streaming_wav_header(sample_rate)
            async for chunk in handle.astream():
                if len(chunk):
                    yield to_pcm16(chunk)
        finally:
            # Client gone or stream over: either way the engine request is finished with.
            handle.cancel()

    return StreamingResponse(body_chunks(), media_type=media_type, headers=headers)
