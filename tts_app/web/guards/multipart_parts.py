"""Counting the parts of a multipart body as it streams past, without parsing or keeping it."""

from __future__ import annotations


def multipart_boundary(content_type: bytes) -> bytes | None:
    """The ``boundary`` parameter of a ``multipart/*`` Content-Type, or None."""
    media_type, _, params = content_type.partition(b";")
    if not media_type.strip().lower().startswith(b"multipart/"):
        return None
    for param in params.split(b";"):
        name, _, value = param.strip().partition(b"=")
        if name.strip().lower() == b"boundary" and value.strip():
            return value.strip().strip(b'"')
    return None


class PartCounter:
    """How many parts have begun in a multipart body fed chunk by chunk.

    Every part starts with the delimiter ``--boundary`` (RFC 2046), and the boundary may not
    occur inside a part, so counting delimiters counts parts (the last one closes the body).
    The tail of each chunk is kept so a delimiter split across chunks is still seen once.
    """

    def __init__(self, boundary: bytes) -> None:
        self._delimiter = b"--" + boundary
        self._tail = b""
        self._delimiters = 0

    def feed(self, chunk: bytes) -> None:
        data = self._tail + chunk
        self._delimiters += data.count(self._delimiter)
        keep = len(self._delimiter) - 1
        # A delimiter wholly inside the kept tail was counted already: keep less than one.
        self._tail = data[-keep:] if keep else b""

    @property
    def parts(self) -> int:
        """Parts begun so far (a closing delimiter, ``--boundary--``, counts as one too: an upper bound)."""
        return self._delimiters
