"""The server's document jobs: start, look up, cancel; finished jobs are forgotten after a while.

A job runs on its own thread, independent of the page that started it: closing the tab
does not stop it, and the page finds it again by its id (in the URL). Ids are random and
unguessable, checked against a strict pattern before any lookup.

An id is not a key: a job names its owner (the browser or visitor that started it), and only a
request holding that owner's key reads, stops or shares it (``owned``). Others read it only through
a share token the owner chose to make (``make_share``): read-only, one per job, revoked by ``unshare``
or with the job.
"""

from __future__ import annotations

import logging
import math
import re
import shutil
import threading
import time
import secrets
import uuid
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Callable

from tts_app import settings
from tts_app.storage.file_sizes import folder_bytes
from tts_app.text.document import ParsedDocument, check_document_size, parse_document

from tts_app.documents.job import DocumentJob, DocumentSettings, JobStatus
from tts_app.documents.parse_gate import GATE, ParseBusy, ParseGate
from tts_app.documents.runner import run_job

logger = logging.getLogger(__name__)

# The settings, read when the jobs table is made (a caps argument left None) or a client's cap is asked for.
# Finished jobs' files go, oldest first, while all jobs' files pass MAX_BYTES; jobs kept (running, waiting and
# finished, until forgotten) per client and in all: PER_CLIENT, MAX_KEPT.
MAX_RUNNING, MAX_WAITING = "TTS_APP_DOCUMENTS_RUNNING", "TTS_APP_DOCUMENTS_WAITING"
KEEP_FINISHED, MAX_BYTES = "TTS_APP_DOCUMENTS_KEEP_S", "TTS_APP_DOCUMENTS_MAX_BYTES"
PER_CLIENT, MAX_KEPT = "TTS_APP_DOCUMENTS_PER_CLIENT", "TTS_APP_DOCUMENTS_MAX_KEPT"
BUSY_RETRY_AFTER_S = 30  # what a refusal tells to wait when no job is about to be forgotten
PARSE_RETRY_AFTER_S = 5  # a refusal for want of a turn to parse: the parses ahead take seconds
_ID = re.compile(r"^[0-9a-f]{32}$")
_SHARE = re.compile(r"^[A-Za-z0-9_-]{22}$")  # secrets.token_urlsafe(16): 128 random bits


class JobsBusy(RuntimeError):
    """Too many documents are running or waiting (the server's limit, for everyone)."""

    def __init__(self, message: str, retry_after_s: int = BUSY_RETRY_AFTER_S) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ClientJobsFull(JobsBusy):
    """This client keeps as many jobs as it may; others are unaffected."""


class ClientShareFull(ClientJobsFull):
    """This client has its share of the running and waiting places already; others are unaffected."""


