"""Many sessions at once: the Gradio queue lets them through together, so the engine batches across users.

Each session is its own visitor, as on the internet: a server that trusts 127.0.0.1 as its proxy, and a
made-up X-Forwarded-For address per session (one address is one visitor, who holds a share of the
engine's places: eight tabs from one address batch only as far as that share goes).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from gradio_client import Client
import pytest

from tests.support.app_server import serve_app

pytestmark = pytest.mark.slow

SESSIONS = 8
TEXT = (
    "Every one of these eight visitors asks for this sentence at the same moment, "
    "so the engine should decode them together in one batch."
)


@pytest.fixture(scope="module")
def visitors_server(artifacts_dir: Path) -> Iterator[str]:
    """The app behind a trusted proxy (127.0.0.1); waits past the queue limit are tested elsewhere."""
    env = {"TTS_APP_TRUSTED_PROXIES": "127.0.0.1", "TTS_APP_MAX_QUEUE_WAIT_S": "600"}
    with serve_app(artifacts_dir / "concurrency_server.log", env) as (base, _process):
        for _ in range(600):  # the model loads in the background
            if httpx.get(f"{base}/readyz", timeout=10).status_code == 200:
                break
            time.sleep(0.5)
        yield base


def _visitor(base: str, index: int) -> Client:
    return Client(base + "/", verbose=False, headers={"X-Forwarded-For": f"198.51.100.{index + 1}"})


def _max_batch(cell: str) -> int:
    match = re.search(r"max (\d+)", cell)
    return int(match.group(1)) if match else 0


def test_eight_sessions_batch_together(visitors_server: str, artifacts_dir: Path) -> None:
    clients = [_visitor(visitors_server, i) for i in range(SESSIONS)]
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


def test_queued_sessions_see_their_place_and_an_estimate(visitors_server: str) -> None:
    # Enough sessions of four long lines to fill every engine slot and then some (the slot count is
    # read from the server, not assumed), so the later sessions' lines wait in the engine queue,
    # and their pages say so while they wait.
    long_line = " ".join(["A long line keeps its slot in the engine busy for a while."] * 5)
    text = "\n".join([long_line] * 4)
    slots = int(_visitor(visitors_server, 99).predict(api_name="/engine_stats")["max_batch_size"])
    sessions = slots // 4 + 2  # at least eight lines more than the engine has slots
    clients = [_visitor(visitors_server, 10 + i) for i in range(sessions)]
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
    # "N request(s) ahead in the engine queue, about X s to wait": the place counts lines actually submitted
    # (at most every other session's four), and the engine's estimate is a wait that came true within the
    # 300 s each run was given to finish.
    notes = [re.search(r"(\d+) requests? ahead in the engine queue(?:, about (\d+\.\d) s to wait)?", s) for s in queued]
    assert all(notes), queued
    places = [int(n.group(1)) for n in notes]
    waits = [float(n.group(2)) for n in notes if n.group(2) is not None]
    assert waits, queued
    assert max(places) >= 1 and max(places) <= 4 * sessions, places
    assert all(0.0 <= w <= 300.0 for w in waits) and max(waits) > 0.0, waits  # 0.0: its turn is at hand
