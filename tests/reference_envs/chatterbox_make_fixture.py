"""Build a random-weight Chatterbox checkpoint with the OFFICIAL code (chatterbox-tts 0.1.7) and record
its outputs.

Runs inside the reference venv made by ``chatterbox.sh`` (never in the app's environment):

    $REF_VENV/bin/python tests/reference_envs/chatterbox_make_fixture.py OUT_DIR

OUT_DIR/checkpoint/ is laid out as the released checkpoint (ve.safetensors, t3_cfg.safetensors,
s3gen.safetensors, tokenizer.json, conds.pt), plus t3_llama.json with the tiny T3's dimensions. T3 is tiny (a small Llama registered in the official
``LLAMA_CONFIGS`` and ``use_perceiver_resampler=False``, whose perceiver is hard-coded to 1024 wide);
S3Gen and the VoiceEncoder are full size (their sizes are fixed in the official code), all with the
official initialisers under fixed seeds. The checkpoint is reloaded through ``ChatterboxTTS.from_local``
and every output is computed from that reload. Outputs go to OUT_DIR/reference.pt:
per text, the text tokens, T3's greedy speech tokens (min_p=1.0 keeps only the arg-max, so the
official sampler is deterministic), S3Gen's mel and waveform (before the watermark, which is not part
of the model).

S3Gen draws random numbers (the flow's starting noise, the vocoder's source phases and noise) from the
global generator, so each text's S3Gen calls run right after ``torch.manual_seed(S3GEN_SEED[text])``:
the mel from ``flow_inference`` and the waveform from ``inference`` (flow + vocoder + fade-in) each
start from that seed, which is what a per-row generator seeded the same way draws.

A second voice (conds_b.pt, from a 2.2 s synthetic reference: a different prompt length) speaks the
first text too, so a batch can mix voices; a third (clip_c.wav, 22.05 kHz float WAV, analysed by the
official ``prepare_conditionals``: conds_c.pt) speaks the second text.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np
import torch

logger = logging.getLogger("chatterbox_make_fixture")

SEED = 1234
# T3 token budget per text: random weights rarely emit EOS, and the tiny random T3 follows the voice
# prompt more than the text, so different budgets are what make the rows' lengths differ.
TEXTS = ["Hello there, how are you today?", "Short one."]
MAX_NEW = {TEXTS[0]: 24, TEXTS[1]: 13}
S3GEN_SEED = {TEXTS[0]: 101, TEXTS[1]: 202}
VOICE_B_SEED = 303  # S3Gen seed of the first text in voice B
VOICE_C_SEED = 404  # S3Gen seed of the second text in voice C (a clip file at CLIP_C_RATE)
CLIP_C_RATE = 22050
TINY_LLAMA = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, head_dim=16, num_key_value_heads=4)


def tiny_t3_config():
    """Make the official T3() build the tiny backbone: patch the config table and the perceiver switch."""
    from chatterbox.models.t3 import llama_configs
    from chatterbox.models.t3.modules import t3_config

    llama_configs.LLAMA_CONFIGS["Llama_520M"] = {**llama_configs.LLAMA_CONFIGS["Llama_520M"], **TINY_LLAMA}
    original_init = t3_config.T3Config.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.use_perceiver_resampler = False

    t3_config.T3Config.__init__ = init


def write_tokenizer(path: Path) -> None:
    """A character-level tokenizer.json with the official special tokens first (ids 0.. as released: [STOP]=0)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    specials = ["[STOP]", "[UNK]", "[SPACE]", "[PAD]", "[SEP]", "[CLS]", "[MASK]"]
    chars = sorted(set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\"-:;()"))
    vocab = {s: i for i, s in enumerate(specials)}
    for c in chars:
        vocab[c] = len(vocab)
    while len(vocab) < 255:  # T3Config.start_text_token is 255: fill the ids below it (no holes)
        vocab[f"[unused{len(vocab)}]"] = len(vocab)
    vocab["[START]"] = 255
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")  # one token per character
    tok.add_special_tokens(specials + ["[START]"])
    tok.save(str(path))


def synthetic_reference(seconds: float, f1: float, f2: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 16000)) / 16000
    return (0.3 * np.sin(2 * np.pi * f1 * t) + 0.1 * np.sin(2 * np.pi * f2 * t) + 0.02 * rng.standard_normal(t.size)).astype(np.float32)


def librosa_resample(x: np.ndarray, sr: int, target: int) -> np.ndarray:
    import librosa

    return librosa.resample(x, orig_sr=sr, target_sr=target).astype(np.float32)


def analyse_reference(ref16: np.ndarray, ve, s3gen, t3):
    """The official prepare_conditionals' steps on a 16 kHz clip (it passes the 16 kHz clip to embed_ref too)."""
    from chatterbox.models.t3.modules.cond_enc import T3Cond

    with torch.inference_mode():
        gen = s3gen.embed_ref(torch.from_numpy(ref16), 16000, device="cpu")
        spk = torch.from_numpy(ve.embeds_from_wavs([ref16], sample_rate=16000)).mean(0, keepdim=True)
        prompt_tokens, _ = s3gen.tokenizer.forward([torch.from_numpy(ref16)], max_len=t3.hp.speech_cond_prompt_len)
    cond = T3Cond(speaker_emb=spk, cond_prompt_speech_tokens=torch.atleast_2d(prompt_tokens), emotion_adv=0.5 * torch.ones(1, 1, 1))
    return cond, gen


