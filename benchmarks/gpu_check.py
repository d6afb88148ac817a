"""Prepared GPU check of the Qwen3-TTS path (issues 33, 51) and Chatterbox beside it: about 6 minutes on one H100 or
H200; ``--tiny`` runs the same code on tiny random models on CPU.

    bash scripts/gather_gpu_wheels.sh                       # here, with a network: the packages the GPU machine lacks
    python3 benchmarks/gpu_check.py --wheels .whl --out DIR  # there: installs them --no-index, then CUDA, bf16, random
                                                            # weights at the released sizes
    python benchmarks/gpu_check.py --tiny --out DIR          # CPU smoke run of the same code paths
    python3 benchmarks/gpu_check.py --only codec,chatterbox --out DIR   # a rerun of some sections

Writes DIR/gpu_check.json after every section (a run cut short keeps what it measured) with:
  env         device, torch, CPU, date
  agreement   4 rows (seeds 11-14): CUDA-graph replay vs eager and each row batched vs alone (token agreement)
  throughput  0.6B at batch 1/8/32/64/128 (EOS suppressed): talker frames/s, x real time aggregate
              (codec included), process CPU s per wall s, peak GPU memory, graph capture seconds
  ops         aten ops dispatched by one decode call at batch 1/8/32 (torch.profiler; with graphs on CUDA)
  first_audio N streams admitted at once (1/8/32/64): prefill to the audio of their first decode call, median
  engine      Engine + Qwen3Backend (0.6B, graphs captured at start) with 1/16/64 streams submitted at once,
              per policy (fifo, deadline): first audio p50/p95, stall fraction of a 1x player, audio-s per s
  codec       the 0.6B run's codec per batch bucket 1/8/32/64/128: CUDA graph vs the same fixed-shape call eager vs
              the ragged decode (ms per call, x real time, graph vs eager max |diff|, capture s)
  chatterbox  1 stream and 32 rows: T3 tokens/s graph vs eager (and token agreement), S3Gen flow solve per 1 s chunk
              graph vs eager (ms, max |diff|), vocoder per row, audio-s per s (benchmarks/gpu_check_graphs.py)

Needs, beyond torch and numpy (a GPU machine may have only those and the common scientific packages): the Qwen3
engine path's num2words, piper-tts, defusedxml, pathvalidate, and Chatterbox's official modules with their needs;
``--wheels DIR`` installs the wheels scripts/gather_gpu_wheels.sh gathered (pip --no-index) before anything imports.
The random weights are built in memory at the released sizes (no checkpoint is read; the text tokenizer is a
character one, so prompts are about as long as their text).
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing


def install_wheels(folder: Path) -> None:
    """pip install --no-index --no-deps the carried wheels into FOLDER-site beside them, first on the path (nothing is fetched)."""
    site = folder.resolve().parent / (folder.name + "-site")
    wheels = sorted(str(w) for w in folder.glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
                    "--upgrade", "--target", str(site), *wheels], check=True)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()


if __name__ == "__main__" and "--wheels" in sys.argv[:-1]:  # before the imports below, which need the wheels' packages
    install_wheels(Path(sys.argv[sys.argv.index("--wheels") + 1]))


from benchmarks import gpu_check_graphs as graphs  # noqa: E402
from tests.support.decode_ops import ops_per_decode_call  # noqa: E402
from tests.support.qwen3_tiny import CharTokenizer  # noqa: E402
from tts_app.backends.params import SpeechParams  # noqa: E402
from tts_app.backends.qwen3 import Qwen3Backend  # noqa: E402
from tts_app.engine import Engine  # noqa: E402
from tts_app.models.qwen3.codec import CodecDecoder  # noqa: E402
from tts_app.models.qwen3.config import CodecConfig, CodePredictorConfig, Qwen3TTSConfig, TalkerConfig  # noqa: E402
from tests.support.qwen3_talker import tiny_configs  # noqa: E402  (the tests' miniature)
from tts_app.models.qwen3.generator import BatchedGenerator  # noqa: E402
from tts_app.models.qwen3.prompt import build_prompt  # noqa: E402
from tts_app.models.qwen3.sampling import SamplingParams  # noqa: E402
from tts_app.models.qwen3.streaming import decode_new_audio  # noqa: E402
from tts_app.models.qwen3.talker import Talker  # noqa: E402

SIZES = {"0.6b": dict(hidden_size=1024, intermediate_size=3072), "1.7b": dict(hidden_size=2048, intermediate_size=6144)}
FRAME_RATE = 12.5  # codec frames per second of audio
LEFT_CONTEXT = 25
TEXT = "The quick brown fox jumps over the lazy dog while the band plays on."


@dataclass(frozen=True)
class Plan:
    """What a run measures: the full plan on CUDA, a small one for --tiny."""

    models: tuple[str, ...]
    batches: tuple[int, ...]
    throughput_calls: int  # decode calls timed per batch size
    agreement_frames: int
    ops_batches: tuple[int, ...]
    first_audio_streams: tuple[int, ...]
    engine_streams: tuple[int, ...]
    engine_frames: int  # frames per engine stream (EOS suppressed)
    engine_timeout_s: float
    max_seq_len: int


# 0.6B only (the goals' size): the 1.7B rows of the first run made room for the codec and Chatterbox sections.
FULL = Plan(("0.6b",), (1, 8, 32, 64, 128), 15, 64, (1, 8, 32), (1, 8, 32, 64), (1, 16, 64), 150, 45.0, 1024)
TINY = Plan(("tiny",), (1, 4), 2, 8, (1, 4), (1, 2), (1, 2), 8, 60.0, 256)


class Model:
    """A random talker + codec at one size, on the run's device."""

    def __init__(self, name: str, device: torch.device, dtype: torch.dtype) -> None:
        if name == "tiny":
            self.cfg, codec_cfg = tiny_configs(num_code_groups=4)
        else:
            self.cfg = Qwen3TTSConfig(talker_config=TalkerConfig(**SIZES[name], code_predictor_config=CodePredictorConfig()))
            codec_cfg = CodecConfig()
        torch.manual_seed(0)
        with torch.device(device):
            self.talker = Talker(self.cfg.talker_config).to(dtype).eval()
            self.codec = CodecDecoder(codec_cfg).to(dtype).eval()
        self.prompt, self.tail = build_prompt(self.talker, self.cfg, CharTokenizer().prompt_tokens(TEXT))

    def generator(self, batch: int, plan: Plan, graphs: bool) -> BatchedGenerator:
        return BatchedGenerator(self.talker, self.cfg.tts_pad_token_id, max_batch=batch, max_seq_len=plan.max_seq_len,
                                frames_per_step=4, use_cuda_graphs=graphs)

    def admit(self, gen: BatchedGenerator, seeds: list[int], frames: int, greedy: bool = False) -> list:
        n = len(seeds)
        base = SamplingParams.greedy() if greedy else SamplingParams()
        params = [SamplingParams(**{**base.__dict__, "max_new_tokens": frames, "min_new_tokens": frames})] * n  # EOS suppressed
        return gen.prefill([self.prompt] * n, [self.tail] * n, params, seeds)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _run_all(gen: BatchedGenerator, states: list) -> None:
    while not all(s.done for s in states):
        gen.decode(states)


