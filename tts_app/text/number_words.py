"""Numbers as American English words: num2words does the words, we only tidy its British style."""

from __future__ import annotations

import re
from functools import lru_cache

from num2words import num2words

_DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
# Beyond this a run of digits is an identifier, read digit by digit: every number word here (cardinal,
# ordinal, year) stays under num2words' range (10**36) and Python's int() limit (4,300 digits), so a
# number is never a 500 and never costs more words than it has digits.
MAX_WORDED_DIGITS = 15
_MAX_CARDINAL_DIGITS = MAX_WORDED_DIGITS
_AND = re.compile(r"\band\b ?")
_PUNCT = re.compile(r"[-,]")
_SPACES = re.compile(r"\s+")


def _tidy(words: str) -> str:
    """num2words' "one hundred and twenty-three" -> "one hundred twenty three" (American, no hyphens)."""
    return _SPACES.sub(" ", _PUNCT.sub(" ", _AND.sub("", words))).strip()


def digits(text: str) -> str:
    """'4507' -> 'four five zero seven'; other characters are dropped."""
    return " ".join(_DIGIT_WORDS[int(ch)] for ch in text if ch.isdecimal())  # isdigit() takes "²", which int() refuses


@lru_cache(maxsize=4096)  # num2words is the slow part of a number-dense text
def cardinal(number: str | int) -> str:
    """'1,234' -> 'one thousand two hundred thirty four'; '-5' -> 'minus five'; '2.50' -> 'two point five zero'."""
    s = str(number).replace(",", "").strip()
    negative = s.startswith(("-", "\u2212"))
    s = s.lstrip("-\u2212+")
    whole, _, frac = s.partition(".")
    if whole and whole.isdigit() and (len(whole) > 1 and whole.startswith("0") or len(whole) > _MAX_CARDINAL_DIGITS):
        words = digits(whole)  # "007", long ids
    else:
        words = _tidy(num2words(int(whole or "0")))
    if frac:
        words += " point " + digits(frac)
    return ("minus " + words) if negative else words


@lru_cache(maxsize=4096)  # num2words is the slow part of a number-dense text
def ordinal(number: str | int) -> str:
    """'22' -> 'twenty second'; past MAX_WORDED_DIGITS digits, the digits and the last one as an ordinal."""
    s = str(number).replace(",", "").strip()
    if len(s) > MAX_WORDED_DIGITS:  # "…9th": "nine nine … ninth" (num2words overflows at 10**36)
        return f"{digits(s[:-1])} {ordinal(s[-1])}".strip()
    return _tidy(num2words(int(s), to="ordinal"))


def ordinal_plural(number: int) -> str:
    """Denominator words: 3 -> 'thirds', 4 -> 'quarters'."""
    if number == 2:
        return "halves"
    if number == 4:
        return "quarters"
    return ordinal(number) + "s"


@lru_cache(maxsize=4096)  # num2words is the slow part of a number-dense text
def year(number: str | int) -> str:
    """'2026' -> 'twenty twenty six'; '1905' -> 'nineteen oh five'; '2005' -> 'two thousand five'."""
    s = str(number).strip()
    if len(s.lstrip("-")) > 4:  # not a year: read as a number (bounded there)
        return cardinal(s)
    return _tidy(num2words(int(s), to="year"))


def fraction(numerator: int, denominator: int) -> str:
    """3/4 -> 'three quarters', 1/2 -> 'one half'."""
    if denominator == 2:
        return "one half" if numerator == 1 else f"{cardinal(numerator)} halves"
    if denominator == 4:
        return "one quarter" if numerator == 1 else f"{cardinal(numerator)} quarters"
    if numerator == 1:
        return "one " + ordinal(denominator)
    return f"{cardinal(numerator)} {ordinal_plural(denominator)}"
