"""tts_app: `python app.py` serves the Gradio page and the OpenAI-compatible API on one port.

Host and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (or PORT), default 0.0.0.0:7860,
as Hugging Face Spaces expects. The model loads once per process, on first use.
`--precision fast` (or TTS_APP_PRECISION=fast) runs the voice's decoder in bfloat16 (int8 on CPUs without it).
`--model-path DIR` offers a Qwen3-TTS (or TTS_APP_QWEN3_PATH=DIR) or Chatterbox (or TTS_APP_CHATTERBOX_PATH=DIR)
checkpoint in the model selector.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tts_app import settings

# Gradio calls the hub at start (a version check, start-up analytics) unless told not to: a server that promises no
# network on a visitor's behalf does not phone home by default. An operator's own GRADIO_ANALYTICS_ENABLED wins.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# Before the imports below: some of their modules read a setting when imported, and a bad value
# should stop the start with one line naming the variable, not a traceback.
settings.exit_on_bad_values()
from tts_app.catalog.fetch_jobs import exit_on_unknown_models  # noqa: E402

exit_on_unknown_models()  # a name in $TTS_APP_MODELS nobody can fetch: one line, no start

from tts_app.models.available import CHATTERBOX_ENV  # noqa: E402
from tts_app.models.available import ENV_VAR as QWEN3_PATH_ENV  # noqa: E402
from tts_app.models.available import is_chatterbox_checkpoint, is_checkpoint  # noqa: E402
from tts_app.web.server import launch  # noqa: E402
from tts_app.web.ui.layout import build_demo  # noqa: E402

demo = build_demo()

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Serve the TTS app.")
    parser.add_argument("--precision", default=settings.value("TTS_APP_PRECISION"), help="exact (float32, default) or fast")
    parser.add_argument(
        "--model-path", default=None, metavar="DIR",
        help="a Qwen3-TTS or Chatterbox checkpoint folder to offer in the model selector "
        "(same as TTS_APP_QWEN3_PATH / TTS_APP_CHATTERBOX_PATH)",
    )
    args = parser.parse_args()
    if args.precision not in ("exact", "fast"):
        parser.error(f"--precision must be exact or fast, got {args.precision!r}")
    os.environ["TTS_APP_PRECISION"] = args.precision  # read by tts_app/catalog/shared_engine.py
    if args.model_path:
        folder = Path(args.model_path).expanduser()
        if is_checkpoint(folder):
            os.environ[QWEN3_PATH_ENV] = args.model_path  # read by tts_app/models/available.py on every page load
        elif is_chatterbox_checkpoint(folder):
            os.environ[CHATTERBOX_ENV] = args.model_path
        else:
            parser.error(f"--model-path {args.model_path}: neither a Qwen3-TTS checkpoint (config.json, *.safetensors, "
                         "speech_tokenizer/) nor a Chatterbox one (ve.safetensors, t3_cfg.safetensors, s3gen.safetensors, "
                         "tokenizer.json, conds.pt)")
    launch(demo)
