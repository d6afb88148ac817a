"""A request: plain state and a status; the scheduler moves it, the backend never sees it.

Its listener's bookkeeping lives here too (a 1x player started at the first chunk: when it runs dry, how long it
waited), so the scheduler and the step plan read a request and never keep state of their own about it.
"""

from __future__ import annotations

import enum
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from tts_app.backends.base import Backend, RowInput
from tts_app.backends.params import SpeechParams

_IDS = itertools.count(1)


class EngineClosed(RuntimeError):
    """The engine was closed before the request finished."""


class EngineBusy(RuntimeError):
    """The engine cannot take the request now; ``retry_after_s`` says when trying again makes sense."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ClientMissing(RuntimeError):
    """A submission to an engine that serves visitors named no client (``SpeechParams.client``): a caller's bug."""


class LineRejected(ValueError):
    """One text of ``submit_many`` cannot be spoken; ``index`` is its place (from 0), ``error`` the reason."""

    def __init__(self, index: int, error: ValueError) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error


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

    def buffered_s(self, now: float) -> float:
        """Audio a 1x player started at the first chunk holds now (0 before the first chunk)."""
        return 0.0 if self.play_deadline is None else max(0.0, self.play_deadline - now)

    def ahead(self) -> tuple["Request | None", float]:
        """The nearest earlier line of the group that has sounded (None: none has), and the audio of the lines between."""
        ahead, queued_audio = self.after, 0.0
        while ahead is not None and ahead.play_deadline is None:
            queued_audio += ahead.remaining_s()
            ahead = ahead.after
        return ahead, queued_audio

    def heard_from(self) -> float | None:
        """When a 1x listener reaches this line of a group: the lines before it played out (None when
        it is not a later line, or none of its group has sounded yet)."""
        ahead, queued_audio = self.ahead()
        return None if ahead is None else ahead.play_deadline + ahead.remaining_s() + queued_audio

    def played(self, now: float, audio_s: float) -> None:
        """``audio_s`` more reached the listener at ``now``: it waited (a stall) if it came after the player ran dry."""
        if self.play_deadline is None:  # a group's later line plays once the listener reaches it
            heard = self.heard_from()
            self.stall_s += max(0.0, now - heard) if heard is not None else 0.0
            self.play_deadline = max(now, heard if heard is not None else now)
        elif now > self.play_deadline:
            self.stall_s += now - self.play_deadline
            self.play_deadline = now
        self.play_deadline += audio_s


def build_requests(texts: Sequence[str], params: SpeechParams, backend: Backend, sample_rate: int,
                   in_order: bool) -> list[Request]:
    """One request a text, checked by ``backend`` (LineRejected names a bad one); ``in_order``: one group, heard in turn."""
    if not params.voice_resolved:
        raise ValueError("params.voice is not resolved: pass it through tts_app.engine.input_processing.resolve_params")
    backend.capabilities.check(params, texts, backend.name)
    parsed_all = []
    for index, text in enumerate(texts):
        try:
            parsed_all.append(backend.check_text(text, params))
        except ValueError as exc:
            raise LineRejected(index, exc) from exc
    requests: list[Request] = []
    for text, parsed in zip(texts, parsed_all):
        req = Request(RowInput(0, text, params, parsed), stream=params.stream, client=params.client, sample_rate=sample_rate)
        req.audio_est_s = backend.audio_estimate_s(parsed)
        req.row.request_id = req.id
        req.group = requests[0].id if in_order and requests else req.id
        req.after = requests[-1] if in_order and requests else None
        requests.append(req)
    return requests