def agreement(model: Model, plan: Plan, device: torch.device) -> dict[str, Any]:
    """Token agreement per row: graphs vs eager (CUDA), and batched vs each row alone (both modes)."""
    seeds = [11, 12, 13, 14]
    modes = [False, True] if device.type == "cuda" else [False]
    codes: dict[str, list[torch.Tensor]] = {}
    for graphs in modes:
        gen = model.generator(4, plan, graphs)
        states = model.admit(gen, seeds, plan.agreement_frames)
        _run_all(gen, states)
        codes[f"batched_graphs_{graphs}"] = [s.all_codes() for s in states]
        alone = []
        for seed in seeds:
            solo = model.generator(1, plan, graphs)
            (state,) = model.admit(solo, [seed], plan.agreement_frames)
            _run_all(solo, [state])
            alone.append(state.all_codes())
        codes[f"alone_graphs_{graphs}"] = alone

    def agree(a: list[torch.Tensor], b: list[torch.Tensor]) -> list[float]:
        return [round(float((x == y).float().mean()), 4) if x.shape == y.shape else 0.0 for x, y in zip(a, b)]

    out = {f"batched_vs_alone_{'graphs' if g else 'eager'}": agree(codes[f"batched_graphs_{g}"], codes[f"alone_graphs_{g}"]) for g in modes}
    out["graphs_vs_eager"] = agree(codes["batched_graphs_True"], codes["batched_graphs_False"]) if len(modes) == 2 else "no CUDA"
    return out


