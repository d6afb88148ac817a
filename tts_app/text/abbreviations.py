"""Abbreviations, acronyms, web addresses and file names as spoken words.

espeak-ng ends a sentence at every ". " and spells "www.x.com" oddly, so these
rules run before phonemization. Acronyms: espeak already spells "FBI" and says
"NASA" as a word; only its mistakes are listed here.
"""

from __future__ import annotations

import re

from tts_app.text.number_words import digits
from tts_app.text.offsets import sub

# Titles always precede a name, so their dot never ends a sentence.
_TITLES = {
    "Dr": "Doctor", "Mr": "Mister", "Mrs": "Missus", "Ms": "Miz", "Prof": "Professor", "Mt": "Mount",
    "Gen": "General", "Capt": "Captain", "Sgt": "Sergeant", "Lt": "Lieutenant", "Col": "Colonel",
    "Gov": "Governor", "Sen": "Senator", "Rep": "Representative", "Rev": "Reverend", "Hon": "Honorable",
}  # fmt: skip
# "vs." joins two names: its dot never ends a sentence either.
_TITLES["vs"] = "versus"
# These may end a sentence; their dot is kept when a capitalised word or the end follows.
_TRAILING = {
    "etc": "et cetera", "approx": "approximately", "dept": "department", "est": "established",
    "Jr": "Junior", "Sr": "Senior", "Inc": "Incorporated", "Ltd": "Limited", "Co": "Company", "Corp": "Corporation",
    "Ave": "Avenue", "Blvd": "Boulevard", "Rd": "Road", "fig": "figure", "Fig": "figure",
    "Mon": "Monday", "Tue": "Tuesday", "Tues": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday",
    "Thurs": "Thursday", "Fri": "Friday", "Sat": "Saturday", "Sun": "Sunday",
}  # fmt: skip
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH_ABBR = {m[:3]: m for m in MONTHS if m != "May"} | {"Sept": "September"}
_TRAILING |= _MONTH_ABBR

# All-caps words espeak spells but people say as words.
_SAID_AS_WORDS = frozenset(
    {"PIN", "RAM", "ROM", "SIM", "SCUBA", "LASER", "RADAR", "NIMBY", "YOLO", "FOMO", "POTUS", "SCOTUS", "WASP", "GIF"}
)
# Letter names for spelling; a lone "A" reads as the article.
LETTER_NAMES = {"A": "eh"}
_DOMAIN_WORDS = {
    "www": "w w w", "com": "dot com", "org": "dot org", "net": "dot net", "edu": "dot E D U", "gov": "dot gov",
    "io": "dot I O", "ai": "dot A I", "uk": "dot U K", "de": "dot D E", "dev": "dot dev", "co": "dot co",
}  # fmt: skip
_EXTENSIONS = {
    "pdf": "P D F", "txt": "text", "csv": "C S V", "json": "jason", "py": "P Y", "md": "M D", "doc": "doc",
    "docx": "doc X", "xls": "X L S", "xlsx": "X L S X", "ppt": "P P T", "pptx": "P P T X", "png": "P N G",
    "jpg": "jay peg", "jpeg": "jay peg", "gif": "gif", "wav": "wave", "mp3": "M P three", "mp4": "M P four",
    "zip": "zip", "html": "H T M L", "htm": "H T M", "exe": "E X E", "yaml": "yamel", "yml": "yamel",
    "toml": "tom L", "log": "log", "js": "J S", "ts": "T S", "sh": "S H", "onnx": "onyx", "tar": "tar",
    "gz": "G Z", "c": "C", "cpp": "C P P", "h": "H", "ini": "I N I", "xml": "X M L", "svg": "S V G",
}  # fmt: skip
_SEPARATORS = {".": " dot ", "/": " slash ", "-": " dash ", "_": " underscore ", ":": " colon ", "?": " question mark ",
               "=": " equals ", "&": " and ", "@": " at ", "#": " hash ", "~": " tilde ", "+": " plus ", "%": " percent "}  # fmt: skip
_SEP_RE = re.compile(r"([./\-_:?=&@#~+%])")

_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"']+", re.IGNORECASE)
# Bounded repeats and a lookbehind at the start keep these linear on hostile input ("a.a.a.a...").
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}\b")
_DOMAIN = re.compile(
    r"(?<![\w.-])[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){0,8}\.(?:com|org|net|edu|gov|io|ai|dev|co\.uk|uk|de)\b(?:/[^\s<>\"']*)?"
)
_FILE = re.compile(
    r"(?<![\w.-])[\w-]{1,100}(?:\.[\w-]{1,100}){0,8}\.(" + "|".join(sorted(_EXTENSIONS, key=len, reverse=True)) + r")\b(?![.\w]\w)"
)
_URL_TRAILING = ".,;:!?)]}'\""

