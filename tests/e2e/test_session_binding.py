"""Knowing a session hash grants nothing, and no URL the page is handed names it (issue 32, item 7).

Through the real server: the victim drives its page the way the page's script does (a session hash
of its own, events through Gradio's queue); the stranger knows the victim's hash and asks from
another address (a socket bound to 127.0.0.2) or from the victim's address without the victim's
browser cookie. The stranger gets neither the history zip, nor Stop, nor the stream, nor the
heartbeat; the victim's run ends "Done" and no event output carries the hash.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(180.0)
STRANGER_ADDRESS = "127.0.0.2"
LONG_RUN = "\n".join(f"Line {n} of a long run that a stranger must not be able to stop." for n in range(10))


class Page:
    """One visitor's page session over its own HTTP client (its address, its cookies)."""

    def __init__(self, base: str, session: str | None = None, address: str = "127.0.0.1", browser: bool = False) -> None:
        self.base = base
        self.session = session or uuid.uuid4().hex[:11]
        self.client = httpx.Client(base_url=base, timeout=TIMEOUT, transport=httpx.HTTPTransport(local_address=address))
        if browser:  # the page's HTML sets the browser's cookie, as it does for a real browser
            self.html = self.client.get("/")
            assert self.html.status_code == 200
        dependencies = self.client.get("/config").json()["dependencies"]
        self.fn_index = {dep["api_name"]: dep["id"] for dep in dependencies}

    def join(self, api_name: str, data: list[Any]) -> httpx.Response:
        body = {"data": data, "fn_index": self.fn_index[api_name], "session_hash": self.session, "event_data": None,
                "trigger_id": None}
        return self.client.post("/gradio_api/queue/join", json=body)

    def submit(self, api_name: str, data: list[Any]) -> str:
        reply = self.join(api_name, data)
        assert reply.status_code == 200, reply.text
        return reply.json()["event_id"]

    def raw_messages(self, event_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """The event's messages, each with its raw SSE line, up to and including ``process_completed``."""
        with self.client.stream("GET", "/gradio_api/queue/data", params={"session_hash": self.session}) as stream:
            assert stream.status_code == 200, stream.read()
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("event_id") in (None, event_id):
                        yield line, message
                        if message.get("msg") == "process_completed":
                            return
        raise AssertionError(f"the event stream of {event_id} ended before the event did")

    def output(self, api_name: str, data: list[Any]) -> list[Any]:
        *_, (_line, last) = self.raw_messages(self.submit(api_name, data))
        assert last["success"], last
        return last["output"]["data"]

    @contextmanager
    def heartbeat(self) -> Iterator[None]:
        with self.client.stream("GET", f"/gradio_api/heartbeat/{self.session}") as stream:
            assert stream.status_code == 200
            beats = stream.iter_lines()  # kept: a dropped iterator closes the stream
            next(beats)
            yield


def generate_data(text: str, streaming: bool = False) -> list[Any]:
    """The Speak tab's inputs (the HLS stream, not the page's live player: live_player False)."""
    return [text, "Built-in voice", "lj_female_us", None, 1.0, 1.0, 0, streaming, None, "", True, "piper-joe-medium", False]


def stream_urls(lines: list[str]) -> list[str]:
    """Every stream playlist URL in the raw event lines."""
    urls: set[str] = set()
    for line in lines:
        for part in line.split('"'):
            if "/gradio_api/stream/" in part and part.endswith("playlist.m3u8"):
                urls.add(part)
    return sorted(urls)


def test_a_stranger_with_the_hash_gets_no_history_zip(app_server: str) -> None:
    victim = Page(app_server)
    with victim.heartbeat():
        victim.output("generate", generate_data("Alice's secret take."))
        rows, archive = victim.output("_history_outputs", [None])
        assert archive["value"]["url"].endswith(".zip")  # the owner gets the zip
        for stranger in (Page(app_server, victim.session, STRANGER_ADDRESS),):
            refused = stranger.join("_history_outputs", [None])
            assert refused.status_code == 403, refused.text
            assert "another page" in refused.json()["detail"]
            assert stranger.client.get("/gradio_api/queue/data", params={"session_hash": victim.session}).status_code == 403
    assert "Alice" in json.dumps(rows)


def test_a_stranger_with_the_hash_cannot_stop_the_run(app_server: str) -> None:
    victim = Page(app_server)
    stranger = Page(app_server, victim.session, STRANGER_ADDRESS)
    with victim.heartbeat():
        event = victim.submit("generate", generate_data(LONG_RUN, streaming=True))
        messages = victim.raw_messages(event)
        while next(messages)[1]["msg"] != "process_generating":  # the victim's run is in the engine
            pass
        assert stranger.join("stop", []).status_code == 403
        cancel = {"session_hash": victim.session, "fn_index": victim.fn_index["generate"], "event_id": event}
        assert stranger.client.post("/gradio_api/cancel", json=cancel).status_code == 403
        *_, (_line, last) = messages
    assert last["success"], last
    assert "Done" in last["output"]["data"][3], last["output"]["data"][3]


def test_no_event_output_names_the_session_and_the_stream_is_the_owners(app_server: str) -> None:
    victim = Page(app_server, browser=True)
    stranger = Page(app_server, victim.session, STRANGER_ADDRESS)
    with victim.heartbeat():
        lines = [line for line, _message in victim.raw_messages(victim.submit("generate", generate_data("One. Two.", True)))]
        leaked = [line for line in lines if victim.session in line]
        assert not leaked, leaked[:2]
        urls = stream_urls(lines)
        assert urls, "the run handed the page no stream URL"
        playlist = victim.client.get(urls[0])
        assert playlist.status_code == 200 and "#EXTM3U" in playlist.text
        assert victim.client.get(urls[0].replace("playlist.m3u8", "playlist-file")).status_code == 200
        assert stranger.client.get(urls[0]).status_code == 403
        assert stranger.client.get(f"/gradio_api/heartbeat/{victim.session}").status_code == 403
        # The victim's own address without the victim's browser cookie is a stranger too.
        cookieless = httpx.Client(base_url=app_server, timeout=TIMEOUT)
        assert cookieless.get(urls[0]).status_code == 403
        assert cookieless.get("/gradio_api/queue/data", params={"session_hash": victim.session}).status_code == 403


def test_the_page_cookie_is_http_only_and_gradio_client_style_callers_still_work(app_server: str) -> None:
    page = Page(app_server, browser=True)
    cookie = page.html.headers["set-cookie"]
    assert cookie.startswith("tts_page=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert page.output("stop", []) == ["■ Nothing was running."]
    # An API caller: no cookie, a new hash per client; bound to its address, it works as before.
    caller = Page(app_server)
    assert caller.output("stop", []) == ["■ Nothing was running."]
    assert Page(app_server, caller.session, STRANGER_ADDRESS).join("stop", []).status_code == 403


def test_every_route_that_takes_a_hash_refuses_a_stranger(app_server: str) -> None:
    victim = Page(app_server)
    with victim.heartbeat():
        assert victim.output("stop", []) == ["■ Nothing was running."]
        stranger = Page(app_server, victim.session, STRANGER_ADDRESS).client
        fn = victim.fn_index["stop"]
        event = {"data": [], "fn_index": fn, "session_hash": victim.session}
        refused = {
            "queue/join": stranger.post("/gradio_api/queue/join", json=event),
            "run/predict": stranger.post("/gradio_api/run/predict", json=event),
            "api/stop": stranger.post("/gradio_api/api/stop", json=event),
            "call/stop": stranger.post("/gradio_api/call/stop", json=event),
            "cancel": stranger.post("/gradio_api/cancel", json={**event, "event_id": "x"}),
            "component_server": stranger.post("/gradio_api/component_server", json={
                "session_hash": victim.session, "component_id": 1, "fn_name": "x", "data": None}),
            "queue/data": stranger.get("/gradio_api/queue/data", params={"session_hash": victim.session}),
            "heartbeat": stranger.get(f"/gradio_api/heartbeat/{victim.session}"),
        }
        assert {route: reply.status_code for route, reply in refused.items()} == dict.fromkeys(refused, 403)
        # Naming the victim's hash beside one of its own binds nothing and gets nothing (a request uses one session).
        both = stranger.get("/gradio_api/queue/data", params={"session_hash": ["mine", victim.session]})
        assert both.status_code == 400 and "\n" not in both.text.strip(), both.text
        assert all(reply.json()["detail"] == "this session belongs to another page" for reply in refused.values())
        # Gradio reads a form's session_hash too: the route takes JSON only.
        form = stranger.post("/gradio_api/component_server", data={"session_hash": victim.session, "component_id": "1",
                                                                   "fn_name": "x", "data": "1"}, files={"f": ("a", b"a")})
        assert form.status_code == 415, form.text
        assert victim.output("stop", []) == ["■ Nothing was running."]  # the owner is unaffected


def test_one_address_cannot_fill_the_binding_table_for_everyone(app_server: str) -> None:
    """Every new hash binds a table entry: one address binding hash after hash is refused past its own cap (429,
    one line), while another address still opens new sessions (the table's global cap is 100 times larger)."""
    from tts_app import settings

    MAX_PER_VISITOR = settings.default("TTS_APP_SESSIONS_PER_VISITOR")

    def cancel(client: httpx.Client, session: str) -> httpx.Response:
        return client.post("/gradio_api/cancel", json={"session_hash": session, "fn_index": 0, "event_id": "x"})

    flood = httpx.Client(base_url=app_server, timeout=TIMEOUT, transport=httpx.HTTPTransport(local_address="127.0.0.9"))
    other = httpx.Client(base_url=app_server, timeout=TIMEOUT, transport=httpx.HTTPTransport(local_address="127.0.0.10"))
    with flood, other:
        codes = [cancel(flood, f"flood{i:05d}").status_code for i in range(MAX_PER_VISITOR)]
        assert 429 not in codes and 403 not in codes, sorted(set(codes))
        refused = cancel(flood, "flood-one-more")
        assert refused.status_code == 429 and "\n" not in refused.text.strip(), refused.text
        assert cancel(flood, "flood00000").status_code == codes[0]  # its bound hashes still work
        assert cancel(other, "another-visitors-page").status_code == codes[0]


def test_stream_ids_in_an_echoed_upload_mint_no_tokens(app_server: str) -> None:
    """Issue 46, hole 2: the Document tab's load_file echoes an uploaded .txt; text shaped like a stream id
    (``name/<32 hex>/<n>/playlist.m3u8``) is no run of the caller's: it comes back as it was, and mints no
    token (each one a table entry: 30 such uploads once held 727,890 of them)."""
    page = Page(app_server)
    text = "\n".join(f"name{n}/{uuid.uuid4().hex}/{n % 9}/playlist.m3u8 and more" for n in range(3000))
    uploaded = page.client.post("/gradio_api/upload", files={"files": ("ids.txt", text.encode())})
    assert uploaded.status_code == 200, uploaded.text
    file = {"path": uploaded.json()[0], "orig_name": "ids.txt", "meta": {"_type": "gradio.FileData"}}
    echoed = page.output("load_file", [file])[0]
    assert echoed == text, "the echoed text was rewritten: stream tokens were minted from it"
    # A stream path of the caller's own session but no real run: left alone too.
    own = f"{page.session}/{uuid.uuid4().hex}/3/playlist.m3u8"
    uploaded = page.client.post("/gradio_api/upload", files={"files": ("own.txt", own.encode())})
    file = {"path": uploaded.json()[0], "orig_name": "own.txt", "meta": {"_type": "gradio.FileData"}}
    assert page.output("load_file", [file])[0] == own


def cancel(client: httpx.Client, session: str) -> httpx.Response:
    """The cheapest request that names (and so binds) a session hash."""
    return client.post("/gradio_api/cancel", json={"session_hash": session, "fn_index": 0, "event_id": "x"})


def test_a_request_binds_at_most_the_one_session_it_uses(app_server: str) -> None:
    """Issue 46, hole 3: one GET named 500 hashes and each was bound, even on a route that ignores them
    (303 such GETs from 101 addresses filled the table for everyone). A hash in the query of a route that
    reads none binds nothing; a request naming two sessions is refused (400) and binds neither."""
    hashes = [f"many{n:04d}" for n in range(500)]
    with client_at(app_server, "127.0.0.61") as flood, client_at(app_server, "127.0.0.62") as other:
        assert flood.get("/gradio_api/info", params={"session_hash": hashes}).status_code == 200
        two = flood.get("/gradio_api/queue/data", params={"session_hash": ["two-a", "two-b"]})
        assert two.status_code == 400 and "\n" not in two.text.strip(), two.text
        # Nothing was bound to the flooding address: another visitor's page may use these hashes as its own.
        assert [cancel(other, h).status_code for h in (hashes[0], hashes[-1], "two-a", "two-b")].count(403) == 0


def client_at(base: str, address: str) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=TIMEOUT, transport=httpx.HTTPTransport(local_address=address))


@pytest.fixture(scope="module")
def small_table(artifacts_dir: Any) -> Iterator[str]:
    """A server whose binding table holds 200 hashes, 60 per visitor (the defaults: 100,000 and 1,000)."""
    from tests.support.app_server import serve_app

    env = {"TTS_APP_SESSION_BINDINGS": "200", "TTS_APP_SESSIONS_PER_VISITOR": "60"}
    with serve_app(artifacts_dir / "small_binding_table.log", env) as (base, _process):
        yield base


def test_a_full_binding_table_refuses_its_heaviest_holders_never_a_newcomer(small_table: str) -> None:
    """Issue 46, hole 3: four addresses bind hashes at once until the table is full and past it; then a
    newcomer's page runs its first event (on main: 503 for every newcomer while the table stayed full),
    and a flooder, holding as many as anyone, has its next new hash refused (429, one line)."""
    codes: dict[str, list[int]] = {}

    def flood(address: str) -> None:
        with client_at(small_table, address) as http:
            codes[address] = [cancel(http, f"{address.replace('.', '_')}-{n}").status_code for n in range(60)]

    floods = [threading.Thread(target=flood, args=(f"127.0.1.{k}",)) for k in range(1, 5)]
    for thread in floods:
        thread.start()
    for thread in floods:
        thread.join(120)
    assert len(codes) == 4 and all(set(c) <= {200, 429} for c in codes.values()), codes
    assert sum(c.count(200) for c in codes.values()) > 200  # the table (200) filled, and every flooder went on
    newcomer = Page(small_table, address="127.0.2.1")
    assert newcomer.output("stop", []) == ["■ Nothing was running."]
    for address in codes:  # each flooder soon holds as many as anyone: its next new hash is refused
        with client_at(small_table, address) as flooder:
            tries = [cancel(flooder, f"{address.replace('.', '_')}-more-{n}") for n in range(3)]
        refused = next((reply for reply in tries if reply.status_code != 200), tries[-1])
        assert refused.status_code == 429 and "\n" not in refused.text.strip(), (address, refused.text)
    assert Page(small_table, address="127.0.2.2").output("stop", []) == ["■ Nothing was running."]
