"""The output store's sweep (age cap, then oldest-first size cap) and its wake-up on new files."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tts_app.storage.file_sizes import folder_bytes
from tts_app.storage.output_store import WAKE_EVERY_FILES, OutputStore, StoreLimits, sweep


def _write(path: Path, size: int, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime, mtime))


def test_sweep_removes_old_files_then_oldest_over_the_size_cap(tmp_path: Path) -> None:
    now = time.time()
    _write(tmp_path / "a" / "expired.wav", 10, now - 100)
    for n in range(5):  # 100 bytes each, n = 0 oldest
        _write(tmp_path / "b" / f"f{n}.wav", 100, now - 50 + n)
    result = sweep(tmp_path, StoreLimits(max_age_s=60, max_bytes=250), now=now)
    left = sorted(p.name for p in tmp_path.rglob("*.wav"))
    assert left == ["f3.wav", "f4.wav"]
    assert (result.removed_files, result.kept_files, result.kept_bytes) == (4, 2, 200)


def test_a_pinned_file_outlives_the_size_cap_and_counts_toward_it(tmp_path: Path) -> None:
    """A run that queued long: its first line is the store's oldest file, pinned until the run is served."""
    now = time.time()
    for n in range(5):  # 100 bytes each, n = 0 oldest
        _write(tmp_path / f"d{n}" / f"f{n}.wav", 100, now - 50 + n)
    store = OutputStore(tmp_path, StoreLimits(max_age_s=3600, max_bytes=250, sweep_every_s=3600))
    store.pin(tmp_path / "d0")
    result = store.sweep()
    assert sorted(p.name for p in tmp_path.rglob("*.wav")) == ["f0.wav", "f4.wav"]  # the pinned one counts: 200 kept
    assert (result.removed_files, result.kept_files, result.kept_bytes) == (3, 2, 200)
    store.unpin([tmp_path / "d0"])
    store.limits.max_bytes = 100
    store.sweep()
    assert sorted(p.name for p in tmp_path.rglob("*.wav")) == ["f4.wav"]  # unpinned: the oldest goes first again


def test_a_burst_of_new_files_wakes_the_sweeper(tmp_path: Path) -> None:
    store = OutputStore(tmp_path, StoreLimits(max_bytes=1000, sweep_every_s=3600))
    for _ in range(WAKE_EVERY_FILES - 1):
        store.note_new_file()
    assert not store._wake.is_set()
    store.note_new_file()
    assert store._wake.is_set()


def test_the_sweeper_thread_sweeps_after_a_burst_without_waiting_for_its_timer(tmp_path: Path) -> None:
    store = OutputStore(tmp_path, StoreLimits(max_bytes=300, sweep_every_s=3600))
    store.start()
    try:
        time.sleep(0.2)  # the first sweep (empty store) ran; the timer is an hour away
        now = time.time()
        for n in range(WAKE_EVERY_FILES):
            _write(tmp_path / "s" / f"f{n}.wav", 100, now - 10 + n)
            store.note_new_file()
        deadline = time.time() + 10
        while folder_bytes(tmp_path) > 300 and time.time() < deadline:
            time.sleep(0.05)
        assert folder_bytes(tmp_path) <= 300
    finally:
        store.stop()