def throughput(model: Model, plan: Plan, device: torch.device, batch: int) -> dict[str, Any]:
    """``batch`` rows through ``plan.throughput_calls`` decode calls (+ the codec), after one untimed call."""
    graphs = device.type == "cuda"
    gen = model.generator(batch, plan, graphs)
    t0 = time.perf_counter()
    states = model.admit(gen, list(range(batch)), 4 * (plan.throughput_calls + 1))
    gen.decode(states)  # captures the one graph this run needs (on CUDA)
    _sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    frames, w0, c0 = 0, time.perf_counter(), time.process_time()
    for _ in range(plan.throughput_calls):
        new = gen.decode(states)
        decode_new_audio(model.codec, [s.codes for s in states], [n.shape[0] for n in new], LEFT_CONTEXT)
        frames += sum(n.shape[0] for n in new)
    _sync(device)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
    return dict(batch=batch, graphs=graphs, frames=frames, frames_per_s=round(frames / wall, 1),
                x_real_time=round(frames / FRAME_RATE / wall, 2), cpu_s_per_wall_s=round(cpu / wall, 3),
                peak_gpu_gib=None if peak is None else round(peak, 2), first_call_s=round(w0 - t0, 2))


def ops(model: Model, plan: Plan, device: torch.device) -> dict[str, Any]:
    out = {}
    for batch in plan.ops_batches:
        gen = model.generator(batch, plan, device.type == "cuda")
        states = model.admit(gen, list(range(batch)), 64)
        out[str(batch)] = ops_per_decode_call(gen, states)
    return out


def first_audio(model: Model, plan: Plan, device: torch.device) -> dict[str, Any]:
    """N streams admitted at once: prefill + first decode call + its audio, median of 3 after a warm-up."""
    out = {}
    for n in plan.first_audio_streams:
        gen = model.generator(n, plan, device.type == "cuda")
        times = []
        for rep in range(4):  # the first (untimed) captures the graph
            _sync(device)
            t0 = time.perf_counter()
            states = model.admit(gen, list(range(n)), 64)
            new = gen.decode(states)
            decode_new_audio(model.codec, [s.codes for s in states], [x.shape[0] for x in new], LEFT_CONTEXT)
            _sync(device)
            if rep:
                times.append(time.perf_counter() - t0)
            for s in states:
                gen.release(s)
        out[str(n)] = round(statistics.median(times) * 1000, 1)
    return {"ms_median": out}


def _listen(handle: Any, t0: float, sample_rate: int, out: dict[str, Any]) -> None:
    """One stream's client: first chunk time, and the stall of a 1x player that starts at the first chunk."""
    first, heard_until, stall, audio = None, 0.0, 0.0, 0.0
    for chunk in handle:
        now = time.perf_counter() - t0
        if first is None:
            first, heard_until = now, now
        stall += max(0.0, now - heard_until)  # the player ran dry before this chunk came
        heard_until = max(heard_until, now) + chunk.size / sample_rate
        audio += chunk.size / sample_rate
    out.update(first=first, stall=stall, audio=audio, end=time.perf_counter() - t0)


def engine_runs(model: Model, plan: Plan, device: torch.device) -> list[dict[str, Any]]:
    rows = []
    sampling = SamplingParams(max_new_tokens=plan.engine_frames, min_new_tokens=plan.engine_frames)  # EOS suppressed
    backend = Qwen3Backend(model.cfg, model.talker, model.codec, CharTokenizer(), None, sampling=sampling,
                           max_batch=max(plan.engine_streams), max_seq_len=plan.max_seq_len)
    capture_s = backend.capture_graphs()  # every bucket, as the server does at start-up
    for policy in ("fifo", "deadline"):
        engine = Engine(backend, max_batch_size=max(plan.engine_streams), policy=policy)
        try:
            for h in [engine.submit(TEXT, SpeechParams(seed=s)) for s in range(4)]:  # warm-up
                h.result(timeout=plan.engine_timeout_s)
            for n in plan.engine_streams:
                rows.append(_engine_run(engine, n, policy, plan, capture_s))
                _wait_idle(backend)
        finally:
            engine.close()
    return rows


def _wait_idle(backend: Qwen3Backend, limit_s: float = 30.0) -> None:
    """Until the cancelled streams of a run cut short have left their slots (the next run starts from none)."""
    end = time.perf_counter() + limit_s
    while backend.free_slots < backend.max_batch_size and time.perf_counter() < end:
        time.sleep(0.05)


