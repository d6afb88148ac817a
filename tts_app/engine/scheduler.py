"""The scheduler owns the queues; it never touches tensors or the model."""

from __future__ import annotations

from collections import deque

from .request import Request, RequestStatus


class EngineBusy(RuntimeError):
    """The engine's queue is full; try again later."""


class Scheduler:
    """FIFO admission into at most ``max_batch_size`` running slots."""

    def __init__(self, max_batch_size: int, max_queue: int) -> None:
        if max_batch_size < 1 or max_queue < 1:
            raise ValueError("max_batch_size and max_queue must be at least 1")
        self.max_batch_size = max_batch_size
        self.max_queue = max_queue
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []

    def add(self, req: Request) -> None:
        if len(self.waiting) >= self.max_queue:
            raise EngineBusy(f"the engine is busy ({len(self.waiting)} requests queued); try again shortly")
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

    def admit(self) -> list[Request]:
        """Fill free slots from the head of the queue (slot refill); FIFO, so none starves."""
        admitted = []
        while self.waiting and len(self.running) + len(admitted) < self.max_batch_size:
            admitted.append(self.waiting.popleft())
        return admitted

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
