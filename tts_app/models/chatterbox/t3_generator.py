"""T3's batched generation: ragged prefill into a static, slot-indexed KV cache, then a hand-written
decode loop in which every request advances by one speech token per call with its own guidance and
sampling settings. Finished rows leave at once (``release`` compacts the cache); new rows are prefilled
into free slots at any time.

Classifier-free guidance doubles each request into a pair of cache rows (conditional, then the same
prompt with the text embeddings zeroed), kept side by side in the slot: K/V are
[layers, slots, 2, heads, positions, head_dim], so the live slots form one dense [2n, ...] batch.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch import nn

from tts_app.models.layers.kv_cache import SlotHandle, SlotPool
from tts_app.models.layers.row_noise import row_key, row_uniform
from tts_app.models.layers.blocks import DecoderStack, causal_mask
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


class T3Generator:
    def __init__(self, t3: nn.Module, backbone: DecoderStack, tokens: T3Tokens, max_batch: int, max_seq_len: int) -> None:
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
        self.pending = self.pool.register(torch.zeros(max_batch, dtype=torch.long, device=self.device))
        self.seen = self.pool.register(torch.zeros(max_batch, V, dtype=torch.bool, device=self.device))
        ids = torch.arange(V, device=self.device)
        self.valid_V = (ids < tokens.codebook) | (ids == tokens.stop_speech)
        self.book0 = torch.zeros(1, dtype=torch.long, device=self.device)  # T3 has one stream: the noise's codebook field is 0
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
        start_2B = torch.tensor([T - n for n in lengths], device=self.device).repeat_interleave(2)
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
        self.seen[s0:s0 + B] = False
        self.seen[s0:s0 + B, self.tokens.start_speech] = True  # the official penalty also sees the start token
        self._sample(rows, h_2BxTxD[:, -1])
        return rows

    # ------------------------------------------------------------------ decode
    @torch.inference_mode()
    def decode(self, rows: Sequence[T3Row], n_tokens: int = 1) -> list[list[int]]:
        """Advance every unfinished row by up to ``n_tokens`` tokens; returns each row's new ids (EOS included)."""
        new: list[list[int]] = [[] for _ in rows]
        for _ in range(n_tokens):
            active = [(i, r) for i, r in enumerate(rows) if not r.done]
            if not active:
                break
            n = self.pool.num_live
            scratch = self.max_seq_len - 1  # rows not advancing write here: a live row never attends it
            write_n = torch.full((n,), scratch, dtype=torch.long)
            start_n = torch.zeros(n, dtype=torch.long)
            pos_n = torch.zeros(n, dtype=torch.long)
            for _, r in active:
                s = r.slot.index
                write_n[s], start_n[s], pos_n[s] = r.write_idx, r.start, len(r.tokens)
            t3 = self.t3
            x_nxD = t3.speech_emb(self.pending[:n]) + t3.speech_pos_emb.emb(pos_n.to(self.device))  # token i sits at position i + 1
            write_2n = write_n.repeat_interleave(2).to(self.device)
            start_2n = start_n.repeat_interleave(2).to(self.device)
            S = min(-(-(max(r.write_idx for _, r in active) + 1) // ATTEND_STEP) * ATTEND_STEP, self.max_seq_len)
            h_2nxD = self.backbone(
                x_nxD.repeat_interleave(2, dim=0)[:, None], (write_2n - start_2n)[:, None].clamp(min=0),
                causal_mask(write_2n[:, None], S, start_2n), self._kv(0, n), write_2n[:, None],
            )[:, 0]
            pairs = torch.tensor([j for _, r in active for j in (2 * r.slot.index, 2 * r.slot.index + 1)], device=self.device)
            self._sample([r for _, r in active], h_2nxD[pairs])
            for i, r in active:
                r.write_idx += 1
                new[i].append(r.tokens[-1])
        return new

    def release(self, row: T3Row) -> None:
        self.pool.free(row.slot)

    def _sample(self, rows: list[T3Row], h_2BxD: torch.Tensor) -> None:
        """Append each row's next token, chosen from its pair of hidden states (h rows 2r, 2r + 1)."""
        slot_idx = torch.tensor([r.slot.index for r in rows], device=self.device)
        col = lambda name: torch.tensor([float(getattr(r.params, name)) for r in rows], device=self.device)  # noqa: E731
        logits_BxV = guided(self.t3.speech_head(h_2BxD).float(), col("cfg_weight"))
        everything_B = torch.tensor([not r.params.valid_only for r in rows], device=self.device)
        key_B = torch.tensor([r.key for r in rows], device=self.device)
        position_B = torch.tensor([len(r.tokens) for r in rows], device=self.device)
        uniform_BxV = row_uniform(key_B, position_B, self.book0, logits_BxV.shape[-1])[:, 0]
        ids_B = next_tokens(logits_BxV, self.seen[slot_idx], col("repetition_penalty"), col("temperature"),
                            col("min_p"), col("top_p"), uniform_BxV, self.valid_V | everything_B[:, None])
        self.pending[slot_idx] = ids_B
        self.seen[slot_idx, ids_B] = True
        for r, t in zip(rows, ids_B.tolist()):
            r.tokens.append(t)
            r.done = t == self.tokens.stop_speech or len(r.tokens) >= r.max_new
