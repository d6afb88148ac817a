"""A worker thread with its own torch intra-op thread count: one stage of a CPU pipeline.

Two stages of small matrix products (a flow LM and a codec, say) each in its own Python thread with one intra-op
thread run side by side on two cores; one thread running both with two OpenMP threads makes the two OpenMP threads
wait for each other on every small product. torch ops release the GIL, so the stages overlap.

torch.set_num_threads is per thread for a thread that already ran torch ops (OpenMP's and MKL's thread-local
settings), but it also stores the count that threads started later begin with: the worker puts that stored count
back at once, so that other engines' threads started afterwards keep the process's count.

A background stage (a clip's voice state, computed while streams play) can run at a lower scheduling priority
(``nice``): on Linux a thread's nice value is its own, and the OpenMP threads it starts for its first parallel
region inherit it, so the cores go to the streams' stages first and to the background work when they are idle.
"""

from __future__ import annotations

import os
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, TypeVar

import torch

T = TypeVar("T")


def _use_threads(threads: int, nice: int = 0) -> None:
    if nice and hasattr(os, "setpriority"):  # before any torch op: its OpenMP threads inherit the value
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)  # raising one's own nice needs no privilege
        except OSError:
            pass  # a sandbox that refuses it: the stage still runs, at the usual priority
    before = torch.get_num_threads()  # what a new thread starts with (this one has not run torch ops yet)
    torch.set_num_threads(threads)
    if before != threads:
        # Put the stored count back from a throwaway thread: this thread keeps ``threads``.
        restore = threading.Thread(target=torch.set_num_threads, args=(before,), name="stage-thread-restore")
        restore.start()
        restore.join()


class StageThread:
    """Runs callables one at a time in one thread that uses ``threads`` torch intra-op threads."""

    def __init__(self, name: str, threads: int = 1, nice: int = 0) -> None:
        """``nice`` > 0: the thread (and the OpenMP threads it starts) at that lower priority (Linux)."""
        self.threads = max(1, int(threads))
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name, initializer=_use_threads, initargs=(self.threads, nice))
        # An idle worker thread of a backend no one holds any more ends with it.
        weakref.finalize(self, self._pool.shutdown, wait=False)

    def submit(self, fn: Callable[..., T], *args: Any) -> "Future[T]":
        return self._pool.submit(fn, *args)

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the stage's thread; its exception is raised here."""
        return self._pool.submit(fn, *args).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
