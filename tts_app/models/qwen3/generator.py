"""Batched continuous generation: batched prefill into a static KV cache, a hand-written decode loop,
dynamic compaction and slot refill.

One *frame step* advances every active row by one codec frame:
  1. the code predictor fills codebooks 1..G-1 of the pending frame (its own inner loop),
  2. the frame's embedding sum + the next text embedding goes through the talker (one cached token),
  3. codebook 0 of the next frame is sampled (per-row settings; EOS allowed after min_new_tokens).
A *decode call* (``_decode_call``) runs ``frames_per_step`` frame steps over device tensors only: every
per-row input lives in the slot buffers (``SlotState``), randomness is counter-based on the device,
EOS and length end rows through masks, and the call returns one packed tensor. No host sync and no
data-dependent Python inside, so on CUDA one graph replays the whole call; the host stages one mask
before and copies one tensor after. Rows that end inside a call leave the batch (``release`` compacts
the cache) before the next one; new rows are prefilled into free slots at any time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch

from tts_app.models.layers.blocks import causal_mask
from tts_app.models.layers.kv_cache import SlotHandle, SlotPool, StaticKVCache
from tts_app.models.layers.row_noise import row_key, row_uniform
from tts_app.models.layers.cuda_graph import CallGraphs, Key, round_up
from tts_app.models.layers.host_output import HostOutput
from tts_app.models.qwen3.sampling import SamplingParams, sample_tokens
from tts_app.models.qwen3.slot_state import SlotState
from tts_app.models.qwen3.talker import Talker

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class RowState:
    """The host's view of one request; its device-side rows live in its KV slot (``SlotState``)."""

    slot: SlotHandle
    params: SamplingParams
    key: int  # row_key(seed): the row's random numbers are a function of it and the draw's position
    start: int  # first valid cache index (left padding of the prefill batch)
    write_idx: int  # cache index of the next talker token (mirrors the device counter)
    max_frames: int
    frames: int = 0
    done: bool = False
    # Emitted frames, each [n, G] int64 on the host. numpy, not torch: handing a row its frames then costs
    # no torch op per row, so a decode call's dispatched ops do not grow with the batch.
    codes: list[np.ndarray] = field(default_factory=list)
    aligner: Any = None  # tts_app.captions.WordAligner: word timings from the audio (the model gives none), or None

    def all_codes(self) -> torch.Tensor:
        """Every frame emitted so far, [frames, G] int64."""
        G = self.codes[0].shape[1] if self.codes else 0
        return torch.from_numpy(np.concatenate(self.codes)) if self.codes else torch.zeros(0, G, dtype=torch.long)


