"""Bytes on disk under a folder, for the caps of the stores that write files."""

from __future__ import annotations

import os
from pathlib import Path


def folder_bytes(root: str | Path) -> int:
    """Total size of the files under ``root``; a file removed while this walks counts as gone."""
    total = 0
    for folder, _dirs, names in os.walk(root):
        for name in names:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total
