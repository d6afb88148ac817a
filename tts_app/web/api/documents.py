"""Long documents over HTTP: start a job, follow it, fetch its files, stop it.

- ``POST /v1/documents`` ``{input, markdown?, title?, voice?, speed?, seed?, voice_strength?, normalize?}``
  -> 202 ``{id, ...progress}``; the text is split into chapters and engine-sized pieces.
- ``GET /v1/documents/{id}`` -> progress (status, chapters, pieces done, audio seconds, time left).
- ``GET /v1/documents/{id}/audio.wav`` -> the WAV; while the job runs, a stream that grows with it
  (audio from the start). ``audio.m4b`` / ``audio.mp3`` (chapter marks, when ffmpeg is present)
  and ``captions.srt`` / ``captions.vtt`` once it has finished.
- ``DELETE /v1/documents/{id}`` -> stops it; what was read stays downloadable.
Errors are OpenAI-shaped JSON with one-line messages.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from tts_app.web.api.openapi_docs import BINARY, GUARD_ERRORS, JSON_OBJECT, json_body, replies
from tts_app.web.api.openai_speech import api_voice, error_response, read_body
from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN
from tts_app.text import TextError
from tts_app.text.document import MAX_DOCUMENT_CHARS
from tts_app.catalog.voices import DEFAULT_VOICE
from tts_app.audio.wav_io import streaming_wav_header
from tts_app.web.guards.client_identity import visitor_key

logger = logging.getLogger(__name__)

router = APIRouter()

DOCUMENT_BODY_BYTES = 6 * MAX_DOCUMENT_CHARS + 64 * 1024  # every character escaped as \uXXXX, plus the rest
FOLLOW_EVERY_S = 0.25  # how often a growing WAV stream looks for new audio
FILES = {
    "audio.wav": ("wav", "audio/wav"),
    "audio.m4b": ("m4b", "audio/mp4"),
    "audio.mp3": ("mp3", "audio/mpeg"),
    "captions.srt": ("srt", "application/x-subrip; charset=utf-8"),
    "captions.vtt": ("vtt", "text/vtt; charset=utf-8"),
}


class DocumentRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    input: str = Field(min_length=1, max_length=MAX_DOCUMENT_CHARS)
    markdown: bool = True  # headings become chapters; Markdown syntax is not read aloud
    title: str = Field(default="Document", max_length=200)
    voice: str = DEFAULT_VOICE
    speed: float = Field(default=1.0, ge=SPEED_MIN, le=SPEED_MAX)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    voice_strength: float = Field(default=1.0, ge=0.0, le=1.0)
    normalize: bool = True


def _not_found() -> JSONResponse:
    return error_response(404, "no such document job (finished jobs are kept for an hour)", param="id", code="not_found")


@router.post("/v1/documents", status_code=202, response_model=None, openapi_extra=json_body(DocumentRequest),
             responses=replies(202, {"application/json": JSON_OBJECT}, *GUARD_ERRORS, 429, 500, 503))
async def start_document(request: Request) -> Response:
    """Start reading a document; returns its id and progress at once."""
    body = await read_body(request, DocumentRequest, DOCUMENT_BODY_BYTES)
    if isinstance(body, JSONResponse):
        return body
    voice, refused = api_voice(body.voice)
    if refused is not None:
        return refused

    from tts_app.documents import ClientJobsFull, JobsBusy, api_client, document_jobs  # start-up: the document jobs load on first use
    from tts_app.backends.params import SpeechParams  # start-up: with the document jobs

    clients = api_client(visitor_key(request))  # the visitor behind a trusted proxy, an IPv6 /64 as one
    settings = SpeechParams(body.seed, body.speed, voice, voice_strength=body.voice_strength, normalize=body.normalize,
                            client=visitor_key(request))  # its pieces count in the visitor's engine share
    try:  # caps checked before the text is parsed, and parsed in turn (documents/parse_gate.py)
        job = await asyncio.to_thread(document_jobs().admit, body.input, body.markdown, settings, body.title.strip() or "Document", clients)
    except TextError as exc:
        return error_response(400, str(exc), param="input", code="invalid_value")
    except JobsBusy as exc:
        too_many = isinstance(exc, ClientJobsFull)
        refused = error_response(429 if too_many else 503, str(exc), code="too_many_documents" if too_many else "documents_busy",
                                 error_type="rate_limit_error" if too_many else "server_error")  # fmt: skip
        refused.headers["Retry-After"] = str(exc.retry_after_s)
        return refused
    return JSONResponse(job.progress(), status_code=202)


@router.get("/v1/documents/{job_id}", response_model=None, responses=replies(200, {"application/json": JSON_OBJECT}, 404))
async def document_progress(job_id: str) -> Response:
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job = document_jobs().get(job_id)
    if job is None:
        return _not_found()
    progress: dict[str, Any] = job.progress()
    progress["queue_position"] = document_jobs().queue_position(job_id)
    return JSONResponse(progress, headers={"Cache-Control": "no-store"})


@router.delete("/v1/documents/{job_id}", response_model=None, responses=replies(200, {"application/json": JSON_OBJECT}, 404))
async def stop_document(job_id: str) -> Response:
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job = document_jobs().get(job_id)
    if job is None:
        return _not_found()
    document_jobs().cancel(job_id)
    return JSONResponse(job.progress())


@router.get("/v1/documents/{job_id}/{name}", response_model=None,
            responses=replies(200, {media: BINARY for _kind, media in FILES.values()}, 404, 409))
async def document_file(job_id: str, name: str) -> Response:
    """A job's file; ``audio.wav`` streams while the job runs."""
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job = document_jobs().get(job_id)
    if job is None:
        return _not_found()
    if name not in FILES:
        return error_response(404, f"no such file; one of: {', '.join(FILES)}", param="name", code="not_found")
    kind, media_type = FILES[name]
    if kind == "wav" and not job.status.over:
        return StreamingResponse(_follow_wav(job), media_type=media_type, headers={"Cache-Control": "no-store"})
    path = job.files.get(kind)
    if path is None or not path.is_file():
        why = "is still being read" if not job.status.over else f"has no {kind} file (ffmpeg missing, or the job {job.status.value})"
        return error_response(409, f"the document {why}", param="name", code="not_ready")
    return FileResponse(path, media_type=media_type, filename=f"{job.title[:60] or 'document'}.{kind}".replace("/", "_"))


async def _follow_wav(job: Any) -> AsyncIterator[bytes]:
    """The growing WAV as a stream: a header of unknown length, then the PCM as it is written, until the job ends."""
    while not job.wav_path.exists() and not job.status.over:  # queued, or its reader is starting
        await asyncio.sleep(FOLLOW_EVERY_S)
    yield streaming_wav_header(int(_sample_rate(job)))
    sent = 44  # the file's own header is skipped: it is the same 44 bytes
    while True:
        over = job.status.over
        try:
            with open(job.wav_path, "rb") as f:
                f.seek(sent)
                data = await asyncio.to_thread(f.read, 1 << 20)
        except OSError:
            return  # removed (the store's caps) or never written
        if data:
            data = data[: len(data) // 2 * 2]  # whole samples only
            sent += len(data)
            yield data
            continue
        if over:
            return
        await asyncio.sleep(FOLLOW_EVERY_S)


def _sample_rate(job: Any) -> int:
    try:
        with open(job.wav_path, "rb") as f:
            return struct.unpack("<I", f.read(28)[24:28])[0]
    except (OSError, struct.error):
        return 22050
