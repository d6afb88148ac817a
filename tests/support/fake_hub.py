"""A local stand-in for the Hugging Face hub: serves folders as model repositories in the hub's URL and header
layout, so huggingface_hub's real download code runs against it (``HF_ENDPOINT=hub.url``) with no internet.

Routes (what huggingface_hub 2.x calls): ``GET /api/models/{repo}[/revision/{rev}]`` (the commit), ``GET
/api/models/{repo}/tree/{rev}?recursive=true`` (files, sizes, git blob ids, LFS sha256), ``HEAD|GET
/{repo}/resolve/{rev}/{path}`` (X-Repo-Commit, ETag / X-Linked-Etag, Content-Length / X-Linked-Size, Range).
An unknown repository is the hub's 404 with ``X-Error-Code: RepoNotFound``. ``cut_once`` names files whose first
GET sends half the body, then drops the connection; ``corrupt`` names files served with their bytes changed;
``stall`` holds a file's second half until its event is set (a download caught in the middle). ``refuse`` answers a
repository's file downloads as a gated or private one does (status and ``X-Error-Code``: 401 GatedRepo for no token,
403 GatedRepo for a token whose account has not accepted the terms, a bare 403, 404 RepoNotFound), except to a
request whose bearer token is in ``tokens`` (an account with access); its listing and info stay public, as the hub's do.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_SUFFIXES = (".safetensors", ".pt", ".bin")  # stored in LFS on the hub: their ETag is the sha256
_API = re.compile(r"^/api/models/([^/]+/[^/]+)(?:/(revision|tree)/([^/]+)(/.*)?)?$")
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")


@dataclass(frozen=True)
class HubFile:
    path: str
    data: bytes

    @property
    def lfs(self) -> bool:
        return self.path.endswith(LFS_SUFFIXES)

    @property
    def blob_id(self) -> str:
        return hashlib.sha1(b"blob %d\0" % len(self.data) + self.data).hexdigest()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def tree_entry(self) -> dict:
        entry = {"type": "file", "oid": self.blob_id, "size": len(self.data), "path": self.path}
        if self.lfs:
            entry["lfs"] = {"oid": self.sha256, "size": len(self.data), "pointerSize": 134}
        return entry


def repo_files(folder: Path) -> dict[str, HubFile]:
    """Every file under ``folder`` as the hub would hold it (paths with '/')."""
    return {p.relative_to(folder).as_posix(): HubFile(p.relative_to(folder).as_posix(), p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


@dataclass
class FakeHub:
    """Start with ``with FakeHub({"Qwen/Qwen3-TTS-12Hz-0.6B-Base": folder}) as hub:``; ``hub.url`` is HF_ENDPOINT."""

    repos: dict[str, Path]
    cut_once: set[str] = field(default_factory=set)
    corrupt: set[str] = field(default_factory=set)
    stall: dict[str, threading.Event] = field(default_factory=dict)  # file -> sent half, then the rest once set
    refuse: dict[str, tuple[int, str]] = field(default_factory=dict)  # repo -> (status, X-Error-Code or "")
    tokens: set[str] = field(default_factory=set)  # bearer tokens with access to the refused repositories
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, Range header)
    files: dict[str, dict[str, HubFile]] = field(default_factory=dict)

    def __enter__(self) -> "FakeHub":
        self.files = {repo: repo_files(folder) for repo, folder in self.repos.items()}
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet: the test reads hub.requests
                pass

            def do_HEAD(self) -> None:
                hub._serve(self, body=False)

            def do_GET(self) -> None:
                hub._serve(self, body=True)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def ranges_asked(self, path: str) -> list[str]:
        """The Range headers of the GETs of ``path`` (a file of any repo), in order ('' for a whole-file GET)."""
        return [r for method, p, r in self.requests if method == "GET" and self.file_of(p) == path]

    def files_got(self) -> set[str]:
        """The files (paths in their repo) GET has been asked for."""
        return {self.file_of(p) for method, p, _ in self.requests if method == "GET" and self.file_of(p)}

    @staticmethod
    def file_of(url_path: str) -> str:
        found = _RESOLVE.match(url_path)
        return found.group(3) if found else ""

    def _send(self, h: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes = b"") -> None:
        h.send_response(status)
        for key, value in headers.items():
            h.send_header(key, value)
        h.end_headers()
        if body:
            h.wfile.write(body)

    def _json(self, h: BaseHTTPRequestHandler, payload: object, send_body: bool) -> None:
        data = json.dumps(payload).encode()
        self._send(h, 200, {"Content-Type": "application/json", "Content-Length": str(len(data))}, data if send_body else b"")

    def _not_found(self, h: BaseHTTPRequestHandler, code: str) -> None:
        data = b'{"error": "not found"}'
        self._send(h, 404, {"X-Error-Code": code, "X-Error-Message": "not found", "Content-Type": "application/json",
                            "Content-Length": str(len(data))}, data)

    def _refused(self, h: BaseHTTPRequestHandler, status: int, code: str) -> None:
        data = b'{"error": "Access to this model is restricted."}'
        headers = {"X-Error-Message": "Access to this model is restricted.", "Content-Type": "application/json",
                   "Content-Length": str(len(data))}
        self._send(h, status, headers | ({"X-Error-Code": code} if code else {}), data)

    def _serve(self, h: BaseHTTPRequestHandler, body: bool) -> None:
        path = unquote(urlsplit(h.path).path)
        self.requests.append((h.command, path, h.headers.get("Range", "")))
        api, resolve = _API.match(path), _RESOLVE.match(path)
        repo = (api or resolve).group(1) if (api or resolve) else None
        if repo not in self.files:
            return self._not_found(h, "RepoNotFound")
        files = self.files[repo]
        if api and api.group(2) in (None, "revision"):
            siblings = [{"rfilename": name} for name in files]
            return self._json(h, {"id": repo, "modelId": repo, "sha": COMMIT, "private": False, "siblings": siblings}, body)
        if api:
            return self._json(h, [f.tree_entry() for f in files.values()], body)
        token = h.headers.get("Authorization", "").removeprefix("Bearer ")
        if repo in self.refuse and token not in self.tokens:
            status, code = self.refuse[repo]
            return self._refused(h, status, code)
        name = resolve.group(3)
        if name not in files:
            return self._not_found(h, "EntryNotFound")
        self._file(h, files[name], body)

    def _file(self, h: BaseHTTPRequestHandler, f: HubFile, body: bool) -> None:
        data = bytes(b ^ 0xFF for b in f.data) if f.path in self.corrupt else f.data
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{f.blob_id}"', "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream"}
        if f.lfs:
            headers |= {"X-Linked-Etag": f'"{f.sha256}"', "X-Linked-Size": str(len(data))}
        start = 0
        asked = re.fullmatch(r"bytes=(\d+)-", h.headers.get("Range", ""))
        if asked and body:
            start = int(asked.group(1))
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        headers["Content-Length"] = str(len(data) - start)
        if not body:
            return self._send(h, 200, headers)
        if f.path in self.cut_once:
            self.cut_once.discard(f.path)
            self._send(h, 206 if asked else 200, headers, data[start:start + (len(data) - start) // 2])
            h.wfile.flush()
            h.close_connection = True  # the rest never comes: the client sees a short body
            return
        if f.path in self.stall:
            half = start + (len(data) - start) // 2
            self._send(h, 206 if asked else 200, headers, data[start:half])
            h.wfile.flush()
            self.stall[f.path].wait(timeout=120)
            h.wfile.write(data[half:])
            return
        self._send(h, 206 if asked else 200, headers, data[start:])
