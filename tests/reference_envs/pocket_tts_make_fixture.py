"""Build a Pocket TTS checkpoint with random weights using the OFFICIAL code (pocket-tts 4.0.1) and record its outputs.

Runs inside the reference venv made by ``pocket_tts.sh`` (never in the app's environment):

    $REF_VENV/bin/python tests/reference_envs/pocket_tts_make_fixture.py OUT_DIR [--size tiny|released] [--no-reference]

OUT_DIR/checkpoint/ holds what the released language folders hold (``languages/<name>/model.safetensors``
with the official ``flow_lm.*``/``mimi.*`` key names, the voice-cloning variant, and ``tokenizer.json``),
plus ``config.yaml``: the official config schema (``pocket_tts/config/<language>.yaml``) with its
``weights_path`` and ``tokenizer_path`` naming those two files relative to the folder. ``--size tiny``
(the tests) shrinks every width; ``--size released`` keeps the released English model's shapes (the
benchmark: compute does not depend on the weights' values). Random weights come from the official
classes' own initialisers under a fixed seed, with the zero/one initialised tensors (norms, latent
statistics, the speaker projection) perturbed so that a wrong port cannot hide behind them. Nothing
touches the network: the checkpoint is reloaded through the official public loader
(``TTSModel.load_model(config=...)``) and every reference output is computed from that reload.

OUT_DIR/checkpoint/voices/clip.safetensors is the clip's voice state saved by the official ``export_model_state``
(the format of the released ``embeddings/<voice>.safetensors``). OUT_DIR/clip.wav is a synthetic 16 kHz voice clip (16-bit PCM, ending on a silence that ``end_on_pause``
trims). OUT_DIR/reference.pt (tiny only) holds the official outputs: the text chunks and token ids, the
voice state of the clip, and for each text the noise drawn at each step, the latents, the EOS flags, the
streamed audio and the whole-sequence Mimi decode of the same latents.

With ``--size tiny``, OUT_DIR/french/ holds the same for the official French config (tiny widths, its files in
the released layout ``checkpoint/languages/french/``), and OUT_DIR/official_configs/ the official configs of the
released languages (the dated and smaller English ones left out).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import wave
from pathlib import Path

import numpy as np
import torch
import yaml

SEED = 1234
TEXTS = [
    "Hello there, how are you today?",
    "Short one.",
    "a somewhat longer sentence, spoken slowly and clearly by the voice",
]
# Text-preparation cases compared token for token (chunking at 50 tokens, punctuation, capitals).
PREP_TEXTS = TEXTS + [
    "first sentence here. Second one follows! And a third? " * 4,
    "It costs 3.50 dollars; really, it does: yes",
    "\u2018quoted\u2019 words",
]
# The French model (--language french; official config/french.yaml): its own text rules (semicolons made commas,
# ':' -> ',', quotes and brackets dropped) are what differs, so its texts carry them.
FRENCH_TEXTS = [
    "Bonjour : comment allez-vous aujourd’hui ?",
    "« Oui », dit-il (enfin) ; c’est tout.",
    "une phrase un peu plus longue – dite lentement et clairement par la voix",
]
FRENCH_PREP = FRENCH_TEXTS + [
    "Première phrase ici. La deuxième suit ! Et une troisième ? " * 4,
    "Cela coûte 3.50 euros ; vraiment : oui [vraiment]",
    "“guillemets” et „anglais“",
]
TEXT_SETS = {"english": (TEXTS, PREP_TEXTS), "french": (FRENCH_TEXTS, FRENCH_PREP)}
CORPUS = (PREP_TEXTS + FRENCH_PREP) * 8 + ["The quick brown fox jumps over the lazy dog. ,;:.!?"] * 8

RELEASED = {
    "flow": {"depth": 6, "dim": 512},
    "transformer": {"d_model": 1024, "hidden_scale": 4, "max_period": 10000, "num_heads": 16, "num_layers": 6},
    "lookup_dim": 1024,
    "seanet": {"dimension": 512, "n_filters": 64},
    "mimi_transformer": {"d_model": 512, "num_heads": 8, "num_layers": 2, "context": 250, "dim_feedforward": 2048},
    "latent": 32,
}
TINY = {
    "flow": {"depth": 2, "dim": 24},
    "transformer": {"d_model": 32, "hidden_scale": 2, "max_period": 10000, "num_heads": 4, "num_layers": 2},
    "lookup_dim": 32,
    "seanet": {"dimension": 16, "n_filters": 4},
    # context 20 encoder frames (16 per latent): the decoder's attention window is exercised.
    "mimi_transformer": {"d_model": 16, "num_heads": 2, "num_layers": 2, "context": 20, "dim_feedforward": 32},
    "latent": 8,
}


def write_tokenizer(out: Path, vocab_size: int) -> int:
    """A Unigram tokenizer with SentencePiece's Metaspace pre-tokenizer, as the released tokenizer.json is."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    tok.save(str(out / "tokenizer.json"))
    return tok.get_vocab_size()


