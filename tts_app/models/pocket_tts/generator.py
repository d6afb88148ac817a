"""Batched Pocket TTS: ragged prefill of voice prompt + text into KV slots, a hand-written decode loop over
rows, per-row noise and end of speech, compaction and refill, Mimi decoded per row in streaming windows.

A row is one text chunk spoken from one voice state (the official code speaks every chunk from a fresh
copy of the voice state too). The prefill runs each row's text and, after it, the BOS latent's input (what the
official code feeds at its first step) through the flow LM in one pass, keeping the last layer's output at the
BOS position only: the first step finds its hidden state ready, so a row's first latent costs no flow-LM pass
of its own. Each step advances every live row by one latent:
  1. the previous latent goes through the flow LM (one cached token per row; none at a row's first step),
  2. the flow head turns the last hidden state and the row's own noise into the next latent,
  3. the EOS head decides per row: after the first 6 steps, the first step over the threshold starts a
     count of ``frames_after_eos`` more latents (the official rule), and the latent that ends it is dropped.
Rows only meet inside matrix products, so a row's latents do not depend on its neighbours; its noise comes
from its own generator (or is given, for parity with the official code).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from tts_app.models.layers.kv_cache import SlotHandle, SlotPool
from tts_app.models.pocket_tts.voice import VoiceState
from tts_app.models.pocket_tts.weights import LoadedPocket

MIN_FRAMES_BEFORE_EOS = 6  # the official _MIN_FRAMES_BEFORE_EOS
FADE_IN_S = 0.005  # the official 5 ms fade at the start of every chunk (a fresh decoder's first samples click)

NoiseFn = Callable[[int], torch.Tensor]  # step -> [latent_dim] noise (already scaled by sqrt(temp))


@dataclass(eq=False)
class Row:
    slot: SlotHandle  # flow-LM slot, freed by ``step`` when the row ends
    mimi_slot: SlotHandle  # decoder stream, freed by ``release`` once the caller has its audio
    max_frames: int
    frames_after_eos: int
    noise: NoiseFn
    step: int = 0
    eos_step: Optional[int] = None
    done: bool = False
    latents: list[torch.Tensor] = field(default_factory=list)  # emitted latents, each [latent_dim]
    decoded: int = 0  # latents already turned into audio
    audio_started: bool = False


def seeded_noise(seed: int, dim: int, temp: float) -> NoiseFn:
    """Noise from the row's own generator: the same seed gives the same speech, alone or in a batch."""
    gen = torch.Generator().manual_seed(seed)
    std = temp ** 0.5
    return lambda step: torch.randn(dim, generator=gen) * std


