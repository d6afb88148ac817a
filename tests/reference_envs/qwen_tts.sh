#!/usr/bin/env bash
# Make (or reuse) the reference venv holding the OFFICIAL Qwen3-TTS code (qwen-tts 0.1.1) and print
# its python on the last line of stdout. Reused when its stamp matches the hash of the pins and of
# this script. Location: $TTS_APP_REFERENCE_ENVS (default ~/.cache/tts_app/reference_envs)/qwen_tts.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${TTS_APP_REFERENCE_ENVS:-$HOME/.cache/tts_app/reference_envs}"
venv="$root/qwen_tts"
python="${PYTHON:-python3}"
stamp="$(cat "$here/qwen_tts_requirements.txt" "$here/qwen_tts.sh" | sha256sum | cut -c1-16)"

if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$venv/bin/python"
    exit 0
fi

echo "building the qwen-tts reference venv in $venv" >&2
rm -rf "$venv"
mkdir -p "$root"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" -r "$here/qwen_tts_requirements.txt" >&2
# qwen-tts imports torchaudio (only for its 25 Hz tokenizer's kaldi fbank, pure torch code), but no
# torchaudio release is built for torch 2.13: take 2.11 without deps and drop its compiled ops,
# which torchaudio then skips (it loads them only when present). The 12 Hz path never touches it.
"${pip[@]}" --no-deps torchaudio==2.11.0 qwen-tts==0.1.1 >&2
rm -f "$venv"/lib/python3*/site-packages/torchaudio/lib/*.so
"$venv/bin/python" -c "import qwen_tts, transformers; assert transformers.__version__ == '4.57.3'" >&2
echo "$stamp" > "$venv/.stamp"
echo "$venv/bin/python"
