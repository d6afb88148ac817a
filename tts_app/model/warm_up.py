"""Warm-up at load: OpenVINO prepares kernels per input shape on first use (about 20 to 150 ms
each on 2 cores, measured), so a fresh process would pay that inside its first requests.

Warmed here, one call each with stand-in inputs (kernels depend on shapes, not values):
- the decoder's streamed shapes for chunks of ``WARM_CHUNK_FRAMES`` (they follow from the
  window plan and the padding step alone: stream_decoder.stream_input_lengths), and the
  flow's one-row shapes for the same lengths;
- shapes logged by earlier runs in the model cache (model_cache.ShapeLog): the batch
  sizes and lengths this installation's traffic actually met, text stage included; most
  recent first, within ``LOGGED_BUDGET_S`` so a long log cannot make loading slow.
"""

from __future__ import annotations

import logging
import time
from itertools import zip_longest
from typing import TYPE_CHECKING

import numpy as np

from .stream_decoder import stream_input_lengths
from .windows import plan_windows

if TYPE_CHECKING:
    from .piper_vits import PiperVits

_LOGGER = logging.getLogger(__name__)
# Chunk lengths (latent frames) whose streamed decoder shapes are warmed: from just over one
# first window to 4 windows; longer chunks repeat the steady-state window's shapes.
WARM_CHUNK_FRAMES = range(65, 64 + 4 * 160)
MAX_DIM = 1 << 20  # a logged shape beyond this is not from this model: skipped
LOGGED_BUDGET_S = 6.0  # wall time for logged shapes, after the decoder's streamed ones


def warm_model(model: "PiperVits") -> None:
    t0 = time.perf_counter()
    streamed = _streamed_feeds(model)
    _run_all(streamed.values(), deadline=None)
    t1 = time.perf_counter()
    logged = {key: run for key, run in _logged_feeds(model, model.shape_log.load()).items() if key not in streamed}
    by_stage: dict[str, list] = {}
    for key, run in logged.items():
        by_stage.setdefault(key[0], []).append(run)
    # Most recent first, the stages taking turns, so a budget cut leaves every stage some shapes.
    turns = [run for group in zip_longest(*(reversed(runs) for runs in by_stage.values())) for run in group if run is not None]
    done = _run_all(turns, deadline=t1 + LOGGED_BUDGET_S)
    _LOGGER.info("warmed %d streamed and %d of %d logged shapes in %.1f s", len(streamed), done, len(logged), time.perf_counter() - t0)


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
    lengths = [set() for _ in model.decoder_stages]
    for n_frames in WARM_CHUNK_FRAMES:
        plan = [(w.end - w.start, w.last) for w in plan_windows(n_frames)]
        for k, ns in enumerate(stream_input_lengths(model.decoder_stages, plan)):
            lengths[k] |= ns
    for k, stage in enumerate(model.decoder_stages):
        for n in sorted(lengths[k]):
            _add_decoder(feeds, model, k, n)
    step = model.frame_bucket
    for T in range(step, WARM_CHUNK_FRAMES.stop + step, step):
        _add_flow(feeds, model, T)
    return feeds


def _logged_feeds(model: "PiperVits", logged: dict[str, list[list[list[int]]]]) -> dict[tuple, tuple[object, dict[str, np.ndarray]]]:
    """Stand-in runs for logged shapes, oldest first (per stage, in log order)."""
    feeds: dict[tuple, tuple[object, dict[str, np.ndarray]]] = {}
    for stage_name, shape_lists in logged.items():
        for shapes in shape_lists:
            if any(d < 0 or d > MAX_DIM for s in shapes for d in s):
                continue
            if stage_name.startswith("dec") and stage_name[3:].isdigit() and int(stage_name[3:]) < len(model.decoder_stages):
                k = int(stage_name[3:])
                if len(shapes) == 1 and len(shapes[0]) == 3 and shapes[0][0] == 1 and shapes[0][1] == model.decoder_stages[k].channels:
                    _add_decoder(feeds, model, k, shapes[0][2])
            elif stage_name == "encoder" and [len(s) for s in shapes] == [2, 1, 1, 3]:
                B, N = shapes[0]
                feed = {
                    "input": np.ones((B, N), np.int64),
                    "input_lengths": np.full((B,), N, np.int64),
                    "scales": np.ones(3, np.float32),
                    model.dp_noise_name: np.zeros((B, 2, N), np.float32),
                }
                feeds[("encoder", B, N)] = (model.encoder_session, feed)
            elif stage_name == "flow" and [len(s) for s in shapes] == [3, 3] and shapes[0][:2] == [1, model.latent_channels]:
                _add_flow(feeds, model, shapes[0][2])  # the flow runs one row per call
    return feeds


def _add_flow(feeds: dict, model: "PiperVits", T: int) -> None:
    names = model.flow_input_names
    z_p_1xCxT = np.zeros((1, model.latent_channels, T), np.float32)
    feeds[("flow", T)] = (model.flow_session, {names[0]: z_p_1xCxT, names[1]: np.ones((1, 1, T), np.float32)})


def _add_decoder(feeds: dict, model: "PiperVits", k: int, n: int) -> None:
    stage = model.decoder_stages[k]
    feeds[(f"dec{k}", n)] = (stage.session, {stage.input_name: np.zeros((1, stage.channels, n), np.float32)})



