"""``python -m tts_app fetch pocket-tts``: the released English voice-cloning model as one folder.

Unlike the other fetchable checkpoints (``available.HUB_CHECKPOINTS``), it comes from two repositories at
pinned revisions and needs a config written beside it, so it is not a hub snapshot: the files are linked
from the Hugging Face cache into one folder that ``weights`` loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import yaml
from huggingface_hub import hf_hub_download

from tts_app.models.available import POCKET_REPO, pocket_default_dir
from tts_app.models.hub_fetch import FetchError

# The released English voice-cloning model (pocket-tts 4.0.1's config/english.yaml, MIT), files pinned to the
# revisions that config names; the saved voices are the official predefined ones (their default first).
POCKET_WEIGHTS = (POCKET_REPO, "languages/english/model.safetensors", "db04f0e653473e5c7333c69686ac92b7460b0c1d")
POCKET_TOKENIZER = ("kyutai/pocket-tts-without-voice-cloning", "languages/english/tokenizer.json",
                    "00eac05ed3d16bdc3f6b5d598874019c34a89214")
POCKET_VOICES = ("kyutai/pocket-tts-without-voice-cloning", "languages/english/embeddings/{}.safetensors",
                 "a7056f505a4a8ca72d8b5fb1440071d6f1a35739", ("alba", "marius", "javert", "jean", "fantine", "cosette"))
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


def fetch_pocket(directory: Optional[str] = None) -> Path:
    """The released English model as one folder: config.yaml (written), the weights, the tokenizer, voices/
    (the one explicit network use for Pocket TTS). Raises FetchError with a one-line reason."""
    folder = Path(directory).expanduser() if directory else pocket_default_dir()
    (folder / "voices").mkdir(parents=True, exist_ok=True)
    repo, name, rev, voices = POCKET_VOICES
    wanted = [(POCKET_WEIGHTS, "model.safetensors"), (POCKET_TOKENIZER, "tokenizer.json")]
    wanted += [((repo, name.format(v), rev), f"voices/{v}.safetensors") for v in voices]
    for (repo_id, filename, revision), target in wanted:
        try:
            got = Path(hf_hub_download(repo_id, filename, revision=revision))
        except Exception as e:  # network, auth (the weights are gated) and disk errors all come back as one line
            raise FetchError(f"could not download {repo_id}/{filename}: {type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''}") from e
        dest = folder / target
        dest.unlink(missing_ok=True)
        dest.symlink_to(got)
    (folder / "config.yaml").write_text(yaml.safe_dump(POCKET_ENGLISH_CONFIG, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return folder
