"""Fair shares, the 503 with Retry-After, and /metrics, through the real server (python app.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.app_server import serve_app
from tests.support.streamed import first_bytes

pytestmark = pytest.mark.slow

FLOOD = 40
LONG = ("The quick brown fox jumps over the lazy dog, and then it runs far away into the woods. " * 45)[:4000]


@pytest.fixture(scope="module")
def server(artifacts_dir: Path) -> Iterator[str]:
    with serve_app(artifacts_dir / "qos_server.log", {"TTS_APP_MAX_QUEUE_WAIT_S": "20"}) as (base, _process):
        for _ in range(600):  # the model loads in the background; its warm-up teaches the engine its step costs
            if httpx.get(f"{base}/readyz", timeout=10).status_code == 200:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the server never became ready (/readyz not 200 in 300 s): the QoS figures would be the warm-up's")
        yield base


async def _open(client: httpx.AsyncClient, base: str, text: str) -> httpx.Response:
    """Send a speech request and return once its status and headers are in (the body stays open)."""
    request = client.build_request("POST", f"{base}/v1/audio/speech", json={"model": "tts-1", "input": text, "response_format": "pcm"})
    return await client.send(request, stream=True)


async def _flood_then_visit(base: str) -> tuple[list[httpx.Response], int, bytes, dict]:
    limits = httpx.Limits(max_connections=FLOOD + 5)
    flooder = httpx.AsyncClient(timeout=120, limits=limits)  # from 127.0.0.1
    visitor = httpx.AsyncClient(timeout=120, transport=httpx.AsyncHTTPTransport(local_address="127.0.0.2"))
    try:
        flood = await asyncio.gather(*(_open(flooder, base, LONG) for _ in range(FLOOD)))
        answer = await _open(visitor, base, "A short visit while someone floods the server.")
        first = await first_bytes(answer)
        status = answer.status_code
        await answer.aclose()
        refused = [r for r in flood if r.status_code == 503]
        bodies = [json.loads(await r.aread()) for r in refused[:3]]
        for r in flood:
            await r.aclose()
        return flood, status, first, {"bodies": bodies, "refused": refused}
    finally:
        await flooder.aclose()
        await visitor.aclose()


def test_a_flooder_gets_the_503_and_another_client_is_served(server: str) -> None:
    flood, status, first, extra = asyncio.run(_flood_then_visit(server))
    refused = extra["refused"]
    assert refused, "40 long streams from one address were all taken"
    assert sum(r.status_code == 200 for r in flood) >= 1  # the flooder keeps its share
    for r in refused:
        assert int(r.headers["Retry-After"]) >= 1
    for body in extra["bodies"]:
        assert set(body["error"]) == {"message", "type", "param", "code"}
        assert body["error"]["code"] == "engine_busy"
    assert status == 200 and len(first) >= 4096  # the other client got audio


def test_metrics_are_prometheus_text(server: str) -> None:
    with httpx.Client(timeout=120, transport=httpx.HTTPTransport(local_address="127.0.0.3")) as client:
        made = client.post(f"{server}/v1/audio/speech", json={"model": "tts-1", "input": "Counting what is made.", "response_format": "pcm"})
    assert made.status_code == 200 and made.content
    answer = httpx.get(f"{server}/metrics", timeout=30)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(answer.text)}
    for name in ("tts_time_to_first_audio_seconds", "tts_stall_seconds", "tts_queue_depth", "tts_admitted_streams",
                 "tts_estimated_capacity_audio_seconds_per_second", "tts_audio_produced_seconds"):
        assert name in families, name
    ttfa = {s.name: s for s in families["tts_time_to_first_audio_seconds"].samples if s.labels.get("model") == "piper-joe-medium"}
    assert ttfa["tts_time_to_first_audio_seconds_count"].value >= 1
    produced = [s for s in families["tts_audio_produced_seconds"].samples if s.labels.get("model") == "piper-joe-medium"]
    assert produced and produced[0].value > 0
    capacity = [s for s in families["tts_estimated_capacity_audio_seconds_per_second"].samples]
    assert capacity and capacity[0].value > 0
