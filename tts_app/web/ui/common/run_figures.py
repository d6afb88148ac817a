"""The figures a run reports: per-line rows, the run's summary row, and the queue wait estimate."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FIGURE_HEADERS = [
    "#",
    "text",
    "queue wait (s)",
    "first audio (s)",
    "total (s)",
    "audio (s)",
    "RTF",
    "batch sizes",
    "stall (s)",  # how long a 1x player started at the first audio waited for more
]
FIGURE_TYPES = ["str", "str", "number", "number", "number", "number", "number", "str", "number"]


def _round(value: Any, digits: int = 3) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else round(number, digits)


def describe_batches(sizes: Sequence[int]) -> str:
    """A compact account of the batch sizes a request ran in, e.g. ``3×12, 2×3 (max 3)``."""
    if not sizes:
        return "-"
    counts: dict[int, int] = {}
    for size in sizes:
        counts[int(size)] = counts.get(int(size), 0) + 1
    parts = [f"{size}×{count}" for size, count in sorted(counts.items(), reverse=True)]
    return f"{', '.join(parts)} (max {max(counts)})"


@dataclass
class RunFigures:
    """What one Generate click measured, for the table, the history and the API."""

    rows: list[list[Any]] = field(default_factory=list)
    time_to_first_audio_s: float | None = None
    total_s: float | None = None
    audio_s: float = 0.0
    queue_wait_s: float | None = None  # the run's wait: its first admitted line's, submission to its first step
    batch_sizes: list[int] = field(default_factory=list)
    model: str = ""  # the model's name when it is not the embedded voice (shown in the run row)
    stall_s: float = 0.0

    def add_line(self, number: int, text: str, metrics: Mapping[str, Any]) -> None:
        """Add one line's row from its handle's ``metrics.as_dict()``."""
        sizes = [int(s) for s in metrics.get("batch_sizes") or []]
        self.batch_sizes.extend(sizes)
        wait = _round(metrics.get("queue_wait_s")) or 0.0
        # The run waited until the engine took its first line; a later line's longer wait is the scheduler
        # starting it as the listener needs it (a max said 5.3 s for a take whose first audio came at 0.70 s).
        self.queue_wait_s = wait if self.queue_wait_s is None else min(self.queue_wait_s, wait)
        self.audio_s += _round(metrics.get("audio_s")) or 0.0
        stall = _round(metrics.get("stall_s")) or 0.0
        self.stall_s += stall
        short = text if len(text) <= 28 else text[:27] + "…"  # one line in the table, even on a laptop
        self.rows.append(
            [
                str(number),
                short,
                wait,
                _round(metrics.get("time_to_first_audio_s")),
                _round(metrics.get("total_s")),
                _round(metrics.get("audio_s")),
                _round(metrics.get("rtf")),
                describe_batches(sizes),
                stall,
            ]
        )

    @property
    def rtf(self) -> float | None:
        """Wall time of the run over the audio it produced (below 1 is faster than real time)."""
        if self.total_s is None or self.audio_s <= 0:
            return None
        return round(self.total_s / self.audio_s, 3)

    @property
    def max_batch(self) -> int:
        return max(self.batch_sizes, default=0)

    def table(self) -> list[list[Any]]:
        """Per-line rows in line order, then the run's summary row."""
        rows = sorted(self.rows, key=lambda row: int(row[0]))
        summary = [
            "run",
            f"{len(rows)} line{'s' if len(rows) != 1 else ''}" + (f" · {self.model}" if self.model else ""),
            _round(self.queue_wait_s),
            _round(self.time_to_first_audio_s),
            _round(self.total_s),
            round(self.audio_s, 3),
            self.rtf,
            describe_batches(self.batch_sizes),
            round(self.stall_s, 3),
        ]
        return [*rows, summary] if rows else []

    def summary(self) -> dict[str, Any]:
        """The run's figures as plain values (history, zip, API)."""
        return {
            "time_to_first_audio_s": _round(self.time_to_first_audio_s),
            "total_s": _round(self.total_s),
            "audio_s": round(self.audio_s, 3),
            "rtf": self.rtf,
            "max_batch": self.max_batch,
            "queue_wait_s": _round(self.queue_wait_s),
            "batch_sizes": list(self.batch_sizes),
            "stall_s": round(self.stall_s, 3),
            **({"model": self.model} if self.model else {}),
        }

