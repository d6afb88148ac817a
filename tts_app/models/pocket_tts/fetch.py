"""``python -m tts_app fetch pocket-tts[-LANGUAGE[-24l]]``: a released voice-cloning model as one folder.

Unlike the other fetchable checkpoints (``available.HUB_CHECKPOINTS``), it comes from two repositories at
pinned revisions and needs a config written beside it, so it is not a hub snapshot: the files are linked
from the Hugging Face cache into one folder that ``weights`` loads. The config written is the official one
of that language (``languages.Variant``): its ``weights_path`` keeps the released ``languages/<variant>/``
name, which tells the catalogue the folder's language.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Optional

import yaml
from huggingface_hub import hf_hub_download

from tts_app.models.available import POCKET_ID, pocket_default_dir
from tts_app.models.hub_fetch import FetchError
from tts_app.models.pocket_languages import CLONING_REPO, NO_CLONING_REPO, VOICES_REVISION, Variant, variant_for_id

# The English saved voices fetched (the official predefined ones, the default first). Another language gets its
# default voice only: the release does not list which predefined voices each language folder holds.
ENGLISH_VOICES = ("alba", "marius", "javert", "jean", "fantine", "cosette")
_SEANET = dict(dimension=512, channels=1, n_filters=64, n_residual_layers=1, ratios=[6, 5, 4], kernel_size=7,
               residual_kernel_size=3, last_kernel_size=3, dilation_base=2, pad_mode="constant", compress=2)
POCKET_ENGLISH_CONFIG = {
    "weights_path": "model.safetensors", "default_temperature": 0.3, "replace_characters": {"\u2019": "'", "\u2018": "'"},
    "flow_lm": {
        "insert_bos_before_voice": True, "dtype": "float32", "flow": {"depth": 6, "dim": 512},
        "transformer": {"d_model": 1024, "hidden_scale": 4, "max_period": 10000, "num_heads": 16, "num_layers": 6},
        "lookup_table": {"dim": 1024, "n_bins": 4000, "tokenizer": "tokenizers", "tokenizer_path": "tokenizer.json"},
    },
    "mimi": {
        "dtype": "float32", "sample_rate": 24000, "inner_dim": 32, "outer_dim": 512, "channels": 1, "frame_rate": 12.5,
        "seanet": _SEANET,
        "transformer": {"d_model": 512, "num_heads": 8, "num_layers": 2, "layer_scale": 0.01, "context": 250,
                        "dim_feedforward": 2048, "input_dimension": 512, "output_dimensions": [512]},
        "quantizer": {"dimension": 32, "output_dimension": 512},
    },
}


def variant_config(variant: Variant) -> dict[str, Any]:
    """The official ``config/<variant>.yaml`` of a released model (its files named by their hf:// addresses), less
    ``weights_path_without_voice_cloning`` (only the voice-cloning weights are read)."""
    data = copy.deepcopy(POCKET_ENGLISH_CONFIG)
    weights, tokenizer = released_files(variant)
    data["weights_path"] = f"hf://{weights[0]}/{weights[1]}@{weights[2]}"
    data["flow_lm"]["lookup_table"]["tokenizer_path"] = f"hf://{tokenizer[0]}/{tokenizer[1]}@{tokenizer[2]}"
    data["flow_lm"]["transformer"]["num_layers"] = variant.num_layers
    data["replace_characters"] = dict(variant.replace_characters)
    if variant.language != "english":
        del data["default_temperature"]  # absent from the other languages' configs (the same 0.3 by default)
    if variant.remove_semicolons:
        data["remove_semicolons"] = True
    return data


def released_files(variant: Variant) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
    """(repository, file, revision) of the voice-cloning weights and of the tokenizer."""
    folder = f"languages/{variant.name}"
    return ((CLONING_REPO, f"{folder}/model.safetensors", variant.weights_revision),
            (NO_CLONING_REPO, f"{folder}/tokenizer.json", variant.tokenizer_revision))


def fetch_pocket(directory: Optional[str] = None, model_id: str = POCKET_ID) -> Path:
    """A released model (``pocket-tts[-LANGUAGE[-24l]]``) as one folder: config.yaml (written), the weights, the
    tokenizer, voices/ (the one explicit network use for Pocket TTS). Raises FetchError with a one-line reason."""
    variant = variant_for_id(model_id)
    if variant is None:
        raise FetchError(f"{model_id[:64]!r} is not a Pocket TTS model; use {POCKET_ID}[-LANGUAGE[-24l]], LANGUAGE one of "
                         "french, german, portuguese, italian, spanish, dutch")
    folder = Path(directory).expanduser() if directory else pocket_default_dir(model_id=model_id)
    (folder / "voices").mkdir(parents=True, exist_ok=True)
    weights, tokenizer = released_files(variant)
    voices = ENGLISH_VOICES if variant.language == "english" else (variant.default_voice,)
    voice_file = f"languages/{variant.name}/embeddings/{{}}.safetensors"
    wanted = [(weights, "model.safetensors"), (tokenizer, "tokenizer.json")]
    wanted += [((NO_CLONING_REPO, voice_file.format(v), VOICES_REVISION), f"voices/{v}.safetensors") for v in voices]
    for (repo_id, filename, revision), target in wanted:
        try:
            got = Path(hf_hub_download(repo_id, filename, revision=revision))
        except Exception as e:  # network, auth (the weights are gated) and disk errors all come back as one line
            raise FetchError(f"could not download {repo_id}/{filename}: {type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''}") from e
        dest = folder / target
        dest.unlink(missing_ok=True)
        dest.symlink_to(got)
    (folder / "config.yaml").write_text(yaml.safe_dump(variant_config(variant), sort_keys=False, allow_unicode=True), encoding="utf-8")
    return folder
