"""T3's batched generation: ragged prefill into a static, slot-indexed KV cache, then a hand-written
decode loop in which every request advances by one speech token per step with its own guidance and
sampling settings. Finished rows leave at once (``release`` compacts the cache); new rows are prefilled
into free slots at any time.

A decode call (``_decode_call``) runs ``n`` token steps over device tensors only, as Qwen3-TTS's does:
every per-row input (pending token, position, cache index, sampling settings, seen tokens) lives in
slot buffers, the noise is counter-based, EOS and length end rows through masks, and the call
returns one packed tensor. So it has fixed shapes per (batch bucket, attention-length bucket, n) and
on CUDA one graph replays it (``CallGraphs``, behind the same ``use_cuda_graphs`` switch); the host
stages one mask before and copies one tensor after.

Classifier-free guidance doubles each request into a pair of cache rows (conditional, then the same
prompt with the text embeddings zeroed), kept side by side in the slot: K/V are
[layers, slots, 2, heads, positions, head_dim], so the live slots form one dense [2n, ...] batch.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

import torch
from torch import nn

from tts_app.models.layers.blocks import DecoderStack, causal_mask
from tts_app.models.layers.cuda_graph import CallGraphs, Key, round_up
from tts_app.models.layers.host_output import HostOutput
from tts_app.models.layers.kv_cache import SlotHandle, SlotPool
from tts_app.models.layers.row_noise import row_key, row_uniform
from tts_app.models.chatterbox.config import ChatterboxSampling, T3Tokens
from tts_app.models.chatterbox.sampling import guided, next_tokens

logger = logging.getLogger(__name__)

ATTEND_STEP = 64  # attend over the cache in steps of this many positions (fewer distinct shapes)


@dataclass(eq=False)
class T3Row:
    """One request's generation state; its device-side rows live in its KV slot."""

    slot: SlotHandle
    params: ChatterboxSampling
    key: int  # row_key(seed): the row's draws are a function of it and the token's position
    start: int  # first valid cache index (left padding of the prefill batch)
    write_idx: int  # cache index of the next token
    max_new: int
    tokens: list[int] = field(default_factory=list)  # generated ids, EOS included when reached
    done: bool = False


class T3Prompt:
    """Builds a request's two prefill rows exactly as the official ``T3.inference`` lays them out."""

    def __init__(self, t3: nn.Module, tokens: T3Tokens) -> None:
        self.t3, self.tokens = t3, tokens

    @torch.inference_mode()
    def cond_embeds(self, t3_cond: Any) -> torch.Tensor:
        """Speaker, reference-prompt and emotion embeddings: [L_cond, D]. Copies the cond (the official call caches into it)."""
        fresh = dataclasses.replace(t3_cond, cond_prompt_speech_emb=None)
        return self.t3.prepare_conditioning(fresh)[0]

    @torch.inference_mode()
    def rows(self, cond_LcxD: torch.Tensor, text_ids: torch.Tensor, cfg_weight: float) -> torch.Tensor:
        """[2, L, D]: cond + [SOT] text [EOT] + two start-of-speech tokens (the official prefill repeats it)."""
        t3, tok = self.t3, self.tokens
        ids = torch.cat([torch.tensor([tok.start_text]), text_ids.long().reshape(-1), torch.tensor([tok.stop_text])])[None]
        ids = ids.to(cond_LcxD.device)
        text = t3.text_emb(ids)[0]  # [Lt, D]
        uncond_text = torch.zeros_like(text) if cfg_weight > 0 else text
        pos = t3.text_pos_emb(ids)  # [Lt, D]
        bos = t3.speech_emb(torch.tensor([tok.start_speech], device=ids.device)) + t3.speech_pos_emb.get_fixed_embedding(0)[0]
        tail = torch.cat([bos, bos])  # [2, D]
        return torch.stack([torch.cat([cond_LcxD, text + pos, tail]), torch.cat([cond_LcxD, uncond_text + pos, tail])])


# ChatterboxSampling field -> (slot buffer, dtype): the per-row settings the decode call reads.
PARAM_COLUMNS: dict[str, tuple[str, torch.dtype]] = {
    "cfg_weight": ("cfg", torch.float32), "repetition_penalty": ("rep", torch.float32),
    "temperature": ("temp", torch.float32), "min_p": ("min_p", torch.float32), "top_p": ("top_p", torch.float32),
}


