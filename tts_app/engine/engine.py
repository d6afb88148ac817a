"""The engine: one worker thread turns every caller's requests into shared batched model passes."""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Sequence

import numpy as np

from tts_app import settings
from tts_app.backends.base import Backend, RowInput, StepOutput
from tts_app.backends.params import SpeechParams
from tts_app.engine import deadlines
from tts_app.engine.first_audio import FirstAudio
from tts_app.engine.handle import RequestHandle
from tts_app.engine.metrics import EngineCounters
from tts_app.engine.operator_log import MinuteSummary, RefusalLog, Totals
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import ClientMissing, EngineBusy, EngineClosed, LineRejected, Request, RequestStatus, build_requests
from tts_app.engine.scheduler import Scheduler
from tts_app.engine.step_costs import StepCosts

_LOGGER = logging.getLogger(__name__)
SLOTS_ENV = "TTS_APP_ENGINE_SLOTS"
IDLE_WAKE_S = 60.0  # an idle worker wakes this often, so a busy minute's summary is not held until the next request
_CALIBRATION_STEPS = 3  # measured per batch size, after an unmeasured first one (see Engine._calibrate)


def _default_backend(precision: str) -> Backend:
    from tts_app.backends.piper import PiperBackend  # start-up: the backend loads its model runtime: only when no backend is given
    from tts_app.models.piper.loader import load_default_voice  # start-up: tts_app.models.piper loads the model runtime (about 1 s): only when used

    return PiperBackend(load_default_voice(precision=precision))


def _isolated(fn: Callable[[list], list], items: list) -> list:
    """Run ``fn`` on the batch; if it raises, rerun row by row so one bad row fails alone."""
    try:
        return fn(items)
    except Exception as batch_error:  # noqa: BLE001 - any model error must stay contained
        if len(items) == 1:
            return [batch_error]
        _LOGGER.warning("batch of %d failed (%s); retrying rows one by one", len(items), batch_error)
    results = []
    for item in items:
        try:
            results.extend(fn([item]))
        except Exception as row_error:  # noqa: BLE001
            results.append(row_error)
    return results


