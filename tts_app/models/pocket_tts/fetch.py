"""``python -m tts_app fetch pocket-tts[-LANGUAGE[-24l]]``: a released voice-cloning model as one folder.

Unlike the other fetchable checkpoints (``available.HUB_CHECKPOINTS``), it comes from two repositories at
pinned revisions and needs a config written beside it, so it is not a hub snapshot: the files are linked
from the Hugging Face cache into one folder that ``weights`` loads. The config written is the official one
of that language (``languages.Variant``): its ``weights_path`` keeps the released ``languages/<variant>/``
name, which tells the catalogue the folder's language.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import yaml

from tts_app.models.available import POCKET_ID, is_pocket_checkpoint, pocket_clones, pocket_default_dir
from tts_app.models.hub_fetch import (FetchError, Plan, RemoteFile, download_one, is_offline_or_unreachable, one_line,
                                      probe, repo_blobs)
from tts_app.models.pocket_languages import CLONING_REPO, ENGLISH, NO_CLONING_REPO, VOICES_REVISION, Variant, variant_for_id

logger = logging.getLogger(__name__)

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
    if variant.num_layers != ENGLISH.num_layers:  # the 24-layer models; the others keep the English config's depth
        data["flow_lm"]["transformer"]["num_layers"] = variant.num_layers
    data["replace_characters"] = dict(variant.replace_characters)
    if variant.language != "english":
        del data["default_temperature"]  # absent from the other languages' configs (the same 0.3 by default)
    if variant.remove_semicolons:
        data["remove_semicolons"] = True
    return data


def released_files(variant: Variant, cloning: bool = True) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
    """(repository, file, revision) of the weights (the voice-cloning release's, or with ``cloning`` False the
    no-cloning one's) and of the tokenizer."""
    folder = f"languages/{variant.name}"
    weights = (CLONING_REPO, variant.weights_revision) if cloning else (NO_CLONING_REPO, variant.no_cloning_revision)
    return ((weights[0], f"{folder}/model.safetensors", weights[1]),
            (NO_CLONING_REPO, f"{folder}/tokenizer.json", variant.tokenizer_revision))


@dataclass(frozen=True)
class PocketFetched:
    """A fetched folder; ``cloning`` False when the voice-cloning weights were refused and the no-cloning release
    was fetched instead (``refused``: why, one line)."""

    folder: Path
    cloning: bool
    refused: str = ""


def fetch_pocket(directory: Optional[str] = None, model_id: str = POCKET_ID, endpoint: Optional[str] = None,
                 on_plan: Optional[Callable[[Plan], Any]] = None) -> PocketFetched:
    """A released model (``pocket-tts[-LANGUAGE[-24l]]``) as one folder: config.yaml (written), the weights, the
    tokenizer, voices/ (the one explicit network use for Pocket TTS), each file's hash checked (``hub_fetch``), a
    cut download resumed. The voice-cloning weights are gated: where the hub refuses them (401, 403, 404: no
    HF_TOKEN, or its account has not accepted the terms), the no-cloning release is fetched instead (saved voices
    only). Raises FetchError (one line) for an unknown model, an unreachable hub, a full disk, a hash that differs."""
    variant = variant_for_id(model_id)
    if variant is None:
        raise FetchError(f"{model_id[:64]!r} is not a Pocket TTS model; use {POCKET_ID}[-LANGUAGE[-24l]], LANGUAGE one of "
                         "french, german, portuguese, italian, spanish, dutch")
    from huggingface_hub import constants  # fetch path only

    where = endpoint or constants.ENDPOINT
    folder = Path(directory).expanduser() if directory else pocket_default_dir(model_id=model_id)
    try:
        probe(NO_CLONING_REPO, None, endpoint)  # one short call: an unreachable hub is one line within seconds
    except Exception as exc:  # noqa: BLE001 - network, auth and server errors all come back as one line
        if is_pocket_checkpoint(folder) and is_offline_or_unreachable(exc):
            logger.warning("%s; using the copy at %s", one_line(exc, NO_CLONING_REPO, where), folder)
            return PocketFetched(folder, pocket_clones(folder))
        refused = _refusal(exc)  # a token the hub does not take is refused everywhere, the public release too
        raise FetchError(refused.line(where) if refused is not None and refused.status != 404 else one_line(exc, NO_CLONING_REPO, where)) from exc
    try:
        return _fetch_release(variant, folder, True, endpoint, on_plan)
    except _Refused as refused:
        line = refused.line(where)
        logger.warning("%s; fetching the no-cloning release (saved voices only)", line)
    fetched = _fetch_release(variant, folder, False, endpoint, on_plan)
    return PocketFetched(fetched.folder, False, line)


class _Refused(Exception):
    """The hub refused the voice-cloning weights (401, 403 or 404)."""

    def __init__(self, status: int, gated: bool) -> None:
        super().__init__(status)
        self.status, self.gated = status, gated

    def line(self, where: str) -> str:
        from huggingface_hub import get_token  # fetch path only

        fix = (f"accept the terms of {CLONING_REPO} on the Hugging Face hub (huggingface.co/{CLONING_REPO}), set "
               "HF_TOKEN to a read token of that account, and restart")
        if get_token() is None:
            return f"{CLONING_REPO} is gated and no HF_TOKEN is set: {fix}"
        if self.status == 401:
            return f"{where} does not accept HF_TOKEN (401: not a valid token): {fix}"
        if self.status == 404:
            return f"{CLONING_REPO} is not visible to the account of HF_TOKEN (404): {fix}"
        return f"{CLONING_REPO} refused HF_TOKEN ({self.status}: its account has not accepted the terms): {fix}"


def _refusal(exc: BaseException) -> Optional[_Refused]:
    """A 401, 403 or 404 of the hub (huggingface_hub's HfHubHTTPError and its kinds) as a refusal; None otherwise."""
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError  # fetch path only

    for e in (exc, exc.__cause__):
        if isinstance(e, HfHubHTTPError) and e.response is not None and e.response.status_code in (401, 403, 404):
            return _Refused(e.response.status_code, isinstance(e, GatedRepoError))
    return None


def _fetch_release(variant: Variant, folder: Path, cloning: bool, endpoint: Optional[str],
                   on_plan: Optional[Callable[[Plan], Any]]) -> PocketFetched:
    """The release's files listed (sizes, hashes) and downloaded into the cache, linked into ``folder`` with its
    config; raises _Refused where the hub refuses the cloning weights, FetchError (one line) for anything else."""
    from huggingface_hub import constants  # fetch path only

    where = endpoint or constants.ENDPOINT
    weights, tokenizer = released_files(variant, cloning)
    voices = ENGLISH_VOICES if variant.language == "english" else (variant.default_voice,)
    voice_file = f"languages/{variant.name}/embeddings/{{}}.safetensors"
    wanted = [(weights, "model.safetensors"), (tokenizer, "tokenizer.json")]
    wanted += [((NO_CLONING_REPO, voice_file.format(v), VOICES_REVISION), f"voices/{v}.safetensors") for v in voices]
    remote, listings = [], {}
    for (repo, path, revision), _target in wanted:
        try:
            remote.append(_listed(repo, path, revision, endpoint, listings))
        except Exception as exc:  # noqa: BLE001 - network, auth and server errors all come back as one line
            refused = _refusal(exc) if cloning and repo == CLONING_REPO else None
            if refused is not None:
                raise refused from exc
            raise FetchError(one_line(exc, repo, where)) from exc
    if on_plan is not None:
        on_plan(Plan(tuple(remote), tuple(repo_blobs(repo) for (repo, _, _), _ in wanted)))
    (folder / "voices").mkdir(parents=True, exist_ok=True)
    for ((repo, _path, revision), target), listed in zip(wanted, remote):
        try:
            got = download_one(repo, listed, revision, None, endpoint)
        except Exception as exc:  # noqa: BLE001 - the disk, the network or the hub: one line either way
            refused = _refusal(exc) if cloning and repo == CLONING_REPO else None
            if refused is not None:
                raise refused from exc
            raise FetchError(one_line(exc, repo, where)) from exc
        dest = folder / target
        dest.unlink(missing_ok=True)
        dest.symlink_to(got)
    config = variant_config(variant)
    if not cloning:
        config["weights_path"] = "hf://{}/{}@{}".format(*weights)
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return PocketFetched(folder, cloning)


def _listed(repo: str, path: str, revision: str, endpoint: Optional[str], listings: dict) -> RemoteFile:
    """The hub's size and hashes of one file at a pinned revision (its folder's listing, asked once per folder)."""
    from huggingface_hub import HfApi  # fetch path only
    from huggingface_hub.hf_api import RepoFile

    key = (repo, revision, path.rsplit("/", 1)[0])
    if key not in listings:
        tree = HfApi(endpoint=endpoint).list_repo_tree(repo, path_in_repo=key[2], recursive=True, revision=revision)
        listings[key] = {f.path: f for f in tree if isinstance(f, RepoFile)}
    f = listings[key].get(path)
    if f is None:
        raise FetchError(f"{repo} has no {path} at revision {revision[:12]}")
    return RemoteFile(f.path, f.size, f.lfs.sha256 if f.lfs is not None else None, f.blob_id)
