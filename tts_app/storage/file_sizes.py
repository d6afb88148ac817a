"""Files and bytes on disk under a folder, for the caps of the stores that write files."""

from __future__ import annotations

import os
from collections.abc import Collection
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


def dated_files(root: Path, skip_top: Collection[str] = ()) -> list[tuple[float, int, Path]]:
    """(mtime, size, path) of every regular file under ``root``; top-level folders in ``skip_top`` left out."""
    found = []
    for folder, dirs, names in os.walk(root):
        if skip_top and Path(folder) == root:
            dirs[:] = [d for d in dirs if d not in skip_top]
        for name in names:
            path = Path(folder) / name
            try:
                info = path.lstat()
            except OSError:
                continue  # removed meanwhile
            found.append((info.st_mtime, info.st_size, path))
    return found
