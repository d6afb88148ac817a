"""The OFFICIAL Pocket TTS serving requests one at a time with ``generate_audio_stream`` (run by
benchmarks/pocket_tts_throughput.py inside the reference venv, tests/reference_envs/pocket_tts.sh).

    $REF_VENV/bin/python benchmarks/pocket_tts_official_serve.py CONFIG_YAML CLIP TEXT REQUESTS

Prints one JSON line: the voice-state time and, per request, seconds to the first chunk, seconds in all and
seconds of audio. The package's own threading is kept (it sets one intra-op thread at import and runs
generation and Mimi decoding in two threads).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    config, clip, text, requests = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    os.chdir(Path(config).parent)  # the config names its files relative to its folder
    from pocket_tts.models.tts_model import TTSModel  # the reference venv's package (not importable by the app)

    model = TTSModel.load_model(config=config)
    t = time.perf_counter()
    voice = model.get_state_for_audio_prompt(clip)
    voice_s = time.perf_counter() - t
    for _ in model.generate_audio_stream(voice, "Warm up."):
        pass
    rows = []
    for _ in range(requests):
        t0 = time.perf_counter()
        first, samples = None, 0
        for chunk in model.generate_audio_stream(voice, text):
            if first is None:
                first = time.perf_counter() - t0
            samples += chunk.numel()
        rows.append({"first_s": first, "wall_s": time.perf_counter() - t0, "audio_s": samples / model.sample_rate})
    print(json.dumps({"voice_s": voice_s, "rows": rows}))


if __name__ == "__main__":
    main()
