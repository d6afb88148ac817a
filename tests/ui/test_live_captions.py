"""The live caption box is capped while a run is made and sent only when it changes (issue 46, hole 4).

On e67156b the whole box was re-sent on every update: a page run of 50 x 2,000 characters sent 30 MB
of event stream for 100 KB of text.
"""

from tts_app.text.word_timing import WordTiming
from tts_app.web.ui.speak.captions_view import LiveCaptions, captions_html


def _line(n: int, start: float = 0.0) -> list[WordTiming]:
    return [WordTiming(f"w{i}", start + i * 0.3, start + i * 0.3 + 0.25) for i in range(n)]


def test_the_box_grows_to_its_cap_then_is_not_sent_again() -> None:
    box = LiveCaptions("run-1", max_words=10)
    assert box.update([_line(4)]) is None  # fewer words than a step: not sent yet
    first = box.update([_line(6)])
    assert first is not None and first.count("<span") == 6
    assert box.update([_line(6)]) is None  # nothing new: nothing sent
    capped = box.update([_line(8), _line(8, 3.0)])
    assert capped is not None and capped.count("<span") == 10
    assert box.update([_line(8), _line(20, 3.0)]) is None  # past the cap: the box no longer changes
    final = box.final([_line(8), _line(20, 3.0)])
    assert final == captions_html([_line(8), _line(20, 3.0)], "run-1") and final.count("<span") == 28


def test_the_bytes_sent_for_a_long_run_stay_bounded() -> None:
    """A run of 50 lines of 400 words, each word its own update: every update sent whole was quadratic."""
    box, lines, sent = LiveCaptions("run-2"), [], 0
    for n in range(50):
        lines.append([])
        for word in _line(400, n * 130.0):
            lines[-1].append(word)
            html = box.update(lines)
            sent += len(html) if html else 0
    whole = len(box.final(lines))
    assert sent < 15 * len(box.final(lines[:3]))  # a few dozen sends, each at most the capped box (~1,000 words)
    assert sent < whole  # all of it together less than the final box once (before: about 10,000 times it)
