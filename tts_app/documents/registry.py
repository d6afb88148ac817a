"""The server's document jobs: start, look up, cancel; finished jobs are forgotten after a while.

A job runs on its own thread, independent of the page that started it: closing the tab
does not stop it, and the page finds it again by its id (in the URL). Ids are random and
unguessable, checked against a strict pattern before any lookup.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from tts_app.file_sizes import folder_bytes
from tts_app.text.document import ParsedDocument

from .job import DocumentJob, DocumentSettings, JobStatus
from .runner import run_job

logger = logging.getLogger(__name__)

MAX_RUNNING = int(os.environ.get("TTS_APP_DOCUMENTS_RUNNING", "2"))
MAX_WAITING = int(os.environ.get("TTS_APP_DOCUMENTS_WAITING", "4"))
KEEP_FINISHED_S = float(os.environ.get("TTS_APP_DOCUMENTS_KEEP_S", "3600"))
# Finished jobs' files go, oldest first, while all jobs' files pass this (a 200,000-character
# document is about 0.9 GB of WAV, M4B and MP3).
MAX_BYTES = int(os.environ.get("TTS_APP_DOCUMENTS_MAX_BYTES", str(4 << 30)))
_ID = re.compile(r"^[0-9a-f]{32}$")


class JobsBusy(RuntimeError):
    """Too many documents are running or waiting."""


class DocumentJobs:
    """Jobs by id; at most ``max_running`` run at once, the next ones wait their turn."""

    def __init__(
        self, root: Path, engine_of: Callable[[], Any], max_running: int = MAX_RUNNING, max_waiting: int = MAX_WAITING,
        max_bytes: int = MAX_BYTES,
    ) -> None:  # fmt: skip
        self.root = root
        self._engine_of = engine_of
        self.max_running, self.max_waiting, self.max_bytes = max_running, max_waiting, max_bytes
        self._jobs: dict[str, DocumentJob] = {}
        self._waiting: list[str] = []
        self._active: dict[str, list[Any]] = {}  # id -> its engine handles now in the engine
        self._lock = threading.Lock()

    def start(self, document: ParsedDocument, settings: DocumentSettings, title: str) -> DocumentJob:
        """Create a job and run it (or queue it); JobsBusy when too many are ahead."""
        with self._lock:
            self._forget_old()
            running = sum(1 for j in self._jobs.values() if j.status is JobStatus.RUNNING)
            if running >= self.max_running and len(self._waiting) >= self.max_waiting:
                raise JobsBusy(f"{running} documents are being read and {len(self._waiting)} wait; try again later")
            job_id = uuid.uuid4().hex
            job = DocumentJob(job_id, title, document, settings, self.root / job_id)
            job.folder.mkdir(parents=True, exist_ok=True)
            self._jobs[job_id] = job
            self._waiting.append(job_id)
            self._launch_next()
        return job

    def get(self, job_id: str) -> DocumentJob | None:
        if not isinstance(job_id, str) or not _ID.match(job_id):
            return None
        with self._lock:
            return self._jobs.get(job_id)

    def queue_position(self, job_id: str) -> int:
        with self._lock:
            return self._waiting.index(job_id) + 1 if job_id in self._waiting else 0

    def cancel(self, job_id: str) -> bool:
        """Stop a job (its audio so far stays); False for an unknown or finished one."""
        job = self.get(job_id)
        if job is None or job.status.over:
            return False
        job.cancel_requested.set()
        with self._lock:
            if job_id in self._waiting:
                self._waiting.remove(job_id)
                job.status, job.finished_at = JobStatus.CANCELLED, time.time()
            handles = list(self._active.get(job_id, []))
        for handle in handles:
            handle.cancel()
        return True

    def _launch_next(self) -> None:
        """Start waiting jobs while there is room (lock held)."""
        running = sum(1 for j in self._jobs.values() if j.status is JobStatus.RUNNING)
        while self._waiting and running < self.max_running:
            job = self._jobs[self._waiting.pop(0)]
            job.status = JobStatus.RUNNING  # counted as running from now on
            self._active[job.id] = []
            threading.Thread(target=self._run, args=(job,), name=f"document-{job.id[:8]}", daemon=True).start()
            running += 1

    def _run(self, job: DocumentJob) -> None:
        try:
            run_job(job, self._engine_of(), self._active[job.id])
        finally:
            with self._lock:
                self._active.pop(job.id, None)
                self._launch_next()

    def _forget_old(self) -> None:
        """Drop finished jobs older than KEEP_FINISHED_S, then the oldest finished ones while the
        files of all jobs pass ``max_bytes`` (lock held)."""
        now = time.time()
        finished = sorted((j for j in self._jobs.values() if j.status.over), key=lambda j: j.finished_at or 0.0)
        total = sum(folder_bytes(j.folder) for j in self._jobs.values())
        for job in finished:
            if (job.finished_at and now - job.finished_at > KEEP_FINISHED_S) or total > self.max_bytes:
                total -= folder_bytes(job.folder)
                del self._jobs[job.id]
                shutil.rmtree(job.folder, ignore_errors=True)
        if total > self.max_bytes:
            raise JobsBusy("the server's space for documents is full until the ones being read finish")


_jobs: DocumentJobs | None = None
_jobs_lock = threading.Lock()


def document_jobs() -> DocumentJobs:
    """The process's jobs, their files in Gradio's cache folder (created on first use)."""
    global _jobs
    with _jobs_lock:
        if _jobs is None:
            from tts_app.shared_engine import get_engine
            from tts_app.upload_paths import upload_root

            # Beside the output store, not in it: its size cap must not take a document being written.
            _jobs = DocumentJobs(upload_root() / "tts_app_documents", get_engine)
        return _jobs
