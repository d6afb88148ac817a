"""Parity of tts_app/models/pocket_tts with the OFFICIAL Pocket TTS code (pocket-tts 4.0.1), on CPU in float32.

The official side runs in its own venv (tests/reference_envs/pocket_tts.sh), which writes a tiny random-weight
checkpoint in the released layout with the official classes and records the official outputs
(tests/reference_envs/pocket_tts_make_fixture.py); both are cached (~/.cache/tts_app, or $TTS_APP_REFERENCE_ENVS)
and rebuilt when those scripts or pins change. Our loader reads the folder as is.

What is compared:
- text: the official chunking (``split_into_best_sentences``), prompt preparation and token ids;
- the voice state of a clip file (16 kHz WAV: read, resampled, ended on a pause, Mimi-encoded, projected,
  run through the flow LM): every layer's keys and values; and the same state saved by the official
  ``export_model_state`` (the released voices' format), read by our loader;
- latents for fixed noise (the official draws, recorded): our batched generator, each text alone and all
  three in one ragged batch, vs the official ``generate_audio_stream`` (EOS rule included: the fixture's
  threshold is set so the texts end by EOS, not by the length cap);
- audio: our Mimi decoding those latents in streaming windows of 1 and 3 latents vs the official stream,
  and in one call vs the official whole-sequence decode.

Each test runs on the English checkpoint and on a French one (the official config/french.yaml with tiny widths, its
files in the released layout ``languages/french/``): its text rules (semicolons, colons, quotes, brackets) and the
language our loader reads from its config.

Without the reference env these tests skip locally with the reason; with CI=true (or
TTS_APP_REQUIRE_REFERENCE=1) they fail instead, so CI can never pass by skipping them.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tests.support.reference_env import fixture_dir

pytestmark = pytest.mark.reference

ATOL = 1e-4


@pytest.fixture(scope="session", params=["english", "french"])
def official(request) -> dict[str, Any]:
    base = fixture_dir("pocket_tts", "Pocket TTS")
    out = base if request.param == "english" else base / request.param
    return {"dir": out, "ckpt": out / "checkpoint", "ref": torch.load(out / "reference.pt", weights_only=False),
            "language": request.param}


@pytest.fixture(scope="session")
def ours(official):
    from tts_app.models.pocket_tts.weights import load_pocket

    return load_pocket(official["ckpt"])


def _close(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    assert a.shape == b.shape, f"{what}: shape {tuple(a.shape)} vs official {tuple(b.shape)}"
    err = (a.float() - b.float()).abs().max().item() if a.numel() else 0.0
    assert err <= ATOL, f"{what}: max |ours - official| = {err:.3g} > {ATOL}"


@pytest.fixture(scope="session")
def voice(official, ours):
    from tts_app.models.pocket_tts.voice import read_clip, voice_state

    wav, rate = read_clip(official["dir"] / "clip.wav")
    assert rate == 16000  # the clip is resampled: that path is compared too
    return voice_state(ours, wav, rate)


def _generate(ours, voice, ref, which: list[int]):
    from tts_app.models.pocket_tts.generator import PocketGenerator
    from tts_app.models.pocket_tts.text import max_frames, prepare, split_chunks

    gen = PocketGenerator(ours, max_batch=len(which), max_len=128)
    gen.eos_threshold = ref["eos_threshold"]
    ids, caps, after, noise = [], [], [], []
    for i in which:
        run = ref["runs"][i]
        # As the official stream and our backend do: the chunk (text re-decoded from its tokens) is what is prepared.
        (chunk,) = split_chunks(run["text"], ours.tokenizer, ours.rules)
        text, guess = prepare(chunk, ours.rules)
        ids.append(ours.tokenizer.encode(text))
        caps.append(max_frames(len(ids[-1]), ours.config.mimi.frame_rate))
        after.append(guess + 2)
        draws = run["noise"]
        noise.append(lambda step, d=draws: d[1 + step])  # draw 0 was taken at the text prompt
    rows = gen.prefill([voice] * len(which), ids, caps, after, noise)
    while not all(r.done for r in rows):
        gen.step()
    return gen, rows


def test_checkpoint_loads_unchanged(official, ours):
    """Every tensor of the official file lands in our flow LM or Mimi (strict per module, nothing left over)."""
    from safetensors.torch import load_file

    keys = load_file(str(official["ckpt"] / ours.config.weights_file)).keys()
    ours_n = len(ours.flow_lm.state_dict()) + len(ours.mimi.state_dict())
    assert keys and all(k.startswith(("flow_lm.", "mimi.")) for k in keys)
    assert ours_n == len(keys), f"{ours_n} tensors in our modules, {len(keys)} in the checkpoint"


def test_the_language_comes_from_the_config(official, ours):
    """The French folder is read as French (its rules, its capabilities); the English one as English."""
    from tts_app.backends.pocket_tts import PocketBackend  # as the other imports here: after the skip check

    backend = PocketBackend(ours, max_batch=1, max_len=128)
    assert ours.variant.language == official["language"]
    assert backend.capabilities.languages == ({"english": "en", "french": "fr"}[official["language"]],)
    assert ours.rules.remove_semicolons is (official["language"] == "french")


def test_text_chunks_and_ids_equal_official(official, ours):
    from tts_app.models.pocket_tts.text import prepare, split_chunks

    for case in official["ref"]["prep"]:
        chunks = split_chunks(case["text"], ours.tokenizer, ours.rules)
        assert chunks == case["chunks"], case["text"]
        prepared = [prepare(c, ours.rules) for c in chunks]
        assert [(p, g) for p, g in prepared] == [tuple(x) for x in case["prepared"]]
        assert [ours.tokenizer.encode(p) for p, _ in prepared] == case["ids"]


def test_voice_state_from_clip_equals_official(official, voice):
    ref = official["ref"]
    assert voice.length == ref["n_voice"]
    for layer, (k, v) in enumerate(voice.kv):
        official_kv = ref["voice_kv"][f"transformer.layers.{layer}.self_attn"]  # [2, V, H, D]
        _close(k, official_kv[0].transpose(0, 1), f"layer {layer} keys")
        _close(v, official_kv[1].transpose(0, 1), f"layer {layer} values")


def test_voice_file_saved_by_official_code_loads_equal(official, ours, voice):
    from tts_app.models.pocket_tts.voice import load_voice_file

    saved = load_voice_file(official["ckpt"] / "voices" / "clip.safetensors", ours.config.flow_lm.num_layers)
    assert saved.length == voice.length
    for (k, v), (k2, v2) in zip(saved.kv, voice.kv):
        _close(k, k2, "saved voice keys")
        _close(v, v2, "saved voice values")


@pytest.mark.parametrize("which", [[0], [1], [2], [0, 1, 2], [2, 0, 1]], ids=["text0", "text1", "text2", "batch", "batch-reordered"])
def test_latents_for_fixed_noise_equal_official(official, ours, voice, which):
    """Alone or in a ragged batch, each row's latents and its end of speech equal the official run's."""
    ref = official["ref"]
    _, rows = _generate(ours, voice, ref, which)
    for i, row in zip(which, rows):
        run = ref["runs"][i]
        assert len(row.latents) == run["n_emitted"], f"text {i}: {len(row.latents)} latents, official {run['n_emitted']}"
        _close(torch.stack(row.latents), run["latents"][:run["n_emitted"]], f"text {i} latents")
    assert any(r["n_emitted"] < len(r["latents"]) for r in ref["runs"]), "no fixture text ended by EOS"


@pytest.mark.parametrize("window", [1, 3])
def test_streamed_audio_equals_official_stream_and_whole(official, ours, voice, window):
    ref = official["ref"]
    gen, rows = _generate(ours, voice, ref, [0, 1, 2])
    pieces: list[list[torch.Tensor]] = [[] for _ in rows]
    while any(r.decoded < len(r.latents) for r in rows):
        live = [r for r in rows if r.decoded < len(r.latents)]
        for r, a in zip(live, gen.decode(live, [min(len(r.latents), r.decoded + window) for r in live])):
            pieces[rows.index(r)].append(a)
    for i, row in enumerate(rows):
        run = ref["runs"][i]
        _close(torch.cat(pieces[i]), run["stream"], f"text {i} streamed audio (window {window})")
        whole = ours.mimi.decode_whole((torch.stack(row.latents) * ours.flow_lm.emb_std + ours.flow_lm.emb_mean)[None])[0]
        _close(whole, run["whole_decode"], f"text {i} whole decode")


@pytest.mark.parametrize("choice", ["openblas", "torch"])
def test_a_one_thread_stage_on_either_library_equals_official(official, ours, voice, choice):
    """The backend's stages run with one intra-op thread, where products may go to numpy's OpenBLAS (small_gemm):
    latents and streamed audio there equal the official run's as well."""
    from tts_app.models.layers import small_gemm
    from tts_app.models.layers.stage_thread import StageThread
    from tests.support.internals import reset_small_gemm

    ref = official["ref"]
    reset_small_gemm()
    small_gemm.calibrate(choice)
    stage = StageThread("test-parity", 1)
    try:
        gen, rows = stage.run(_generate, ours, voice, ref, [0, 1, 2])
        audio = stage.run(gen.decode, rows)
    finally:
        stage.close()
        reset_small_gemm()
    for i, (row, a) in enumerate(zip(rows, audio)):
        run = ref["runs"][i]
        _close(torch.stack(row.latents), run["latents"][:run["n_emitted"]], f"text {i} latents ({choice})")
        _close(a, run["stream"], f"text {i} audio ({choice})")
