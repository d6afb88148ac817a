"""Hostile requests through the real HTTP routes: file paths, lying audio headers, oversized and deep bodies."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import struct
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import numpy as np
import pytest
import soundfile as sf

from tts_app.assets import BUILTIN_VOICES_DIR
from tests.support.paths import REPO
from tts_app.web.guards.file_guard import max_event_body_bytes

VOICES = BUILTIN_VOICES_DIR
GOOD_CLIP = VOICES / "f5_ref_en.wav"
UPLOAD = "Upload or record"
REFUSED = "only files uploaded to this server can be used"
TIMEOUT = httpx.Timeout(30.0)
READ_ALLOWANCE_BYTES = 16 * 2**20  # what a refused request may make the server read (the request, logs, /proc)


# --- helpers ---------------------------------------------------------------------------------


def _file_data(path: str) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}}


def _upload(base: str, name: str, data: bytes) -> str:
    """Upload ``data`` as Gradio's page does; returns the server-side path of the stored file."""
    reply = httpx.post(f"{base}/gradio_api/upload", files={"files": (name, data)}, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return reply.json()[0]


def _call(base: str, api_name: str, data: list) -> tuple[int, str]:
    """``/gradio_api/call/<api_name>``: the POST's status and, once accepted, the event stream's text."""
    posted = httpx.post(f"{base}/gradio_api/call/{api_name}", json={"data": data}, timeout=TIMEOUT)
    if posted.status_code != 200:
        return posted.status_code, posted.text
    event_id = posted.json()["event_id"]
    result = httpx.get(f"{base}/gradio_api/call/{api_name}/{event_id}", timeout=httpx.Timeout(120.0))
    return result.status_code, result.text


def _fn_index(base: str, api_name: str) -> int:
    config = httpx.get(f"{base}/config", timeout=TIMEOUT).json()
    return next(dep["id"] for dep in config["dependencies"] if dep.get("api_name") == api_name)


def _report_data(path: str) -> list:
    return [UPLOAD, None, _file_data(path), ""]  # the last: what the clip says (none typed)


def _generate_data(path: str) -> list:
    return ["Hello there.", UPLOAD, None, _file_data(path), 1.0, 1.0, 0, False, "", True, "piper-joe-medium"]


def _wait_ready(base: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while httpx.get(f"{base}/readyz", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, f"the model did not load within {timeout_s} s"
        time.sleep(0.5)


def _healthy(base: str) -> bool:
    return httpx.get(f"{base}/healthz", timeout=5).status_code == 200


def lying_wav(rate: int = 2_147_483_647, data_bytes: int = 128) -> bytes:
    """A 172-byte PCM WAV whose header claims ``rate`` Hz."""
    header = b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, (rate * 2) % 2**32, 2, 16)
    header += b"data" + struct.pack("<I", data_bytes)
    return header + bytes(data_bytes)


def huge_flac(seconds: int = 599, rate: int = 192_000, channels: int = 2) -> bytes:
    """A tiny FLAC whose STREAMINFO declares ``seconds`` of ``rate`` Hz ``channels``-channel audio."""
    buffer = io.BytesIO()
    sf.write(buffer, np.zeros((4096, channels), np.float32), rate, format="FLAC", subtype="PCM_16")
    data = bytearray(buffer.getvalue())
    assert data[:4] == b"fLaC"
    field = slice(8 + 10, 8 + 18)  # STREAMINFO bytes 10..17: rate(20) channels-1(3) bits-1(5) total samples(36)
    bits = int.from_bytes(data[field], "big")
    data[field] = ((bits >> 36 << 36) | seconds * rate).to_bytes(8, "big")
    return bytes(data)


# --- 1. file paths from requests --------------------------------------------------------------


@pytest.fixture(scope="module")
def uploaded_clip(app_server: str) -> str:
    return _upload(app_server, "voice.wav", GOOD_CLIP.read_bytes())


@pytest.fixture(scope="module")
def links_out(uploaded_clip: str) -> dict[str, str]:
    """Symlinks inside the server's upload folder (this test runs on the same machine) pointing out of it."""
    folder = Path(uploaded_clip).parent / f"links-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    links = {"audio": folder / "voice.wav", "passwd": folder / "passwd.wav", "dir": folder / "up.wav"}
    links["audio"].symlink_to(VOICES / "lj_female_us.wav")  # a real clip: refused only for where it lies
    links["passwd"].symlink_to("/etc/passwd")
    links["dir"].symlink_to(folder.parent)
    return {name: str(path) for name, path in links.items()}


OUTSIDE_PATHS = [
    "/etc/passwd",
    "/dev/zero",
    "/proc/self/environ",
    str(REPO / "app.py"),
    "app.py",
    str(VOICES / "lj_female_us.wav"),  # a valid clip on the server, not uploaded
    "/tmp/gradio/../../etc/passwd",
    "/etc/no-such-file-here.wav",
    "http://127.0.0.1:1/secret.wav",  # Gradio would fetch a URL itself
]


@pytest.mark.parametrize("path", OUTSIDE_PATHS)
@pytest.mark.parametrize(("api_name", "data"), [("reference_report", _report_data), ("generate", _generate_data)])
def test_paths_outside_the_upload_folder_are_refused(app_server: str, api_name: str, data, path: str) -> None:
    _wait_ready(app_server)  # the model, loaded in the background, is read before this is measured
    pid = _server_pid(app_server)
    read_before = _bytes_read(pid)
    status, text = _call(app_server, api_name, data(path))
    assert status == 400 and REFUSED in text, (status, text)
    assert path not in text and "No such file" not in text
    # Refused before it is opened: the server read no more than requests and logs take (not /dev/zero's
    # endless bytes, nor a clip). Bytes, not seconds: a loaded machine does not move this figure.
    assert _bytes_read(pid) - read_before < READ_ALLOWANCE_BYTES
    assert _healthy(app_server)


def test_the_queue_route_refuses_them_too(app_server: str) -> None:
    body = {"data": _generate_data("/etc/passwd"), "fn_index": _fn_index(app_server, "generate"),
            "session_hash": uuid.uuid4().hex[:11], "event_data": None, "trigger_id": None}
    reply = httpx.post(f"{app_server}/gradio_api/queue/join", json=body, timeout=TIMEOUT)
    assert reply.status_code == 400 and REFUSED in reply.text


def test_a_refusal_does_not_tell_whether_the_path_exists(app_server: str) -> None:
    replies = {_call(app_server, "reference_report", _report_data(path)) for path in
               ["/etc/passwd", "/etc/no-such-file", "/dev/zero", "/tmp/gradio/no-such-upload/x.wav"]}
    assert len(replies) == 1, replies


@pytest.mark.parametrize("link", ["audio", "passwd", "dir"])
def test_symlinks_in_the_upload_folder_pointing_out_are_refused(app_server: str, links_out: dict[str, str], link: str) -> None:
    status, text = _call(app_server, "reference_report", _report_data(links_out[link]))
    assert status == 400 and REFUSED in text, (status, text)


def test_dev_zero_does_not_stall_the_server(app_server: str) -> None:
    with ThreadPoolExecutor(4) as pool:  # four at once: none may hold a worker reading /dev/zero
        replies = list(pool.map(lambda _: _call(app_server, "generate", _generate_data("/dev/zero")), range(4)))
    for status, text in replies:
        assert status == 400 and REFUSED in text, (status, text)
    assert _healthy(app_server)
    models = httpx.get(f"{app_server}/v1/models", timeout=5)
    assert models.status_code == 200


def test_a_real_upload_is_accepted(app_server: str, uploaded_clip: str) -> None:
    status, text = _call(app_server, "reference_report", _report_data(uploaded_clip))
    assert status == 200 and "event: complete" in text and "cannot be used" not in text, text
    status, text = _call(app_server, "generate", _generate_data(uploaded_clip))
    assert status == 200 and "event: complete" in text and re.search(r"Done( with [\w.-]+)?: 1 line,", text), text[-500:]


def test_files_outside_the_app_are_not_served(app_server: str) -> None:
    for path in ["/etc/passwd", "app.py", str(REPO / "app.py"), "/proc/self/environ"]:
        reply = httpx.get(f"{app_server}/gradio_api/file={path}", timeout=TIMEOUT)
        assert reply.status_code in (403, 404), (path, reply.status_code)
        assert "root:" not in reply.text


# --- 2. audio headers checked before decoding ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("lie.wav", lying_wav(), "sample rate 2147483647 Hz is out of range"),
        ("huge.flac", huge_flac(), "M samples"),
        ("many.flac", huge_flac(seconds=1, rate=48_000, channels=8), None),  # 8 channels are fine (but silent)
    ],
    ids=["wav-2147483647-hz", "flac-599-s-192-khz-stereo", "flac-8-channels"],
)
def test_audio_headers_are_checked_before_decoding(app_server: str, name: str, data: bytes, message: str | None) -> None:
    path = _upload(app_server, name, data)
    status, text = _call(app_server, "reference_report", _report_data(path))
    assert status == 200 and "cannot be used" in text, text
    if message:
        assert message in text, text
    else:
        assert "out of range" not in text and "M samples" not in text, text
    assert "Traceback" not in text
    status, text = _call(app_server, "generate", _generate_data(path))
    assert "event: error" in text and "Traceback" not in text, text
    assert _healthy(app_server)


