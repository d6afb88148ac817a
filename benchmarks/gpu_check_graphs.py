"""benchmarks/gpu_check.py's sections for the fixed-shape calls of issue 51: the Qwen3-TTS codec per batch bucket
(CUDA graph vs the same call eager vs the ragged eager decode) and Chatterbox (T3's decode call and S3Gen's flow
solve, graph vs eager, one stream and 32 rows), beside Qwen3-TTS in the same run.

Chatterbox: T3 at the released Llama_520M sizes in bf16, S3Gen at its released sizes in float32 (the official
vocoder's STFT does not run in bf16), random weights, prompts of the released shape (a 150-token voice
prompt; T3 prefill rows of 110 positions). Figures per stream: T3 speech tokens/s (25 tokens = 1 s of audio),
one flow solve per 1 s chunk (the backend's ChunkPlan: 25 new tokens after 25 of context, 3 lookahead), the
vocoder eager per row; ``audio_s_per_s`` combines them as the backend's step runs them (in sequence).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from tests.support.chatterbox_tiny import random_prompts, random_ref, random_s3gen, random_t3
from tts_app.models.chatterbox import s3gen_batch as sb
from tts_app.models.chatterbox.config import ChatterboxSampling
from tts_app.models.chatterbox.flow_graph import FlowSolver
from tts_app.models.chatterbox.t3_generator import T3Generator
from tts_app.models.qwen3.codec import CodecDecoder
from tts_app.models.qwen3.streaming import CodecWindows, decode_new_audio

TOKENS_PER_S = 25  # Chatterbox speech tokens per second of audio


@dataclass(frozen=True)
class GraphPlan:
    codec_batches: tuple[int, ...]
    codec_calls: int
    cb_llama: dict | None  # None: the tiny test Llama
    cb_rows: tuple[int, ...]
    t3_calls: int  # decode calls of 4 tokens timed
    prompt_positions: int
    voice_tokens: int  # the S3Gen voice prompt
    chunk_tokens: int  # new tokens per flow solve (after as many of context)
    flow_calls: int


FULL = GraphPlan((1, 8, 32, 64, 128), 10, {}, (1, 32), 25, 110, 150, 25, 5)
TINY = GraphPlan((1, 4), 2, None, (1, 2), 2, 12, 6, 4, 1)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _median_s(fn: Callable[[], Any], n: int, device: torch.device) -> float:
    fn()  # warm-up (and the capture, where one is due)
    times = []
    for _ in range(n):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def codec_section(codec: CodecDecoder, plan: GraphPlan, device: torch.device, left_context: int) -> list[dict[str, Any]]:
    """Per batch bucket: one steady window per row (left_context + 4 frames), graph vs fixed-shape eager vs ragged."""
    rows = []
    G, V = codec.cfg.num_quantizers, codec.cfg.codebook_size
    for batch in plan.codec_batches:
        rng = np.random.default_rng(batch)
        histories = [[rng.integers(0, V, (left_context + 4, G))] for _ in range(batch)]
        new = [4] * batch
        eager = CodecWindows(codec, left_context, 4, batch, use_cuda_graphs=False, fixed_shapes=True)
        row: dict[str, Any] = dict(batch=batch)
        want = eager.decode(histories, new)
        row["eager_ms"] = round(1000 * _median_s(lambda: eager.decode(histories, new), plan.codec_calls, device), 2)
        row["ragged_ms"] = round(1000 * _median_s(lambda: decode_new_audio(codec, histories, new, left_context), plan.codec_calls, device), 2)
        if device.type == "cuda":
            graphs = CodecWindows(codec, left_context, 4, batch, use_cuda_graphs=True)
            row["capture_s"] = round(graphs.capture(graphs.bucket(batch)), 2)  # this bucket only (the server captures all)
            got = graphs.decode(histories, new)
            row["graph_ms"] = round(1000 * _median_s(lambda: graphs.decode(histories, new), plan.codec_calls, device), 2)
            row["graph_vs_eager_max_abs"] = float(max(np.abs(a - b).max() for a, b in zip(got, want)))
            row["x_real_time_graph"] = round(batch * 4 / 12.5 / (row["graph_ms"] / 1000), 1)
        else:
            row["graph_ms"] = "no CUDA"
        row["x_real_time_eager"] = round(batch * 4 / 12.5 / (row["eager_ms"] / 1000), 1)
        rows.append(row)
    return rows


class Chatterbox:
    """Random T3 (bf16 on CUDA) + S3Gen (float32) on the run's device."""

    def __init__(self, plan: GraphPlan, device: torch.device) -> None:
        dt = torch.bfloat16 if device.type == "cuda" else torch.float32
        self.t3, self.backbone, self.tokens = random_t3(plan.cb_llama, device=str(device), dtype=dt)
        self.s3gen = random_s3gen(device=str(device))
        self.plan, self.device = plan, device

    def t3_run(self, rows: int, graphs: bool, seeds: list[int]) -> tuple[list[list[int]], float, float]:
        """(tokens per row, tokens/s over the timed calls, capture seconds)."""
        plan = self.plan
        gen = T3Generator(self.t3, self.backbone, self.tokens, max_batch=rows, max_seq_len=1536, use_cuda_graphs=graphs)
        capture = 0.0
        if graphs and gen.capturing:
            t0 = time.perf_counter()
            gen.capture((gen.graphs.batch_bucket(rows), gen.graphs.len_bucket(plan.prompt_positions + 4 * (plan.t3_calls + 2)), 4))
            capture = time.perf_counter() - t0
        states = gen.prefill(random_prompts(self.t3, [plan.prompt_positions] * rows), [ChatterboxSampling(max_new_tokens=1000)] * rows, seeds)
        gen.decode(states, 4)
        _sync(self.device)
        before = sum(len(s.tokens) for s in states)
        t0 = time.perf_counter()
        for _ in range(plan.t3_calls):
            gen.decode(states, 4)
        _sync(self.device)
        made = sum(len(s.tokens) for s in states) - before
        return [s.tokens for s in states], made / (time.perf_counter() - t0), capture

    def flow_rows(self, rows: int) -> list[sb.FlowRow]:
        plan, out = self.plan, []
        for r in range(rows):
            ref = random_ref(plan.voice_tokens, seed=r, device=str(self.device))
            g = torch.Generator().manual_seed(r)
            n = 2 * plan.chunk_tokens + 3  # context + new + lookahead, as a steady streaming window
            out.append(sb.FlowRow(torch.randint(0, 6561, (n,), generator=g), ref, sb.starting_noise(ref, n, g)))
        return out


