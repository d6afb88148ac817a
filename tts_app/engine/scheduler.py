"""The scheduler owns the queues; it never touches tensors or the model."""

from __future__ import annotations

import math
from collections import Counter, deque
from typing import Iterable

from tts_app.engine.deadlines import buffered_s
from tts_app.engine.fluid import listeners_fed
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import Request, RequestStatus
from tts_app.engine.step_costs import StreamLoad

_FREE = StreamLoad(0.0, 0.0)  # nothing measured costs anything (a fake model)


class EngineBusy(RuntimeError):
    """The engine cannot take the request now; ``retry_after_s`` says when trying again makes sense."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Scheduler:
    """Admission into at most ``max_batch_size`` slots (a memory cap), fair between clients.

    ``policy`` "fifo": the head of the queue takes any free slot. "deadline": a stream is admitted
    while the real-time load of the admitted streams (each needs ``stream_load`` seconds of compute
    per second of audio) still fits ``load_margin`` of the machine; files (non-streamed requests) take
    the slots streams leave, up to ``batch_slot_share``. Either way a client (a visitor: its API calls and
    its page runs alike; None for the app's own work) holds at most ``client_share`` of the slots, a
    page's lines counted row by row, and of the queue places, where a page's later lines take none: they
    wait inside their run, behind its first line.
    """

    def __init__(
        self, max_batch_size: int, max_queue: int, policy: str = "deadline", qos: QosSettings | None = None
    ) -> None:
        if max_batch_size < 1 or max_queue < 1:
            raise ValueError("max_batch_size and max_queue must be at least 1")
        if policy not in ("fifo", "deadline"):
            raise ValueError(f"policy must be 'fifo' or 'deadline', got {policy!r}")
        self.max_batch_size = max_batch_size
        self.max_queue = max_queue
        self.policy = policy
        self.qos = qos if qos is not None else QosSettings()
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []

    # -- shares ---------------------------------------------------------------
    def client_slots(self, load: StreamLoad) -> int:
        """Rows one client may hold: its share of the slots, or of the stream places when fewer."""
        return max(1, math.floor(self.qos.client_share * min(self.max_batch_size, self.stream_places(load))))

    def client_rows(self) -> int:
        """Rows one client may hold, a page's lines each counted: its share of the slots (memory)."""
        return max(1, math.floor(self.qos.client_share * self.max_batch_size))

    def client_queue_places(self) -> int:
        return max(1, math.floor(self.qos.client_share * self.max_queue))

    def check_room(self, reqs: list[Request]) -> None:
        """Raise EngineBusy unless the queue, and each client's share of it, can take all of ``reqs``.

        A queue place is a run: a group's later lines (``after`` set) wait inside their run and take none,
        so one page's 50 lines hold one place, not 50 of everyone's.
        """
        reqs = [r for r in reqs if r.after is None]
        heads = [r for r in self.waiting if r.after is None]
        if len(heads) + len(reqs) > self.max_queue:
            raise EngineBusy(f"the engine is busy ({len(heads)} requests queued); try again shortly")
        asking = Counter(r.client for r in reqs if r.client is not None)
        if asking:
            queued = Counter(r.client for r in heads)
            for client, n in asking.items():
                if queued[client] + n > self.client_queue_places():
                    raise EngineBusy(
                        f"too many requests queued from this client ({queued[client]} waiting, "
                        f"at most {self.client_queue_places()}); try again shortly"
                    )

    def add(self, req: Request) -> None:
        self.check_room([req])
        self.waiting.append(req)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def position(self, req: Request) -> int:
        """Requests ahead of ``req`` in the queue (0 once it runs or ends)."""
        if req.status is not RequestStatus.WAITING:
            return 0
        for i, other in enumerate(self.waiting):
            if other is req:
                return i
        return 0

    def drop_cancelled(self) -> list[Request]:
        """Remove requests whose caller cancelled, from the queue and from the running slots."""
        gone = [r for r in self.waiting if r.cancel_requested] + [r for r in self.running if r.cancel_requested]
        if gone:
            self.waiting = deque(r for r in self.waiting if not r.cancel_requested)
            self.running = [r for r in self.running if not r.cancel_requested]
        return gone

    # -- admission ------------------------------------------------------------
    def stream_places(self, load: StreamLoad) -> int:
        """How many streams the machine feeds in real time with its margin (at least one; the slots at most)."""
        if self.policy == "fifo":
            return self.max_batch_size
        places = load.places(self.qos.load_margin)
        if not math.isfinite(places):
            return self.max_batch_size if places > 0 else 1
        places = max(1, math.floor(places))
        # Exploration: while every measured step had as many rows, a fixed step cost cannot be told from
        # a per-row one (a GPU's 64 rows cost about one row's step). With two places or more, steps of
        # different sizes come by themselves (newcomers step first, rows end apart); with one, a second
        # stream makes the larger step to measure.
        return min(self.max_batch_size, places + (load.probe and places == 1))

    def admit(self, load: StreamLoad = _FREE, now: float | None = None) -> list[Request]:
        """Take what fits from the queue, oldest first, skipping a request whose client is at its
        share of slots (it waits for its own client's rows, not for everyone else's). A request the
        queue's ETA promised this admission (``Request.promised``) takes a stream place even if the
        places shrank meanwhile (slots and client shares still hold). With ``now``, a stream past the
        places still comes in while what the heard listeners hold carries them all (``_carried``)."""
        slots = self.max_batch_size - len(self.running)
        admitted: list[Request] = []
        if slots > 0 and self.waiting:
            admitted = self._take(load, slots, now)
        for req in self.waiting:  # a promise holds for the next admission only, a full one included
            req.promised = False
        return admitted

    def _fluid_rate(self, load: StreamLoad, n: int) -> float:
        """Audio-s/s the machine makes for ``n`` streams stepping together, at ``load_margin`` of it."""
        return self.qos.load_margin * n / max(load.seconds_for(1.0, n), 1e-12)

    def _carried(self, newcomers: list[Request], load: StreamLoad, now: float) -> bool:
        """True when the machine, at ``load_margin`` of its rate for that many streams, feeds every admitted
        stream and ``newcomers`` (holding nothing yet) without any running dry (fluid.listeners_fed):
        listeners holding seconds of audio leave room that the place count, which assumes none, does not see."""
        streams = [r for r in self.running if r.stream and not r.cancel_requested] + newcomers
        n = len({r.group for r in streams})
        if not (math.isfinite(load.per_stream) and math.isfinite(load.per_step)) or load.probe:
            return False
        return listeners_fed([(_spare(buffered_s(r, now), self.qos), r.remaining_s()) for r in streams], self._fluid_rate(load, n))

    def _take(self, load: StreamLoad, slots: int, now: float | None = None) -> list[Request]:
        """``admit``'s pass over the queue: the requests taken (removed from it), at most ``slots``."""
        # Places and listener shares are counted in groups (a page's lines are heard one after another);
        # rows too, joins included, so a page's lines never take more slots than its visitor's share.
        groups = {r.group for r in self.running}
        holding = Counter(r.client for r in {r.group: r for r in self.running if r.client is not None}.values())
        rows = Counter(r.client for r in self.running if r.client is not None)
        row_cap = self.client_rows()
        streams = len({r.group for r in self.running if r.stream})
        files = len({r.group for r in self.running if not r.stream})
        stream_cap = self.stream_places(load)
        client_cap = self.client_slots(load)
        file_cap = self.max_batch_size if self.policy == "fifo" else max(1, math.floor(self.qos.batch_slot_share * self.max_batch_size))
        admitted: list[Request] = []
        admitted_streams: list[Request] = []
        for req in self.waiting:
            if len(admitted) >= slots:
                break
            joins = req.group in groups  # a later line of a group already in: no new stream place
            if req.client is not None and (rows[req.client] >= row_cap or (not joins and holding[req.client] >= client_cap)):
                continue
            carried = req.stream and now is not None and self.policy != "fifo" and self._carried([*admitted_streams, req], load, now)
            if self.policy == "fifo" or joins or req.promised or carried or (streams < stream_cap if req.stream else files < file_cap):
                admitted.append(req)
                rows[req.client] += 1
                if not joins:
                    groups.add(req.group)
                    holding[req.client] += 1
                    streams += req.stream
                    files += not req.stream
                    if req.stream:
                        admitted_streams.append(req)
        if admitted:
            taken = {id(r) for r in admitted}
            self.waiting = deque(r for r in self.waiting if id(r) not in taken)
        return admitted

    def eta(self, targets: Iterable[Request], now: float, load: StreamLoad, extra: Iterable[Request] = ()) -> dict[int, float]:
        """Predicted seconds until each of ``targets`` (queued, or ``extra``: about to be) starts.

        An event simulation of admission as ``admit`` does it: every held row steps in every step
        (work-conserving), so while n rows are held each makes a second of its audio in
        ``per_step + n * per_stream`` seconds (``load``: a GPU's rows nearly free, a CPU's each
        paying its own); a group (a page's lines, or one request) holds one place (a stream place, a
        file place, or under fifo none) while any of its rows is held, and its client one share; a
        place frees when its last held row's remaining audio is made; queued requests then take what
        fits, oldest first (a group's later line joins its group's place; a client at its share of
        places or rows waits). So a flooder's queue delays the flooder, not the visitor behind it, a
        page's fifty lines hold one place as in ``admit``, and a burst's later requests wait for the
        rows the burst itself admitted.
        """
        if not (math.isfinite(load.per_stream) and math.isfinite(load.per_step)):
            load = _FREE  # nothing to go on yet
        shared = self.policy == "fifo"  # fifo: any free slot, whatever the class
        places = {True: self.stream_places(load), False: max(1, math.floor(self.qos.batch_slot_share * self.max_batch_size))}
        client_cap, row_cap = self.client_slots(load), self.client_rows()
        held_places: Counter = Counter()  # pool (stream or not) -> groups holding a place
        group_rows: Counter = Counter()  # group -> rows held
        group_pool: dict[int, bool] = {}
        client_groups: Counter = Counter()
        client_rows: Counter = Counter()
        rows: list[tuple[float, int, str | None, float]] = []  # (audio left in seconds, group, client, audio its listener holds)

        def take(r: Request, held: float = 0.0) -> None:
            if r.group not in group_pool:
                group_pool[r.group] = r.stream
                held_places[r.stream] += 1
                client_groups[r.client] += r.client is not None
            group_rows[r.group] += 1
            client_rows[r.client] += r.client is not None
            rows.append((r.remaining_s(), r.group, r.client, held if r.stream else math.inf))

        def carried(r: Request) -> bool:
            """admit's _carried on the simulated rows: what the listeners hold then."""
            streams = [(_spare(held, self.qos), left) for left, _, _, held in rows if math.isfinite(held)] + [(0.0, r.remaining_s())]
            n = len({g for _, g, _, held in rows if math.isfinite(held)}) + 1
            return not load.probe and listeners_fed(streams, self._fluid_rate(load, n))

        def fits(r: Request) -> bool:
            joins = r.group in group_pool
            if r.client is not None and (client_rows[r.client] >= row_cap or (not joins and client_groups[r.client] >= client_cap)):
                return False
            return shared or joins or held_places[r.stream] < places[r.stream] or (r.stream and carried(r))

        for r in self.running:
            if not r.cancel_requested:  # a cancelled row leaves at the next step: its place is as good as free
                take(r, buffered_s(r, now))
        pending = [r for r in (*self.waiting, *extra) if not r.cancel_requested]
        wanted = {r.id for r in targets}
        result: dict[int, float] = {}
        t = now
        while pending and len(result) < len(wanted):
            left = []
            for i, r in enumerate(pending):
                if len(rows) >= self.max_batch_size:  # every slot held: the rest waits as it is
                    left.extend(pending[i:])
                    break
                if fits(r):
                    take(r)
                    if r.id in wanted:
                        result[r.id] = t - now
                else:
                    left.append(r)
            pending = left
            if not rows or len(result) == len(wanted):
                break
            # The row with the least audio left ends first; every other row made as much audio meanwhile.
            rows.sort(key=lambda row: row[0])
            made, group, client, _ = rows.pop(0)
            dt = made * (load.per_step + (len(rows) + 1) * load.per_stream)
            t += dt
            rows = [(audio - made, g, c, max(0.0, held + made - dt)) for audio, g, c, held in rows]
            group_rows[group] -= 1
            client_rows[client] -= client is not None
            if not group_rows[group]:  # its last held row ended: the group's place and share free
                held_places[group_pool.pop(group)] -= 1
                client_groups[client] -= client is not None
        return result

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
        everything = list(self.waiting) + self.running
        self.waiting.clear()
        self.running = []
        return everything


def _spare(held: float, q: QosSettings) -> float:
    """What a listener holds beyond ``plenty_s``: the part the fluid check may count on (steps come in
    windows, not as a fluid, the plan serves a listener before it runs dry, not at the last moment, and
    the price of a stream is an estimate: counting from ``low_s`` stalled the simulated CPU-like machines)."""
    return max(0.0, held - q.plenty_s)