def main(out: Path) -> None:
    from safetensors.torch import save_file
    tiny_t3_config()
    from chatterbox.models.s3gen import S3Gen
    from chatterbox.models.t3 import T3
    from chatterbox.models.voice_encoder import VoiceEncoder
    from chatterbox.tts import ChatterboxTTS, Conditionals

    ckpt = out / "checkpoint"
    ckpt.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    ve, t3, s3gen = VoiceEncoder().eval(), T3().eval(), S3Gen().eval()
    # Under the official initialisers (std 0.02 everywhere) the tiny T3's attention adds almost nothing to
    # its residual stream, so its output hardly depends on the text or the voice: every row got the same
    # tokens, and a row mix-up in a batch could not show. Its input tables are drawn with std 1 and its
    # Llama's linear layers with std 1/sqrt(fan-in) instead (still random weights, still the official modules).
    with torch.no_grad():
        for table in (t3.text_emb, t3.speech_emb, t3.text_pos_emb.emb, t3.speech_pos_emb.emb):
            table.weight.normal_(0.0, 1.0)
        for layer in t3.tfmr.modules():
            if isinstance(layer, torch.nn.Linear):
                layer.weight.normal_(0.0, layer.in_features ** -0.5)
    save_file({k: v.contiguous() for k, v in ve.state_dict().items()}, ckpt / "ve.safetensors")
    save_file({k: v.contiguous() for k, v in t3.state_dict().items()}, ckpt / "t3_cfg.safetensors")
    save_file({k: v.contiguous() for k, v in s3gen.state_dict().items()}, ckpt / "s3gen.safetensors")
    write_tokenizer(ckpt / "tokenizer.json")
    # Not in the released layout: the tiny T3's Llama dimensions (our loader reads them when present;
    # a released checkpoint has no such file and gets the official Llama_520M).
    (ckpt / "t3_llama.json").write_text(json.dumps(TINY_LLAMA))

    # The built-in voice: a synthetic 3 s reference (two tones + noise) analysed by the official code;
    # voice B: 2.2 s of other tones.
    Conditionals(*analyse_reference(synthetic_reference(3.0, 140, 310, SEED), ve, s3gen, t3)).save(ckpt / "conds.pt")
    Conditionals(*analyse_reference(synthetic_reference(2.2, 210, 520, SEED + 1), ve, s3gen, t3)).save(out / "conds_b.pt")

    import perth

    # The watermarker (resemble-perth's neural net) is not part of the model and its weights are not
    # installed: the official constructor gets the package's own no-op watermarker instead.
    perth.PerthImplicitWatermarker = perth.PerthImplicitWatermarker or perth.DummyWatermarker
    model = ChatterboxTTS.from_local(ckpt, "cpu")
    voice_b = Conditionals.load(out / "conds_b.pt")
    results = [run_text(model, text, model.conds, S3GEN_SEED[text]) for text in TEXTS]
    results_b = [run_text(model, TEXTS[0], voice_b, VOICE_B_SEED)]
    # Voice C: a clip file through the official prepare_conditionals (resampling, cuts, tokenizer, encoders).
    import soundfile

    clip_c = synthetic_reference(2.5, 180, 430, SEED + 2)
    soundfile.write(out / "clip_c.wav", librosa_resample(clip_c, 16000, CLIP_C_RATE), CLIP_C_RATE, subtype="FLOAT")
    builtin = model.conds
    model.prepare_conditionals(str(out / "clip_c.wav"), exaggeration=0.5)
    voice_c, model.conds = model.conds, builtin
    voice_c.save(out / "conds_c.pt")
    results_c = [run_text(model, TEXTS[1], voice_c, VOICE_C_SEED)]
    torch.save(dict(seed=SEED, max_new=MAX_NEW, tiny_llama=TINY_LLAMA, results=results, results_b=results_b,
                    results_c=results_c, clip_c_rate=CLIP_C_RATE), out / "reference.pt")
    (out / "fixture.json").write_text(json.dumps(dict(texts=TEXTS, max_new=MAX_NEW, s3gen_seed=S3GEN_SEED, voice_b_seed=VOICE_B_SEED, tiny_llama=TINY_LLAMA)))


def run_text(model, text: str, conds, s3gen_seed: int) -> dict:
    """One text through the official pieces of ``ChatterboxTTS.generate``, greedy, with the S3Gen calls seeded."""
    from chatterbox.tts import punc_norm

    text_tokens = model.tokenizer.text_to_tokens(punc_norm(text))
    tt = torch.cat([text_tokens, text_tokens], dim=0)
    tt = torch.nn.functional.pad(tt, (1, 0), value=model.t3.hp.start_text_token)
    tt = torch.nn.functional.pad(tt, (0, 1), value=model.t3.hp.stop_text_token)
    with torch.inference_mode():
        raw = model.t3.inference(t3_cond=conds.t3, text_tokens=tt, max_new_tokens=MAX_NEW[text],
                                 temperature=0.8, cfg_weight=0.5, repetition_penalty=1.2, min_p=1.0, top_p=1.0)[0].long()
        speech = raw[raw < 6561]  # as ChatterboxTTS.generate (drops EOS and out-of-codebook ids)
        torch.manual_seed(s3gen_seed)
        mel = model.s3gen.flow_inference(speech, ref_dict=conds.gen, finalize=True)
        torch.manual_seed(s3gen_seed)
        wav, _ = model.s3gen.inference(speech_tokens=speech, ref_dict=conds.gen)
    logger.info("%r: %d text tokens, %d speech tokens, mel %s, wav %s", text, text_tokens.shape[1], speech.numel(), tuple(mel.shape), tuple(wav.shape))
    return dict(text=text, s3gen_seed=s3gen_seed, raw_speech_tokens=raw, text_tokens=text_tokens[0].long(),
                speech_tokens=speech.long(), mel=mel[0].float(), wav=wav[0].float())


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    main(Path(sys.argv[1]))
