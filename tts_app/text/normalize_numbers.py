"""Numbers in context as words: money, dates, times, phone numbers, units, ranges, fractions, years, Roman numerals.

Each rule is one precompiled regex and a function; ``expand_numbers`` runs them
in an order where the specific shapes (a date, a phone number) go before the
generic ones (a range, a plain number) that would otherwise take them apart.
"""

from __future__ import annotations

import re

from tts_app.text.abbreviations import MONTHS, sentence_goes_on
from tts_app.text.number_words import MAX_WORDED_DIGITS, cardinal, digits, fraction, ordinal, year
from tts_app.text.offsets import sub

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"  # 1,234.5 or 1234.5
_SIGN = r"[-\u2212]?"

# -- money ---------------------------------------------------------------------
# symbol/code -> (singular, plural, cent singular, cent plural); None: no minor unit is said
_CURRENCIES = {
    "$": ("dollar", "dollars", "cent", "cents"), "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"), "¥": ("yen", "yen", None, None),
    "USD": ("US dollar", "US dollars", "cent", "cents"), "EUR": ("euro", "euros", "cent", "cents"),
    "₹": ("rupee", "rupees", "paisa", "paise"), "₩": ("won", "won", None, None),
    "GBP": ("pound", "pounds", "penny", "pence"), "JPY": ("yen", "yen", None, None),
    "INR": ("rupee", "rupees", "paisa", "paise"), "CHF": ("Swiss franc", "Swiss francs", "centime", "centimes"),
    "CAD": ("Canadian dollar", "Canadian dollars", "cent", "cents"),
    "AUD": ("Australian dollar", "Australian dollars", "cent", "cents"),
}  # fmt: skip
_MAGNITUDES = {"k": "thousand", "K": "thousand", "thousand": "thousand", "m": "million", "M": "million",
               "mn": "million", "million": "million", "b": "billion", "B": "billion", "bn": "billion",
               "billion": "billion", "tn": "trillion", "T": "trillion", "trillion": "trillion"}  # fmt: skip
_MAG = r"(?:(k|K|mn|m|M|bn|b|B|tn|T)\b|\s(thousand|million|billion|trillion)\b)?"
_CODES = "|".join(k for k in _CURRENCIES if len(k) == 3)
_MONEY_SYMBOL = re.compile(rf"({_SIGN})([$€£¥₹₩])\s?({_NUM}){_MAG}")
_MONEY_CODE_FIRST = re.compile(rf"\b({_CODES})\s?({_SIGN})({_NUM}){_MAG}")
_MONEY_CODE_AFTER = re.compile(rf"(?<![\w.,])({_SIGN})({_NUM}){_MAG}\s?({_CODES})\b")
_CENTS = re.compile(r"(\d(?<![\w.,]\d)\d*)\s?¢")


def _money(sign: str, currency: str, amount: str, magnitude: str | None) -> str:
    one, many, cent, cents = _CURRENCIES[currency]
    minus = "minus " if sign else ""
    if magnitude:
        return f"{minus}{cardinal(amount)} {_MAGNITUDES[magnitude]} {many}"
    whole, _, frac = amount.replace(",", "").partition(".")
    if frac and (len(frac) != 2 or cent is None):
        return f"{minus}{cardinal(amount)} {many}"
    parts = []
    whole_zero, whole_one = not whole.strip("0"), whole.lstrip("0") == "1"  # strings: int() refuses 4,300 digits
    if not whole_zero or not frac or not int(frac):
        parts.append(f"{cardinal(whole or '0')} {one if whole_one else many}")
    if frac and int(frac):
        parts.append(f"{cardinal(int(frac))} {cent if int(frac) == 1 else cents}")
    return minus + " and ".join(parts)


def _money_symbol(m: re.Match) -> str:
    return _money(m.group(1), m.group(2), m.group(3), m.group(4) or m.group(5))


def _money_code_first(m: re.Match) -> str:
    return _money(m.group(2), m.group(1), m.group(3), m.group(4) or m.group(5))


def _money_code_after(m: re.Match) -> str:
    return _money(m.group(1), m.group(5), m.group(2), m.group(3) or m.group(4))