class T3Generator:
    def __init__(self, t3: nn.Module, backbone: DecoderStack, tokens: T3Tokens, max_batch: int, max_seq_len: int,
                 use_cuda_graphs: Optional[bool] = None, fixed_shapes: Optional[bool] = None) -> None:
        """``use_cuda_graphs``: the Qwen3 generator's switch (None: on CUDA only). ``fixed_shapes`` (default: where
        graphs are on) runs the bucketed calls eagerly too, which is how CPU tests check them."""
        self.t3, self.backbone, self.tokens = t3, backbone, tokens
        p = t3.speech_head.weight
        self.device, self.dtype = p.device, p.dtype
        self.max_seq_len = max_seq_len
        attn = backbone.layers[0].self_attn
        L, H, Dh = len(backbone.layers), attn.kv_heads, attn.head_dim
        self.pool = SlotPool(max_batch)
        shape = (L, max_batch, 2, H, max_seq_len, Dh)
        self.k = self.pool.register(torch.zeros(shape, dtype=self.dtype, device=self.device), slot_dim=1)
        self.v = self.pool.register(torch.zeros(shape, dtype=self.dtype, device=self.device), slot_dim=1)
        V = tokens.speech_vocab

        def reg(shape: tuple[int, ...], dt: torch.dtype) -> torch.Tensor:
            return self.pool.register(torch.zeros(shape, dtype=dt, device=self.device))

        # Slot buffers: everything a decode call reads, moved with the row by compaction.
        self.pending = reg((max_batch,), torch.long)  # the last token, fed next
        self.seen = reg((max_batch, V), torch.bool)  # tokens so far (repetition penalty)
        self.key = reg((max_batch,), torch.long)  # row_key(seed)
        self.pos = reg((max_batch,), torch.long)  # tokens so far: the next token's position and noise counter
        self.write = reg((max_batch,), torch.long)  # cache index of the next token
        self.start = reg((max_batch,), torch.long)  # first valid cache index
        self.max_new = reg((max_batch,), torch.long)
        self.alive = reg((max_batch,), torch.bool)
        self.everything = reg((max_batch,), torch.bool)  # not valid_only: the whole vocabulary may be drawn
        self.params = {name: reg((max_batch,), dt) for name, dt in PARAM_COLUMNS.values()}
        self.requested = torch.zeros(max_batch, dtype=torch.bool, device=self.device)  # staged per call
        self._requested = np.zeros(max_batch, dtype=bool)
        ids = torch.arange(V, device=self.device)
        self.valid_V = (ids < tokens.codebook) | (ids == tokens.stop_speech)
        self.book0 = torch.zeros(1, dtype=torch.long, device=self.device)  # T3 has one stream: the noise's codebook field is 0
        self._host = HostOutput(self.device)
        if use_cuda_graphs is None:
            use_cuda_graphs = self.device.type == "cuda"
        self.capturing = bool(use_cuda_graphs and torch.cuda.is_available() and self.device.type == "cuda")
        fixed = self.capturing if fixed_shapes is None else fixed_shapes or self.capturing
        self.graphs = CallGraphs(max_batch, max_seq_len, "the T3 call") if fixed else None  # the buckets (their graphs on CUDA)
        logger.info("T3 KV cache: %d slots x 2 x %d positions, %.1f MiB", max_batch, max_seq_len,
                    2 * self.k.numel() * self.k.element_size() / 2**20)

    @property
    def max_batch(self) -> int:
        return self.pool.capacity

    @property
    def free_slots(self) -> int:
        return self.pool.num_free

    def _kv(self, first: int, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per-layer (k, v) of slots first..first+count-1 as [2*count, H, S, Dh] views (pairs adjacent)."""
        shape = (2 * count,) + tuple(self.k.shape[3:])
        return [(self.k[i, first:first + count].view(shape), self.v[i, first:first + count].view(shape))
                for i in range(self.k.shape[0])]

    # ------------------------------------------------------------------ prefill
    @torch.inference_mode()
    def prefill(self, prompts: Sequence[torch.Tensor], params: Sequence[ChatterboxSampling], seeds: Sequence[int]) -> list[T3Row]:
        """Prefill B requests ([2, L_r, D] each, from ``T3Prompt.rows``) in one left-padded forward; sample each first token."""
        B = len(prompts)
        if B > self.pool.num_free:
            raise RuntimeError(f"{B} rows admitted but only {self.pool.num_free} of {self.max_batch} slots are free")
        lengths = [p.shape[1] for p in prompts]
        T = max(lengths)
        if T >= self.max_seq_len - 1:
            raise ValueError(f"a prompt of {T} positions does not fit T3's cache of {self.max_seq_len}")
        x_2BxTxD = torch.zeros(2 * B, T, prompts[0].shape[-1], dtype=self.dtype, device=self.device)
        for r, p in enumerate(prompts):
            x_2BxTxD[2 * r:2 * r + 2, T - p.shape[1]:] = p
        start_B = torch.tensor([T - n for n in lengths], device=self.device)
        start_2B = start_B.repeat_interleave(2)
        idx_2BxT = torch.arange(T, device=self.device)[None].expand(2 * B, T)
        handles = [self.pool.allocate() for _ in range(B)]
        s0 = handles[0].index  # live slots are dense: the new ones are s0..s0+B-1
        h_2BxTxD = self.backbone(x_2BxTxD, (idx_2BxT - start_2B[:, None]).clamp(min=0),
                                 causal_mask(idx_2BxT, T, start_2B), self._kv(s0, B), idx_2BxT)
        rows = [
            T3Row(slot=handles[r], params=params[r], key=row_key(int(seeds[r])),
                  start=T - lengths[r], write_idx=T, max_new=max(1, min(params[r].max_new_tokens, self.max_seq_len - 1 - T)))
            for r in range(B)
        ]
        sl = slice(s0, s0 + B)
        put = lambda values, dt=torch.long: torch.tensor(values, dtype=dt, device=self.device)  # noqa: E731
        self.key[sl] = put([r.key for r in rows])
        self.pos[sl] = 0
        self.write[sl] = T
        self.start[sl] = start_B
        self.max_new[sl] = put([r.max_new for r in rows])
        self.everything[sl] = put([not p.valid_only for p in params], torch.bool)
        for field_name, (name, dt) in PARAM_COLUMNS.items():
            self.params[name][sl] = put([float(getattr(p, field_name)) for p in params], dt)
        self.seen[sl] = False
        self.seen[sl, self.tokens.start_speech] = True  # the official penalty also sees the start token
        ids_B, alive_B = self._choose(sl, h_2BxTxD[:, -1], torch.ones(B, dtype=torch.bool, device=self.device))
        self.alive[sl] = alive_B
        self.pos[sl] = 1
        for r, t, a in zip(rows, ids_B.tolist(), alive_B.tolist()):
            r.tokens.append(t)
            r.done = not a
        return rows

    # ------------------------------------------------------------------ decode
    @torch.inference_mode()
    def decode(self, rows: Sequence[T3Row], n_tokens: int = 1) -> list[list[int]]:
        """Advance every unfinished row by up to ``n_tokens`` tokens; returns each row's new ids (EOS included)."""
        advancing = [r for r in rows if not r.done]
        if not advancing:
            return [[] for _ in rows]
        live = self.pool.num_live
        longest = max(r.write_idx for r in advancing) + n_tokens  # the call attends up to here
        if self.graphs is not None:
            key: Key = (self.graphs.batch_bucket(live), self.graphs.len_bucket(longest), n_tokens)
            if self.capturing and key not in self.graphs:
                self.capture(key)
        else:
            key = (live, min(round_up(longest, ATTEND_STEP), self.max_seq_len), n_tokens)
        self._requested[:] = False
        self._requested[[r.slot.index for r in advancing]] = True
        self.requested.copy_(torch.from_numpy(self._requested), non_blocking=True)
        out = self._host.fetch(self.graphs.replay(key) if self.capturing else self._decode_call(*key))
        n = n_tokens
        new: list[list[int]] = []
        for r in rows:
            if r.done:
                new.append([])
                continue
            i = r.slot.index
            ids = out[i, : int(out[i, n:2 * n].sum())].tolist()
            r.tokens.extend(ids)
            r.write_idx += len(ids)
            r.done = not out[i, -1]
            new.append(ids)
        return new

    @torch.inference_mode()
    def capture(self, key: Key) -> float:
        """Capture the decode call for ``key`` = (batch bucket, length bucket, tokens) with every row masked off."""
        if not self.capturing:
            raise RuntimeError("CUDA graphs are off for this generator")
        self.requested.zero_()
        return self.graphs.capture(key, lambda: self._decode_call(*key))

    @torch.inference_mode()
    def capture_all(self, n_tokens: int) -> float:
        """Capture every (batch bucket, length bucket) of ``n_tokens`` per call now; returns the seconds (0 without graphs)."""
        if not self.capturing:
            return 0.0
        keys = [(b, t, n_tokens) for b in self.graphs.batch_sizes for t in self.graphs.lengths]
        return sum(self.capture(k) for k in keys if k not in self.graphs)

    def release(self, row: T3Row) -> None:
        self.pool.free(row.slot)

    # ------------------------------------------------------------------ the device side
    def _decode_call(self, B: int, S: int, n: int) -> torch.Tensor:
        """``n`` token steps for slots 0..B-1 attending over cache[:S]; [B, 2n + 1] long: each step's token,
        whether the row took it, whether the row is alive after the call. Fixed shapes, device tensors only."""
        active_B = self.requested[:B] & self.alive[:B]
        ids, emitted = [], []
        for _ in range(n):
            emitted.append(active_B)
            ids_B, active_B = self._token_step(B, S, active_B)
            ids.append(ids_B)
        self.alive[:B] = torch.where(self.requested[:B], active_B, self.alive[:B])
        return torch.cat((torch.stack(ids, dim=1), torch.stack(emitted, dim=1).long(), active_B.long()[:, None]), dim=1)

    def _token_step(self, B: int, S: int, active_B: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t3 = self.t3
        x_BxD = t3.speech_emb(self.pending[:B]) + t3.speech_pos_emb.emb(self.pos[:B])  # token i sits at position i + 1
        # Rows not advancing write to the last cache index: a live row never attends it.
        write_2B = torch.where(active_B, self.write[:B], self.max_seq_len - 1).repeat_interleave(2)
        start_2B = self.start[:B].repeat_interleave(2)
        h_2BxD = self.backbone(
            x_BxD.repeat_interleave(2, dim=0)[:, None], (write_2B - start_2B)[:, None].clamp(min=0),
            causal_mask(write_2B[:, None], S, start_2B), self._kv(0, B), write_2B[:, None],
        )[:, 0]
        ids_B, still_B = self._choose(slice(0, B), h_2BxD, active_B)
        step_B = active_B.long()
        self.pos[:B] += step_B
        self.write[:B] += step_B
        return ids_B, still_B

    def _choose(self, rows: slice, h_2BxD: torch.Tensor, active_B: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The next token of the slots ``rows`` from their pairs of hidden states (h rows 2r, 2r + 1), drawn at
        position ``pos``; updates pending and seen of the active ones. Returns (ids [B], still alive after it [B])."""
        pr = {name: t[rows] for name, t in self.params.items()}
        pos_B = self.pos[rows]
        logits_BxV = guided(self.t3.speech_head(h_2BxD).float(), pr["cfg"])
        uniform_BxV = row_uniform(self.key[rows], pos_B, self.book0, logits_BxV.shape[-1])[:, 0]
        ids_B = next_tokens(logits_BxV, self.seen[rows], pr["rep"], pr["temp"], pr["min_p"], pr["top_p"], uniform_BxV,
                            self.valid_V | self.everything[rows][:, None])
        self.pending[rows] = torch.where(active_B, ids_B, self.pending[rows])
        hit_BxV = torch.zeros_like(self.seen[rows]).scatter_(1, ids_B[:, None], True)
        self.seen[rows] |= hit_BxV & active_B[:, None]
        still_B = active_B & (ids_B != self.tokens.stop_speech) & (pos_B + 1 < self.max_new[rows])
        return ids_B, still_B
