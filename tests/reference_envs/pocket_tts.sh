#!/usr/bin/env bash
# Make (or reuse) the reference venv holding the OFFICIAL Pocket TTS code (pocket-tts 4.0.1) and print
# its python on the last line of stdout. Reused when its stamp matches the hash of the pins and of
# this script. Location: $TTS_APP_REFERENCE_ENVS (default ~/.cache/tts_app/reference_envs)/pocket_tts.
# Only the package index is used (torch is the local CPU build the pins name); nothing is downloaded
# at run time: the fixture writes its own config, tokenizer and weights.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${TTS_APP_REFERENCE_ENVS:-$HOME/.cache/tts_app/reference_envs}"
venv="$root/pocket_tts"
python="${PYTHON:-python3}"
stamp="$(cat "$here/pocket_tts_requirements.txt" "$here/pocket_tts.sh" | sha256sum | cut -c1-16)"

if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "$venv/bin/python"
    exit 0
fi

echo "building the pocket-tts reference venv in $venv" >&2
rm -rf "$venv"
mkdir -p "$root"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/pocket_tts_requirements.txt" >&2
"$venv/bin/python" -W ignore -c "
import importlib.metadata as md, torch, pocket_tts
assert md.version('pocket-tts') == '4.0.1', md.version('pocket-tts')
assert torch.__version__.startswith('2.13.0'), torch.__version__
" >&2
echo "$stamp" > "$venv/.stamp"
echo "$venv/bin/python"