_ABBR = re.compile(r"(?<![\w.])(" + "|".join(sorted(_TITLES | _TRAILING, key=len, reverse=True)) + r")\.(?=[\s,;:!?)\"']|$)")
_MONTH_NO_DOT = re.compile(r"\b(" + "|".join(_MONTH_ABBR) + r")(?=\s+\d)")
_LATIN = re.compile(r"(?<![\w.])(e\.g|i\.e|a\.k\.a|cf)\.(?=[\s,;:!?)]|$)", re.IGNORECASE)
_LATIN_WORDS = {"e.g": "for example", "i.e": "that is", "a.k.a": "also known as", "cf": "compare"}
_NUMBER_ABBR = re.compile(r"\b(No|no|Nos|nos)\.\s?(?=\d)")
# Dotted words that name what the number after them counts: "p. 42" -> "page 42".
_BEFORE_NUMBER = {"p": "page", "pp": "pages", "Eq": "equation", "eq": "equation", "Eqs": "equations",
                  "Vol": "volume", "vol": "volume", "Ch": "chapter", "ch": "chapter", "Sec": "section"}  # fmt: skip
_BEFORE_NUMBER_RE = re.compile(r"(?<![\w.])(" + "|".join(sorted(_BEFORE_NUMBER, key=len, reverse=True)) + r")\.\s?(?=\(?\d)")
# A start only where a run of "A." begins, and no giving back (possessive): linear on "A.A.A.A...x".
_DOTTED_ACRONYM = re.compile(r"(?<![\w.])((?:[A-Z]\.){2,}+)(?=[\s,;:!?)]|$)")
_INITIAL = re.compile(r"(?<![\w.])([A-Z])\.(?=\s+[A-Z])")
_ALLCAPS = re.compile(r"([A-Z](?<!\w[A-Z])[A-Z]{1,5})\b")  # "\b" before it checked after its first letter: a skip to capitals
_TWO_CAPS = re.compile(r"[A-Z]{2}")
_DOTTED_WORD = re.compile(r"(?<![A-Za-z])([A-Za-z]{1,8})\.")  # one scan tells which dotted rules can apply
_DOT_LETTER = re.compile(r"\w\.[A-Za-z]")
_DIGIT = re.compile(r"\d")  # the gate of the month rule, which needs one: a scan in C, not a generator per character
# Four all-caps words in a row; starts only at a word's start and never gives back, so it is linear.
_SHOUTED = re.compile(r"(?<![\w'])(?:[A-Z']{2,}+[\s,!.?]++){3}[A-Z']{2}")
_SYMBOLS = (("&", re.compile(r"\s&\s"), " and "), ("&", re.compile(r"(?<=\w)&(?=\w)"), " and "),
            ("#", re.compile(r"#(?=\d)"), "number "), ("=", re.compile(r"(?<=\s)[=](?=\s)"), "equals"),
            ("+", re.compile(r"(?<=\s)\+(?=\s)"), "plus"))  # fmt: skip
_LATIN_LAST = frozenset({"g", "G", "e", "E", "a", "A", "cf", "Cf", "CF"})
_NUMBER_WORDS = frozenset({"No", "no", "Nos", "nos"})
_ABBR_WORDS = frozenset(_TITLES) | frozenset(_TRAILING)


_NEXT_CHAR = re.compile(r"\s*(\S)")


def next_char(text: str, end: int) -> str:
    """The first non-space character at or after ``end`` ('' at the end); no copy of the rest of the text."""
    m = _NEXT_CHAR.match(text, end)
    return m.group(1) if m else ""


def sentence_goes_on(text: str, end: int) -> bool:
    """True when what follows ``end`` is not a new sentence (a lowercase word, a digit or punctuation)."""
    ch = next_char(text, end)
    return bool(ch) and not ch.isupper()


def spell(text: str) -> str:
    """'ABC1' -> 'eh B C one': letters and digits one by one."""
    out = []
    for ch in text:
        if ch.isdigit():
            out.append(digits(ch))
        elif ch.isalpha():
            out.append(LETTER_NAMES.get(ch.upper(), ch.upper()))
    return " ".join(out)


def _speak_address(address: str) -> str:
    """'www.example.com/a_b' -> 'w w w dot example dot com slash a underscore b'."""
    out = []
    for part in _SEP_RE.split(re.sub(r"^https?://", "", address, flags=re.IGNORECASE)):
        low = part.lower()
        if not part:
            continue
        if part == "." or part in _SEPARATORS:
            out.append(_SEPARATORS.get(part, " "))
        elif low in _DOMAIN_WORDS and out and out[-1] == " dot ":
            out[-1] = " " + _DOMAIN_WORDS[low]
        elif low == "www":
            out.append("w w w")
        elif part.isdigit():
            out.append(digits(part))
        else:
            out.append(re.sub(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])", " ", part))
    return re.sub(r"\s+", " ", "".join(out)).strip()


