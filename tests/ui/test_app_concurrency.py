"""Many sessions at once: the Gradio queue lets them through together, so the engine batches across users."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from gradio_client import Client
import pytest

pytestmark = pytest.mark.slow

SESSIONS = 8
TEXT = (
    "Every one of these eight visitors asks for this sentence at the same moment, "
    "so the engine should decode them together in one batch."
)


def _max_batch(cell: str) -> int:
    match = re.search(r"max (\d+)", cell)
    return int(match.group(1)) if match else 0


def test_eight_sessions_batch_together(app_server: str, artifacts_dir: Path) -> None:
    clients = [Client(app_server + "/", verbose=False) for _ in range(SESSIONS)]
    barrier = threading.Barrier(SESSIONS)
    results: list[tuple | BaseException | None] = [None] * SESSIONS

    def visit(index: int) -> None:
        try:
            barrier.wait(timeout=60)
            job = clients[index].submit(TEXT, "Model's own voice", None, None, 1.0, 1.0, index, False, api_name="/generate")
            results[index] = job.result(timeout=120)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results[index] = exc

    threads = [threading.Thread(target=visit, args=(i,)) for i in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    assert all(isinstance(r, tuple) for r in results), results

    # One line per session, so a batch above 1 in a session's own figures means other users shared it.
    per_session = [_max_batch(r[4]["data"][0][7]) for r in results]  # type: ignore[index]
    stats = clients[0].predict(api_name="/engine_stats")
    (artifacts_dir / "concurrency.json").write_text(
        json.dumps({"sessions": SESSIONS, "max_batch_per_session": per_session, "engine_stats": stats}, indent=2)
    )
    assert stats["max_batch_seen"] > 1
    shared = sum(1 for size in per_session if size > 1)
    assert shared >= SESSIONS // 2, f"requests of different sessions should share batches: {per_session}"


def test_queued_sessions_see_their_place_and_an_estimate(app_server: str) -> None:
    # Enough sessions of four long lines to fill every engine slot and then some (the slot count is
    # read from the server, not assumed), so the later sessions' lines wait in the engine queue,
    # and their pages say so while they wait.
    long_line = " ".join(["A long line keeps its slot in the engine busy for a while."] * 5)
    text = "\n".join([long_line] * 4)
    slots = int(Client(app_server + "/", verbose=False).predict(api_name="/engine_stats")["max_batch_size"])
    sessions = slots // 4 + 2  # at least eight lines more than the engine has slots
    clients = [Client(app_server + "/", verbose=False) for _ in range(sessions)]
    barrier = threading.Barrier(sessions)
    jobs: list = [None] * sessions

    def visit(index: int) -> None:
        barrier.wait(timeout=60)
        jobs[index] = clients[index].submit(text, "Model's own voice", None, None, 1.0, 1.0, 0, False, api_name="/generate")

    threads = [threading.Thread(target=visit, args=(i,)) for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    for job in jobs:
        job.result(timeout=300)
    statuses = [out[3] for job in jobs for out in job.outputs() if isinstance(out[3], str)]
    queued = [s for s in statuses if "in the engine queue" in s]
    assert queued, statuses
    assert any("s to wait" in s for s in queued), queued
