"""Visitors own their things (issue 24, items 4 and 5), tried from outside through the real server.

Visitor A uses the page (a session hash of its own, a heartbeat held open, events through
Gradio's queue); visitor B knows what A could have shared: a download link. B must not learn
A's session from it, read A's history, stop A's run or delete A's files, and B's saved voices
and pronunciations must change nothing for A or for an API caller.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tts_app.assets import BUILTIN_VOICES_DIR

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(180.0)
CLIP = BUILTIN_VOICES_DIR / "f5_ref_en.wav"
BUILTIN = "Built-in voice"
MODEL = "piper-joe-medium"
OUTPUTS = "/tts_app_outputs/"


class Page:
    """One visitor's page session, driven the way the page's script drives it."""

    def __init__(self, base: str, session: str | None = None) -> None:
        self.base = base
        self.session = session or uuid.uuid4().hex[:11]
        dependencies = httpx.get(f"{base}/config", timeout=TIMEOUT).json()["dependencies"]
        self.fn_index = {dep["api_name"]: dep["id"] for dep in dependencies}

    def submit(self, api_name: str, data: list[Any]) -> str:
        body = {"data": data, "fn_index": self.fn_index[api_name], "session_hash": self.session, "event_data": None, "trigger_id": None}
        reply = httpx.post(f"{self.base}/gradio_api/queue/join", json=body, timeout=TIMEOUT)
        assert reply.status_code == 200, reply.text
        return reply.json()["event_id"]

    def messages(self, event_id: str) -> Iterator[dict[str, Any]]:
        """The event's messages, up to and including ``process_completed``."""
        params = {"session_hash": self.session}
        with httpx.stream("GET", f"{self.base}/gradio_api/queue/data", params=params, timeout=TIMEOUT) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("event_id") in (None, event_id):
                        yield message
                        if message.get("msg") == "process_completed":
                            return
        raise AssertionError(f"the event stream of {event_id} ended before the event did")

    def call(self, api_name: str, data: list[Any]) -> dict[str, Any]:
        """The event's last message (``process_completed``: ``success``, and ``output``)."""
        *_, last = self.messages(self.submit(api_name, data))
        return last

    def output(self, api_name: str, data: list[Any]) -> list[Any]:
        reply = self.call(api_name, data)
        assert reply["success"], reply
        return reply["output"]["data"]

    def generate(self, text: str, voice: str = "lj_female_us", streaming: bool = False) -> list[Any]:
        return self.output("generate", generate_data(text, voice, streaming))

    @contextmanager
    def heartbeat(self, session: str | None = None) -> Iterator[None]:
        """Hold ``session``'s heartbeat stream open (the page's own by default) while the block runs."""
        url = f"{self.base}/gradio_api/heartbeat/{session or self.session}"
        with httpx.stream("GET", url, timeout=TIMEOUT) as stream:
            assert stream.status_code == 200
            beats = stream.iter_lines()  # kept: a dropped iterator closes the stream
            next(beats)  # the first beat: the stream is open on the server
            yield


def generate_data(text: str, voice: str = "lj_female_us", streaming: bool = False) -> list[Any]:
    """The Speak tab's inputs: text, mode, voice, clip, strength, speed, seed, stream, history, clip text, normalise, model, live."""
    return [text, BUILTIN, voice, None, 1.0, 1.0, 0, streaming, None, "", True, MODEL, False]


def full_file_url(outputs: list[Any]) -> str:
    return outputs[1]["url"]  # the joined take (outputs: stream, full, files, ...)


def folder_of(url: str) -> str:
    """What a visitor given ``url`` sees in place of its owner's session: the folder the file lies in."""
    return url.split(OUTPUTS, 1)[1].split("/", 1)[0]


def fetch(url: str) -> httpx.Response:
    return httpx.get(url, timeout=TIMEOUT)


def history_texts(page: Page) -> list[str]:
    """The texts of the takes the page's history event returns for ``page``'s session."""
    table = page.output("_history_outputs", [None])[0]
    return [row[3] for row in table["data"]]


