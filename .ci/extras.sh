#!/usr/bin/env bash
# Each install alone in a venv of its own (no system site packages), then every module it serves imported
# (.ci/import_modules.py): a package the code imports that no requirements file declares fails here, in one line.
#
#   base:        pip install tts_app                (requirements.txt)
#   qwen3:       pip install 'tts_app[qwen3]'       (+ requirements-gpu.txt: Qwen3-TTS and Pocket TTS)
#   chatterbox:  pip install 'tts_app[chatterbox]'  (+ requirements-chatterbox.txt), then scripts/install_chatterbox.sh
#
# pip resolves pyproject's ranges, held to the requirements files' exact pins (-c), so the venvs hold what the
# README installs. The venvs are kept (~/.cache/tts_app/extras_envs, about 5 GB) while the dependency files are
# unchanged: a rerun then only reinstalls the package itself (--no-deps) and imports again (under 2 minutes);
# a changed pin or range builds them anew (12.5 minutes on a loaded 2-core machine, most of it downloads).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python}"
root="${TTS_APP_EXTRAS_ENVS:-$HOME/.cache/tts_app/extras_envs}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stamp="$(cat "$repo"/pyproject.toml "$repo"/requirements.txt "$repo"/requirements-gpu.txt "$repo"/requirements-chatterbox.txt \
    "$repo"/scripts/install_chatterbox.sh "$repo"/.ci/extras.sh | sha256sum | cut -c1-16)"

# The wheel, built from a copy (setuptools writes build/ and *.egg-info beside what it builds).
mkdir -p "$work/src"
cp -r "$repo/tts_app" "$repo/assets" "$work/src/"
cp "$repo/pyproject.toml" "$repo/setup.py" "$repo/README.md" "$work/src/"
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
"$python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$work" "$work/src" </dev/null
wheel="$(ls "$work"/tts_app-*.whl)"
grep -hv '^-r' "$repo"/requirements.txt "$repo"/requirements-gpu.txt "$repo"/requirements-chatterbox.txt > "$work/pins.txt"

# Each venv starts as a copy of the one below it (the extras nest: chatterbox includes qwen3, which includes
# the base), so the base's packages are downloaded once; what each then holds is what a fresh
# `pip install 'tts_app[extra]'` gives.
below=""
for extra in base qwen3 chatterbox; do
    venv="$root/$extra"
    spec="$wheel"
    [ "$extra" = base ] || spec="$wheel[$extra]"
    if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.stamp" 2>/dev/null)" = "$stamp" ]; then
        "$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall "$wheel" </dev/null
    else
        echo "== extras: building the $extra venv in $venv"
        rm -rf "$venv"
        mkdir -p "$root"
        if [ -n "$below" ]; then
            cp -a "$below" "$venv"
            rm -f "$venv/.stamp"
        else
            "$python" -m venv "$venv"
        fi
        "$venv/bin/python" -m pip install --quiet -c "$work/pins.txt" "$spec" </dev/null
        if [ "$extra" = chatterbox ]; then
            PYTHON="$venv/bin/python" bash "$repo/scripts/install_chatterbox.sh" </dev/null
        fi
        echo "$stamp" > "$venv/.stamp"
    fi
    # From an empty folder, so the checkout is not on the path: the venv's install is what imports.
    (cd "$work" && PYTHONPATH= "$venv/bin/python" "$repo/.ci/import_modules.py" "$extra")
    below="$venv"
done
