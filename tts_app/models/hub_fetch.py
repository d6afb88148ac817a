"""Download a checkpoint of ``HUB_CHECKPOINTS`` from the Hugging Face hub: the one place this app uses the network,
behind ``python -m tts_app fetch ID`` and $TTS_APP_MODELS.

huggingface_hub's own code does the transfer (it honours HF_ENDPOINT, HF_HOME, HF_TOKEN and HF_HUB_OFFLINE,
resumes a cut file from its ``.incomplete`` part and checks each file's size against the hub's). This module
asks only for the files the loader reads, and checks each newly downloaded file's hash against the hub's listing
(sha256 for LFS files, the git blob id for the others). Every failure is a ``FetchError`` of one line.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from tts_app.models.available import FETCHABLE, HUB_CHECKPOINTS, hf_cache_snapshot

logger = logging.getLogger(__name__)

HASH_CHUNK_BYTES = 1 << 20


class FetchError(ValueError):
    """A download that did not give a complete, verified checkpoint (one line: what and why)."""


@dataclass(frozen=True)
class RemoteFile:
    """One file of the repository's listing: where the hub says it is, its size and its hash."""

    path: str
    size: int
    sha256: Optional[str]  # LFS files: the content's sha256 (also their ETag, hence their cache blob's name)
    blob_id: str  # the git blob id (sha1 of "blob SIZE\\0" + content; for an LFS file, of its pointer)

    @property
    def etag(self) -> str:
        return self.sha256 or self.blob_id


