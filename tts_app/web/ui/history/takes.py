"""The session's takes: each run's text, voice, settings, seed and figures, listed and zipped together."""

from __future__ import annotations

import csv
import io
import json
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tts_app.web.ui.history.preferences import tally_csv
from tts_app.web.ui.session.files import new_file

HISTORY_HEADERS = [
    "take",
    "time",
    "kind",
    "text",
    "voice",
    "match",
    "speed",
    "seed",
    "live",
    "TTFA (s)",
    "total (s)",
    "RTF",
    "batch",
    "wait (s)",
]
HISTORY_TYPES = ["number", "str", "str", "str", "str", "number", "number", "number", "str", "number", "number", "number", "number", "number"]
# Shares of the page's width: every column shows at 1280 px, the text cut to its share (a phone scrolls instead).
HISTORY_WIDTHS = ["5%", "8%", "6%", "21%", "11%", "5%", "5%", "5%", "4%", "6%", "6%", "6%", "6%", "6%"]
MAX_TAKES = 200  # a session keeps its latest takes only


@dataclass
class Take:
    """One rendered take, as the history keeps it (plain values only, so gr.State copies it cheaply)."""

    kind: str
    lines: list[str]
    voice: str
    voice_strength: float
    speed: float
    seed: int
    streaming: bool
    figures: dict[str, Any]
    line_files: list[str]
    full_file: str | None = None
    note: str = ""
    created: float = field(default_factory=time.time)
    pair: int = 0  # an A/B side: its pair's number in this session (0: not an A/B take)
    position: int = 0  # an A/B side: its player, sample 1 (left) or 2
    contender: str = ""  # an A/B side: its name in the preference tally (preferences.py), once revealed
    preferred: bool | None = None  # an A/B side voted on blind: whether it was the one preferred


def add_take(history: list[dict[str, Any]] | None, take: Take) -> list[dict[str, Any]]:
    """A new history list with ``take`` appended (numbered), keeping the latest MAX_TAKES."""
    takes = list(history or [])
    record = asdict(take)
    record["take"] = (takes[-1]["take"] + 1) if takes else 1
    takes.append(record)
    return takes[-MAX_TAKES:]


def _text_preview(lines: list[str]) -> str:
    first = lines[0] if lines else ""
    if len(first) > 40:
        first = first[:37] + "…"
    return f"{first} (+{len(lines) - 1} lines)" if len(lines) > 1 else first


def history_table(history: list[dict[str, Any]] | None) -> list[list[Any]]:
    """Rows for the history table, newest first."""
    rows: list[list[Any]] = []
    for take in reversed(history or []):
        figures = take.get("figures", {})
        rows.append(
            [
                take["take"],
                time.strftime("%H:%M:%S", time.localtime(take.get("created", 0))),
                take.get("kind", ""),
                _text_preview(take.get("lines", [])),
                take.get("voice", ""),
                take.get("voice_strength"),
                take.get("speed"),
                take.get("seed"),
                "yes" if take.get("streaming") else "no",
                figures.get("time_to_first_audio_s"),
                figures.get("total_s"),
                figures.get("rtf"),
                figures.get("max_batch"),
                figures.get("queue_wait_s"),
            ]
        )
    return rows


def _csv_text(history: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(HISTORY_HEADERS)
    writer.writerows(reversed(history_table(history)))
    return buffer.getvalue()


def history_zip(history: list[dict[str, Any]] | None, session: str | None) -> str | None:
    """One zip of every take: its audio files, plus takes.json (all fields), takes.csv (the table) and
    preferences.csv (the visitor's blind A/B tally)."""
    takes = list(history or [])
    if not takes:
        return None
    path = new_file(session, "tts-takes", ".zip")
    records: list[dict[str, Any]] = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for take in takes:
            folder = f"take-{take['take']:03d}"
            record = dict(take)
            stored: list[str] = []
            files = list(take.get("line_files", []))
            for number, file in enumerate(files, start=1):
                if file and Path(file).is_file():
                    name = f"{folder}/{Path(file).stem or f'line-{number:02d}'}.wav"
                    archive.write(file, name)
                    stored.append(name)
            full = take.get("full_file")
            if full and Path(full).is_file():
                archive.write(full, f"{folder}/all-lines.wav")
                record["full_file"] = f"{folder}/all-lines.wav"
            record["line_files"] = stored
            records.append(record)
        archive.writestr("takes.json", json.dumps(records, indent=2))
        archive.writestr("takes.csv", _csv_text(takes))
        archive.writestr("preferences.csv", tally_csv(takes))  # the blind A/B tally (preferences.py)
    return str(path)


def take_audio(history: list[dict[str, Any]] | None, row: int) -> tuple[str | None, str]:
    """The audio of the take shown at ``row`` of the (newest-first) table, and a caption."""
    takes = list(reversed(history or []))
    if not 0 <= row < len(takes):
        return None, ""
    take = takes[row]
    path = take.get("full_file") or next(iter(take.get("line_files") or []), None)
    if path and not Path(path).is_file():
        return None, f"Take {take['take']}: its audio was removed (the server keeps generated files for a limited time)"
    lines = take.get("lines", [])
    return path, f"Take {take['take']} · {take.get('kind', '')} · {take.get('voice', '')} · {len(lines)} line{'s' if len(lines) != 1 else ''}"
