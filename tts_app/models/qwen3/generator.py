"""Batched continuous generation: batched prefill into a static KV cache, a hand-written decode loop,
dynamic compaction and slot refill.

One *frame step* advances every active row by one codec frame:
  1. the code predictor fills codebooks 1..G-1 of the pending frame (its own inner loop),
  2. the frame's embedding sum + the next text embedding goes through the talker (one cached token),
  3. codebook 0 of the next frame is sampled (per-row settings; EOS allowed after min_new_tokens).
``decode`` runs ``frames_per_step`` frame steps with a single host sync at the end. Rows that end
inside a call are masked on the device and leave the batch (``release`` compacts the cache) before
the next one; new rows are prefilled into free slots at any time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

from tts_app.models.qwen3.cuda_graph import StepGraphs, round_up
from tts_app.models.layers.kv_cache import SlotHandle, SlotPool, StaticKVCache
from tts_app.models.layers.blocks import causal_mask
from tts_app.models.qwen3.sampling import SamplingParams, draw_noise, sample_tokens
from tts_app.models.qwen3.talker import Talker

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class RowState:
    """Everything one request needs between steps; the device-side rows live in its KV slot."""

    slot: SlotHandle
    params: SamplingParams
    generator: torch.Generator
    trailing_ids: list[int]  # text ids still to feed, one per frame; tts_pad after them
    pad_id: int
    start: int  # first valid cache index (left padding of the prefill batch)
    write_idx: int  # cache index of the next talker token
    max_frames: int
    frames: int = 0
    done: bool = False
    codes: list[torch.Tensor] = field(default_factory=list)  # emitted frames, each [n, G]
    aligner: Any = None  # tts_app.captions.WordAligner: word timings from the audio (the model gives none), or None

    def text_id(self, frame: int) -> int:
        return self.trailing_ids[frame] if frame < len(self.trailing_ids) else self.pad_id


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
        # Per-slot device rows: the talker state a frame step starts from.
        self.hidden = self.pool.register(torch.zeros(max_batch, cfg.hidden_size, dtype=self.dtype, device=self.device))
        self.pending = self.pool.register(torch.zeros(max_batch, dtype=torch.long, device=self.device))
        self.seen = self.pool.register(torch.zeros(max_batch, self.V, dtype=torch.bool, device=self.device))
        if use_cuda_graphs is None:
            use_cuda_graphs = self.device.type == "cuda"
        self.graphs: Optional[StepGraphs] = None
        if use_cuda_graphs and torch.cuda.is_available() and self.device.type == "cuda":
            self.graphs = StepGraphs(self._frame_step, max_batch, max_seq_len)

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
        gens = [torch.Generator(device=self.device).manual_seed(int(s)) for s in seeds]
        noise = draw_noise(gens, (self.V,), torch.empty(B, self.V, device=self.device))
        rows = slice(s0, s0 + B)
        self.seen[rows] = False
        banned = self._eos_ban(torch.tensor([0 < p.min_new_tokens for p in params], device=self.device))
        t = self._param_tensors(params)
        idx_B = sample_tokens(
            self.talker.valid_logits(h_BxD), t["temp"], t["top_k"], t["top_p"], noise, t["rep"], self.seen[rows], banned
        )
        self.hidden[rows] = h_BxD
        self.pending[rows] = idx_B
        self.seen[rows] |= self._one_hot(idx_B)
        first_is_eos = (idx_B == self.eos_index).tolist()
        states = []
        for r in range(B):
            max_frames = min(params[r].max_new_tokens, self.max_seq_len - T)
            states.append(RowState(
                slot=handles[r], params=params[r], generator=gens[r], trailing_ids=trailing_ids[r],
                pad_id=self.tts_pad_id, start=T - lengths[r], write_idx=T, max_frames=max_frames,
                done=bool(first_is_eos[r]) or max_frames <= 0,
            ))
        return states

    # ------------------------------------------------------------------ decode
    @torch.inference_mode()
    def decode(self, states: list[RowState], n_frames: Optional[int] = None) -> list[torch.Tensor]:
        """Advance every unfinished row by up to ``n_frames`` frames; returns each row's new frames [n_r, G]."""
        n = n_frames or self.frames_per_step
        live = self.pool.num_live
        B = live if self.graphs is None else self.graphs.batch_bucket(live)
        by_slot = {s.slot.index: s for s in states if not s.done}
        empty = torch.zeros(0, self.G, dtype=torch.long, device=self.device)
        if not by_slot:
            return [empty for _ in states]
        longest = max(s.write_idx for s in by_slot.values()) + n
        T = self.graphs.len_bucket(longest) if self.graphs else min(round_up(longest, 64), self.max_seq_len)

        # Host-built inputs for all n frame steps, one transfer. Rows not advancing stay inactive.
        gens: list[Optional[torch.Generator]] = [None] * B
        text = torch.full((B, n), self.tts_pad_id, dtype=torch.long)
        frame0 = torch.zeros(B, dtype=torch.long)
        # Rows that do not advance write to the last cache index: every live row writes a position
        # before it reads it, so that scratch write is never attended.
        write0 = torch.full((B,), self.max_seq_len - 1, dtype=torch.long)
        start = torch.zeros(B, dtype=torch.long)
        max_frames = torch.zeros(B, dtype=torch.long)
        active = torch.zeros(B, dtype=torch.bool)
        params = [SamplingParams()] * B
        for i, s in by_slot.items():
            gens[i] = s.generator
            text[i] = torch.tensor([s.text_id(s.frames + j) for j in range(n)])
            frame0[i], write0[i], start[i], max_frames[i] = s.frames, s.write_idx, s.start, s.max_frames
            active[i] = True
            params[i] = s.params
        noise = draw_noise(gens, (n, self.G, self.V), torch.empty(B, n, self.G, self.V, device=self.device))
        inp = {k: v.to(self.device) for k, v in self._param_tensors(params, on_host=True).items()}
        inp.update(start=start.to(self.device), max_frames=max_frames.to(self.device))
        text, frame0, write0 = text.to(self.device), frame0.to(self.device), write0.to(self.device)
        alive = active.to(self.device)

        codes_steps, alive_steps = [], []
        for j in range(n):
            inp.update(text=text[:, j], frame=frame0 + j, write=(write0 + j).clamp(max=self.max_seq_len - 1),
                       active=alive, noise=noise[:, j])
            out = self.graphs.run(B, T, inp) if self.graphs else self._frame_step(inp, B, T)
            codes_steps.append(out["codes"].clone())
            alive_steps.append(alive)
            alive = out["alive"].clone()
        emitted = torch.stack(alive_steps, dim=1).cpu()  # [B, n]; the single sync of the call
        still_alive = alive.cpu()
        codes_BxNxG = torch.stack(codes_steps, dim=1)

        result = []
        for s in states:
            if s.done:
                result.append(empty)
                continue
            i = s.slot.index
            k = int(emitted[i].sum())
            new = codes_BxNxG[i, :k]
            s.frames += k
            s.write_idx += k
            s.done = not bool(still_alive[i])
            s.codes.append(new)
            result.append(new)
        return result

    def release(self, state: RowState) -> None:
        self.pool.free(state.slot)

    # ------------------------------------------------------------------ the frame step
    def _frame_step(self, inp: dict[str, torch.Tensor], B: int, T: int) -> dict[str, torch.Tensor]:
        """One frame for slots 0..B-1, attending over cache[:T]. Fixed shapes, no host syncs: CUDA-graph safe."""
        talker, G = self.talker, self.G
        active_B = inp["active"]
        hidden_BxD, pending_B, seen_BxV = self.hidden[:B], self.pending[:B], self.seen[:B]
        code0_B = talker.index_to_token(pending_B)
        code0_emb = talker.model.codec_embedding(code0_B)
        rest_BxGm1 = talker.code_predictor.predict(
            hidden_BxD, code0_emb, inp["cp_temp"], inp["cp_top_k"], inp["cp_top_p"], inp["noise"][:, : G - 1]
        )
        codes_BxG = torch.cat((code0_B[:, None], rest_BxGm1), dim=1)
        x_BxD = code0_emb + talker.code_predictor.embed_residual_codes(rest_BxGm1) + talker.text_hidden(inp["text"])
        write_Bx1 = inp["write"][:, None]
        h_BxD = talker.model(
            x_BxD[:, None], write_Bx1 - inp["start"][:, None], causal_mask(write_Bx1, T, inp["start"]),
            self.kv.layers(0, B), write_Bx1,
        )[:, 0]
        banned = self._eos_ban(inp["frame"] + 1 < inp["min_new"])
        idx_B = sample_tokens(
            talker.valid_logits(h_BxD), inp["temp"], inp["top_k"], inp["top_p"], inp["noise"][:, G - 1],
            inp["rep"], seen_BxV, banned,
        )
        # Inactive rows (finished, or not in this batch) keep their state untouched.
        hidden_BxD.copy_(torch.where(active_B[:, None], h_BxD, hidden_BxD))
        pending_B.copy_(torch.where(active_B, idx_B, pending_B))
        seen_BxV |= self._one_hot(idx_B) & active_B[:, None]
        alive_B = active_B & (idx_B != self.eos_index) & (inp["frame"] + 1 < inp["max_frames"])
        return {"codes": codes_BxG, "alive": alive_B}

    # ------------------------------------------------------------------ helpers
    def _one_hot(self, idx_B: torch.Tensor) -> torch.Tensor:
        # scatter rather than F.one_hot, which may check its input on the host (a sync inside a graph).
        return torch.zeros(idx_B.shape[0], self.V, dtype=torch.bool, device=idx_B.device).scatter_(1, idx_B[:, None], True)

    def _eos_ban(self, ban_B: torch.Tensor) -> torch.Tensor:
        banned = torch.zeros(ban_B.shape[0], self.V, dtype=torch.bool, device=ban_B.device)
        banned[:, self.eos_index] = ban_B
        return banned

    def _param_tensors(self, params: list[SamplingParams], on_host: bool = False) -> dict[str, torch.Tensor]:
        dev = "cpu" if on_host else self.device
        col: Callable[[str, torch.dtype], torch.Tensor] = lambda name, dt: torch.tensor(  # noqa: E731
            [getattr(p, name) for p in params], dtype=dt, device=dev
        )
        return {
            "temp": col("temperature", torch.float32), "top_k": col("top_k", torch.long),
            "top_p": col("top_p", torch.float32), "rep": col("repetition_penalty", torch.float32),
            "min_new": col("min_new_tokens", torch.long), "cp_temp": col("subtalker_temperature", torch.float32),
            "cp_top_k": col("subtalker_top_k", torch.long), "cp_top_p": col("subtalker_top_p", torch.float32),
        }