def chatterbox_section(plan: GraphPlan, device: torch.device) -> list[dict[str, Any]]:
    cb = Chatterbox(plan, device)
    out = []
    for rows in plan.cb_rows:
        seeds = list(range(rows))
        row: dict[str, Any] = dict(rows=rows)
        eager_tokens, row["t3_tokens_per_s_eager"], _ = cb.t3_run(rows, False, seeds)
        flow = cb.flow_rows(rows)
        eager_solver = FlowSolver(cb.s3gen, max_batch=rows, max_frames=1024, use_cuda_graphs=False)
        mels = sb.flow_mels(cb.s3gen, flow, solver=eager_solver)
        row["flow_ms_eager"] = round(1000 * _median_s(lambda: sb.flow_mels(cb.s3gen, flow, solver=eager_solver), plan.flow_calls, device), 1)
        best_t3, best_flow = row["t3_tokens_per_s_eager"], row["flow_ms_eager"]
        if device.type == "cuda":
            graph_tokens, row["t3_tokens_per_s_graph"], row["t3_capture_s"] = cb.t3_run(rows, True, seeds)
            row["t3_graph_vs_eager_agreement"] = round(float(np.mean([
                np.mean(np.array(a[:min(len(a), len(b))]) == np.array(b[:min(len(a), len(b))])) for a, b in zip(graph_tokens, eager_tokens)])), 4)
            solver = FlowSolver(cb.s3gen, max_batch=rows, max_frames=1024, use_cuda_graphs=True)
            got = sb.flow_mels(cb.s3gen, flow, solver=solver)
            row["flow_graph_vs_eager_max_abs"] = float(max((a - b).abs().max().item() for a, b in zip(got, mels)))
            row["flow_ms_graph"] = round(1000 * _median_s(lambda: sb.flow_mels(cb.s3gen, flow, solver=solver), plan.flow_calls, device), 1)
            best_t3, best_flow = row["t3_tokens_per_s_graph"], row["flow_ms_graph"]
        mel = mels[0][:, -2 * plan.chunk_tokens:]  # one chunk's new frames
        g = torch.Generator().manual_seed(0)
        vocode_s = _median_s(lambda: sb.vocode(cb.s3gen, mel, g), plan.flow_calls, device)
        row["vocoder_ms_per_row"] = round(1000 * vocode_s, 1)
        # One second of audio per row: 25 T3 tokens (all rows together), one flow solve, the vocoder row by row.
        seconds_per_audio_s = TOKENS_PER_S * rows / best_t3 + best_flow / 1000 + rows * vocode_s
        row["audio_s_per_s"] = round(rows / seconds_per_audio_s, 2)
        row["t3_tokens_per_s_eager"] = round(row["t3_tokens_per_s_eager"], 1)
        if "t3_tokens_per_s_graph" in row:
            row["t3_tokens_per_s_graph"] = round(row["t3_tokens_per_s_graph"], 1)
            row["t3_capture_s"] = round(row["t3_capture_s"], 2)
        out.append(row)
    return out