def test_lying_headers_do_not_balloon_memory(app_server: str) -> None:
    """Four concurrent lying clips: the server's peak RSS (VmHWM) stays within 200 MB of before."""
    pid = _server_pid(app_server)
    before = _vm_kb(pid, "VmHWM")
    paths = [_upload(app_server, f"lie{i}.wav", lying_wav()) for i in range(2)]
    paths += [_upload(app_server, f"big{i}.flac", huge_flac()) for i in range(2)]
    with httpx.Client(timeout=TIMEOUT) as client:
        ids = [client.post(f"{app_server}/gradio_api/call/reference_report", json={"data": _report_data(p)}).json()["event_id"]
               for p in paths]
        for event_id in ids:
            assert "cannot be used" in client.get(f"{app_server}/gradio_api/call/reference_report/{event_id}").text
    assert _vm_kb(pid, "VmHWM") - before < 200 * 1024


def _server_pid(base: str) -> int:
    """The pid listening on the fixture server's port (same machine)."""
    port = urlsplit(base).port
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # LISTEN
                inode = fields[9]
    assert inode, "no listening socket for the app server"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]" for fd in os.listdir(f"/proc/{pid}/fd")):
                return int(pid)
        except OSError:
            continue
    pytest.skip("the server's process is not visible from here")


