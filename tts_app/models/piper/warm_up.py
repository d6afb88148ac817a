"""Warm-up at load: OpenVINO prepares kernels per input shape on first use (about 20 to 150 ms
each on 2 cores, measured), so a fresh process would pay that inside its first requests.

Warmed here, one call each with stand-in inputs (kernels depend on shapes, not values):
- every width a decoder stage is ever run at (``DecoderStage.widths``: 14 per stage; traffic
  meets no other, stream_decoder.py), and the flow's one-row shapes for chunks of up to
  ``WARM_CHUNK_FRAMES`` frames;
- the few text-stage shapes this installation's traffic met most often, as logged by
  earlier runs in the model cache (model_cache.ShapeLog): at most ``$TTS_APP_WARM_LOGGED_SHAPES`` of
  them, each seen ``MIN_HITS`` times, within ``LOGGED_BUDGET_S``. Replaying every logged
  shape made a restart with a warm cache slower than a cold one (6.6 -> 10.8 s with 48
  shapes) and its idle memory grow with each (711 -> 1,610 MB after hostile lengths).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from tts_app import settings

PiperVits = Any  # piper_vits.PiperVits, which imports this module: the hints name it without importing it

_LOGGER = logging.getLogger(__name__)
# Chunk lengths (latent frames) whose one-row flow shapes are warmed: up to 4 windows.
WARM_CHUNK_FRAMES = range(65, 64 + 4 * 160)
# Off by default: replaying four long logged shapes after a hostile session grew idle RSS by 73 MB over a
# first start (issue 24 bounds it at 50 MB); kernels are cached on disk, so a shape met later compiles fast.
LOGGED_SHAPES_ENV = "TTS_APP_WARM_LOGGED_SHAPES"
MIN_HITS = 3  # a shape met once or twice is not traffic's shape
LOGGED_BUDGET_S = 1.5  # wall time for logged shapes, after the decoder's streamed ones
# What the shape log keeps: the text stage at the batch sizes the engine uses, for lengths an
# ordinary sentence gives (ids padded to 16, flow frames to 32); the decoder streams in windows
# whose shapes the streamed warm-up already covers.
BATCH_SIZES = (1, 2, 4, 8, 16)
MAX_LOGGED_IDS = 512  # about 250 phonemes: a long sentence
MAX_LOGGED_FRAMES = 2 * WARM_CHUNK_FRAMES.stop  # about 16 s of speech in one chunk


def warm_model(model: "PiperVits") -> None:
    t0 = time.perf_counter()
    streamed = _streamed_feeds(model)
    _run_all(streamed.values(), deadline=None)
    t1 = time.perf_counter()
    logged = {key: run for key, run in _logged_feeds(model, model.shape_log.most_hit(MIN_HITS)).items() if key not in streamed}
    replay = list(logged.values())[: settings.value(LOGGED_SHAPES_ENV)]
    done = _run_all(replay, deadline=t1 + LOGGED_BUDGET_S)
    _LOGGER.info("warmed %d streamed and %d of %d logged shapes in %.1f s", len(streamed), done, len(logged), time.perf_counter() - t0)


def normal_shape(stage: str, shapes: tuple[tuple[int, ...], ...]) -> bool:
    """Whether the shape log keeps a run of ``stage`` on ``shapes`` (see MAX_LOGGED_IDS)."""
    dims = [len(s) for s in shapes]
    if stage == "encoder" and dims == [2, 1, 1, 3]:
        batch, ids = shapes[0]
        return batch in BATCH_SIZES and 0 < ids <= MAX_LOGGED_IDS
    if stage == "flow" and dims == [3, 3]:  # up to WARM_CHUNK_FRAMES.stop the streamed warm-up has them
        return shapes[0][0] == 1 and WARM_CHUNK_FRAMES.stop < shapes[0][2] <= MAX_LOGGED_FRAMES
    return False


def _run_all(runs, deadline: float | None) -> int:
    done = 0
    for session, feed in runs:
        if deadline is not None and time.perf_counter() > deadline:
            break
        try:
            session.run(feed)
            done += 1
        except Exception as error:  # noqa: BLE001 - a stale cache line must not stop the load
            _LOGGER.debug("warm-up skipped a shape (%s)", error)
    return done


def _streamed_feeds(model: "PiperVits") -> dict[tuple, tuple[object, dict[str, np.ndarray]]]:
    feeds: dict[tuple, tuple[object, dict[str, np.ndarray]]] = {}  # (stage, shapes) -> run; dedups
    for k, stage in enumerate(model.decoder_stages):
        for n in stage.widths:
            _add_decoder(feeds, model, k, n)
    step = model.frame_bucket
    for T in range(step, WARM_CHUNK_FRAMES.stop + step, step):
        _add_flow(feeds, model, T)
    return feeds


def _logged_feeds(model: "PiperVits", logged: Iterable[tuple[str, list[list[int]]]]) -> dict[tuple, tuple[object, dict[str, np.ndarray]]]:
    """Stand-in runs for logged (stage, shapes), in the order given; shapes of another model are skipped."""
    feeds: dict[tuple, tuple[object, dict[str, np.ndarray]]] = {}
    for stage_name, shapes in logged:
        if not normal_shape(stage_name, tuple(tuple(s) for s in shapes)):
            continue
        if stage_name == "encoder":
            B, N = shapes[0]
            feed = {
                "input": np.ones((B, N), np.int64),
                "input_lengths": np.full((B,), N, np.int64),
                "scales": np.ones(3, np.float32),
                model.dp_noise_name: np.zeros((B, 2, N), np.float32),
            }
            feeds[("encoder", B, N)] = (model.encoder_session, feed)
        elif shapes[0][1] == model.latent_channels:
            _add_flow(feeds, model, shapes[0][2])  # the flow runs one row per call
    return feeds


def _add_flow(feeds: dict, model: "PiperVits", T: int) -> None:
    names = model.flow_input_names
    z_p_1xCxT = np.zeros((1, model.latent_channels, T), np.float32)
    feeds[("flow", T)] = (model.flow_session, {names[0]: z_p_1xCxT, names[1]: np.ones((1, 1, T), np.float32)})


def _add_decoder(feeds: dict, model: "PiperVits", k: int, n: int) -> None:
    stage = model.decoder_stages[k]
    feeds[(f"dec{k}", n)] = (stage.session, stage.feed(np.zeros((1, stage.channels, n), np.float32), [n]))



