"""An OpenAI-compatible ``POST /v1/audio/speech`` served by the app's one engine.

Request fields follow OpenAI's: ``model`` (required, as OpenAI requires it), ``input``, ``voice`` (OpenAI's names are
aliases, see voice_aliases.py), ``response_format`` (mp3 by default, opus, aac, flac,
wav, pcm; see audio_formats.py), ``speed`` (config.SPEED_MIN to SPEED_MAX) and
``instructions`` (accepted and ignored: this model takes no style prompt). The body
streams as the engine produces audio (a WAV only to a client that streams: streams());
``stream_format`` ``sse`` sends it as OpenAI's speech events instead (web/api/sse.py; refused for
tts-1 and tts-1-hd, as OpenAI refuses it). ``pcm`` is raw signed 16-bit little-endian mono
at the engine's sample rate (OpenAI's own pcm is 24 kHz; ours is the model's rate,
22,050 Hz for the default Piper voice, never resampled). The ``X-Sample-Rate`` header
states the rate the body decodes at: the model's, except Opus (always 48 kHz). Extensions: ``seed``, ``voice_strength``, ``stream`` (false returns a
complete file whose header states its length: WAV sizes, FLAC and MP3 totals), ``normalize``
(false reads numbers and abbreviations as written; omitted: the model's own reading), ``lexicon``
(word -> respelling or /ipa/, over the saved one) and ``language`` (a code ``/v1/models`` lists).
Every invalid request gets a 4xx with an OpenAI-shaped JSON error; one that asks a model for what it
does not honour (``/v1/models`` lists each model's ``capabilities``) a 400 ``unsupported_parameter``
naming the parameter and the model, before anything is loaded or queued.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tts_app.audio.encoder_slots import SLOTS as ENCODER_SLOTS
from tts_app.audio.formats import (
    DEFAULT_FORMAT,
    FORMATS,
    Encoder,
    EncoderBusy,
    EncoderShareFull,
    EncoderUnavailable,
    WholeBody,
    decoded_sample_rate,
    open_encoder,
)
from tts_app.web.engine_calls import submitted
from tts_app.web.api.client_id import client_id
from tts_app.web.api.disconnect import ClientGone, until_disconnect
from tts_app.web.api.limits import BodyError, read_json_body
from tts_app.web.api.sse import MEDIA_TYPE as SSE_MEDIA_TYPE, speech_events, usage
from tts_app.web.api.openapi_docs import BINARY, GUARD_ERRORS, JSON_OBJECT, json_body, replies
from tts_app.catalog.voice_aliases import VoiceAliasError, api_voice_names, library_voice
from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN
from tts_app.models.available import EMBEDDED_ID, OPENAI_MODELS, capabilities_of
from tts_app.models.capabilities import API_INPUT_CHARS
from tts_app.web.shutdown import shutting_down
from tts_app.catalog.voices import DEFAULT_VOICE
from tts_app.voice.errors import shown_name

logger = logging.getLogger(__name__)

router = APIRouter()

MODEL_ID = EMBEDDED_ID
# Names OpenAI clients send by default; all of them mean the one model served here.
MODEL_ALIASES = frozenset({MODEL_ID, *OPENAI_MODELS, "default"})
MAX_INPUT_CHARS = API_INPUT_CHARS  # one number: /v1/models reports it too


class SpeechRequest(BaseModel):
    """The JSON body of ``POST /v1/audio/speech``; unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str = MODEL_ID
    input: str = Field(min_length=1, max_length=MAX_INPUT_CHARS)
    voice: str = DEFAULT_VOICE
    response_format: Literal["mp3", "opus", "aac", "flac", "wav", "pcm"] = DEFAULT_FORMAT
    speed: float = Field(default=1.0, ge=SPEED_MIN, le=SPEED_MAX)
    instructions: str | None = Field(default=None, max_length=MAX_INPUT_CHARS)  # accepted, ignored (no style prompt)
    stream_format: Literal["audio"] = "audio"  # server-sent events: the OpenAI route only (OpenAISpeechRequest)
    stream: bool | None = None  # None: streamed, except a WAV for a client that reads it whole (streams())
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    voice_strength: float = Field(default=1.0, ge=0.0, le=1.0)
    normalize: bool | None = None  # false reads numbers, dates and abbreviations as written; null: the model's own way
    lexicon: dict[str, str] | None = Field(default=None, max_length=500)  # word -> respelling or /ipa/, over the saved one
    language: str | None = Field(default=None, min_length=1, max_length=16)  # a code /v1/models lists; null: the model's own


