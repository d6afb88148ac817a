"""A document's files are named by the visitor's typed title, else its first heading, else its file's name (issue 48,
item 4): through gradio_client's /read_document and the files the API serves."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gradio_client import Client, handle_file

from tests.support.app_server import serve_app

pytestmark = pytest.mark.slow

OWN = "Model's own voice"


@pytest.fixture(scope="module")
def server(artifacts_dir: Path) -> Iterator[str]:
    """A server of its own: its jobs count against this test's visitor only (the shared one's cap is 10 jobs an hour)."""
    with serve_app(artifacts_dir / "document_names_server.log") as (base, _process):
        yield base


def _finished_file_name(base: str, box: str) -> str:
    job = re.search(r'data-job="([0-9a-f]+)"', box).group(1)
    deadline = time.monotonic() + 120
    while httpx.get(f"{base}/v1/documents/{job}", timeout=10).json()["status"] != "finished":
        assert time.monotonic() < deadline, "the document did not finish"
        time.sleep(0.3)
    disposition = httpx.get(f"{base}/v1/documents/{job}/captions.srt", timeout=30).headers["content-disposition"]
    return re.search(r'filename="([^"]+)"', disposition).group(1)


def test_a_document_is_named_by_its_title_then_its_heading_then_its_file(server: str, tmp_path: Path) -> None:
    client = Client(server + "/", verbose=False)
    notes = tmp_path / "notes.md"
    notes.write_text("Just a line of notes, with no heading.\n", encoding="utf-8")
    cases = [
        ("Lighthouse", "# Harbour\n\nA short text.", None, "Lighthouse.srt"),  # typed: it wins
        ("", "# Harbour\n\nA short text.", None, "Harbour.srt"),  # the first heading
        ("", "Text first.\n\n# Harbour\n\nA short text.", None, "Harbour.srt"),  # not "Start"
        ("", notes.read_text(encoding="utf-8"), handle_file(str(notes)), "notes.srt"),  # was Document.srt
        ("  ", "No heading here.", None, "Document.srt"),
    ]
    for title, text, file, expected in cases:
        box = client.predict(text, True, title, OWN, None, None, "", 1.0, 1.0, 0, file, api_name="/read_document")
        assert _finished_file_name(server, box) == expected, (title, text)
