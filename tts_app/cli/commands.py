"""Command line: ``python -m tts_app synth -i lines.txt -o OUTDIR [--seed N] [--stream]``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import soundfile as sf

from tts_app.cli.library import LibraryError, add_library_commands, run_lexicon, run_voice
from tts_app.models.available import HUB_CHECKPOINTS, POCKET_ID, POCKET_MODEL_IDS
from tts_app.text import TextError, load_lexicon

_LOGGER = logging.getLogger("tts_app")


class CliError(Exception):
    """Bad input: printed as one line, exit status 2."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tts_app", description="Offline text to speech.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("synth", help="speak each non-empty line of a text file into OUTDIR/001.wav, 002.wav, ...")
    s.add_argument("-i", "--input", required=True, help="UTF-8 text file, one utterance per line ('-' for stdin)")
    s.add_argument("-o", "--outdir", required=True, help="directory for the wav files")
    s.add_argument("--seed", type=int, default=0, help="noise seed; the same seed gives the same audio")
    s.add_argument("--speed", type=float, default=1.0, help="speaking rate, 0.25 to 4")
    s.add_argument("--stream", action="store_true", help="write audio window by window as it decodes")
    s.add_argument("--voice", help="reference clip or saved/built-in voice name to match")
    s.add_argument("--voice-text", help="what the --voice clip says (else it is recognised); improves the match")
    s.add_argument("--voice-strength", type=float, default=1.0, help="0 keeps the model's voice, 1 matches fully")
    s.add_argument("--precision", choices=["exact", "fast"], default="exact", help="exact: float32 (default); fast: bfloat16 decoder and flow where the CPU has bf16, else float32")
    s.add_argument("--no-normalize", action="store_true", help="read numbers, dates and abbreviations as written")
    s.add_argument("--lexicon", help="JSON pronunciation lexicon: {\"word\": \"respelling\" or \"/ipa/\"}")
    s.add_argument("-v", "--verbose", action="store_true", help="log engine progress to stderr")
    f = sub.add_parser("fetch", help="download a model's checkpoint from the Hugging Face hub (opt-in)")
    f.add_argument("model", help=", ".join((*HUB_CHECKPOINTS, POCKET_ID, f"{POCKET_ID}-LANGUAGE[-24l] (LANGUAGE: french, german, portuguese, italian, spanish, dutch)")))
    f.add_argument("--dir", help="folder to download into (default: the Hugging Face cache; pocket-tts: TTS_APP_CACHE_DIR/pocket-tts)")
    f.add_argument("-v", "--verbose", action="store_true", help="log progress, and huggingface_hub's retries, to stderr")
    add_library_commands(sub)
    return p


def _read_lines(path: str) -> list[str]:
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{path} is not UTF-8 text") from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise CliError(f"{path} has no non-empty lines")
    return lines


def _write(handle, path: Path, sample_rate: int, stream: bool) -> None:
    if not stream:
        sf.write(path, handle.result(), sample_rate, subtype="PCM_16")
        return
    with sf.SoundFile(path, "w", sample_rate, 1, subtype="PCM_16") as f:
        for chunk in handle:
            f.write(chunk)
    handle.result()  # raises the request's error, if any


def synth(args: argparse.Namespace) -> dict:
    from tts_app.engine import Engine, SpeechParams  # the model runtime loads only for the command that speaks
    from tts_app.engine.input_processing import resolve_params  # the voice stack loads only for the command that speaks

    lines = _read_lines(args.input)
    try:
        lexicon = load_lexicon(args.lexicon) if args.lexicon else None
    except TextError as e:
        raise CliError(str(e)) from None
    outdir = Path(args.outdir)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CliError(f"cannot create {outdir}: {e.strerror or e}") from None
    # None: the model's own reading; False: as written. Validated and the voice analysed once, before any line.
    asked = SpeechParams(
        args.seed, args.speed, args.voice, args.voice_text, args.voice_strength, False if args.no_normalize else None, lexicon
    )  # fmt: skip
    params = resolve_params(asked)
    t0 = time.perf_counter()
    engine = Engine(precision=args.precision)
    load_s = time.perf_counter() - t0
    try:
        t1 = time.perf_counter()
        handles = []
        for n, line in enumerate(lines, 1):
            try:
                handles.append(engine.submit(line, params))
            except TextError as e:  # other ValueErrors (speed, voice) are not about a line
                raise CliError(f"line {n}: {e}") from None
        for i, h in enumerate(handles, 1):
            _write(h, outdir / f"{i:03d}.wav", engine.sample_rate, args.stream)
        wall = time.perf_counter() - t1
    finally:
        engine.close()
    metrics = [h.metrics for h in handles]
    audio_s = sum(m.audio_s for m in metrics)
    ttfa = [m.time_to_first_audio_s for m in metrics]
    return {
        "lines": len(lines),
        "outdir": str(outdir),
        "load_s": round(load_s, 4),
        "wall_s": round(wall, 4),
        "audio_s": round(audio_s, 4),
        "rtf": round(wall / audio_s, 4) if audio_s else None,
        "first_audio_s": round(min(ttfa), 4),
        "median_time_to_first_audio_s": round(float(np.median(ttfa)), 4),
        "max_batch": max(max(m.batch_sizes, default=0) for m in metrics),
        "stream": bool(args.stream),
        "precision": args.precision,
    }


def _fetch(model: str, directory: str | None) -> dict:
    """Download ``model`` (the one explicit network use): its folder, and for Pocket TTS whether it clones (where the
    hub refused the gated weights, the no-cloning release, and why in one line on stderr)."""
    # Two repositories and a config written: not a hub snapshot (an unknown language is refused there, naming them).
    if model in POCKET_MODEL_IDS or model.startswith(f"{POCKET_ID}-"):
        from tts_app.models.capabilities import NO_CLONING  # start-up: only the fetch command needs it
        from tts_app.models.pocket_tts.fetch import fetch_pocket  # start-up: only the fetch command needs it

        fetched = fetch_pocket(directory, model)
        if not fetched.cloning:
            print(f"warning: {model} fetched with {NO_CLONING}: {fetched.refused}", file=sys.stderr)
        return {"model": model, "path": str(fetched.folder), "cloning": fetched.cloning}
    from tts_app.models.hub_fetch import fetch  # start-up: only the fetch command needs it

    return {"model": model, "path": str(fetch(model, directory))}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "fetch" and not args.verbose:
        # huggingface_hub warns on each retry, and prints it twice (its handler and ours): the failure is one line.
        logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    try:
        if args.command == "fetch":
            print(json.dumps(_fetch(args.model, args.dir)))
        elif args.command in ("voice", "lexicon"):
            print(json.dumps((run_voice if args.command == "voice" else run_lexicon)(args), ensure_ascii=False))
        else:
            print(json.dumps(synth(args)))
    except (CliError, LibraryError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # bad voice clip or settings, raised by the library with a one-line message
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
