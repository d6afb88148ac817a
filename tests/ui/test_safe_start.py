"""The live player's start on the engine's safe signal (issue 34): held until the line being made is
safe, every line is done, or the hold limit passes; then everything held, in order, and all after."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tts_app.web.ui.speak.safe_start import SafeStart


@dataclass
class FakeHandle:
    done: bool = False
    safe: bool = False


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _seg(n: int) -> np.ndarray:
    return np.full(4, n, np.float32)


def _values(segments: list[np.ndarray]) -> list[int]:
    return [int(s[0]) for s in segments]


def test_audio_waits_for_the_line_being_made_to_be_safe_then_flows_in_order() -> None:
    first, second = FakeHandle(), FakeHandle()
    clock = Clock()
    gate = SafeStart([first, second], max_hold_s=3.0, clock=clock)
    assert gate.feed([]) == []  # nothing yet
    assert gate.feed([_seg(1)]) == []  # the first window: the engine says a player would run dry
    clock.t += 0.2
    assert gate.feed([_seg(2)]) == []
    first.safe = True
    clock.t += 0.1
    assert _values(gate.feed([_seg(3)])) == [1, 2, 3] and gate.open
    assert abs(gate.held_s - 0.3) < 1e-9
    first.safe = False  # once open, the player plays: audio goes straight on
    assert _values(gate.feed([_seg(4), _seg(5)])) == [4, 5]


def test_a_finished_first_line_hands_the_wait_to_the_next_line() -> None:
    """A short first line done before it was safe: the listener would hear it and then wait for line 2."""
    first, second = FakeHandle(done=True, safe=True), FakeHandle()
    gate = SafeStart([first, second], clock=Clock())
    assert gate.feed([_seg(1)]) == []
    second.safe = True
    assert _values(gate.feed([_seg(2)])) == [1, 2]


def test_every_line_done_opens_the_gate() -> None:
    handles = [FakeHandle(done=True), FakeHandle(done=True)]
    assert _values(SafeStart(handles, clock=Clock()).feed([_seg(7)])) == [7]


def test_a_run_that_never_gets_ahead_is_released_at_the_hold_limit_even_without_new_audio() -> None:
    clock = Clock()
    gate = SafeStart([FakeHandle()], max_hold_s=3.0, clock=clock)
    assert gate.feed([_seg(1)]) == []
    clock.t += 2.9
    assert gate.feed() == []
    clock.t += 0.2
    assert _values(gate.feed()) == [1] and abs(gate.held_s - 3.1) < 1e-9
    assert _values(gate.feed([_seg(2)])) == [2]


def test_flush_hands_over_what_is_held() -> None:
    gate = SafeStart([FakeHandle()], clock=Clock())
    gate.feed([_seg(1), _seg(2)])
    assert _values(gate.flush()) == [1, 2] and gate.open and gate.flush() == []
