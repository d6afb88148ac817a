"""A document's files are named by the visitor's typed title, else its first heading, else its file's name (issue 48,
item 4): through gradio_client's /read_document and the files the API serves."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
from gradio_client import Client, handle_file

pytestmark = pytest.mark.slow

OWN = "Model's own voice"


def _finished_file_name(base: str, box: str) -> str:
    job = re.search(r'data-job="([0-9a-f]+)"', box).group(1)
    deadline = time.monotonic() + 120
    while httpx.get(f"{base}/v1/documents/{job}", timeout=10).json()["status"] != "finished":
        assert time.monotonic() < deadline, "the document did not finish"
        time.sleep(0.3)
    disposition = httpx.get(f"{base}/v1/documents/{job}/captions.srt", timeout=30).headers["content-disposition"]
    return re.search(r'filename="([^"]+)"', disposition).group(1)


def test_a_document_is_named_by_its_title_then_its_heading_then_its_file(app_server: str, tmp_path: Path) -> None:
    client = Client(app_server + "/", verbose=False)
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
        assert _finished_file_name(app_server, box) == expected, (title, text)
