"""The scheduler owns the queue and the slots, and the one predicate (``admits``) that puts a request in a slot.

It never touches tensors or the model. ``admits`` reads a view of the slots (``Slots``): the live ones when
``admit`` runs, or the ones ``eta`` simulates later, so the ETA says "now" exactly when admission would admit.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter, deque
from dataclasses import dataclass
from typing import Iterable

from tts_app.engine.deadlines import deadline
from tts_app.engine.fluid import listeners_fed
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import Request, RequestStatus
from tts_app.engine.step_costs import StepCosts


class EngineBusy(RuntimeError):
    """The engine cannot take the request now; ``retry_after_s`` says when trying again makes sense."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass
class Seat:
    """A row in a slot, as admission sees it: its group and client, what its listener holds, what it still makes."""

    group: int
    client: str | None
    stream: bool
    held_s: float  # how long until its listener needs more: what it holds, a later line's lines ahead; a file: inf
    left_s: float
    base: float = 0.0  # in the ETA's replay: what its listener holds when each row has made as much audio as time passed
    end: float = 0.0  # in the ETA's replay: the audio each row has made when this one ends


class Slots:
    """The rows held, with the counts ``admits`` reads (kept as seats come and go, so each check is cheap)."""

    def __init__(self, seats: Iterable[Seat] = ()) -> None:
        self._all: dict[int, Seat] = {}
        self.group_rows: Counter = Counter()
        self.client_rows: Counter = Counter()
        self.client_groups: Counter = Counter()
        self.streams = 0  # stream rows
        self.holding = 0  # stream rows whose listener holds some audio (in the ETA's replay: 1 when some may)
        self.replay: tuple[float, float] | None = None  # in the ETA's replay: (audio each row made more than time passed, made)
        for s in seats:
            self.add(s)

    def __len__(self) -> int:
        return len(self._all)

    def add(self, s: Seat) -> None:
        self._all[id(s)] = s
        if not self.group_rows[s.group] and s.client is not None:
            self.client_groups[s.client] += 1
        self.group_rows[s.group] += 1
        self.client_rows[s.client] += s.client is not None
        self.streams += s.stream
        self.holding += s.stream and s.held_s > 0

    def remove(self, s: Seat) -> None:
        del self._all[id(s)]
        self.group_rows[s.group] -= 1
        if not self.group_rows[s.group] and s.client is not None:
            self.client_groups[s.client] -= 1
        self.client_rows[s.client] -= s.client is not None
        self.streams -= s.stream  # ``holding``: kept by ``add``, and by ``eta`` in its replay

    def listeners(self, spare_from: float) -> list[tuple[float, float]]:
        """(audio held past ``spare_from``, audio left) of each stream row."""
        if self.replay is None:
            return [(max(0.0, s.held_s - spare_from), s.left_s) for s in self._all.values() if s.stream]
        ahead, made = self.replay
        return [(max(0.0, s.base + ahead - spare_from), s.end - made) for s in self._all.values() if s.stream]


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
        if self.policy == "fifo":
            return self.max_batch_size
        n = self.max_batch_size
        while n > 1 + costs.explores and n > self.qos.load_margin * costs.rate(n):
            n -= 1
        return min(n, self.max_batch_size)

    def client_caps(self, costs: StepCosts) -> tuple[int, int]:
        """(rows, groups) one client may hold: its share of the slots, and of the stream places when fewer."""
        share = self.qos.client_share
        return max(1, math.floor(share * self.max_batch_size)), max(1, math.floor(share * min(self.max_batch_size, self.stream_places(costs))))

    def admits(self, req: Request, slots: Slots, costs: StepCosts, caps: tuple[int, int]) -> bool:
        """True when ``req`` may take a slot beside ``slots``: one is free; its client holds fewer than its share
        (``caps``; a page's later line joins its group's place); and a stream beside others keeps every listener fed at
        ``load_margin`` of what the machine makes for that many rows (listeners' audio past ``plenty_s`` counted)."""
        if len(slots) >= self.max_batch_size or not self._within_share(req, slots, caps):
            return False
        return self.policy == "fifo" or not req.stream or slots.group_rows[req.group] > 0 or self._fed(req, slots, costs)

    @staticmethod
    def _within_share(req: Request, slots: Slots, caps: tuple[int, int]) -> bool:
        joins, c = slots.group_rows[req.group] > 0, req.client
        return c is None or (slots.client_rows[c] < caps[0] and (joins or slots.client_groups[c] < caps[1]))

    def _fed(self, req: Request, slots: Slots, costs: StepCosts) -> bool:
        """``admits``'s load check for a new stream beside ``slots``'s."""
        if slots.streams < 1 + costs.explores:
            return True  # one stream even below real time; a second to measure a larger step (StepCosts.explores)
        n = slots.streams + 1
        rate = self.qos.load_margin * costs.rate(n)
        if n <= rate * (1 + 1e-9) or not slots.holding:  # fed holding nothing (buffers only help), or nobody holds any
            return n <= rate * (1 + 1e-9)
        listeners = slots.listeners(self.qos.plenty_s) + [(0.0, req.remaining_s())]
        if sum(1 for held, left in listeners if held <= 0 < left) > rate * (1 + 1e-9):
            return False  # listeners_fed's first moment, in pure Python (the ETA asks this at every replayed event)
        return listeners_fed(listeners, rate)

    def _seat(self, r: Request, now: float) -> Seat:
        return Seat(r.group, r.client, r.stream, max(0.0, deadline(r, self.qos) - now) if r.stream else math.inf, r.remaining_s())

    def _slots(self, now: float) -> Slots:
        return Slots(self._seat(r, now) for r in self.running if not r.cancel_requested)  # a cancelled row leaves at the next step

    # -- admission, ETA, queue places ---------------------------------------------
    def admit(self, costs: StepCosts, now: float) -> list[Request]:
        """Take what ``admits`` allows from the queue, oldest first (a client at its share waits for its own rows)."""
        if not self.waiting:
            return []
        slots, caps = self._slots(now), self.client_caps(costs)
        admitted = []
        for req in self.waiting:
            if len(slots) >= self.max_batch_size:
                break
            if self.admits(req, slots, costs, caps):
                slots.add(self._seat(req, now))
                admitted.append(req)
        if admitted:
            taken = {id(r) for r in admitted}
            self.waiting = deque(r for r in self.waiting if id(r) not in taken)
        return admitted

    def eta(self, targets: Iterable[Request], now: float, costs: StepCosts, extra: Iterable[Request] = ()) -> dict[int, float]:
        """Predicted seconds until each of ``targets`` (queued, or ``extra``: about to be) is admitted.

        Admission replayed on simulated slots: at ``now`` exactly as ``admit`` would run; then every held row
        makes audio at the same pace (n rows make ``costs.rate(n)`` together), the row with the least audio left
        ends first and frees its slot, and ``admits`` runs over the queue again; while a new stream waits on the load check
        and some listener holds room or gains it, also every ``step_s`` (admission looks each step). Each listener's buffer follows: it gains what its row makes and
        plays out in real time (forgetting them made the ETA error p95 6.1 in benchmarks/stream_qos_sim.py's Poisson
        run, 0.9 with them). Past ``now`` a new stream the load check refuses holds the other new streams back until
        the next event (files and later lines may pass), which keeps the replay linear. Past ``max_queue_wait_s``
        the replay stops: a target not admitted by then gets that lower bound.
        """
        slots, caps = self._slots(now), self.client_caps(costs)
        ends: list[tuple[float, int, Seat]] = []
        for s in slots._all.values():
            s.base, s.end = s.held_s, s.left_s
            ends.append((s.left_s, id(s), s))
        heapq.heapify(ends)
        most = max((s.base for s in slots._all.values() if s.stream), default=0.0)  # no listener holds more
        pending = [r for r in (*self.waiting, *extra) if not r.cancel_requested]
        wanted = {r.id for r in targets}
        result: dict[int, float] = {}
        t, made = now, 0.0  # made: audio each held row has made since ``now``
        others = [r for r in pending if not r.stream or r.after is not None]  # files and later lines: may pass a full load
        taken: set[int] = set()
        head = ohead = 0  # pending[:head] and others[:ohead] are all taken

        def take(r: Request) -> None:
            nonlocal most
            seat = self._seat(r, t)
            if t > now and r.stream:
                seat.held_s, seat.base = 0.0, t - now - made  # holds nothing yet
                most = max(most, seat.base)
            seat.end = made + seat.left_s
            slots.add(seat)
            heapq.heappush(ends, (seat.end, id(seat), seat))
            taken.add(id(r))
            if r.id in wanted:
                result[r.id] = t - now

        cap = self.max_batch_size
        while head < len(pending) and len(result) < len(wanted):
            refused = False
            for r in itertools.islice(pending, head, None):
                if len(slots) >= cap:
                    break
                if id(r) in taken:
                    continue
                if self.admits(r, slots, costs, caps):
                    take(r)
                elif r.stream and not slots.group_rows[r.group] and self._within_share(r, slots, caps):
                    refused = True  # by the load check
                    if t > now:  # new streams wait for the next event, files and later lines may pass
                        for o in itertools.islice(others, ohead, None):
                            if len(slots) >= cap:
                                break
                            if id(o) not in taken and self.admits(o, slots, costs, caps):
                                take(o)
                        break
            while head < len(pending) and id(pending[head]) in taken:
                head += 1
            while ohead < len(others) and id(others[ohead]) in taken:
                ohead += 1
            if not ends or len(result) == len(wanted) or t - now > self.qos.max_queue_wait_s:
                break
            n, rate = len(slots), costs.rate(len(slots))
            dt = max(1e-9, (ends[0][0] - made) * n / rate if math.isfinite(rate) else 0.0)  # a row ends at a step's end
            if refused and dt > self.qos.step_s and (slots.holding or rate > n):  # buffers give room: look again a step on
                t, made = t + self.qos.step_s, made + self.qos.step_s * rate / n
            else:
                end, _, seat = heapq.heappop(ends)
                t, made = t + dt, max(made, end)
                slots.remove(seat)
            slots.replay = (made - (t - now), made)  # each row made ``made``, that much more than the time passed
            slots.holding = int(most + made - (t - now) > self.qos.plenty_s)  # else nobody's buffer gives room
        for r in targets:
            result.setdefault(r.id, t - now)
        return result

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

        A queue place is a run: a group's later lines (``after`` set) wait inside their run and take none,
        so one page's 50 lines hold one place, not 50 of everyone's; and a request ``admits`` takes at the next
        admission (``starting``: the ETA's "now") waits for no place at all, however full the queue.
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
        if req.status is RequestStatus.WAITING:
            for i, other in enumerate(self.waiting):
                if other is req:
                    return i
        return 0

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
        ids = {id(r) for r in reqs}
        self.running = [r for r in self.running if id(r) not in ids]

    def drain(self) -> list[Request]:
        """Everything still queued or running (for close)."""
        everything = [*self.waiting, *self.running]
        self.waiting.clear()
        self.running = []
        return everything
