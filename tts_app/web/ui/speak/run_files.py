"""The files of one Speak run: a WAV and its SRT/WebVTT captions per finished line, then the take's."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tts_app.captions.subtitles import to_srt, to_vtt
from tts_app.web.ui.session.files import new_file, unpin_files
from tts_app.web.ui.speak.run_model import LINE_PAUSE_S, SpeakRun
from tts_app.audio.wav_io import GrowingWav, write_wav


def write_captions(session: str, stem: str, words: Sequence[Any], pinned: bool = False) -> list[str]:
    """SRT and WebVTT files of ``words`` (none for a model without word timings); ``pinned``: see new_file."""
    if not words:
        return []
    paths = []
    for suffix, render in ((".srt", to_srt), (".vtt", to_vtt)):
        path = new_file(session, stem, suffix, pinned)
        path.write_text(render(words), encoding="utf-8")
        paths.append(str(path))
    return paths


def _kept(path: str) -> bool:
    return os.path.isfile(path)


@dataclass
class RunFiles:
    """A run's files, pinned in the output store (its size sweep removes the oldest first, which for a
    run that queued long were its first lines) until ``release``: the run was served, or stopped."""

    session: str
    wavs: dict[int, str] = field(default_factory=dict)  # line index -> its WAV
    captions: dict[int, list[str]] = field(default_factory=dict)  # line index -> its SRT and VTT
    full: str = ""  # the joined take, once the run is over
    take_captions: list[str] = field(default_factory=list)

    def add_line(self, run: SpeakRun, index: int) -> None:
        line, stem = run.lines[index], f"line-{index + 1:02d}"
        self.wavs[index] = str(write_wav(new_file(self.session, stem, ".wav", pinned=True), line.audio(), run.sample_rate))
        self.captions[index] = write_captions(self.session, stem, line.words, pinned=True)

    def finish(self, run: SpeakRun) -> str:
        """Write the joined take and its captions; returns the take's WAV. The lines go in order with the stream's
        pauses between them: a written line from its file (read a block at a time: no line is held whole), a stopped
        run's unfinished line from what it made, a line with no audio left out (``take_words`` falls where it did)."""
        take = GrowingWav(new_file(self.session, "all-lines", ".wav", pinned=True), run.sample_rate)
        pause = np.zeros(int(round(LINE_PAUSE_S * run.sample_rate)), np.float32)
        try:
            joined = 0
            for index, line in enumerate(run.lines):
                if index not in self.wavs and not line.samples:
                    continue
                if joined:
                    take.write(pause)
                if index in self.wavs:
                    take.append_wav(self.wavs[index])
                else:
                    take.write(line.audio())
                joined += 1
        finally:
            take.close()
        self.full = str(take.path)
        self.take_captions = write_captions(self.session, "all-lines", run.take_words(), pinned=True)
        return self.full

    def release(self) -> None:
        """Unpin every file of the run (the store's caps apply to them again)."""
        paths = [*self.wavs.values(), *(p for c in self.captions.values() for p in c), *self.take_captions]
        unpin_files(paths + ([self.full] if self.full else []))

    def line_items(self, run: SpeakRun) -> list[dict[str, str]]:
        """What the line players show: index, text and WAV of every finished line still in the store."""
        return [{"index": str(i + 1), "text": run.lines[i].text, "path": self.wavs[i]} for i in sorted(self.wavs) if _kept(self.wavs[i])]

    def listing(self) -> list[str]:
        """Every file for the downloads box still in the store: the WAVs (lines, then the take), then the captions.

        The output store's size cap removes the oldest files first, which under a flood can be an early
        line of a run still being made: that file is left out, not handed to the page to fail on."""
        order = sorted(self.wavs)
        wavs = [self.wavs[i] for i in order] + ([self.full] if self.full else [])
        return [p for p in (*wavs, *(p for i in order for p in self.captions[i]), *self.take_captions) if _kept(p)]

    def line_files(self, count: int) -> list[str]:
        return [self.wavs.get(i, "") for i in range(count)]
