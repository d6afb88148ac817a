"""Fingerprints of the embedded voice's audio through the real server, to check a refactor changed no sample.

Starts ``python app.py`` from a checkout (``--repo``, default this one) on a free port, asks
``POST /v1/audio/speech`` for raw PCM of every eval sentence in a few request shapes (the model's
own voice at two speeds, a built-in voice clip, an OpenAI voice name) one at a time, and writes
each reply's SHA-256 and length to ``--out``. ``--compare A B`` prints which fingerprints differ
and exits 1 if any does. Fingerprints depend on the CPU's kernels: compare runs of one machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from tests.support.app_server import serve_app  # noqa: E402  (after the path line above)

SENTENCES = REPO.parent / "shared" / "eval" / "sentences.txt"
# (label, extra request fields): the plain voice, a speed change, a built-in clip, an OpenAI name.
SHAPES = (
    ("default", {}),
    ("speed_1.25", {"speed": 1.25}),
    ("alloy", {"voice": "alloy"}),
)


def _builtin_voice(base: str) -> str | None:
    """The last voice name the server lists beside ``default`` and ``alloy``, if any."""
    reply = httpx.get(f"{base}/v1/audio/voices", timeout=30)
    if reply.status_code != 200:
        return None
    names = [n for n in reply.json().get("voices", []) if isinstance(n, str) and n not in {"default", "alloy"}]
    return names[-1] if names else None


def fingerprint(repo: Path, sentences: list[str], log_path: Path) -> dict[str, dict[str, object]]:
    with serve_app(log_path, repo=repo) as (base, _process):
        shapes = list(SHAPES)
        builtin = _builtin_voice(base)
        if builtin:
            shapes.append((f"voice:{builtin}", {"voice": builtin}))
        prints: dict[str, dict[str, object]] = {}
        for label, extra in shapes:
            for index, text in enumerate(sentences):
                body = {"model": "tts-1", "input": text, "voice": "default", "response_format": "pcm", **extra}
                reply = httpx.post(f"{base}/v1/audio/speech", json=body, timeout=300)
                key = f"{label}/{index:02d}"
                if reply.status_code != 200:
                    prints[key] = {"status": reply.status_code}
                    continue
                prints[key] = {"sha256": hashlib.sha256(reply.content).hexdigest(), "bytes": len(reply.content)}
        return prints


def compare(path_a: Path, path_b: Path) -> int:
    a = json.loads(path_a.read_text())["prints"]
    b = json.loads(path_b.read_text())["prints"]
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    for key in differ:
        print(f"differs: {key}: {a.get(key)} vs {b.get(key)}")
    print(f"{len(a.keys() & b.keys()) - len([k for k in differ if k in a and k in b])} of {len(a.keys() | b.keys())} identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    sentences = [line.strip() for line in SENTENCES.read_text().splitlines() if line.strip()]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.repo, capture_output=True, text=True).stdout.strip()
    result = {"repo": str(args.repo), "commit": commit, "cpu": platform.processor() or platform.machine(),
              "prints": fingerprint(args.repo, sentences, Path(tempfile.gettempdir()) / "audio_identity_server.log")}
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text)
    print(f"{len(result['prints'])} fingerprints of {commit[:10]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
