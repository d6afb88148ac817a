"""Submit to the engine from a coroutine without losing the request when the coroutine is cancelled.

A submission runs on a thread (it checks and phonemizes the text: blocking work kept off the event
loop). A Gradio event cancelled, or an HTTP client gone, while that thread runs used to lose the
handles it returned: the engine then made the audio for no one. ``submitted`` waits for the thread
and, when its caller was cancelled meanwhile, cancels what it submitted before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _cancel_all(made: Any) -> None:
    """Cancel a handle, or each handle of a list, that a submission returned."""
    for handle in made if isinstance(made, (list, tuple)) else [made]:
        handle.cancel()


async def submitted(submit: Callable[[], T]) -> T:
    """``submit()`` (returning a handle or a list of handles) run on a thread; if this coroutine is cancelled
    before it returns, the handles it made are cancelled once it does."""
    work = asyncio.ensure_future(asyncio.to_thread(submit))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        work.add_done_callback(lambda done: done.cancelled() or done.exception() is not None or _cancel_all(done.result()))
        raise
