"""One Speak run as plain state, fed by engine events: lines, their audio, the live-stream order, figures.

No Gradio here: the handler feeds it events and turns each ``RunStep`` into page updates.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tts_app.backends.base import WordTiming
from tts_app.captions.subtitles import shift
from tts_app.web.ui.common.run_figures import RunFigures
from tts_app.web.ui.speak.stream_pacer import PREBUFFER_S, StreamPacer, pass_through

LINE_PAUSE_S = 0.3  # silence between lines, in the stream and in the joined file

Event = tuple[int, Any]  # (line index, AudioChunk | None for its end | an exception for its failure)


class LineFailed(RuntimeError):
    """A line's engine request failed; the message is one line for the page."""


@dataclass
class LineState:
    """One line of the run: its text, the audio it holds, how much of it the live stream took.

    A finished line's audio lives in its WAV file (run_files.py) once the stream has taken it: ``release`` lets
    the chunks go, so a run of 50 long lines holds the audio of the lines being made, not of all of them.
    """

    text: str
    chunks: list[np.ndarray] = field(default_factory=list)  # each [T] float32, until released
    words: list[WordTiming] = field(default_factory=list)  # seconds from the line's first sample
    streamed: int = 0  # chunks already handed to the stream pacer
    done: bool = False
    samples: int = 0  # the line's length so far, released chunks included

    def audio(self) -> np.ndarray:  # [T]
        return np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.float32)


@dataclass
class RunStep:
    """What changed after one batch of events."""

    segments: list[np.ndarray] = field(default_factory=list)  # live-stream segments to send, in order, each [T]
    finished: list[int] = field(default_factory=list)  # indices of lines that ended in this batch
    first_audio: bool = False  # the run's first audio arrived in this batch
    new_words: bool = False  # word timings arrived in this batch


class SpeakRun:
    """The state of one run: feed it engine events, read back what to show."""

    def __init__(
        self,
        lines: Sequence[str],
        sample_rate: int,
        streaming: bool,
        started: float | None = None,
        prebuffer_s: float = PREBUFFER_S,
        live: bool = False,
    ) -> None:
        self.sample_rate = int(sample_rate)
        self.lines = [LineState(text=line) for line in lines]
        self.figures = RunFigures()
        self.started = time.perf_counter() if started is None else started
        # live: the page's own player takes the audio as it comes and buffers it itself.
        pacer = pass_through(self.sample_rate) if live else StreamPacer(self.sample_rate, prebuffer_s=prebuffer_s)
        self._pacer = pacer if streaming else None
        self._next_line = 0  # the line the live stream is on

    @property
    def streaming(self) -> bool:
        return self._pacer is not None

    @property
    def finished_count(self) -> int:
        return sum(1 for line in self.lines if line.done)

    @property
    def complete(self) -> bool:
        return all(line.done for line in self.lines)

    @property
    def has_audio(self) -> bool:
        return self.figures.time_to_first_audio_s is not None

    def feed(self, batch: Sequence[Event], metrics_of: Any) -> RunStep:
        """Apply ``batch``; ``metrics_of(index)`` gives a finished line's engine metrics (a dict).

        Raises LineFailed when a line's request failed.
        """
        step = RunStep()
        for index, item in batch:
            line = self.lines[index]
            if isinstance(item, BaseException):
                raise LineFailed(f"Line {index + 1} failed: {item}")
            if item is None:
                line.done = True
                step.finished.append(index)
                self.figures.add_line(index + 1, line.text, metrics_of(index))
            else:
                line.words.extend(item.words)
                step.new_words = step.new_words or bool(item.words)
                if not item.audio.size:
                    continue
                line.chunks.append(item.audio)
                line.samples += item.audio.size
                if self.figures.time_to_first_audio_s is None:
                    self.figures.time_to_first_audio_s = time.perf_counter() - self.started
                    step.first_audio = True
        step.segments = self._stream_segments()
        return step

    def _stream_segments(self) -> list[np.ndarray]:
        """Hand the pacer the lines in order (later lines wait in their buffers) and take its segments."""
        pacer = self._pacer
        if pacer is None:
            return []
        while self._next_line < len(self.lines):
            current = self.lines[self._next_line]
            for chunk in current.chunks[current.streamed :]:
                pacer.push(chunk)
            current.streamed = len(current.chunks)
            if not current.done:
                break
            self._next_line += 1
            if self._next_line < len(self.lines):
                pacer.push(np.zeros(int(LINE_PAUSE_S * self.sample_rate), np.float32))
        return pacer.take(final=self._next_line >= len(self.lines))

    def take_lines(self) -> list[list[WordTiming]]:
        """Each line's words heard so far, timed in the joined take (= the live stream): moved by the
        audio and pauses before the line. Lines whose start is not known yet are left out."""
        lines: list[list[WordTiming]] = []
        offset = 0
        pause = int(round(LINE_PAUSE_S * self.sample_rate))
        for line in self.lines:
            lines.append(shift(line.words, offset / self.sample_rate))
            if not line.done:
                break
            offset += line.samples + pause
        return lines

    def take_words(self) -> list[WordTiming]:
        """``take_lines`` as one list."""
        return [w for line in self.take_lines() for w in line]

    def release(self, written: Collection[int]) -> None:
        """Let go of the audio of every finished line in ``written`` (its WAV is on disk) that the live stream has
        taken (all of it, when the run does not stream)."""
        for index in written:
            line = self.lines[index]
            if line.done and line.chunks and (self._pacer is None or index < self._next_line):
                line.chunks, line.streamed = [], 0

    def finish(self) -> dict[str, Any]:
        """Close the figures; returns their summary."""
        self.figures.total_s = time.perf_counter() - self.started
        return self.figures.summary()


async def pump(index: int, handle: Any, events: asyncio.Queue[Event]) -> None:
    """Forward one engine handle's chunks to ``events``; None marks its end, an exception its failure."""
    try:
        async for chunk in handle.achunks(forget=True):  # the page keeps the audio; the handle need not
            await events.put((index, chunk))
        await events.put((index, None))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - handed to the consumer, which reports it in the page
        await events.put((index, exc))


async def next_batch(events: asyncio.Queue[Event], getter: asyncio.Future[Event] | None, timeout_s: float) -> tuple[list[Event], asyncio.Future[Event] | None]:
    """The events that arrived within ``timeout_s`` (empty on a timeout), and the get() still pending.

    One pending get() is kept across timeouts, so a timeout never drops an event.
    """
    getter = getter or asyncio.ensure_future(events.get())
    done, _ = await asyncio.wait({getter}, timeout=timeout_s)
    if not done:
        return [], getter
    batch = [getter.result()]
    while not events.empty():
        batch.append(events.get_nowait())
    return batch, None
