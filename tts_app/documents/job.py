"""A document job as plain state: what to read, how far it got, where its files are."""

from __future__ import annotations

import enum
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tts_app.backends.base import WordTiming
from tts_app.backends.params import SpeechParams
from tts_app.text.document import ParsedDocument

from tts_app.documents.progress import time_left_s


class JobStatus(enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def over(self) -> bool:
        return self in (JobStatus.FINISHED, JobStatus.CANCELLED, JobStatus.FAILED)


# How to read a document: one request's params for every piece (piece n gets seed + n; never streamed).
DocumentSettings = SpeechParams


@dataclass(frozen=True)
class ChapterMark:
    title: str
    start_s: float


@dataclass
class DocumentJob:
    id: str
    title: str
    document: ParsedDocument
    settings: SpeechParams
    folder: Path  # where its files are written
    status: JobStatus = JobStatus.QUEUED
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    pieces_done: int = 0
    chars_done: int = 0
    audio_s: float = 0.0
    chapter_marks: list[ChapterMark] = field(default_factory=list)
    words: list[WordTiming] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)  # "wav", "srt", "vtt", "m4b", "mp3" once written
    error: str = ""
    prior_s_per_char: float | None = None  # the engine's measured pace, for the time left (progress.py)
    chars_done_at: float | None = None  # when chars_done was reached (time.time())
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    pieces_total: int = 0  # the document's counts, kept once its text is dropped (set from it at creation)
    chars_total: int = 0
    owner: str = ""  # who may act on it: the key of the browser or visitor that started it ("": nobody over HTTP)

    def __post_init__(self) -> None:
        self.pieces_total, self.chars_total = len(self.document.pieces), self.document.chars

    @property
    def wav_path(self) -> Path:
        return self.folder / "document.wav"

    def end(self, outcome: JobStatus) -> None:
        """The job is over: its text and word timings go (a 200,000-character document's pieces held ~10 MB
        for the hour a finished job is kept); the counts and chapter titles its progress shows stay."""
        self.document = ParsedDocument(self.document.chapters, [])
        self.words = []  # the captions are written from them before the end
        self.finished_at = time.time()
        self.status = outcome  # last: a client that sees a job over finds every file it will ever have

    def progress(self) -> dict[str, Any]:
        """Plain figures for the page and the API."""
        total_chars = self.chars_total
        elapsed = (self.finished_at or time.time()) - self.started_at if self.started_at else 0.0
        left = None  # the page says "estimating…"
        if self.status is JobStatus.RUNNING and self.started_at:
            done_at = (self.chars_done_at or self.started_at) - self.started_at
            left = time_left_s(done_at, self.chars_done, total_chars, self.prior_s_per_char, elapsed - done_at)
        chapter = self.chapter_marks[-1].title if self.chapter_marks else ""
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status.value,
            "chapters": len(self.document.chapters),
            "chapters_started": len(self.chapter_marks),
            "chapter": chapter,
            "pieces": self.pieces_total,
            "pieces_done": self.pieces_done,
            "chars": total_chars,
            "chars_done": self.chars_done,
            "audio_s": round(self.audio_s, 2),
            "elapsed_s": round(elapsed, 1),
            "time_left_s": left,
            "files": sorted(self.files),
            "error": self.error,
        }
