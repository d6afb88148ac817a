"""Pocket TTS: our backend alone (no engine, no official package), this checkout against git revision REV.

Each side in its own subprocess, alternating ``--rounds`` times: one stream (after a warm-up stream), then 8 rows
prepared together and stepped to the end; audio seconds per wall second. For before/after ratios of the backend's
own step (the pipelined stages, issue 37) on a shared machine: compare the sides within a round.

    python benchmarks/pocket_tts_backend_ab.py --ckpt DIR [--against main] [--rounds 2]

DIR: a checkpoint folder whose end of speech never comes (``pocket_tts_throughput.py`` writes one:
~/.cache/tts_app/pocket_tts_bench/given-no-eos), so every row speaks its text's full length cap.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLIP = REPO.parent / "shared" / "voices" / "lj_female_us.wav"

SIDE = r'''
import json, sys, time
from pathlib import Path
from types import SimpleNamespace
sys.path.insert(0, sys.argv[1])
from tts_app.backends.base import RowInput
from tts_app.backends.params import SpeechParams
from tts_app.backends.pocket_tts import PocketBackend
from tts_app.models.pocket_tts.voice import read_clip
from tts_app.models.pocket_tts.weights import load_pocket

backend = PocketBackend(load_pocket(Path(sys.argv[2])), max_batch=8)
wav, rate = read_clip(Path(sys.argv[3]))
voice = SimpleNamespace(reference_audio=wav[0].numpy(), reference_sample_rate=rate, content_hash="clip")

def speed(n):
    rows = [RowInput(i, "Hello there, how are you today?", SpeechParams(seed=i, voice=voice)) for i in range(n)]
    t = time.perf_counter()
    live, samples = backend.prepare(rows), 0
    while live:
        outs = backend.step(live)
        samples += sum(o.audio.size for o in outs)
        for s, o in zip(live, outs):
            if o.done:
                backend.release(s)
        live = [s for s, o in zip(live, outs) if not o.done]
    return samples / backend.sample_rate / (time.perf_counter() - t)

speed(1)
print(json.dumps({"one_stream_x_rt": round(speed(1), 3), "eight_rows_x_rt": round(speed(8), 3)}))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", type=Path, required=True)
    ap.add_argument("--against", default="main", help="git revision measured beside this checkout")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as old:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.against], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
        for r in range(args.rounds):
            for name, code in ((args.against, old), ("this", str(REPO))):
                out = subprocess.run([sys.executable, "-c", SIDE, code, str(args.ckpt), str(CLIP)], capture_output=True,
                                     text=True, check=True)
                row = {"round": r, "code": name, **json.loads(out.stdout.strip().splitlines()[-1]),
                       "load_avg": [round(x, 2) for x in os.getloadavg()]}
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
