"""Build a tiny Qwen3-TTS checkpoint with the OFFICIAL code (qwen-tts 0.1.1) and record its outputs.

Runs inside the reference venv made by ``qwen_tts.sh`` (never in the app's environment):

    $REF_VENV/bin/python tests/reference_envs/qwen_tts_make_fixture.py OUT_DIR

OUT_DIR/checkpoint/ is laid out as a released Qwen3-TTS-12Hz Base checkpoint (config.json,
generation_config.json, model.safetensors with the official key names, vocab.json/merges.txt/
tokenizer_config.json, speech_tokenizer/{config.json, model.safetensors, preprocessor_config.json}).
Random weights come from the official classes' own initialisers under fixed seeds; nothing touches
the network. The checkpoint is then reloaded through the official public loader
(``Qwen3TTSModel.from_pretrained``) and every reference output is computed from that reload, so
the folder is proven loadable by the official code. Outputs go to OUT_DIR/reference.pt.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np
import torch

logger = logging.getLogger("qwen_tts_make_fixture")

SEED = 1234
CODEBOOK = 64  # codec codebook size; talker vocab = CODEBOOK + 1024 so the official suppress range matches
GROUPS = 4  # codebooks per frame
MAX_NEW = 20  # greedy frames per request (EOS may stop earlier)
TEXTS = ["Hello there, how are you today?", "Short one.", "A somewhat longer sentence, spoken slowly and clearly by the voice."]
REF_TEXT = "This is the reference transcript."
REF_FRAMES = 9  # ICL reference codes (given, see below)

# Qwen2's pre-tokenisation regex (the released tokenizer.json / Qwen2Tokenizer use it).
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|tts_pad|>", "<|tts_text_bos|>", "<|tts_text_eod|>"]


def write_text_tokenizer(out: Path) -> dict[str, int]:
    """A tiny byte-level BPE in Qwen2's file layout (vocab.json, merges.txt, tokenizer_config.json)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    corpus = TEXTS + [REF_TEXT, "assistant\n"] * 20 + ["The quick brown fox jumps over the lazy dog."] * 5
    trainer = trainers.BpeTrainer(vocab_size=360, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    tok.model.save(str(out))  # vocab.json, merges.txt
    n = tok.get_vocab_size()
    ids = {s: n + i for i, s in enumerate(SPECIALS)}
    added = {
        str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
        for s, i in ids.items()
    }
    (out / "tokenizer_config.json").write_text(json.dumps({
        "add_prefix_space": False, "added_tokens_decoder": added, "bos_token": None, "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>", "unk_token": None, "errors": "replace", "clean_up_tokenization_spaces": False,
        "model_max_length": 32768, "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer",
    }, indent=2))
    return ids


def model_config(ids: dict[str, int], text_vocab: int) -> dict:
    cp = dict(
        vocab_size=CODEBOOK, hidden_size=24, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, rope_theta=10000, num_code_groups=GROUPS, initializer_range=0.2,
    )
    base = CODEBOOK + 1000
    talker = dict(
        code_predictor_config=cp, vocab_size=CODEBOOK + 1024, hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8, rope_theta=1000000,
        rope_scaling={"interleaved": True, "mrope_section": [2, 1, 1], "rope_type": "default", "type": "default"},
        num_code_groups=GROUPS, text_hidden_size=40, text_vocab_size=text_vocab, initializer_range=0.2,
        codec_pad_id=base, codec_bos_id=base + 1, codec_eos_token_id=base + 2, codec_think_id=base + 3,
        codec_nothink_id=base + 4, codec_think_bos_id=base + 5, codec_think_eos_id=base + 6,
        codec_language_id={"english": base + 10, "chinese": base + 11}, spk_id={}, spk_is_dialect={},
    )
    spk = dict(
        mel_dim=128, enc_dim=32, enc_channels=[32, 32, 32, 64], enc_kernel_sizes=[5, 3, 3, 1],
        enc_dilations=[1, 2, 3, 1], enc_attention_channels=16, enc_res2net_scale=4, enc_se_channels=16,
    )
    return dict(
        talker_config=talker, speaker_encoder_config=spk, tokenizer_type="qwen3_tts_tokenizer_12hz",
        tts_model_size="tiny", tts_model_type="base",
        im_start_token_id=ids["<|im_start|>"], im_end_token_id=ids["<|im_end|>"], tts_pad_token_id=ids["<|tts_pad|>"],
        tts_bos_token_id=ids["<|tts_text_bos|>"], tts_eos_token_id=ids["<|tts_text_eod|>"],
    )


def write_speech_tokenizer(out: Path) -> None:
    from qwen_tts.core import Qwen3TTSTokenizerV2Config, Qwen3TTSTokenizerV2Model
    from transformers import EncodecFeatureExtractor

    decoder = dict(
        codebook_size=CODEBOOK, codebook_dim=16, hidden_size=16, latent_dim=24, head_dim=8, num_attention_heads=2,
        num_key_value_heads=2, intermediate_size=32, num_hidden_layers=2, num_quantizers=GROUPS, sliding_window=4,
        upsample_rates=[8, 5, 4, 3], upsampling_ratios=[2, 2], decoder_dim=32,
    )
    encoder = dict(  # a tiny Mimi encoder: only so the folder is complete (we decode, never encode)
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2, head_dim=16,
        intermediate_size=64, codebook_size=CODEBOOK, codebook_dim=16, num_filters=4, num_quantizers=GROUPS,
        num_semantic_quantizers=1, vector_quantization_hidden_dimension=16, upsample_groups=32,
    )
    cfg = Qwen3TTSTokenizerV2Config(
        encoder_config=encoder, decoder_config=decoder, encoder_valid_num_quantizers=GROUPS,
    )
    torch.manual_seed(SEED + 1)
    model = Qwen3TTSTokenizerV2Model(cfg).eval()
    with torch.no_grad():  # the default init gives a near-silent decoder (zero codebooks, ~0 output): rescale
        for name, p in model.decoder.named_parameters():
            if "embedding_sum" in name:
                p.normal_(0.0, 1.0)
            elif name.endswith(("alpha", "beta")):
                p.normal_(0.0, 0.3)
            elif p.dim() >= 2:
                p.normal_(0.0, 0.7 / p[0].numel() ** 0.5)  # unclipped output, std ~0.07
            elif name.endswith("bias"):
                p.normal_(0.0, 0.05)
    model.save_pretrained(str(out))
    EncodecFeatureExtractor(feature_size=1, sampling_rate=24000, padding_value=0.0).save_pretrained(str(out))


def write_checkpoint(ckpt: Path) -> None:
    from qwen_tts.core.models import Qwen3TTSConfig, Qwen3TTSForConditionalGeneration

    ckpt.mkdir(parents=True, exist_ok=True)
    ids = write_text_tokenizer(ckpt)
    text_vocab = max(ids.values()) + 1
    cfg = Qwen3TTSConfig(**model_config(ids, text_vocab))
    torch.manual_seed(SEED)
    model = Qwen3TTSForConditionalGeneration(cfg).eval()
    model.save_pretrained(str(ckpt), safe_serialization=True)
    # save_pretrained tags the speaker-encoder sub-config with a model_type that the official config class
    # then refuses on load; the released config.json has no such key.
    conf = json.loads((ckpt / "config.json").read_text())
    conf["speaker_encoder_config"].pop("model_type", None)
    (ckpt / "config.json").write_text(json.dumps(conf, indent=2))
    # The released generation_config.json is a plain dict read by Qwen3TTSModel (not transformers' GenerationConfig).
    (ckpt / "generation_config.json").write_text(json.dumps({
        "do_sample": True, "repetition_penalty": 1.05, "temperature": 0.9, "top_p": 1.0, "top_k": 50,
        "subtalker_dosample": True, "subtalker_temperature": 0.9, "subtalker_top_p": 1.0, "subtalker_top_k": 50,
        "max_new_tokens": 8192,
    }, indent=2))
    write_speech_tokenizer(ckpt / "speech_tokenizer")


def reference_clip() -> np.ndarray:
    rng = np.random.default_rng(SEED)
    t = np.arange(int(1.3 * 24000)) / 24000
    wav = 0.3 * np.sin(2 * np.pi * 180 * t) + 0.2 * np.sin(2 * np.pi * 410 * t + 1.0) + 0.05 * rng.standard_normal(t.size)
    return (wav * np.hanning(t.size)).astype(np.float32)


class _Capture:
    """Wraps talker.generate to record the prompt the official code builds."""

    def __init__(self, talker) -> None:
        self.inner, self.calls = talker.generate, []

    def __call__(self, **kw):
        self.calls.append({k: kw[k].detach().clone() for k in ("inputs_embeds", "attention_mask", "trailing_text_hidden", "tts_pad_embed")})
        return self.inner(**kw)


def compute_reference(ckpt: Path) -> dict:
    from qwen_tts import Qwen3TTSModel

    tts = Qwen3TTSModel.from_pretrained(str(ckpt), dtype=torch.float32, attn_implementation="sdpa")
    model = tts.model.eval()
    cap = _Capture(model.talker)
    model.talker.generate = cap

    clip = reference_clip()
    spk = model.extract_speaker_embedding(clip, 24000)  # [D]
    g = torch.Generator().manual_seed(SEED + 2)
    ref_code = torch.randint(0, CODEBOOK, (REF_FRAMES, GROUPS), generator=g)  # [T, G]: stands in for the Mimi encoder's codes
    input_ids = tts._tokenize_texts([tts._build_assistant_text(t) for t in TEXTS])
    ref_ids = tts._tokenize_texts([tts._build_ref_text(REF_TEXT)])[0]
    greedy = dict(
        do_sample=False, subtalker_dosample=False, max_new_tokens=MAX_NEW, repetition_penalty=1.05,
        top_k=50, top_p=1.0, temperature=0.9,
    )

    def run(idx: list[int], icl: list[bool], language: str = "auto"):
        prompt = dict(
            ref_code=[ref_code if m else None for m in icl], ref_spk_embedding=[spk for _ in idx],
            x_vector_only_mode=[not m for m in icl], icl_mode=icl,
        )
        codes, _ = model.generate(
            input_ids=[input_ids[i] for i in idx], ref_ids=[ref_ids if m else None for m in icl],
            voice_clone_prompt=prompt, languages=[language] * len(idx), non_streaming_mode=False, **greedy,
        )
        return [c.clone() for c in codes], cap.calls[-1]

    out: dict = {"input_ids": [x[0].tolist() for x in input_ids], "ref_ids": ref_ids[0].tolist(), "texts": TEXTS,
                 "ref_text": REF_TEXT, "ref_code": ref_code, "clip": torch.from_numpy(clip), "speaker_embedding": spk,
                 "max_new_tokens": MAX_NEW, "repetition_penalty": 1.05}
    for mode, icl in (("xvec", False), ("icl", True)):
        for i in range(len(TEXTS)):
            codes, call = run([i], [icl])
            out[f"{mode}_{i}_codes"] = codes[0]
            out[f"{mode}_{i}_prompt"] = call["inputs_embeds"][0]
            out[f"{mode}_{i}_trailing"] = call["trailing_text_hidden"][0]
    codes, call = run([0], [False], language="english")
    out["xvec_en_0_codes"], out["xvec_en_0_prompt"] = codes[0], call["inputs_embeds"][0]
    out["tts_pad_embed"] = call["tts_pad_embed"].reshape(-1)

    # Talker logits over a whole prompt (one forward, no cache): the x-vector prompt of text 0.
    prompt = out["xvec_0_prompt"][None]
    with torch.no_grad():
        res = model.talker(inputs_embeds=prompt, attention_mask=torch.ones(prompt.shape[:2], dtype=torch.long))
    out["xvec_0_logits"] = res.logits[0]  # [T, V]

    # Code predictor logits for the first generated frame (greedy, given the talker's last hidden state).
    out["talker_last_hidden"] = res.past_hidden[0, -1]

    # Waveform: the official speech tokenizer decode of the ICL output prefixed by its reference codes (as
    # Qwen3TTSModel.generate_voice_clone does) and of a longer random code sequence.
    st = model.speech_tokenizer.model.eval()
    long_codes = torch.randint(0, CODEBOOK, (60, GROUPS), generator=g)
    out["long_codes"] = long_codes
    with torch.no_grad():
        out["long_wav"] = st.decode(long_codes[None]).audio_values[0]
        # Streaming as the app does it: 4 new frames at a time, each with up to 25 frames of left context.
        out["long_wav_chunked_4_25"] = st.decoder.chunked_decode(long_codes.T[None], 4, 25)[0, 0]
        out["xvec_0_wav_chunked_4_25"] = st.decoder.chunked_decode(out["xvec_0_codes"].T[None], 4, 25)[0, 0]
        icl_all = torch.cat([ref_code, out["icl_0_codes"]])
        out["icl_0_wav"] = st.decode(icl_all[None]).audio_values[0]
    return out


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    torch.set_num_threads(1)
    out = Path(sys.argv[1])
    ckpt = out / "checkpoint"
    write_checkpoint(ckpt)
    ref = compute_reference(ckpt)
    torch.save(ref, out / "reference.pt")
    lens = {k: tuple(v.shape) for k, v in ref.items() if k.endswith("_codes")}
    logger.info("wrote %s; greedy code shapes %s", out, lens)


if __name__ == "__main__":
    main()
