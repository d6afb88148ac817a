"""Long documents over HTTP: start a job, follow it, fetch its files, stop it.

- ``POST /v1/documents`` ``{input, markdown?, title?, voice?, speed?, seed?, voice_strength?, normalize?}``
  -> 202 ``{id, ...progress}``; the text is split into chapters and engine-sized pieces.
- ``GET /v1/documents/{id}`` -> progress (status, chapters, pieces done, audio seconds, time left).
- ``GET /v1/documents/{id}/audio.wav`` -> the WAV; while the job runs, a stream that grows with it
  (audio from the start). ``audio.m4b`` / ``audio.mp3`` (chapter marks, when ffmpeg is present)
  and ``captions.srt`` / ``captions.vtt`` once it has finished.
- ``DELETE /v1/documents/{id}`` -> stops it; what was read stays downloadable.
- ``POST /v1/documents/{id}/share`` -> ``{share, url}``: a read-only link to the job's progress and files
  (``GET /v1/shared-documents/{share}`` and ``.../{share}/{file}``); ``DELETE .../share`` revokes it.
Only the job's owner (the browser or visitor that started it: ``owner_keys``) reads, stops or shares it;
for anyone else its id is unknown (404, as for an id that never existed).
Errors are OpenAI-shaped JSON with one-line messages.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi import Path as FastPath
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from tts_app.web.api.openapi_docs import BINARY, GUARD_ERRORS, JSON_OBJECT, json_body, replies
from tts_app.web.api.openai_speech import api_voice, error_response, read_body
from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN
from tts_app.text import TextError
from tts_app.text.document import MAX_DOCUMENT_CHARS
from tts_app.catalog.voices import DEFAULT_VOICE
from tts_app.audio.wav_io import streaming_wav_header
from tts_app.web.guards.client_identity import owner_key, owner_keys, visitor_key

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


JOB_ID = "^[0-9a-f]{32}$"  # what the registry accepts (anything else: 404, as for an unknown id)
SHARE_ID = "^[A-Za-z0-9_-]{22}$"
JobId = Annotated[str, FastPath(json_schema_extra={"pattern": JOB_ID})]
ShareId = Annotated[str, FastPath(json_schema_extra={"pattern": SHARE_ID})]
FileName = Annotated[str, FastPath(json_schema_extra={"enum": list(FILES)})]
JOB = {"type": "object", "required": ["id", "status"],
       "properties": {"id": {"type": "string", "pattern": JOB_ID}, "status": {"type": "string"}}}
SHARE = {"type": "object", "required": ["share", "url"], "properties": {"share": {"type": "string", "pattern": SHARE_ID}}}


def _links(*operations: str, source: str = "$response.body#/id", param: str = "job_id") -> dict[str, Any]:
    """OpenAPI links: the id in this reply is what those operations take (clients and the fuzzer follow them)."""
    return {op: {"operationId": op, "parameters": {param: source}} for op in operations}


JOB_LINKS = _links("document_progress", "stop_document", "document_file", "share_document", "unshare_document")
SHARE_LINKS = _links("shared_document_progress", "shared_document_file", source="$response.body#/share", param="share")


def _with_links(declared: dict[int | str, dict[str, Any]], status: int, links: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    declared[status]["links"] = links
    return declared


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
             operation_id="start_document",
             responses=_with_links(replies(202, {"application/json": JOB}, *GUARD_ERRORS, 429, 500, 503), 202, JOB_LINKS))
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
        job = await asyncio.to_thread(lambda: document_jobs().admit(
            body.input, body.markdown, settings, body.title.strip(), clients, owner=owner_key(request)))
    except TextError as exc:
        return error_response(400, str(exc), param="input", code="invalid_value")
    except JobsBusy as exc:
        too_many = isinstance(exc, ClientJobsFull)
        refused = error_response(429 if too_many else 503, str(exc), code="too_many_documents" if too_many else "documents_busy",
                                 error_type="rate_limit_error" if too_many else "server_error")  # fmt: skip
        refused.headers["Retry-After"] = str(exc.retry_after_s)
        return refused
    return JSONResponse(job.progress(), status_code=202)


def _progress(job: Any) -> JSONResponse:
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    progress: dict[str, Any] = job.progress()
    progress["queue_position"] = document_jobs().queue_position(job.id)
    return JSONResponse(progress, headers={"Cache-Control": "no-store"})


def _owned(job_id: str, request: Request) -> Any:
    """The job when ``request`` holds its owner's key, else None (unknown to a stranger)."""
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    return document_jobs().owned(job_id, owner_keys(request))


@router.get("/v1/documents/{job_id}", response_model=None, operation_id="document_progress",
            responses=replies(200, {"application/json": JOB}, 404))
async def document_progress(job_id: JobId, request: Request) -> Response:
    job = _owned(job_id, request)
    return _not_found() if job is None else _progress(job)


@router.delete("/v1/documents/{job_id}", response_model=None, operation_id="stop_document",
               responses=replies(200, {"application/json": JOB}, 404))
async def stop_document(job_id: JobId, request: Request) -> Response:
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job = _owned(job_id, request)
    if job is None:
        return _not_found()
    document_jobs().cancel(job_id)
    return JSONResponse(job.progress())


@router.post("/v1/documents/{job_id}/share", response_model=None, operation_id="share_document",
             responses=_with_links(replies(200, {"application/json": SHARE}, *GUARD_ERRORS, 404), 200, SHARE_LINKS))
async def share_document(job_id: JobId, request: Request) -> Response:
    """A read-only link to the job (the same one until revoked): its progress and files, nothing else."""
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job = _owned(job_id, request)
    if job is None:
        return _not_found()
    token = document_jobs().make_share(job.id)
    return JSONResponse({"share": token, "url": f"/v1/shared-documents/{token}"})


@router.delete("/v1/documents/{job_id}/share", response_model=None, operation_id="unshare_document",
               responses=replies(200, {"application/json": JSON_OBJECT}, 404))
async def unshare_document(job_id: JobId, request: Request) -> Response:
    """Revoke the job's share link: whoever had it gets 404 from now on."""
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    job = _owned(job_id, request)
    if job is None:
        return _not_found()
    document_jobs().unshare(job.id)
    return JSONResponse({"share": None})


@router.get("/v1/documents/{job_id}/{name}", response_model=None, operation_id="document_file",
            responses=replies(200, {media: BINARY for _kind, media in FILES.values()}, 404, 409))
async def document_file(job_id: JobId, name: FileName, request: Request) -> Response:
    """A job's file; ``audio.wav`` streams while the job runs."""
    job = _owned(job_id, request)
    return _not_found() if job is None else _file(job, name)


def _shared(token: str) -> Any:
    from tts_app.documents import document_jobs  # start-up: the document jobs load on first use

    return document_jobs().shared(token)


@router.get("/v1/shared-documents/{share}", response_model=None, operation_id="shared_document_progress",
            responses=replies(200, {"application/json": JOB}, 404))
async def shared_document_progress(share: ShareId) -> Response:
    """A shared job's progress (read-only: there is no way to stop it from here)."""
    job = _shared(share)
    return _not_found() if job is None else _progress(job)


@router.get("/v1/shared-documents/{share}/{name}", response_model=None, operation_id="shared_document_file",
            responses=replies(200, {media: BINARY for _kind, media in FILES.values()}, 404, 409))
async def shared_document_file(share: ShareId, name: FileName) -> Response:
    job = _shared(share)
    return _not_found() if job is None else _file(job, name)


def _file(job: Any, name: str) -> Response:
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