class BatchedGenerator:
    def __init__(
        self,
        talker: Talker,
        tts_pad_id: int,
        max_batch: int = 16,
        max_seq_len: int = 2048,
        frames_per_step: int = 4,
        use_cuda_graphs: Optional[bool] = None,
    ) -> None:
        self.talker = talker
        p = talker.codec_head.weight
        self.device, self.dtype = p.device, p.dtype
        self.tts_pad_id = tts_pad_id
        self.frames_per_step = frames_per_step
        self.G = talker.cfg.num_code_groups
        self.V = talker.num_valid_tokens
        self.eos_index = self.V - 1
        self.max_seq_len = max_seq_len
        cfg = talker.cfg
        self.pool = SlotPool(max_batch)
        self.kv = StaticKVCache(
            self.pool, cfg.num_hidden_layers, cfg.num_key_value_heads, max_seq_len, cfg.head_dim, self.dtype, self.device
        )
        self.slots = SlotState(self.pool, cfg.hidden_size, self.V, max_seq_len, self.device, self.dtype)
        # Codebook 0 is drawn by the talker, 1..G-1 by the code predictor: the noise counter's codebook field.
        self.book0 = torch.zeros(1, dtype=torch.long, device=self.device)
        self.cp_books = torch.arange(1, self.G, dtype=torch.long, device=self.device)
        self._requested = np.zeros(max_batch, dtype=bool)  # host side of slots.requested
        self._host = HostOutput(self.device)
        if use_cuda_graphs is None:
            use_cuda_graphs = self.device.type == "cuda"
        self.graphs: Optional[CallGraphs] = None
        if use_cuda_graphs and torch.cuda.is_available() and self.device.type == "cuda":
            self.graphs = CallGraphs(max_batch, max_seq_len)

    @property
    def max_batch(self) -> int:
        return self.pool.capacity

    @property
    def free_slots(self) -> int:
        return self.pool.num_free

    # ------------------------------------------------------------------ prefill
    @torch.inference_mode()
    def prefill(
        self,
        prompts: list[torch.Tensor],
        trailing_ids: list[list[int]],
        params: list[SamplingParams],
        seeds: list[int],
    ) -> list[RowState]:
        """Prefill B prompts ([T_r, D] each) in one left-padded forward into fresh slots."""
        B = len(prompts)
        if B > self.pool.num_free:
            raise RuntimeError(f"{B} rows admitted but only {self.pool.num_free} of {self.max_batch} slots are free")
        lengths = [p.shape[0] for p in prompts]
        T = max(lengths)
        if T >= self.max_seq_len:
            raise ValueError(f"prompt of {T} positions does not fit a cache of {self.max_seq_len}")
        x_BxTxD = torch.zeros(B, T, prompts[0].shape[-1], dtype=self.dtype, device=self.device)
        for r, p in enumerate(prompts):
            x_BxTxD[r, T - p.shape[0]:] = p
        start_B = torch.tensor([T - n for n in lengths], device=self.device)
        idx_BxT = torch.arange(T, device=self.device)[None].expand(B, T)
        positions_BxT = (idx_BxT - start_B[:, None]).clamp(min=0)  # rope offset per row
        handles = [self.pool.allocate() for _ in range(B)]
        s0 = handles[0].index  # live slots are dense, so the new ones are s0..s0+B-1
        h_BxTxD = self.talker.model(
            x_BxTxD, positions_BxT, causal_mask(idx_BxT, T, start_B), self.kv.layers(s0, B), idx_BxT
        )
        h_BxD = h_BxTxD[:, -1]
        rows, st = slice(s0, s0 + B), self.slots
        keys = [row_key(int(s)) for s in seeds]
        max_frames = [min(p.max_new_tokens, self.max_seq_len - T) for p in params]
        st.key[rows] = torch.tensor(keys, dtype=torch.long, device=self.device)
        st.frame[rows] = 0
        st.write[rows] = T
        st.start[rows] = start_B
        st.max_frames[rows] = torch.tensor(max_frames, dtype=torch.long, device=self.device)
        st.write_params(rows, params)
        st.write_text(rows, trailing_ids, self.tts_pad_id)
        st.seen[rows] = False
        pr = {name: t[rows] for name, t in st.params.items()}
        # The first token is codebook 0 of frame 0.
        noise_BxV = row_uniform(st.key[rows], st.frame[rows], self.book0, self.V)[:, 0]
        idx_B = sample_tokens(
            self.talker.valid_logits(h_BxD), pr["temp"], pr["top_k"], pr["top_p"], noise_BxV, pr["rep"], st.seen[rows],
            self._eos_ban(0 < pr["min_new"]),
        )
        st.hidden[rows] = h_BxD
        st.pending[rows] = idx_B
        st.seen[rows] |= self._one_hot(idx_B)
        alive_B = (idx_B != self.eos_index) & (st.max_frames[rows] > 0)
        st.alive[rows] = alive_B
        alive = alive_B.tolist()
        return [
            RowState(slot=handles[r], params=params[r], key=keys[r], start=T - lengths[r], write_idx=T,
                     max_frames=max_frames[r], done=not alive[r])
            for r in range(B)
        ]

    # ------------------------------------------------------------------ decode
    @torch.inference_mode()
    def decode(self, states: list[RowState], n_frames: Optional[int] = None) -> list[np.ndarray]:
        """Advance every unfinished row by up to ``n_frames`` frames; returns each row's new frames [n_r, G] (host)."""
        n = n_frames or self.frames_per_step
        G = self.G
        empty = np.zeros((0, G), dtype=np.int64)
        advancing = [s for s in states if not s.done]
        if not advancing:
            return [empty for _ in states]
        live = self.pool.num_live
        longest = max(s.write_idx for s in advancing) + n
        if self.graphs is not None:
            key: Key = (self.graphs.batch_bucket(live), self.graphs.len_bucket(longest), n)
            if key not in self.graphs:
                self.capture(key)
        else:
            key = (live, min(round_up(longest, 64), self.max_seq_len), n)

        self._requested[:] = False
        self._requested[[s.slot.index for s in advancing]] = True
        self.slots.requested.copy_(torch.from_numpy(self._requested), non_blocking=True)
        out_BxW = self.graphs.replay(key) if self.graphs is not None else self._decode_call(*key)
        out = self._host.fetch(out_BxW)  # the single sync of the call

        codes_BxNxG = out[:, : n * G].reshape(-1, n, G)
        emitted_B = out[:, n * G: n * G + n].sum(axis=1)
        alive_B = out[:, -1]
        result = []
        for s in states:
            if s.done:
                result.append(empty)
                continue
            i = s.slot.index
            k = int(emitted_B[i])
            new = codes_BxNxG[i, :k].copy()  # a copy: the host buffer is reused
            s.frames += k
            s.write_idx += k
            s.done = not alive_B[i]
            s.codes.append(new)
            result.append(new)
        return result

    @torch.inference_mode()  # as decode: the call writes slot buffers that inference-mode prefills wrote
    def capture(self, key: Key) -> float:
        """Capture the decode call for ``key`` = (batch bucket, length bucket, frames) with every row masked
        off (no request state changes); returns the seconds it took. CUDA graphs only."""
        if self.graphs is None:
            raise RuntimeError("CUDA graphs are off for this generator")
        self.slots.requested.zero_()
        return self.graphs.capture(key, lambda: self._decode_call(*key))

    @torch.inference_mode()
    def capture_all(self) -> float:
        """Capture every (batch bucket, length bucket) of ``frames_per_step`` frames now, so no request ever
        waits on a capture; returns the seconds taken (0 without CUDA graphs). Call with no request running."""
        if self.graphs is None:
            return 0.0
        keys = [(b, t, self.frames_per_step) for b in self.graphs.batch_sizes for t in self.graphs.lengths]
        seconds = sum(self.capture(k) for k in keys if k not in self.graphs)
        logger.info("captured %d decode-call graphs in %.1f s", len(keys), seconds)
        return seconds

    def release(self, state: RowState) -> None:
        self.pool.free(state.slot)

    # ------------------------------------------------------------------ the device side
    def _decode_call(self, B: int, T: int, n: int) -> torch.Tensor:
        """``n`` frame steps for slots 0..B-1 attending over cache[:T]. Fixed shapes, device tensors only.

        Returns [B, n*G + n + 1] long: each frame's codes, whether the row emitted that frame, and
        whether the row is still alive after the call.
        """
        st = self.slots
        active_B = st.requested[:B] & st.alive[:B]
        codes, emitted = [], []
        for _ in range(n):
            emitted.append(active_B)
            codes_BxG, active_B = self._frame_step(B, T, active_B)
            codes.append(codes_BxG)
        st.alive[:B] = torch.where(st.requested[:B], active_B, st.alive[:B])
        return torch.cat(
            (torch.stack(codes, dim=1).flatten(1), torch.stack(emitted, dim=1).long(), active_B.long()[:, None]), dim=1
        )

    def _frame_step(self, B: int, T: int, active_B: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One frame for the active rows among slots 0..B-1; returns (codes [B, G], still active [B])."""
        talker, st = self.talker, self.slots
        pr = {name: t[:B] for name, t in st.params.items()}
        hidden_BxD, pending_B, seen_BxV = st.hidden[:B], st.pending[:B], st.seen[:B]
        frame_B, key_B, start_B = st.frame[:B], st.key[:B], st.start[:B]
        code0_B = talker.index_to_token(pending_B)
        code0_emb = talker.model.codec_embedding(code0_B)
        # This step fills codebooks 1..G-1 of frame f and draws codebook 0 of frame f + 1.
        cp_noise_BxGm1xV = row_uniform(key_B, frame_B, self.cp_books, talker.code_predictor.cfg.vocab_size)
        rest_BxGm1 = talker.code_predictor.predict(
            hidden_BxD, code0_emb, pr["cp_temp"], pr["cp_top_k"], pr["cp_top_p"], cp_noise_BxGm1xV
        )
        codes_BxG = torch.cat((code0_B[:, None], rest_BxGm1), dim=1)
        text_B = st.text_at(B, frame_B, self.tts_pad_id)
        x_BxD = code0_emb + talker.code_predictor.embed_residual_codes(rest_BxGm1) + talker.text_hidden(text_B)
        # Rows not advancing write to the last cache index: every live row writes a position before
        # it reads it, so that scratch write is never attended.
        write_Bx1 = torch.where(active_B, st.write[:B], self.max_seq_len - 1)[:, None]
        h_BxD = talker.model(
            x_BxD[:, None], write_Bx1 - start_B[:, None], causal_mask(write_Bx1, T, start_B), self.kv.layers(0, B), write_Bx1,
        )[:, 0]
        idx_B = sample_tokens(
            talker.valid_logits(h_BxD), pr["temp"], pr["top_k"], pr["top_p"],
            row_uniform(key_B, frame_B + 1, self.book0, self.V)[:, 0], pr["rep"], seen_BxV,
            self._eos_ban(frame_B + 1 < pr["min_new"]),
        )
        # Inactive rows (finished, or not in this call) keep their state untouched.
        hidden_BxD.copy_(torch.where(active_B[:, None], h_BxD, hidden_BxD))
        pending_B.copy_(torch.where(active_B, idx_B, pending_B))
        seen_BxV |= self._one_hot(idx_B) & active_B[:, None]
        still_B = active_B & (idx_B != self.eos_index) & (frame_B + 1 < st.max_frames[:B])
        step_B = active_B.long()
        frame_B += step_B
        st.write[:B] += step_B
        return codes_BxG, still_B

    # ------------------------------------------------------------------ helpers
    def _one_hot(self, idx_B: torch.Tensor) -> torch.Tensor:
        # scatter rather than F.one_hot, which may check its input on the host (a sync inside a graph).
        return torch.zeros(idx_B.shape[0], self.V, dtype=torch.bool, device=idx_B.device).scatter_(1, idx_B[:, None], True)

    def _eos_ban(self, ban_B: torch.Tensor) -> torch.Tensor:
        """[B, V] bool: EOS banned on the rows of ``ban_B`` (before min_new_tokens)."""
        is_eos_V = torch.arange(self.V, device=ban_B.device) == self.eos_index
        return ban_B[:, None] & is_eos_V
