"""Which speech models this machine can serve: the embedded voice, plus Qwen3-TTS, Chatterbox and Pocket TTS
checkpoints found on disk.

Search order: ``--model-path`` (or the ``model_path`` argument, whichever kind of checkpoint it holds),
$TTS_APP_QWEN3_PATH / $TTS_APP_CHATTERBOX_PATH / $TTS_APP_POCKET_TTS_PATH, then the Hugging Face cache
(file-system lookup only; Qwen3-TTS and Chatterbox) or, for Pocket TTS, the folder its fetch writes.
Nothing here downloads: ``HUB_CHECKPOINTS`` says what ``tts_app.models.hub_fetch`` may download, the explicit
opt-in behind ``python -m tts_app fetch {qwen3-0.6b,qwen3-1.7b,chatterbox} [--dir DIR]`` and $TTS_APP_MODELS;
``fetch pocket-tts[-LANGUAGE[-24l]]`` (and the same names in $TTS_APP_MODELS) is ``tts_app.models.pocket_tts.fetch``
(several repositories, a config written).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Optional

from tts_app import settings
from tts_app.models.capabilities import CHATTERBOX, NO_CLONING, PIPER, QWEN3, Capabilities, pocket_capabilities
from tts_app.models.pocket_languages import MODEL_IDS as POCKET_MODEL_IDS
from tts_app.models.pocket_languages import NO_CLONING_REPO, variant_for_id, variant_of_weights
from tts_app.voice.errors import shown_name

logger = logging.getLogger(__name__)

EMBEDDED_ID = "piper-joe-medium"
# The embedded voice in the fast precision, offered beside it where that precision is bf16: there it
# kept the words and the voice (WER +0.6 points, similarity to float32 0.9999) at 1.6-1.8x the
# throughput. Not offered where fast runs float32 (no bf16 instructions): it would be the exact voice twice.
EMBEDDED_FAST_ID = "piper-joe-medium-fast"
EMBEDDED_IDS = (EMBEDDED_ID, EMBEDDED_FAST_ID)
# OpenAI's speech model names: each an alias of the embedded model (tests hold this to the installed openai client's list).
OPENAI_MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-4o-mini-tts-2025-12-15")
ENV_VAR = "TTS_APP_QWEN3_PATH"
CHATTERBOX_ID = "chatterbox"
CHATTERBOX_ENV = "TTS_APP_CHATTERBOX_PATH"
CHATTERBOX_REPO = "ResembleAI/chatterbox"
CHATTERBOX_FILES = ("ve.safetensors", "t3_cfg.safetensors", "s3gen.safetensors", "tokenizer.json", "conds.pt")
CHATTERBOX_GB = 3.2  # t3_cfg 2.1 GB + s3gen 1.1 GB; the repository's other files are not fetched
POCKET_ID = "pocket-tts"  # English; pocket-tts-LANGUAGE[-24l] are the other released languages (POCKET_MODEL_IDS)
POCKET_ENV = "TTS_APP_POCKET_TTS_PATH"
POCKET_LABEL = "Pocket TTS (Kyutai, CPU cloning)"
POCKET_REPO = "kyutai/pocket-tts"
POCKET_GB = 0.45  # the English model in float32 (422 MB: flow LM and all of Mimi), its tokenizer, six saved voices
POCKET_FILES = ("config.yaml", "model.safetensors", "tokenizer.json")  # what the fetch writes; the config names the rest


@dataclass(frozen=True)
class Qwen3Spec:
    id: str
    label: str
    repo: str
    download_gb: float
    talker_hidden: int  # tells the sizes apart in a local folder's config.json


QWEN3_MODELS: dict[str, Qwen3Spec] = {
    s.id: s
    for s in (
        Qwen3Spec("qwen3-0.6b", "Qwen3-TTS 0.6B Base", "Qwen/Qwen3-TTS-12Hz-0.6B-Base", 2.5, 1024),
        Qwen3Spec("qwen3-1.7b", "Qwen3-TTS 1.7B Base", "Qwen/Qwen3-TTS-12Hz-1.7B-Base", 4.5, 2048),
    )
}
LOCAL_ID = "qwen3-local"  # a checkpoint of another size (e.g. a test's tiny one) given by path


@dataclass(frozen=True)
class ModelChoice:
    """One selectable model; ``path`` is None when it is not on this machine."""

    id: str
    label: str
    path: Optional[Path] = None

    @property
    def available(self) -> bool:
        return self.id in EMBEDDED_IDS or self.path is not None

    @property
    def how_to_get(self) -> str:
        """One line telling a user how to make this model available."""
        if not self.available and self.id in POCKET_MODEL_IDS:
            return (
                f"{self.label} is not on this machine: accept the terms of {POCKET_REPO} on the Hugging Face hub, log in "
                f"(`hf auth login`), run `python -m tts_app fetch {self.id} --dir DIR` (about {POCKET_GB:g} GB), then "
                f"start the app with --model-path DIR or {POCKET_ENV}=DIR"
            )
        if not self.available and self.id == CHATTERBOX_ID:
            return (
                f"{self.label} is not on this machine: run `python -m tts_app fetch {CHATTERBOX_ID} --dir DIR` (about "
                f"{CHATTERBOX_GB:g} GB, needs the Hugging Face hub) and `bash scripts/install_chatterbox.sh`, then start "
                f"the app with --model-path DIR or {CHATTERBOX_ENV}=DIR"
            )
        spec = QWEN3_MODELS.get(self.id)
        if self.available or spec is None:
            return ""
        return (
            f"{self.label} is not on this machine: run `python -m tts_app fetch {self.id} --dir DIR` "
            f"(about {spec.download_gb:g} GB, needs the Hugging Face hub) and start the app with --model-path DIR "
            f"or {ENV_VAR}=DIR"
        )


def capabilities_of(model_id: str) -> Optional[Capabilities]:
    """What the model ``model_id`` honours (read without loading it); None for a model this catalogue does not know."""
    if model_id in EMBEDDED_IDS:
        return PIPER
    if model_id == CHATTERBOX_ID:
        return CHATTERBOX
    if model_id in QWEN3_MODELS or model_id == LOCAL_ID:
        return QWEN3
    variant = variant_for_id(model_id)
    return pocket_capabilities(variant.code) if variant is not None else None


def is_chatterbox_checkpoint(path: Path) -> bool:
    return all((path / f).is_file() for f in CHATTERBOX_FILES)


def is_pocket_checkpoint(path: Path) -> bool:
    """A Pocket TTS folder: the official config as config.yaml with the weights and tokenizer it names
    (tts_app.models.pocket_tts.weights reads them; the name check is enough to list it)."""
    # The weights beside the config, or in the released layout (languages/<variant>/model.safetensors).
    files = (path, *path.glob("languages/*"))
    return ((path / "config.yaml").is_file() and any(any(f.glob("*.safetensors")) for f in files)
            and any(any(f.glob("tokenizer.*")) for f in files))


def pocket_default_dir(env: Optional[Mapping[str, str]] = None, model_id: str = POCKET_ID) -> Path:
    """Where ``fetch MODEL_ID`` (a Pocket TTS id) puts the model without --dir (looked up like the Hugging Face cache)."""
    return settings.cache_root(env) / model_id


def pocket_model_id(path: Path) -> str:
    """Which released language a Pocket TTS folder holds, by its config's ``weights_path`` (the fetch writes the
    released ``languages/<variant>/`` name; a bare file name reads as English)."""
    try:
        text = (path / "config.yaml").read_text(encoding="utf-8")
    except OSError:
        return POCKET_ID
    # The one line is enough (no YAML parser at start-up): weights_path is a top-level key of the official schema.
    line = next((ln for ln in text.splitlines() if ln.startswith("weights_path:")), "")
    return variant_of_weights(line).model_id


def pocket_clones(path: Path) -> bool:
    """False for a folder of the no-cloning release (its config's ``weights_path`` names that repository: the fetch
    writes it so where the hub refused the gated weights); such a folder speaks its saved voices only."""
    try:
        text = (path / "config.yaml").read_text(encoding="utf-8")
    except OSError:
        return True
    line = next((ln for ln in text.splitlines() if ln.startswith("weights_path:")), "")
    return f"hf://{NO_CLONING_REPO}/" not in line


def find_pocket_checkpoint(model_path: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> Path:
    """``model_path``, $TTS_APP_POCKET_TTS_PATH or the fetch's default folder, the first that holds a Pocket TTS
    folder; ValueError (one line, how to get one) otherwise."""
    env = os.environ if env is None else env
    for given in (model_path, settings.value(POCKET_ENV, env), str(pocket_default_dir(env))):
        if given and is_pocket_checkpoint(Path(given).expanduser()):
            return Path(given).expanduser()
    raise ValueError(ModelChoice(POCKET_ID, POCKET_LABEL).how_to_get)


def is_checkpoint(path: Path) -> bool:
    """A Qwen3-TTS checkpoint folder."""
    return (
        (path / "config.json").is_file()
        and (path / "speech_tokenizer" / "config.json").is_file()
        and any(path.glob("*.safetensors"))
    )


def _model_id(path: Path) -> str:
    """Which known size a checkpoint folder holds, by its talker width; LOCAL_ID otherwise."""
    try:
        hidden = json.loads((path / "config.json").read_text(encoding="utf-8"))["talker_config"]["hidden_size"]
    except (OSError, ValueError, KeyError, TypeError):
        return LOCAL_ID
    return next((s.id for s in QWEN3_MODELS.values() if s.talker_hidden == hidden), LOCAL_ID)


def hf_cache_snapshot(repo: str, env: Mapping[str, str], complete: Callable[[Path], bool] = is_checkpoint) -> Optional[Path]:
    """The newest complete snapshot of ``repo`` in the local Hugging Face cache, if any."""
    hub = env.get("HF_HUB_CACHE") or os.path.join(env.get("HF_HOME", os.path.join(Path.home(), ".cache", "huggingface")), "hub")
    snaps = Path(hub) / ("models--" + repo.replace("/", "--")) / "snapshots"
    if not snaps.is_dir():
        return None
    for snap in sorted(snaps.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
        if complete(snap):
            return snap
    return None


def given_models(model_path: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> dict[str, Path]:
    """The checkpoints the operator pointed at (``model_path``, $TTS_APP_QWEN3_PATH, $TTS_APP_CHATTERBOX_PATH,
    $TTS_APP_POCKET_TTS_PATH), by model id; a folder that holds no checkpoint is a warning."""
    env = os.environ if env is None else env
    found: dict[str, Path] = {}
    for given, kinds in ((model_path, "qwen3 chatterbox pocket"), (settings.value(ENV_VAR, env), "qwen3"),
                         (settings.value(CHATTERBOX_ENV, env), "chatterbox"), (settings.value(POCKET_ENV, env), "pocket")):
        if not given:
            continue
        path = Path(given).expanduser()
        if "qwen3" in kinds and is_checkpoint(path):
            found.setdefault(_model_id(path), path)
        elif "chatterbox" in kinds and is_chatterbox_checkpoint(path):
            found.setdefault(CHATTERBOX_ID, path)
        elif "pocket" in kinds and is_pocket_checkpoint(path):
            found.setdefault(pocket_model_id(path), path)
        else:
            logger.warning("%s is not a %s checkpoint", path, " or ".join(k.capitalize() for k in kinds.split()))
    return found


def find_models(model_path: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> list[ModelChoice]:
    """The embedded voice first, then every Qwen3-TTS size and Chatterbox (with ``path`` None where none was found)."""
    env = os.environ if env is None else env
    found = given_models(model_path, env)
    for spec in QWEN3_MODELS.values():
        if spec.id not in found and (snap := hf_cache_snapshot(spec.repo, env)) is not None:
            found[spec.id] = snap
    if CHATTERBOX_ID not in found and (snap := hf_cache_snapshot(CHATTERBOX_REPO, env, is_chatterbox_checkpoint)) is not None:
        found[CHATTERBOX_ID] = snap
    for pocket_id in POCKET_MODEL_IDS:
        if pocket_id not in found and is_pocket_checkpoint(pocket_default_dir(env, pocket_id)):
            found[pocket_id] = pocket_default_dir(env, pocket_id)
    choices = [ModelChoice(EMBEDDED_ID, "Embedded voice (Piper joe, CPU)")]
    if fast_variant_offered(env):
        choices.append(ModelChoice(EMBEDDED_FAST_ID, "Embedded voice, fast (bfloat16)"))
    choices += [ModelChoice(s.id, s.label, found.get(s.id)) for s in QWEN3_MODELS.values()]
    if LOCAL_ID in found:
        choices.append(ModelChoice(LOCAL_ID, f"Qwen3-TTS ({found[LOCAL_ID].name})", found[LOCAL_ID]))
    choices.append(ModelChoice(CHATTERBOX_ID, "Chatterbox (Resemble AI)", found.get(CHATTERBOX_ID)))
    choices.append(ModelChoice(POCKET_ID, POCKET_LABEL, found.get(POCKET_ID)))
    # The other languages only where found: one entry per released language would crowd the selector.
    choices += [ModelChoice(i, v.label, found[i]) for i, v in POCKET_MODEL_IDS.items() if i != POCKET_ID and i in found]
    # A no-cloning folder says so wherever it can be picked (the label), as its refusals of a clip do.
    return [replace(c, label=f"{c.label}: {NO_CLONING}") if c.id in POCKET_MODEL_IDS and c.path is not None
            and not pocket_clones(c.path) else c for c in choices]


def fast_variant_offered(env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether the embedded voice's fast precision is offered as a model of its own: on CPUs where it
    is bf16, and when the server's own precision is not fast already."""
    from tts_app.models.piper.precision import PRECISION_ENV, decoder_kind  # reads /proc/cpuinfo only

    env = os.environ if env is None else env
    return settings.value(PRECISION_ENV, env) != "fast" and decoder_kind("fast") == "bf16"


