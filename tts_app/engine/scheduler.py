"""The scheduler owns the queue and the slots, and the one predicate (``verdict``) that puts a request in a slot.

It never touches tensors or the model. ``verdict`` reads a view of the slots (``Slots``): the live ones when ``admit``
runs, or the ones ``eta`` simulates later, so the ETA says "now" exactly when admission would admit.

The load check is the fluid reading of the listener-first plan (no windows, no steps): listener i holds ``held``
seconds and needs ``left`` more made; by any time t the listeners need sum(min(left, max(0, t - held))) seconds made,
the machine makes rate x t. Both sides are piecewise linear, so each listener's dry moment and end decide; when
nobody holds anything the need per second only falls from its start, so the first moment decides.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter, deque
from typing import Iterable, Sequence

import numpy as np

from tts_app.engine.deadlines import deadline
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import EngineBusy, Request, RequestStatus
from tts_app.engine.step_costs import StepCosts

_TOL = 1 + 1e-9  # float slack in the load check's comparisons
ADMIT, LOAD, FULL = 0, 1, 2  # verdicts: admitted, refused by the load check, refused for a slot or the client's share


def listeners_fed(listeners: Sequence[tuple[float, float]], rate: float) -> bool:
    """``listeners``: (held, left) pairs in seconds of audio; True when a machine making ``rate`` feeds them all."""
    waiting = [(held, left) for held, left in listeners if left > 0]
    if rate <= 0 or all(held <= 0 for held, _ in waiting):
        return len(waiting) <= max(0.0, rate) * _TOL
    held_L, left_L = np.array(waiting, dtype=float).T
    t_T = np.concatenate([held_L, held_L + left_L])
    t_T = t_T[t_T > 0]
    need_T = np.minimum(left_L, np.maximum(0.0, t_T[:, None] - held_L)).sum(axis=1)  # numpy: 64 listeners in ~30 us
    return bool(np.all(need_T <= rate * t_T * _TOL))


class Seat:
    """A row in a slot as admission sees it. ``held``: how long until its listener needs more (a file: inf); in the
    ETA's replay ``base`` is what it holds when each row has made as much audio as time passed, ``end`` the audio
    each row has made when this one ends."""

    __slots__ = ("group", "client", "stream", "held", "left", "base", "end")

    def __init__(self, r: Request, now: float, q: QosSettings) -> None:
        self.group, self.client, self.stream, self.left = r.group, r.client, r.stream, r.remaining_s()
        self.held = max(0.0, deadline(r, q) - now) if r.stream else math.inf
        self.base, self.end = self.held, self.left


class Slots:
    """The rows held, with the counts ``verdict`` reads (kept as seats come and go, so each check is cheap)."""

    def __init__(self, seats: Iterable[Seat] = ()) -> None:
        self.seats: dict[Seat, None] = {}  # in the order seated (the replay's ties go by it)
        self.group_rows: dict[int, int] = {}
        self.client_rows: dict[str | None, int] = {}
        self.client_groups: dict[str | None, int] = {}
        self.streams = self.holding = 0  # stream rows; those whose listener holds some (in the replay: 1 when some may)
        self.replay: tuple[float, float] | None = None  # in the replay: (audio each row made more than time passed, made)
        for s in seats:
            self.add(s)

    def add(self, s: Seat, sign: int = 1) -> None:
        """Seat ``s`` (``sign`` -1: it leaves; ``holding`` is then the replay's to keep)."""
        self.seats[s] = None
        if sign < 0:
            del self.seats[s]
        rows = self.group_rows.get(s.group, 0)
        self.group_rows[s.group] = rows + sign
        if s.client is not None:
            self.client_rows[s.client] = self.client_rows.get(s.client, 0) + sign
            if rows + sign == (sign > 0):  # the group's first row came, or its last left
                self.client_groups[s.client] = self.client_groups.get(s.client, 0) + sign
        self.streams += sign * s.stream
        self.holding += sign > 0 and s.stream and s.held > 0

    def listeners(self, spare_from: float) -> list[tuple[float, float]]:
        """(audio held past ``spare_from``, audio left) of each stream row."""
        if self.replay is None:
            return [(max(0.0, s.held - spare_from), s.left) for s in self.seats if s.stream]
        ahead, made = self.replay
        return [(max(0.0, s.base + ahead - spare_from), s.end - made) for s in self.seats if s.stream]


class Scheduler:
    """A queue, at most ``max_batch_size`` slots, and the admission predicate (see the engine package's paragraph)."""

    def __init__(self, max_batch_size: int, max_queue: int, policy: str = "deadline", qos: QosSettings | None = None) -> None:
        if max_batch_size < 1 or max_queue < 1:
            raise ValueError("max_batch_size and max_queue must be at least 1")
        if policy not in ("fifo", "deadline"):
            raise ValueError(f"policy must be 'fifo' or 'deadline', got {policy!r}")
        self.max_batch_size, self.max_queue, self.policy = max_batch_size, max_queue, policy
        self.qos = qos if qos is not None else QosSettings()
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []

    # -- the predicate -----------------------------------------------------------
    def stream_places(self, costs: StepCosts) -> int:
        """Streams the machine feeds with its margin when nobody holds any audio (at least 1; fifo: the slots)."""
        n = self.max_batch_size
        while self.policy != "fifo" and n > 1 + costs.explores and n > self.qos.load_margin * costs.rate(n):
            n -= 1
        return n

    def client_caps(self, costs: StepCosts) -> tuple[int, int]:
        """(rows, groups) one client may hold: its share of the slots, and of the stream places when fewer."""
        share = self.qos.client_share
        return max(1, math.floor(share * self.max_batch_size)), max(1, math.floor(share * self.stream_places(costs)))

    def verdict(self, req: Request, slots: Slots, costs: StepCosts, caps: tuple[int, int]) -> int:
        """ADMIT when ``req`` may take a slot beside ``slots``: one is free; its client holds fewer than its share (``caps``;
        a page's later line joins its group's place); and a stream beside others keeps every listener fed at
        ``load_margin`` of what the machine makes for that many rows (audio held past ``plenty_s`` counted); else why not."""
        joins, c = slots.group_rows.get(req.group, 0) > 0, req.client
        if len(slots.seats) >= self.max_batch_size or not (c is None or (
                slots.client_rows.get(c, 0) < caps[0] and (joins or slots.client_groups.get(c, 0) < caps[1]))):
            return FULL
        if self.policy == "fifo" or not req.stream or joins or slots.streams < 1 + costs.explores:
            return ADMIT  # one stream even below real time; a second to measure a larger step (StepCosts.explores)
        n = slots.streams + 1
        rate = self.qos.load_margin * costs.rate(n)
        if n <= rate * _TOL or not slots.holding:  # fed holding nothing (buffers only help), or nobody holds any
            return ADMIT if n <= rate * _TOL else LOAD
        listeners = slots.listeners(self.qos.plenty_s) + [(0.0, req.remaining_s())]
        if sum(1 for held, left in listeners if held <= 0 < left) > rate * _TOL:
            return LOAD  # listeners_fed's first moment, in pure Python (the ETA asks this at every replayed event)
        return ADMIT if listeners_fed(listeners, rate) else LOAD

    def _slots(self, now: float) -> Slots:
        return Slots(Seat(r, now, self.qos) for r in self.running if not r.cancel_requested)  # a cancelled row leaves next step

    # -- admission, ETA, queue places ---------------------------------------------
    def admit(self, costs: StepCosts, now: float) -> list[Request]:
        """Take what ``verdict`` admits from the queue, oldest first (a client at its share waits for its own rows):
        the ETA's replay at ``now``, kept."""
        told = self._replay(list(self.waiting), {r.id for r in self.waiting}, now, costs, once=True) if self.waiting else {}
        admitted = [r for r in self.waiting if r.id in told]
        if admitted:
            self.waiting = deque(r for r in self.waiting if r.id not in told)
        return admitted

    def eta(self, targets: Iterable[Request], now: float, costs: StepCosts, extra: Iterable[Request] = ()) -> dict[int, float]:
        """Predicted seconds until each of ``targets`` (queued, or ``extra``: about to be) is admitted.

        Admission replayed on simulated slots: at ``now`` exactly as ``admit`` runs (it is this replay's first pass);
        then every held row makes audio at the same pace (n rows make ``costs.rate(n)`` together), the row with the
        least audio left ends first and frees its slot, and ``verdict`` runs over the queue again; while a new stream
        waits on the load check and some listener holds room or gains it, also every ``step_s`` (admission looks each
        step). Each listener's buffer gains what its row makes and plays out in real time (forgetting it made the ETA
        error p95 6.1 in benchmarks/stream_qos_sim.py's Poisson run, 0.9 with it). Past ``now`` a new stream the load
        check refuses holds the other new streams back until the next event (files and later lines may pass): each
        event scans the queue only up to it, and past it only those others. Past ``max_queue_wait_s`` the replay
        stops: a target not admitted by then gets that lower bound.
        """
        targets = list(targets)
        result = self._replay([r for r in (*self.waiting, *extra) if not r.cancel_requested], {r.id for r in targets}, now, costs)
        return {r.id: result[r.id] for r in targets}

    def _replay(self, pending: list[Request], wanted: set[int], now: float, costs: StepCosts, once: bool = False) -> dict[int, float]:
        """``eta``'s replay: seconds from ``now`` to each of ``wanted``'s admission (the replay's end if none came)."""
        q, cap = self.qos, self.max_batch_size
        slots, caps = self._slots(now), self.client_caps(costs)
        order = itertools.count()  # ties in the heap: the first seated ends first
        ends = [(s.left, next(order), s) for s in slots.seats]
        heapq.heapify(ends)
        most = max((s.base for s in slots.seats if s.stream), default=0.0)  # no listener holds more
        others = [r for r in pending if not r.stream or r.after is not None]  # files and later lines: may pass a full load
        result: dict[int, float] = {}
        taken: set[int] = set()
        t, made, head, ohead = now, 0.0, 0, 0  # made: audio each held row has made since now; pending[:head] all taken

        def scan(queue: list[Request], start: int, stop_at_load: bool) -> bool:
            """Take what ``verdict`` admits from ``queue[start:]``; True when the load check refused a new stream."""
            nonlocal most
            refused, seats, verdict = False, slots.seats, self.verdict
            for i in range(start, len(queue)):
                r = queue[i]
                if len(seats) >= cap:
                    break
                if id(r) in taken:
                    continue
                v = verdict(r, slots, costs, caps)
                if v == LOAD:
                    refused = True
                    if stop_at_load:
                        break
                elif v == ADMIT:
                    seat = Seat(r, t, q)
                    seat.base = 0.0
                    if t > now and r.stream:  # holds nothing yet
                        seat.held, seat.base = 0.0, t - now - made
                        most = max(most, seat.base)
                    seat.end = made + seat.left
                    slots.add(seat)
                    heapq.heappush(ends, (seat.end, next(order), seat))
                    taken.add(id(r))
                    if r.id in wanted:
                        result[r.id] = t - now
            return refused

        while head < len(pending) and len(result) < len(wanted):
            refused = scan(pending, head, t > now)
            if refused and t > now:  # new streams wait for the next event, files and later lines may pass
                scan(others, ohead, False)
            while head < len(pending) and id(pending[head]) in taken:
                head += 1
            while ohead < len(others) and id(others[ohead]) in taken:
                ohead += 1
            if once or not ends or len(result) == len(wanted) or t - now > q.max_queue_wait_s:
                break
            n, rate = len(slots.seats), costs.rate(len(slots.seats))
            dt = max(1e-9, (ends[0][0] - made) * n / rate if math.isfinite(rate) else 0.0)  # a row ends at a step's end
            if refused and dt > q.step_s and (slots.holding or rate > n):  # buffers give room: look again a step on
                t, made = t + q.step_s, made + q.step_s * rate / n
            else:
                end, _, seat = heapq.heappop(ends)
                t, made = t + dt, max(made, end)
                slots.add(seat, -1)
            slots.replay = (made - (t - now), made)  # each row made ``made``, that much more than the time passed
            slots.holding = int(most + made - (t - now) > q.plenty_s)  # else nobody's buffer gives room
        return {rid: result.get(rid, t - now) for rid in wanted} if not once else result

    def enqueue(self, reqs: list[Request], now: float, costs: StepCosts, busy_s: float, visitor: bool) -> None:
        """Queue ``reqs`` (one submit), each told its predicted wait (``eta_at_submit_s``, at least ``busy_s``: admission
        comes after the step in progress), or raise EngineBusy: no queue place (``check_room``), or for a ``visitor`` a
        wait past ``max_queue_wait_s`` (a page's lines are heard in turn: the wait is its first line's)."""
        etas = self.eta(reqs, now, costs, extra=reqs)
        self.check_room(reqs, {rid for rid, eta in etas.items() if eta == 0.0})
        wait = max(min(etas.values(), default=0.0), busy_s)
        if visitor and wait > self.qos.max_queue_wait_s:
            raise EngineBusy(f"the engine is at capacity: this request would wait about {wait:.0f} s; try again later",
                             retry_after_s=wait - self.qos.max_queue_wait_s)
        for req in reqs:
            req.eta_at_submit_s = max(etas[req.id], busy_s)
        self.waiting.extend(reqs)

    def check_room(self, reqs: list[Request], starting: set[int] = frozenset()) -> None:
        """Raise EngineBusy unless the queue, and each client's share of it, can take all of ``reqs``.

        A queue place is a run: a group's later lines (``after`` set) wait inside their run and take none, so one
        page's 50 lines hold one place, not 50 of everyone's; and a request ``verdict`` takes at the next admission
        (``starting``: the ETA's "now") waits for no place at all, however full the queue.
        """
        reqs = [r for r in reqs if r.after is None and r.id not in starting]
        heads = [r for r in self.waiting if r.after is None]
        if len(heads) + len(reqs) > self.max_queue:
            raise EngineBusy(f"the engine is busy ({len(heads)} requests queued); try again shortly")
        cap = max(1, math.floor(self.qos.client_share * self.max_queue))
        queued = Counter(r.client for r in heads)
        for client, n in Counter(r.client for r in reqs if r.client is not None).items():
            if queued[client] + n > cap:
                raise EngineBusy(f"too many requests queued from this client ({queued[client]} waiting, at most {cap}); try again shortly")

    # -- bookkeeping --------------------------------------------------------------
    def add(self, req: Request) -> None:
        self.check_room([req])
        self.waiting.append(req)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def position(self, req: Request) -> int:
        """Requests ahead of ``req`` in the queue (0 once it runs or ends)."""
        return next((i for i, r in enumerate(self.waiting) if r is req), 0) if req.status is RequestStatus.WAITING else 0

    def drop_cancelled(self) -> list[Request]:
        """Remove requests whose caller cancelled, from the queue and from the running slots."""
        gone = [r for r in (*self.waiting, *self.running) if r.cancel_requested]
        if gone:
            self.waiting = deque(r for r in self.waiting if not r.cancel_requested)
            self.running = [r for r in self.running if not r.cancel_requested]
        return gone

    def start(self, reqs: list[Request]) -> None:
        for r in reqs:
            r.status = RequestStatus.RUNNING
        self.running.extend(reqs)

    def remove(self, reqs: list[Request]) -> None:
        """Compaction: finished or failed rows leave the batch at once."""
        ids = set(map(id, reqs))
        self.running = [r for r in self.running if id(r) not in ids]

    def drain(self) -> list[Request]:
        """Everything still queued or running (for close)."""
        everything = [*self.waiting, *self.running]
        self.waiting.clear()
        self.running = []
        return everything