def _engine_run(engine: Engine, n: int, policy: str, plan: Plan, capture_s: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    handles = [engine.submit(TEXT, SpeechParams(seed=100 + i)) for i in range(n)]
    results: list[dict[str, Any]] = [{} for _ in handles]
    threads = [threading.Thread(target=_listen, args=(h, t0, engine.sample_rate, r), daemon=True) for h, r in zip(handles, results)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, plan.engine_timeout_s - (time.perf_counter() - t0)))
    finished = [r for r in results if "end" in r]
    for h in handles:
        h.cancel()
    row: dict[str, Any] = dict(policy=policy, streams=n, finished=len(finished), capture_s=round(capture_s, 2))
    if len(finished) < n:
        row["note"] = f"{n - len(finished)} streams not finished within {plan.engine_timeout_s:.0f} s"
    if finished:
        firsts = [r["first"] for r in finished]
        audio = sum(r["audio"] for r in finished)
        row.update(first_audio_p50_s=round(float(np.percentile(firsts, 50)), 3), first_audio_p95_s=round(float(np.percentile(firsts, 95)), 3),
                   stall_fraction=round(sum(r["stall"] for r in finished) / max(audio, 1e-9), 4),
                   audio_s_per_s=round(audio / max(r["end"] for r in finished), 1))
    return row


def _env(device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return dict(device=torch.cuda.get_device_name() if device.type == "cuda" else "cpu", torch=torch.__version__,
                dtype=str(dtype).replace("torch.", ""), cpu=cpu, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))


def _section(results: dict[str, Any], out: Path, name: str, fn: Callable[[], Any]) -> None:
    t0 = time.perf_counter()
    results[name] = fn()
    results.setdefault("seconds", {})[name] = round(time.perf_counter() - t0, 1)
    (out / "gpu_check.json").write_text(json.dumps(results, indent=1))
    print(f"{name} ({results['seconds'][name]} s): {json.dumps(results[name])}", flush=True)


SECTIONS = ("agreement", "ops", "throughput", "first_audio", "engine", "codec", "chatterbox")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for gpu_check.json")
    ap.add_argument("--tiny", action="store_true", help="tiny random model on CPU: a smoke run of the same code")
    ap.add_argument("--wheels", type=Path, help="install these wheels (scripts/gather_gpu_wheels.sh) before the run")
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections (default all: {','.join(SECTIONS)})")
    args = ap.parse_args(argv)
    if args.wheels is not None and __name__ != "__main__":  # as a script they were installed before the imports
        install_wheels(args.wheels)
    only = set(args.only.split(","))
    if only - set(SECTIONS):
        ap.error(f"unknown sections: {sorted(only - set(SECTIONS))}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cpu" if args.tiny or not torch.cuda.is_available() else "cuda")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    plan = TINY if args.tiny else FULL
    results: dict[str, Any] = {"plan": plan.__dict__}
    _section(results, out, "env", lambda: _env(device, dtype))
    first = Model(plan.models[0], device, dtype)
    if "agreement" in only:
        _section(results, out, "agreement", lambda: agreement(first, plan, device))
    if "ops" in only:
        _section(results, out, "ops", lambda: ops(first, plan, device))
    if "throughput" in only:
        rows: list[dict[str, Any]] = []
        for name in plan.models:
            model = first if name == plan.models[0] else Model(name, device, dtype)
            for batch in plan.batches:
                rows.append(dict(model=name, **throughput(model, plan, device, batch)))
                results["throughput"] = rows
                (out / "gpu_check.json").write_text(json.dumps(results, indent=1))
        _section(results, out, "throughput", lambda: rows)
    if "first_audio" in only:
        _section(results, out, "first_audio", lambda: first_audio(first, plan, device))
    if "engine" in only:
        _section(results, out, "engine", lambda: engine_runs(first, plan, device))
    graph_plan = graphs.TINY if args.tiny else graphs.FULL
    if "codec" in only:
        _section(results, out, "codec", lambda: graphs.codec_section(first.codec, graph_plan, device, LEFT_CONTEXT))
    del first
    if device.type == "cuda":
        torch.cuda.empty_cache()
    if "chatterbox" in only:
        _section(results, out, "chatterbox", lambda: graphs.chatterbox_section(graph_plan, device))
    return results


if __name__ == "__main__":
    main()