class OpenAISpeechRequest(SpeechRequest):
    """``POST /v1/audio/speech``'s body: OpenAI requires ``model`` (any alias of a served model); ``stream_format``
    ``sse`` streams OpenAI's speech events (web/api/sse.py)."""

    model: str
    stream_format: Literal["audio", "sse"] = "audio"  # type: ignore[assignment]


async def until_shutdown(chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``chunks`` until the server starts shutting down: the body then ends cleanly (a complete
    chunked response, the encoder flushed) before uvicorn's grace period runs out."""
    async for chunk in chunks:
        if shutting_down():
            break
        yield chunk


def error_response(
    status: int,
    message: str,
    param: str | None = None,
    code: str | None = None,
    error_type: str = "invalid_request_error",
    retry_after_s: float | None = None,
) -> JSONResponse:
    """An OpenAI-shaped error body; 429 and 503 say when to retry (``retry_after_s``, else 1 s)."""
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    retry = max(1, math.ceil(retry_after_s)) if retry_after_s is not None else 1
    headers = {"Retry-After": str(retry)} if status in (429, 503) else None
    return JSONResponse(status_code=status, content=body, headers=headers)


def _validation_error(exc: ValidationError) -> JSONResponse:
    first = exc.errors()[0]
    param = ".".join(str(part) for part in first.get("loc", ())) or None
    message = first.get("msg", "invalid request")
    if first.get("type") == "literal_error" and param == "response_format":
        allowed = str(first.get("ctx", {}).get("expected", "")).replace("'", "").replace(" or ", ", ")
        message = f"response_format must be one of: {allowed or ', '.join(FORMATS)}"
    elif first.get("type") == "literal_error" and param == "stream_format":
        allowed = str(first.get("ctx", {}).get("expected", "")).replace("'", "").replace(" or ", ", ")
        message = f"stream_format must be one of: {allowed}" + ("" if "sse" in allowed else " (server-sent events: /v1/audio/speech)")
    elif first.get("type") == "missing":
        message = f"'{param}' is required"
    else:
        message = f"{param}: {message}" if param else message
    return error_response(400, message, param=param, code="invalid_value")


@router.get("/v1/models")
async def list_models() -> dict[str, Any]:
    """The models this server speaks with (OpenAI's list shape)."""
    from tts_app.catalog.engines import served_models  # the embedded voice + Qwen3-TTS checkpoints found here

    return {"object": "list", "data": await asyncio.to_thread(served_models)}


@router.get("/v1/audio/voices", response_model=None, responses=replies(200, {"application/json": JSON_OBJECT}, 400))
async def list_voices(model: str | None = None) -> dict[str, Any] | JSONResponse:
    """Voice names ``/v1/audio/speech`` accepts (``default`` is the model's default voice, the library's voices,
    OpenAI's names); with ``?model=``, that model's own saved voices after them (Pocket TTS's ``alba``, ...)."""
    from tts_app.catalog.engines import model_voice_names  # the catalogue of served models: loaded on first use

    from tts_app.catalog.engines import served_models  # the catalogue of served models: loaded on first use

    model_id = MODEL_ID if model is None or model in MODEL_ALIASES else model
    served = {row["id"] for row in await asyncio.to_thread(served_models)}
    if capabilities_of(model_id) is None or model_id not in served:  # a known model not served here has no voices here
        return error_response(400, f"model {shown_name(model_id)} is not served here; /v1/models lists the models served here",
                              param="model", code="model_not_found")  # fmt: skip
    try:
        return {"voices": api_voice_names(model_voices=await asyncio.to_thread(model_voice_names, model_id))}
    except VoiceAliasError as exc:
        logger.error("%s", exc)
        return {"voices": [DEFAULT_VOICE], "error": "the voice alias file is invalid; see the server log"}


@dataclass
class Submitted:
    """A validated request, on its way through the engine."""

    body: SpeechRequest
    engine: Any  # tts_app.engine.Engine
    handle: Any  # tts_app.engine.RequestHandle
    client: str  # the visitor's key, computed once at the route's edge (client_id) and handed down
    stream: bool  # the reply goes out as the audio comes (streams())


# The official openai client marks a request whose reply it reads as it comes (``with_streaming_response``:
# "stream"); its plain ``speech.create`` reads the whole body and sends no mark.
STREAMING_READER_HEADER = "x-stainless-raw-response"


def streams(body: SpeechRequest, request: Request) -> bool:
    """Whether the reply goes out as the audio is made, or whole with a header that states its length.

    ``stream`` in the body decides. Without it every format streams (its first audio leaves at once)
    except WAV: a WAV header states the file's length before its audio, so a streamed WAV can only say
    "unknown" (0xFFFFFFFF, which Python's ``wave`` reads as 27 hours). A WAV therefore goes whole, its
    header true, unless the client says it reads as the audio comes (the official client's streaming
    response, or ``"stream": true``). Speech events (``stream_format`` sse) always stream.
    """
    if body.stream_format == "sse":
        return True
    if body.stream is not None:
        return body.stream
    return body.response_format != "wav" or request.headers.get(STREAMING_READER_HEADER) == "stream"


async def read_body(request: Request, schema: type[BaseModel], max_bytes: int | None = None) -> Any:
    """The request's JSON body validated against ``schema``, or an OpenAI-shaped 4xx response."""
    try:
        payload = await read_json_body(request, max_bytes)
    except BodyError as exc:
        return error_response(exc.status, exc.message, code=exc.code)
    if not isinstance(payload, dict):
        return error_response(400, "the request body must be a JSON object", code="invalid_json")
    try:
        return schema.model_validate(payload)
    except ValidationError as exc:
        return _validation_error(exc)


def api_voice(name: str, model_voices: Sequence[str] = ()) -> tuple[Any, JSONResponse | None]:
    """The engine's voice for an API voice name (``model_voices``: the requested model's own saved voices), or
    (None, an error response)."""
    try:
        return library_voice(name, model_voices), None
    except VoiceAliasError as exc:
        logger.error("%s", exc)
        return None, error_response(500, "the server's voice alias file is invalid", code="voice_aliases_invalid", error_type="server_error")
    except ValueError as exc:
        return None, error_response(400, str(exc), param="voice", code="voice_not_found")


async def _drained(handle: Any) -> None:
    """The request run to its end, its audio forgotten as it comes; raises as ``aresult`` does."""
    async for _ in handle.astream(forget=True):
        pass
    await handle.aresult()  # the request's error, or RequestCancelled (its audio is forgotten: this is cheap)


async def whole_result(request: Request, handle: Any, work: Awaitable[Any] | None = None) -> Any:
    """``work``'s result (default: the request run to its end, for its words), or a 499 response once its client
    has gone (the request is then cancelled)."""
    try:
        return await until_disconnect(request, work if work is not None else _drained(handle))
    except ClientGone:
        logger.debug("client gone: cancelled request %d", handle.id)  # routine: not an operator's matter
        return Response(status_code=499)  # nobody reads it; nginx's "client closed request"
    finally:
        handle.cancel()  # a no-op once done; frees the request if the client left or this coroutine was cancelled


async def whole_encoded(request: Request, handle: Any, encoder: Encoder, client: str) -> WholeBody | Response:
    """The request's whole file (Encoder.whole_pieces: on disk, 16-bit or encoded as the audio comes, the handle
    forgetting each float32 chunk once taken); a 499 response if its client left, a 429/503 if no encoder slot is
    free once the first audio is there (never while the request is queued). The encoder is released."""
    try:
        audio = handle.astream(forget=True)
        first, refused = await audio_with_slot(request, handle, encoder, audio, client)
        if refused is not None:
            return refused

        async def pieces() -> WholeBody:
            got = await encoder.whole_pieces(with_first(first, audio))
            try:
                await handle.aresult()  # raises as before for a failed or cancelled request (its audio is forgotten: cheap)
            except BaseException:
                got.close()
                raise
            return got

        return await whole_result(request, handle, pieces())
    finally:
        encoder.release()


def encoder_refusal(exc: EncoderBusy) -> JSONResponse:
    """429 when the client holds its share of encoder slots (for it only), 503 when all are taken."""
    if isinstance(exc, EncoderShareFull):
        return error_response(429, str(exc), code="encoder_busy", error_type="rate_limit_error", retry_after_s=exc.retry_after_s)
    return error_response(503, str(exc), code="encoder_busy", error_type="server_error", retry_after_s=exc.retry_after_s)


def claim_encoder(encoder: Encoder, client: str, handle: Any) -> JSONResponse | None:
    """Take the encoder's slot for the request's visitor, now that audio flows; a refusal (the request cancelled) if none."""
    try:
        encoder.claim(client)
    except EncoderBusy as exc:
        handle.cancel()
        return encoder_refusal(exc)
    return None


async def audio_with_slot(request: Request, handle: Any, encoder: Encoder, audio: AsyncIterator[Any], client: str) -> tuple[Any, Response | None]:
    """For an ffmpeg format, the first chunk of ``audio`` once the engine has made it, the encoder's slot taken
    then (never while the request is queued); or a refusal, the request cancelled and ``audio`` closed.
    Other formats hold no slot: (None, None) at once."""
    if not encoder.needs_slot:
        return None, None
    first, failed = await first_audio(request, handle, audio)
    refused = failed if failed is not None else claim_encoder(encoder, client, handle)
    if refused is not None:
        handle.cancel()
        await audio.aclose()
    return first, refused


async def with_first(first: Any, audio: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``first`` (already taken from ``audio``, None if not) then the rest of ``audio``."""
    if first is not None:
        yield first
    async for chunk in audio:
        yield chunk


# OpenAI serves speech events for its gpt-4o-mini-tts models (OPENAI_MODELS) and refuses them for these.
SSE_REFUSED_MODELS = frozenset({"tts-1", "tts-1-hd"})


def sse_refusal(body: SpeechRequest) -> JSONResponse | None:
    """A 400 for ``stream_format: "sse"`` where OpenAI refuses it (tts-1, tts-1-hd) or with ``"stream": false``."""
    if body.stream_format != "sse":
        return None
    if body.model in SSE_REFUSED_MODELS:
        return error_response(400, f"stream_format 'sse' is not supported for {body.model}; use gpt-4o-mini-tts, or stream_format 'audio'",
                              param="stream_format", code="unsupported_value")  # fmt: skip
    if body.stream is False:
        return error_response(400, "stream_format 'sse' streams; drop \"stream\": false or use stream_format 'audio'",
                              param="stream", code="invalid_value")  # fmt: skip
    return None


async def submit_speech(request: Request, schema: type[SpeechRequest], client: str) -> Submitted | JSONResponse:
    """Read, validate and submit a speech request for ``client`` (the route's client_id); an OpenAI-shaped 4xx/5xx
    response when it cannot run."""
    body = await read_body(request, schema)
    if isinstance(body, JSONResponse):
        return body
    if not body.input.strip():
        return error_response(400, "input is empty", param="input", code="invalid_value")
    refused = sse_refusal(body)
    if refused is not None:
        return refused
    from tts_app.engine import EngineBusy, SpeechParams, UnsupportedParameter  # the engine package is heavy; imported on first request
    from tts_app.engine.input_processing import resolve_params
    from tts_app.catalog.engines import LOAD_RETRY_S, LOADING_RETRY_S, ModelLoadFailed, ModelLoading, ModelUnavailable, engine_for, model_voice_names  # one engine per model, created on first use
    from tts_app.catalog.server_lexicon import server_lexicon  # start-up: the text stack (espeak, lexicons) loads on first use
    from tts_app.text import parse_lexicon  # start-up: the text stack (espeak, lexicons) loads on first use

    model_id = MODEL_ID if body.model in MODEL_ALIASES else body.model
    voice, refused = api_voice(body.voice, await asyncio.to_thread(model_voice_names, model_id))
    if refused is not None:
        return refused
    capabilities = capabilities_of(model_id)
    stream = streams(body, request)
    try:
        # The server's own words go only to a model that reads a lexicon; a request's own words are its ask.
        lexicon = await asyncio.to_thread(server_lexicon) if capabilities is None or capabilities.lexicon else None
        if body.lexicon:
            lexicon = parse_lexicon({**(lexicon.to_json_dict() if lexicon else {}), **body.lexicon})
        params = SpeechParams(
            body.seed, body.speed, voice, None, body.voice_strength, body.normalize, lexicon, body.language, stream,
            client,
        )  # fmt: skip
        if capabilities is not None:  # before the model is loaded or anything queued
            capabilities.check(params, [body.input], model_id)
        engine = await asyncio.to_thread(engine_for, model_id)
        handle = await submitted(lambda: engine.submit(body.input, resolve_params(params, engine.backend)))  # cancelled if the client goes meanwhile
    except ModelLoading as exc:  # named in $TTS_APP_MODELS, still downloading: the message says how far
        return error_response(503, str(exc), param="model", code="model_loading", error_type="server_error", retry_after_s=LOADING_RETRY_S)
    except ModelUnavailable as exc:  # the message says how to get the model
        return error_response(400, str(exc), param="model", code="model_not_found")
    except ModelLoadFailed as exc:  # the model's files are here but broken: the server's fault
        return error_response(503, str(exc), param="model", code="model_unavailable", error_type="server_error", retry_after_s=LOAD_RETRY_S)
    except UnsupportedParameter as exc:
        return error_response(400, str(exc), param=exc.param, code="unsupported_parameter")
    except EngineBusy as exc:  # the queue, this client's share of it, or a wait past the longest allowed
        return error_response(503, str(exc), code="engine_busy", error_type="server_error", retry_after_s=exc.retry_after_s)
    except ValueError as exc:
        return error_response(400, str(exc), param="input", code="invalid_value")
    return Submitted(body, engine, handle, client, stream)


def open_audio_encoder(fmt: str, submitted: Submitted) -> Encoder | JSONResponse:
    """The encoder for ``fmt`` (its slot is taken once audio flows), or an error response (the request is then cancelled)."""
    try:
        encoder = open_encoder(fmt, int(submitted.engine.sample_rate))
        if encoder.needs_slot:
            ENCODER_SLOTS.check(submitted.client)  # a client holding its share now is refused before the engine works for it
        return encoder
    except EncoderBusy as exc:
        submitted.handle.cancel()
        return encoder_refusal(exc)
    except EncoderUnavailable as exc:
        submitted.handle.cancel()
        return error_response(400, str(exc), param="response_format", code="unsupported_format")


async def first_audio(request: Request, handle: Any, audio: AsyncIterator[Any]) -> tuple[Any, Response | None]:
    """The first chunk of ``audio`` (None: it ended empty) once the engine has made it, or a 499/500 response
    (the caller cancels the request). The request waits in the engine's queue until then, holding no encoder slot."""
    try:
        return await until_disconnect(request, anext(audio, None)), None
    except ClientGone:
        logger.debug("client gone: cancelled request %d", handle.id)  # routine: not an operator's matter
        return None, Response(status_code=499)
    except Exception as exc:  # noqa: BLE001 - an engine failure before any byte: a clean 500, not a traceback
        logger.warning("request %d failed before its first audio: %s", handle.id, exc)
        return None, error_response(500, "speech synthesis failed; see the server log", code="synthesis_failed", error_type="server_error")


@router.post("/v1/audio/speech", response_model=None, openapi_extra=json_body(OpenAISpeechRequest),
             responses=replies(200, {f.media_type: BINARY for f in FORMATS.values()} | {SSE_MEDIA_TYPE: BINARY}, *GUARD_ERRORS, 429, 499, 500, 503))
async def create_speech(request: Request) -> Response:
    """Synthesize ``input`` and stream it back as mp3 (default), opus, aac, flac, wav or pcm.

    OpenAI voice names are aliases of voices here; ``instructions`` is accepted and
    ignored (this model takes no style prompt); ``"stream": false``, and a WAV for a client
    that reads the body whole (streams()), return a complete file whose header states its length.
    """
    client = client_id(request)  # who asks, once, here at the edge: everything below is handed it
    submitted = await submit_speech(request, OpenAISpeechRequest, client)
    if isinstance(submitted, JSONResponse):
        return submitted
    body, handle = submitted.body, submitted.handle
    rate = decoded_sample_rate(body.response_format, int(submitted.engine.sample_rate))
    headers = {"X-Sample-Rate": str(rate), "Cache-Control": "no-store"}
    media_type = FORMATS[body.response_format].media_type
    encoder = open_audio_encoder(body.response_format, submitted)
    if isinstance(encoder, JSONResponse):
        return encoder

    if not submitted.stream:
        whole = await whole_encoded(request, handle, encoder, client)
        if isinstance(whole, Response):
            return whole
        headers["Content-Length"] = str(whole.size)
        return StreamingResponse(whole.pieces(), media_type=media_type, headers=headers)

    audio = until_shutdown(handle.astream(forget=True))
    first, refused = await audio_with_slot(request, handle, encoder, audio, client)
    if refused is not None:
        return refused

    async def body_chunks() -> AsyncIterator[bytes]:
        try:
            async with aclosing(encoder.stream(with_first(first, audio))) as encoded:  # closed now, not at GC: ffmpeg stops
                async for data in encoded:
                    yield data
        finally:
            # Client gone or stream over: either way the engine request is finished with.
            handle.cancel()
            encoder.release()

    if body.stream_format == "sse":  # the same chunks, framed as OpenAI's speech events
        events = speech_events(body_chunks(), lambda: usage(len(body.input), handle.metrics.audio_s))
        return StreamingResponse(events, media_type=SSE_MEDIA_TYPE, headers=headers)
    return StreamingResponse(body_chunks(), media_type=media_type, headers=headers)