# The files each loader reads (fnmatch patterns, as huggingface_hub's allow_patterns: ``*`` crosses ``/``):
# a repository's other files (demo audio, other formats) are never fetched.
QWEN3_FILES = (
    "config.json", "*.safetensors", "tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json",
    "speech_tokenizer/config.json",
)  # fmt: skip


@dataclass(frozen=True)
class HubCheckpoint:
    """A checkpoint ``python -m tts_app fetch ID`` and $TTS_APP_MODELS can download: its repository, the files its
    loader reads, and the test that a folder holds all of them."""

    repo: str
    files: tuple[str, ...]
    complete: Callable[[Path], bool]


# Model id -> where to fetch it. A new backend's checkpoint is one more entry here.
HUB_CHECKPOINTS: dict[str, HubCheckpoint] = {
    **{s.id: HubCheckpoint(s.repo, QWEN3_FILES, is_checkpoint) for s in QWEN3_MODELS.values()},
    CHATTERBOX_ID: HubCheckpoint(CHATTERBOX_REPO, CHATTERBOX_FILES, is_chatterbox_checkpoint),
}
# Every name ``fetch`` and $TTS_APP_MODELS take: those checkpoints, and each released Pocket TTS language
# (tts_app.models.pocket_tts.fetch: two repositories at pinned revisions, a config written).
FETCHABLE = (*HUB_CHECKPOINTS, *POCKET_MODEL_IDS)


def unknown_model_message(model: str, served: str, model_path: Optional[str] = None) -> str:
    """The 400 message for a request naming a model this server does not serve: how to get it, if we know it."""
    choice = next((c for c in find_models(model_path) if c.id == model), None)
    variant = variant_for_id(model)
    if choice is None and variant is not None:  # a Pocket TTS language not fetched here (not listed when absent)
        choice = ModelChoice(model, variant.label)
    if choice is None:
        known = ", ".join([served, *FETCHABLE])
        return f"model {shown_name(model)} is not served here; use {served!r} (known models: {known})"
    if not choice.available:
        return choice.how_to_get
    return f"{choice.label} was found at {choice.path} but this server does not serve it; use {served!r}"
