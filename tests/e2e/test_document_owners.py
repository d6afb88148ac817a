"""A document job is its owner's, not its id's holder's (issue 46, hole 6), through the real server.

Visitor A starts a job; visitor B knows its id (it sits in A's address bar). Over the API, B is another
address; on the page, B is another browser (its own ``tts_page`` cookie) at the same address. B reads
nothing (progress, captions, audio: 404, as for an id that never existed), stops nothing, shares nothing,
and A's job runs on. A may make a read-only share link: through it B reads the progress and files but
cannot stop the job; once A revokes the link B gets 404 again.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(180.0)
LONG = "\n\n".join(f"Paragraph {n}. The birch canoe slid on the smooth planks, and the job read on." for n in range(60))
SHORT = "# Secret\n\nAlice's private letter."
VOICE = ["Built-in voice", "lj_female_us", None, "", 1.0, 1.0, 0]  # mode, built-in, upload, clip text, strength, speed, seed


def client(base: str, address: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(base_url=base, timeout=TIMEOUT, transport=httpx.HTTPTransport(local_address=address))


def wait_over(http: httpx.Client, path: str, timeout_s: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        progress = http.get(path).json()
        if progress["status"] not in ("queued", "running"):
            return progress
        assert time.monotonic() < deadline, progress
        time.sleep(0.3)


def test_over_the_api_a_stranger_with_the_id_reads_stops_and_shares_nothing(app_server: str) -> None:
    with client(app_server) as a, client(app_server, "127.0.0.46") as b:
        started = a.post("/v1/documents", json={"input": LONG, "markdown": False})
        assert started.status_code == 202, started.text
        job = started.json()["id"]
        refused = {
            "progress": b.get(f"/v1/documents/{job}"),
            "captions": b.get(f"/v1/documents/{job}/captions.srt"),
            "audio": b.get(f"/v1/documents/{job}/audio.wav"),
            "stop": b.delete(f"/v1/documents/{job}"),
            "share": b.post(f"/v1/documents/{job}/share", json={}),
        }
        assert {k: r.status_code for k, r in refused.items()} == dict.fromkeys(refused, 404)
        assert all("\n" not in r.json()["error"]["message"] for r in refused.values())
        assert a.get(f"/v1/documents/{job}").json()["status"] in ("queued", "running")  # A's job runs on
        assert a.delete(f"/v1/documents/{job}").status_code == 200  # its owner stops it
        wait_over(a, f"/v1/documents/{job}")

        secret = a.post("/v1/documents", json={"input": SHORT}).json()["id"]
        assert wait_over(a, f"/v1/documents/{secret}")["status"] == "finished"
        assert b.get(f"/v1/documents/{secret}/captions.srt").status_code == 404
        shared = a.post(f"/v1/documents/{secret}/share", json={})
        assert shared.status_code == 200, shared.text
        url = shared.json()["url"]
        assert secret not in url and a.post(f"/v1/documents/{secret}/share", json={}).json()["url"] == url  # one per job
        assert b.get(url).json()["status"] == "finished"
        assert "private letter" in b.get(f"{url}/captions.srt").text
        assert b.get(f"{url}/audio.wav").status_code == 200
        assert b.delete(url).status_code in (404, 405)  # read-only: the link has no stop
        assert b.get(f"/v1/documents/{secret}").status_code == 404  # the link is no key to the id
        assert a.delete(f"/v1/documents/{secret}/share").status_code == 200
        assert b.get(url).status_code == 404 and b.get(f"{url}/captions.srt").status_code == 404
        assert b.get("/v1/shared-documents/" + "A" * 22).status_code == 404


class Browser:
    """One browser's page: its own cookie (set by the page's HTML) and session, events through Gradio's queue."""

    def __init__(self, base: str) -> None:
        self.http = client(base)
        assert self.http.get("/").status_code == 200 and "tts_page" in self.http.cookies
        self.session = uuid.uuid4().hex[:11]
        self.fn = {d["api_name"]: d["id"] for d in self.http.get("/config").json()["dependencies"]}

    def messages(self, event_id: str) -> Iterator[dict[str, Any]]:
        with self.http.stream("GET", "/gradio_api/queue/data", params={"session_hash": self.session}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("event_id") in (None, event_id) and message.get("msg") == "process_completed":
                        return message
        raise AssertionError("the event stream ended before the event did")

    def call(self, api_name: str, data: list[Any], query: str = "") -> dict[str, Any]:
        body = {"data": data, "fn_index": self.fn[api_name], "session_hash": self.session, "event_data": None,
                "trigger_id": None}
        joined = self.http.post(f"/gradio_api/queue/join{query}", json=body)
        assert joined.status_code == 200, joined.text
        return self.messages(joined.json()["event_id"])

    def output(self, api_name: str, data: list[Any], query: str = "") -> list[Any]:
        reply = self.call(api_name, data, query)
        assert reply["success"], reply
        return reply["output"]["data"]


def test_on_the_page_another_browser_with_the_id_gets_nothing_but_a_share_link_works(app_server: str) -> None:
    a, b = Browser(app_server), Browser(app_server)  # one address, two browsers
    try:
        _state, box = a.output("read_document", [LONG, False, "Letter", *VOICE, None])  # None: the upload's name (page state)
        job = box.split('data-job="', 1)[1].split('"', 1)[0]  # what A's address bar shows (a State stays on the server)
        # B opens A's address (?job=<id>): its tab's job is A's id, and it finds nothing; its Stop stops nothing.
        seen = b.output("resume", [], query=f"?job={job}")[1]
        assert "unknown" in seen and job not in seen
        b.output("stop_document", [None])
        assert "unknown" in b.output("poll", [None])[0]
        assert b.http.get(f"/v1/documents/{job}/audio.wav").status_code == 404  # B's cookie is not A's
        assert b.call("share_document", [None])["success"] is False
        assert a.http.get(f"/v1/documents/{job}").json()["status"] in ("queued", "running")  # A's job runs on
        assert job in a.output("resume", [], query=f"?job={job}")[1]  # A's own browser finds it again
        # A shares it: B follows the link, read-only.
        link = a.output("share_document", [None])[0]
        assert link.startswith("?share=") and job not in link
        seen = b.output("resume", [], query=link)[1]
        assert "Shared with you" in seen and "/v1/shared-documents/" in seen and "data-job" not in seen
        refused = b.call("stop_document", [None])
        assert not refused["success"] and "Only the browser" in refused["output"]["error"]
        assert a.http.get(f"/v1/documents/{job}").json()["status"] in ("queued", "running")
        a.output("unshare_document", [None])
        assert "unknown" in b.output("poll", [None])[0]
        a.output("stop_document", [None])
        assert wait_over(a.http, f"/v1/documents/{job}")["status"] == "cancelled"
    finally:
        a.http.close()
        b.http.close()
