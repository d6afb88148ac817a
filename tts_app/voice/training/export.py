"""Write an adapted decoder back into the voice's ONNX graph.

Adaptation keeps the released decoder's layout (LoRA updates are merged), so only the "dec.*"
initialisers change: the result is the same graph with new weights, which the engine's graph split
(model/graph_split.py) cuts and runs like the stock file, at the stock decoder's speed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tts_app.voice.training.decoder import HifiGanDecoder


def base_model_hash(model_path: str | Path) -> str:
    """SHA-256 of the base ONNX file: an adapted decoder is only valid on the graph it came from."""
    digest = hashlib.sha256()
    with open(model_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_onnx(decoder: HifiGanDecoder, model_path: str | Path, out_path: str | Path) -> None:
    """Copy of the Piper ONNX file at ``model_path`` with the decoder's weights taken from ``decoder``."""
    import onnx  # lazy: training-time only
    from onnx import numpy_helper

    model = onnx.load(str(model_path))
    weights = {f"dec.{k}": v.detach().cpu().numpy() for k, v in decoder.state_dict().items()}
    replaced = set()
    for init in model.graph.initializer:
        if init.name in weights:
            new = weights[init.name]
            if tuple(init.dims) != new.shape:
                raise ValueError(f"{init.name}: shape {tuple(init.dims)} in the graph, {new.shape} in the decoder")
            init.CopyFrom(numpy_helper.from_array(new.astype("float32"), init.name))
            replaced.add(init.name)
    if missing := sorted(set(weights) - replaced):
        raise ValueError(f"the graph has no initialiser for {', '.join(missing)}")
    onnx.save(model, str(out_path))
