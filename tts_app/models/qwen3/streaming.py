"""Streaming codec decode: each row's new frames, decoded with up to ``left_context`` earlier frames.

Rows are batched by (context, new) length so a batch needs no padding (padding would act as
fake context for a causal decoder). In steady state every row has the same shape, one batch.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch

from tts_app.models.qwen3.codec import CodecDecoder


@torch.inference_mode()
def decode_new_audio(
    codec: CodecDecoder, histories: list[list[np.ndarray]], new_counts: list[int], left_context: int
) -> list[np.ndarray]:
    """Audio for the last ``new_counts[r]`` frames of each row's frame history (chunks of [n, G])."""
    out: list[np.ndarray] = [np.zeros(0, dtype=np.float32) for _ in histories]
    groups: dict[tuple[int, int], list[tuple[int, np.ndarray]]] = defaultdict(list)
    for r, (chunks, new) in enumerate(zip(histories, new_counts)):
        if new <= 0:
            continue
        tail: list[np.ndarray] = []
        need = new + left_context
        for c in reversed(chunks):  # only the tail is needed, avoid concatenating the whole history
            tail.insert(0, c)
            need -= c.shape[0]
            if need <= 0:
                break
        codes_TxG = np.concatenate(tail)[-(new + left_context):]
        groups[(codes_TxG.shape[0] - new, new)].append((r, codes_TxG))
    device = next(codec.parameters()).device  # the generator hands frames over on the host
    for (ctx, _), members in groups.items():
        codes_BxGxT = torch.from_numpy(np.stack([c for _, c in members])).transpose(1, 2).to(device)
        wav_BxN = codec.decode_chunk(codes_BxGxT, ctx).float().cpu().numpy()
        for (r, _), wav in zip(members, wav_BxN):
            out[r] = np.ascontiguousarray(wav, dtype=np.float32)
    return out
