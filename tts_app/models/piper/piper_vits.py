"""Piper's VITS voice as two batched stages: text stage (ids -> latents) and decoder (latents -> audio)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from tts_app.models.piper.config import VoiceModelConfig
from tts_app.models.piper.calibrate import cached_choice, choice_key, measure_choice, save_choice
from tts_app.models.layers.blas_threads import one_blas_thread
from tts_app.models.piper.durations import phoneme_frames
from tts_app.models.piper.graph_split import DP_NOISE, FLOW_INPUTS, DecoderStageGraph, StageGraphs, split_piper_graph
from tts_app.models.piper.model_cache import ShapeLog, model_cache_dir
from tts_app.models.piper.precision import check_precision, decoder_kind
from tts_app.models.piper.runtime import SessionOptions, StageSession, open_session, pick_device, uses_openvino
from tts_app.models.piper.stream_decoder import MAX_CALL_FRAMES, SHAPE_STEP_FRAMES, DecoderStage, DecoderStream, StageBuffer, run_stage
from tts_app.models.piper.warm_up import normal_shape, warm_model
from tts_app.models.piper.windows import FIRST_WINDOW_FRAMES, WINDOW_FRAMES, plan_windows

_LOGGER = logging.getLogger(__name__)
LATENT_CHANNELS = 192
ID_BUCKET = 16  # phoneme-id rows are padded to a multiple of this (see text_to_latents)
FRAME_BUCKET = 32  # the flow's frame axis is padded to a multiple of this
# Latent frames on each side that one flow output frame depends on (4 couplings, each a WaveNet of 4
# convolutions of width 5): measured by tests/unit/model/test_model.py::test_flow_reach_is_measured.
FLOW_REACH = 32
SHAPE_LOG_NAME = "shapes.jsonl"


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def _power_of_two_parts(items: list[int]) -> list[list[int]]:
    """Split into runs of 16, 8, 4, 2, 1 (13 -> 8 + 4 + 1).

    OpenVINO prepares kernels per input shape (about 0.1 s for the encoder or flow on
    2 cores); batch sizes in {1, 2, 4, 8, 16} keep the shapes few enough to warm at load.
    Rows never depend on their batch mates, so the split changes no output.
    """
    parts, i = [], 0
    for size in (16, 8, 4, 2, 1):
        while len(items) - i >= size:
            parts.append(items[i : i + size])
            i += size
    return parts


@dataclass
class LatentRequest:
    """One row of the text stage: phoneme ids and the row's own noise source."""

    ids: Sequence[int]
    rng: np.random.Generator  # draws this row's noise, so a row never depends on its batch mates
    length_scale: float = 1.0
    noise_scale: float = 0.667
    noise_w: float = 0.8
    speed: float = 1.0  # divides the frame counts evenly (see durations.py)