class Engine:
    """Queues requests from any thread and serves them in continuous batches.

    Each step: schedule (drop cancelled, admit what ``Scheduler.verdict`` allows, plan the rows to step) -> run
    (prepare the admitted rows, advance the planned rows by one window) -> postprocess (stream each row's audio to its
    handle, retire finished rows at once, learn what the step cost). ``policy`` "deadline" (default) is the package
    paragraph's plan; "fifo" steps every row every step and admits into any free slot. ``max_batch_size`` (the
    slots) is $TTS_APP_ENGINE_SLOTS unless given, never more than a backend's own ``max_batch_size``. ``clock``
    (seconds, monotonic) is time.perf_counter unless a test simulates time. ``require_client`` (every engine the
    server serves): a submission must name who asks (``params.client``) or it is refused with ClientMissing, since
    shares and refusals are counted by that name (issue 46: the "Say it" button took the whole engine unnamed).
    """

    def __init__(
        self,
        backend: Backend | None = None,
        max_batch_size: int | None = None,
        max_queue: int = 256,
        precision: str = "exact",  # the embedded voice's: "exact" (float32) or "fast" (tts_app/models/piper/precision.py)
        policy: str = "deadline",
        qos: QosSettings | None = None,
        clock: Callable[[], float] | None = None,
        require_client: bool = False,
    ) -> None:
        if backend is not None and precision != "exact":
            raise ValueError("precision applies to the embedded voice; pass it to that backend's model instead")
        self.backend = backend if backend is not None else _default_backend(precision)
        self.sample_rate, self.policy, self.require_client = self.backend.sample_rate, policy, require_client
        self.qos = qos if qos is not None else QosSettings.from_env()
        self._clock = clock if clock is not None else time.perf_counter
        slots = max_batch_size if max_batch_size is not None else settings.value(SLOTS_ENV)
        slots = min(slots, getattr(self.backend, "max_batch_size", slots))
        self._scheduler = Scheduler(slots, max_queue, policy, self.qos)
        steady = self.backend.steady_estimate()
        self._costs = StepCosts(steady.cost_s / steady.audio_s if steady.audio_s > 0 else None)
        self._counters, self._lock, self._handles, self._closed = EngineCounters(), threading.Condition(), {}, False
        self._refusals = RefusalLog(_LOGGER, self._clock)  # a client's refusal: its cause once a minute at INFO
        self._summary = MinuteSummary(_LOGGER, self._clock)  # one short line a minute; the stats dict at DEBUG
        self._busy_until = 0.0  # the predicted end of the step in progress: nothing is admitted before it
        shape = self.backend.first_audio_shape()
        self._first_audio = FirstAudio(shape, self._clock) if shape is not None else None
        _LOGGER.info("engine %s: %d slots, about %.1f MB of memory a slot (%s)", self.backend.name, slots,
                     self.backend.slot_bytes() / 1e6, SLOTS_ENV)
        self._worker = threading.Thread(target=self._loop, name="tts-engine", daemon=True)
        self._worker.start()

    # -- caller side ------------------------------------------------------------
    def submit(self, text: str, params: SpeechParams | None = None) -> RequestHandle:
        """Queue one utterance and return at once; raises as ``submit_many`` does, with the text's own error."""
        try:
            (handle,) = self.submit_many([text], params)
        except LineRejected as exc:
            raise exc.error from None
        return handle

    def submit_many(self, texts: Sequence[str], params: SpeechParams | None = None, *, in_order: bool = True) -> list[RequestHandle]:
        """Queue several utterances with the same params as one group: all or none, entering the queue together (the
        lines of one click share their batches). Raises LineRejected (a ValueError naming the text's index) for a bad
        text, UnsupportedParameter (a ValueError) for what this model does not honour, ValueError for an unresolved
        voice (``params.voice`` is resolved by tts_app.engine.input_processing.resolve_params, outside the lock),
        EngineBusy when the queue (or the client's share of it) cannot take them all, or, for a ``params.client``,
        when they would wait past ``qos.max_queue_wait_s``. ``in_order`` (a page's lines): heard one after another,
        they hold one stream place and one client share; False: separate listeners."""
        if self._closed:
            raise EngineClosed("the engine is closed")
        params = params if params is not None else SpeechParams()
        if self.require_client and not params.client:
            raise ClientMissing("this engine serves visitors: every submission names its client (SpeechParams.client)")
        requests = build_requests(texts, params, self.backend, int(self.sample_rate), in_order)
        self.backend.prepare_params(params)  # a clip's voice state, say: here, not between two of the loop's steps
        with self._lock:
            now = self._clock()
            for req in requests:
                req.submitted_at = now
            try:  # a visitor is told at once; the app's own work (client None) waits
                self._scheduler.enqueue(requests, now, self._costs, max(0.0, self._busy_until - now), params.client is not None)
            except EngineBusy as busy:
                self._counters.rejected += len(requests)
                self._refusals.refused(params.client, str(busy))
                raise
            handles = [RequestHandle(self, req) for req in requests]
            self._handles.update((h._req.id, h) for h in handles)
            self._counters.submitted += len(requests)
            self._lock.notify_all()
        return handles

    def _eta(self, req: Request) -> float:
        with self._lock:
            if req.status is not RequestStatus.WAITING:
                return 0.0
            now = self._clock()  # admission comes after the step in progress ends
            return max(self._scheduler.eta([req], now, self._costs)[req.id], self._busy_until - now, 0.0)

    def _buffered(self, req: Request) -> float:
        return req.buffered_s(self._clock())

    def _queue_position(self, req: Request) -> int:
        with self._lock:
            return self._scheduler.position(req)

    def _wake(self) -> None:
        with self._lock:
            self._lock.notify_all()

    def _figures(self) -> dict:
        """The queue and capacity now (call under the lock): capacity is the audio-s/s made with as many streams
        as the engine admits, stepping together."""
        sched, rate = self._scheduler, self._costs.rate(self._scheduler.stream_places(self._costs))
        return {"queued": len(sched.waiting), "capacity_audio_s_per_s": rate if rate != float("inf") else 0.0,
                "streams_admitted": sum(1 for r in sched.running if r.stream)}

    def stats(self) -> dict:
        with self._lock:
            sched, figures = self._scheduler, self._figures()
            return {**self._counters.snapshot(), "queued": figures["queued"], "active": len(sched.running),
                    "max_batch_size": sched.max_batch_size, "policy": self.policy,
                    "capacity_audio_s_per_s": figures["capacity_audio_s_per_s"], "streams_active": figures["streams_admitted"],
                    "stream_places": sched.stream_places(self._costs), "step_costs": self._costs.snapshot(),
                    "emits_rows": bool(self.backend.emits_rows)}

    def qos_figures(self) -> dict:
        """What a server operator scrapes (tts_app/web/api/metrics.py): the listeners' histograms (copies) and the
        queue and capacity now."""
        with self._lock:
            return {**self._counters.queue_figures(), **self._figures()}

    def close(self, timeout: float = 30.0) -> None:
        """Stop the worker; requests still queued or running end with EngineClosed."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._worker.join(timeout)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- worker side ------------------------------------------------------------
    def _loop(self) -> None:
        try:
            self._calibrate()
            while self._step():
                pass
        finally:
            with self._lock:
                leftovers = self._scheduler.drain()
            for req in leftovers:
                self._retire(req, RequestStatus.FAILED, EngineClosed("the engine was closed"))

    def _step(self) -> bool:
        """One engine step; False once closed."""
        with self._lock:
            while not self._closed and not self._scheduler.has_work():
                if not self._lock.wait(IDLE_WAKE_S):
                    break  # idle a while: the last busy minute's summary may be due
            if self._closed:
                return False
            cancelled, admitted = [], []
            if self._scheduler.has_work():
                cancelled = self._scheduler.drop_cancelled()
                admitted = self._scheduler.admit(self._costs, self._clock())
        for req in cancelled:
            self._retire(req, RequestStatus.CANCELLED)
        self._prepare(admitted)
        rows = list(self._scheduler.running)  # the worker alone changes the running rows
        if self.policy == "deadline" and rows:
            ests = {r.id: self.backend.estimate_step(r.state) for r in rows}
            rows = deadlines.plan(rows, self._clock(), lambda r, n: self._costs.predict([ests[r.id]], n), self.qos)
        if rows:
            self._advance(rows)
        self._maybe_log()
        return True

    def _calibrate(self) -> None:
        """Before serving, when the backend offers a text for it: step rows of it in batches of 1, 2, 4 ... up to the
        slots, one step unmeasured (a size's first builds its shapes) then ``_CALIBRATION_STEPS`` measured, so that
        admission does not price a GPU's full batch as one-row steps (nor a CPU's as free). Requests queue meanwhile;
        a failure leaves the costs to be learnt in service."""
        text = self.backend.calibration_text()
        if text is None:
            return
        row = RowInput(0, text, params := SpeechParams(), self.backend.check_text(text, params))
        slots = self._scheduler.max_batch_size
        for n in sorted({min(2**i, slots) for i in range(slots.bit_length() + 1)}):
            if self._closed:
                return
            states: list = []
            try:
                live = states = self.backend.prepare([row] * n)
                for i in range(1 + _CALIBRATION_STEPS):
                    t0 = self._clock()
                    outs = self.backend.step(live)
                    if i:
                        with self._lock:
                            self._costs.learn(len(live), self._clock() - t0, sum(o.audio.size for o in outs) / self.sample_rate)
                    live = [s for s, out in zip(live, outs) if not out.done]
                    if not live:
                        break
            except Exception:  # noqa: BLE001 - a failed calibration leaves the costs to be learnt in service
                _LOGGER.exception("step-cost calibration failed at batch size %d", n)
                return
            finally:
                for s in states:
                    self.backend.release(s)

    def _prepare(self, admitted: list[Request]) -> None:
        """Run the text stage (or prefill) of newly admitted requests; those that started join the running rows."""
        if not admitted:
            return
        now = self._clock()
        for req in admitted:
            req.admitted_at = now
        states = _isolated(lambda reqs: self.backend.prepare([r.row for r in reqs]), admitted)
        started = []
        for req, state in zip(admitted, states):
            if isinstance(state, Exception):
                self._retire(req, RequestStatus.FAILED, state)
            else:
                req.state = state
                started.append(req)
        with self._lock:
            self._scheduler.start(started)

    def _advance(self, running: list[Request]) -> None:
        """One step for ``running``: each row's audio goes to its handle as soon as the backend emits it (a page's
        first line need not wait for the others), the rest when the step ends. A failed step is retried row by row
        for the rows not yet emitted, so one bad row fails alone; a retried row hands its first audio out whole."""
        if self.policy == "deadline":
            now = self._clock()
            for req in running:
                level = deadlines.window_level(req, now, self.qos)
                if level != req.window_level:
                    req.window_level = level
                    self.backend.set_window_level(req.state, level)
        t0 = self._clock()
        self._busy_until = t0 + self._costs.predict([self.backend.estimate_step(r.state) for r in running])
        emitted: dict[int, StepOutput] = {}  # request id -> its output, already delivered
        starting = sum(1 for r in running if not r.samples)  # the backend makes their first audio before its step
        plan = self._first_audio.plan(starting, len(self._scheduler.running)) if self._first_audio else None

        def run(reqs: list[Request]) -> list[StepOutput]:
            if len(reqs) == 1 and reqs[0].id in emitted:  # a retry after a failed batch: this row is done
                return [emitted[reqs[0].id]]

            def emit(i: int, out: StepOutput) -> None:
                emitted[reqs[i].id] = out
                self._deliver(reqs[i], out, self._clock())

            extra = {"plan": plan} if plan is not None and len(reqs) == len(running) else {}
            return self.backend.step([r.state for r in reqs], emit=emit, **extra)

        outputs: Sequence[StepOutput | Exception] = _isolated(run, running)
        now = self._clock()
        if plan is not None:
            self._first_audio.feed(plan, now)
        with self._lock:
            self._counters.record_step(len(running), now - t0)
            if not any(isinstance(out, Exception) for out in outputs):  # a retried step's time says nothing
                self._costs.learn(len(running), now - t0, sum(o.audio.size for o in outputs) / self.sample_rate)
        for req, out in zip(running, outputs):
            if isinstance(out, Exception):
                self._retire(req, RequestStatus.FAILED, out)
                continue
            req.batch_sizes.append(len(running))
            req.last_step_at = now
            req.remaining_est_s = 0.0 if out.done else self.backend.remaining_audio_s(req.state)
            if emitted.get(req.id) is not out:  # what the backend made after a row's emitted audio comes now
                self._deliver(req, out, now)
            if out.done:
                self._retire(req, RequestStatus.FINISHED)

    def _deliver(self, req: Request, out: StepOutput, now: float) -> None:
        """Hand one step's audio and words to the request's handle; move its listener's deadline."""
        if not (out.audio.size or out.words):
            return
        if out.audio.size:
            if req.first_audio_at is None:
                req.first_audio_at = now
                if req.stream:
                    with self._lock:
                        self._counters.ttfa.observe(now - req.submitted_at)
            req.played(now, out.audio.size / self.sample_rate)
        req.samples += out.audio.size
        self._counters.audio_produced_s += out.audio.size / self.sample_rate  # worker thread only: no lock
        self._handles[req.id]._push(np.asarray(out.audio, np.float32), out.words)

    def _retire(self, req: Request, status: RequestStatus, error: BaseException | None = None) -> None:
        """A request leaves for good: free its backend state, settle its handle."""
        if req.state is not None:
            try:
                self.backend.release(req.state)
            except Exception:  # noqa: BLE001 - a failed release must not stop the worker
                _LOGGER.exception("release failed for request %d", req.id)
            req.state = None
        req.status, req.error, req.finished_at = status, error, self._clock()
        if status is RequestStatus.FAILED and not isinstance(error, EngineClosed):
            _LOGGER.warning("request %d failed: %s", req.id, error)
        with self._lock:
            self._scheduler.remove([req])
            handle = self._handles.pop(req.id, None)
            self._counters.retired(req, status, self.sample_rate)
        if handle is not None:
            handle._finish()

    def _maybe_log(self) -> None:
        if self._summary.due():
            with self._lock:
                c, sched = self._counters, self._scheduler
                totals, queued, running = Totals(c.finished, c.audio_s, c.rejected, c.failed), len(sched.waiting), len(sched.running)
            self._summary.tick(totals, queued, running, self.stats)
