"""Where the ffmpeg binary is: the system's, else the one the imageio-ffmpeg wheel ships."""

from __future__ import annotations

import shutil


def ffmpeg_exe() -> str | None:
    """Path of an ffmpeg binary, preferring one on PATH; None when neither exists."""
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg  # a wheel with a static ffmpeg; optional at import time
    except ImportError:
        return None
    try:
        return imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:  # the wheel has no binary for this platform
        return None
