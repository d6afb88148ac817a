#!/usr/bin/env bash
# Install the official chatterbox-tts modules beside the app's pins (optional: only the Chatterbox backend
# needs them). See requirements-chatterbox.txt for why the package goes in --no-deps.
#
# torchaudio: chatterbox's S3Gen path uses only its pure-torch parts (kaldi fbank, resampling); the wheel's
# compiled ops target another torch build, so they are removed (torchaudio loads them only when present).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python}"
pip=("$python" -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" -r "$here/requirements-chatterbox.txt"
"${pip[@]}" --no-deps chatterbox-tts==0.1.7 s3tokenizer==0.3.0 resemble-perth==1.0.1 torchaudio==2.11.0
site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
rm -f "$site"/torchaudio/lib/*.so
"$python" -W ignore -c "import chatterbox.models.s3gen, chatterbox.models.t3, chatterbox.tts; print('chatterbox-tts modules import')"
