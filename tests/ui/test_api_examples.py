"""Every example the API tab shows runs as written against the real server (the page's own address filled in).

A newcomer copies these blocks: the ``gradio_client`` one once unpacked 6 values from an
endpoint that returns 7. Each ``python`` block runs in a fresh interpreter and each ``bash``
block in bash; both must exit 0, and what they write must be audio.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
import soundfile as sf

from tts_app.web.ui.api_help.tab import DEFAULT_ORIGIN, api_help_markdown, page_origin

RUN_TIMEOUT_S = 180
_BLOCK = re.compile(r"```(python|bash)\n(.*?)```", re.S)


def example_blocks(origin: str) -> list[tuple[str, str]]:
    """(language, code) of each fenced example as a page loaded from ``origin`` shows it."""
    return _BLOCK.findall(api_help_markdown(origin))


def test_the_tab_shows_a_client_example_of_each_kind() -> None:
    blocks = example_blocks("http://h:1")
    kinds = [lang for lang, _code in blocks]
    assert kinds.count("python") >= 2 and kinds.count("bash") >= 1, kinds
    assert any("gradio_client" in code for _lang, code in blocks)
    assert all("http://h:1/" in code for _lang, code in blocks)  # every snippet names the page's server


def test_every_example_runs_against_the_server(app_server: str, tmp_path: Path) -> None:
    for index, (lang, code) in enumerate(example_blocks(app_server)):
        command = [sys.executable, "-c", code] if lang == "python" else ["bash", "-euo", "pipefail", "-c", code]
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert done.returncode == 0, f"example {index} ({lang}) failed:\n{code}\n{done.stderr[-2000:]}"
    written = sorted(tmp_path.glob("*.wav"))
    assert written, "the examples wrote no audio file"
    for path in written:
        assert sf.info(str(path)).duration > 0.3, path



_ENDPOINT = re.compile(r"`(/[a-z_]+)`")
PAGE_DOC = Path(__file__).resolve().parents[2] / "docs" / "page.md"


def test_named_endpoints_are_listed_where_users_read_them(app_server: str) -> None:
    """docs/page.md's API section and the API tab name exactly the endpoints the server offers to gradio_client."""
    served = set(httpx.get(f"{app_server}/gradio_api/info", timeout=30).json()["named_endpoints"])
    tab_list = api_help_markdown().split("### Gradio endpoints", 1)[1].rsplit("```", 1)[1]
    doc = PAGE_DOC.read_text(encoding="utf-8")
    api_section = doc[doc.index("\n## API\n") :].split("\n## ", 2)[1]
    assert set(_ENDPOINT.findall(tab_list)) == served
    assert set(_ENDPOINT.findall(api_section)) - {"/v1/audio/speech"} == served


@pytest.mark.parametrize("headers, origin", [
    ({"host": "127.0.0.1:7860"}, "http://127.0.0.1:7860"),
    ({"host": "name.hf.space", "x-forwarded-proto": "https"}, "https://name.hf.space"),
    ({"host": "[::1]:8080"}, "http://[::1]:8080"),
    ({"host": "evil.example/<script>"}, DEFAULT_ORIGIN),  # the Host header is the visitor's: only a host and port
    ({"host": "a" * 100_000}, DEFAULT_ORIGIN),
    ({"host": "x:1:2"}, DEFAULT_ORIGIN),
    ({}, DEFAULT_ORIGIN),
])
def test_the_snippets_name_the_address_the_page_came_from(headers: dict[str, str], origin: str) -> None:
    assert page_origin(SimpleNamespace(headers=headers)) == origin
