"""Seconds a step costs, learnt from measured steps: per kind of step (the backend's key: a window
size), a fixed part paid once by a step that holds rows of that key and a part per row.

A CPU pays per row (a fixed part near zero), a GPU mostly per step (rows nearly free): admission and
the choice of rows depend on telling the two apart, which one-row steps cannot do. So the parts are
fitted by least squares over the recent steps of different sizes, and a key whose steps were all of
one size is reported as not yet separated (the scheduler then explores a larger batch).

Service alone may never show the split again: admission keeps steps near one size (two streams on a
CPU that feeds two), and a few noisy steps of one or two rows then tilt the fit (Pocket TTS on 2 cores:
a fixed part of 74 ms and 27 ms a row after the start-up sweep drifted to 26 ms and 75 ms within a
minute, and admission fell to one stream). So the start-up sweep's steps stay in the fit as anchors
(``anchor``), their seconds scaled by how the recent steps compare with the sweep's own fit, so that
they keep the split while the recent steps set the level (a machine that slows down by half stays
slower by half, at the sweep's split).

A line is not every machine's curve: Pocket TTS on 2 cores stepped 1, 2, 4 and 8 rows in 87-97, 134-190,
166-195 and 248-277 ms, and a line through them under-priced two rows by 10-40 %; admission then took two
streams that stalled. So each batch size's steps of one key are also averaged as measured, and a stream's
price at ``n`` rows is the line's times how much dearer ``n`` rows measured, where that is more than
``_MISFIT`` (``StreamLoad.step_factor``; never cheaper than the line, which stays the cautious reading elsewhere,
and a size within the noise of its average keeps the line's price: Piper's sizes all lie on it). A size not stepped for a while
fades back to the line (``_DECAY`` per step), so one slow spell does not shut it out for good.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from tts_app.backends.base import StepEstimate

_HISTORY = 256  # steps kept for the fit (older ones have left the machine's current state behind)
_DECAY = 0.99  # a step's weight in the fit shrinks by this per newer step: the estimates follow the machine
# Ties the parts when the steps cannot separate them: a fixed part is pulled to 0 far harder than a row's
# part to its prior, so an unseparated key puts its whole step on its rows (the cautious reading).
_RIDGE_FIXED = 1e-6
_RIDGE_ROW = 1e-9
# A stream's load is a steady window's price times what finished streams really cost over their whole
# life against that price, once this much of their audio was measured: a steady window's price alone
# misses the text stage of every sentence and the small first windows (on the 2-core CPU of 2026-11-27
# it said 24 audio-s/s where the machine made 14-17). A ratio of like to like, so a fixed part not yet
# told from the rows' (a lone stream's steps) weighs the same on both sides and leaves it unchanged.
_ANCHOR_WEIGHT = 1.0  # each sweep step weighs as the newest step does (the recent steps' weights sum to ~100)
_MEASURED_AUDIO_S = 5.0
_MISFIT = 0.1  # a batch size measured this much dearer than the line (or more) is priced as measured
_STREAM_DECAY = 0.9  # a finished stream's weight shrinks by this per newer one


@dataclass(frozen=True)
class StreamLoad:
    """What streams cost the machine, in seconds of compute per second of audio: ``per_stream`` for
    each stream's own rows, ``per_step`` for the step overhead they share when they step together.
    ``probe``: the costs cannot yet tell the two apart (every step so far had as many rows)."""

    per_stream: float
    per_step: float
    probe: bool = False
    step_factor: tuple[float, ...] = ()  # [n - 1]: how much dearer n rows measured than the line (>= 1; the last for more)

    def places(self, margin: float) -> float:
        """How many streams stepping together fit in ``margin`` of the machine (inf when free)."""
        if self.per_stream <= 0:
            return math.inf if margin > self.per_step else 1.0
        places = (margin - self.per_step) / self.per_stream
        n = math.floor(places)
        if not self.step_factor or n < 1 or self.factor(n) <= 1.0:
            return places
        last = len(self.step_factor)
        if n > last:  # beyond the measured sizes the factor is the last one's: solved, not counted down
            far = math.floor((margin / self.step_factor[-1] - self.per_step) / self.per_stream)
            if far > last:
                return float(min(n, far))
            n = last
        while n > 1 and self.seconds_for(1.0, n) > margin:
            n -= 1
        return float(n)  # whole streams: the measured sizes say nothing between them

    def factor(self, rows: int) -> float:
        if not self.step_factor:
            return 1.0
        return self.step_factor[min(max(1, rows), len(self.step_factor)) - 1]

    def seconds_for(self, audio_s: float, sharing: int) -> float:
        """Wall time to make ``audio_s`` of one row's audio while ``sharing`` rows share every step."""
        return audio_s * (self.per_step + max(1, sharing) * self.per_stream) * self.factor(sharing)


@dataclass
class _SizeAverage:
    """One batch size's steps of one key: decayed sums of their seconds and of their count, and the step count
    when it was last fed (its average fades by the steps learnt since)."""

    seconds: float = 0.0
    weight: float = 0.0
    fed_at: int = 0

    def add(self, seconds: float, now: int) -> None:
        fade = _DECAY ** (now - self.fed_at)
        self.seconds = fade * self.seconds + seconds
        self.weight = fade * self.weight + 1.0
        self.fed_at = now


