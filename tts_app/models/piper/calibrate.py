"""Which runtime runs each float32 decoder stage on this CPU: measured once, then cached.

OpenVINO was 1.46x faster than onnxruntime on the decoder on an AVX-512 EPYC (runtime.py), but
kernels differ by ISA: on an AVX2-only EPYC the two came out close and stage-dependent in
single measurements. So at the first load on a CPU, each stage runs its steady-state window
on both, interleaved, and keeps the faster (onnxruntime must win by ``MARGIN``: a tie keeps
OpenVINO). The choice is cached in the model cache, keyed by CPU model, ISA flags, thread count
and runtime versions. ``$TTS_APP_DECODER_RUNTIME`` = openvino | onnxruntime forces one.
Either way a row runs alone through the decoder on CPU, so batch invariance is unaffected.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Callable

import numpy as np

from tts_app import settings

from tts_app.models.piper.cpu import cpu_model, usable_flags
from tts_app.models.piper.runtime import StageSession

_LOGGER = logging.getLogger(__name__)
CANDIDATES = ("openvino", "onnxruntime")
MARGIN = 0.9  # onnxruntime's median must be under 0.9x OpenVINO's to be chosen
REPEATS = 5
RUNTIME_ENV = "TTS_APP_DECODER_RUNTIME"
CHOICE_FILE = "decoder_runtimes.json"
# Bumped when the measurement changes, so older cached picks are measured again
# (2: onnxruntime no longer busy-waits, which had slowed the OpenVINO call timed after it).
MEASURE_VERSION = 2


def choice_key(threads: int) -> str:
    import onnxruntime  # heavy runtime: imported only on the path that uses it
    import openvino  # heavy runtime: imported only on the path that uses it

    return json.dumps([MEASURE_VERSION, cpu_model(), sorted(usable_flags()), threads, openvino.get_version(), onnxruntime.__version__])


def cached_choice(cache_dir: Path | None, key: str, n_stages: int) -> list[str] | None:
    forced = settings.value(RUNTIME_ENV)
    if forced is not None:
        return [forced] * n_stages
    if cache_dir is None or not (cache_dir / CHOICE_FILE).exists():
        return None
    try:
        saved = json.loads((cache_dir / CHOICE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    choice = saved.get("choice") if saved.get("key") == key else None
    return choice if isinstance(choice, list) and len(choice) == n_stages and set(choice) <= set(CANDIDATES) else None


def measure_choice(openers: list[dict[str, Callable[[], StageSession]]], feeds: list[dict[str, np.ndarray]]) -> tuple[list[str], list[dict[str, float]], list[StageSession]]:
    """Per stage: open every candidate, time ``feeds[k]`` interleaved; the pick, the medians (s), the picked sessions."""
    picks, medians, sessions = [], [], []
    for open_by_name, feed in zip(openers, feeds):
        opened = {name: fn() for name, fn in open_by_name.items()}
        for s in opened.values():
            s.run(feed)  # first call: kernels for this shape
        times: dict[str, list[float]] = {name: [] for name in opened}
        for _ in range(REPEATS):
            for name, s in opened.items():
                t0 = time.perf_counter()
                s.run(feed)
                times[name].append(time.perf_counter() - t0)
        med = {name: float(np.median(t)) for name, t in times.items()}
        pick = "onnxruntime" if med["onnxruntime"] < MARGIN * med["openvino"] else "openvino"
        picks.append(pick)
        medians.append(med)
        sessions.append(opened[pick])
    return picks, medians, sessions


def save_choice(cache_dir: Path | None, key: str, picks: list[str], medians: list[dict[str, float]]) -> None:
    _LOGGER.info("decoder runtimes measured on this CPU: %s (median s per window: %s)", picks, medians)
    if cache_dir is None:
        return
    try:
        (cache_dir / CHOICE_FILE).write_text(json.dumps({"key": key, "choice": picks, "median_s": medians}) + "\n", encoding="utf-8")
    except OSError:
        pass
