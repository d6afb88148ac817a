"""A tiny randomly initialised Pocket TTS checkpoint folder of the released layout, written with our own modules
(the tests that need no official code; the parity tests use the one the official classes write).

``write_tiny_checkpoint(folder)`` writes config.yaml, model.safetensors (``flow_lm.*``, ``mimi.*``), tokenizer.json
and, with ``voices=True``, a saved voice state (and one per name of ``more_voices``) in the official export format under voices/.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import torch
import yaml

from tts_app.models.pocket_tts.fetch import POCKET_ENGLISH_CONFIG, variant_config
from tts_app.models.pocket_languages import VARIANTS
from tts_app.models.pocket_tts.config import PocketConfig
from tts_app.models.pocket_tts.flow_lm import FlowLM
from tts_app.models.pocket_tts.mimi import Mimi

CORPUS = [
    "Hello there, how are you today? The quick brown fox jumps over the lazy dog.",
    "It costs 3.50 dollars; really, it does: yes. Short one! And a third?",
    "a somewhat longer sentence, spoken slowly and clearly by the voice.",
] * 10
EOS_THRESHOLD = 0.6  # with the out_eos weights below, rows end after a few steps at different times


def _config(n_bins: int) -> dict:
    """The released English config with every width shrunk (the shapes and options stay those of the release)."""
    data = copy.deepcopy(POCKET_ENGLISH_CONFIG)
    data["default_eos_threshold"] = EOS_THRESHOLD
    flow, mimi = data["flow_lm"], data["mimi"]
    flow["flow"] = {"depth": 2, "dim": 24}
    flow["transformer"].update(d_model=32, hidden_scale=2, num_heads=4, num_layers=2)
    flow["lookup_table"].update(dim=32, n_bins=n_bins)
    mimi.update(inner_dim=8, outer_dim=16, quantizer={"dimension": 8, "output_dimension": 16})
    mimi["seanet"] = dict(mimi["seanet"], dimension=16, n_filters=4)
    mimi["transformer"].update(d_model=16, num_heads=2, context=20, dim_feedforward=32, input_dimension=16, output_dimensions=[16])
    return data


def _tokenizer(folder: Path) -> int:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(CORPUS, trainers.UnigramTrainer(vocab_size=100, special_tokens=["<unk>"], unk_token="<unk>",
                                                            show_progress=False))
    tok.save(str(folder / "tokenizer.json"))
    return tok.get_vocab_size()


def write_tiny_checkpoint(folder: Path, seed: int = 0, voices: bool = True, more_voices: tuple[str, ...] = (),
                          variant: str = "english") -> Path:
    """``more_voices``: names of further saved voices beside alba, each a different random prompt. ``variant``: a
    released language (``french``, ``german_24l``...): its official config (text rules, hf:// file names, depth)
    as our fetch writes it, every width shrunk."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    data = _config(_tokenizer(folder))
    if variant != "english":
        official = variant_config(VARIANTS[variant])
        layers = 3 if official["flow_lm"]["transformer"]["num_layers"] == 24 else 2  # deeper, still tiny
        official["flow_lm"] = dict(data["flow_lm"], lookup_table=dict(data["flow_lm"]["lookup_table"],
                                   tokenizer_path=official["flow_lm"]["lookup_table"]["tokenizer_path"]))
        official["flow_lm"]["transformer"] = dict(data["flow_lm"]["transformer"], num_layers=layers)
        data = dict(official, mimi=data["mimi"], default_eos_threshold=data["default_eos_threshold"])
    (folder / "config.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    cfg = PocketConfig.from_dict(data)
    torch.manual_seed(seed)
    flow = FlowLM(cfg.flow_lm, cfg.mimi.latent_dim, cfg.mimi.inner_dim)
    mimi = Mimi(cfg.mimi)
    with torch.no_grad():
        for name, p in list(flow.named_parameters()) + list(mimi.named_parameters()):
            if name.endswith(("norm1.weight", "norm2.weight", "out_norm.weight", "in_ln.weight", ".alpha", ".scale")):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif p.abs().sum() == 0 or name.endswith(("bos_emb", "bos_before_voice", "speaker_proj_weight")):
                p.copy_(0.3 * torch.randn_like(p))
        flow.out_eos.weight.copy_(torch.randn_like(flow.out_eos.weight) / flow.out_eos.weight.shape[1] ** 0.5)
        flow.out_eos.bias.zero_()
        flow.emb_std.copy_(0.5 + torch.rand_like(flow.emb_std))
        flow.emb_mean.copy_(0.2 * torch.randn_like(flow.emb_mean))
    state = {f"flow_lm.{k}": v for k, v in flow.state_dict().items()}
    state.update({f"mimi.{k}": v for k, v in mimi.state_dict().items()})
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "model.safetensors"))
    if voices:
        _save_voice(flow, folder / "voices" / "alba.safetensors", length=7, seed=seed)
    for i, name in enumerate(more_voices, start=1):
        _save_voice(flow, folder / "voices" / f"{name}.safetensors", length=5 + i, seed=seed + 100 * i)
    return folder


