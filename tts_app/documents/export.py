"""A finished document's other files: SRT and WebVTT captions, M4B and MP3 with chapter marks (ffmpeg)."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tts_app.backends.base import WordTiming
from tts_app.captions.subtitles import to_srt, to_vtt
from tts_app.audio.ffmpeg_path import ffmpeg_exe

from tts_app.documents.job import ChapterMark

logger = logging.getLogger(__name__)

ENCODE_TIMEOUT_S = 1800  # a 200,000-character document is hours of audio; AAC encodes it in minutes


def write_captions(folder: Path, words: Sequence[WordTiming]) -> dict[str, Path]:
    files = {}
    for kind, render in (("srt", to_srt), ("vtt", to_vtt)):
        path = folder / f"document.{kind}"
        path.write_text(render(words), encoding="utf-8")
        files[kind] = path
    return files


def _escape(value: str) -> str:
    """FFMETADATA escaping: = ; # \\ and newlines."""
    for ch in ("\\", "=", ";", "#"):
        value = value.replace(ch, "\\" + ch)
    return value.replace("\n", " ")


def chapter_metadata(title: str, marks: Sequence[ChapterMark], total_s: float) -> str:
    """An FFMETADATA1 file: the title and one [CHAPTER] per mark (milliseconds)."""
    lines = [";FFMETADATA1", f"title={_escape(title)}"]
    for k, mark in enumerate(marks):
        end = marks[k + 1].start_s if k + 1 < len(marks) else total_s
        start_ms, end_ms = round(mark.start_s * 1000), max(round(end * 1000), round(mark.start_s * 1000) + 1)
        lines += ["[CHAPTER]", "TIMEBASE=1/1000", f"START={start_ms}", f"END={end_ms}", f"title={_escape(mark.title)}"]
    return "\n".join(lines) + "\n"


def write_chaptered(folder: Path, wav: Path, title: str, marks: Sequence[ChapterMark], total_s: float) -> dict[str, Path]:
    """M4B (AAC) and MP3 of ``wav`` with chapter marks; none when ffmpeg is missing or fails (logged)."""
    ffmpeg = ffmpeg_exe()
    if ffmpeg is None:
        logger.info("document export: no ffmpeg, WAV only")
        return {}
    meta = folder / "chapters.txt"
    meta.write_text(chapter_metadata(title, marks, total_s), encoding="utf-8")
    files = {}
    for kind, codec in (("m4b", ["-c:a", "aac", "-b:a", "64k", "-f", "mp4"]), ("mp3", ["-c:a", "libmp3lame", "-b:a", "64k", "-id3v2_version", "3"])):
        out = folder / f"document.{kind}"
        cmd = [ffmpeg, "-nostdin", "-loglevel", "error", "-y", "-i", str(wav), "-i", str(meta), "-map", "0:a",
               "-map_metadata", "1", "-map_chapters", "1", *codec, str(out)]  # fmt: skip
        try:
            subprocess.run(cmd, check=True, capture_output=True, timeout=ENCODE_TIMEOUT_S)
            files[kind] = out
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            logger.warning("document export to %s failed: %s %s", kind, exc, detail.decode(errors="replace")[-300:])
            out.unlink(missing_ok=True)
    return files
