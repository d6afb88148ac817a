"""Cut Piper's single ONNX graph into the three stages the engine schedules.

Piper exports VITS inference as one graph: text encoder + duration predictor,
length regulation, flow, HiFi-GAN decoder. The tensor names below are the
boundaries in that export (found by reading the graph's nodes):

- ``/dp/RandomNormalLike_output_0``: the duration predictor's noise. The graph
  draws it itself; we make it an input so noise comes from each request's seed.
- ``/dp/Split_output_0`` (log durations), ``/enc_p/Split_output_0`` (m_p),
  ``/enc_p/Split_output_1`` (logs_p), ``/enc_p/Cast_1_output_0`` (x_mask):
  the text encoder's outputs, before length regulation.
- ``/Add_output_0`` (z_p) and ``/Cast_2_output_0`` (y_mask): the flow's inputs;
  ``/Mul_7_output_0``: its masked output z, the decoder's input.
- ``/dec/Tanh_output_0``: the waveform before the final unsqueeze.

Length regulation and the prior's noise (between encoder and flow) run in
NumPy, per row, so each row's noise and frame count are its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx
import onnx.utils

DP_NOISE = "/dp/RandomNormalLike_output_0"
ENC_INPUTS = ("input", "input_lengths", "scales", DP_NOISE)
ENC_OUTPUTS = ("/dp/Split_output_0", "/enc_p/Split_output_0", "/enc_p/Split_output_1", "/enc_p/Cast_1_output_0")
FLOW_INPUTS = ("/Add_output_0", "/Cast_2_output_0")
FLOW_OUTPUT = "/Mul_7_output_0"
DEC_OUTPUT = "/dec/Tanh_output_0"


@dataclass(frozen=True)
class StageGraphs:
    """Serialized ONNX models of the three stages."""

    encoder: bytes  # ids [B, N], lengths [B], scales [3], dp noise [B, 2, N] -> logw, m_p, logs_p, x_mask
    flow: bytes  # z_p [B, 192, T], y_mask [B, 1, T] -> z [B, 192, T]
    decoder: bytes  # z [B, 192, T] -> audio [B, 1, T * hop]


def split_piper_graph(model_path: str) -> StageGraphs:
    """Load the voice's ONNX file and extract the three stage subgraphs."""
    model = onnx.load(model_path)
    graph = model.graph
    random_nodes = [n for n in graph.node if n.output and n.output[0] == DP_NOISE]
    if len(random_nodes) != 1:
        raise ValueError(f"{model_path}: not a Piper VITS export (no duration-predictor noise node)")
    graph.node.remove(random_nodes[0])
    graph.input.append(onnx.helper.make_tensor_value_info(DP_NOISE, onnx.TensorProto.FLOAT, ["batch", 2, "phonemes"]))
    extractor = onnx.utils.Extractor(model)
    return StageGraphs(
        encoder=extractor.extract_model(list(ENC_INPUTS), list(ENC_OUTPUTS)).SerializeToString(),
        flow=extractor.extract_model(list(FLOW_INPUTS), [FLOW_OUTPUT]).SerializeToString(),
        decoder=extractor.extract_model([FLOW_OUTPUT], [DEC_OUTPUT]).SerializeToString(),
    )
