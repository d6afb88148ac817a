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
    """0 (the small first window) before the first audio and while the listener holds under
    ``usual_from_s``, 1 the usual window, +1 per ``grow_at_s`` passed."""
    if not req.stream:
        return 1 + len(q.grow_at_s)  # nobody listens yet: the most efficient steps
    if req.play_deadline is None:
        return 0
    held = buffered_s(req, now)
    return 0 if held < q.usual_from_s else 1 + sum(1 for g in q.grow_at_s if held >= g)


def is_heard(req: Request) -> bool:
    """A listener already hears this stream (or its group): audio late for it is a stall, not a wait."""
    return req.stream and (req.play_deadline is not None or heard_from(req) is not None)


def pick(
    rows: Sequence[Request],
    now: float,
    estimate: Callable[[Request], StepEstimate],
    costs: StepCosts,
    q: QosSettings,
    handed_out_after: Callable[[int], float] = lambda position: math.inf,
) -> list[Request]:
    """The rows to step now, in the order the step should make them: a row's audio is handed out
    once the first ``handed_out_after(position)`` rows of the step are made (the backend's say: at
    the step's end by default, or row by row), so the order is when each listener gets it.

    While some listener is in need (holds under ``low_s``), rows whose listeners hold ``plenty_s`` or
    more skip, and files step only once overdue: that compute goes to newcomers and rows near
    starvation. Heard rows go in deadline order; a row nobody hears yet (a newcomer's first audio,
    a file) goes as early as it can without making a heard row late (its listener runs dry for it,
    whereas a newcomer only waits: a burst's first windows once went before the second windows due
    before them, and every early listener stalled), until it is ``low_s`` overdue: then it is planned
    as a heard row (no starvation when the machine is overloaded). Rows are taken in that order for
    about ``step_horizon_s`` of work while streams wait on the step (files alone: no limit), and after
    it every planned-as-heard row that cannot wait for the next step, and every row whose kind of step
    is in it already and adds less than that kind's fixed part; the rest waits, so a step stays
    short enough for newcomers to start soon. Then every row left
    out that adds at most ``ride_share`` of the step's fixed cost joins it (a GPU's rows are nearly
    free once the step is paid: leaving them out would leave capacity idle). A row left out only
    grows more urgent, so every row is reached (no starvation).
    """
    if not rows:
        return []
    slack = {r.id: deadline(r, q) - now for r in rows}
    ests = {r.id: estimate(r) for r in rows}
    order = sorted(rows, key=lambda r: (slack[r.id], r.id))
    first = order
    if any(r.stream and slack[r.id] < q.low_s for r in order):
        first = [r for r in order if (r.stream and slack[r.id] < q.plenty_s) or slack[r.id] <= 0] or order[:1]
    firm = {r.id for r in first if is_heard(r) or slack[r.id] < -q.low_s}  # long overdue: waits like a listener's
    horizon = q.step_horizon_s if any(r.stream for r in first) else math.inf  # files alone: nobody waits on the step
    picked: list[Request] = []
    keys: set[str] = set()
    total = 0.0
    for r in _plan(first, firm, slack, ests, costs, q, handed_out_after):
        est = ests[r.id]
        cost = costs.added_cost(est, keys)
        # A firm row that would be late if it waited for a step after this one steps now.
        cannot_wait = r.id in firm and slack[r.id] - q.margin_s < total + 2 * cost
        # A row of a kind this step already pays for, adding less than that kind's fixed part, joins too: held
        # back, it would pay the fixed part again in a later step (Pocket TTS's newcomers share their first
        # latents' fixed part: a burst staggered by the horizon waited up to 1.5 s for first audio, not 0.23 s).
        shares = est.key in keys and costs.row_cost(est) < costs.fixed_cost(est.key)
        if picked and total + cost > horizon and not cannot_wait and not shares:
            continue  # a cheaper or more urgent row further on may still go
        picked.append(r)
        keys.add(est.key)
        total += cost
    taken = {r.id for r in picked}
    fixed = sum(costs.fixed_cost(k) for k in keys)
    for r in order:
        if r.id not in taken and costs.added_cost(ests[r.id], keys) <= q.ride_share * fixed:
            picked.append(r)
    return picked


def _plan(
    rows: Sequence[Request],
    firm: set[int],
    slack: dict[int, float],
    ests: dict[int, StepEstimate],
    costs: StepCosts,
    q: QosSettings,
    handed_out_after: Callable[[int], float],
) -> list[Request]:
    """``rows`` (in deadline order) as one step's sequence: the ``firm`` rows (heard, or long overdue)
    in deadline order, every other row, in its own order, at the earliest place where each firm row it
    delays is still handed out ``margin_s`` before its deadline (a firm row already late takes nothing
    before it); a row with no such place is left out."""
    seq = [r for r in rows if r.id in firm]
    after = 0  # the others keep their order among themselves
    for r in (r for r in rows if r.id not in firm):
        cost = costs.row_cost(ests[r.id])
        ends = _ends(seq, ests, costs, handed_out_after)
        spare = [slack[x.id] - q.margin_s - end if x.id in firm else math.inf for x, end in zip(seq, ends)]
        k = next((k for k in range(after, len(seq) + 1) if _room(spare, k, handed_out_after) >= cost), None)
        if k is not None:  # else it waits for a later step (until it is firm itself)
            seq.insert(k, r)
            after = k + 1
    return seq


def _room(spare: Sequence[float], k: int, handed_out_after: Callable[[int], float]) -> float:
    """How much a row made at place ``k`` may cost: the least spare time of the rows it delays, those
    made after it and those made before it but handed out with or after it (their group ends later)."""
    first = next((j for j in range(k) if handed_out_after(j) > k), k)
    return min(spare[first:], default=math.inf)


def _ends(
    seq: Sequence[Request], ests: dict[int, StepEstimate], costs: StepCosts, handed_out_after: Callable[[int], float]
) -> list[float]:
    """When each row of ``seq`` is handed out, in seconds from the step's start."""
    made, keys, total = [], set(), 0.0
    for r in seq:
        total += costs.added_cost(ests[r.id], keys)
        keys.add(ests[r.id].key)
        made.append(total)
    return [made[int(min(handed_out_after(k), len(seq))) - 1] for k in range(len(seq))]
