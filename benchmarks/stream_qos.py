"""Streams under load: what a 1x listener gets from each scheduling policy, in one run.

First the capacity C (seconds of audio a second: 16 whole requests at once, after warming the
text's shapes), then bursts of 0.5, 0.75, 1.0 and 1.5 x C streams arriving at once, and Poisson
arrivals at 0.75 x C, each run once per policy ("fifo" and "deadline", the server's), the two taking
turns so that each pair meets the same load on a shared machine; a last table gives deadline / fifo
per run. Per run (with the 1-minute load average at its start): p50/p95 time
to first audio; p50/p95 glitch-free start (first chunk + the smallest prebuffer with which a 1x
player never stalls afterwards); stall seconds per stream and stall fraction (stall / audio) for a
player that starts at the first chunk; throughput; refusals; for requests that queued, the error
of the ETA the engine gave at submission against their real start.

    python benchmarks/stream_qos.py [--quick] [--shared PATH]

Bounded: every run ends when its streams end, and streams are of a fixed length; the full run
takes about 6 minutes on 2 Zen 4 cores, --quick about 2.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import common
from tts_app.engine import Engine, EngineBusy
from tts_app.engine.qos_settings import QosSettings
from tts_app.backends.params import SpeechParams

NAME = "stream_qos"
BURSTS = (0.5, 0.75, 1.0, 1.5)
POLICIES = ("fifo", "deadline")
QUEUED_S = 0.25
RUN_BOUND = 2.0  # a run is cut at this many times its expected length


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="short streams and a short Poisson run (a check, not figures)")
    parser.add_argument("--stream-words", type=int, default=None, help="words per stream (default 50: about 18 s; quick 16)")
    parser.add_argument("--poisson-s", type=float, default=None, help="seconds of Poisson arrivals (default 60; quick 10)")
    parser.add_argument("--max-batch", type=int, default=None, help="the engine's max_batch_size (default: the engine's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--margin", type=float, action="append", default=[],
                        help="also run the deadline policy with this admission load margin (labelled deadline@M; repeatable)")


@dataclass
class Listened:
    """One stream as its client saw it (perf_counter seconds)."""

    submitted: float
    refused: bool = False
    eta_s: float | None = None  # the engine's answer at submission, when it queued
    started: float | None = None  # when the engine admitted it
    arrivals: list[tuple[float, float]] = field(default_factory=list)  # (time, seconds of audio)

    @property
    def ttfa(self) -> float:
        return self.arrivals[0][0] - self.submitted

    def prebuffer(self) -> float:
        """The smallest wait after the first chunk with which a 1x player never runs dry."""
        first, held, need = self.arrivals[0][0], 0.0, 0.0
        for t, audio in self.arrivals:
            need = max(need, t - first - held)
            held += audio
        return need

    def stall(self) -> float:
        """Seconds a 1x player started at the first chunk waits for audio."""
        t0, a0 = self.arrivals[0]
        dry, stalled = t0 + a0, 0.0
        for t, audio in self.arrivals[1:]:
            if t > dry:
                stalled += t - dry
                dry = t
            dry += audio
        return stalled

    @property
    def audio(self) -> float:
        return sum(a for _, a in self.arrivals)


async def _listen(engine: Engine, text: str, seed: int, out: Listened) -> None:
    try:
        handle = engine.submit(text, SpeechParams(seed=seed))
    except EngineBusy:
        out.refused = True
        return
    out.eta_s = handle._req.eta_at_submit_s  # the wait the queue predicted at submission (Retry-After's)
    rate = engine.sample_rate
    try:
        async for chunk in handle.achunks():
            if chunk.audio.size:
                out.arrivals.append((time.perf_counter(), chunk.audio.size / rate))
    finally:
        out.started = handle._req.admitted_at


async def _bounded(tasks: list[asyncio.Task], timeout_s: float) -> bool:
    """Wait for ``tasks``; past ``timeout_s`` cancel them (their streams are cancelled in the engine).
    False when the run was cut short (a machine far slower than the one C was measured on)."""
    if not tasks:
        return True
    _, late = await asyncio.wait(tasks, timeout=timeout_s)
    for task in late:
        task.cancel()
    await asyncio.gather(*late, return_exceptions=True)
    return not late


async def _burst(engine: Engine, text: str, n: int, timeout_s: float) -> tuple[list[Listened], bool]:
    outs = [Listened(time.perf_counter()) for _ in range(n)]
    tasks = []
    for i, out in enumerate(outs):
        out.submitted = time.perf_counter()
        tasks.append(asyncio.create_task(_listen(engine, text, i, out)))
    return outs, await _bounded(tasks, timeout_s)


async def _poisson(engine: Engine, text: str, rate_per_s: float, duration_s: float, seed: int, timeout_s: float) -> tuple[list[Listened], bool]:
    rng = random.Random(seed)
    outs: list[Listened] = []
    tasks = []
    end = time.perf_counter() + duration_s
    while True:
        await asyncio.sleep(rng.expovariate(rate_per_s))
        if time.perf_counter() >= end:
            break
        out = Listened(time.perf_counter())
        outs.append(out)
        tasks.append(asyncio.create_task(_listen(engine, text, len(outs), out)))
    return outs, await _bounded(tasks, timeout_s)


def _summary(outs: Sequence[Listened], wall_s: float) -> dict[str, Any]:
    served = [o for o in outs if o.arrivals]
    ttfa = [o.ttfa for o in served]
    gfs = [o.ttfa + o.prebuffer() for o in served]
    stalls = [o.stall() for o in served]
    audio = sum(o.audio for o in served)
    # Queued: the engine predicted a wait, or one happened (a request admitted at the next step is not).
    queued = [o for o in served if o.eta_s is not None and o.started is not None
              and max(o.eta_s, o.started - o.submitted) > QUEUED_S]
    eta_err = [abs(o.eta_s - (o.started - o.submitted)) / max(o.started - o.submitted, 1.0) for o in queued]
    return {
        "streams": len(outs),
        "refused": sum(o.refused for o in outs),
        "ttfa_p50_s": common.percentile(ttfa, 50),
        "ttfa_p95_s": common.percentile(ttfa, 95),
        "glitch_free_start_p50_s": common.percentile(gfs, 50),
        "glitch_free_start_p95_s": common.percentile(gfs, 95),
        "stalled_streams": sum(s > 0.01 for s in stalls),
        "stall_per_stream_s": sum(stalls) / len(served) if served else float("nan"),
        "stall_fraction": sum(stalls) / audio if audio else float("nan"),
        "throughput_audio_s_per_s": audio / wall_s if wall_s > 0 else float("nan"),
        "queued": len(queued),
        "eta_error_p50": common.percentile(eta_err, 50),
        "eta_error_p95": common.percentile(eta_err, 95),
    }


RATIO_KEYS = ("ttfa_p95_s", "glitch_free_start_p95_s", "stall_fraction", "throughput_audio_s_per_s")


def _ratio(pair: dict[str, dict[str, Any]], key: str) -> str:
    """deadline's figure over fifo's ("-" when fifo's is 0 or missing)."""
    a, b = pair.get("deadline", {}).get(key), pair.get("fifo", {}).get(key)
    if a is None or b is None or not b or b != b:
        return "-" if a != b else "1.00"
    return f"{a / b:.2f}"


def _capacity(engine: Engine, text: str) -> float:
    engine.submit(text).result(timeout=600)  # the text's shapes, warm
    t0 = time.perf_counter()
    handles = [engine.submit(text, SpeechParams(seed=i, stream=False)) for i in range(16)]
    audio = sum(h.result(timeout=600).size for h in handles) / engine.sample_rate
    return audio / (time.perf_counter() - t0)


def _first_audio_alone(engine: Engine, text: str, repeats: int = 5) -> float:
    """One stream's time to first audio on an idle engine (median of ``repeats``; each cancelled at its
    first audio): the text stage of its first sentence and its first window, the floor of any start."""
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        handle = engine.submit(text, SpeechParams(seed=100 + i))
        next(iter(handle))
        times.append(time.perf_counter() - t0)
        handle.cancel()
        while not handle.done:
            time.sleep(0.01)
    return common.median(times)


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    info = common.machine_info()
    common.print_machine(info)
    words = args.stream_words or (16 if args.quick else 50)
    poisson_s = args.poisson_s if args.poisson_s is not None else (10.0 if args.quick else 60.0)
    text = common.text_of_words(common.load_sentences(args.shared), words)
    backend = common.load_backend(2)

    with Engine(backend, policy="fifo") as engine:
        capacity = _capacity(engine, text)
        stream_audio_s = engine.submit(text).result(timeout=600).size / engine.sample_rate
        floor_s = _first_audio_alone(engine, text)
    print(f"capacity C = {capacity:.2f} audio-s/s; a stream is {stream_audio_s:.1f} s of audio ({words} words)", flush=True)
    # Rows cost per row on a CPU: N streams arriving at once cannot all have sounded before N first
    # starts' worth of work (text stage + first window each), whatever the schedule.
    print(f"floor: one stream's first audio alone {floor_s * 1e3:.0f} ms (median of 5); N streams at once: "
          f"the last starts no sooner than about N x that", flush=True)

    results: dict[str, Any] = {"machine": info, "capacity_audio_s_per_s": capacity, "stream_audio_s": stream_audio_s,
                               "stream_words": words, "quick": args.quick, "first_audio_alone_s": floor_s, "runs": []}
    kwargs: dict[str, Any] = {} if args.max_batch is None else {"max_batch_size": args.max_batch}
    engines = {policy: Engine(backend, policy=policy, **kwargs) for policy in POLICIES}
    for margin in args.margin:  # the same policy with another admission margin, in the same turns
        engines[f"deadline@{margin:g}"] = Engine(backend, policy="deadline", qos=replace(QosSettings.from_env(), load_margin=margin), **kwargs)
    for engine in engines.values():
        engine.submit(text).result(timeout=600)  # learn this machine's step costs before the first burst
    runs: list[tuple[str, Any]] = [(f"burst {f} x C", ("burst", max(1, round(f * capacity)))) for f in BURSTS]
    runs.append((f"Poisson 0.75 x C, {poisson_s:.0f} s", ("poisson", 0.75 * capacity / stream_audio_s)))
    rows, by_run = [], {}
    try:
        # The policies take turns run by run: on a shared machine whose load drifts, each pair of runs
        # meets about the same load, and the ratios below compare them.
        for label, (kind, amount) in runs:
            for policy, engine in engines.items():
                load1 = os.getloadavg()[0]
                t0 = time.perf_counter()
                # A run's streams end about when the last admitted one has been heard, which depends on
                # C (measured on this machine), not on its speed; the bound is for a machine that slows down.
                if kind == "burst":
                    bound = RUN_BOUND * (stream_audio_s * max(1.0, amount / capacity) + 10.0)
                    outs, complete = asyncio.run(_burst(engine, text, int(amount), bound))
                else:
                    bound = RUN_BOUND * (poisson_s + stream_audio_s + 10.0)
                    outs, complete = asyncio.run(_poisson(engine, text, float(amount), poisson_s, args.seed, bound))
                summary = _summary(outs, time.perf_counter() - t0)
                summary.update(policy=policy, run=label, complete=complete, load1=load1)
                if kind == "burst":
                    summary["start_floor_s"] = int(amount) * floor_s  # the last of N to start, at the least
                results["runs"].append(summary)
                by_run.setdefault(label, {})[policy] = summary
                print(f"{policy:13s} {label}: {summary}", flush=True)
                rows.append([policy, label, f"{load1:.1f}", summary["streams"], summary["refused"], summary["ttfa_p50_s"],
                             summary["ttfa_p95_s"], summary["glitch_free_start_p50_s"], summary["glitch_free_start_p95_s"],
                             summary["stalled_streams"], summary["stall_per_stream_s"], summary["stall_fraction"],
                             summary["throughput_audio_s_per_s"], summary["queued"], summary["eta_error_p50"], summary["eta_error_p95"],
                             summary.get("start_floor_s", float("nan"))])
    finally:
        for engine in engines.values():
            engine.close()
    results["machine_after"] = common.machine_info()
    path = common.write_results(NAME, results)
    headers = ["policy", "run", "load 1 min", "streams", "refused", "TTFA p50", "TTFA p95", "glitch-free p50", "glitch-free p95",
               "stalled", "stall s/stream", "stall fraction", "audio-s/s", "queued", "ETA err p50", "ETA err p95",
               "start floor (N x one alone)"]
    common.report(f"Streams under load (C = {capacity:.2f} audio-s/s, streams of {stream_audio_s:.1f} s)", common.markdown_table(headers, rows))
    ratio_rows = [[label, *(_ratio(pair, key) for key in RATIO_KEYS)] for label, pair in by_run.items()]
    common.report("deadline / fifo, run by run (same machine, adjacent runs)", common.markdown_table(["run", *RATIO_KEYS], ratio_rows))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
