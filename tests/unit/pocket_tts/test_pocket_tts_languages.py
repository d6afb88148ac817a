"""Pocket TTS's released languages: the model ids ``pocket-tts[-LANGUAGE[-24l]]``, what their fetch downloads (no
network: the hub call is recorded), the config it writes (equal to the official one, with the reference env), how
the catalogue finds a language's folder and what it declares, and a French checkpoint's default voice and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.pocket_tts_tiny import write_tiny_checkpoint
from tts_app.cli.commands import main
from tts_app.engine import SpeechParams
from tts_app.models.available import POCKET_ID, capabilities_of, find_models, pocket_model_id, unknown_model_message
from tts_app.models.capabilities import POCKET_TTS, UnsupportedParameter
from tts_app.models.hub_fetch import RemoteFile
from tts_app.models.pocket_tts import fetch as pocket_fetch
from tts_app.models.pocket_tts.config import PocketConfig
from tts_app.models.pocket_languages import MODEL_IDS, VARIANTS, variant_for_id, variant_of_weights

LANGUAGES = ("french", "german", "portuguese", "italian", "spanish", "dutch")


def test_the_ids_are_english_plus_each_language_and_its_24_layer_model():
    expected = {POCKET_ID} | {f"{POCKET_ID}-{lang}{size}" for lang in LANGUAGES for size in ("", "-24l")}
    assert set(MODEL_IDS) == expected
    assert variant_for_id("pocket-tts-french-24l").name == "french_24l"
    for bad in ("pocket-tts-klingon", "pocket-tts-english", "pocket-tts-french_24l", "pocket-tts-", "POCKET-TTS-FRENCH",
                "pocket-tts-french-24l\n", "pocket-tts-../french"):
        assert variant_for_id(bad) is None, bad


@pytest.mark.parametrize("path, name", [
    ("hf://kyutai/pocket-tts/languages/german_24l/model.safetensors@abc", "german_24l"),
    ("languages/french/model.safetensors", "french"),
    ("model.safetensors", "english"),  # an older fetch, a folder of one's own
    ("hf://kyutai/pocket-tts/languages/english_18m_2026-10/model.safetensors@x", "english"),
    ("hf://kyutai/pocket-tts/languages/spanish_2027-01/model.safetensors@x", "spanish"),  # a dated release: its language
    ("hf://kyutai/pocket-tts/languages/klingon/model.safetensors@x", "english"),
])  # fmt: skip
def test_the_language_of_a_weights_path(path, name):
    assert variant_of_weights(path).name == name


@pytest.fixture
def recorded(tmp_path, monkeypatch) -> list[tuple[str, str, str]]:
    """The hub replaced: each file asked for recorded, an empty file returned (nothing leaves this machine; the
    downloads themselves run against a fake hub in tests/unit/catalog/test_pocket_fetch.py)."""
    calls: list[tuple[str, str, str]] = []
    blob = tmp_path / "blob"
    blob.write_text("")

    def listed(repo: str, path: str, revision: str, endpoint, listings) -> RemoteFile:
        calls.append((repo, path, revision))
        return RemoteFile(path, 0, None, "0" * 40)

    monkeypatch.setattr(pocket_fetch, "probe", lambda *args: None)
    monkeypatch.setattr(pocket_fetch, "_listed", listed)
    monkeypatch.setattr(pocket_fetch, "download_one", lambda *args: blob)
    return calls


def test_fetch_of_a_language_targets_its_files_and_writes_its_config(tmp_path, recorded):
    folder = pocket_fetch.fetch_pocket(str(tmp_path / "de"), "pocket-tts-german-24l").folder
    assert recorded == [
        ("kyutai/pocket-tts", "languages/german_24l/model.safetensors", "2dd944b099d06bb9edbd221fef138685711d9bf0"),
        ("kyutai/pocket-tts-without-voice-cloning", "languages/german_24l/tokenizer.json", "4e1e0a3e611c51c0b4ed8174fc10f32a54644303"),
        ("kyutai/pocket-tts-without-voice-cloning", "languages/german_24l/embeddings/juergen.safetensors",
         "a7056f505a4a8ca72d8b5fb1440071d6f1a35739"),
    ]  # fmt: skip
    cfg = PocketConfig.from_yaml(folder / "config.yaml")
    assert cfg.flow_lm.num_layers == 24 and cfg.remove_semicolons and dict(cfg.replace_characters)["\u2014"] == ","
    assert (folder / "voices" / "juergen.safetensors").is_symlink()
    assert pocket_model_id(folder) == "pocket-tts-german-24l"
    listed = {c.id: c for c in find_models(str(folder), env={"HF_HUB_CACHE": str(tmp_path / "hub"), "TTS_APP_CACHE_DIR": str(tmp_path / "c")})}
    assert listed["pocket-tts-german-24l"].path == folder and "German" in listed["pocket-tts-german-24l"].label
    assert listed[POCKET_ID].path is None  # the English model is still listed, as not here


def test_fetch_of_english_is_unchanged_but_names_its_release(tmp_path, recorded):
    folder = pocket_fetch.fetch_pocket(str(tmp_path / "en")).folder
    assert recorded[0] == ("kyutai/pocket-tts", "languages/english/model.safetensors", "db04f0e653473e5c7333c69686ac92b7460b0c1d")
    assert [f for _, f, _ in recorded[2:]] == [f"languages/english/embeddings/{v}.safetensors" for v in pocket_fetch.ENGLISH_VOICES]
    assert pocket_model_id(folder) == POCKET_ID and PocketConfig.from_yaml(folder / "config.yaml").temperature == 0.3


def test_fetch_without_a_dir_goes_to_the_language_folder_the_catalogue_scans(tmp_path, recorded, monkeypatch):
    monkeypatch.setenv("TTS_APP_CACHE_DIR", str(tmp_path / "cache"))
    folder = pocket_fetch.fetch_pocket(None, "pocket-tts-spanish").folder
    assert folder == tmp_path / "cache" / "pocket-tts-spanish"
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "TTS_APP_CACHE_DIR": str(tmp_path / "cache")}
    assert {c.id: c.path for c in find_models(None, env=env)}["pocket-tts-spanish"] == folder


@pytest.mark.parametrize("model", ["pocket-tts-klingon", "pocket-tts-french\n", "pocket-tts-" + "x" * 5000])
def test_the_fetch_command_refuses_an_unknown_language_in_one_line(tmp_path, offline_hub, capsys, model):
    assert main(["fetch", model, "--dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and len(err) < 600, err


def test_the_fetch_command_reaches_the_language_files(tmp_path, recorded, capsys):
    assert main(["fetch", "pocket-tts-french", "--dir", str(tmp_path / "out")]) == 0
    assert recorded[0] == ("kyutai/pocket-tts", "languages/french/model.safetensors", VARIANTS["french"].weights_revision)
    assert '"cloning": true' in capsys.readouterr().out


def test_capabilities_declare_the_one_language():
    assert capabilities_of(POCKET_ID) is POCKET_TTS
    french = capabilities_of("pocket-tts-french-24l")
    assert french.languages == ("fr",) and french.word_timings == "none"  # captions align English only
    assert capabilities_of("pocket-tts-klingon") is None
    french.check(SpeechParams(language="fr"), ["Bonjour."], "pocket-tts-french-24l")
    with pytest.raises(UnsupportedParameter) as err:
        french.check(SpeechParams(language="en"), ["Hello."], "pocket-tts-french-24l")
    assert err.value.param == "language" and "it reads: fr" in str(err.value)


def test_a_french_checkpoint_speaks_in_its_default_voice_and_declares_french(tmp_path):
    from tts_app.backends.pocket_tts import PocketBackend  # torch: only the tests that load a checkpoint
    from tts_app.models.pocket_tts.weights import load_pocket

    folder = write_tiny_checkpoint(tmp_path / "fr", more_voices=("estelle",), variant="french")
    backend = PocketBackend(load_pocket(folder), max_batch=1, max_len=128)
    assert backend.capabilities.languages == ("fr",)
    assert backend._default_voice() is backend.builtin["estelle"]  # the official French default, not alba
    chunks = backend.check_text("Bonjour\u00a0: \u00ab\u00a0oui\u00a0\u00bb\u00a0; (enfin)")
    spoken = backend.model.tokenizer.decode(chunks[0].ids)
    assert not set(spoken) & set(":;\u00ab\u00bb()")  # the French rules, not the English ones, were applied


@pytest.mark.reference
def test_the_configs_written_equal_the_official_ones():
    """For each official config of a released language, the one our fetch writes (less the weights without voice
    cloning, which we never read) is the same document."""
    from tests.support.reference_env import fixture_dir  # builds the reference venv: only for this test

    official = sorted((fixture_dir("pocket_tts", "Pocket TTS") / "official_configs").glob("*.yaml"))
    assert {p.stem for p in official} == set(VARIANTS)
    for path in official:
        want = yaml.safe_load(path.read_text(encoding="utf-8"))
        want.pop("weights_path_without_voice_cloning")
        assert pocket_fetch.variant_config(VARIANTS[path.stem]) == want, path.stem


def test_the_written_config_is_read_as_its_language(tmp_path, recorded):
    for model_id in MODEL_IDS:
        folder = pocket_fetch.fetch_pocket(str(tmp_path / model_id), model_id).folder
        assert pocket_model_id(Path(folder)) == model_id


def test_a_deeper_language_model_takes_its_depth_from_the_config(tmp_path):
    """A 24-layer release's folder (here 3 layers: the depth of its config, not English's) loads, is named by its
    config and speaks German in juergen's voice; its saved voice has a layer per layer of the model."""
    from tts_app.backends.pocket_tts import PocketBackend  # torch: only the tests that load a checkpoint
    from tts_app.models.pocket_tts.weights import load_pocket

    folder = write_tiny_checkpoint(tmp_path / "de", voices=False, more_voices=("juergen",), variant="german_24l")
    model = load_pocket(folder)
    assert model.variant.name == "german_24l" and len(model.flow_lm.transformer.layers) == 3
    assert pocket_model_id(folder) == "pocket-tts-german-24l"
    backend = PocketBackend(model, max_batch=1, max_len=128)
    assert backend.capabilities.languages == ("de",) and len(backend._default_voice().kv) == 3


def test_a_language_not_here_is_refused_with_how_to_fetch_it(tmp_path, monkeypatch):

    monkeypatch.setenv("TTS_APP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    message = unknown_model_message("pocket-tts-italian", "piper-joe-medium")
    assert "fetch pocket-tts-italian --dir DIR" in message and "\n" not in message
    assert "is not served here" in unknown_model_message("pocket-tts-klingon", "piper-joe-medium")
