#!/usr/bin/env bash
# Gather the wheels benchmarks/gpu_check.py needs on a GPU machine that has no network (issue 51) into one folder,
# to carry with the check (the device tool carries at most 64 MiB a run, the working tree included; these come to
# about 9 MiB once trimmed, below). Usage: bash scripts/gather_gpu_wheels.sh [DIR]   (default .whl, ignored by .gitignore)
# There: python3 benchmarks/gpu_check.py --wheels .whl --out "$OUT"   (pip install --no-index --no-deps from DIR).
#
# What the GPU machine already has (/work/.library/device/KINDS.md, its 'cuda' image: Python 3.12, torch 2.11.0+cu130,
# torchaudio 2.11.0, transformers, safetensors, tokenizers, numpy, scipy, scikit-learn, numba, onnx, onnxruntime,
# einops, pyyaml, requests, pillow, regex, huggingface-hub, msgpack, joblib, lazy-loader, packaging, tqdm) is not
# carried: its own torch and torchaudio are the CUDA builds. What is carried, all --no-deps with the pins below:
# - the Qwen3 engine path's imports (num2words, piper-tts, defusedxml, pathvalidate; docopt for num2words);
# - Chatterbox's English path: chatterbox-tts, s3tokenizer, resemble-perth (the package itself, as
#   scripts/install_chatterbox.sh installs it), requirements-chatterbox.txt's pins but einops (there), and librosa
#   with the pieces the machine lacks (soundfile + cffi, soxr, audioread, pooch + platformdirs, decorator).
# antlr4-python3-runtime 4.9.3 and docopt 0.6.2 exist only as source: built here into pure-Python wheels.
# Two wheels are trimmed of data the check never reads (71 MiB untrimmed would not travel): resemble-perth's
# watermark network weights (37 MB; only the official ChatterboxTTS constructor builds a watermarker, our loader
# never does) and piper-tts's Hebrew and Arabic diacritisation models (26 MB; English never loads them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$here/.whl}"
python="${PYTHON:-python}"
mkdir -p "$dest"
pin() { grep -E "^$1==" "$here/$2" | head -1 | cut -d' ' -f1; }  # a pin as a requirements file states it
source_only=(antlr4-python3-runtime==4.9.3 docopt==0.6.2)
wheels=(
  "$(pin piper-tts requirements.txt)" "$(pin num2words requirements.txt)" "$(pin defusedxml requirements.txt)"
  "$(pin soundfile requirements.txt)" pathvalidate==3.3.1
  chatterbox-tts==0.1.7 s3tokenizer==0.3.0 resemble-perth==1.0.1
  "$(pin diffusers requirements-chatterbox.txt)" "$(pin conformer requirements-chatterbox.txt)" "$(pin omegaconf requirements-chatterbox.txt)"
  librosa==0.11.0 soxr==1.1.0 audioread==3.1.0 pooch==1.9.0 platformdirs==4.3.8 decorator==5.2.1 cffi==2.0.0
)
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d "$dest" "${wheels[@]}"
"$python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w "$dest" "${source_only[@]}"
"$python" - "$dest" <<'PY'
import sys, zipfile
from pathlib import Path

DROP = {"resemble_perth": ("perth/perth_net/pretrained/",), "piper_tts": ("piper/hebrew/nakdimon.onnx", "piper/tashkeel/model.onnx")}
for whl in Path(sys.argv[1]).glob("*.whl"):
    prefixes = DROP.get(whl.name.split("-")[0])
    if not prefixes:
        continue
    tmp = whl.with_suffix(".tmp")
    with zipfile.ZipFile(whl) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        for item in src.infolist():
            if item.filename.startswith(prefixes):
                continue
            data = src.read(item)
            if item.filename.endswith(".dist-info/RECORD"):  # the dropped files leave the record too
                data = b"".join(l for l in data.splitlines(True) if not l.decode().startswith(prefixes))
            out.writestr(item, data)
    tmp.replace(whl)
    print(f"trimmed {whl.name}")
PY
du -sh "$dest"
ls "$dest"