# -- dates and times -----------------------------------------------------------------
_MONTH = "|".join(MONTHS)
_ORD_SUFFIX = r"(?:st|nd|rd|th)?"
_DATE_MDY = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})\b")
_DATE_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DATE_DAY_MONTH = re.compile(rf"\b(\d{{1,2}}){_ORD_SUFFIX}\s+({_MONTH})\b(?:,?\s+(\d{{4}})\b)?")
_DATE_MONTH_DAY = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}}){_ORD_SUFFIX}\b(?:,?\s+(\d{{4}})\b)?")
_MONTH_YEAR = re.compile(rf"\b({_MONTH}),?\s+(\d{{4}})\b")
_AMPM = r"(?:\s?([AaPp])\.?[Mm]\.?(?![\w]))"
# The hour is "[01]?\d|2[0-3]" (a time) and "1[0-2]|0?[1-9]" (an hour and am/pm), each tried in the same order, written
# from its first digit on (matched first, so the regex engine skips to digits in its own loop; "\b" checked after it).
_TIME = re.compile(rf"(\d(?<!\w\d)(?:(?<=[01])\d||(?<=2)[0-3])):([0-5]\d)(?::([0-5]\d))?(?!\d){_AMPM}?")
_HOUR_AMPM = re.compile(rf"(\d(?<!\w\d)(?:(?<=1)[0-2]|(?<=0)[1-9]|(?<=[1-9]))){_AMPM}")


def month_day(month: int, day: int, yr: str | None) -> str:
    """(3, 14, '2026') -> 'March fourteenth, twenty twenty six'."""
    spoken = f"{MONTHS[month - 1]} {ordinal(day)}"
    return f"{spoken}, {year(yr)}" if yr else spoken


