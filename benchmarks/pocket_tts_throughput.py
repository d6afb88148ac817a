"""Pocket TTS on this CPU: the official package serving requests one after another vs our engine, same run.

Random weights at the released English model's size, written in the released layout by the official classes
(tests/reference_envs/pocket_tts_make_fixture.py --size released; the compute does not depend on the values),
with end of speech switched off (``default_eos_threshold`` out of reach) so that every request gives the same
audio on both sides: each chunk runs to the official length cap, ceil((tokens / 3 + 2) * 12.5) latents. Both
clone the same clip. Reported: the official ``generate_audio_stream`` one request at a time (its own two
threads); our engine with one stream, and with ``--requests`` streams submitted together (``--policy fifo``, the
default: all batched at once; ``deadline``: the server's listener-first admission); x real time (audio seconds
per wall second), time to first audio, and the aggregate ratio; per stream also what a 1x player started at its
first chunk hears: its stall (seconds it waits for audio) and its glitch-free start (first audio plus the least
prebuffer with which it never stalls). ``--listeners N`` adds a run of N streams submitted together under the
server's policy (deadline), with the engine's stream places and capacity after its start-up sweep.

    python benchmarks/pocket_tts_throughput.py [--requests 8] [--listeners 2] [--json out.json]
    python benchmarks/pocket_tts_throughput.py --tiny   # a smoke run on the tiny test checkpoint
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from tts_app.backends.params import SpeechParams  # noqa: E402
from tts_app.backends.pocket_tts import PocketBackend  # noqa: E402
from tts_app.engine import Engine  # noqa: E402
from tts_app.models.pocket_tts.voice import read_clip  # noqa: E402
from tts_app.models.pocket_tts.weights import load_pocket  # noqa: E402

TEXT = "Hello there, how are you today?"
CLIP = REPO.parent / "shared" / "voices" / "lj_female_us.wav"


def reference_python() -> str:
    out = subprocess.run(["bash", str(REPO / "tests" / "reference_envs" / "pocket_tts.sh")], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)})
    return out.stdout.strip().splitlines()[-1]


def released_checkpoint(python: str, root: Path) -> Path:
    """Released-size random weights (built once), in a copy of the folder whose config never ends speech."""
    built = root / "released"
    if not (built / "checkpoint" / "model.safetensors").is_file():
        shutil.rmtree(built, ignore_errors=True)
        subprocess.run([python, str(REPO / "tests" / "reference_envs" / "pocket_tts_make_fixture.py"), str(built),
                        "--size", "released"], check=True)
    return no_eos_copy(built / "checkpoint", root / "released-no-eos")


def no_eos_copy(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for old in dst.iterdir():
        if old.is_symlink():  # left by an earlier run, perhaps on another --ckpt: never reuse its files
            old.unlink()
    for f in src.iterdir():
        if f.name != "config.yaml":
            (dst / f.name).symlink_to(f.resolve())
    cfg = yaml.safe_load((src / "config.yaml").read_text())
    cfg["default_eos_threshold"] = 1e9
    (dst / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    return dst


def official(python: str, ckpt: Path, requests: int) -> dict:
    out = subprocess.run([python, str(REPO / "benchmarks" / "pocket_tts_official_serve.py"), str(ckpt / "config.yaml"),
                          str(CLIP), TEXT, str(requests)], capture_output=True, text=True, check=True, timeout=3600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def serve(engine: Engine, voice: SimpleNamespace, seeds: list[int]) -> tuple[list[dict], float]:
    """Submit every request at once, read each stream in its own thread (a listener); per request figures."""
    rows: list[dict] = [{} for _ in seeds]

    def listen(i: int, handle, t0: float) -> None:
        arrivals = []  # (seconds since submission, seconds of audio)
        for chunk in handle:
            if chunk.size:
                arrivals.append((time.perf_counter() - t0, chunk.size / engine.sample_rate))
        rows[i] = {"first_s": arrivals[0][0], "wall_s": time.perf_counter() - t0, "audio_s": sum(a for _, a in arrivals),
                   **heard(arrivals)}

    t0 = time.perf_counter()
    handles = [engine.submit(TEXT, SpeechParams(seed=s, voice=voice)) for s in seeds]
    threads = [threading.Thread(target=listen, args=(i, h, t0)) for i, h in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rows, time.perf_counter() - t0


def heard(arrivals: list[tuple[float, float]]) -> dict:
    """A 1x player started at the first chunk: seconds it stalls, and the glitch-free start (first audio plus
    the least prebuffer with which it never stalls)."""
    first = arrivals[0][0]
    dry, stall, held, need = first, 0.0, 0.0, 0.0
    for t, audio in arrivals:
        if t > dry:
            stall += t - dry
            dry = t
        dry += audio
        need = max(need, t - first - held)
        held += audio
    return {"stall_s": stall, "glitch_free_start_s": first + need}


def summary(rows: list[dict], wall: float) -> dict:
    audio = sum(r["audio_s"] for r in rows)
    return {"requests": len(rows), "audio_s": round(audio, 2), "wall_s": round(wall, 2), "x_real_time": round(audio / wall, 2),
            "first_audio_ms_median": round(1000 * statistics.median(r["first_s"] for r in rows), 1),
            "first_audio_ms_max": round(1000 * max(r["first_s"] for r in rows), 1),
            **({"stall_fraction": round(sum(r["stall_s"] for r in rows) / audio, 4),
                "stall_s_max": round(max(r["stall_s"] for r in rows), 3),
                "glitch_free_start_ms_max": round(1000 * max(r["glitch_free_start_s"] for r in rows), 1)}
               if "stall_s" in rows[0] else {})}


def machine() -> dict:
    flags = ""
    try:
        info = Path("/proc/cpuinfo").read_text()
        model = next(line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name"))
        flags = " ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f" {f}" in info)
    except (OSError, StopIteration):
        model = platform.processor()
    return {"cpu": model, "cores": os.cpu_count(), "flags": flags, "load_avg": [round(x, 2) for x in os.getloadavg()],
            "torch": torch.__version__, "torch_threads": torch.get_num_threads()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=8, help="requests served by the official package, and concurrent streams of ours")
    ap.add_argument("--root", type=Path, default=Path.home() / ".cache" / "tts_app" / "pocket_tts_bench")
    ap.add_argument("--ckpt", type=Path, help="a checkpoint folder to use instead of building the released-size one")
    ap.add_argument("--tiny", action="store_true", help="the tiny test checkpoint (a smoke run; figures mean nothing)")
    ap.add_argument("--policy", choices=("fifo", "deadline"), default="fifo",
                    help="the engine's: fifo batches every request at once (throughput); deadline is the server's listener-first "
                         "policy, which holds streams back while the machine cannot feed one more in real time")
    ap.add_argument("--listeners", type=int, default=0,
                    help="also serve this many streams submitted together under the server's policy (deadline)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    python = reference_python()
    if args.tiny:
        from tests.support.pocket_tts_tiny import write_tiny_checkpoint  # the test helper: only for the smoke run

        args.ckpt = write_tiny_checkpoint(args.root / "tiny")
    ckpt = no_eos_copy(args.ckpt, args.root / "given-no-eos") if args.ckpt else released_checkpoint(python, args.root)
    result: dict = {"machine": machine(), "text": TEXT, "clip": CLIP.name}
    print(json.dumps(result["machine"]), flush=True)

    ref = official(python, ckpt, args.requests)
    result["official_serial"] = summary(ref["rows"], sum(r["wall_s"] for r in ref["rows"]))
    result["official_voice_s"] = round(ref["voice_s"], 3)
    print("official, one at a time:", result["official_serial"], flush=True)

    wav, rate = read_clip(CLIP)
    voice = SimpleNamespace(reference_audio=wav[0].numpy(), reference_sample_rate=rate, content_hash="bench-clip")
    backend = PocketBackend(load_pocket(ckpt), max_batch=args.requests)
    engine = Engine(backend=backend, max_batch_size=args.requests, policy=args.policy)
    result["policy"] = args.policy
    try:
        t = time.perf_counter()
        serve(engine, voice, [0])  # warm-up; computes and caches the clip's voice state
        result["ours_first_request_s"] = round(time.perf_counter() - t, 2)
        result["ours_one_stream"] = summary(*serve(engine, voice, [1]))
        print("ours, one stream:", result["ours_one_stream"], flush=True)
        result["ours_concurrent"] = summary(*serve(engine, voice, list(range(2, 2 + args.requests))))
        print(f"ours, {args.requests} concurrent:", result["ours_concurrent"], flush=True)
    finally:
        engine.close()
    if args.listeners:
        engine = Engine(backend=backend, max_batch_size=args.requests, policy="deadline")
        try:
            serve(engine, voice, [0])  # after the start-up sweep, as a server's first visitor
            stats = engine.stats()
            result["server_policy"] = {"stream_places": stats["stream_places"],
                                       "capacity_audio_s_per_s": round(stats["capacity_audio_s_per_s"], 2),
                                       "step_costs": {k: round(v, 4) for k, v in stats["step_costs"].items()}}
            print("the server's policy after its sweep:", result["server_policy"], flush=True)
            result["ours_listeners"] = summary(*serve(engine, voice, list(range(20, 20 + args.listeners))))
            print(f"ours, {args.listeners} streams under the server's policy:", result["ours_listeners"], flush=True)
        finally:
            engine.close()
    result["concurrent_vs_official"] = round(result["ours_concurrent"]["x_real_time"] / result["official_serial"]["x_real_time"], 2)
    result["one_stream_vs_official"] = round(result["ours_one_stream"]["x_real_time"] / result["official_serial"]["x_real_time"], 2)
    result["machine_after"] = {"load_avg": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps({k: result[k] for k in ("concurrent_vs_official", "one_stream_vs_official")}))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
