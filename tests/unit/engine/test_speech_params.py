"""SpeechParams: validated once, the one way into the engine; capabilities refuse what a backend does not honour."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
from tests.support.fake_backend import FakeBackend

from tts_app.models.capabilities import CHATTERBOX, PIPER, QWEN3, UnsupportedParameter
from tts_app.engine import Engine, SpeechParams
from tts_app.engine.input_processing import resolve_params, without_refused
from tts_app.text import parse_lexicon


def test_defaults_and_coercion() -> None:
    p = SpeechParams()
    assert (p.seed, p.speed, p.voice, p.voice_strength, p.normalize, p.lexicon, p.language, p.stream, p.client) == (
        0, 1.0, None, 1.0, None, None, None, True, None)  # fmt: skip
    q = SpeechParams(seed=np.int64(3), speed=np.float32(2), voice_strength=1)
    assert type(q.seed) is int and type(q.speed) is float and type(q.voice_strength) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.speed = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"speed": 0.1}, "speed must be between 0.25 and 4"),
        ({"speed": float("nan")}, "speed must be between"),
        ({"speed": "fast"}, "must be numbers"),
        ({"seed": -1}, "seed must be between 0 and"),
        ({"voice_strength": 1.5}, "voice_strength must be between 0 and 1"),
        ({"normalize": "yes"}, "normalize must be true, false or null"),
        ({"language": ""}, "language must be a short code"),
        ({"language": "x" * 17}, "language must be a short code"),
    ],
)
def test_bad_values_are_one_line_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        SpeechParams(**kwargs)
    assert "\n" not in str(info.value)


def test_the_loose_arguments_are_gone() -> None:
    assert list(inspect.signature(Engine.submit).parameters) == ["self", "text", "params"]
    assert list(inspect.signature(Engine.submit_many).parameters) == ["self", "texts", "params", "in_order"]
    with Engine(FakeBackend()) as engine:
        with pytest.raises(TypeError):
            engine.submit("a b", seed=3)  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            engine.submit_many(["a b"], voice=None, speed=1.0)  # type: ignore[call-arg]
        np.testing.assert_array_equal(engine.submit("a b", SpeechParams(seed=3)).result(timeout=30),
                                      engine.submit("a b", SpeechParams(seed=3)).result(timeout=30))


def test_the_engine_takes_resolved_voices_only() -> None:
    with Engine(FakeBackend()) as engine:
        for unresolved in (SpeechParams(voice="lj_female_us"), SpeechParams(voice=None, voice_text="hello")):
            with pytest.raises(ValueError, match="resolve_params"):
                engine.submit("a b", unresolved)
        assert engine.stats()["submitted"] == 0


def test_voice_resolution_happens_once_and_is_idempotent() -> None:
    resolved = resolve_params(SpeechParams(voice="lj_female_us", speed=1.5))
    assert resolved.voice_resolved and resolved.voice.name == "lj_female_us" and resolved.speed == 1.5
    assert resolve_params(resolved) is resolved  # nothing left to look up
    assert resolve_params(SpeechParams(voice="default")).voice is None
    with pytest.raises(ValueError, match="unknown voice"):
        resolve_params(SpeechParams(voice="no_such_voice"))


def test_an_ask_the_backend_does_not_honour_is_refused_before_queueing() -> None:
    backend = FakeBackend()  # a Backend's default capabilities: nothing beyond the text and the seed
    with Engine(backend) as engine:
        with pytest.raises(UnsupportedParameter, match=f"model {backend.name!r} does not support speed 2") as info:
            engine.submit("a b", SpeechParams(speed=2.0))
        assert info.value.param == "speed"
        assert engine.stats()["submitted"] == 0 and engine.stats()["rejected"] == 0
        engine.submit("a b", SpeechParams(speed=1.0, normalize=False)).result(timeout=30)  # defaults: fine


def test_refusals_name_each_parameter_asked_and_only_those() -> None:
    lexicon = parse_lexicon({"Siobhan": "shiv awn"})
    voice = object()  # any resolved voice: strength counts only with one
    plain = SpeechParams()
    asks = SpeechParams(speed=1.5, voice=voice, voice_strength=0.5, normalize=True, lexicon=lexicon, language="de")
    for caps in (QWEN3, CHATTERBOX):
        assert caps.refusals(plain, ["Hello."]) == []
        assert caps.refusals(SpeechParams(lexicon=lexicon), ["Hello there."]) == []  # no entry applies
        assert caps.refusals(SpeechParams(voice_strength=0.5), ["Hi."]) == []  # the model's own voice: nothing to weaken
        found = {r.param for r in caps.refusals(asks, ["<speak>Hello Siobhan.</speak>"])}
        assert found == {"speed", "voice_strength", "normalize", "lexicon", "input"} | ({"language"} if caps is CHATTERBOX else set())
    assert PIPER.refusals(dataclasses.replace(asks, language="en"), ["<speak>Hello Siobhan.</speak>"]) == []


def test_the_page_speaks_without_what_is_refused() -> None:
    from tts_app.web.ui.speak.handlers import spoken_without

    class _Engine:
        backend = FakeBackend()

    _Engine.backend.capabilities = QWEN3
    lexicon = parse_lexicon({"Siobhan": "shiv awn"})
    asked = SpeechParams(seed=4, speed=1.5, lexicon=lexicon, normalize=False)
    kept, note = spoken_without(asked, ["Hello Siobhan."], _Engine(), "Qwen3-TTS (tiny)")
    assert (kept.speed, kept.lexicon, kept.normalize, kept.seed) == (1.0, None, False, 4)
    assert note == "Qwen3-TTS (tiny) does not support speed 1.5, lexicon pronunciations: spoken without it."
    assert kept == without_refused(asked, ["Hello Siobhan."], QWEN3)[0]
    _Engine.backend.capabilities = PIPER
    assert spoken_without(asked, ["Hello Siobhan."], _Engine(), "Embedded") == (asked, "")