def _save_voice(flow: FlowLM, path: Path, length: int, seed: int) -> None:
    """A random voice prompt's state, saved in the official ``export_model_state`` layout."""
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed + 1)
    prompt = flow.voice_prompt(torch.randn(length, flow.speaker_proj_weight.shape[1], generator=g))
    with torch.no_grad():
        kv = flow.voice_kv(prompt)
    out = {}
    for i, (k, v) in enumerate(kv):
        name = f"transformer.layers.{i}.self_attn"
        out[f"{name}/cache"] = torch.stack([k.transpose(0, 1), v.transpose(0, 1)])[:, None].contiguous()  # [2, 1, T, H, D]
        out[f"{name}/offset"] = torch.tensor([k.shape[1]])
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(out, str(path))


ENGLISH_VOICE_NAMES = ("marius", "javert", "jean", "fantine", "cosette")  # beside alba: the voices the fetch takes


def write_released_repos(root: Path, seed: int = 0) -> dict[str, Path]:
    """The two hub repositories of the English release, tiny: ``kyutai/pocket-tts`` (the voice-cloning weights) and
    ``kyutai/pocket-tts-without-voice-cloning`` (the same weights less the speaker projection and Mimi's encoder, the
    tokenizer, the saved voices), in the folders ``languages/english/...`` that ``fetch pocket-tts`` asks for.
    Returns repo -> folder, for ``FakeHub``."""
    import shutil

    from safetensors.torch import load_file, save_file

    from tts_app.models.pocket_tts.weights import CLONING_ONLY

    ckpt = write_tiny_checkpoint(root / "ckpt", seed=seed, more_voices=ENGLISH_VOICE_NAMES)
    cloning, plain = root / "pocket-tts" / "languages" / "english", root / "no-cloning" / "languages" / "english"
    cloning.mkdir(parents=True)
    (plain / "embeddings").mkdir(parents=True)
    shutil.copy(ckpt / "model.safetensors", cloning / "model.safetensors")
    state = load_file(str(ckpt / "model.safetensors"))
    kept = {k: v for k, v in state.items() if not k.split(".", 1)[1].startswith(CLONING_ONLY)}
    save_file(kept, str(plain / "model.safetensors"))
    shutil.copy(ckpt / "tokenizer.json", plain / "tokenizer.json")
    for voice in ckpt.glob("voices/*.safetensors"):
        shutil.copy(voice, plain / "embeddings" / voice.name)
    return {"kyutai/pocket-tts": root / "pocket-tts", "kyutai/pocket-tts-without-voice-cloning": root / "no-cloning"}


def released_widths(repos: dict[str, Path]) -> dict:
    """The tiny config the released repositories' weights were made with: what the fetch must write for them (it
    writes the official English config, whose widths are the real model's) in place of ``POCKET_ENGLISH_CONFIG``."""
    root = repos["kyutai/pocket-tts"].parent
    return yaml.safe_load((root / "ckpt" / "config.yaml").read_text())


def widths_hook(folder: Path, widths: dict) -> Path:
    """A ``sitecustomize.py`` in ``folder`` (put it on a server's PYTHONPATH) that makes the fetch write ``widths``
    in place of the official English config: the one difference between the tiny release and the real one."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import json\nimport tts_app.models.pocket_tts.fetch as fetch\n"
        f"fetch.POCKET_ENGLISH_CONFIG = json.loads({json.dumps(json.dumps(widths))})\n")
    return folder
