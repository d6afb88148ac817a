"""Word timings as subtitles: SRT and WebVTT cues, and a JSON-friendly list.

Cues show the text as written: the words read from one written token ("$5": "five dollars")
are one caption word, its times their union. Cues group consecutive written words and end at
a sentence end, a pause, or a length limit, as subtitle editors expect. WebVTT cues also carry
each written word's start as a timestamp tag, so a player can highlight the word being said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from tts_app.text.word_timing import WordTiming

MAX_CUE_WORDS = 10
MAX_CUE_CHARS = 60
PAUSE_SPLIT_S = 0.35  # a silence this long (a sentence pause, a break) starts a new cue


@dataclass(frozen=True)
class Cue:
    start: float
    end: float
    words: tuple[WordTiming, ...]

    @property
    def text(self) -> str:
        return " ".join(w.word for w in self.words)


def shift(words: Sequence[WordTiming], offset_s: float) -> list[WordTiming]:
    """The same words ``offset_s`` later (a line's words placed in a joined take)."""
    return [replace(w, start=w.start + offset_s, end=w.end + offset_s) for w in words]


def written_words(words: Sequence[WordTiming]) -> list[WordTiming]:
    """One entry per written token: consecutive words read from the same span become one, ``word`` its
    written text and its times their union; a word the text did not hold stays as spoken."""
    out: list[WordTiming] = []
    for w in words:
        last = out[-1] if out else None
        if last is not None and w.text_start is not None and (last.text_start, last.text_end) == (w.text_start, w.text_end):
            out[-1] = replace(last, start=min(last.start, w.start), end=max(last.end, w.end))
        else:
            out.append(replace(w, word=w.written) if w.written is not None else w)
    return out


def cues(words: Sequence[WordTiming]) -> list[Cue]:
    """Consecutive written words (``written_words``) grouped into subtitle cues."""
    out: list[Cue] = []
    group: list[WordTiming] = []
    for w in written_words(words):
        if group:
            chars = len(" ".join(g.word for g in group)) + 1 + len(w.word)
            if len(group) >= MAX_CUE_WORDS or chars > MAX_CUE_CHARS or w.start - group[-1].end >= PAUSE_SPLIT_S:
                out.append(Cue(group[0].start, group[-1].end, tuple(group)))
                group = []
        group.append(w)
    if group:
        out.append(Cue(group[0].start, group[-1].end, tuple(group)))
    return out


def _clock(seconds: float, sep: str) -> str:
    ms = max(0, round(seconds * 1000))
    h, ms = divmod(ms, 3_600_000)
    m, ms = divmod(ms, 60_000)
    s, ms = divmod(ms, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def to_srt(words: Sequence[WordTiming]) -> str:
    """SubRip text: numbered cues, ``HH:MM:SS,mmm`` times."""
    blocks = [f"{i}\n{_clock(c.start, ',')} --> {_clock(c.end, ',')}\n{c.text}\n" for i, c in enumerate(cues(words), 1)]
    return "\n".join(blocks)


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_vtt(words: Sequence[WordTiming]) -> str:
    """WebVTT text; inside a cue, each word after the first is preceded by its start time tag."""
    blocks = ["WEBVTT\n"]
    for c in cues(words):
        parts = [_vtt_escape(c.words[0].word)]
        parts += [f"<{_clock(w.start, '.')}>{_vtt_escape(w.word)}" for w in c.words[1:]]
        blocks.append(f"{_clock(c.start, '.')} --> {_clock(c.end, '.')}\n{' '.join(parts)}\n")
    return "\n".join(blocks)


def as_json(words: Sequence[WordTiming]) -> list[dict[str, float | int | str | None]]:
    """``[{word, start, end, source, text_start, text_end, written}]``, times rounded to the millisecond.

    ``word`` is spoken, ``written`` the request's text it was read from, ``input[text_start:text_end]``
    (null for a word the text did not hold); source: model, aligned or even.
    """
    return [
        {"word": w.word, "start": round(w.start, 3), "end": round(w.end, 3), "source": w.source,
         "text_start": w.text_start, "text_end": w.text_end, "written": w.written}
        for w in words
    ]  # fmt: skip
