"""The bounded store of generated files: every file older than an age cap is removed, and the
oldest files go first while the total is over a size cap. A background thread sweeps it.

The store lies inside Gradio's cache folder, so Gradio serves its files where they are
instead of copying each one into its cache (one copy on disk, not two).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tts_app import settings
from tts_app.storage.file_sizes import dated_files

logger = logging.getLogger(__name__)

MAX_AGE_ENV = "TTS_APP_OUTPUT_MAX_AGE_S"
MAX_BYTES_ENV = "TTS_APP_OUTPUT_MAX_BYTES"
SWEEP_ENV = "TTS_APP_OUTPUT_SWEEP_S"
EMPTY_DIR_GRACE_S = 60.0
WAKE_EVERY_FILES = 8  # a burst of runs gets swept without waiting for the timer


@dataclass
class StoreLimits:
    """Caps of the output store; defaults 1 h and 1 GB, swept every 60 s and after every 8 new files."""

    max_age_s: float = settings.default(MAX_AGE_ENV)
    max_bytes: int = settings.default(MAX_BYTES_ENV)
    sweep_every_s: float = settings.default(SWEEP_ENV)

    @classmethod
    def from_env(cls) -> "StoreLimits":
        return cls(settings.value(MAX_AGE_ENV), settings.value(MAX_BYTES_ENV), settings.value(SWEEP_ENV))


@dataclass
class SweepResult:
    removed_files: int = 0
    removed_bytes: int = 0
    kept_files: int = 0
    kept_bytes: int = 0


def store_root() -> Path:
    """<Gradio's cache folder>/tts_app_outputs."""
    from tts_app.storage.upload_paths import upload_root  # gradio (which it loads) is heavy: only when a file is stored

    return upload_root() / "tts_app_outputs"



def _remove_empty_dirs(root: Path, now: float) -> None:
    """Remove empty folders bottom-up; a fresh one may be about to get its file, so it stays a while."""
    for folder, _dirs, _names in os.walk(root, topdown=False):
        path = Path(folder)
        try:
            if path != root and now - path.stat().st_mtime > EMPTY_DIR_GRACE_S:
                path.rmdir()  # fails (and is left) unless empty
        except OSError:
            pass


def sweep(root: Path, limits: StoreLimits, now: float | None = None, pinned: frozenset[Path] = frozenset()) -> SweepResult:
    """Remove files over the age cap, then the oldest ones while the total is over the size cap.

    A file in a ``pinned`` folder (a run still being made or served) stays; it still counts toward
    the total, so the others go first."""
    now = time.time() if now is None else now
    result = SweepResult()
    kept = []
    held = 0
    for mtime, size, path in sorted(dated_files(root)):
        if path.parent in pinned:
            held += size
            result.kept_files += 1
        elif now - mtime > limits.max_age_s:
            result.removed_files, result.removed_bytes = result.removed_files + 1, result.removed_bytes + size
            path.unlink(missing_ok=True)
        else:
            kept.append((size, path))
    total = held + sum(size for size, _ in kept)
    over = 0
    while total > limits.max_bytes and over < len(kept):  # oldest first
        size, path = kept[over]
        path.unlink(missing_ok=True)
        total -= size
        over += 1
        result.removed_files, result.removed_bytes = result.removed_files + 1, result.removed_bytes + size
    result.kept_files, result.kept_bytes = result.kept_files + len(kept) - over, total
    _remove_empty_dirs(root, now)
    return result


@dataclass
class OutputStore:
    """The store's root, its limits, and the sweeper thread."""

    root: Path
    limits: StoreLimits
    _new_files: int = 0
    _wake: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _pinned: set[Path] = field(default_factory=set)  # folders the sweep leaves alone (runs in progress)
    _pin_lock: threading.Lock = field(default_factory=threading.Lock)

    def pin(self, folder: Path) -> None:
        """Keep ``folder``'s file from the sweep until ``unpin`` (a queued run's first lines must outlive
        the size cap's oldest-first removal until the run is served or its visitor leaves)."""
        with self._pin_lock:
            self._pinned.add(folder)

    def unpin(self, folders: list[Path]) -> None:
        with self._pin_lock:
            self._pinned.difference_update(folders)

    def pinned(self) -> frozenset[Path]:
        with self._pin_lock:
            return frozenset(self._pinned)

    def note_new_file(self) -> None:
        """Count a new file; every ``WAKE_EVERY_FILES`` files trigger a sweep before the timer does."""
        self._new_files += 1
        if self._new_files >= WAKE_EVERY_FILES:
            self._wake.set()

    def sweep(self) -> SweepResult:
        self._new_files = 0
        result = sweep(self.root, self.limits, pinned=self.pinned())
        if result.removed_files:
            logger.info("output store: removed %d files (%.1f MB), %.1f MB kept",
                        result.removed_files, result.removed_bytes / 1e6, result.kept_bytes / 1e6)
        return result

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="output-store-sweeper", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            # Cleared before sweeping: a wake-up sent while this sweep runs starts the next one at once.
            self._wake.clear()
            try:
                self.sweep()
            except OSError as exc:  # never let a disk error end the sweeper
                logger.warning("output store sweep failed: %s", exc)
            self._wake.wait(self.limits.sweep_every_s)


_store: OutputStore | None = None
_lock = threading.Lock()


def output_store() -> OutputStore:
    """The process's store (created, and its sweeper started, on first use)."""
    global _store
    with _lock:
        if _store is None:
            _store = OutputStore(store_root(), StoreLimits.from_env())
            _store.root.mkdir(parents=True, exist_ok=True)
            _store.start()
        return _store
