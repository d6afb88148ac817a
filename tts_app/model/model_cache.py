"""Files kept between runs for one voice and runtime version: OpenVINO's compiled-model
cache, the input shapes the engine met (warmed at the next load), the int8 decoder.

Location: ``$TTS_APP_CACHE_DIR`` or ``$XDG_CACHE_HOME/tts_app`` (default ``~/.cache/tts_app``),
then ``ov/<voice file hash>-<openvino version>``. A cache that cannot be created is skipped
with a warning: it only saves time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Iterable

_LOGGER = logging.getLogger(__name__)
MAX_SHAPES_PER_STAGE = 96  # warm-up cost is about 20 to 150 ms a shape; the log keeps the most recent
_lock = threading.Lock()


def cache_root() -> Path:
    env = os.environ.get("TTS_APP_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tts_app"


def file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def model_cache_dir(model_path: str) -> Path | None:
    """The cache folder of this voice file under this OpenVINO version (created), or None."""
    try:
        import openvino as ov

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
    """Input shapes each stage met, appended as they appear, so the next load warms them.

    One JSON line per new (stage, shapes): ``{"stage": "dec1", "shapes": [[1, 128, 1408]]}``.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._seen: set[tuple] = set()

    def load(self) -> dict[str, list[list[list[int]]]]:
        """Stage -> the distinct shape lists logged, most recent last, at most MAX_SHAPES_PER_STAGE each."""
        by_stage: dict[str, dict[tuple, list[list[int]]]] = {}
        if self.path is None or not self.path.exists():
            return {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return {}
        for line in lines:
            try:
                entry = json.loads(line)
                stage, shapes = str(entry["stage"]), [[int(d) for d in s] for s in entry["shapes"]]
            except (ValueError, KeyError, TypeError):
                continue  # a torn or foreign line: skip it
            key = tuple(tuple(s) for s in shapes)
            stage_shapes = by_stage.setdefault(stage, {})
            stage_shapes.pop(key, None)
            stage_shapes[key] = shapes
            self._seen.add((stage, key))
        return {stage: list(d.values())[-MAX_SHAPES_PER_STAGE:] for stage, d in by_stage.items()}

    def record(self, stage: str, shapes: Iterable[tuple[int, ...]]) -> None:
        key = tuple(tuple(int(d) for d in s) for s in shapes)
        if (stage, key) in self._seen:
            return
        with _lock:
            if (stage, key) in self._seen:
                return
            self._seen.add((stage, key))
            if self.path is None:
                return
            try:
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"stage": stage, "shapes": [list(s) for s in key]}) + "\n")
            except OSError:
                pass  # read-only cache: the next load just warms fewer shapes
