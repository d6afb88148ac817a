"""Where ffmpeg is: the system's, else the one the imageio-ffmpeg wheel ships (so `pip install` is enough).

The wheel's static binary comes first: it starts in 30-60 ms here, Debian's dynamically linked one in
175-430 ms (benchmarks/api_formats.py), and every streamed run and encoded API response starts one.
Gradio's streamed audio runs ``ffmpeg`` by name from PATH, so ``ensure_ffmpeg_on_path`` links the
wheel's binary as ``ffmpeg`` in a private directory and puts that directory first on PATH.
The wheel has no ffprobe, yet Gradio probes every audio file it serves with ``ffprobe`` once it sees
an ``ffmpeg`` (and a missing ffprobe is then an exception); where none exists, the directory also gets
an ``ffprobe`` that fails at once, which Gradio reads as "unknown codec, serve the file as it is"
(the app's own files are all WAV).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

_FFPROBE_STUB = "#!/bin/sh\necho 'ffprobe: not installed (tts_app uses the imageio-ffmpeg wheel, which has none)' >&2\nexit 1\n"
_linked_dir: Path | None = None  # this process's directory holding the ``ffmpeg`` link


def _system_ffmpeg() -> str | None:
    return shutil.which("ffmpeg")


def _wheel_ffmpeg() -> str | None:
    try:
        import imageio_ffmpeg  # only when no system ffmpeg is found
    except ImportError:
        return None
    try:
        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError:  # the wheel has no binary for this platform
        return None
    return exe if exe and Path(exe).is_file() else None


def ffmpeg_exe() -> str | None:
    """The ffmpeg to run: the imageio-ffmpeg wheel's first (faster start), then the system's; None when neither exists."""
    return _wheel_ffmpeg() or _system_ffmpeg()


def ensure_ffmpeg_on_path() -> str | None:
    """Make ``ffmpeg`` on PATH resolve (Gradio looks it up by name); warn once when there is none at all.

    Returns the binary that ``ffmpeg`` now names, or None.
    """
    wheel = _wheel_ffmpeg()
    if wheel is None:
        system = _system_ffmpeg()
        if system:
            return system
        logger.warning(
            "no ffmpeg found (neither on PATH nor from the imageio-ffmpeg wheel): streamed audio in the page "
            "will fail; pip install -r requirements.txt, or apt-get install ffmpeg"
        )
        return None
    global _linked_dir
    if _linked_dir is None:
        # A fresh private directory (mode 0700): a shared, predictable one could be planted by another user.
        _linked_dir = Path(tempfile.mkdtemp(prefix="tts_app-ffmpeg-"))
        (_linked_dir / ("ffmpeg.exe" if os.name == "nt" else "ffmpeg")).symlink_to(wheel)
        if shutil.which("ffprobe") is None and os.name != "nt":
            stub = _linked_dir / "ffprobe"
            stub.write_text(_FFPROBE_STUB)
            stub.chmod(0o700)
    if str(_linked_dir) not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([str(_linked_dir), os.environ.get("PATH", "")]).rstrip(os.pathsep)
    logger.info("using ffmpeg from the imageio-ffmpeg wheel: %s", wheel)
    return wheel
