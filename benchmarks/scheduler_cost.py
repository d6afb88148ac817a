"""What the scheduler costs under the engine's lock (issue 49): submit's queue check and ETA, a poll's ETA, and an
admission, with 256 requests queued and 64 running (64 slots; streams of 4 clients and app work mixed, listeners
holding 0-8 s, costs measured at two batch sizes); p50/p99 over ``--rounds`` calls each, in ms of wall
and of the thread's CPU time.

    python benchmarks/scheduler_cost.py [--rounds 2000]
"""

from __future__ import annotations

import argparse
import random
import time

import common
from tts_app.backends.base import RowInput
from tts_app.backends.params import SpeechParams
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import Request, RequestStatus
from tts_app.engine.scheduler import Scheduler
from tts_app.engine.step_costs import StepCosts

NOW = 1000.0


def _request(i: int, rng: random.Random, running: bool) -> Request:
    r = Request(RowInput(i, "w", SpeechParams()), id=i, stream=rng.random() < 0.8,
                client=rng.choice([None, "a", "b", "c", "d"]), sample_rate=1000)
    r.group, r.audio_est_s, r.submitted_at = i, rng.uniform(2.0, 20.0), NOW - 5.0
    if running:
        r.status, r.admitted_at, r.remaining_est_s = RequestStatus.RUNNING, NOW - 4.0, rng.uniform(0.0, 15.0)
        r.play_deadline = NOW + rng.uniform(0.0, 8.0) if r.stream else None
    return r


def _timed(fn, rounds: int) -> tuple[list[float], list[float]]:
    """Wall ms and this thread's CPU ms per call (on a shared machine the wall time also counts preemption)."""
    wall, cpu = [], []
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.thread_time()
        fn()
        wall.append(1000 * (time.perf_counter() - t0))
        cpu.append(1000 * (time.thread_time() - c0))
    return wall, cpu


def _extra_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=int, default=2000)


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0], _extra_args)
    rng = random.Random(3)
    sched = Scheduler(64, 1024, "deadline", QosSettings(client_share=1.0, max_queue_wait_s=60.0))
    costs = StepCosts()
    costs.learn(1, 0.08, 1.0)
    costs.learn(16, 0.9, 16.0)  # a CPU-like machine: about 18 audio-s/s at 16 rows
    sched.running = [_request(i, rng, True) for i in range(64)]
    sched.waiting.extend(_request(1000 + i, rng, False) for i in range(256))
    new = _request(5000, rng, False)
    probe = sched.waiting[128]
    rows = []
    for name, fn in [
        ("submit: queue check + ETA of a new request", lambda: (sched.check_room([new]), sched.eta([new], NOW, costs, extra=[new]))),
        ("poll: ETA of the 128th queued request", lambda: sched.eta([probe], NOW, costs)),
        ("admission (every slot held: the queue stays as it is)", lambda: sched.admit(costs, NOW)),
    ]:
        wall, cpu = _timed(fn, args.rounds)
        rows.append([name, common.percentile(wall, 50), common.percentile(wall, 99), common.percentile(cpu, 50), common.percentile(cpu, 99)])
        print(rows[-1], flush=True)
    common.report("Scheduler cost under the lock, 256 queued and 64 running (ms)",
                  common.markdown_table(["call", "wall p50", "wall p99", "CPU p50", "CPU p99"], rows))
    common.print_machine(common.machine_info())


if __name__ == "__main__":
    main()