def write_config(out: Path, dims: dict, n_bins: int, language: str = "english") -> Path:
    """The official config of ``language`` with the widths of ``dims``; English names its files in the folder,
    another language the released layout (languages/<language>/model.safetensors and tokenizer.json)."""
    seanet = dict(
        dimension=dims["seanet"]["dimension"], channels=1, n_filters=dims["seanet"]["n_filters"], n_residual_layers=1,
        ratios=[6, 5, 4], kernel_size=7, residual_kernel_size=3, last_kernel_size=3, dilation_base=2,
        pad_mode="constant", compress=2,
    )
    mt = dims["mimi_transformer"]
    d = seanet["dimension"]
    config = {
        "weights_path": "model.safetensors",
        "default_temperature": 0.3,
        "replace_characters": {"\u2019": "'", "\u2018": "'"},
        "flow_lm": {
            "insert_bos_before_voice": True, "dtype": "float32", "flow": dims["flow"], "transformer": dims["transformer"],
            "lookup_table": {"dim": dims["lookup_dim"], "n_bins": n_bins, "tokenizer": "tokenizers", "tokenizer_path": "tokenizer.json"},
        },
        "mimi": {
            "dtype": "float32", "sample_rate": 24000, "inner_dim": dims["latent"], "outer_dim": d, "channels": 1,
            "frame_rate": 12.5, "seanet": seanet,
            "transformer": dict(mt, layer_scale=0.01, input_dimension=d, output_dimensions=[d]),
            "quantizer": {"dimension": dims["latent"], "output_dimension": d},
        },
    }
    if language != "english":
        from pocket_tts.utils.config import CONFIGS_DIR  # the official package, as the other imports here: in the venv only

        official = yaml.safe_load((CONFIGS_DIR / f"{language}.yaml").read_text(encoding="utf-8"))
        for key in ("replace_characters", "remove_semicolons", "default_temperature", "pad_with_spaces_for_short_inputs"):
            config.pop(key, None)
            if key in official:
                config[key] = official[key]
        config["weights_path"] = f"languages/{language}/model.safetensors"
        config["flow_lm"]["lookup_table"]["tokenizer_path"] = f"languages/{language}/tokenizer.json"
    path = out / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    return path


