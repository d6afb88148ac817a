#!/usr/bin/env bash
# Make (or reuse) the reference venv holding the OFFICIAL Chatterbox code (chatterbox-tts 0.1.7) and
# print its python on the last line of stdout. Reused when its stamp matches the hash of the pins and
# of this script. Location: $TTS_APP_REFERENCE_ENVS (default ~/.cache/tts_app/reference_envs)/chatterbox.
#
# Torch: chatterbox-tts pins torch==2.6.0 and torchaudio==2.6.0, which on x86_64 PyPI are CUDA builds
# (~3 GB to download, several minutes). We take the local CPU torch 2.13.0 instead and install the
# package itself --no-deps. torchaudio is used by the S3Gen path only for pure-torch code (kaldi fbank in
# CAMPPlus, resampling): as for qwen_tts.sh, torchaudio 2.11 goes in without deps and its compiled ops
# are dropped (torchaudio loads them only when present).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${TTS_APP_REFERENCE_ENVS:-$HOME/.cache/tts_app/reference_envs}"
venv="$root/chatterbox"
python="${PYTHON:-python3}"
stamp="$(cat "$here/chatterbox_requirements.txt" "$here/chatterbox.sh" | sha256sum | cut -c1-16)"

if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$venv/bin/python"
    exit 0
fi

echo "building the chatterbox-tts reference venv in $venv" >&2
rm -rf "$venv"
mkdir -p "$root"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" -r "$here/chatterbox_requirements.txt" >&2
"${pip[@]}" --no-deps torchaudio==2.11.0 chatterbox-tts==0.1.7 s3tokenizer==0.3.0 resemble-perth==1.0.1 >&2
rm -f "$venv"/lib/python3*/site-packages/torchaudio/lib/*.so
"$venv/bin/python" -c "import chatterbox.tts, transformers; assert transformers.__version__ == '5.2.0'" >&2
echo "$stamp" > "$venv/.stamp"
echo "$venv/bin/python"