class DocumentJobs:
    """Jobs by id; at most ``max_running`` run at once, the next ones wait their turn.

    One client (each key it counts against) holds at most ``share`` of the running and waiting
    places: half the readers, rounded up (1 of the default 2 running + 4 waiting), so a second
    visitor's document starts at once however many the first one sends.
    """

    def __init__(
        self, root: Path, engine_of: Callable[[], Any], max_running: int | None = None, max_waiting: int | None = None,
        max_bytes: int | None = None, max_kept: int | None = None, parse_gate: ParseGate = GATE,
    ) -> None:  # fmt: skip
        def given(value: int | None, name: str) -> int:
            return settings.value(name) if value is None else value

        self.root = root
        self._engine_of = engine_of
        max_running = given(max_running, MAX_RUNNING)
        self.max_running, self.max_waiting, self.max_bytes = max_running, given(max_waiting, MAX_WAITING), given(max_bytes, MAX_BYTES)
        self.max_kept = given(max_kept, MAX_KEPT)
        self.keep_finished_s = settings.value(KEEP_FINISHED)
        self.share = max(1, math.ceil(max_running / 2))
        self.parse_gate = parse_gate
        self._reserved: dict[str, frozenset[str]] = {}  # reservation -> its client keys: a place held while the text is parsed
        self._jobs: dict[str, DocumentJob] = {}
        self._owners: dict[str, frozenset[str]] = {}  # id -> the client keys it counts against
        self._waiting: list[str] = []
        self._shares: dict[str, str] = {}  # share token -> job id (at most one per job)
        self._active: dict[str, list[Any]] = {}  # id -> its engine handles now in the engine
        self._lock = threading.Lock()

    def admit(
        self, text: str, markdown: bool, settings: DocumentSettings, title: str, clients: Sequence[tuple[str, int]] = (),
        *, untitled: str = "Document", owner: str = "",
    ) -> DocumentJob:  # fmt: skip
        """Check the size and every cap, then parse ``text`` (in turn) and start its job: a refused client's
        text is never parsed. TextError for a bad text; ClientJobsFull, JobsBusy as ``start``.

        The job's title (its files' names): ``title``, else the document's first heading, else ``untitled``."""
        check_document_size(text)
        reservation = self.reserve(clients)
        try:
            try:
                with self.parse_gate.turn(key for key, _cap in clients):
                    document = parse_document(text, markdown)
            except ParseBusy as exc:
                raise JobsBusy(str(exc), PARSE_RETRY_AFTER_S) from exc
            return self.start(document, settings, title or document.first_heading or untitled, clients, reservation, owner)
        finally:
            self.release(reservation)  # a no-op once the job took its place

    def reserve(self, clients: Sequence[tuple[str, int]] = ()) -> str:
        """Hold a running-or-waiting place for ``clients`` while their text is parsed; the id for ``start``.
        Raises what ``start`` raises, before any work."""
        with self._lock:
            self._check_room(clients)
            reservation = uuid.uuid4().hex
            self._reserved[reservation] = frozenset(key for key, _cap in clients)
            return reservation

    def release(self, reservation: str) -> None:
        """Give back a place reserved and not used (the text was refused)."""
        with self._lock:
            self._reserved.pop(reservation, None)

    def start(
        self, document: ParsedDocument, settings: DocumentSettings, title: str, clients: Sequence[tuple[str, int]] = (),
        reservation: str | None = None, owner: str = "",
    ) -> DocumentJob:  # fmt: skip
        """Create a job and run it (or queue it). ``clients``: (key, cap) pairs the job counts against
        (its visitor: an API caller's and a page's alike). ClientJobsFull when one of them
        keeps its cap of jobs already or holds its share of places, JobsBusy when too many are ahead
        for everyone; not checked again for a ``reservation`` (from ``reserve``)."""
        with self._lock:
            if reservation is None or self._reserved.pop(reservation, None) is None:
                self._check_room(clients)
            job_id = uuid.uuid4().hex
            job = DocumentJob(job_id, title, document, settings, self.root / job_id, owner=owner)
            job.folder.mkdir(parents=True, exist_ok=True)
            self._jobs[job_id] = job
            self._owners[job_id] = frozenset(key for key, _cap in clients)
            self._waiting.append(job_id)
            self._launch_next()
        return job

    def _check_room(self, clients: Sequence[tuple[str, int]]) -> None:
        """Raise unless one more job fits: every client's caps and share, the places and jobs in all (lock held)."""
        self._forget_old()
        running = self._running()
        if running + len(self._waiting) + len(self._reserved) >= self.max_running + self.max_waiting:  # full for everyone: say so
            raise JobsBusy(f"{running} documents are being read and {len(self._waiting) + len(self._reserved)} wait; try again later")
        for key, cap in clients:
            self._check_client(key, cap)
            self._check_share(key)
        self._make_room()

    def _running(self) -> int:
        return sum(1 for j in self._jobs.values() if j.status is JobStatus.RUNNING)

    def _check_share(self, key: str) -> None:
        """ClientShareFull when ``key`` holds its share of running and waiting places (lock held). A job
        being stopped no longer counts: a create-then-stop loop meets the cap of jobs kept instead."""
        live = sum(1 for i, keys in self._owners.items() if key in keys
                   and not self._jobs[i].status.over and not self._jobs[i].cancel_requested.is_set())  # fmt: skip
        live += sum(1 for keys in self._reserved.values() if key in keys)
        if live >= self.share:
            raise ClientShareFull(f"you have {live} documents being read or waiting, the limit per client; "
                                  "try again once one has finished", BUSY_RETRY_AFTER_S)  # fmt: skip

    def get(self, job_id: str) -> DocumentJob | None:
        if not isinstance(job_id, str) or not _ID.match(job_id):
            return None
        with self._lock:
            return self._jobs.get(job_id)

    def owned(self, job_id: str, keys: Collection[str]) -> DocumentJob | None:
        """The job when one of ``keys`` (what a request holds: ``owner_keys``) is its owner, else None: the
        same answer as for an unknown id, so a stranger learns nothing."""
        job = self.get(job_id)
        return job if job is not None and job.owner and job.owner in keys else None

    def make_share(self, job_id: str) -> str:
        """The job's read-only share token, made on first call (the caller checked ownership)."""
        with self._lock:
            token = next((t for t, i in self._shares.items() if i == job_id), None)
            if token is None and job_id in self._jobs:
                token = secrets.token_urlsafe(16)
                self._shares[token] = job_id
            return token or ""

    def unshare(self, job_id: str) -> None:
        """Revoke the job's share token: its links stop working at once."""
        with self._lock:
            for token in [t for t, i in self._shares.items() if i == job_id]:
                del self._shares[token]

    def shared(self, token: str) -> DocumentJob | None:
        """The job a share token names, or None (unknown, revoked, or the job forgotten)."""
        if not isinstance(token, str) or not _SHARE.match(token):
            return None
        with self._lock:
            job_id = self._shares.get(token)
            return self._jobs.get(job_id) if job_id else None

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
                job.end(JobStatus.CANCELLED)  # never started: its text goes now
            handles = list(self._active.get(job_id, []))
        for handle in handles:
            handle.cancel()
        return True

    def _launch_next(self) -> None:
        """Start waiting jobs while there is room (lock held)."""
        running = self._running()
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
        held = len(mine) + sum(1 for keys in self._reserved.values() if key in keys)  # texts being parsed count too
        if held < cap:
            return
        ends = [j.finished_at + self.keep_finished_s - time.time() for j in mine if j.status.over and j.finished_at]
        wait = max(1, int(min(ends))) if ends else BUSY_RETRY_AFTER_S
        when = f"the oldest finished one is forgotten in {wait} s" if ends else "try again once one has finished"
        raise ClientJobsFull(f"you have {held} document jobs, the limit per client; {when}", wait)

    def _make_room(self) -> None:
        """Forget the oldest finished jobs while all jobs kept reach ``max_kept`` (lock held)."""
        finished = sorted((j for j in self._jobs.values() if j.status.over), key=lambda j: j.finished_at or 0.0)
        excess = len(self._jobs) + len(self._reserved) + 1 - self.max_kept
        for job in finished[: max(0, excess)]:
            self._forget(job)
        if len(self._jobs) + len(self._reserved) >= self.max_kept:
            raise JobsBusy(f"the server keeps {len(self._jobs)} document jobs, its limit; try again later")

    def _forget(self, job: DocumentJob) -> None:
        del self._jobs[job.id]
        self._owners.pop(job.id, None)
        for token in [t for t, i in self._shares.items() if i == job.id]:
            del self._shares[token]
        shutil.rmtree(job.folder, ignore_errors=True)

    def _forget_old(self) -> None:
        """Drop finished jobs older than ``keep_finished_s``, then the oldest finished ones while the
        files of all jobs pass ``max_bytes`` (lock held)."""
        now = time.time()
        finished = sorted((j for j in self._jobs.values() if j.status.over), key=lambda j: j.finished_at or 0.0)
        total = sum(folder_bytes(j.folder) for j in self._jobs.values())
        for job in finished:
            if (job.finished_at and now - job.finished_at > self.keep_finished_s) or total > self.max_bytes:
                total -= folder_bytes(job.folder)
                self._forget(job)
        if total > self.max_bytes:
            raise JobsBusy("the server's space for documents is full until the ones being read finish")


def api_client(visitor: str) -> list[tuple[str, int]]:
    """The (key, cap) pairs an API caller's job counts against: its visitor (``visitor_key``: an IPv6 /64 is one)."""
    return [(f"visitor:{visitor}", settings.value(PER_CLIENT))]


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
