"""Which running rows step next: the ones whose listeners run out of audio first.

Pure bookkeeping on requests and step estimates, no tensors and no clock of its own (the engine
passes ``now``), so a simulated clock drives it in tests exactly as the wall clock does in service.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from tts_app.backends.base import StepEstimate
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import Request
from tts_app.engine.step_costs import StepCosts


def deadline(req: Request, q: QosSettings) -> float:
    """When ``req`` must have stepped: its listener's playback runs dry (a stream with audio), its
    first audio is due (a new stream), or it has waited ``batch_gap_s`` since its last step (a file)."""
    if not req.stream:
        since = req.last_step_at if req.last_step_at is not None else (req.admitted_at or req.submitted_at)
        return since + q.batch_gap_s
    if req.play_deadline is not None:
        return req.play_deadline
    heard = heard_from(req)
    if heard is not None:  # a later line of a group: due when the listener reaches it
        return heard
    # Soon after admission (a queued request's wait is the queue's, not a stall); a later line whose
    # group has not sounded yet, that much later.
    start = req.admitted_at if req.admitted_at is not None else req.submitted_at
    ahead, queued_audio = req.after, 0.0
    while ahead is not None:
        queued_audio += ahead.remaining_s()
        ahead = ahead.after
    return start + q.first_audio_target_s + queued_audio


def heard_from(req: Request) -> float | None:
    """When a 1x listener reaches this line of a group: the lines before it played out (None when
    it is not a later line, or none of its group has sounded yet)."""
    ahead, queued_audio = req.after, 0.0
    while ahead is not None and ahead.play_deadline is None:
        queued_audio += ahead.remaining_s()
        ahead = ahead.after
    if ahead is None:
        return None
    return ahead.play_deadline + ahead.remaining_s() + queued_audio


def buffered_s(req: Request, now: float) -> float:
    """Audio a 1x player started at the first chunk holds now (0 before the first chunk)."""
    return 0.0 if req.play_deadline is None else max(0.0, req.play_deadline - now)


def window_level(req: Request, now: float, q: QosSettings) -> int:
    """0 before the first audio (the small first window), 1 the usual window, +1 per ``grow_at_s`` passed."""
    if not req.stream:
        return 1 + len(q.grow_at_s)  # nobody listens yet: the most efficient steps
    if req.play_deadline is None:
        return 0
    held = buffered_s(req, now)
    return 1 + sum(1 for g in q.grow_at_s if held >= g)


def pick(
    rows: Sequence[Request], now: float, estimate: Callable[[Request], StepEstimate], costs: StepCosts, q: QosSettings
) -> list[Request]:
    """The rows to step now, most urgent first.

    Rows are taken in deadline order while the step's predicted time still ends ``margin_s`` before
    the earliest listener's deadline (never less than ``min_step_s`` of work, never fewer than one row). While
    some listener is in need (holds under ``low_s``), rows whose listeners hold ``plenty_s`` or more
    skip, and files step only once overdue: that compute goes to newcomers and rows near starvation.
    Then every row left out that adds at most ``ride_share`` of the step's fixed cost joins it (a
    GPU's rows are nearly free once the step is paid: leaving them out would leave capacity idle).
    A row left out only grows more urgent, so every row is reached (no starvation). When the most
    urgent row cannot make its deadline even alone, every row steps (the most audio for the time).
    """
    if not rows:
        return []
    slack = {r.id: deadline(r, q) - now for r in rows}
    ests = {r.id: estimate(r) for r in rows}
    order = sorted(rows, key=lambda r: (slack[r.id], r.id))
    first = order
    if any(r.stream and slack[r.id] < q.low_s for r in order):
        first = [r for r in order if (r.stream and slack[r.id] < q.plenty_s) or slack[r.id] <= 0] or order[:1]
    # The budget protects listeners: a file's deadline only says it must step soon, not that the step be
    # short (8 files from 8 sessions were stepped one at a time against their 2 s gaps). Files alone: no cap.
    urgent = next((r for r in order if r.stream), None)
    budget = math.inf if urgent is None else max(q.min_step_s, slack[urgent.id] - q.margin_s)
    if urgent is not None and budget < costs.added_cost(ests[urgent.id], set()):
        # The most urgent listener runs dry whatever this step holds: a small step would not save it and
        # would cost every row the step's fixed part again (on a loaded machine the steps shrank to one
        # row, the throughput fell, and everyone ran dry: 0.64x fifo's at 1.5 x C). Every row steps.
        first, budget = order, math.inf
    picked: list[Request] = []
    keys: set[str] = set()
    total = 0.0
    for r in first:
        cost = costs.added_cost(ests[r.id], keys)
        if picked and total + cost > budget:
            continue  # a cheaper row further on may still fit
        picked.append(r)
        keys.add(ests[r.id].key)
        total += cost
    taken = {r.id for r in picked}
    fixed = sum(costs.fixed_cost(k) for k in keys)
    for r in order:
        if r.id not in taken and costs.added_cost(ests[r.id], keys) <= q.ride_share * fixed:
            picked.append(r)
    return picked
