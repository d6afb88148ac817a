"""SSML size limits, checked while expat reads the document, so a deep or huge tree is never built.

``TTS_APP_SSML_MAX_DEPTH`` (default 32) caps how deep elements nest; ``TTS_APP_SSML_MAX_ELEMENTS``
(default 2,000) how many there are. Counting happens in the parser's start/end callbacks: no
recursion on the document's nesting, and the parse stops at the first element past a limit.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, TreeBuilder

from tts_app import settings

from tts_app.text.errors import TextError

MAX_DEPTH_ENV = "TTS_APP_SSML_MAX_DEPTH"
MAX_ELEMENTS_ENV = "TTS_APP_SSML_MAX_ELEMENTS"


def ssml_max_depth() -> int:
    """Deepest element nesting a request's SSML may have ($TTS_APP_SSML_MAX_DEPTH, read per parse)."""
    return settings.value(MAX_DEPTH_ENV)


def ssml_max_elements() -> int:
    """Most elements a request's SSML may have ($TTS_APP_SSML_MAX_ELEMENTS, read per parse)."""
    return settings.value(MAX_ELEMENTS_ENV)


class LimitedTreeBuilder:
    """An XMLParser target: a TreeBuilder that raises TextError at the first element past a limit.

    Comments and processing instructions are dropped, as the plain TreeBuilder drops them.
    """

    def __init__(self, max_depth: int, max_elements: int) -> None:
        self._builder = TreeBuilder()
        self._max_depth, self._max_elements = max_depth, max_elements
        self._depth = self._elements = 0

    def start(self, tag: str, attrs: dict[str, str]) -> Element:
        self._depth += 1
        self._elements += 1
        if self._depth > self._max_depth:
            raise TextError(f"SSML is nested too deeply: the limit is {self._max_depth} levels of elements")
        if self._elements > self._max_elements:
            raise TextError(f"SSML has too many elements: the limit is {self._max_elements:,}")
        return self._builder.start(tag, attrs)

    def end(self, tag: str) -> Element:
        self._depth -= 1
        return self._builder.end(tag)

    def data(self, data: str) -> None:
        self._builder.data(data)

    def close(self) -> Element:
        return self._builder.close()