def _url(m: re.Match) -> str:
    url = m.group(0)
    tail = ""
    while url and url[-1] in _URL_TRAILING:
        url, tail = url[:-1], url[-1] + tail
    return _speak_address(url) + tail


def _file(m: re.Match) -> str:
    name, ext = m.group(0)[: -len(m.group(1)) - 1], m.group(1)
    return _speak_address(name) + " dot " + _EXTENSIONS[ext.lower()]


def _abbr(m: re.Match) -> str:
    word = m.group(1)
    if word == "Dr" and _previous_word(m)[:1].isupper() and not next_char(m.string, m.end()).isupper():
        return "Drive" if sentence_goes_on(m.string, m.end()) else "Drive."  # "Elm Dr. is"
    if word in _TITLES:
        return _TITLES[word]
    spoken = _TRAILING[word]
    return spoken if sentence_goes_on(m.string, m.end()) else spoken + "."


def _previous_word(m: re.Match) -> str:
    return m.string[max(0, m.start() - 40) : m.start()].rstrip().rpartition(" ")[2]


def _initial(m: re.Match) -> str:
    # "J. K. Rowling" keeps going; "Plan B. Then" is a sentence end (a capitalised word before it).
    before = _previous_word(m)
    if before[:1].isupper() and len(before.rstrip(".")) > 1 and before not in _TITLES.values():
        return m.group(0)
    return LETTER_NAMES.get(m.group(1), m.group(1))


def _saint_or_street(m: re.Match) -> str:
    # "in St. Louis" is a saint; "Main St." is a street (it follows a capitalised name).
    before = _previous_word(m)
    after_name = before[:1].isupper() and before[-1:].isalpha()
    if next_char(m.string, m.end()).isupper() and not after_name:
        return "Saint"
    return "Street" if sentence_goes_on(m.string, m.end()) else "Street."


_ST = re.compile(r"(?<![\w.])St\.(?=[\s,;:!?)]|$)")


def _latin(m: re.Match) -> str:
    spoken = _LATIN_WORDS[m.group(1).lower()]
    return spoken if sentence_goes_on(m.string, m.end()) else spoken + "."


def _dotted(m: re.Match) -> str:
    letters = m.group(1).replace(".", "")
    return letters if sentence_goes_on(m.string, m.end()) else letters + "."


def _acronym(m: re.Match) -> str:
    word = m.group(1)
    return word.capitalize() if word in _SAID_AS_WORDS else word


def expand_web(text: str) -> str:
    """URLs, e-mail addresses, bare domains and file names, before any rule eats their dots."""
    if "://" in text or "www." in text:
        text = sub(_URL, _url, text)
    if "@" in text:
        text = sub(_EMAIL, lambda m: _speak_address(m.group(0)), text)
    if _DOT_LETTER.search(text) is None:  # no "name.ext" or "host.tld"
        return text
    text = sub(_DOMAIN, _url, text)
    return sub(_FILE, _file, text)


def expand_abbreviations(text: str) -> str:
    """Titles, Latin and other dotted abbreviations; dotted acronyms and initials lose their dots."""
    # Cheap gates first: most prose has none of these, and each full regex scan costs.
    dotted = set(_DOTTED_WORD.findall(text))
    if dotted:
        if dotted & _LATIN_LAST:
            text = sub(_LATIN, _latin, text)
        if dotted & _NUMBER_WORDS:
            text = sub(_NUMBER_ABBR, "number ", text)
        if dotted & _BEFORE_NUMBER.keys():
            text = sub(_BEFORE_NUMBER_RE, lambda m: _BEFORE_NUMBER[m.group(1)] + " ", text)
        if "St" in dotted:
            text = sub(_ST, _saint_or_street, text)
        if dotted & _ABBR_WORDS:
            text = sub(_ABBR, _abbr, text)
        if any(len(w) == 1 and w.isupper() for w in dotted):
            text = sub(_DOTTED_ACRONYM, _dotted, text)
            text = sub(_INITIAL, _initial, text)
    if _DIGIT.search(text):
        text = sub(_MONTH_NO_DOT, lambda m: _MONTH_ABBR[m.group(1)], text)
    for mark, pattern, spoken in _SYMBOLS:
        if mark in text:
            text = sub(pattern, spoken, text)
    return text


def expand_acronyms(text: str) -> str:
    """All-caps words espeak would spell but people say as words; skipped for shouted (all-caps) text."""
    if _TWO_CAPS.search(text) is None or _SHOUTED.search(text):
        return text
    return sub(_ALLCAPS, _acronym, text)
