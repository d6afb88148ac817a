"""Which running rows step next, and how large their windows are: the listener-first plan of a step.

Pure bookkeeping on requests and step estimates, with no clock of its own (the engine passes ``now``), so a simulated
clock drives it in tests exactly as the wall clock does in service.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from tts_app.backends.base import WIDEST_WINDOW
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import Request


def deadline(req: Request, q: QosSettings) -> float:
    """When ``req`` must have stepped: its listener's playback runs dry (a stream with audio), its first
    audio is due (a new stream: ``step_s`` after admission), or ``plenty_s`` after its last step (a file)."""
    if not req.stream:
        since = req.last_step_at if req.last_step_at is not None else (req.admitted_at or req.submitted_at)
        return since + q.plenty_s
    if req.play_deadline is not None:
        return req.play_deadline
    ahead, queued_audio = req.ahead()  # a later line: due when the listener reaches it, or that much later
    if ahead is not None:
        return ahead.play_deadline + ahead.remaining_s() + queued_audio
    start = req.admitted_at if req.admitted_at is not None else req.submitted_at
    return start + (q.step_s if math.isfinite(q.step_s) else 0.0) + queued_audio


def window_level(req: Request, now: float, q: QosSettings) -> int:
    """0 (the small first window) before a stream's first audio and while its listener holds under ``low_s``, else 1
    (the usual window); a file's the widest. (Windows doubling with what a listener holds changed no row of
    scheduler_ablation.py's runs: issue 49.)"""
    if not req.stream:
        return WIDEST_WINDOW if q.low_s > 0 else 1
    return int(q.low_s <= 0 or (req.play_deadline is not None and req.buffered_s(now) >= q.low_s))


def _group_stepped(req: Request) -> bool:
    """True once the first line of ``req``'s group has stepped (or ended)."""
    while req.after is not None:
        req = req.after
    return bool(req.batch_sizes) or req.finished_at is not None


def plan(rows: Sequence[Request], now: float, cost: Callable[[Request, int], float], q: QosSettings) -> list[Request]:
    """The rows to step now, earliest deadline first (a CPU backend hands rows out in step order), except that new
    streams' first windows go first where every heard listener can spare them (a late first audio is a wait, a
    late next window a stall); a page's later lines once its first line has stepped (else their first windows
    went before the next window of the line its listener hears: the live player's first gap).

    While some listener holds under ``low_s``, streams whose listeners hold ``plenty_s`` or more skip and
    files step only once overdue. With a stream in the step, rows are taken for about ``step_s`` of work
    (``cost(row, rows in the plan)``), and past it every row that would be late if it waited for the next
    step; the rest waits (it only grows more urgent: no row starves), so newcomers start soon.
    """
    rows = [r for r in rows if r.after is None or _group_stepped(r)]
    slack = {r.id: deadline(r, q) - now for r in rows}
    order = sorted(rows, key=lambda r: (slack[r.id], r.id))
    if any(r.stream and slack[r.id] < q.low_s for r in order):
        order = [r for r in order if slack[r.id] < (q.plenty_s if r.stream else 0.0)] or order[:1]
    if not any(r.stream for r in order):
        return order  # files alone: nobody waits on the step
    new = [r for r in order if r.stream and r.play_deadline is None and r.heard_from() is None]
    ahead = sum(cost(r, len(order)) for r in new)
    heard = [r for r in order if r not in new]
    if all(slack[r.id] > ahead + sum(cost(h, len(order)) for h in heard[: i + 1]) for i, r in enumerate(heard)):
        order = new + heard
    picked: list[Request] = []
    total = 0.0
    for r in order:
        c = cost(r, len(order))
        if picked and total + c > q.step_s and slack[r.id] > total + c + q.step_s:
            continue
        picked.append(r)
        total += c
    return picked
