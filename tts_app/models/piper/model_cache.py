"""Files kept between runs for one voice and runtime version: OpenVINO's compiled-model
cache and the input shapes the engine met (warmed at the next load).

Location: ``ov/<voice file hash>-<openvino version>`` under the app's cache folder
(tts_app.settings.cache_root). A cache that cannot be created is skipped
with a warning: it only saves time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Callable, Iterable

from tts_app import settings

_LOGGER = logging.getLogger(__name__)
# The shape log keeps this many entries, the most hit (hostile lengths grew an unbounded log to
# 177 entries, and replaying them all took idle memory after a restart from 711 to 1,610 MB).
MAX_ENTRIES_ENV = "TTS_APP_SHAPE_LOG_MAX"
MAX_READ_LINES = 10_000
_lock = threading.Lock()


def cache_root() -> Path:
    return settings.cache_root()


def file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def model_cache_dir(model_path: str) -> Path | None:
    """The cache folder of this voice file under this OpenVINO version (created), or None."""
    try:
        import openvino as ov  # heavy runtime: imported only on the path that uses it

        version = ov.get_version().split("-")[0]
    except ImportError:
        version = "no-openvino"
    try:
        path = cache_root() / "ov" / f"{file_digest(model_path)}-{version}"
        path.mkdir(parents=True, exist_ok=True)
        return path
    except OSError as error:
        _LOGGER.warning("no model cache (%s): kernels are compiled afresh each run", error)
        return None


class ShapeLog:
    """Input shapes the stages met, with how often, so the next load warms the most common few.

    Only shapes ``accept`` calls normal are counted (warm_up.normal_shape: the text stage's
    batch sizes and lengths an ordinary sentence gives), and only after their run succeeded:
    hostile lengths do not persist into start-up. The file keeps the ``max_entries`` most
    hit, one JSON line each: ``{"stage": "flow", "shapes": [[1, 192, 928], [1, 1, 928]], "hits": 7}``.
    """

    def __init__(self, path: Path | None, accept: Callable[[str, tuple], bool] | None = None, max_entries: int | None = None) -> None:
        self.path = path
        self.accept = accept
        self.max_entries = settings.value(MAX_ENTRIES_ENV) if max_entries is None else max_entries
        self._hits: dict[tuple[str, tuple], int] = {}
        self.counting = True  # off during warm-up: its stand-in runs are not traffic
        self._read()

    def _read(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return
        for line in lines[-MAX_READ_LINES:]:  # an older version's file grew without end
            try:
                entry = json.loads(line)
                stage, key = str(entry["stage"]), tuple(tuple(int(d) for d in s) for s in entry["shapes"])
                hits = max(1, int(entry.get("hits", 1)))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a torn or foreign line: skip it
            if self.accept is None or self.accept(stage, key):
                self._hits[(stage, key)] = self._hits.get((stage, key), 0) + hits

    def most_hit(self, min_hits: int = 1) -> list[tuple[str, list[list[int]]]]:
        """(stage, shapes) seen at least ``min_hits`` times, most hit first, at most ``max_entries``."""
        ranked = sorted(self._hits.items(), key=lambda item: -item[1])[: self.max_entries]
        return [(stage, [list(s) for s in key]) for (stage, key), hits in ranked if hits >= min_hits]

    def record(self, stage: str, shapes: Iterable[tuple[int, ...]]) -> None:
        """Count one successful run of ``stage`` on ``shapes``."""
        if not self.counting:
            return
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        if self.accept is not None and not self.accept(stage, key):
            return
        with _lock:
            hits = self._hits[(stage, key)] = self._hits.get((stage, key), 0) + 1
            if len(self._hits) > 4 * self.max_entries:  # no filter: forget the least hit
                self._hits = dict(sorted(self._hits.items(), key=lambda item: -item[1])[: self.max_entries])
            if hits & (hits - 1) == 0:  # at 1, 2, 4, 8... hits: a rising shape is written, a few times at most
                self._save()

    def _save(self) -> None:
        """Rewrite the file with the most hit entries (lock held); a read-only cache is skipped."""
        if self.path is None:
            return
        ranked = sorted(self._hits.items(), key=lambda item: -item[1])[: self.max_entries]
        text = "".join(json.dumps({"stage": st, "shapes": [list(s) for s in key], "hits": n}) + "\n" for (st, key), n in ranked)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.path)  # whole or not at all: a reader never sees a torn file
        except OSError:
            tmp.unlink(missing_ok=True)
