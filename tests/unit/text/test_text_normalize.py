"""English normalisation, table-driven: written input -> the words a reader says. Runs without a model."""

import pytest

from tts_app.text import expand_text, phonemize

CASES = [
    # the issue's own examples
    ("On 3/14/2026 Dr. Smith paid $1,234.56 for 2 items at 5:30 pm.",
     "On March fourteenth, twenty twenty six Doctor Smith paid one thousand two hundred thirty four dollars and "
     "fifty six cents for two items at five thirty PM."),
    ("1/2 a pie", "one half a pie"),
    ("10kg", "ten kilograms"),
    # cardinals: separators, decimals, negatives, leading zeros, long ids
    ("1,000,000 people", "one million people"),
    ("pi is 3.14", "pi is three point one four"),
    ("about .5 of it", "about point five of it"),
    ("-5 and \u22123", "minus five and minus three"),
    ("agent 007", "agent zero zero seven"),
    ("id 12345678901234567", "id one two three four five six seven eight nine zero one two three four five six seven"),
    ("COVID-19 cases", "COVID-nineteen cases"),
    # ordinals, ranges, fractions, percentages
    ("the 1st, 22nd and 103rd", "the first, twenty second and one hundred third"),
    ("10-12 people", "ten to twelve people"),
    ("pages 5\u20139", "pages five to nine"),
    ("1990-1995", "nineteen ninety to nineteen ninety five"),
    ("3/4 cup", "three quarters cup"),
    ("2/3 of them", "two thirds of them"),
    ("5/8 inch", "five eighths inch"),
    ("1 1/2 cups", "one and a half cups"),
    ("7/200", "seven over two hundred"),
    ("BP 120/80", "BP one hundred twenty over eighty"),
    ("3/2 as much", "three halves as much"),
    ("9/10 people", "nine tenths people"),
    # versions and addresses: three or more dot-joined numbers are never a decimal
    ("Python 3.11.7 is out", "Python three point eleven point seven is out"),
    ("update to v2.0.1 now", "update to version two point zero point one now"),
    ("ping 192.168.0.1 first", "ping one hundred ninety two dot one hundred sixty eight dot zero dot one first"),
    ("release 1.02.3", "release one point zero two point three"),
    # ratios, heights, newspaper magnitudes
    ("a 16:9 screen", "a sixteen to nine screen"),
    ("mixed 3:2 with water", "mixed three to two with water"),
    ("at 3:05 today", "at three oh five today"),
    ("he is 6'2\" tall", "he is six foot two tall"),
    ("she is 5' 11\u2033", "she is five foot eleven"),
    ("a 8.1bn deal and 3tn more", "a eight point one billion deal and three trillion more"),
    ("50% off", "fifty percent off"),
    ("3.5% rise", "three point five percent rise"),
    ("5-10%", "five to ten percent"),
    # years vs quantities, decades
    ("In 2026 we sold 2026 items.", "In twenty twenty six we sold two thousand twenty six items."),
    ("since 1905", "since nineteen oh five"),
    ("2026 was good", "twenty twenty six was good"),
    ("the 1990s and the 80s", "the nineteen nineties and the eighties"),
    ("by 2005", "by two thousand five"),
    ("in 2025, more than 2026 items", "in twenty twenty five, more than two thousand twenty six items"),
    ("open 24/7", "open twenty four seven"),
    # Roman numerals
    ("Henry VIII", "Henry the eighth"),
    ("Louis XIV", "Louis the fourteenth"),
    ("Chapter IV", "Chapter four"),
    ("World War II", "World War two"),
    # money
    ("$3.5M", "three point five million dollars"),
    ("$2bn", "two billion dollars"),
    ("$5 million", "five million dollars"),
    ("$1", "one dollar"),
    ("$0.50", "fifty cents"),
    ("$5.01", "five dollars and one cent"),
    ("\u20ac20", "twenty euros"),
    ("\u00a33.50", "three pounds and fifty pence"),
    ("\u00a5100", "one hundred yen"),
    ("USD 5", "five US dollars"),
    ("5 EUR", "five euros"),
    ("99\u00a2", "ninety nine cents"),
    ("\u20b91,000", "one thousand rupees"),
    ("CHF 20", "twenty Swiss francs"),
    ("-$5", "minus five dollars"),
    # dates
    ("2026-03-14", "March fourteenth, twenty twenty six"),
    ("14/3/2026", "March fourteenth, twenty twenty six"),
    ("14 March 2026", "the fourteenth of March, twenty twenty six"),
    ("March 14, 2026", "March fourteenth, twenty twenty six"),
    ("Jan. 5th", "January fifth"),
    ("Sept. 1", "September first"),
    ("Feb 3", "February third"),
    ("March 2026", "March twenty twenty six"),
    # times
    ("9am", "nine AM"),
    ("at 9 a.m. Then", "at nine AM. Then"),
    ("17:45", "seventeen forty five"),
    ("10:00", "ten o'clock"),
    ("17:00", "seventeen hundred"),
    ("9:05 pm", "nine oh five PM"),
    ("10:00 am", "ten AM"),
    # units, singular and plural
    ("1 kg", "one kilogram"),
    ("5 km", "five kilometers"),
    ("60 km/h", "sixty kilometers per hour"),
    ("20\u00b0C", "twenty degrees Celsius"),
    ("-5 \u00b0F", "minus five degrees Fahrenheit"),
    ("100 ms", "one hundred milliseconds"),
    ("16 GB", "sixteen gigabytes"),
    ("2.4 GHz", "two point four gigahertz"),
    ("1 MHz", "one megahertz"),
    ("1.5 kg", "one point five kilograms"),
    ("3 lbs", "three pounds"),
    # abbreviations and titles
    ("Mr. and Mrs. Smith", "Mister and Missus Smith"),
    ("Ms. Lee", "Miz Lee"),
    ("Prof. Xu", "Professor Xu"),
    ("apples, pears, etc. and more", "apples, pears, et cetera and more"),
    ("pears etc. Then", "pears et cetera. Then"),
    ("fruit, e.g. apples", "fruit, for example apples"),
    ("one, i.e. this", "one, that is this"),
    ("cats vs. dogs", "cats versus dogs"),
    ("Smith vs. Jones", "Smith versus Jones"),  # not a sentence end before a name
    ("see p. 42 and pp. 10-12", "see page forty two and pages ten to twelve"),
    ("by Eq. (2) in Vol. 3", "by equation (two) in volume three"),
    ("at 5 p.m. sharp", "at five PM sharp"),
    ("12 Main St. in St. Louis", "twelve Main Street in Saint Louis"),
    ("Elm Dr. is nice", "Elm Drive is nice"),
    ("No. 5", "number five"),
    ("J. K. Rowling", "J K Rowling"),
    ("the U.S. and the U.K. Then", "the US and the UK. Then"),
    ("salt & pepper", "salt and pepper"),
    ("1920x1080", "one thousand nine hundred twenty by one thousand eighty"),
    # acronyms: espeak spells FBI and says NASA itself; these it gets wrong
    ("my PIN and RAM", "my Pin and Ram"),
    ("NASA and the FBI", "NASA and the FBI"),
    ("THIS IS A VERY LOUD PIN MESSAGE", "THIS IS A VERY LOUD PIN MESSAGE"),
    # web addresses, e-mail, file names
    ("see https://www.example.com/docs.", "see w w w dot example dot com slash docs."),
    ("mail john.doe@example.org", "mail john dot doe at example dot org"),
    ("visit example.io now", "visit example dot I O now"),
    ("open report_final.pdf now", "open report underscore final dot P D F now"),
    ("data.json", "data dot jason"),
    # phone numbers, digit by digit in groups
    ("Call 555-123-4567.", "Call five five five, one two three, four five six seven."),
    ("(555) 123-4567", "five five five, one two three, four five six seven"),
    ("+1 555 123 4567", "plus one, five five five, one two three, four five six seven"),
    ("+44 20 7946 0958", "plus four four, two zero, seven nine four six, zero nine five eight"),
]  # fmt: skip


