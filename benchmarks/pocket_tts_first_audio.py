"""Pocket TTS: where one stream's first audio goes, with a cached voice (issue 37), before/after in one run.

Drives ``PocketBackend`` as the engine does for one request (``check_text``, ``prepare``: the voice from the
cache and the prefill, then one ``step``: the first latent and its Mimi decode) and times each stage with the
calling thread's CPU time (``time.thread_time``), the process's CPU time and the wall clock; the generator's
``prefill``/``step``/``decode`` are timed inside. The voice is a clip (``lj_female_us.wav``) cloned once before
the timed rounds, so every round finds it cached. Medians over ``--rounds`` after a warm-up.

``--against REV`` also measures the code of git revision REV (exported to a temporary folder) in the same run:
the two sides alternate in subprocesses (``--passes`` times each), and the first audio of both is compared.
``--profile`` prints torch.profiler's operator table for one extra round. ``--prefill-ab N`` times, in this process
and interleaved N times, the flow-LM work before a row's first latent done both ways: the text in one pass then
the BOS latent's input in a pass of its own (the code before the one-pass prefill), and the two in one pass
whose last layer keeps the BOS position only (the generator now); the same modules, so only the order differs.

    python benchmarks/pocket_tts_first_audio.py --ckpt DIR [--rounds 7] [--threads 1] [--against main] [--profile]
    python benchmarks/pocket_tts_first_audio.py --ckpt DIR --prefill-ab 30

DIR: a checkpoint folder, e.g. the released-size random weights of
``tests/reference_envs/pocket_tts_make_fixture.py OUT --size released`` (``OUT/checkpoint``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
TEXT = "Hello there, how are you today?"
CLIP = REPO.parent / "shared" / "voices" / "lj_female_us.wav"
STAGES = ("text", "prepare", "gen.prefill", "first step", "gen.step", "gen.decode", "first audio")


class Clock:
    """Thread CPU, process CPU and wall seconds since it started."""

    def __init__(self) -> None:
        self.t = (time.thread_time(), time.process_time(), time.perf_counter())

    def read(self) -> tuple[float, float, float]:
        now = (time.thread_time(), time.process_time(), time.perf_counter())
        return tuple(b - a for a, b in zip(self.t, now))


def _timed(fn: Callable, name: str, sink: dict[str, tuple[float, float, float]]) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c = Clock()
        with torch.profiler.record_function(name):
            out = fn(*args, **kwargs)
        sink[name] = c.read()
        return out
    return wrapper


def measure(ckpt: Path, rounds: int, threads: int, profile: bool) -> dict:
    """Per-stage medians of one stream's first audio with the code importable as ``tts_app`` (sys.path set by main)."""
    # Imported here: which tree ``tts_app`` comes from is decided by --code at run time.
    from tts_app.backends.base import RowInput
    from tts_app.backends.params import SpeechParams
    from tts_app.backends.pocket_tts import PocketBackend
    from tts_app.models.pocket_tts.voice import read_clip
    from tts_app.models.pocket_tts.weights import load_pocket

    torch.set_num_threads(threads)
    backend = PocketBackend(load_pocket(ckpt))
    gen = backend.generator
    wav, rate = read_clip(CLIP)
    voice = SimpleNamespace(reference_audio=wav[0].numpy(), reference_sample_rate=rate, content_hash="bench-clip")
    sink: dict[str, tuple[float, float, float]] = {}
    for name in ("prefill", "step", "decode"):
        setattr(gen, name, _timed(getattr(gen, name), f"gen.{name}", sink))

    def one(i: int) -> np.ndarray:
        c = Clock()
        with torch.profiler.record_function("text"):
            chunks = backend.check_text(TEXT)
        sink["text"] = c.read()
        c2 = Clock()
        with torch.profiler.record_function("prepare"):
            states = backend.prepare([RowInput(i, TEXT, SpeechParams(seed=i, voice=voice), chunks)])
        sink["prepare"] = c2.read()
        c3 = Clock()
        with torch.profiler.record_function("first step"):
            out = backend.step(states)[0]
        sink["first step"] = c3.read()
        sink["first audio"] = c.read()
        backend.release(states[0])
        if not out.audio.size:
            raise RuntimeError("the first step gave no audio")
        return out.audio

    c = Clock()
    one(0)  # warm-up: clones the clip (cached from here on)
    warm = c.read()
    samples = []
    for i in range(rounds):
        sink.clear()
        first = one(1)  # the same seed every round: the same audio
        samples.append(dict(sink))
    result = {
        "threads": threads, "rounds": rounds, "warm_up_s": [round(x, 3) for x in warm],
        "ms": {s: [round(1000 * statistics.median(r[s][k] for r in samples), 2) for k in range(3)] for s in STAGES},
        "first_audio": first.tolist(), "voice_positions": backend._voice(voice).length,
    }
    if profile:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            one(1)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30), file=sys.stderr, flush=True)
    return result