class PocketGenerator:
    def __init__(self, model: LoadedPocket, max_batch: int = 8, max_len: int = 1024, max_streams: int = 0) -> None:
        self.model = model
        self.flow, self.mimi = model.flow_lm, model.mimi
        self.device = model.device
        self.ldim = self.flow.ldim
        self.eos_threshold = model.config.eos_threshold
        self.pool = SlotPool(max_batch)
        self.kv = self.flow.new_cache(self.pool, max_len)
        self.dtype = self.flow.input_linear.weight.dtype
        self.last = self.pool.register(torch.zeros(max_batch, self.ldim, device=self.device, dtype=self.dtype))  # previous latent
        # The hidden state a row's next latent comes from, when the prefill computed it (the row's first step).
        hdim = self.flow.out_eos.in_features
        self.ready_h = self.pool.register(torch.zeros(max_batch, hdim, device=self.device, dtype=self.dtype))
        self.ready = self.pool.register(torch.zeros(max_batch, dtype=torch.bool, device=self.device))
        # Decoder streams outlive their rows' flow slots (a finished row's last latents still decode).
        self.mimi_pool = SlotPool(max_streams or 2 * max_batch)
        self.streams, self.window = self.mimi.new_state(self.mimi_pool.capacity)
        for t in self.streams.tensors:
            self.mimi_pool.register(t)
        self.mimi_pool.register(self.window.k, slot_dim=1)
        self.mimi_pool.register(self.window.v, slot_dim=1)
        self.mimi_pool.register(self.window.pos)
        self.mimi_pool.register(self.window.next_pos)
        self.rows: list[Row] = []  # rows still generating, any order
        self.fade = torch.linspace(0, 1, int(model.config.mimi.sample_rate * FADE_IN_S), device=self.device, dtype=self.dtype)

    @property
    def free_slots(self) -> int:
        return min(self.pool.num_free, self.mimi_pool.num_free)

    @torch.no_grad()
    def prefill(self, voices: list[VoiceState], ids: list[list[int]], max_frames: list[int],
                frames_after_eos: list[int], noise: list[NoiseFn]) -> list[Row]:
        """Put rows into free slots: each row's voice state is copied in, then its text tokens and the BOS latent's
        input run in one ragged call, which leaves each row's first hidden state ready for its first step."""
        if len(voices) > self.free_slots:
            raise RuntimeError(f"{len(voices)} rows asked, {self.free_slots} slots free")
        rows = []
        for voice, m, f, n in zip(voices, max_frames, frames_after_eos, noise):
            slot, stream = self.pool.allocate(), self.mimi_pool.allocate()
            i = slot.index
            for layer, (k, v) in enumerate(voice.kv):
                self.kv.k[layer, i, :, :voice.length] = k
                self.kv.v[layer, i, :, :voice.length] = v
            self.kv.lengths[i] = voice.length
            self.last[i] = 0
            self.streams.reset(stream.index)
            self.window.reset(stream.index)
            rows.append(Row(slot, stream, m, f, n))
        first = rows[0].slot.index  # allocate() hands out consecutive indices
        lens = torch.tensor([len(x) + 1 for x in ids], device=self.device)  # the text, then the BOS input
        tokens = torch.zeros(len(ids), int(lens.max()), dtype=torch.long, device=self.device)
        for b, x in enumerate(ids):
            tokens[b, :len(x)] = torch.tensor(x, dtype=torch.long)
        x_BxTxD = self.flow.conditioner(tokens)  # padding is never written nor attended to
        x_BxTxD[torch.arange(len(ids), device=self.device), lens - 1] = self.flow.bos_input()
        h = self.flow.hidden(x_BxTxD, self.kv.bind(first, lens), keep_B=lens - 1)[:, 0]  # [B, C]
        self.ready_h[first:first + len(rows)] = h
        self.ready[first:first + len(rows)] = True
        self.rows += rows
        return rows

    @torch.no_grad()
    def step(self, rows: Optional[list[Row]] = None) -> list[Row]:
        """One latent for each of ``rows`` (default: every generating row); returns the rows that finished (their
        flow slots are freed, their decoder streams kept until ``release``). The other live rows are computed
        alongside (the slots are dense) but write nothing and keep their state."""
        n = self.pool.num_live
        active = [r for r in (self.rows if rows is None else rows) if not r.done]
        if not n or not active:
            return []
        on = torch.zeros(n, dtype=torch.bool)
        noise = torch.zeros(n, self.ldim, dtype=self.dtype)
        for r in active:
            on[r.slot.index] = True
            noise[r.slot.index] = r.noise(r.step)
        on, noise = on.to(self.device), noise.to(self.device)
        ready = self.ready[:n]
        h = self.ready_h[:n]
        through = on & ~ready  # rows whose previous latent goes through the flow LM now
        if bool(through.any()):
            x = self.flow.latent_input(self.last[:n])
            h = torch.where(ready[:, None], h, self.flow.hidden(x, self.kv.bind(0, through.long()))[:, -1])
        latents, eos_logits = self.flow.head(h, noise)
        self.last[:n] = torch.where(on[:, None], latents, self.last[:n])
        self.ready[:n] &= ~on
        eos = (eos_logits > self.eos_threshold).tolist()
        finished = []
        for r in active:
            i = r.slot.index
            if eos[i] and r.eos_step is None and r.step >= MIN_FRAMES_BEFORE_EOS:
                r.eos_step = r.step
            if r.eos_step is not None and r.step >= r.eos_step + r.frames_after_eos:
                r.done = True
            else:
                r.latents.append(latents[i])
                r.done = r.step + 1 >= r.max_frames
            r.step += 1
            if r.done:
                finished.append(r)
        for r in finished:
            self.pool.free(r.slot)
        self.rows = [r for r in self.rows if not r.done]
        return finished

    @torch.no_grad()
    def decode(self, rows: list[Row], ends: Optional[list[int]] = None) -> list[torch.Tensor]:
        """Audio [samples] of the latents each row has not decoded yet (those before ``ends[i]`` when given: ``step``
        may be appending more meanwhile, in another thread), rows with the same count in one Mimi call; each row
        continues its own decoder stream."""
        out: dict[int, torch.Tensor] = {}
        groups: dict[int, list[Row]] = {}
        for i, r in enumerate(rows):
            count = (len(r.latents) if ends is None else ends[i]) - r.decoded
            groups.setdefault(count, []).append(r)
        for count, group in groups.items():
            if count == 0:
                out.update({id(r): torch.zeros(0, device=self.device) for r in group})
                continue
            lat = torch.stack([torch.stack(r.latents[r.decoded:r.decoded + count]) for r in group])
            lat = lat * self.flow.emb_std + self.flow.emb_mean
            idx = torch.tensor([r.mimi_slot.index for r in group], device=self.device)
            audio = self.mimi.decode(lat, idx, self.streams, self.window)
            for r, a in zip(group, audio):
                if not r.audio_started:
                    a = torch.cat([a[:self.fade.numel()] * self.fade[:a.numel()], a[self.fade.numel():]])
                    r.audio_started = True
                r.decoded += count
                out[id(r)] = a
        return [out[id(r)] for r in rows]

    def release(self, row: Row) -> None:
        """Free the row's slots (a cancelled row may still be generating); the last live slots move into them."""
        row.done = True
        self.pool.free(row.slot)
        self.mimi_pool.free(row.mimi_slot)
        self.rows = [r for r in self.rows if r is not row]
