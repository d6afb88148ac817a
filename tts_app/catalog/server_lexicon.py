"""The server's lexicon as every request reads it: ``lexicon.json`` beside the saved voices.

An operator may edit the file by hand, so one bad entry must not take every request down: the file
is read forgivingly (tts_app.text.lexicon.forgiving_lexicon), each entry checked against the
phonemes of the voice that reads lexicons (the embedded Piper voice; the other models read none),
and an entry that fails is skipped with one warning naming it. The result is kept until the file
changes, so the warning comes once per version of the file, not once per request. A file that is
not a JSON object at all is ignored whole, with one warning. The CLI's ``lexicon set`` and the page
refuse such an entry before it is kept (tts_app.text.parse_lexicon with the same phonemes).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path

from tts_app.models.piper.config import default_voice_config
from tts_app.text import Lexicon, TextError
from tts_app.text.lexicon import forgiving_lexicon, read_lexicon_json, saved_lexicon_path

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_cache: dict[Path, tuple[tuple[int, int], Lexicon | None]] = {}  # one path: the settings name one folder


def lexicon_phonemes() -> Mapping[str, object]:
    """The phonemes a lexicon's IPA may use: those of the voice that reads lexicons."""
    return default_voice_config().phoneme_id_map


def read_server_lexicon(path: Path) -> tuple[Lexicon | None, list[str]]:
    """The file's good entries and one line per entry skipped; (None, [why]) for a file that cannot be used."""
    try:
        return forgiving_lexicon(read_lexicon_json(path), lexicon_phonemes())
    except TextError as e:
        return None, [str(e)]


def server_lexicon() -> Lexicon | None:
    """The saved lexicon, re-read only when the file changed; None when there is none or none of it is usable."""
    path = saved_lexicon_path()
    try:
        st = path.stat()
    except OSError:
        return None
    version = (st.st_mtime_ns, st.st_size)
    with _lock:
        hit = _cache.get(path)
        if hit is not None and hit[0] == version:
            return hit[1]
    lexicon, skipped = read_server_lexicon(path)
    for reason in skipped:
        logger.warning("saved lexicon %s: skipped %s", path, reason)
    with _lock:
        _cache.clear()
        _cache[path] = (version, lexicon)
    return lexicon
