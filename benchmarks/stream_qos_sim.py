"""Streams under load on a simulated Piper-like CPU (tests/support/piper_like.py): the stream_qos runs,
in simulated seconds, so a policy's figures do not depend on this machine's load or neighbours.

The machine steps like the embedded voice on the 2-core CPU of 2026-11-27 (capacity about 13.4 audio-s/s;
text stage, flow and decoder costs as measured there), without its jitter: read the figures as what
the policy does, and stream_qos.py as what a real machine gives. Rows: bursts of 0.5, 0.75, 1.0 and
1.5 x C, Poisson arrivals at 0.75 x C for 60 s; per policy (and ``--margin M``: the deadline policy
admitting up to M of the machine): time to first audio p95, glitch-free start p50/p95, stall fraction,
throughput, ETA error p95 of queued requests (as stream_qos.py computes them).

    python benchmarks/stream_qos_sim.py [--margin 1.0] [--speed 2.75] [--slots 16]
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import replace
from typing import Any

import common
from tests.support.fake_backend import SimClock
from tests.support.piper_like import PiperLikeBackend
from tts_app.backends.params import SpeechParams
from tts_app.engine import Engine
from tts_app.engine.qos_settings import QosSettings

NAME = "stream_qos_sim"
SENTENCES = 7  # about 16.6 s of audio a stream
BURSTS = (0.5, 0.75, 1.0, 1.5)


def _text(tag: str) -> str:
    return ". ".join([tag] * SENTENCES)


def _capacity(speed: float) -> tuple[float, float]:
    """Audio-s/s of 16 whole requests under fifo, and one stream's seconds of audio."""
    clock = SimClock()
    backend = PiperLikeBackend(clock, speed=speed)
    with Engine(backend, max_batch_size=16, policy="fifo", clock=clock) as engine:
        handles = engine.submit_many([_text(f"c{i}") for i in range(16)], SpeechParams(stream=False), in_order=False)
        audio = sum(h.result(timeout=120).size for h in handles) / backend.sample_rate
    return audio / clock(), audio / 16


def _run(policy: str, qos: QosSettings, arrivals: list[float], speed: float = 1.0, slots: int | None = None) -> dict[str, float]:
    """Streams arriving at ``arrivals`` (simulated seconds from the start; zeros: one burst); ``slots`` None: the
    engine's default ($TTS_APP_ENGINE_SLOTS)."""
    clock = SimClock()
    backend = PiperLikeBackend(clock, speed=speed)
    engine = Engine(backend, max_batch_size=slots, max_queue=256, policy=policy, qos=qos, clock=clock)
    heard: dict[int, list[tuple[float, float]]] = {}
    deliver = engine._deliver

    def logged(req, out, now):  # when each piece of audio reached its listener, in simulated seconds
        if out.audio.size:
            heard.setdefault(req.id, []).append((clock(), out.audio.size / backend.sample_rate))
        deliver(req, out, now)

    engine._deliver = logged
    with engine:
        engine.submit(_text("warm")).result(timeout=120)  # the step costs learnt from one stream
        t0 = clock()
        pending = [t0 + a for a in arrivals if a > 0]
        subs = [(t0, h) for h in engine.submit_many([_text(f"s{i}") for i in range(arrivals.count(0.0))], in_order=False)]

        def arrive() -> None:  # on the worker thread, after each step: arrivals happen in simulated time
            while pending and pending[0] <= clock():
                subs.append((pending.pop(0), engine.submit(_text(f"s{len(subs)}"), SpeechParams(seed=len(subs)))))

        backend.on_step = arrive
        while pending:  # an idle engine does not step: move its clock to the next arrival
            if not engine._scheduler.has_work():
                clock.t = pending[0]
                arrive()
            time.sleep(0.001)
        for _, h in subs:
            h.result(timeout=300)
        wall = clock() - t0
    ttfa, gfs, eta_err, stall, audio = [], [], [], 0.0, 0.0
    for arrived, h in subs:
        pieces, req = heard[h._req.id], h._req
        first, held, need, dry = pieces[0][0], 0.0, 0.0, pieces[0][0]
        for t, a in pieces:
            need = max(need, t - first - held)
            held += a
            stall += max(0.0, t - dry)
            dry = max(dry, t) + a
        ttfa.append(first - arrived)
        gfs.append(first - arrived + need)
        audio += held
        waited = req.admitted_at - req.submitted_at
        if max(req.eta_at_submit_s, waited) > 0.25:
            eta_err.append(abs(req.eta_at_submit_s - waited) / max(waited, 1.0))
    return {
        "streams": len(subs),
        "ttfa_p95_s": common.percentile(ttfa, 95),
        "glitch_free_start_p50_s": common.percentile(gfs, 50),
        "glitch_free_start_p95_s": common.percentile(gfs, 95),
        "stall_fraction": stall / audio,
        "throughput_audio_s_per_s": audio / wall,
        "eta_error_p95": common.percentile(eta_err, 95) if eta_err else float("nan"),
    }


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--margin", type=float, action="append", default=[],
                        help="also run the deadline policy admitting up to this much of the machine (deadline@M; repeatable)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speed", type=float, default=1.0, help="the machine this much faster (2.75: C about 37 audio-s/s)")
    parser.add_argument("--slots", type=int, default=None, help="the engines' slots (default: $TTS_APP_ENGINE_SLOTS)")


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    capacity, stream_s = _capacity(args.speed)
    print(f"simulated capacity C = {capacity:.2f} audio-s/s; a stream is {stream_s:.1f} s", flush=True)
    policies: dict[str, tuple[str, QosSettings]] = {
        "fifo": ("fifo", QosSettings(max_queue_wait_s=1e9)),
        "deadline": ("deadline", QosSettings(max_queue_wait_s=1e9)),
    }
    for m in args.margin:
        policies[f"deadline@{m:g}"] = ("deadline", replace(QosSettings(max_queue_wait_s=1e9), load_margin=m))
    rng = random.Random(args.seed)
    poisson, t = [], 0.0
    while True:
        t += rng.expovariate(0.75 * capacity / stream_s)
        if t > 60.0:
            break
        poisson.append(t)
    runs = [(f"burst {f} x C", [0.0] * round(f * capacity)) for f in BURSTS] + [("Poisson 0.75 x C, 60 s", poisson)]
    rows: list[list[Any]] = []
    results: dict[str, Any] = {"capacity_audio_s_per_s": capacity, "stream_audio_s": stream_s, "runs": []}
    for label, arrivals in runs:
        for name, (policy, qos) in policies.items():
            s = _run(policy, qos, arrivals, args.speed, args.slots)
            results["runs"].append({"run": label, "policy": name, **s})
            rows.append([name, label, s["streams"], s["ttfa_p95_s"], s["glitch_free_start_p50_s"], s["glitch_free_start_p95_s"],
                         s["stall_fraction"], s["throughput_audio_s_per_s"], s["eta_error_p95"]])
            print(f"{name:13s} {label}: {s}", flush=True)
    path = common.write_results(f"{NAME}_x{args.speed:g}" if args.speed != 1.0 else NAME, results)
    headers = ["policy", "run", "streams", "TTFA p95", "glitch-free p50", "glitch-free p95", "stall fraction", "audio-s/s", "ETA err p95"]
    common.report(f"Streams on the simulated Piper-like CPU (C = {capacity:.2f} audio-s/s)", common.markdown_table(headers, rows))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
