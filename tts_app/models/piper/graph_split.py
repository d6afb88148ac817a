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
- the decoder is cut once more, at the input of the second upsampling
  ConvTranspose (``/dec/LeakyRelu_1_output_0``), so each half streams with its
  own context (stream_decoder.py).

Length regulation and the prior's noise (between encoder and flow) run in
NumPy, per row, so each row's noise and frame count are its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx
import onnx.utils
from onnx import helper, numpy_helper

from tts_app.models.piper.stream_decoder import stage_reach

DP_NOISE = "/dp/RandomNormalLike_output_0"
ENC_INPUTS = ("input", "input_lengths", "scales", DP_NOISE)
ENC_OUTPUTS = ("/dp/Split_output_0", "/enc_p/Split_output_0", "/enc_p/Split_output_1", "/enc_p/Cast_1_output_0")
FLOW_INPUTS = ("/Add_output_0", "/Cast_2_output_0")
FLOW_OUTPUT = "/Mul_7_output_0"
DEC_OUTPUT = "/dec/Tanh_output_0"
MASK_INPUT = "valid_mask"  # [B, 1, n]: 1 on a stage input's real samples, 0 on padding (see with_edge_mask)


@dataclass(frozen=True)
class DecoderStageGraph:
    """One cut of the decoder, run as 2-D convolutions: [B, C_in, n] -> [B, C_out, n * up]."""

    model: bytes
    input_name: str
    channels: int  # C_in
    up: int
    left: int  # input samples of context an output sample needs on its left (stage_reach)
    right: int
    mask_name: str = MASK_INPUT  # the second input, [B, 1, n] (with_edge_mask)


@dataclass(frozen=True)
class StageGraphs:
    """Serialized ONNX models of the stages."""

    encoder: bytes  # ids [B, N], lengths [B], scales [3], dp noise [B, 2, N] -> logw, m_p, logs_p, x_mask
    flow: bytes  # z_p [B, 192, T], y_mask [B, 1, T] -> z [B, 192, T]
    decoder: tuple[DecoderStageGraph, ...]  # z [B, 192, T] -> ... -> audio [B, 1, T * hop]


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
    flow = _with_input_ranks(extractor.extract_model(list(FLOW_INPUTS), [FLOW_OUTPUT]), [["batch", 192, "frames"], ["batch", 1, "frames"]])
    upsamplers = [n for n in graph.node if n.op_type == "ConvTranspose"]
    cuts = [FLOW_OUTPUT, upsamplers[1].input[0], DEC_OUTPUT]
    return StageGraphs(
        encoder=extractor.extract_model(list(ENC_INPUTS), list(ENC_OUTPUTS)).SerializeToString(),
        flow=flow.SerializeToString(),
        decoder=tuple(_decoder_stage(extractor, a, b) for a, b in zip(cuts, cuts[1:])),
    )


def _decoder_stage(extractor: onnx.utils.Extractor, start: str, end: str) -> DecoderStageGraph:
    stage = extractor.extract_model([start], [end])
    weights = {w.name: w.dims for w in stage.graph.initializer}
    first = next(n for n in stage.graph.node if start in n.input and n.op_type in ("Conv", "ConvTranspose"))
    channels = weights[first.input[1]][1 if first.op_type == "Conv" else 0]  # Conv [O, I, k]; ConvTranspose [I, O, k]
    stage = _with_input_ranks(stage, [["batch", channels, "samples"]])
    up, left, right = stage_reach(stage)
    rates = _conv_input_rates(stage)
    return DecoderStageGraph(with_edge_mask(conv1d_as_conv2d(stage), rates).SerializeToString(), start, channels, up, left, right)


def _conv_input_rates(model: onnx.ModelProto) -> dict[str, int]:
    """The data input of every convolution -> its rate (samples per stage-input sample)."""
    graph = model.graph
    rate = {graph.input[0].name: 1}
    convs: dict[str, int] = {}
    for node in graph.node:
        ins = [rate[i] for i in node.input if i in rate]
        if not ins:
            continue
        r = ins[0]
        if node.op_type in ("Conv", "ConvTranspose"):
            convs[node.input[0]] = r
        if node.op_type == "ConvTranspose":
            r *= next(helper.get_attribute_value(a) for a in node.attribute if a.name == "strides")[-1]
        for out in node.output:
            rate[out] = r
    return convs