def randomise(model: torch.nn.Module, config) -> None:
    """Perturb what the official initialisers leave at 0 or 1, so every tensor matters."""
    from pocket_tts.models.mimi import build_mimi

    flow = model.flow_lm
    flow.speaker_proj_weight = torch.nn.Parameter(torch.randn(config.flow_lm.transformer.d_model, config.mimi.inner_dim) * 0.3)
    model.mimi = build_mimi(config.mimi)
    with torch.no_grad():
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if name.endswith("freqs"):
                continue
            if name.endswith(("norm1.weight", "norm2.weight", "out_norm.weight", "in_ln.weight", ".alpha")):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith(("norm1.bias", "norm2.bias", "out_norm.bias", "in_ln.bias")):
                p.copy_(0.1 * torch.randn_like(p))
            elif name.endswith("layer_scale_1.scale") or name.endswith("layer_scale_2.scale"):
                p.copy_(0.3 + 0.1 * torch.randn_like(p))
        flow.emb_std.copy_(0.5 + torch.rand_like(flow.emb_std))
        flow.emb_mean.copy_(0.2 * torch.randn_like(flow.emb_mean))
        # DiT-style zero gates and final layer are random here (the official ones are plain nn.Linear defaults).


def write_clip(path: Path, rate: int = 16000) -> None:
    g = np.random.default_rng(SEED)
    t = np.arange(int(1.6 * rate)) / rate
    voice = 0.3 * np.sin(2 * np.pi * 140 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)) + 0.05 * g.standard_normal(t.size)
    voice[int(1.3 * rate):] *= 0.001  # a trailing pause for end_on_pause to cut
    pcm = (np.clip(voice, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())


def build(out: Path, dims: dict, vocab: int, language: str = "english") -> Path:
    from safetensors.torch import save_file

    from pocket_tts.models.tts_model import TTSModel
    from pocket_tts.utils.config import load_config

    ckpt = out / "checkpoint"
    files = ckpt if language == "english" else ckpt / "languages" / language
    files.mkdir(parents=True)
    n_bins = write_tokenizer(files, vocab)
    cfg_path = write_config(ckpt, dims, n_bins, language)
    os.chdir(ckpt)  # the config names its files relative to the folder; the official loader reads them from the cwd
    config = load_config(cfg_path)
    torch.manual_seed(SEED)
    model = TTSModel._from_pydantic_config(config, 0.3, 1, None, -4.0, origin=cfg_path)
    randomise(model, config)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(files / "model.safetensors"))
    return cfg_path


class Recorder:
    """The noise each flow step draws (torch.nn.init.normal_ in flow_lm.forward) and the latents it returns."""

    def __init__(self, model) -> None:
        self.noise: list[torch.Tensor] = []
        self.steps: list[tuple[torch.Tensor, bool]] = []
        normal = torch.nn.init.normal_

        def recording_normal(tensor, *a, **k):
            res = normal(tensor, *a, **k)
            self.noise.append(tensor.detach().clone())
            return res

        torch.nn.init.normal_ = recording_normal
        run = model._run_flow_lm_and_increment_step

        def recording_run(**kw):
            latent, eos = run(**kw)
            if kw.get("backbone_input_latents") is not None:
                self.steps.append((latent[0, 0].clone(), bool(eos.item())))
            return latent, eos

        model._run_flow_lm_and_increment_step = recording_run

    def reset(self) -> None:
        self.noise, self.steps = [], []


def calibrate_eos(model, voice, text: str) -> float:
    """An EOS threshold crossed around step 10 of the first text, so the tests see speech end by EOS."""
    logits: list[float] = []
    head = model.flow_lm.out_eos

    def hook(_m, _inp, out):
        logits.append(float(out.view(-1)[0]))

    h = head.register_forward_hook(hook)
    model.eos_threshold = 1e9
    with torch.no_grad():
        for _ in model.generate_audio_stream(voice, text):
            pass
    h.remove()
    steps = logits[1:]  # the first call is the text prompt
    return float(max(steps[8:14]) - 1e-3)


