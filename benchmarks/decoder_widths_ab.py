"""Decoder speed and kept memory against another checkout, in one run (issue 46, hole 4: the decoder at a fixed
set of input widths must not be slower than before by more than about 5 %).

Each checkout (``--base DIR``, e.g. a ``git worktree`` of main, and this one) runs in its own process, in turn,
``--rounds`` times: the embedded voice loaded and warmed, then the Piper backend speaks each case twice, window by
window as the engine does (the usual 160-frame windows at speed 1; the grown 640-frame windows of a whole WAV at
speed 0.25). Per case: the real-time factor (decode seconds per audio second, wall and the process's CPU time: on
a shared machine the load falls on both checkouts alike, and CPU time is the steadier) and the RSS the process
keeps after it (malloc trimmed). Prints the CPU, the date and one JSON row per checkout and round.

    git worktree add /tmp/main-checkout main && python benchmarks/decoder_widths_ab.py --base /tmp/main-checkout
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from statistics import median

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.voice_similarity import cpu_name  # noqa: E402
from tests.support.memory_cases import text_of  # noqa: E402

CASES = (("usual windows, speed 1, 1,000 characters", 160, 1.0, 1000), ("grown windows, speed 0.25, 400 characters", 640, 0.25, 400))

# Runs inside the checkout under test (its tts_app first on sys.path): only APIs both revisions have.
WORKER = r"""
import ctypes, json, sys, time
from pathlib import Path
from tts_app.backends.base import RowInput
from tts_app.backends.params import SpeechParams
from tts_app.backends.piper import PiperBackend
from tts_app.models.piper.loader import load_default_voice

def rss_mb():
    trim = ctypes.CDLL("libc.so.6").malloc_trim
    trim(0)
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024

model = load_default_voice()
rows, idle = [], rss_mb()
for label, window, speed, text in json.loads(sys.argv[1]):
    backend = PiperBackend(model, window_frames=window)
    for run in (1, 2):
        states = backend.prepare([RowInput(0, text, SpeechParams(seed=1, speed=speed))])
        wall, cpu, samples, done = time.perf_counter(), time.process_time(), 0, False
        while not done:
            (out,) = backend.step(states)
            samples, done = samples + out.audio.size, out.done
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        audio_s = samples / backend.sample_rate
        rows.append({"case": label, "run": run, "audio_s": round(audio_s, 1), "rtf_wall": round(wall / audio_s, 4),
                     "rtf_cpu": round(cpu / audio_s, 4), "kept_mb": round(rss_mb() - idle, 1)})
print(json.dumps({"idle_mb": round(idle, 1), "rows": rows}))
"""


def run_worker(repo: Path, cases: list[list[object]]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(repo)!r})\n" + WORKER, json.dumps(cases)],
                         cwd=repo, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    cases = [[label, window, speed, text_of(chars, 1)] for label, window, speed, chars in CASES]
    runs: list[dict[str, object]] = []
    for k in range(args.rounds):
        for name, repo in (("base", args.base.resolve()), ("this", REPO_ROOT)):
            runs.append({"checkout": name, "round": k, **run_worker(repo, cases)})
            print(json.dumps(runs[-1]), flush=True)
    summary = {}
    for label, *_ in CASES:
        cpu = {name: round(median(r["rtf_cpu"] for run in runs if run["checkout"] == name for r in run["rows"] if r["case"] == label and r["run"] == 2), 4)
               for name in ("base", "this")}
        summary[label] = {"rtf_cpu_base": cpu["base"], "rtf_cpu_this": cpu["this"], "this_over_base": round(cpu["this"] / cpu["base"], 3)}
    print(json.dumps({"cpu": cpu_name(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