def with_edge_mask(model: onnx.ModelProto, conv_rates: dict[str, int]) -> onnx.ModelProto:
    """Multiply every convolution's input by a validity mask (input ``MASK_INPUT``, [B, 1, n], repeated to
    each convolution's rate), on the [B, C, 1, T] graph of conv1d_as_conv2d.

    A convolution pads its input with zeros; zeros in the mask make padded input samples, and every
    activation computed from them, read as that padding again. So an input zero-padded to a bucket width
    gives, on its real samples, the output of the exact width, at a row's first and last sample too
    (stream_decoder.py pads every call to one of a few widths: the runtime keeps memory per width).
    A mask of ones changes no float.
    """
    graph = model.graph
    z_in = graph.input[0].name
    graph.input.append(helper.make_tensor_value_info(MASK_INPUT, onnx.TensorProto.FLOAT, ["batch", 1, "samples"]))
    graph.initializer.append(helper.make_tensor("mask_axis_w", onnx.TensorProto.INT64, [1], [4]))
    graph.initializer.append(helper.make_tensor("mask_shape_4d", onnx.TensorProto.INT64, [4], [0, 1, 1, -1]))
    masks = {1: "mask_r1"}
    nodes = [helper.make_node("Unsqueeze", [MASK_INPUT, "axis_h"], ["mask_r1"])]
    for r in sorted(set(conv_rates.values()) - {1}):
        graph.initializer.append(helper.make_tensor(f"mask_expand_{r}", onnx.TensorProto.INT64, [5], [1, 1, 1, 1, r]))
        nodes += [
            helper.make_node("Unsqueeze", ["mask_r1", "mask_axis_w"], [f"mask_r{r}_5d"]),
            helper.make_node("Expand", [f"mask_r{r}_5d", f"mask_expand_{r}"], [f"mask_r{r}_rep"]),
            helper.make_node("Reshape", [f"mask_r{r}_rep", "mask_shape_4d"], [f"mask_r{r}"]),
        ]
        masks[r] = f"mask_r{r}"
    masked: dict[str, str] = {}
    body = []
    for node in graph.node:
        if node.op_type in ("Conv", "ConvTranspose"):
            source = node.input[0]
            rate = conv_rates[z_in if source == "z_4d" else source]  # conv1d_as_conv2d renamed the input
            if source not in masked:
                masked[source] = f"{source}_masked"
                body.append(helper.make_node("Mul", [source, masks[rate]], [masked[source]]))
            node.input[0] = masked[source]
        body.append(node)
    unsqueeze_z, rest = body[0], body[1:]  # conv1d_as_conv2d's Unsqueeze of the input comes first
    del graph.node[:]
    graph.node.extend([unsqueeze_z, *nodes, *rest])
    return model


def _with_input_ranks(model: onnx.ModelProto, shapes: list[list[int | str]]) -> onnx.ModelProto:
    """Declare the float inputs' shapes: cut tensors carry none, and OpenVINO needs their rank."""
    for inp, shape in zip(model.graph.input, shapes):
        inp.CopyFrom(helper.make_tensor_value_info(inp.name, onnx.TensorProto.FLOAT, shape))
    return model


def conv1d_as_conv2d(model: onnx.ModelProto) -> onnx.ModelProto:
    """Run a graph of 1-D convolutions as 2-D ones over [B, C, 1, T].

    onnxruntime's blocked (NCHWc) convolution kernels serve only 2-D convs; on the
    HiFi-GAN decoder this is about 1.25x faster on CPU with the same output (max abs
    difference 2e-7). The decoder's other ops are element-wise, so only the convs,
    the input and the output change rank.
    """
    graph = model.graph
    weights = {w.name: w for w in graph.initializer}
    for node in graph.node:
        if node.op_type not in ("Conv", "ConvTranspose"):
            continue
        w = weights[node.input[1]]
        w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w)[:, :, None, :], w.name))  # [O, I, k] -> [O, I, 1, k]
        for attr in node.attribute:
            if attr.name in ("kernel_shape", "dilations", "strides", "output_padding"):
                attr.ints[:] = [1, *attr.ints]
            elif attr.name == "pads":
                attr.ints[:] = [0, attr.ints[0], 0, attr.ints[1]]
    z_in, y_out = graph.input[0].name, graph.output[0].name
    for node in graph.node:
        node.input[:] = ["z_4d" if i == z_in else i for i in node.input]
        node.output[:] = ["y_4d" if o == y_out else o for o in node.output]
    graph.initializer.append(helper.make_tensor("axis_h", onnx.TensorProto.INT64, [1], [2]))
    graph.node.insert(0, helper.make_node("Unsqueeze", [z_in, "axis_h"], ["z_4d"]))
    graph.node.append(helper.make_node("Squeeze", ["y_4d", "axis_h"], [y_out]))
    del graph.value_info[:]
    graph.output[0].type.tensor_type.ClearField("shape")
    return model