def record(out: Path, cfg_path: Path, language: str = "english") -> None:
    from pocket_tts.models.model_state import export_model_state
    from pocket_tts.models.text_chunking import prepare_text_prompt, split_into_best_sentences
    from pocket_tts.models.tts_model import TTSModel
    from pocket_tts.modules.stateful_module import increment_steps, init_states

    clip = out / "clip.wav"
    write_clip(clip)
    model = TTSModel.load_model(config=str(cfg_path))
    model.eval()
    texts, prep_texts = TEXT_SETS[language]
    tok = model.flow_lm.conditioner.tokenizer
    prep = []
    for text in prep_texts:
        chunks = split_into_best_sentences(tok, text, 50, model.pad_with_spaces_for_short_inputs, model.remove_semicolons,
                                           replace_characters=model.replace_characters)
        prepared = [prepare_text_prompt(c, False, False, replace_characters=model.replace_characters) for c in chunks]
        prep.append({"text": text, "chunks": chunks, "prepared": prepared,
                     "ids": [model.flow_lm.conditioner.prepare(p)[0].tolist() for p, _ in prepared]})

    torch.manual_seed(SEED + 1)
    voice = model.get_state_for_audio_prompt(clip)
    n_voice = model._flow_lm_current_end(voice)
    voice_kv = {name: s["cache"][:, 0, :n_voice].clone() for name, s in voice.items() if "cache" in s}  # [2, V, H, D]
    # The voice state as the official code saves it (``pocket-tts export-voice``), where our loader looks for
    # built-in voices (the released ones come as embeddings/<name>.safetensors).
    (out / "checkpoint" / "voices").mkdir()
    export_model_state(voice, out / "checkpoint" / "voices" / "clip.safetensors")
    eos_threshold = calibrate_eos(model, voice, texts[0])
    model.eos_threshold = eos_threshold

    rec = Recorder(model)
    runs = []
    for i, text in enumerate(texts):
        torch.manual_seed(SEED + 10 + i)
        rec.reset()
        chunks = list(model.generate_audio_stream(voice, text))
        latents = torch.stack([lat for lat, _ in rec.steps]) if rec.steps else torch.zeros(0, model.flow_lm.ldim)
        # Whole-sequence decode of the emitted latents (the streamed run drops the one after the last kept).
        n_emitted = sum(c.numel() for c in chunks) // (model.config.mimi.sample_rate * 2 // 25)
        emitted = latents[:n_emitted]
        mimi_state = init_states(model.mimi, batch_size=1, sequence_length=4 * n_emitted * 16 + 16)
        whole = model.mimi.decode_from_latent((emitted * model.flow_lm.emb_std + model.flow_lm.emb_mean)[None], mimi_state)
        increment_steps(model.mimi, mimi_state, increment=16 * n_emitted)
        runs.append({
            "text": text, "noise": torch.stack(rec.noise)[:, 0], "latents": latents,
            "eos": [e for _, e in rec.steps], "n_emitted": n_emitted,
            "stream": torch.cat(chunks), "chunk_sizes": [c.numel() for c in chunks], "whole_decode": whole[0, 0],
        })
    torch.save({
        "prep": prep, "voice_kv": voice_kv, "n_voice": n_voice, "eos_threshold": eos_threshold,
        "temp": model.temp, "runs": runs, "texts": texts,
    }, out / "reference.pt")


def copy_language_configs(dest: Path) -> None:
    """The official configs of the released languages (not the dated or smaller English ones), for the test
    that our fetch writes the same ones."""
    from pocket_tts.utils.config import CONFIGS_DIR  # the official package: in the venv only

    dest.mkdir()
    for path in CONFIGS_DIR.glob("*.yaml"):
        if not path.stem.startswith("english") or path.stem == "english":
            shutil.copy(path, dest / path.name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", choices=("tiny", "released"), default="tiny")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    dims, vocab = (TINY, 120) if args.size == "tiny" else (RELEASED, 4000)
    cfg_path = build(out, dims, vocab)
    if args.size == "tiny":
        record(out, cfg_path)
        # The French model in the released layout, with its own outputs (OUT/french/{checkpoint,clip.wav,reference.pt}).
        record(out / "french", build(out / "french", dims, vocab, "french"), "french")
        copy_language_configs(out / "official_configs")
    print(out / "checkpoint", file=sys.stderr)


if __name__ == "__main__":
    main()
