"""Where the page's audio and zip files live, who owns them, and their removal when a session ends.

Each file gets its own folder, named by a fresh ``secrets.token_urlsafe``: its URL names that
one file and nothing else. The session hash never appears in a URL: Gradio takes it as the
key to a session's state, events and heartbeat, so a shared download link must not carry it.
Which folders a session owns is kept here, in memory only.

The files live in the bounded output store (age and size caps, swept in the background), which
lies inside Gradio's cache folder so Gradio serves them without copying them again.
"""

from __future__ import annotations

import logging
import re
import secrets
import shutil
import threading
from pathlib import Path

from tts_app.storage.output_store import output_store

logger = logging.getLogger(__name__)

TOKEN_BYTES = 16  # 128 random bits per folder name
_PRUNE_AT = 512  # a session's list is pruned of folders the store already swept when it grows past this
_owned: dict[str, list[Path]] = {}  # session -> the token folders of its files
_lock = threading.Lock()


def new_file(session: str | None, stem: str, suffix: str, pinned: bool = False) -> Path:
    """A fresh file path in a new, unguessably named folder, recorded as ``session``'s. ``pinned``: the
    store's sweep leaves it until ``unpin_files`` (or the session's removal)."""
    safe_stem = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)[:60] or "file"
    store = output_store()
    store.note_new_file()
    folder = store.root / secrets.token_urlsafe(TOKEN_BYTES)
    if pinned:
        store.pin(folder)
    folder.mkdir(parents=True)  # never exist_ok: two files must never share a folder
    if session:
        with _lock:
            folders = _owned.setdefault(session, [])
            folders.append(folder)
            if len(folders) > _PRUNE_AT:
                folders[:] = [f for f in folders if f.is_dir()]
    return folder / f"{safe_stem}{suffix}"


def forget_session(session: str | None) -> None:
    """Forget which files ``session`` owns (they stay until the store's age or size cap removes them)."""
    with _lock:
        _owned.pop(session or "", None)


def unpin_files(paths: list[str]) -> None:
    """Hand files made with ``pinned`` back to the store's sweep (their run was served or abandoned)."""
    if paths:
        output_store().unpin([Path(p).parent for p in paths])


def remove_session(session: str | None) -> None:
    """Delete ``session``'s files (its page went away) and nobody else's."""
    with _lock:
        folders = _owned.pop(session or "", [])
    if folders:
        output_store().unpin(folders)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    if folders:
        logger.debug("removed %d generated files of a closed session", len(folders))