@torch.no_grad()
def prefill_ab(ckpt: Path, rounds: int, threads: int) -> dict:
    """Thread-CPU medians (ms) of the two-pass and one-pass flow-LM work before a first latent, interleaved."""
    # Imported here: which tree ``tts_app`` comes from is decided by --code at run time.
    from tts_app.models.layers.kv_cache import SlotPool
    from tts_app.models.pocket_tts.weights import load_pocket

    torch.set_num_threads(threads)
    model = load_pocket(ckpt)
    flow, ids = model.flow_lm, model.tokenizer.encode(TEXT)
    kv = flow.new_cache(SlotPool(1), 1024)
    voice_len = 122  # lj_female_us.wav's prompt; the cache's values do not change the cost
    n = len(ids)
    one = torch.tensor([1])

    def two_passes() -> None:
        kv.lengths[0] = voice_len
        flow.hidden(flow.conditioner(torch.tensor([ids])), kv.bind(0, torch.tensor([n])))
        flow.hidden(flow.bos_input()[None, None], kv.bind(0, one))

    def one_pass() -> None:
        kv.lengths[0] = voice_len
        x_1xTxD = flow.conditioner(torch.tensor([ids + [0]]))
        x_1xTxD[0, n] = flow.bos_input()
        flow.hidden(x_1xTxD, kv.bind(0, torch.tensor([n + 1])), keep_B=torch.tensor([n]))

    ways = {"text pass, then BOS pass": two_passes, "one pass, last layer at the BOS only": one_pass}
    times: dict[str, list[float]] = {k: [] for k in ways}
    for fn in ways.values():
        fn()  # warm-up
    for _ in range(rounds):
        for name, fn in ways.items():
            c = time.thread_time()
            fn()
            times[name].append(1000 * (time.thread_time() - c))
    return {name: {"median_ms": round(statistics.median(t), 1), "min_ms": round(min(t), 1)} for name, t in times.items()}


def machine() -> dict:
    info = Path("/proc/cpuinfo").read_text()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if f" {f}" in info)
    return {"cpu": model, "cores": os.cpu_count(), "flags": flags, "torch": torch.__version__,
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


def run_side(code: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--ckpt", str(args.ckpt), "--rounds", str(args.rounds), "--threads", str(args.threads),
           "--code", str(code), "--emit-json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def combine(runs: list[dict]) -> dict:
    """Median over the passes of each stage's per-pass medians."""
    return {s: [round(statistics.median(r["ms"][s][k] for r in runs), 2) for k in range(3)] for s in STAGES}


def table(sides: dict[str, dict]) -> str:
    names = list(sides)
    head = "| stage | " + " | ".join(f"{n}: thread CPU / process CPU / wall ms" for n in names) + " |"
    lines = [head, "|---|" + "---|" * len(names)]
    for s in STAGES:
        lines.append(f"| {s} | " + " | ".join(" / ".join(f"{x:.1f}" for x in sides[n][s]) for n in names) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", type=Path, required=True, help="a Pocket TTS checkpoint folder")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1: thread CPU time is all the work)")
    ap.add_argument("--against", help="a git revision measured beside this tree, in the same run")
    ap.add_argument("--passes", type=int, default=2, help="with --against: alternating subprocess runs per side")
    ap.add_argument("--profile", action="store_true", help="print torch.profiler's operator table (stderr)")
    ap.add_argument("--prefill-ab", type=int, default=0, metavar="N",
                    help="time the two-pass and the one-pass flow-LM work before a first latent, interleaved N times")
    ap.add_argument("--code", type=Path, default=REPO, help=argparse.SUPPRESS)
    ap.add_argument("--emit-json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sys.path.insert(0, str(args.code))
    if args.emit_json:
        print(json.dumps(measure(args.ckpt, args.rounds, args.threads, args.profile)))
        return
    result: dict[str, Any] = {"machine": machine(), "text": TEXT, "clip": CLIP.name}
    print(json.dumps(result["machine"]), flush=True)
    if args.prefill_ab:
        result["prefill_ab"] = prefill_ab(args.ckpt, args.prefill_ab, args.threads)
        for name, r in result["prefill_ab"].items():
            print(f"{name}: median {r['median_ms']} ms, min {r['min_ms']} ms of thread CPU ({args.prefill_ab} interleaved runs)")
    elif not args.against:
        r = measure(args.ckpt, args.rounds, args.threads, args.profile)
        result["this tree"] = {k: v for k, v in r.items() if k != "first_audio"}
        print(table({"this tree": r["ms"]}))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            archive = subprocess.run(["git", "-C", str(REPO), "archive", args.against], capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
            runs: dict[str, list[dict]] = {args.against: [], "this tree": []}
            for _ in range(args.passes):
                runs[args.against].append(run_side(base, args))
                runs["this tree"].append(run_side(args.code, args))
        sides = {name: combine(r) for name, r in runs.items()}
        before, after = (np.array(runs[n][-1]["first_audio"]) for n in runs)
        diff = float(np.abs(before - after).max()) if before.shape == after.shape else float("inf")
        result.update(sides=sides, first_audio_max_diff=diff,
                      ratio_first_audio=[round(a / b, 2) for a, b in zip(sides[args.against]["first audio"], sides["this tree"]["first audio"])])
        print(table(sides))
        print(f"first audio {args.against} / this tree (thread CPU, process CPU, wall): {result['ratio_first_audio']}; "
              f"the first audio's samples differ by at most {diff:.3g}")
    result["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    print("load average after:", result["load_avg_after"])
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
