"""The docs hold together: every relative link in README.md, SECURITY.md and docs/ reaches a file that exists (and a
heading there, when it names one), and docs/architecture.md's scheduler paragraph is the engine's own docstring."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

PAGES = [REPO / "README.md", REPO / "SECURITY.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", flags=re.M)
SCHEDULER_BEGIN, SCHEDULER_END = "<!-- scheduler paragraph:", "<!-- end of scheduler paragraph -->"


def _without_code(text: str) -> str:
    """``text`` with fenced blocks and inline code removed: a link shown as code is no link."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (``_`` and ``-`` kept), spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor GitHub makes for ``path``'s headings (a repeated one gets ``-1``, ``-2``, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)):
        base = anchor(heading)
        found.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return found


def relative_links(path: Path) -> list[str]:
    """The links in ``path`` that point into the repository (not web addresses or mail)."""
    links = LINK.findall(_without_code(path.read_text(encoding="utf-8")))
    return [link for link in links if not re.match(r"[a-z][a-z0-9+.-]*:", link)]


def broken(path: Path, root: Path = REPO) -> list[str]:
    """``path``'s relative links whose file (inside ``root``), or whose heading in that file, does not exist."""
    bad = []
    for link in relative_links(path):
        target, _, fragment = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists() or (root not in file.parents and file != root):
            bad.append(link)
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            bad.append(link)
    return bad


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_reaches_a_file_and_heading(path: Path) -> None:
    assert broken(path) == []


def test_the_readme_links_into_docs() -> None:
    assert len([link for link in relative_links(REPO / "README.md") if link.startswith("docs/")]) >= 10


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    """The check above fails a missing file and a missing heading, and passes what exists."""
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text(
        "# Other\n\n## A heading: `with code`\n\n## A heading: `with code`\n", encoding="utf-8"
    )
    page.write_text(
        "[ok](other.md) [ok](other.md#a-heading-with-code) [ok](other.md#a-heading-with-code-1) [ok](#top)\n"
        "[gone](missing.md) [gone](other.md#nowhere) [web](https://example.com/x.md) `[code](missing.md)`\n\n# Top\n",
        encoding="utf-8",
    )
    assert broken(page, tmp_path) == ["missing.md", "other.md#nowhere"]


def _words(text: str) -> list[str]:
    """``text``'s words, reStructuredText's double backticks read as Markdown's single ones."""
    return text.replace("``", "`").split()


def test_the_architecture_page_holds_the_engine_s_scheduler_paragraph() -> None:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    copied = page[page.index(SCHEDULER_BEGIN) : page.index(SCHEDULER_END)].split("-->", 1)[1]
    docstring = ast.get_docstring(ast.parse((REPO / "tts_app" / "engine" / "__init__.py").read_text(encoding="utf-8")))
    paragraph = docstring.split("\n\n", 1)[1]  # after the package's one-line summary
    assert paragraph.startswith("How it schedules")
    assert _words(copied) == _words(paragraph), "copy tts_app/engine/__init__.py's docstring into docs/architecture.md"
