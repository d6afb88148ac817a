"""A request: plain state and a status; the scheduler moves it, the backend never sees it."""

from __future__ import annotations

import enum
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import RowInput

_IDS = itertools.count(1)


class RequestStatus(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return self in (RequestStatus.FINISHED, RequestStatus.CANCELLED, RequestStatus.FAILED)


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
