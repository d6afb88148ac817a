"""A real reverse proxy (nginx) on loopback in front of a test server, as a deployment puts one.

It appends the address each client connected from to ``X-Forwarded-For`` and connects to the server
from ``bind`` (a loopback address of its own, so that the server can trust it and nothing else).
Clients that bind their own loopback source addresses (127.0.0.2, 127.0.0.3, ...) are distinct visitors.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.app_server import free_port
from tests.support.system_tools import system_tool

START_TIMEOUT_S = 30

CONFIG = """
daemon off;
master_process off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    client_max_body_size 64m;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_bind {bind};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
            proxy_read_timeout 300s;
        }}
    }}
}}
"""


@contextmanager
def nginx_proxy(upstream: str, root: Path, bind: str) -> Iterator[str]:
    """nginx on 127.0.0.1 and a free port forwarding to ``upstream`` (a base URL) from ``bind``; yields its base URL."""
    nginx = system_tool("nginx")  # a skip naming the package where it is not installed
    port = free_port()
    upstream_port = int(upstream.rsplit(":", 1)[1])
    root.mkdir(parents=True, exist_ok=True)
    conf = root / "nginx.conf"
    conf.write_text(CONFIG.format(root=root, port=port, upstream=upstream_port, bind=bind))
    with open(root / "nginx.out", "wb") as out:
        process = subprocess.Popen([nginx, "-p", str(root), "-e", str(root / "error.log"), "-c", str(conf)],
                                   stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert process.poll() is None, (root / "nginx.out").read_text() + (root / "error.log").read_text()
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "nginx did not answer"
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
