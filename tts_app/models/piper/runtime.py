"""Where a stage graph runs: OpenVINO on CPU, onnxruntime on CUDA.

Measured on the 2-core CPU machine (docs/benchmarks-log.md): OpenVINO runs the decoder
(as 2-D convolutions) 1.46x faster than onnxruntime on one thread and scales
1.87x on two, where onnxruntime scaled 1.26x. Its rows are batch-invariant:
a row computes the same floats alone or batched, at any thread count used
consistently. onnxruntime stays for CUDA, and for CPU where OpenVINO is missing.
"""

from __future__ import annotations

import io
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

_LOGGER = logging.getLogger(__name__)


class StageSession(Protocol):
    """One stage graph, ready to run: named input arrays in, output arrays out (in graph order)."""

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]: ...


@dataclass(frozen=True)
class SessionOptions:
    """How one stage is compiled. ``float_precision``: "f32", or "bf16" on CPUs that have it
    (the fast precision)."""

    threads: int = 2
    float_precision: str = "f32"
    cache_dir: Path | None = None  # OpenVINO's compiled-model cache (model_cache.py)
    name: str = ""  # the stage's name in the shape log
    shape_log: Any = None  # model_cache.ShapeLog: new input shapes are recorded for the next load's warm-up
    runtime: str = "auto"  # CPU: "auto" (OpenVINO if installed), or "onnxruntime" (calibrate.py's pick)


class _OpenVinoSession:
    def __init__(self, model: "bytes | Any", options: SessionOptions) -> None:
        import openvino as ov  # heavy runtime: imported only on the path that uses it

        core = ov.Core()
        if options.cache_dir is not None:
            # Keeps the compiled graphs between runs (load time); per-shape kernels are still
            # made on first use, which is what warm-up (piper_vits.py) is for.
            core.set_property({"CACHE_DIR": str(options.cache_dir)})
        config = {
            # CPUs with AVX512-BF16 would otherwise run in bfloat16 and lose the 1e-3 fidelity.
            "INFERENCE_PRECISION_HINT": options.float_precision,
            "INFERENCE_NUM_THREADS": options.threads,
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            # Pinned threads would fight the Python threads (engine worker, web server) for cores.
            "ENABLE_CPU_PINNING": False,
        }
        graph = core.read_model(io.BytesIO(model)) if isinstance(model, bytes) else model
        self._compiled = core.compile_model(graph, "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._lock = threading.Lock()  # one infer request; it already uses every thread given
        self._name, self._shape_log = options.name, options.shape_log

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        with self._lock:
            # Inputs are read in place (the call is synchronous); outputs are copied out.
            result = self._request.infer(feed, share_inputs=True)
        if self._shape_log is not None:  # after the run: a shape that failed is not warmed next time
            self._shape_log.record(self._name, [v.shape for v in feed.values()])
        return [result[out] for out in self._compiled.outputs]


class _OrtSession:
    def __init__(self, model: bytes, providers: list[str], threads: int, optimize: bool) -> None:
        import onnxruntime as ort  # heavy runtime: imported only on the path that uses it

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # No arena: a batch-16 step peaks near 0.5 GB of activations, and an arena would
        # keep that peak for the life of the process; malloc gives it back.
        options.enable_cpu_mem_arena = False
        if providers == ["CPUExecutionProvider"]:
            # Nor a memory plan per input shape: each is kept, and the text stage meets many shapes.
            options.enable_mem_pattern = False
        # Idle onnxruntime threads busy-wait by default, and on 2 cores they take one from the
        # next call on the other runtime: an OpenVINO decoder stage after an onnxruntime one ran
        # 1.5 to 2x slower (34 -> 60 ms per window, measured).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if not optimize:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        self._session = ort.InferenceSession(model, options, providers=providers)

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self._session.run(None, feed)


def pick_device() -> str:
    """"cuda" where onnxruntime has CUDA, else "cpu"."""
    import onnxruntime as ort  # heavy runtime: imported only on the path that uses it

    return "cuda" if "CUDAExecutionProvider" in ort.get_available_providers() else "cpu"


def _has_openvino() -> bool:
    try:
        import openvino  # noqa: F401
    except ImportError:
        return False
    return True


def open_session(model: "bytes | Any", device: str, options: SessionOptions, batch_invariant: bool = False) -> StageSession:
    """A session for one stage graph on ``device`` with ``options.threads`` CPU threads.

    ``model``: ONNX bytes, or an OpenVINO model (OpenVINO only).

    ``batch_invariant`` asks for a row's floats not to depend on its batch: on
    onnxruntime that needs one thread and no graph fusions (they change the
    rounding with the batch shape); OpenVINO is batch-invariant as it is
    (tested in tests/unit/model/test_model.py).
    """
    threads = options.threads
    if device == "cuda":
        return _OrtSession(model, ["CUDAExecutionProvider", "CPUExecutionProvider"], threads, optimize=not batch_invariant)
    if _has_openvino() and options.runtime != "onnxruntime":
        return _OpenVinoSession(model, options)
    if options.runtime == "onnxruntime":
        return _OrtSession(model, ["CPUExecutionProvider"], 1 if batch_invariant else threads, optimize=not batch_invariant)
    _LOGGER.warning("openvino is not installed; running on onnxruntime's CPU provider (slower)")
    return _OrtSession(model, ["CPUExecutionProvider"], 1 if batch_invariant else threads, optimize=not batch_invariant)


def uses_openvino(device: str) -> bool:
    """Whether ``open_session`` runs stages on OpenVINO for ``device``."""
    return device == "cpu" and _has_openvino()
