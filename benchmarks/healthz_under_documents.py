"""/healthz while four visitors post a 200,000-character Markdown table at once (issue 32, item 6).

Starts ``python app.py`` from a checkout (this one, or ``--repo DIR`` for another revision, e.g. a
``git worktree`` of the old code), polls /healthz every 50 ms: 10 s idle, then while the four posts
are answered (each from its own loopback address, so each is its own visitor), then 10 s with
their jobs running; prints median, p90 and max latency of each phase and the four replies.

    python benchmarks/healthz_under_documents.py [--repo DIR]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.voice_similarity import cpu_name  # noqa: E402
from tests.support.app_server import serve_app  # noqa: E402

ROW = "| alpha | beta gamma | 12345 |\n"
TABLE = "| a | b | c |\n|---|---|---|\n" + ROW * ((200_000 - 30) // len(ROW))
POLL_S = 0.05


def poll(probe: httpx.Client, seconds: float = 1e9, while_true=lambda: True) -> list[float]:
    """Latencies of /healthz, polled every POLL_S for ``seconds`` or while ``while_true()``."""
    latencies, end = [], time.monotonic() + seconds
    while time.monotonic() < end and while_true():
        start = time.monotonic()
        probe.get("/healthz")
        latencies.append(time.monotonic() - start)
        time.sleep(POLL_S)
    return latencies


def summary(name: str, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    return (f"{name}: n={len(ordered)} median={ordered[len(ordered) // 2]:.3f} s "
            f"p90={ordered[int(len(ordered) * 0.9)]:.3f} s max={ordered[-1]:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO_ROOT, help="the checkout whose app.py runs")
    args = parser.parse_args()
    print(f"CPU: {cpu_name()}; repo: {args.repo}", flush=True)
    replies: dict[str, tuple[int, float]] = {}
    started: list[str] = []  # job ids, stopped at the end

    def send(address: str, base: str) -> None:
        with httpx.Client(base_url=base, timeout=300, transport=httpx.HTTPTransport(local_address=address)) as client:
            start = time.monotonic()
            reply = client.post("/v1/documents", json={"input": TABLE})
            replies[address] = (reply.status_code, round(time.monotonic() - start, 2))
            if reply.status_code == 202:
                started.append(reply.json()["id"])

    log = Path("/tmp") / f"healthz_under_documents_{args.repo.name}.log"
    with serve_app(log, repo=args.repo, extra_env={"TTS_APP_CLIENT_SHARE": "1"}) as (base, _process):
        with httpx.Client(base_url=base, timeout=60) as probe:
            probe.post("/v1/documents", json={"input": "Warm up the document path."})
            print(summary("idle", poll(probe, 10)), flush=True)
            senders = [threading.Thread(target=send, args=(f"127.0.0.{k}", base)) for k in range(5, 9)]
            for sender in senders:
                sender.start()
            print(summary("four tables posted", poll(probe, while_true=lambda: any(s.is_alive() for s in senders))))
            print("replies (status, seconds):", sorted(replies.values()), flush=True)
            print(summary("jobs running", poll(probe, 10)), flush=True)
            for job in started:
                probe.delete(f"/v1/documents/{job}")


if __name__ == "__main__":
    main()