@dataclass(frozen=True)
class Plan:
    """What a fetch will download, known once the hub has listed the repository; ``blobs``, per file, the cache
    folder it lands in (None when downloading into a folder of the user's)."""

    files: tuple[RemoteFile, ...]
    blobs: tuple[Optional[Path], ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def bytes_on_disk(self) -> int:
        """Bytes of the planned files already in the cache, finished or partial (read from the disk, for the page)."""
        done = 0
        for f, blobs in zip(self.files, self.blobs):
            if blobs is None:
                continue
            # A finished blob is named by its ETag; one being written, ETAG.incomplete or (huggingface_hub 2.x,
            # one per process) ETAG.XXXXXXXX.incomplete.
            for path in (blobs / f.etag, *blobs.glob(f"{f.etag}.*incomplete")):
                try:
                    done += min(f.size, path.stat().st_size)
                    break
                except OSError:  # finished or removed between the listing and the stat
                    continue
        return done


# How long the first call to the hub may take before "cannot be reached" (huggingface_hub's own client waits
# forever, and retries a HEAD five times over 23 s): the one-line answer comes within 5 s.
PROBE_TIMEOUT_S = 4.0


def scrub_token(text: str) -> str:
    """``text`` with the Hugging Face token (HF_TOKEN or the saved one) replaced: a token never reaches a page or a log."""
    from huggingface_hub import get_token  # fetch path only

    token = get_token()
    return text.replace(token, "<HF_TOKEN>") if token and len(token) >= 4 else text


def probe(repo: str, revision: Optional[str], endpoint: Optional[str]) -> None:
    """One call to the hub with a short timeout and no retries (the repository's info; public even when the files
    are gated): raises huggingface_hub's error when the hub cannot be reached, or does not know the repository."""
    from huggingface_hub import HfApi  # fetch path only

    HfApi(endpoint=endpoint).model_info(repo, revision=revision, timeout=PROBE_TIMEOUT_S)


def repo_blobs(repo: str) -> Path:
    """The Hugging Face cache's folder of ``repo``'s downloaded files (for the page's progress)."""
    return _hub_cache() / ("models--" + repo.replace("/", "--")) / "blobs"


def _hub_cache() -> Path:
    from huggingface_hub import constants  # read where huggingface_hub reads it (HF_HUB_CACHE, HF_HOME, XDG)

    return Path(constants.HF_HUB_CACHE)


def is_offline_or_unreachable(exc: BaseException) -> bool:
    """True for "no network" (offline mode, a refused or timed-out connection), where a cached copy may serve."""
    from huggingface_hub.errors import OfflineModeIsEnabled  # huggingface_hub loads on the fetch path only

    names = {type(e).__name__ for e in (exc, exc.__cause__, exc.__context__) if e is not None}
    return isinstance(exc, OfflineModeIsEnabled) or bool(names & {"ConnectError", "ConnectTimeout", "ReadTimeout",
                                                                   "TimeoutException", "LocalEntryNotFoundError"})


def one_line(exc: BaseException, repo: str, endpoint: str) -> str:
    """What went wrong, in one line a page or a log can show (no traceback, no request ids, never the token)."""
    return scrub_token(_one_line(exc, repo, endpoint))


def _one_line(exc: BaseException, repo: str, endpoint: str) -> str:
    from huggingface_hub.errors import GatedRepoError, OfflineModeIsEnabled, RepositoryNotFoundError  # fetch path only

    if isinstance(exc, FetchError):
        return str(exc)
    if isinstance(exc, GatedRepoError):
        return f"{repo} on {endpoint} needs an accepted licence and a token (HF_TOKEN)"
    if isinstance(exc, RepositoryNotFoundError):
        return f"no repository {repo} on {endpoint} (or it is private: set HF_TOKEN)"
    if isinstance(exc, OfflineModeIsEnabled):
        return f"cannot download {repo}: HF_HUB_OFFLINE is set and the Hugging Face cache has no complete copy"
    if isinstance(exc, OSError) and exc.strerror:  # a full disk, a read-only cache
        return f"cannot download {repo}: {exc.strerror}"
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"cannot download {repo} from {endpoint}: {type(exc).__name__}: {first[:200]}".rstrip(": ")


def _listing(repo: str, endpoint: Optional[str]) -> tuple[str, list[RemoteFile]]:
    """The repository's current commit and every file in it, with sizes and hashes, as the hub lists them."""
    from huggingface_hub import HfApi  # fetch path only
    from huggingface_hub.hf_api import RepoFile

    api = HfApi(endpoint=endpoint)
    commit = api.repo_info(repo).sha
    files = [
        RemoteFile(f.path, f.size, f.lfs.sha256 if f.lfs is not None else None, f.blob_id)
        for f in api.list_repo_tree(repo, recursive=True, revision=commit)
        if isinstance(f, RepoFile)
    ]
    return str(commit), files


def file_hash_ok(path: Path, remote: RemoteFile) -> bool:
    """``path`` holds what the hub listed: its sha256 (LFS) or its git blob id."""
    digest = hashlib.sha256() if remote.sha256 else hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest() == (remote.sha256 or remote.blob_id)


def download_one(repo: str, remote: RemoteFile, commit: str, directory: Optional[str], endpoint: Optional[str]) -> Path:
    """One file through hf_hub_download (resumes a partial one); its hash checked when it was not there before."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache  # fetch path only

    if directory is None:
        had = isinstance(try_to_load_from_cache(repo, remote.path, revision=commit), str)
    else:
        had = (Path(directory) / remote.path).is_file()
    path = Path(hf_hub_download(repo, remote.path, revision=commit, local_dir=directory, endpoint=endpoint))
    if not had and not file_hash_ok(path, remote):
        target = path.resolve()
        path.unlink(missing_ok=True)
        target.unlink(missing_ok=True)  # the cache's blob behind the snapshot's link: the next try downloads it again
        raise FetchError(f"{repo}/{remote.path} does not match the hub's hash after the download; it was removed")
    return path


def fetch(
    model_id: str, directory: Optional[str] = None, endpoint: Optional[str] = None,
    on_plan: Optional[Callable[[Plan], Any]] = None,
) -> Path:
    """Download ``model_id``'s checkpoint (into ``directory``, else the Hugging Face cache); returns its folder.

    ``endpoint`` overrides HF_ENDPOINT; ``on_plan`` gets the list of files before the first byte moves (the
    page's progress reads the disk through it). With no network, a complete cached copy is returned as it is.
    Raises ``FetchError`` (one line) for an unknown model, an unreachable hub, a missing repository, a full disk,
    a hash that does not match, or a folder that is not a complete checkpoint afterwards.
    """
    spec = HUB_CHECKPOINTS.get(model_id)
    if spec is None:
        raise FetchError(f"unknown model {model_id!r}; choose one of: {', '.join(FETCHABLE)}")
    from huggingface_hub import constants  # fetch path only
    from huggingface_hub.utils import filter_repo_objects

    where = endpoint or constants.ENDPOINT
    try:
        probe(spec.repo, None, endpoint)
        commit, listing = _listing(spec.repo, endpoint)
    except Exception as exc:  # noqa: BLE001 - network, auth and server errors all come back as one line
        cached = hf_cache_snapshot(spec.repo, os.environ, spec.complete) if directory is None else None
        if cached is not None and is_offline_or_unreachable(exc):
            logger.warning("%s; using the cached copy at %s", one_line(exc, spec.repo, where), cached)
            return cached
        raise FetchError(one_line(exc, spec.repo, where)) from exc
    wanted = tuple(filter_repo_objects(listing, allow_patterns=list(spec.files), key=lambda f: f.path))
    if not wanted:
        raise FetchError(f"{spec.repo} on {where} has none of the files a {model_id} checkpoint needs")
    if on_plan is not None:
        on_plan(Plan(wanted, (repo_blobs(spec.repo) if directory is None else None,) * len(wanted)))
    try:
        paths = [download_one(spec.repo, f, commit, directory, endpoint) for f in wanted]
    except Exception as exc:  # noqa: BLE001 - the disk, the network or the hub: one line either way
        raise FetchError(one_line(exc, spec.repo, where)) from exc
    # The folder: the first file's path less its own path inside the repository.
    folder = paths[0].parents[len(Path(wanted[0].path).parts) - 1]
    if not spec.complete(folder):
        raise FetchError(f"{folder} is not a complete {model_id} checkpoint after the download")
    return folder
