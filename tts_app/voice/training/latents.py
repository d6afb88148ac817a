"""The embedded model's latents z for a text: the decoder's input, as the engine computes it."""

from __future__ import annotations

import numpy as np

from tts_app.models.piper import LatentRequest


def text_latents(text: str, seed: int = 0) -> np.ndarray:
    """z [192, T] for ``text`` (every chunk, one after another), from the project's own text stage."""
    from tts_app.backends.piper import PiperBackend  # lazy: loads the model and the text front end
    from tts_app.models.piper.loader import load_default_voice

    model = load_default_voice()
    parsed = PiperBackend(model).check_text(text)
    rng = np.random.default_rng(seed)
    cfg = model.config
    rows = [
        LatentRequest(ids=ids, rng=rng, length_scale=cfg.length_scale, noise_scale=cfg.noise_scale, noise_w=cfg.noise_w)
        for ids in parsed.chunk_ids
    ]
    return np.concatenate(model.text_to_latents(rows), axis=1)