def _valid(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31


def _date_mdy(m: re.Match) -> str:
    a, b = int(m.group(1)), int(m.group(2))
    month, day = (b, a) if a > 12 and b <= 12 else (a, b)  # 14/3/2026 can only be day first
    if not _valid(month, day):
        return m.group(0)
    return month_day(month, day, m.group(3))


def _date_iso(m: re.Match) -> str:
    month, day = int(m.group(2)), int(m.group(3))
    return month_day(month, day, m.group(1)) if _valid(month, day) else m.group(0)


def _date_day_month(m: re.Match) -> str:
    spoken = f"the {ordinal(m.group(1))} of {m.group(2)}"
    return f"{spoken}, {year(m.group(3))}" if m.group(3) else spoken


def _date_month_day(m: re.Match) -> str:
    return month_day(MONTHS.index(m.group(1)) + 1, int(m.group(2)), m.group(3))


def _ampm(m: re.Match, group: int) -> str:
    letter = m.group(group)
    if not letter:
        return ""
    # "AM"/"PM" joined: espeak reads a lone "A" as the article.
    spoken = " " + letter.upper() + "M"
    return spoken if sentence_goes_on(m.string, m.end()) or not m.group(0).endswith(".") else spoken + "."


def _time(m: re.Match) -> str:
    hour, minute, second = int(m.group(1)), m.group(2), m.group(3)
    ampm = _ampm(m, 4)
    if minute == "00":
        spoken = cardinal(hour) + ("" if ampm else (" o'clock" if hour <= 12 else " hundred"))
    elif minute.startswith("0"):
        spoken = f"{cardinal(hour)} oh {cardinal(int(minute))}"
    else:
        spoken = f"{cardinal(hour)} {cardinal(int(minute))}"
    if second:
        spoken += f" and {cardinal(int(second))} second{'' if int(second) == 1 else 's'}"
    return spoken + ampm


def time_words(text: str) -> str:
    """Times anywhere in ``text`` as words ('17:45' -> 'seventeen forty five')."""
    return sub(_HOUR_AMPM, lambda m: cardinal(int(m.group(1))) + _ampm(m, 2), sub(_TIME, _time, text))


# -- phone numbers --------------------------------------------------------------
_PHONE = re.compile(
    r"(?<![\w+])(?:(\+\d{1,3})[\s.-]?)?(?:\(\d{2,4}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}(?![\w-])"
    r"|(?<![\w+])\+\d{1,3}(?:[\s.-]\d{2,4}){2,4}(?![\w-])"
)


def telephone(number: str) -> str:
    """'+1 (555) 123-4567' -> 'plus one, five five five, one two three, four five six seven'."""
    groups = [digits(g) for g in re.findall(r"\d+", number)]
    lead = "plus " if number.lstrip().startswith("+") else ""
    return lead + ", ".join(groups)


# -- units, percentages ---------------------------------------------------------------
_UNITS = {
    "km/h": ("kilometer per hour", "kilometers per hour"), "kph": ("kilometer per hour", "kilometers per hour"),
    "mph": ("mile per hour", "miles per hour"), "m/s": ("meter per second", "meters per second"),
    "mm": ("millimeter", "millimeters"), "cm": ("centimeter", "centimeters"), "m": ("meter", "meters"),
    "km": ("kilometer", "kilometers"), "ft": ("foot", "feet"), "mi": ("mile", "miles"),
    "mg": ("milligram", "milligrams"), "g": ("gram", "grams"), "kg": ("kilogram", "kilograms"),
    "lb": ("pound", "pounds"), "lbs": ("pound", "pounds"), "oz": ("ounce", "ounces"),
    "ml": ("milliliter", "milliliters"), "mL": ("milliliter", "milliliters"), "l": ("liter", "liters"),
    "L": ("liter", "liters"), "ms": ("millisecond", "milliseconds"),
    "sec": ("second", "seconds"), "min": ("minute", "minutes"), "h": ("hour", "hours"), "hr": ("hour", "hours"),
    "hrs": ("hour", "hours"), "KB": ("kilobyte", "kilobytes"), "kB": ("kilobyte", "kilobytes"),
    "MB": ("megabyte", "megabytes"), "GB": ("gigabyte", "gigabytes"), "TB": ("terabyte", "terabytes"),
    "Hz": ("hertz", "hertz"), "kHz": ("kilohertz", "kilohertz"), "MHz": ("megahertz", "megahertz"),
    "GHz": ("gigahertz", "gigahertz"), "W": ("watt", "watts"), "kW": ("kilowatt", "kilowatts"),
    "kWh": ("kilowatt hour", "kilowatt hours"), "MW": ("megawatt", "megawatts"), "V": ("volt", "volts"),
    "mA": ("milliamp", "milliamps"), "dB": ("decibel", "decibels"), "px": ("pixel", "pixels"),
    "Mbps": ("megabit per second", "megabits per second"), "Gbps": ("gigabit per second", "gigabits per second"),
    "fps": ("frame per second", "frames per second"), "°C": ("degree Celsius", "degrees Celsius"),
    "°F": ("degree Fahrenheit", "degrees Fahrenheit"), "℃": ("degree Celsius", "degrees Celsius"),
    "℉": ("degree Fahrenheit", "degrees Fahrenheit"), "°": ("degree", "degrees"),
}  # fmt: skip
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_UNIT = re.compile(rf"(?<![\w.,])({_SIGN})({_NUM})\s?({_UNIT_ALT})(?![\w/°])")
_DEGREE_SPACE = re.compile(r"°\s+([CF])\b")
_PERCENT = re.compile(rf"(?<![\w.,])({_SIGN})({_NUM})\s?%")


def _unit(m: re.Match) -> str:
    sign, amount, unit = m.group(1), m.group(2), m.group(3)
    one, many = _UNITS[unit]
    return f"{cardinal(sign + amount)} {one if amount == '1' else many}"


# -- ranges, fractions, ordinals, decades, years, Roman numerals, plain numbers --------------
_YEAR_NUM = r"1\d{3}|20\d{2}"
_RANGE = re.compile(rf"(?<![\w.,/-])({_NUM})\s?[-\u2013]\s?({_NUM})(?![\w/-]|\.\d)")
_MIXED_FRACTION = re.compile(r"(\d(?<![\w.,/]\d)\d*)\s(\d+)/(\d+)(?![\w/]|\.\d)")
_FRACTION = re.compile(r"(\d(?<![\w.,/]\d)\d*)/(\d+)(?![\w/]|\.\d)")
_ORDINAL = re.compile(r"(\d(?<!\w\d)(?:\d{0,2}(?:,\d{3})+|\d*))(st|nd|rd|th)\b", re.IGNORECASE)
_DECADE = re.compile(r"(?<![\w.,])(?:(1\d\d0|20\d0)|'?([1-9]0))'?s\b")
_YEAR = re.compile(r"(1(?<![\w.,-]1)\d{3}|2(?<![\w.,-]2)0\d{2})(?!\w|[.,]\d)")  # _YEAR_NUM
_YEAR_BEFORE = re.compile(
    r"(?:\b(?:in|since|by|until|till|from|before|after|during|of|year|circa|around|through|to|early|late|"
    r"mid|spring|summer|autumn|fall|winter|" + _MONTH + r")\s+|[\(\-\u2013])$",
    re.IGNORECASE,
)
# A lowercase word after a number usually counts something ("2026 items"), except these.
_NOT_COUNTED = frozenset(
    "was is will were saw had has became brought marked and or but to in at on for the when as with which that "
    "would could should may might did does began ended".split()
)
_NEXT_WORD = re.compile(r"\s+([A-Za-z]+)")
_ROMAN = r"(?=[MDCLXVI])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
_SECTIONS = ("Chapter", "Part", "Volume", "Book", "Act", "Scene", "Section", "Article", "Phase", "Level", "Appendix",
             "Episode", "World War", "Super Bowl", "Type", "Class", "Stage")  # fmt: skip
# Each word's "\b" checked after its first letter: every alternative then starts with a letter, which lets the regex
# engine skip to those letters in its own loop (as for the capitalised name below).
_SECTION_ROMAN = re.compile(r"(" + "|".join(rf"{w[0]}(?<!\w{w[0]}){w[1:]}" for w in _SECTIONS) + rf")\s+({_ROMAN})\b")
_NAME_ROMAN = re.compile(rf"([A-Z](?<!\w[A-Z])[a-z]+)\s+((?=[IVXL]{{2,}}\b|V\b){_ROMAN})\b")
# A signed number, a number, or a decimal without its zero (".5": group 1).
_NUMBER = re.compile(
    rf"[-\u2212\d.](?:(?<=[-\u2212])(?<![\w.)][-\u2212])(?:{_NUM})(?!\w)"
    r"|(?<=\d)(?<![\w.]\d)(?:\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d*(?:\.\d+)?)(?!\w)"  # _NUM, its first digit matched
    r"|(?<=\.)(?<![\w.]\.)(\d+)\b)"
)
# Three or more dot-joined numbers are a version or an address, never a decimal: "3.11.7", "v2.0.1", "192.168.0.1".
_DOTTED_NUMBERS = re.compile(r"(?<![\w.])([vV]?)(\d{1,9}(?:\.\d{1,9}){2,8})(?![\w.]\w|\.\d)")
# After times are read: "16:9", "3:2" (one digit after the colon is never a time) are ratios.
_RATIO = re.compile(r"(\d(?<![\w.:]\d)\d{0,2}):(\d)(?![\w.:]|\d)")
# Heights: 6'2" or 5' 11" (foot and inch marks, straight or typographic).
_FEET_INCHES = re.compile(r"(\d)(?<![\w.]\d)['\u2032]\s?(\d{1,2})(?:\"|\u2033|'')?(?![\w'])")
# Money-free magnitudes written the newspaper way: "8.1bn", "3tn" (never a unit of measure).
_BIG_MAGNITUDE = re.compile(r"(\d(?<![\w.,]\d)\d*(?:\.\d+)?)(bn|tn)\b")
_DIMENSIONS = re.compile(r"(\d(?<![\w.,]\d)\d*)\s?[×x]\s?(\d+)(?![\w.]\w)")
_GLUED = re.compile(r"([A-Za-z])(?=\d)|(\d)(?=[A-Za-z])")
_DIGIT = re.compile(r"\d")
_MONEY_MARK = re.compile(r"[$€£¥¢₹₩]|USD|EUR|GBP|JPY|CAD|AUD|INR|CHF")


def roman_value(numeral: str) -> int:
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for a, b in zip(numeral, numeral[1:] + " "):
        v = values[a]
        total += -v if b != " " and values[b] > v else v
    return total


def _is_year(text: str, start: int, end: int) -> bool:
    if _YEAR_BEFORE.search(text[max(0, start - 12) : start]):
        return True
    after = _NEXT_WORD.match(text, end)
    if after is None:
        return True
    word = after.group(1)
    return word in ("AD", "BC", "BCE", "CE") or not word[0].islower() or word in _NOT_COUNTED


def _year_or_number(m: re.Match) -> str:
    return year(m.group(1)) if _is_year(m.string, m.start(), m.end()) else cardinal(m.group(1))


def _range(m: re.Match) -> str:
    a, b = m.group(1), m.group(2)
    if re.fullmatch(_YEAR_NUM, a) and re.fullmatch(_YEAR_NUM, b):
        return f"{year(a)} to {year(b)}"
    return f"{a} to {b}"


def _fraction(num: str, den: str) -> str:
    if len(num) > MAX_WORDED_DIGITS or len(den) > 3:  # never int() a huge number; a denominator over 100 is "over"
        return f"{cardinal(num)} over {cardinal(den)}"
    n, d = int(num), int(den)
    if (n, d) == (24, 7):
        return "twenty four seven"  # "open 24/7"
    # A fraction is read as one when it is proper ("5/8") or has a small denominator ("3/2"); other
    # pairs are two numbers ("120/80 mmHg": "one hundred twenty over eighty").
    if d == 0 or d > 100 or (n >= d and d > 10):
        return f"{cardinal(num)} over {cardinal(den)}"
    return fraction(n, d)


def _mixed(m: re.Match) -> str:
    whole, num, den = m.group(1), m.group(2), m.group(3)
    if num.lstrip("0") == "1" and den.lstrip("0") in ("2", "4"):
        d = int(den)
        return f"{cardinal(whole)} and a {'half' if d == 2 else 'quarter'}"
    return f"{cardinal(whole)} and {_fraction(m.group(2), m.group(3))}"


def _dotted_numbers(m: re.Match) -> str:
    """'3.11.7' -> 'three point eleven point seven'; an IPv4 address is read with 'dot'."""
    parts = m.group(2).split(".")
    words = [digits(p) if len(p) > 1 and p.startswith("0") else cardinal(p) for p in parts]
    address = len(parts) == 4 and all(int(p) <= 255 for p in parts) and not m.group(1)
    return ("version " if m.group(1) else "") + (" dot " if address else " point ").join(words)


def _decade(m: re.Match) -> str:
    words = year(m.group(1)) if m.group(1) else cardinal(m.group(2))
    head, _, last = words.rpartition(" ")
    plural = last[:-1] + "ies" if last.endswith("y") else last + "s"
    return f"{head} {plural}".strip()


def _number(m: re.Match) -> str:
    if m.group(1):
        return "point " + digits(m.group(1))
    return cardinal(m.group(0))  # with its sign


def expand_numbers(text: str) -> str:
    """Every number-bearing shape in ``text`` as words, most specific first."""
    if _DIGIT.search(text) is None:  # prose without digits: only Roman numerals can apply
        return _roman(text)
    if _MONEY_MARK.search(text):
        text = sub(_MONEY_SYMBOL, _money_symbol, text)
        text = sub(_MONEY_CODE_FIRST, _money_code_first, text)
        text = sub(_MONEY_CODE_AFTER, _money_code_after, text)
        text = sub(_CENTS, lambda m: f"{cardinal(m.group(1))} cent{'' if m.group(1) == '1' else 's'}", text)
    if "-" in text:
        text = sub(_DATE_ISO, _date_iso, text)
    if "/" in text:
        text = sub(_DATE_MDY, _date_mdy, text)
    text = sub(_DATE_DAY_MONTH, _date_day_month, text)
    text = sub(_DATE_MONTH_DAY, _date_month_day, text)
    text = sub(_MONTH_YEAR, lambda m: f"{m.group(1)} {year(m.group(2))}", text)
    text = time_words(text)
    if "." in text:
        text = sub(_DOTTED_NUMBERS, _dotted_numbers, text)
    if "+" in text or "-" in text or "(" in text or "." in text:
        text = sub(_PHONE, lambda m: telephone(m.group(0)), text)
    if ":" in text:
        text = sub(_RATIO, lambda m: f"{cardinal(m.group(1))} to {cardinal(m.group(2))}", text)
    if "'" in text or "\u2032" in text:
        text = sub(_FEET_INCHES, lambda m: f"{cardinal(m.group(1))} foot {cardinal(m.group(2))}", text)
    if "bn" in text or "tn" in text:
        text = sub(_BIG_MAGNITUDE, lambda m: f"{m.group(1)} {'billion' if m.group(2) == 'bn' else 'trillion'}", text)
    text = sub(_DIMENSIONS, lambda m: f"{cardinal(m.group(1))} by {cardinal(m.group(2))}", text)
    text = sub(_RANGE, _range, text)
    text = sub(_PERCENT, lambda m: f"{cardinal(m.group(1) + m.group(2))} percent", text)
    text = sub(_DECADE, _decade, text)
    # Callables, not templates (r"°\1"): a recorded sub expands a template per match, and 3.11 parses it each time.
    text = sub(_UNIT, _unit, sub(_DEGREE_SPACE, lambda m: "°" + m.group(1), text))
    text = sub(_MIXED_FRACTION, _mixed, text)
    text = sub(_FRACTION, lambda m: _fraction(m.group(1), m.group(2)), text)
    text = sub(_ORDINAL, lambda m: ordinal(m.group(1)), text)
    text = _roman(text)
    text = sub(_YEAR, _year_or_number, text)
    text = sub(_GLUED, lambda m: m.group(0) + " ", text)  # the letter or digit before the joint
    return sub(_NUMBER, _number, text)


def _roman(text: str) -> str:
    text = sub(_SECTION_ROMAN, lambda m: f"{m.group(1)} {cardinal(roman_value(m.group(2)))}", text)
    return sub(_NAME_ROMAN, lambda m: f"{m.group(1)} the {ordinal(roman_value(m.group(2)))}", text)
