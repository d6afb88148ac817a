"""Per-slot device state of the Qwen3 generator: everything a decode call reads, in fixed-address buffers.

Each tensor's first dimension is the slot; all are registered in the generator's ``SlotPool``,
so compaction moves a request's row in every one of them. A decode call reads and writes only
these buffers (plus the staged ``requested`` mask), which is what lets one CUDA graph replay a
whole call and what keeps host work per call independent of the number of rows.
"""

from __future__ import annotations

import torch

from tts_app.models.layers.kv_cache import SlotPool
from tts_app.models.qwen3.sampling import SamplingParams

# SamplingParams field -> (slot buffer name, dtype): the per-row sampling settings the decode call reads.
PARAM_COLUMNS: dict[str, tuple[str, torch.dtype]] = {
    "temperature": ("temp", torch.float32), "top_k": ("top_k", torch.long), "top_p": ("top_p", torch.float32),
    "repetition_penalty": ("rep", torch.float32), "min_new_tokens": ("min_new", torch.long),
    "subtalker_temperature": ("cp_temp", torch.float32), "subtalker_top_k": ("cp_top_k", torch.long),
    "subtalker_top_p": ("cp_top_p", torch.float32),
}


class SlotState:
    """Device rows per slot: talker state, counters, sampling settings and the text still to feed."""

    def __init__(self, pool: SlotPool, hidden: int, vocab: int, text_len: int, device: torch.device, dtype: torch.dtype) -> None:
        S = pool.capacity

        def reg(shape: tuple[int, ...], dt: torch.dtype) -> torch.Tensor:
            return pool.register(torch.zeros(shape, dtype=dt, device=device))

        self.hidden = reg((S, hidden), dtype)  # the talker's last hidden state
        self.pending = reg((S,), torch.long)  # sampled codebook-0 index of the frame to fill next
        self.seen = reg((S, vocab), torch.bool)  # codebook-0 indices emitted so far (repetition penalty)
        self.key = reg((S,), torch.long)  # row_key(seed)
        self.frame = reg((S,), torch.long)  # frames emitted so far
        self.write = reg((S,), torch.long)  # cache index of the next talker token
        self.start = reg((S,), torch.long)  # first valid cache index (left padding of the prefill)
        self.max_frames = reg((S,), torch.long)
        self.alive = reg((S,), torch.bool)  # not finished (EOS or length)
        self.text = reg((S, text_len), torch.long)  # text ids fed one per frame, then the pad id
        self.text_len = reg((S,), torch.long)
        self.params = {name: reg((S,), dt) for name, dt in PARAM_COLUMNS.values()}
        # Staged per call by the host: which slots advance (rows passed to decode and not finished).
        self.requested = torch.zeros(S, dtype=torch.bool, device=device)

    def write_params(self, rows: slice, params: list[SamplingParams]) -> None:
        for field_name, (name, dt) in PARAM_COLUMNS.items():
            values = [getattr(p, field_name) for p in params]
            self.params[name][rows] = torch.tensor(values, dtype=dt, device=self.params[name].device)

    def write_text(self, rows: slice, trailing_ids: list[list[int]], pad_id: int) -> None:
        """Each row's trailing text ids (truncated to the buffer: a row never runs longer than the cache)."""
        L = self.text.shape[1]
        block = torch.full((len(trailing_ids), L), pad_id, dtype=torch.long)
        for r, ids in enumerate(trailing_ids):
            ids = ids[:L]
            block[r, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        self.text[rows] = block.to(self.text.device)
        self.text_len[rows] = torch.tensor([min(len(t), L) for t in trailing_ids], device=self.text.device)

    def text_at(self, B: int, frame_B: torch.Tensor, pad_id: int) -> torch.Tensor:
        """The text id each of slots 0..B-1 feeds at its frame ``frame_B`` ([B] long); pad after its text."""
        L = self.text.shape[1]
        ids_B = self.text[:B].gather(1, frame_B.clamp(max=L - 1)[:, None])[:, 0]
        return torch.where(frame_B < self.text_len[:B], ids_B, torch.full_like(ids_B, pad_id))
