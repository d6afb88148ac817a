"""A document's files are named by the visitor's typed title, else its first heading (issue 48, item 4): through
gradio_client's /read_document and the files the API serves. (The uploaded file's name, the next fallback, is the
page's: tests/ui/test_browser.py::test_an_upload_never_keeps_the_last_documents_title.)"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gradio_client import Client

from tests.support.app_server import serve_app

pytestmark = pytest.mark.slow

OWN = "Model's own voice"


@pytest.fixture(scope="module")
def server(artifacts_dir: Path) -> Iterator[str]:
    """A server of its own: its jobs count against this test's visitor only (the shared one's cap is 10 jobs an hour)."""
    with serve_app(artifacts_dir / "document_names_server.log") as (base, _process):
        yield base


def _finished_file_name(base: str, outputs: object) -> str:
    box = next(v for v in (outputs if isinstance(outputs, tuple) else (outputs,)) if isinstance(v, str) and "doc-progress" in v)
    job = re.search(r'data-job="([0-9a-f]+)"', box).group(1)
    deadline = time.monotonic() + 120
    while httpx.get(f"{base}/v1/documents/{job}", timeout=10).json()["status"] != "finished":
        assert time.monotonic() < deadline, "the document did not finish"
        time.sleep(0.3)
    disposition = httpx.get(f"{base}/v1/documents/{job}/captions.srt", timeout=30).headers["content-disposition"]
    return re.search(r'filename="([^"]+)"', disposition).group(1)


def test_a_document_is_named_by_its_title_then_its_first_heading(server: str) -> None:
    client = Client(server + "/", verbose=False)
    cases = [
        ("Lighthouse", "# Harbour\n\nA short text.", "Lighthouse.srt"),  # typed: it wins
        ("", "# Harbour\n\nA short text.", "Harbour.srt"),  # the first heading
        ("", "Text first.\n\n# Harbour\n\nA short text.", "Harbour.srt"),  # not "Start"
        ("  ", "No heading here.", "Document.srt"),
    ]
    for title, text, expected in cases:
        box = client.predict(text, True, title, OWN, None, None, "", 1.0, 1.0, 0, api_name="/read_document")
        assert _finished_file_name(server, box) == expected, (title, text)
