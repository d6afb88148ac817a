"""Start-up preparation of the GPU models: each Qwen3-TTS checkpoint the operator loads is loaded and its decode-call
CUDA graphs captured (every batch and attention-length bucket) before the server says ready, so no
visitor waits on a capture. /readyz answers 503 and the page says "preparing the GPU" meanwhile.
Without CUDA nothing is prepared (the models load on catalog/model_fetch.py's start-up thread)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Sequence

from tts_app.catalog.engines import load_model, served_ids
from tts_app.models.available import LOCAL_ID, QWEN3_MODELS, find_models

logger = logging.getLogger(__name__)

Step = tuple[str, Callable[[], float]]  # (model id, load + capture; returns the capture seconds)

_lock = threading.Lock()
_state = "idle"  # idle (nothing announced) | pending (announced, not started) | preparing | done


def announce() -> None:
    """The server will prepare the GPU (called before it starts answering): not ready until ``prepare`` ends."""
    global _state
    with _lock:
        _state = "pending"


def gpu_preparing() -> bool:
    with _lock:
        return _state in ("pending", "preparing")


def prepare(find_steps: Callable[[], Sequence[Step]]) -> dict[str, float]:
    """Run each model's step in turn (a failure is logged; the server serves the rest); returns capture seconds
    per model. The state ends "done" whatever happens, so /readyz cannot stay 503 for good."""
    global _state
    with _lock:
        _state = "preparing"
    seconds: dict[str, float] = {}
    try:
        for model_id, step in find_steps():
            t0 = time.perf_counter()
            try:
                seconds[model_id] = step()
            except (OSError, RuntimeError, ValueError, ImportError) as exc:  # a model that cannot load fails on request too
                logger.warning("preparing %s on the GPU failed: %s", model_id, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                continue
            logger.info("%s ready on the GPU: graphs captured in %.1f s (%.1f s with loading)", model_id,
                        seconds[model_id], time.perf_counter() - t0)
    finally:
        with _lock:
            _state = "done"
    return seconds


def qwen3_steps() -> list[Step]:
    """One step per Qwen3-TTS checkpoint the operator loads (catalog/engines.served_ids), when CUDA is available; none otherwise."""
    served = set(served_ids())
    models = [c.id for c in find_models() if c.available and c.id in served and (c.id in QWEN3_MODELS or c.id == LOCAL_ID)]
    if not models:
        return []
    import torch  # only when a GPU model is on this machine: torch takes seconds to import

    if not torch.cuda.is_available():
        return []
    # Creating the engine captures its graphs (catalog/engines.py); the step reports how long that took.
    return [(m, lambda m=m: load_model(m).backend.capture_s) for m in models]
