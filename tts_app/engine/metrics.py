"""Figures per request and for the whole engine."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from tts_app.engine.request import Request, RequestStatus


@dataclass(frozen=True)
class RequestMetrics:
    """One request's figures, in seconds unless named otherwise."""

    queue_wait_s: float | None
    time_to_first_audio_s: float | None
    total_s: float | None
    audio_s: float
    rtf: float | None  # total time / audio time
    batch_sizes: list[int] = field(default_factory=list)
    status: str = "waiting"
    stall_s: float = 0.0  # how long a 1x player started at the first audio has waited for more

    @classmethod
    def of(cls, req: Request, sample_rate: int) -> "RequestMetrics":
        def since_submit(t: float | None) -> float | None:
            return None if t is None else t - req.submitted_at

        audio_s = req.samples / sample_rate
        total = since_submit(req.finished_at)
        return cls(
            queue_wait_s=since_submit(req.admitted_at),
            time_to_first_audio_s=since_submit(req.first_audio_at),
            total_s=total,
            audio_s=audio_s,
            rtf=(total / audio_s) if total is not None and audio_s > 0 else None,
            batch_sizes=list(req.batch_sizes),
            status=req.status.value,
            stall_s=req.stall_s,
        )

    def as_dict(self) -> dict:
        return asdict(self)


TTFA_BUCKETS_S = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 60.0)
STALL_BUCKETS_S = (0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


@dataclass
class Histogram:
    """Counts per upper bound (cumulative, as Prometheus has them), their sum and count."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * len(self.bounds)

    def observe(self, value: float) -> None:
        self.count += 1
        self.total += value
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                self.counts[i] += 1


@dataclass
class EngineCounters:
    """Aggregate counters, updated by the worker thread only."""

    submitted: int = 0
    rejected: int = 0
    finished: int = 0
    cancelled: int = 0
    failed: int = 0
    steps: int = 0
    step_time_s: float = 0.0
    rows_stepped: int = 0
    max_batch_seen: int = 0
    audio_s: float = 0.0  # of finished requests
    audio_produced_s: float = 0.0  # as it is made, cancelled requests' included
    ttfa: Histogram = field(default_factory=lambda: Histogram(TTFA_BUCKETS_S))  # streams: submit to first audio
    stall: Histogram = field(default_factory=lambda: Histogram(STALL_BUCKETS_S))  # finished streams: a 1x player's waits
    # Seconds per row of the last RECENT_STEPS steps: a player sizes its start from a high quantile
    # (a full decoder window costs several times a first window, so the mean under-predicts).
    recent_row_step_s: list[float] = field(default_factory=list)

    RECENT_STEPS = 64

    def record_step(self, batch: int, seconds: float) -> None:
        self.steps += 1
        self.step_time_s += seconds
        self.rows_stepped += batch
        self.max_batch_seen = max(self.max_batch_seen, batch)
        if batch:
            self.recent_row_step_s.append(seconds / batch)
            del self.recent_row_step_s[: -self.RECENT_STEPS]

    def retired(self, req: Request, status: RequestStatus, sample_rate: int) -> None:
        """A request left with ``status``: count it (a finished stream's waits go to the stall histogram)."""
        if status is RequestStatus.FINISHED:
            self.finished += 1
            self.audio_s += req.samples / sample_rate
            if req.stream:
                self.stall.observe(req.stall_s)
        elif status is RequestStatus.CANCELLED:
            self.cancelled += 1
        else:
            self.failed += 1

    def queue_figures(self) -> dict:
        """What a server operator scrapes (tts_app/web/api/metrics.py): the listeners' histograms, copied."""
        return {"ttfa": replace(self.ttfa, counts=list(self.ttfa.counts)),
                "stall": replace(self.stall, counts=list(self.stall.counts)), "audio_produced_s": self.audio_produced_s}

    def snapshot(self) -> dict:
        d = asdict(self)
        recent = d.pop("recent_row_step_s")
        for name in ("ttfa", "stall"):
            h = d.pop(name)
            d[f"{name}_count"], d[f"{name}_sum_s"] = h["count"], h["total"]
        d["row_step_p90_s"] = float(np.quantile(recent, 0.9)) if recent else 0.0
        d["mean_step_s"] = self.step_time_s / self.steps if self.steps else 0.0
        d["mean_batch"] = self.rows_stepped / self.steps if self.steps else 0.0
        return d
