"""Operator commands for the server-wide voice library and lexicon (visitors cannot change either).

``python -m tts_app voice list | save NAME CLIP [--text T] [--force] | delete NAME``
``python -m tts_app lexicon list | set WORD PRONUNCIATION | delete WORD | import FILE``

Both live in ``$TTS_APP_VOICES_DIR`` (default ``voices`` in the app's cache folder, tts_app.settings.cache_root); a running server
sees a change on its next request.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


class LibraryError(Exception):
    """A refused operator command: printed as one line, exit status 2."""


def add_library_commands(sub: Any) -> None:
    """The ``voice`` and ``lexicon`` sub-commands, added to the main parser's sub-parsers."""
    v = sub.add_parser("voice", help="the server's saved voices: list, save, delete")
    vs = v.add_subparsers(dest="action", required=True)
    vs.add_parser("list", help="print every voice name (built-in and saved) as JSON")
    save = vs.add_parser("save", help="analyse a clip and save it for every visitor and API caller")
    save.add_argument("name", help="1-64 letters, digits, '_' or '-'")
    save.add_argument("clip", help="reference clip (wav, flac, mp3, ogg)")
    save.add_argument("--text", help="what the clip says (else it is recognised)")
    save.add_argument("--force", action="store_true", help="replace a saved voice of that name, or take an OpenAI voice's name")
    vs.add_parser("delete", help="delete a saved voice").add_argument("name")
    lx = sub.add_parser("lexicon", help="the server's pronunciation lexicon: list, set, delete, import")
    ls = lx.add_subparsers(dest="action", required=True)
    ls.add_parser("list", help="print the lexicon as JSON")
    set_ = ls.add_parser("set", help="add or change one word")
    set_.add_argument("word")
    set_.add_argument("pronunciation", help="a respelling, or IPA between slashes like /nwɪn/")
    ls.add_parser("delete", help="remove one word").add_argument("word")
    ls.add_parser("import", help="replace the lexicon with a JSON file's").add_argument("file")


def run_voice(args: argparse.Namespace) -> Any:
    """One ``voice`` command; returns what to print as JSON."""
    from tts_app.catalog.voice_aliases import OPENAI_VOICES  # start-up: the API side loads on first use
    from tts_app.voice import default_library, make_profile  # start-up: the voice package loads its DSP stack on first use

    library = default_library()
    if args.action == "list":
        return {"builtin": library.builtin_names(), "saved": library.saved_names()}
    if args.action == "delete":
        library.delete(args.name)
        return {"deleted": args.name}
    if args.name in library.builtin_names():  # before the analysis: a refusal costs nothing
        raise LibraryError(f"{args.name!r} is a built-in voice; choose another name")
    if args.name.lower() in OPENAI_VOICES and not args.force:
        raise LibraryError(f"{args.name!r} is an OpenAI voice name: every API caller asking for it would get this voice (use --force to mean it)")
    if not Path(args.clip).is_file():
        raise LibraryError(f"no such clip: {args.clip}")
    profile = make_profile(Path(args.clip), name=args.name, text=args.text)
    saved = library.save(profile, args.name, overwrite=bool(args.force))
    return {"saved": saved.name, "path": str(library.path_for(saved.name))}


def run_lexicon(args: argparse.Namespace) -> Any:
    """One ``lexicon`` command; returns what to print as JSON.

    What is added is checked as the page checks it (the words' form and the voice's phonemes), so the
    file never gets an entry that the server would skip. The file's own entries are kept as written
    (an entry edited in by hand that the server skips stays until the operator deletes or fixes it).
    """
    from tts_app.catalog.server_lexicon import lexicon_phonemes, read_server_lexicon  # start-up: the text stack (espeak, lexicons) loads on first use
    from tts_app.text import load_lexicon, parse_lexicon  # start-up: the text stack (espeak, lexicons) loads on first use
    from tts_app.text.lexicon import MAX_ENTRIES, read_lexicon_json, save_lexicon, saved_lexicon_path  # start-up: as above

    current = saved_lexicon_path()
    # A file that cannot be read as a JSON object is reported, never overwritten unread.
    entries = read_lexicon_json(current) if current.exists() else {}
    if not isinstance(entries, dict):
        raise LibraryError(f"{current} is not a JSON object of word -> pronunciation; fix or remove it")
    if args.action == "list":
        lexicon, skipped = read_server_lexicon(current) if current.exists() else (None, [])
        for reason in skipped:
            print(f"warning: skipped {reason}", file=sys.stderr)
        return lexicon.to_json_dict() if lexicon else {}
    if args.action == "import":
        new: Any = load_lexicon(args.file, lexicon_phonemes())
    else:
        key = args.word.lower()
        kept = {w: p for w, p in entries.items() if str(w).lower() != key}
        if args.action == "delete" and len(kept) == len(entries):
            raise LibraryError(f"{args.word!r} is not in the lexicon")
        if args.action == "set":
            parse_lexicon({args.word: args.pronunciation}, lexicon_phonemes())
            kept[args.word] = args.pronunciation.strip()
            if len(kept) > MAX_ENTRIES:
                raise LibraryError(f"the lexicon holds at most {MAX_ENTRIES} entries")
        new = kept
    path = save_lexicon(new)
    return {"entries": len(new), "path": str(path)}
