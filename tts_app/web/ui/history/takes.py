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

# Each column: its header, what its figure means (the header's tooltip, theme.py's script), its type, its share of
# the page's width (every column shows at 1280 px, the text cut to its share; a phone scrolls instead).
HISTORY_COLUMNS = [
    ("take", "The take's number in this session", "number", "4%"),
    ("time", "When the take was made (the server's clock)", "str", "7%"),
    ("kind", "speak, speak · stopped (what was made before Stop), or an A/B sample (its side shown after the reveal)", "str", "10%"),
    ("text", "Its first line, and how many more", "str", "19%"),
    ("voice", "The voice spoken in", "str", "11%"),
    ("match", "Voice-matching strength: 0 the model's own voice, 1 as close to the reference as it can", "number", "5%"),
    ("speed", "Speaking rate (1 is the model's own)", "number", "5%"),
    ("seed", "The sampling seed: the same seed, text and settings give the same audio", "number", "4%"),
    ("live", "Streamed while it was made (yes) or played once made (no)", "str", "4%"),
    ("first audio (s)", "Seconds from the click to the first audio", "number", "7%"),
    ("total (s)", "Seconds from the click to the end of the last line", "number", "6%"),
    ("RTF", "Time to make it over its length: below 1 is faster than real time", "number", "5%"),
    ("max batch", "The most requests the engine stepped together while making it", "number", "6%"),
    ("queue (s)", "Seconds the take waited for the engine before its first line was decoded "
                  "(its later lines start as the listener needs them)", "number", "7%"),
]  # fmt: skip
HISTORY_HEADERS = [name for name, _tip, _type, _width in HISTORY_COLUMNS]
HISTORY_TIPS = {name: tip for name, tip, _type, _width in HISTORY_COLUMNS}
HISTORY_TYPES = [kind for _name, _tip, kind, _width in HISTORY_COLUMNS]
HISTORY_WIDTHS = [width for _name, _tip, _type, width in HISTORY_COLUMNS]
MAX_TAKES = 200  # a session keeps its latest takes only


@dataclass
class Take:
    """One rendered take, as the history keeps it (plain values only, so gr.State copies it cheaply)."""

    kind: str
    lines: list[str]
    voice: str
    voice_strength: float | None  # None: hidden (a blind A/B sample before its reveal)
    speed: float | None
    seed: int | None
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
