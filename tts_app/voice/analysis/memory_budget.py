"""A memory budget for reference analyses: each reserves its estimated peak before it starts.

Sixteen hostile clips analysed at once peaked at 6.8 GB (Gradio runs 32 events at once);
a semaphore counted in bytes instead of analyses lets many small clips run together and
only a few large ones. An analysis that does not fit waits its turn; one larger than the
whole budget is refused at once with a one-line VoiceError.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tts_app import settings
from tts_app.voice.errors import VoiceError

BUDGET_ENV = "TTS_APP_VOICE_ANALYSIS_MB"
# Peak bytes of one analysis (ingest, statistics, class map), fitted with tracemalloc on clips
# from 8 s at 16 kHz to 60 s at 96 kHz stereo and rounded up: a fixed part, bytes per sample
# decoded at the working rate, bytes per sample kept (<= 30 s), and the input-rate buffer of a
# clip resampled on the way in.
FIXED_BYTES = 40 << 20
PER_DECODED_SAMPLE = 50
PER_KEPT_SAMPLE = 70
PER_INPUT_SAMPLE_RESAMPLED = 8


def analysis_bytes(frames: int, rate: int, work_rate: int, kept_s: float) -> int:
    """Estimated peak of analysing ``frames`` at ``rate`` Hz, worked on at ``work_rate`` Hz."""
    work = frames * work_rate // rate
    resampled = frames * PER_INPUT_SAMPLE_RESAMPLED if work_rate != rate else 0
    return FIXED_BYTES + PER_DECODED_SAMPLE * work + PER_KEPT_SAMPLE * min(work, int(kept_s * work_rate)) + resampled


class MemoryBudget:
    """Bytes reserved by running analyses, at most ``total``; a thread's nested reservations are free.
    ``total_bytes`` None: $TTS_APP_VOICE_ANALYSIS_MB, read at each reservation."""

    def __init__(self, total_bytes: int | None = None) -> None:
        self._total = total_bytes
        self.used = 0
        self._changed = threading.Condition()
        self._held = threading.local()

    @property
    def total(self) -> int:
        return self._total if self._total is not None else settings.value(BUDGET_ENV) << 20

    @contextmanager
    def reserve(self, nbytes: int, what: str) -> Iterator[None]:
        if getattr(self._held, "active", False):  # make_profile's ingest inside its own reservation
            yield
            return
        total = self.total
        if nbytes > total:
            raise VoiceError(
                f"{what} needs about {nbytes >> 20} MB to analyse; the server's limit is {total >> 20} MB "
                "(use a shorter clip, or one at 48 kHz or less)"
            )
        with self._changed:
            self._changed.wait_for(lambda: self.used + nbytes <= total)
            self.used += nbytes
        self._held.active = True
        try:
            yield
        finally:
            self._held.active = False
            with self._changed:
                self.used -= nbytes
                self._changed.notify_all()


analysis_budget = MemoryBudget()  # one for the process: the analyses of every visitor share it
