#!/usr/bin/env bash
# Make (or reuse) the reference venv holding the OFFICIAL Chatterbox code (chatterbox-tts 0.1.7 with the
# pins it declares: torch 2.6.0, transformers 5.2.0, ...) and print its python on the last line of stdout.
# Reused when its stamp matches the hash of the pins and of this script. Location:
# $TTS_APP_REFERENCE_ENVS (default ~/.cache/tts_app/reference_envs)/chatterbox.
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
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/chatterbox_requirements.txt" >&2
"$venv/bin/python" -W ignore -c "
import torch, transformers, chatterbox.tts
assert torch.__version__.startswith('2.6.0'), torch.__version__
assert transformers.__version__ == '5.2.0', transformers.__version__
" >&2
echo "$stamp" > "$venv/.stamp"
echo "$venv/bin/python"
