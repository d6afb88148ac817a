"""Stop: the session's runs cancelled, what they made kept, and one account of it for the page and for Stop's answer.

Stop cancels the requests not yet finished (active_runs.py counts them). The run's handler then
waits for every line's pump to end (a cancelled request ends within an engine step), takes the
events still queued, the audio of cancelled lines included, and drops their end marks: a line
cut short keeps its audio in the joined file but is not a finished line. Stop answers once the
handler has ended, with the handler's own account, so the page's last status and Stop's agree.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import gradio as gr

from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.session.owner import owner_of
from tts_app.web.ui.speak.run_model import Event
from tts_app.web.ui.speak.run_status import stopped_status

STOP_WAIT_S = 10.0  # Stop's answer waits at most this long for the run's handler to end
SETTLE_S = 5.0  # a stopped run waits at most this long for its cancelled requests to end


async def settle(
    pumps: Sequence[asyncio.Task], events: asyncio.Queue[Event], getter: asyncio.Future[Event] | None, handles: Sequence[Any]
) -> list[Event]:
    """The events a stopped run still has to take: every pump ended (or ``SETTLE_S`` passed), the audio that
    came, and the end marks of the lines that did finish (a cancelled line's end and any failure are dropped)."""
    if pumps:
        await asyncio.wait(pumps, timeout=SETTLE_S)
    batch: list[Event] = []
    if getter is not None:
        if getter.done() and not getter.cancelled():
            batch.append(getter.result())  # taken off the queue by the pending get
        else:
            getter.cancel()
    while not events.empty():
        batch.append(events.get_nowait())
    return [
        (index, item) for index, item in batch
        if not isinstance(item, BaseException) and (item is not None or handles[index].status.value == "finished")
    ]  # fmt: skip


async def stop(request: gr.Request, runs: ActiveRuns) -> str:
    """Cancel the engine requests of this session's runs (no other session's), and answer once the runs' handlers
    have ended: every update they sent is then before this one (one in flight as Stop came turned the status back
    to Speaking…), and the answer is their own account of what finished."""
    session = owner_of(request) or "anonymous"
    stopping = [run for run in runs.runs_of(session)]
    cancelled = runs.cancel(session)
    deadline = time.monotonic() + STOP_WAIT_S
    while runs.open_runs(session) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    told = [run.outcome for run in stopping if run.outcome]
    if told:
        return told[-1]
    if stopping:
        return stopped_status(cancelled.finished, cancelled.total)
    return "■ Nothing was running."