def _bytes_read(pid: int) -> int:
    """Bytes the process has read so far, files and sockets together (/proc/PID/io's rchar)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("rchar missing")


def _vm_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{key} missing")


# --- 3. API body cap and JSON depth ----------------------------------------------------------


def _raw_request(base: str, head: bytes, body_part: bytes) -> bytes:
    """Send the head and only ``body_part`` of a body, then read the reply the server sends without the rest."""
    parts = urlsplit(base)
    with socket.create_connection((parts.hostname, parts.port), timeout=15) as sock:
        sock.sendall(head + body_part)
        reply = b""
        while b"\r\n\r\n" not in reply:
            data = sock.recv(65536)
            if not data:
                break
            reply += data
        return reply


def test_a_huge_declared_body_is_refused_before_it_is_read(app_server: str) -> None:
    head = (b"POST /v1/audio/speech HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            b"Content-Length: 400000000\r\n\r\n")
    reply = _raw_request(app_server, head, b'{"input": "' + b"a" * 4096)  # 4 KB of 400 MB sent
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]


def test_a_huge_chunked_body_is_refused_once_over_the_cap(app_server: str) -> None:
    head = b"POST /v1/audio/speech HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"4000\r\n" + b"a" * 0x4000 + b"\r\n"
    reply = _raw_request(app_server, head, chunk * 5)  # 80 KB sent, never the terminating chunk
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]


@pytest.mark.parametrize("path", [b"/gradio_api/queue/join", b"/gradio_api/run/predict"])
def test_an_event_body_over_its_cap_is_refused_midway_with_one_line(app_server: str, path: bytes) -> None:
    """The page guards read a Gradio event's body ahead of Gradio (session check, file paths): past
    the event cap they answer 413 without reading the rest (never the terminating chunk here)."""
    head = (b"POST " + path + b" HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")  # fmt: skip
    chunk = b"4000\r\n" + b"a" * 0x4000 + b"\r\n"
    reply = _raw_request(app_server, head, chunk * (max_event_body_bytes() // 0x4000 + 2))
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]


def test_a_few_megabytes_get_413_json(app_server: str) -> None:
    body = json.dumps({"input": "a" * (4 * 2**20)}).encode()
    reply = httpx.post(f"{app_server}/v1/audio/speech", content=body, headers={"content-type": "application/json"}, timeout=TIMEOUT)
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == "body_too_large"


def test_a_normal_body_still_works(app_server: str) -> None:
    reply = httpx.post(f"{app_server}/v1/audio/speech", json={"model": "tts-1", "input": "Fine.", "stream": False, "response_format": "wav"}, timeout=httpx.Timeout(120.0))
    assert reply.status_code == 200 and reply.content[:4] == b"RIFF"


@pytest.mark.parametrize("depth", [5_000, 30_000])
def test_deep_json_is_a_400(app_server: str, depth: int) -> None:
    body = b"[" * depth + b"]" * depth  # at most 60 KB: under the size cap, over any recursion limit
    reply = httpx.post(f"{app_server}/v1/audio/speech", content=body, headers={"content-type": "application/json"}, timeout=TIMEOUT)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "invalid_json"
    deep_data = b'{"data": ' + b"[" * depth + b"]" * depth + b"}"
    reply = httpx.post(f"{app_server}/gradio_api/call/generate", content=deep_data,
                       headers={"content-type": "application/json"}, timeout=TIMEOUT)
    assert reply.status_code == 400, reply.text
    assert _healthy(app_server)


def test_gradio_own_upload_folder_check_runs_for_the_mounted_app() -> None:
    """The second layer alone: the app without FileDataGuard still refuses (Gradio's check, switched on)."""
    from fastapi.testclient import TestClient

    from tts_app.web.guards.file_guard import FileDataGuard
    from tts_app.web.server import create_app
    from tts_app.web.ui.layout import build_demo

    app = create_app(build_demo())
    app.user_middleware = [m for m in app.user_middleware if m.cls is not FileDataGuard]
    with TestClient(app) as client:
        posted = client.post("/gradio_api/call/reference_report", json={"data": _report_data("/etc/passwd")})
        assert posted.status_code == 200  # no guard: Gradio accepts the event...
        text = client.get(f"/gradio_api/call/reference_report/{posted.json()['event_id']}").text
    assert "event: error" in text and "not uploaded by a user" in text, text  # ...and its own check refuses the file


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (["Hello there.", "Model's own voice", None, None, 1.0, 99.0, 0, False, "", True, "piper-joe-medium"], "99"),  # speed off the slider
        (["Hello there.", "Not a mode", None, None, 1.0, 1.0, 0, False, "", True, "piper-joe-medium"], "Not a mode"),
        (["Hello there.", "Model's own voice", None, None, 1.0, 1.0, 0, False, "", True, "../../etc/passwd"], "Unknown model"),  # a model not offered  # a choice not offered
    ],
    ids=["slider-out-of-range", "radio-choice-not-offered", "model-not-offered"],
)
def test_gradio_input_checks_are_one_log_line(app_server: str, artifacts_dir: Path, data: list, message: str) -> None:
    log = artifacts_dir / "app_server.log"
    before = log.stat().st_size
    status, text = _call(app_server, "generate", data)
    assert status == 200 and "event: error" in text and message in text, text
    time.sleep(0.5)  # the server's log line lands after the event's reply
    with log.open("rb") as handle:
        handle.seek(before)
        new = handle.read().decode(errors="replace")
    assert "user error: " in new and message in new, new
    assert "Traceback" not in new, new
    assert _healthy(app_server)
