"""The official chatterbox-tts modules, imported on demand with a one-line error when they are not installed."""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

INSTALL_HINT = (
    "the Chatterbox backend needs the official chatterbox-tts modules: run "
    "`bash scripts/install_chatterbox.sh` (installs requirements-chatterbox.txt beside the app's pins)"
)


class ChatterboxMissing(RuntimeError):
    """The official package (or one of the dependencies it really needs) is not importable."""


def official(name: str) -> ModuleType:
    """``official("models.s3gen")`` -> the module ``chatterbox.models.s3gen``; raises ChatterboxMissing."""
    try:
        with warnings.catch_warnings():
            # resemble-perth (imported by chatterbox/__init__) warns that pkg_resources is deprecated.
            warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
            return importlib.import_module(f"chatterbox.{name}")
    except ImportError as exc:
        raise ChatterboxMissing(f"{INSTALL_HINT} ({exc.__class__.__name__}: {exc})") from exc
