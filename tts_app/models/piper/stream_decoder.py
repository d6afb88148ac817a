"""Streaming HiFi-GAN decoder: the decoder cut in two stages, each run overlap-save.

The decoder is conv_pre, three upsampling blocks (x8, x8, x4) each followed by
multi-receptive-field residual convolutions, and conv_post. Almost all of its
receptive field (about 11 latent frames each side) comes from the first block,
which runs at 8x the frame rate on 128 channels; the rest, where most of the
compute is, looks only 9 to 10 samples (of the 8x rate) to each side. So the graph is
cut before the second upsampler. Each stage keeps the tail of its input from
the previous call, so every output sample is computed once, from exactly the
inputs it sees in a whole-utterance decode. Per 160-frame window the first
stage recomputes 22 frames and the second 19 samples of 1,280; the earlier
design (windows with 12 frames of latent context on each side) recomputed 15%
of everything. Two stages, not four: each cut costs a copy and a layout change
that ate the gain of finer cuts (measured).

A stage's context is read off its graph (``stage_reach``): every convolution
widens it by its padding, divided by the stage's rate at that point.

OpenVINO prepares its kernels per input shape (20 to 150 ms each, measured) and keeps memory for
every width it has run (about 4 MB plus 6 KB per sample of the second stage's width, for the life of
the process, measured: a whole WAV at speed 0.25, its windows grown to 640 frames, kept +787 MB). So
a stage only ever runs at one of a fixed set of widths, ``DecoderStage.widths``: multiples of
``SHAPE_STEP_FRAMES`` latent frames up to ``MAX_CALL_FRAMES``, all prepared at load (warm_up.py).
A longer input goes through in several calls (overlap-save again: the same outputs); a shorter
one is zero-padded on the right, and the stage's validity mask (graph_split.with_edge_mask) makes
the padding read as the convolutions' own zero padding, so a row's last samples are exact too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import onnx
from onnx import helper

from tts_app.models.piper.runtime import StageSession

SHAPE_STEP_FRAMES = 16  # stage inputs are padded to a multiple of this many latent frames
# The widest call, in latent frames: the steady 160-frame window with its context and a last window's
# remainder (windows.py) fit in one call; a grown window (320, 640 frames) goes in several.
MAX_CALL_FRAMES = 14 * SHAPE_STEP_FRAMES


def stage_reach(model: onnx.ModelProto) -> tuple[int, int, int]:
    """(up, left, right) of a stage graph whose first input is [B, C, n] and output [B, C', n * up].

    ``left`` and ``right``: how many input samples an output sample depends on
    on each side (rounded up, plus one sample of margin).
    """
    graph = model.graph
    weights = {w.name: tuple(w.dims) for w in graph.initializer}
    # tensor -> (rate in samples per stage-input sample, left reach, right reach) in stage-input samples
    reach = {graph.input[0].name: (Fraction(1), Fraction(0), Fraction(0))}
    for node in graph.node:
        ins = [reach[i] for i in node.input if i in reach]
        if not ins:
            continue
        rate = ins[0][0]
        if any(r != rate for r, _, _ in ins):
            raise ValueError(f"{node.name}: inputs at different rates")
        left, right = max(x[1] for x in ins), max(x[2] for x in ins)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type in ("Conv", "ConvTranspose"):
            k = weights[node.input[1]][-1]
            dilation = attrs.get("dilations", [1])[-1]
            pad_left = attrs.get("pads", [0, 0])[0]
            if node.op_type == "Conv":
                # y[n] reads x[n - pad_left .. n - pad_left + (k - 1) * dilation]
                left += Fraction(pad_left) / rate
                right += Fraction((k - 1) * dilation - pad_left) / rate
            else:
                # y[n] (rate * s) reads x[m] for m * s - pad_left + j == n, 0 <= j < k
                s = attrs.get("strides", [1])[-1]
                left += Fraction(k - 1 - pad_left) / (rate * s)
                right += Fraction(pad_left) / (rate * s)
                rate *= s
        for out in node.output:
            reach[out] = (rate, left, right)
    up, left, right = reach[graph.output[0].name]
    if up.denominator != 1:
        raise ValueError("stage output rate is not a whole multiple of its input rate")
    return int(up), math.ceil(left) + 1, math.ceil(right) + 1


@dataclass(frozen=True)
class DecoderStage:
    """One cut of the decoder: input [B, C_in, n] -> output [B, C_out, n * up]."""

    session: StageSession
    input_name: str
    channels: int  # C_in
    up: int
    left: int  # input samples of context an output sample needs on its left
    right: int  # ... and on its right
    step: int = SHAPE_STEP_FRAMES  # inputs are padded to a multiple of this many samples: SHAPE_STEP_FRAMES at this stage's rate
    max_width: int = MAX_CALL_FRAMES  # the widest call, in samples: MAX_CALL_FRAMES at this stage's rate
    mask_name: str = "valid_mask"  # the graph's validity-mask input [B, 1, n]

    @property
    def widths(self) -> tuple[int, ...]:
        """Every input width this stage is ever run at."""
        return tuple(range(self.step, self.max_width + 1, self.step))

    def feed(self, x_BxCxN: np.ndarray, real: Sequence[int]) -> dict[str, np.ndarray]:
        """The stage's inputs for rows ``x_BxCxN`` whose first ``real[b]`` samples are real (the rest padding)."""
        mask_Bx1xN = (np.arange(x_BxCxN.shape[2]) < np.asarray(real)[:, None]).astype(np.float32)[:, None, :]
        return {self.input_name: x_BxCxN, self.mask_name: mask_Bx1xN}


@dataclass
class StageBuffer:
    """A stage's pending input for one row: samples from input position ``start`` on."""

    x_CxN: np.ndarray | None = None
    start: int = 0
    emitted: int = 0  # output samples handed to the next stage so far


@dataclass
class DecoderStream:
    """One row's streaming-decoder state: a buffer per stage. Lives with the request."""

    buffers: list[StageBuffer] = field(default_factory=list)


def append_input(buf: StageBuffer, x_CxN: np.ndarray) -> None:
    """Queue a stage's new input samples behind the context it kept."""
    if x_CxN.shape[1]:
        buf.x_CxN = x_CxN if buf.x_CxN is None else np.concatenate([buf.x_CxN, x_CxN], axis=1)


def _exact_end(stage: DecoderStage, buf: StageBuffer, final: bool) -> int:
    """Output samples that the buffered input makes exact: all of them on the row's last
    call, else all but those within ``right`` input samples of the buffer's end."""
    end_in = buf.start + (0 if buf.x_CxN is None else buf.x_CxN.shape[1])
    return (end_in if final else end_in - stage.right) * stage.up


def ready_rows(stage: DecoderStage, bufs: list[StageBuffer], finals: list[bool]) -> list[int]:
    """Rows whose buffered input yields new output (the others wait for more input)."""
    return [i for i, (buf, final) in enumerate(zip(bufs, finals)) if _exact_end(stage, buf, final) > buf.emitted]


def stage_input(buf: StageBuffer, step: int) -> tuple[np.ndarray, int]:
    """The buffer as the stage's input [C, n'], zero-padded on the right to a multiple of ``step``;
    and its real length n (the mask's ones)."""
    n = buf.x_CxN.shape[1]
    pad = -n % step
    return (np.pad(buf.x_CxN, ((0, 0), (0, pad))) if pad else buf.x_CxN), n


def take_output(stage: DecoderStage, buf: StageBuffer, y_CxM: np.ndarray, final: bool) -> np.ndarray:
    """Keep the output samples that are now exact; drop input no longer needed as context.

    ``y_CxM`` is the stage's output for ``stage_input`` (its padding's outputs are never kept).
    """
    out_end = _exact_end(stage, buf, final)
    fresh_CxM = y_CxM[:, buf.emitted - buf.start * stage.up : out_end - buf.start * stage.up]
    buf.emitted = out_end
    keep_from = max(buf.start, out_end // stage.up - stage.left)
    buf.x_CxN = buf.x_CxN[:, keep_from - buf.start :]
    buf.start = keep_from
    return fresh_CxM


# Runs one stage's calls: (inputs [C, w] at a width of ``DecoderStage.widths``, their real lengths) -> outputs [C', w * up].
StageRunner = Callable[[list[np.ndarray], list[int]], list[np.ndarray]]


def run_stage(stage: DecoderStage, bufs: list[StageBuffer], inputs: Sequence[np.ndarray], finals: Sequence[bool], run: StageRunner) -> list[np.ndarray]:
    """Each row's new input [C, n_i] through one stage -> the output samples that are now exact [C', m_i].

    Calls hold at most ``stage.max_width`` samples: a longer input goes in pieces, each call
    non-final but the row's last, so every call is at one of ``stage.widths``.
    """
    todo = list(inputs)
    outs: list[list[np.ndarray]] = [[] for _ in bufs]
    while True:
        for i, buf in enumerate(bufs):
            room = stage.max_width - (0 if buf.x_CxN is None else buf.x_CxN.shape[1])
            if room <= 0:  # a call keeps only left + right samples: never the case
                raise ValueError("stage buffer over its widest call")
            append_input(buf, todo[i][:, :room])
            todo[i] = todo[i][:, room:]
        now_final = [f and t.shape[1] == 0 for f, t in zip(finals, todo)]
        ready = ready_rows(stage, bufs, now_final)
        calls = [stage_input(bufs[i], stage.step) for i in ready]
        for i, y_CxM in zip(ready, run([x for x, _ in calls], [n for _, n in calls]) if calls else []):
            outs[i].append(take_output(stage, bufs[i], y_CxM, now_final[i]))
        if all(t.shape[1] == 0 for t in todo):
            return [np.concatenate(o, axis=1) if o else np.zeros((1, 0), np.float32) for o in outs]
