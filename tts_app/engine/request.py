"""A request: plain state and a status; the scheduler moves it, the backend never sees it."""

from __future__ import annotations

import enum
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from tts_app.backends.base import RowInput

_IDS = itertools.count(1)


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(eq=False)  # identity: a request is equal only to itself
class Request:
    row: RowInput
    id: int = field(default_factory=lambda: next(_IDS))
    status: RequestStatus = RequestStatus.WAITING
    state: Any = None  # the backend's per-row state, once prepared
    cancel_requested: bool = False
    submitted_at: float = field(default_factory=time.perf_counter)
    admitted_at: float | None = None
    first_audio_at: float | None = None
    finished_at: float | None = None
    samples: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    error: BaseException | None = None
    # Quality of service (deadlines.py, scheduler.py): who asked, how, and where its listener stands.
    stream: bool = True  # a listener plays it as it comes; False: a whole file (API stream false, documents)
    client: str | None = None  # a page session, API key or address; None: the app itself (no share limit)
    audio_est_s: float = 0.0  # the audio it will give, estimated from its text (queue ETAs)
    eta_at_submit_s: float | None = None  # the wait the queue predicted when it was submitted
    remaining_est_s: float | None = None  # the audio still to give, once the backend knows it
    play_deadline: float | None = None  # when a 1x player started at the first chunk runs out of audio
    stall_s: float = 0.0  # how long that player has waited for audio so far
    last_step_at: float | None = None
    window_level: int | None = None  # the backend was told none yet: its rows start with the usual windows
    sample_rate: int = 0  # the engine's, for seconds of audio sent
    # The line heard just before this one when both came in one submit_many (a page's run): a group is
    # heard line after line, so it holds one stream place and one client share, and a line's first
    # audio is due when the listener has heard the line before it.
    after: "Request | None" = None
    group: int = 0  # the id of the group's first request (its own id when alone)

    def remaining_s(self) -> float:
        """Audio still to come (seconds), from the backend when it knows, else from the text's estimate."""
        if self.remaining_est_s is not None:
            return self.remaining_est_s
        return max(0.0, self.audio_est_s - self.sent_s)

    @property
    def sent_s(self) -> float:
        return self.samples / self.sample_rate if self.sample_rate else 0.0
