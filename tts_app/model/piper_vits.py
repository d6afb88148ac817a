"""Piper's VITS voice as two batched stages: text stage (ids -> latents) and decoder (latents -> audio)."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import onnxruntime as ort

from ..config import VoiceModelConfig
from .graph_split import DP_NOISE, FLOW_INPUTS, FLOW_OUTPUT, StageGraphs, split_piper_graph

_LOGGER = logging.getLogger(__name__)
LATENT_CHANNELS = 192
ID_BUCKET = 16  # phoneme-id rows are padded to a multiple of this (see text_to_latents)


def _bucket(n_ids: int) -> int:
    return -(-n_ids // ID_BUCKET) * ID_BUCKET


@dataclass
class LatentRequest:
    """One row of the text stage: phoneme ids and the row's own noise source."""

    ids: Sequence[int]
    rng: np.random.Generator  # draws this row's noise, so a row never depends on its batch mates
    length_scale: float = 1.0
    noise_scale: float = 0.667
    noise_w: float = 0.8


def _session(model: bytes, providers: list[str], threads: int, optimize: bool = True) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # No arena: a batch-16 step peaks near 0.5 GB of activations, and an arena would
    # keep that peak for the life of the process; malloc gives it back.
    options.enable_cpu_mem_arena = False
    if threads > 1:
        # Spinning intra-op threads would keep a core busy after a wide run and slow the
        # one-thread shards that follow it.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, options, providers=providers)


def _providers() -> list[str]:
    available = ort.get_available_providers()
    return ["CUDAExecutionProvider", "CPUExecutionProvider"] if "CUDAExecutionProvider" in available else ["CPUExecutionProvider"]


