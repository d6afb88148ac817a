"""Which file paths a request may name: regular files inside Gradio's upload folder, nothing else."""

from __future__ import annotations

import os
import stat
from pathlib import Path

# One message for every refusal: it must not tell a visitor whether a path exists.
REFUSED_MESSAGE = "file not accepted: only files uploaded to this server can be used"


class UploadPathError(ValueError):
    """A path from a request that is not a regular file uploaded to this server."""

    def __init__(self) -> None:
        super().__init__(REFUSED_MESSAGE)


def upload_root() -> Path:
    """Gradio's upload folder ($GRADIO_TEMP_DIR, else <tmp>/gradio), symlinks resolved."""
    from tts_app.framework import upload_folder  # it loads uvicorn; the CLI imports this module too

    return Path(upload_folder()).resolve()


def check_upload_path(path: str | os.PathLike[str]) -> Path:
    """The resolved path if ``path`` is a regular file inside the upload folder; UploadPathError otherwise.

    Symlinks are followed before the containment check (a link in the upload folder that
    points out of it is refused), and only regular files pass: devices such as /dev/zero,
    FIFOs and directories never reach a reader or a hash.
    """
    try:
        resolved = Path(os.path.abspath(os.fspath(path))).resolve()
    except (OSError, RuntimeError, TypeError, ValueError):  # symlink loop, NUL byte, not a path
        raise UploadPathError() from None
    if not resolved.is_relative_to(upload_root()):
        raise UploadPathError()
    try:
        mode = os.stat(resolved).st_mode
    except (OSError, ValueError):
        raise UploadPathError() from None
    if not stat.S_ISREG(mode):
        raise UploadPathError()
    return resolved
