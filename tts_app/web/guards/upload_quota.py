"""A quota on Gradio's upload folder: the total bytes visitors' uploads may hold on disk.

An upload that would pass the quota first sweeps the oldest uploads (old enough that no run
still needs them); if the folder is still full, the upload is refused (507) instead of filling
the disk. The generated-files store inside the same folder has its own caps and is not counted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from tts_app import settings
from tts_app.storage.file_sizes import dated_files

logger = logging.getLogger(__name__)

QUOTA_ENV = "TTS_APP_UPLOAD_QUOTA_BYTES"
MIN_AGE_ENV = "TTS_APP_UPLOAD_SWEEP_MIN_AGE_S"
DEFAULT_MIN_AGE_S = settings.default(MIN_AGE_ENV)
RESCAN_EVERY_S = 2.0  # a burst of uploads reuses one walk of the folder
SKIPPED_DIRS = frozenset({"tts_app_outputs"})  # output_store.store_root(): capped by its own sweeper



class UploadQuota:
    """Bytes in the upload folder plus uploads in flight, kept at most ``quota_bytes``."""

    def __init__(self, root: Callable[[], Path], quota_bytes: int, min_age_s: float = DEFAULT_MIN_AGE_S) -> None:
        self._root = root
        self.quota_bytes = quota_bytes
        self.min_age_s = min_age_s
        self._on_disk = 0
        self._scanned_at = -RESCAN_EVERY_S
        self._in_flight: dict[int, int] = {}
        self._next_id = 0
        self._lock = asyncio.Lock()

    @classmethod
    def from_env(cls, root: Callable[[], Path]) -> "UploadQuota":
        return cls(root, settings.value(QUOTA_ENV), settings.value(MIN_AGE_ENV))

    def _used(self) -> int:
        return self._on_disk + sum(self._in_flight.values())

    async def reserve(self, size: int) -> int | None:
        """A reservation id for an upload of at most ``size`` bytes, or None when the folder is full."""
        if self.quota_bytes <= 0:
            return -1  # no quota
        async with self._lock:
            if time.monotonic() - self._scanned_at >= RESCAN_EVERY_S:
                await self._scan()
            if self._used() + size > self.quota_bytes:
                await asyncio.to_thread(self._sweep, self._used() + size - self.quota_bytes)
                await self._scan()
            if self._used() + size > self.quota_bytes:
                return None
            self._next_id += 1
            self._in_flight[self._next_id] = size
            return self._next_id

    def release(self, reservation: int | None) -> None:
        """The upload is over: its bytes are on disk now (or were never written) and the next scan sees them."""
        if reservation is not None and self._in_flight.pop(reservation, None) is not None:
            self._scanned_at = -RESCAN_EVERY_S

    async def _scan(self) -> None:
        files = await asyncio.to_thread(dated_files, self._root(), SKIPPED_DIRS)
        self._on_disk = sum(size for _mtime, size, _path in files)
        self._scanned_at = time.monotonic()

    def _sweep(self, to_free: int) -> None:
        """Remove the oldest uploads older than ``min_age_s`` until ``to_free`` bytes are gone."""
        cutoff = time.time() - self.min_age_s
        freed = removed = 0
        for mtime, size, path in sorted(dated_files(self._root(), SKIPPED_DIRS)):
            if freed >= to_free or mtime > cutoff:
                break
            try:
                path.unlink()
            except OSError:
                continue
            freed += size
            removed += 1
        if removed:
            logger.info("upload quota: removed %d old uploads (%d bytes)", removed, freed)