class PiperVits:
    """The model: no text, no queues; phoneme ids in, latents and audio out.

    ``workers`` CPU threads run shards of a batch concurrently, each with one
    intra-op thread: on small convolutions that scales better than one call
    split across cores by onnxruntime. A stage with a single task left runs it
    on a session with ``workers`` intra-op threads instead.
    """

    def __init__(self, graphs: StageGraphs, config: VoiceModelConfig, workers: int = 2, cpu_decode_rows: int = 1) -> None:
        self.config = config
        self.cpu_decode_rows = max(1, cpu_decode_rows)
        self.hop = config.hop_length
        self.workers = max(1, workers)
        providers = _providers()
        self.device = "cuda" if providers[0].startswith("CUDA") else "cpu"
        # Graph fusions make the encoder's rounding depend on the batch size, and so do
        # several intra-op threads; unfused and on one thread, a row computes the same
        # floats alone or batched (and measured no slower unfused here).
        self._encoder = _session(graphs.encoder, providers, threads=1, optimize=False)
        # Flow and decoder each get a one-thread session for shards that run side by side
        # and a wide one for a lone task, so one request still uses every core. Both give
        # bit-identical output (measured), unlike the encoder.
        self._flow = self._narrow_and_wide(graphs.flow, providers)
        self._decoder = self._narrow_and_wide(graphs.decoder, providers)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="vits") if self.workers > 1 else None
        _LOGGER.info("loaded Piper VITS on %s with %d worker(s)", self.device, self.workers)

    def _narrow_and_wide(self, model: bytes, providers: list[str]) -> tuple[ort.InferenceSession, ort.InferenceSession]:
        """(one-thread session, all-core session); the same session where a second would add nothing."""
        narrow = _session(model, providers, 1)
        if self.device != "cpu" or self.workers == 1:
            return narrow, narrow
        return narrow, _session(model, providers, self.workers)

    @classmethod
    def load(cls, model_path: str, config_path: str, workers: int = 2) -> "PiperVits":
        return cls(split_piper_graph(model_path), VoiceModelConfig.from_file(config_path), workers)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    # -- batching helpers ---------------------------------------------------
    def _run_tasks(self, tasks: list) -> list:
        """Run callables ``task(wide)``: a lone task on the wide sessions, several side by side."""
        if len(tasks) == 1:
            return [tasks[0](True)]
        if self._pool is None:
            return [t(False) for t in tasks]
        return list(self._pool.map(lambda t: t(False), tasks))

    def _shards(self, idx: list[int], cpu_rows_per_call: int | None = None) -> list[list[int]]:
        """Split row indices into contiguous calls: one call on GPU; on CPU, calls of at most
        ``cpu_rows_per_call`` rows (default: one call per worker)."""
        if self.device != "cpu" or not idx:
            return [idx] if idx else []
        size = cpu_rows_per_call or -(-len(idx) // self.workers)
        return [idx[a : a + size] for a in range(0, len(idx), size)]

    # -- text stage -----------------------------------------------------------
    def text_to_latents(self, rows: Sequence[LatentRequest]) -> list[np.ndarray]:
        """Ragged batch of phoneme-id rows -> one latent array z [192, T_i] per row.

        Rows are padded to a multiple of ``ID_BUCKET`` ids and grouped by that
        padded length: the encoder's attention sums over the padded axis, and
        float sums over a different length round differently, so a row always
        runs at its own bucket length, alone or batched, and equals its solo run.
        """
        # Noise is drawn up front, in row order, so the draw never depends on grouping.
        dp_noise = [r.rng.standard_normal((2, len(r.ids))).astype(np.float32) * r.noise_w for r in rows]
        groups: dict[int, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(_bucket(len(r.ids)), []).append(i)
        tasks = [
            (lambda wide, n=n, s=shard: (s, self._text_shard([rows[i] for i in s], [dp_noise[i] for i in s], n, wide)))
            for n, idx in groups.items()
            for shard in self._shards(idx)
        ]
        out: list[np.ndarray] = [np.empty(0)] * len(rows)
        for shard, latents in self._run_tasks(tasks):
            for i, z in zip(shard, latents):
                out[i] = z
        return out

    def _text_shard(self, rows: Sequence[LatentRequest], dp_noise: Sequence[np.ndarray], N: int, wide: bool) -> list[np.ndarray]:
        n_ids = [len(r.ids) for r in rows]
        B = len(rows)
        ids_BxN = np.zeros((B, N), np.int64)  # 0 is the pad id; masks keep it out of every row
        noise_Bx2xN = np.zeros((B, 2, N), np.float32)
        for b, r in enumerate(rows):
            ids_BxN[b, : n_ids[b]] = r.ids
            noise_Bx2xN[b, :, : n_ids[b]] = dp_noise[b]
        # Scales stay neutral inside the graph; each row's own scales are applied below.
        logw_Bx1xN, m_BxCxN, logs_BxCxN, _ = self._encoder.run(
            None,
            {"input": ids_BxN, "input_lengths": np.asarray(n_ids, np.int64), "scales": np.ones(3, np.float32), DP_NOISE: noise_Bx2xN},
        )
        priors = []
        for b, r in enumerate(rows):
            n = n_ids[b]
            durations = np.ceil(np.exp(logw_Bx1xN[b, 0, :n]) * r.length_scale).astype(np.int64)
            m_CxT = np.repeat(m_BxCxN[b, :, :n], durations, axis=1)
            logs_CxT = np.repeat(logs_BxCxN[b, :, :n], durations, axis=1)
            if m_CxT.shape[1] == 0:  # the model's own clamp: at least one frame
                m_CxT = logs_CxT = np.zeros((LATENT_CHANNELS, 1), np.float32)
            eps_CxT = r.rng.standard_normal(m_CxT.shape).astype(np.float32)
            priors.append(m_CxT + eps_CxT * np.exp(logs_CxT) * r.noise_scale)
        T = max(p.shape[1] for p in priors)
        z_p_BxCxT = np.zeros((B, LATENT_CHANNELS, T), np.float32)
        y_mask_Bx1xT = np.zeros((B, 1, T), np.float32)
        for b, p in enumerate(priors):
            z_p_BxCxT[b, :, : p.shape[1]] = p
            y_mask_Bx1xT[b, 0, : p.shape[1]] = 1.0
        (z_BxCxT,) = self._flow[wide].run(None, {FLOW_INPUTS[0]: z_p_BxCxT, FLOW_INPUTS[1]: y_mask_Bx1xT})
        return [z_BxCxT[b, :, : p.shape[1]].copy() for b, p in enumerate(priors)]

    # -- decoder --------------------------------------------------------------
    def decode(self, z_BxCxT: np.ndarray) -> np.ndarray:
        """Latents [B, 192, T] (equal T, no padding) -> audio [B, T * hop]."""
        return self.decode_groups([z_BxCxT])[0]

    def decode_groups(self, groups: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Several batches of different T at once: [B_g, 192, T_g] -> [B_g, T_g * hop] each.

        Every group's shards go to the workers together, so two short groups
        use both cores instead of running one after the other.
        """
        groups = [np.ascontiguousarray(z, dtype=np.float32) for z in groups]
        # On CPU a batched call saves nothing per row and larger calls fall out of
        # cache, so rows go to the workers in small calls.
        shards = [(g, s) for g, z in enumerate(groups) for s in self._shards(list(range(z.shape[0])), self.cpu_decode_rows)]
        tasks = [(lambda wide, g=g, s=s: self._decoder[wide].run(None, {FLOW_OUTPUT: groups[g][s[0] : s[-1] + 1]})[0]) for g, s in shards]
        parts: list[list[np.ndarray]] = [[] for _ in groups]
        for (g, _), y in zip(shards, self._run_tasks(tasks)):
            parts[g].append(y)
        return [np.concatenate(p, axis=0)[:, 0, :] for p in parts]
