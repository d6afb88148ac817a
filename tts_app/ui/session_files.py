"""Where a session's audio and zip files live, and their removal when the session ends.

They live in the bounded output store (age and size caps, swept in the background), which
lies inside Gradio's cache folder so Gradio serves them without copying them again.
"""

from __future__ import annotations

import logging
import re
import shutil
import uuid
from pathlib import Path

from tts_app.output_store import output_store

logger = logging.getLogger(__name__)


def session_dir(session: str | None) -> Path:
    """A directory private to ``session`` (created on demand)."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "", session or "") or "anonymous"
    path = output_store().root / safe
    path.mkdir(parents=True, exist_ok=True)
    return path


def new_file(session: str | None, stem: str, suffix: str) -> Path:
    """A fresh, unique file path in the session's directory."""
    safe_stem = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)[:60] or "file"
    output_store().note_new_file()
    run_dir = session_dir(session) / uuid.uuid4().hex[:10]
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir / f"{safe_stem}{suffix}"


def remove_session(session: str | None) -> None:
    """Delete a session's files (called when its browser tab goes away)."""
    if not session:
        return
    path = session_dir(session)
    shutil.rmtree(path, ignore_errors=True)
    logger.debug("removed session files %s", path)
