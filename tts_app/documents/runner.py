"""Read one document through the engine: a few pieces in flight, audio appended to disk in order.

At most ``IN_FLIGHT`` pieces of a document are in the engine at once, so a document takes
a couple of slots and one-line requests from other visitors still find room at once. The
next piece is queued while the current one plays out, so the engine never waits on us.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import replace
from typing import Any

import numpy as np

from tts_app.captions.subtitles import shift
from tts_app.engine.input_processing import resolve_params
from tts_app.backends.params import SpeechParams
from tts_app.text.document import DocumentPiece
from tts_app.audio.wav_io import GrowingWav

from tts_app.documents.export import write_captions, write_chaptered
from tts_app.documents.job import ChapterMark, DocumentJob, JobStatus
from tts_app.documents.progress import engine_prior_s_per_char

logger = logging.getLogger(__name__)

IN_FLIGHT = 2
PIECE_PAUSE_S = 0.25  # between pieces of one paragraph: a sentence pause
PARAGRAPH_PAUSE_S = 0.6
HEADING_PAUSE_S = 0.8  # after a chapter's title
CHAPTER_PAUSE_S = 1.2  # before a chapter's title
BUSY_RETRY_S = 0.5


class _Cancelled(Exception):
    pass


def _pause_after(piece: DocumentPiece, following: DocumentPiece | None) -> float:
    if following is None:
        return 0.0
    if following.heading:
        return CHAPTER_PAUSE_S
    if piece.heading:
        return HEADING_PAUSE_S
    return PARAGRAPH_PAUSE_S if piece.paragraph_end else PIECE_PAUSE_S


def _submit(engine: Any, job: DocumentJob, params: SpeechParams, index: int) -> Any:
    """Queue piece ``index``; while the engine queue is full, wait (a document is never refused midway)."""
    from tts_app.engine import EngineBusy  # start-up: the engine and its model runtime load on first use

    piece_params = replace(params, seed=params.seed + index, stream=False)
    while True:
        if job.cancel_requested.is_set():
            raise _Cancelled
        try:
            return engine.submit(job.document.pieces[index].text, piece_params)
        except EngineBusy:
            time.sleep(BUSY_RETRY_S)


def _engine_stats(engine: Any) -> dict[str, Any] | None:
    stats = getattr(engine, "stats", None)  # engines without figures (test doubles) give no prior
    return stats() if callable(stats) else None


def run_job(job: DocumentJob, engine: Any, active: list[Any]) -> None:
    """Run ``job`` to its end (finished, cancelled or failed); ``active`` holds its engine handles meanwhile."""
    job.status, job.started_at = JobStatus.RUNNING, time.time()
    job.prior_s_per_char = engine_prior_s_per_char(_engine_stats(engine), job.settings.speed)
    pieces = job.document.pieces
    wav = GrowingWav(job.wav_path, int(engine.sample_rate))
    pending: deque[Any] = deque()
    submitted = 0
    chapter = -1
    outcome = JobStatus.FAILED  # unless the reading ends otherwise below
    try:
        params = resolve_params(job.settings)  # a named voice looked up once for every piece
        for index, piece in enumerate(pieces):
            while submitted < len(pieces) and len(pending) < IN_FLIGHT:
                pending.append(_submit(engine, job, params, submitted))
                active[:] = list(pending)
                submitted += 1
            handle = pending.popleft()
            if piece.chapter != chapter:
                chapter = piece.chapter
                job.chapter_marks.append(ChapterMark(job.document.chapters[chapter], wav.seconds))
            offset = wav.seconds
            for chunk in handle.chunks():
                wav.write(chunk.audio)
                job.words.extend(shift(chunk.words, offset))
                job.audio_s = wav.seconds
            if job.cancel_requested.is_set():
                raise _Cancelled
            pause = _pause_after(piece, pieces[index + 1] if index + 1 < len(pieces) else None)
            wav.write(np.zeros(int(round(pause / job.settings.speed * wav.sample_rate)), np.float32))
            job.prior_s_per_char = engine_prior_s_per_char(_engine_stats(engine), job.settings.speed)
            job.pieces_done, job.chars_done, job.audio_s = index + 1, job.chars_done + len(piece.text), wav.seconds
            job.chars_done_at = time.time()
        wav.close()
        files = {"wav": job.wav_path, **write_captions(job.folder, job.words)}
        files.update(write_chaptered(job.folder, job.wav_path, job.title, job.chapter_marks, wav.seconds))
        job.files.update(files)  # all at once: the page lists every file together, not WAV first and M4B seconds later
        outcome = JobStatus.FINISHED
    except _Cancelled:
        outcome = JobStatus.CANCELLED
    except Exception as exc:  # noqa: BLE001 - a job's failure is reported on the job, never raised into the server
        job.error = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        outcome = JobStatus.FAILED
        logger.warning("document job %s failed: %s", job.id, job.error)
    finally:
        for handle in pending:
            handle.cancel()
        active.clear()
        wav.close()
        if "wav" not in job.files and wav.samples:
            job.files["wav"] = job.wav_path  # what was read before a stop or a failure
            if job.words:
                job.files.update(write_captions(job.folder, job.words))  # and its captions, for the part read
        job.end(outcome)  # its status changes last, its text is dropped
        logger.info("document job %s %s: %d of %d pieces, %.1f s of audio", job.id, job.status.value, job.pieces_done, len(pieces), job.audio_s)