class PiperVits:
    """The model: no text, no queues; phoneme ids in, latents and audio out.

    Each stage runs on one session that uses ``threads`` CPU threads per call
    (see runtime.py for why OpenVINO on CPU). Calls are made one after another
    from the caller's thread; every call already keeps every core busy.
    """

    def __init__(
        self,
        graphs: StageGraphs,
        config: VoiceModelConfig,
        threads: int = 2,
        cpu_decode_rows: int = 1,
        precision: str = "exact",
        cache_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.cpu_decode_rows = max(1, cpu_decode_rows)
        self.hop = config.hop_length
        self.threads = max(1, threads)
        self.device = pick_device()
        if self.device == "cpu":
            one_blas_thread()
        self.precision = check_precision(precision)
        self.cache_dir = cache_dir
        self.shape_log = ShapeLog(cache_dir / SHAPE_LOG_NAME if cache_dir is not None else None, accept=normal_shape)
        # The encoder's rounding must not depend on the batch: a 1e-5 change can flip
        # a ceil()'d duration and change the row's length. On CPU it runs on onnxruntime without an arena
        # or memory patterns: OpenVINO kept the buffers of its longest call and about 4 MB per new
        # (rows, ids) shape for the life of the process (a 4,000-digit ordinal's 800-id chunks: +177 MB;
        # issue 46, hole 4), where onnxruntime's one thread kept nothing and ran B=1 rows about as fast.
        encoder_options = replace(self._options("encoder"), runtime="onnxruntime")
        self._encoder = open_session(graphs.encoder, self.device, encoder_options, batch_invariant=True)
        self.decoder_kind = decoder_kind(self.precision) if uses_openvino(self.device) else "f32"
        # The flow runs a row per call (_flow_row), so bf16 keeps a row's latents independent of
        # its batch mates.
        self.flow_kind = self.decoder_kind
        self._flow = open_session(graphs.flow, self.device, self._options("flow", self.flow_kind))
        self.decoder_stages = self._open_decoder(graphs.decoder, self.decoder_kind)
        if self.precision == "fast" and self.decoder_kind == "f32":
            _LOGGER.warning("precision 'fast' needs OpenVINO on a CPU with bf16 instructions; running float32")
        self.decoder_runtimes = [type(st.session).__name__.strip("_").replace("Session", "") for st in self.decoder_stages]
        _LOGGER.info("loaded Piper VITS on %s with %d thread(s), decoder in %s on %s", self.device, self.threads, self.decoder_kind, self.decoder_runtimes)

    def _options(self, name: str, float_precision: str = "f32") -> SessionOptions:
        return SessionOptions(self.threads, float_precision, self.cache_dir, name, self.shape_log)

    def _open_decoder(self, graphs: Sequence[DecoderStageGraph], float_precision: str) -> list[DecoderStage]:
        stages, rate = [], 1  # rate: stage-input samples per latent frame
        for k, g in enumerate(graphs):
            session = open_session(g.model, self.device, self._options(f"dec{k}", float_precision))
            stages.append(DecoderStage(session, g.input_name, g.channels, g.up, g.left, g.right, SHAPE_STEP_FRAMES * rate, MAX_CALL_FRAMES * rate, g.mask_name))
            rate *= g.up
        if float_precision == "f32" and uses_openvino(self.device):
            stages = self._measured_runtimes(graphs, stages)
        return stages

    def _measured_runtimes(self, graphs: Sequence[DecoderStageGraph], stages: list[DecoderStage]) -> list[DecoderStage]:
        """Each float32 stage on the runtime that is faster on this CPU (calibrate.py)."""

        def ort(k: int) -> StageSession:
            return open_session(graphs[k].model, self.device, replace(self._options(f"dec{k}"), runtime="onnxruntime"))

        key = choice_key(self.threads)
        picks = cached_choice(self.cache_dir, key, len(stages))
        if picks is None:
            # The widest call, which every longer input is cut into.
            rng = np.random.default_rng(0)
            feeds = [st.feed(rng.standard_normal((1, st.channels, st.max_width)).astype(np.float32), [st.max_width]) for st in stages]
            openers = [{"openvino": lambda st=st: st.session, "onnxruntime": lambda k=k: ort(k)} for k, st in enumerate(stages)]
            picks, medians, sessions = measure_choice(openers, feeds)
            save_choice(self.cache_dir, key, picks, medians)
            return [replace(st, session=s) for st, s in zip(stages, sessions)]
        return [st if pick == "openvino" else replace(st, session=ort(k)) for k, (st, pick) in enumerate(zip(stages, picks))]

    def warm_up(self) -> None:
        """Prepare kernels for the shapes the engine will meet (warm_up.py), after one
        typical utterance through every stage."""
        rng = np.random.default_rng(0)
        self.shape_log.counting = False  # stand-in runs: not what traffic met
        try:
            self.text_to_latents([LatentRequest(ids=list(range(1, 100)), rng=rng)])
            z_CxT = rng.standard_normal((LATENT_CHANNELS, FIRST_WINDOW_FRAMES + 2 * WINDOW_FRAMES)).astype(np.float32)
            stream = self.new_decoder_stream()
            for w in plan_windows(z_CxT.shape[1]):
                self.decode_stream([stream], [z_CxT[:, w.start : w.end]], [w.last])
            warm_model(self)
        finally:
            self.shape_log.counting = True

    # The stage sessions and input names, for warm-up's stand-in calls.
    dp_noise_name = DP_NOISE
    flow_input_names = FLOW_INPUTS
    frame_bucket = FRAME_BUCKET
    latent_channels = LATENT_CHANNELS

    @property
    def encoder_session(self) -> StageSession:
        return self._encoder

    @property
    def flow_session(self) -> StageSession:
        return self._flow

    @classmethod
    def load(cls, model_path: str, config_path: str, threads: int = 2, precision: str = "exact", use_cache: bool = True) -> "PiperVits":
        cache_dir = model_cache_dir(model_path) if use_cache else None
        return cls(split_piper_graph(model_path), VoiceModelConfig.from_file(config_path), threads, precision=precision, cache_dir=cache_dir)

    # -- text stage -----------------------------------------------------------
    def text_to_latents(self, rows: Sequence[LatentRequest]) -> list[np.ndarray]:
        """Ragged batch of phoneme-id rows -> one latent array z [192, T_i] per row (see ``text_to_timed_latents``)."""
        return [z_CxT for z_CxT, _ in self.text_to_timed_latents(rows)]

    def text_to_timed_latents(self, rows: Sequence[LatentRequest]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Ragged batch of phoneme-id rows -> (latents z [192, T_i], frames per id [N_i]) per row.

        The frame counts are the length regulator's: id k covers latent frames
        ``cumsum(frames)[k-1]`` to ``cumsum(frames)[k]`` (word timestamps come from them).
        """
        return [(self._flow_row(z_p_CxT), frames_N) for z_p_CxT, frames_N in self.text_to_timed_priors(rows)]

    def text_to_timed_priors(self, rows: Sequence[LatentRequest]) -> list[tuple[np.ndarray, np.ndarray]]:
        """As ``text_to_timed_latents`` but stopping before the flow: (prior z_p [192, T_i], frames per id [N_i]).
        ``flow_frames`` turns any span of a prior into its latents.

        Rows are padded to a multiple of ``ID_BUCKET`` ids and grouped by that
        padded length: the encoder's attention sums over the padded axis, and
        float sums over a different length round differently, so a row always
        runs at its own bucket length, alone or batched, and equals its solo run.
        """
        # Noise is drawn up front, in row order, so the draw never depends on grouping.
        dp_noise = [r.rng.standard_normal((2, len(r.ids))).astype(np.float32) * r.noise_w for r in rows]
        groups: dict[int, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(_round_up(len(r.ids), ID_BUCKET), []).append(i)
        out: list[tuple[np.ndarray, np.ndarray]] = [(np.empty(0), np.empty(0))] * len(rows)
        for n, group in groups.items():
            for idx in _power_of_two_parts(group):
                for i, timed in zip(idx, self._text_group([rows[i] for i in idx], [dp_noise[i] for i in idx], n)):
                    out[i] = timed
        return out

    def _text_group(self, rows: Sequence[LatentRequest], dp_noise: Sequence[np.ndarray], N: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Rows of one bucket length ``N`` through encoder and length regulation -> (prior [192, T], frames [n])."""
        n_ids = [len(r.ids) for r in rows]
        B = len(rows)
        ids_BxN = np.zeros((B, N), np.int64)  # 0 is the pad id; masks keep it out of every row
        noise_Bx2xN = np.zeros((B, 2, N), np.float32)
        for b, r in enumerate(rows):
            ids_BxN[b, : n_ids[b]] = r.ids
            noise_Bx2xN[b, :, : n_ids[b]] = dp_noise[b]
        # Scales stay neutral inside the graph; each row's own scales are applied below.
        logw_Bx1xN, m_BxCxN, logs_BxCxN, _ = self._encoder.run(
            {"input": ids_BxN, "input_lengths": np.asarray(n_ids, np.int64), "scales": np.ones(3, np.float32), DP_NOISE: noise_Bx2xN},
        )
        priors = []
        for b, r in enumerate(rows):
            n = n_ids[b]
            durations = phoneme_frames(np.exp(logw_Bx1xN[b, 0, :n]), r.length_scale, r.speed)
            m_CxT = np.repeat(m_BxCxN[b, :, :n], durations, axis=1)
            logs_CxT = np.repeat(logs_BxCxN[b, :, :n], durations, axis=1)
            if m_CxT.shape[1] == 0:  # the model's own clamp: at least one frame
                m_CxT = logs_CxT = np.zeros((LATENT_CHANNELS, 1), np.float32)
            eps_CxT = r.rng.standard_normal(m_CxT.shape).astype(np.float32)
            priors.append((m_CxT + eps_CxT * np.exp(logs_CxT) * r.noise_scale, durations))
        return priors

    def flow_frames(self, z_p_CxT: np.ndarray, start: int, end: int) -> np.ndarray:
        """Latents z [192, end - start] for frames [start, end) of a prior z_p [192, T], from the prior's
        frames within ``FLOW_REACH`` of them only: the same frames as the whole flow's (bit for bit on the
        CPU, measured), so a chunk's first window need not wait for the flow of the whole chunk."""
        a, b = max(0, start - FLOW_REACH), min(z_p_CxT.shape[1], end + FLOW_REACH)
        return self._flow_row(z_p_CxT[:, a:b])[:, start - a : end - a]

    def _flow_row(self, z_p_CxT: np.ndarray) -> np.ndarray:
        """One row's prior z_p [192, T] -> latents z [192, T], at the row's own padded length.

        The flow's cost grows with rows at the same rate alone or batched (19.7, 37.1, 74.2 ms for
        1, 2, 4 rows of 256 frames, measured), so a call per row costs nothing, pads a short row
        only to its own bucket, not a long mate's, and is the same call in any batch: the row's
        latents equal its solo run in every precision. OpenVINO prepares kernels per input
        shape (about 10 ms for the flow); bucketed lengths keep the shapes few and cached.
        """
        T = _round_up(z_p_CxT.shape[1], FRAME_BUCKET)
        z_p_1xCxT = np.zeros((1, LATENT_CHANNELS, T), np.float32)
        z_p_1xCxT[0, :, : z_p_CxT.shape[1]] = z_p_CxT
        y_mask_1x1xT = np.zeros((1, 1, T), np.float32)
        y_mask_1x1xT[0, 0, : z_p_CxT.shape[1]] = 1.0
        (z_1xCxT,) = self._flow.run({FLOW_INPUTS[0]: z_p_1xCxT, FLOW_INPUTS[1]: y_mask_1x1xT})
        return z_1xCxT[0, :, : z_p_CxT.shape[1]].copy()

    # -- decoder --------------------------------------------------------------
    def new_decoder_stream(self) -> DecoderStream:
        """Fresh decoder state for one row's latents (one per text chunk)."""
        return DecoderStream([StageBuffer() for _ in self.decoder_stages])

    @property
    def decodes_rows_alone(self) -> bool:
        """True when decode_stream runs each row in its own calls (CPU, one row per call): decoding
        rows one decode_stream call at a time then gives the same audio at the same cost."""
        return self.device == "cpu" and self.cpu_decode_rows == 1

    def decode_stream(self, streams: Sequence[DecoderStream], z_chunks: Sequence[np.ndarray], finals: Sequence[bool]) -> list[np.ndarray]:
        """Each row's next latent frames [192, n_i] -> the audio samples that are now exact [S_i].

        A row's audio lags its latents by the decoder's right context until its
        ``final`` call, which flushes it. Concatenated, a row's outputs equal the
        whole-utterance decode of its concatenated latents.
        """
        pending = [np.ascontiguousarray(z, dtype=np.float32) for z in z_chunks]  # each row's input to the next stage
        for k, stage in enumerate(self.decoder_stages):
            run = lambda xs, real, stage=stage: self._run_rows(stage, xs, real)  # noqa: E731
            pending = run_stage(stage, [s.buffers[k] for s in streams], pending, finals, run)
        return [p[0] for p in pending]  # the last stage has one channel: [1, S] -> [S]

    def decode(self, z_BxCxT: np.ndarray) -> np.ndarray:
        """Whole-utterance decode: latents [B, 192, T] -> audio [B, T * hop]."""
        streams = [self.new_decoder_stream() for _ in range(z_BxCxT.shape[0])]
        return np.stack(self.decode_stream(streams, list(z_BxCxT), [True] * len(streams)))

    def _run_rows(self, stage: DecoderStage, rows: Sequence[np.ndarray], real: Sequence[int]) -> list[np.ndarray]:
        """Run rows [C, w_i] (the first ``real[i]`` samples real) through a stage; rows of equal width share
        calls -> [C', w_i * up] each.

        On GPU equal widths are one call. On CPU a batched call saves nothing
        per row (measured) and large calls fall out of cache, so rows go
        ``cpu_decode_rows`` at a time.
        """
        by_len: dict[int, list[int]] = {}
        for i, x in enumerate(rows):
            by_len.setdefault(x.shape[1], []).append(i)
        out: list[np.ndarray] = [np.empty(0)] * len(rows)
        for idx in by_len.values():
            step = self.cpu_decode_rows if self.device == "cpu" else len(idx)
            for a in range(0, len(idx), step):
                call = idx[a : a + step]
                (y_BxCxM,) = stage.session.run(stage.feed(np.stack([rows[i] for i in call]), [real[i] for i in call]))
                for b, i in enumerate(call):
                    out[i] = y_BxCxM[b]
        return out