def upload(base: str, path: Any) -> dict[str, Any]:
    reply = httpx.post(f"{base}/gradio_api/upload", files={"files": (path.name, path.read_bytes())}, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return {"path": reply.json()[0], "meta": {"_type": "gradio.FileData"}}


def api_speech(base: str, voice: str) -> httpx.Response:
    body = {"model": "tts-1", "input": "Hello, how are you?", "voice": voice, "response_format": "wav"}
    return httpx.post(f"{base}/v1/audio/speech", json=body, timeout=TIMEOUT)


def wait_until_gone(url: str) -> None:
    """Poll until ``url`` is no longer served (the cleanup ran: Gradio answers 403 for a missing file)."""
    done = threading.Event()
    for _ in range(240):
        if fetch(url).status_code != 200:
            return
        done.wait(0.5)
    raise AssertionError(f"{url} was never removed")


# --- item 4: a shared link hands over nothing ------------------------------------------------


def test_a_download_link_does_not_hand_over_its_owners_session(app_server: str) -> None:
    a = Page(app_server)
    with a.heartbeat():
        url = full_file_url(a.generate("Alice's secret take."))
        assert a.session not in url, "the download link carries the session hash"
        learnt = Page(app_server, folder_of(url))  # B, acting with what the link shows
        assert fetch(url).status_code == 200  # the link itself works for whoever has it
        assert history_texts(a) == ["Alice's secret take."]
        assert "Alice's secret take." not in history_texts(learnt)
        with learnt.heartbeat():  # B's page "closes" for the link's folder
            pass
        assert history_texts(a) == ["Alice's secret take."]
        assert fetch(url).status_code == 200


def test_a_strangers_heartbeat_ends_nothing_of_a_connected_page(app_server: str) -> None:
    a, gone, stranger = Page(app_server), Page(app_server), Page(app_server)
    with a.heartbeat():
        url = full_file_url(a.generate("Alice's take."))
        gone_url = full_file_url(gone.generate("A page that closes."))
        # The stranger opens and closes A's heartbeat (its hash leaked some other way), together
        # with that of a page nobody holds any more: that one is a page really gone.
        with stranger.heartbeat(a.session), stranger.heartbeat(gone.session):
            pass
        wait_until_gone(gone_url)  # a page that is gone still gets its files removed
        assert fetch(url).status_code == 200, "a stranger's heartbeat deleted the owner's files"
        assert history_texts(a) == ["Alice's take."]


def test_a_learnt_link_cannot_stop_its_owners_run(app_server: str) -> None:
    a = Page(app_server)
    with a.heartbeat():
        learnt = Page(app_server, folder_of(full_file_url(a.generate("A first take."))))
        lines = "\n".join(f"Line {n} of a long run that must not be stopped by a stranger." for n in range(12))
        event = a.submit("generate", generate_data(lines, streaming=True))
        messages = a.messages(event)
        while next(messages)["msg"] != "process_generating":  # A's run is in the engine
            pass
        stopped = learnt.output("stop", [])[0]
        assert stopped == "■ Nothing was running.", stopped
        *_, last = messages
        assert last["success"], last
        assert "Done" in last["output"]["data"][3]


# --- item 5: saved voices and pronunciations are their creator's -----------------------------


def test_saved_voices_belong_to_their_visitor(app_server: str) -> None:
    a, b = Page(app_server), Page(app_server)
    before = api_speech(app_server, "alloy")
    assert before.status_code == 200
    voices_before = httpx.get(f"{app_server}/v1/audio/voices", timeout=TIMEOUT).json()
    clip = upload(app_server, CLIP)

    for name in ("alloy", "Shimmer", "lj_female_us", "default"):
        status = b.output("save_voice", [name, clip, ""])[0]
        assert "Not saved" in status, (name, status)

    status = a.output("save_voice", ["mine_a", clip, ""])[0]
    assert "Saved" in status, status
    assert "mine_a" in [choice[0] for choice in a.output("refresh_choices", ["mine_a"])[0]["choices"]]
    assert "mine_a" not in [choice[0] for choice in b.output("refresh_choices", [None])[0]["choices"]]

    refused = b.call("generate", generate_data("Using A's voice.", voice="mine_a"))
    assert not refused["success"] and "mine_a" in refused["output"]["error"]  # not one of B's choices
    deleted = b.call("delete_voice", ["mine_a", ""])
    assert not deleted["success"] or "Not deleted" in deleted["output"]["data"][0], deleted
    assert "Done" in a.generate("Still my voice.", voice="mine_a")[3]

    assert api_speech(app_server, "mine_a").status_code == 400  # API callers never see visitors' voices
    after = api_speech(app_server, "alloy")
    assert hashlib.sha256(after.content).digest() == hashlib.sha256(before.content).digest()
    assert httpx.get(f"{app_server}/v1/audio/voices", timeout=TIMEOUT).json() == voices_before

    assert "Deleted" in a.output("delete_voice", ["mine_a", "mine_a"])[0]


def test_a_visitors_pronunciations_change_nobody_elses_speech(app_server: str) -> None:
    a, b = Page(app_server), Page(app_server)
    text = "Hello."

    def audio(page: Page) -> bytes:
        return fetch(full_file_url(page.generate(text))).content

    b_before = audio(b)
    table = {"headers": ["word", "pronunciation"], "data": [["hello", "goodbye"]], "metadata": None}
    assert "Saved 1 entry " in a.output("save_panel", [table, "", ""])[0]
    assert audio(a) != b_before  # A hears "goodbye"
    assert audio(b) == b_before  # B still hears "hello"
    assert b.output("lexicon_rows", [])[0]["data"] == [["", ""]]
    assert a.output("lexicon_rows", [])[0]["data"] == [["hello", "goodbye"]]