@dataclass(frozen=True)
class _Step:
    counts: tuple[tuple[str, int], ...]  # (key, rows of that key)
    seconds: float


class StepCosts:
    """Step time = sum over the keys in the step of (fixed[key] + rows[key] * row[key]).

    A key never measured costs its backend prior per row (``StepEstimate.cost_s``) and nothing fixed.
    ``learn`` refits every part by weighted least squares (recent steps weigh more, parts never
    negative); plain numbers only, a few keys: a small system solved per step.
    """

    def __init__(self) -> None:
        self._steps: deque[_Step] = deque(maxlen=_HISTORY)
        self._anchors: list[_Step] = []  # the start-up sweep's steps (``anchor``)
        self._anchor_fit: dict[str, tuple[float, float]] = {}  # key -> (fixed, per row) the sweep alone gave
        self._prior: dict[str, float] = {}
        self._row: dict[str, float] = {}
        self._fixed: dict[str, float] = {}
        self._sizes: dict[str, set[int]] = {}
        self._work_s = 0.0  # decayed sums over finished streams: their rows' work in seconds ...
        self._steady_s = 0.0  # ... what steady windows would have cost for their audio ...
        self._audio_s = 0.0  # ... and that audio
        self._by_size: dict[str, dict[int, _SizeAverage]] = {}  # key -> rows -> that size's steps
        self._learnt = 0  # steps learnt so far: a size's average fades by the steps since it was fed

    # -- what the scheduler plans with ------------------------------------------
    def row_cost(self, est: StepEstimate) -> float:
        return self._row.get(est.key, est.cost_s)

    def fixed_cost(self, key: str) -> float:
        return self._fixed.get(key, 0.0)

    def added_cost(self, est: StepEstimate, keys_in_step: Iterable[str]) -> float:
        """What one more row of ``est`` adds to a step that already holds ``keys_in_step``."""
        return self.row_cost(est) + (0.0 if est.key in keys_in_step else self.fixed_cost(est.key))

    def predict(self, ests: Sequence[StepEstimate]) -> float:
        return sum(self.fixed_cost(k) for k in {e.key for e in ests}) + sum(self.row_cost(e) for e in ests)

    def separated(self, key: str) -> bool:
        """True once steps of ``key`` with different row counts were measured (fixed and per-row apart)."""
        return len(self._sizes.get(key, ())) >= 2

    def stream_load(self, steady: StepEstimate) -> StreamLoad:
        """A stream's real-time load (see StreamLoad): its rows' part is the price of ``steady`` windows,
        times what finished streams cost against that price (text stages, first windows and pauses
        included) once enough of their audio was measured; the shared part is a ``steady`` step's."""
        if steady.audio_s <= 0:
            return StreamLoad(math.inf, 0.0)
        per_stream = self.row_cost(steady) / steady.audio_s
        if self._audio_s >= _MEASURED_AUDIO_S and self._steady_s > 0:
            per_stream *= self._work_s / self._steady_s
        return StreamLoad(per_stream, self.fixed_cost(steady.key) / steady.audio_s, probe=not self.separated(steady.key),
                          step_factor=self.step_factors(steady.key))

    def step_factors(self, key: str) -> tuple[float, ...]:
        """[n - 1]: a step of ``n`` rows of ``key`` as measured over the line's price for it (at least 1), for n
        up to the largest size measured; sizes between two measured ones take the larger factor of the two."""
        measured = {}
        for n, size in self._by_size.get(key, {}).items():
            line = self.fixed_cost(key) + n * self._row.get(key, 0.0)
            if size.weight > 0 and line > 0:
                fade = _DECAY ** (self._learnt - size.fed_at)
                over = size.seconds / size.weight / line - 1.0
                measured[n] = 1.0 + (over * fade if over > _MISFIT else 0.0)
        if not measured:
            return ()
        sizes = sorted(measured)
        factors = []
        for n in range(1, sizes[-1] + 1):
            below = max((m for m in sizes if m <= n), default=sizes[0])
            above = min(m for m in sizes if m >= n)
            factors.append(max(measured[below], measured[above]))
        return tuple(factors)

    def snapshot(self) -> dict[str, float]:
        """Per-row costs by key, and each key's fixed part as ``fixed:KEY``."""
        return {**self._row, **{f"fixed:{k}": v for k, v in self._fixed.items()}}

    # -- learning -----------------------------------------------------------------
    def learn(self, ests: Sequence[StepEstimate], seconds: float) -> None:
        """One measured step of rows ``ests`` that took ``seconds``: refit every key's parts."""
        if seconds <= 0 or not ests:
            return
        counts = Counter(e.key for e in ests)
        for e in ests:
            self._prior.setdefault(e.key, max(e.cost_s, 1e-9))
        for k, n in counts.items():
            self._sizes.setdefault(k, set()).add(n)
        self._steps.append(_Step(tuple(sorted(counts.items())), seconds))
        self._learnt += 1
        if len(counts) == 1:  # a step of one key: that size's own measure
            ((k, n),) = counts.items()
            self._by_size.setdefault(k, {}).setdefault(n, _SizeAverage()).add(seconds, self._learnt)
        self._fit()

    def row_shares(self, ests: Sequence[StepEstimate], seconds: float, steady_key: str) -> list[float]:
        """A measured step's row work (its time less the fixed parts), split over its rows as their costs.

        A key not yet separated (its steps all of one size: a newcomer's first window, stepped alone)
        has no fixed part of its own to take out: the steady key's stands in, as the machine's step
        overhead (else a GPU's one-row first steps would put the whole step on the rows)."""
        keys = {e.key for e in ests}
        fixed = sum(self.fixed_cost(k if self.separated(k) else steady_key) for k in keys)
        rows_s = max(0.0, seconds - fixed)
        costs = [self.row_cost(e) for e in ests]
        total = sum(costs)
        if total <= 0:
            return [rows_s / len(ests)] * len(ests) if ests else []
        return [rows_s * c / total for c in costs]

    def observe_stream(self, work_s: float, audio_s: float, steady: StepEstimate) -> None:
        """A stream finished: ``work_s`` seconds of row work made its ``audio_s`` seconds of audio."""
        if audio_s > 0 and steady.audio_s > 0:
            self._work_s = _STREAM_DECAY * self._work_s + work_s
            self._steady_s = _STREAM_DECAY * self._steady_s + audio_s * self.row_cost(steady) / steady.audio_s
            self._audio_s = _STREAM_DECAY * self._audio_s + audio_s

    def anchor(self) -> None:
        """Keep the steps learnt so far (the start-up sweep over batch sizes) in every later fit (see the
        module's note); the next steps start the recent history."""
        self._anchors = list(self._steps)
        self._anchor_fit = {k: (self._fixed[k], self._row[k]) for k in self._fixed}
        self._steps.clear()

    def _anchor_scale(self, w_M: np.ndarray) -> float:
        """How much slower (> 1) or faster the recent steps ran than the sweep's fit predicts for them."""
        seen = predicted = 0.0
        for w, s in zip(w_M, self._steps):
            if all(k in self._anchor_fit for k, _ in s.counts):
                seen += w * s.seconds
                predicted += w * sum(self._anchor_fit[k][0] + n * self._anchor_fit[k][1] for k, n in s.counts)
        return seen / predicted if seen > 0 and predicted > 0 else 1.0

    def _fit(self) -> None:
        m = len(self._steps)
        w_M = _DECAY ** np.arange(m - 1, -1, -1, dtype=float)
        steps = list(self._steps)
        if self._anchors:
            scale = self._anchor_scale(w_M)
            steps += [_Step(s.counts, s.seconds * scale) for s in self._anchors]
            w_M = np.concatenate([w_M, np.full(len(self._anchors), _ANCHOR_WEIGHT)])
            m = len(steps)
        keys = sorted({k for s in steps for k, _ in s.counts})
        col = {k: i for i, k in enumerate(keys)}  # column 2i: key i's fixed part, 2i+1: its per-row part
        a_MxV = np.zeros((m, 2 * len(keys)))
        t_M = np.empty(m)
        for i, s in enumerate(steps):
            t_M[i] = s.seconds
            for k, n in s.counts:
                a_MxV[i, 2 * col[k]] = 1.0
                a_MxV[i, 2 * col[k] + 1] = n
        # The ridge terms are relative (a fixed part to a typical step, a row's part to its prior) so that
        # they weigh the same on a machine 100x faster.
        scale = float(np.average(t_M, weights=w_M))
        prior_V = np.zeros(2 * len(keys))
        ridge_V = np.zeros(2 * len(keys))
        for k, i in col.items():
            prior_V[2 * i + 1] = self._prior[k]
            ridge_V[2 * i] = _RIDGE_FIXED
            ridge_V[2 * i + 1] = _RIDGE_ROW * (scale / self._prior[k]) ** 2
        ridge_V *= w_M.sum()
        free = np.ones(2 * len(keys), dtype=bool)
        theta_V = np.zeros(2 * len(keys))
        # Active set: a part fitted negative (noise) is held at 0 and the rest refitted.
        for _ in range(2 * len(keys)):
            cols = np.flatnonzero(free)
            a = a_MxV[:, cols]
            lhs = (a * w_M[:, None]).T @ a + np.diag(ridge_V[cols])
            rhs = (a * w_M[:, None]).T @ t_M + ridge_V[cols] * prior_V[cols]
            theta_V[:] = 0.0
            theta_V[cols] = np.linalg.solve(lhs, rhs)
            negative = cols[theta_V[cols] < 0]
            if not negative.size:
                break
            free[negative] = False
        theta_V = np.maximum(theta_V, 0.0)
        for k, i in col.items():
            self._fixed[k] = float(theta_V[2 * i])
            self._row[k] = float(theta_V[2 * i + 1])
