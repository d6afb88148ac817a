"""The server's document jobs: start, look up, cancel; finished jobs are forgotten after a while.

A job runs on its own thread, independent of the page that started it: closing the tab
does not stop it, and the page finds it again by its id (in the URL). Ids are random and
unguessable, checked against a strict pattern before any lookup.
"""

from __future__ import annotations

import logging
import re
import shutil
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable

from tts_app import settings
from tts_app.storage.file_sizes import folder_bytes
from tts_app.text.document import ParsedDocument

from tts_app.documents.job import DocumentJob, DocumentSettings, JobStatus
from tts_app.documents.runner import run_job

logger = logging.getLogger(__name__)

MAX_RUNNING = settings.value("TTS_APP_DOCUMENTS_RUNNING")
MAX_WAITING = settings.value("TTS_APP_DOCUMENTS_WAITING")
KEEP_FINISHED_S = settings.value("TTS_APP_DOCUMENTS_KEEP_S")
# Finished jobs' files go, oldest first, while all jobs' files pass this.
MAX_BYTES = settings.value("TTS_APP_DOCUMENTS_MAX_BYTES")
# Jobs kept (running, waiting and finished, until forgotten) per client and in all.
PER_CLIENT = settings.value("TTS_APP_DOCUMENTS_PER_CLIENT")
MAX_KEPT = settings.value("TTS_APP_DOCUMENTS_MAX_KEPT")
BUSY_RETRY_AFTER_S = 30  # what a refusal tells to wait when no job is about to be forgotten
_ID = re.compile(r"^[0-9a-f]{32}$")


class JobsBusy(RuntimeError):
    """Too many documents are running or waiting (the server's limit, for everyone)."""

    def __init__(self, message: str, retry_after_s: int = BUSY_RETRY_AFTER_S) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ClientJobsFull(JobsBusy):
    """This client keeps as many jobs as it may; others are unaffected."""


class DocumentJobs:
    """Jobs by id; at most ``max_running`` run at once, the next ones wait their turn."""

    def __init__(
        self, root: Path, engine_of: Callable[[], Any], max_running: int = MAX_RUNNING, max_waiting: int = MAX_WAITING,
        max_bytes: int = MAX_BYTES, max_kept: int = MAX_KEPT,
    ) -> None:  # fmt: skip
        self.root = root
        self._engine_of = engine_of
        self.max_running, self.max_waiting, self.max_bytes = max_running, max_waiting, max_bytes
        self.max_kept = max_kept
        self._jobs: dict[str, DocumentJob] = {}
        self._owners: dict[str, frozenset[str]] = {}  # id -> the client keys it counts against
        self._waiting: list[str] = []
        self._active: dict[str, list[Any]] = {}  # id -> its engine handles now in the engine
        self._lock = threading.Lock()

    def start(
        self, document: ParsedDocument, settings: DocumentSettings, title: str, clients: Sequence[tuple[str, int]] = ()
    ) -> DocumentJob:
        """Create a job and run it (or queue it). ``clients``: (key, cap) pairs the job counts against
        (an API caller's address; a page's session and address). ClientJobsFull when one of them
        keeps its cap of jobs already, JobsBusy when too many are ahead for everyone."""
        with self._lock:
            self._forget_old()
            for key, cap in clients:
                self._check_client(key, cap)
            running = sum(1 for j in self._jobs.values() if j.status is JobStatus.RUNNING)
            if running >= self.max_running and len(self._waiting) >= self.max_waiting:
                raise JobsBusy(f"{running} documents are being read and {len(self._waiting)} wait; try again later")
            self._make_room()
            job_id = uuid.uuid4().hex
            job = DocumentJob(job_id, title, document, settings, self.root / job_id)
            job.folder.mkdir(parents=True, exist_ok=True)
            self._jobs[job_id] = job
            self._owners[job_id] = frozenset(key for key, _cap in clients)
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

    def kept(self) -> int:
        """Jobs held now: running, waiting and finished ones not yet forgotten."""
        with self._lock:
            return len(self._jobs)

    def _check_client(self, key: str, cap: int) -> None:
        """ClientJobsFull when ``key`` keeps ``cap`` jobs; it says when its oldest finished one goes (lock held)."""
        mine = [self._jobs[i] for i, keys in self._owners.items() if key in keys]
        if len(mine) < cap:
            return
        ends = [j.finished_at + KEEP_FINISHED_S - time.time() for j in mine if j.status.over and j.finished_at]
        wait = max(1, int(min(ends))) if ends else BUSY_RETRY_AFTER_S
        when = f"the oldest finished one is forgotten in {wait} s" if ends else "try again once one has finished"
        raise ClientJobsFull(f"you have {len(mine)} document jobs, the limit per client; {when}", wait)

    def _make_room(self) -> None:
        """Forget the oldest finished jobs while all jobs kept reach ``max_kept`` (lock held)."""
        finished = sorted((j for j in self._jobs.values() if j.status.over), key=lambda j: j.finished_at or 0.0)
        excess = len(self._jobs) + 1 - self.max_kept
        for job in finished[: max(0, excess)]:
            self._forget(job)
        if len(self._jobs) >= self.max_kept:
            raise JobsBusy(f"the server keeps {len(self._jobs)} document jobs, its limit; try again later")

    def _forget(self, job: DocumentJob) -> None:
        del self._jobs[job.id]
        self._owners.pop(job.id, None)
        shutil.rmtree(job.folder, ignore_errors=True)

    def _forget_old(self) -> None:
        """Drop finished jobs older than KEEP_FINISHED_S, then the oldest finished ones while the
        files of all jobs pass ``max_bytes`` (lock held)."""
        now = time.time()
        finished = sorted((j for j in self._jobs.values() if j.status.over), key=lambda j: j.finished_at or 0.0)
        total = sum(folder_bytes(j.folder) for j in self._jobs.values())
        for job in finished:
            if (job.finished_at and now - job.finished_at > KEEP_FINISHED_S) or total > self.max_bytes:
                total -= folder_bytes(job.folder)
                self._forget(job)
        if total > self.max_bytes:
            raise JobsBusy("the server's space for documents is full until the ones being read finish")


def api_client(visitor: str) -> list[tuple[str, int]]:
    """The (key, cap) pairs an API caller's job counts against: its visitor (``visitor_key``: an IPv6 /64 is one)."""
    return [(f"visitor:{visitor}", PER_CLIENT)]


def page_client(visitor: str) -> list[tuple[str, int]]:
    """A page's job counts against its visitor, with its API calls: a new session hash costs nothing."""
    return api_client(visitor)


_jobs: DocumentJobs | None = None
_jobs_lock = threading.Lock()


def document_jobs() -> DocumentJobs:
    """The process's jobs, their files in Gradio's cache folder (created on first use)."""
    global _jobs
    with _jobs_lock:
        if _jobs is None:
            from tts_app.catalog.shared_engine import get_engine  # start-up: the shared engine loads on first use
            from tts_app.storage.upload_paths import upload_root  # gradio (which it loads) is heavy: only when a file is stored

            # Beside the output store, not in it: its size cap must not take a document being written.
            _jobs = DocumentJobs(upload_root() / "tts_app_documents", get_engine)
        return _jobs
