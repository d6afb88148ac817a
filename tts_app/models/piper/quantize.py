"""The fast precision's int8 decoder: post-training quantization of each decoder stage with NNCF.

Calibration inputs are the stage inputs that the float32 decoder sees while streaming the
shared eval sentences (calibration_ids.json, written by benchmarks/calibration_ids.py),
window by window as the engine runs it. Weights and activations of the convolutions go to
int8 (full quantization: weights-only compression does not touch convolutions' arithmetic,
so it cannot speed them up). The result is saved as OpenVINO IR in the model cache, keyed by
the NNCF version and the calibration data, so quantization (tens of seconds) runs once.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np

_LOGGER = logging.getLogger(__name__)
CALIBRATION_IDS = Path(__file__).with_name("calibration_ids.json")
MAX_CALIBRATION_SAMPLES = 96  # per stage; more barely moves the ranges and costs load time


def calibration_ids() -> list[list[int]]:
    with open(CALIBRATION_IDS, encoding="utf-8") as f:
        return [list(map(int, row)) for row in json.load(f)["ids"]]


def int8_path(cache_dir: Path | None, stage: int) -> Path | None:
    if cache_dir is None:
        return None
    import nncf  # heavy (seconds): only when a model is quantised

    digest = hashlib.sha256(CALIBRATION_IDS.read_bytes()).hexdigest()[:8]
    return cache_dir / f"decoder{stage}-int8-nncf{nncf.__version__}-{digest}.xml"


def load_int8(path: Path | None) -> Any:
    """The cached int8 stage, or None."""
    if path is None or not path.exists():
        return None
    import openvino as ov  # heavy runtime: imported only on the path that uses it

    try:
        return ov.Core().read_model(str(path))
    except RuntimeError as error:  # a torn file from an interrupted save: quantize again
        _LOGGER.warning("cannot read %s (%s); quantizing again", path, error)
        return None


def quantize_stage(model: bytes, samples_BxCxN: Sequence[np.ndarray], path: Path | None) -> Any:
    """int8 OpenVINO model of one decoder stage (ONNX bytes), calibrated on ``samples``; saved to ``path``."""
    import nncf  # heavy (seconds): only when a model is quantised
    import openvino as ov  # heavy runtime: imported only on the path that uses it

    graph = ov.Core().read_model(model, b"")
    samples = list(samples_BxCxN)[:MAX_CALIBRATION_SAMPLES]
    quantized = nncf.quantize(graph, nncf.Dataset(samples), subset_size=len(samples))
    if path is not None:
        tmp = path.with_suffix(".tmp.xml")
        try:
            # Float constants stay float32 (the default would halve them to float16).
            ov.save_model(quantized, str(tmp), compress_to_fp16=False)
            tmp.with_suffix(".bin").replace(path.with_suffix(".bin"))
            tmp.replace(path)
        except OSError as error:
            _LOGGER.warning("could not cache the int8 decoder (%s)", error)
    return quantized