@pytest.mark.parametrize("written, spoken", CASES)
def test_written_forms_are_spoken_as_words(written, spoken):
    assert expand_text(written) == spoken


def test_text_without_written_forms_is_unchanged():
    text = "The quick brown fox jumps over the lazy dog, twice. Why not?"
    assert expand_text(text) == text


@pytest.mark.parametrize("text", ["Dr. Smith arrived.", "We met Mr. Jones on Jan. 5th at St. Paul's.", "Prof. Xu spoke."])
def test_abbreviations_do_not_end_the_sentence(text):
    # espeak splits at every ". "; after normalisation each of these is one sentence.
    assert len(phonemize(text, "en-us")) > 1
    assert len(phonemize(expand_text(text), "en-us")) == 1


def test_sentence_ends_after_an_abbreviation_are_kept():
    assert len(phonemize(expand_text("We bought pears etc. Then we left."), "en-us")) == 2


@pytest.mark.parametrize("acronym, letters", [("FBI", True), ("GPU", True), ("NASA", False), ("PIN", False)])
def test_acronyms_are_read_as_letters_or_words(acronym, letters):
    (sentence,) = phonemize(expand_text(f"the {acronym} is"), "en-us")
    stresses = "".join(sentence).count("\u02c8") + "".join(sentence).count("\u02cc")
    # letters carry a stress each (ɛf bˌiː ˈaɪ); a word has one for "the..is" span plus its own
    assert (stresses >= 3) == letters


def test_a_huge_number_is_read_digit_by_digit_not_refused():
    assert expand_text("1" * 5000) == " ".join(["one"] * 5000)
