"""Values compared as values: two spellings of one value are the same value; two values that differ
in what they state (a number, a version, a date, an address, an amount, a name) are never one.

A value is read as a sequence of tokens, each typed: e-mail addresses, URLs, phone numbers, dates,
amounts, versions and numbers, each in a canonical form, and the remaining words, case-folded, without
punctuation and articles. `values_same` holds when the two sequences are equal: "+44 20 7946 0001" =
"+442079460001", "$5,000" = "5000 USD", "2025-06-01" = "1 June 2025", "March 14th" = "March 14",
"https://www.Acme.example/docs/" = "acme.example/docs", "the Pro plan" = "Pro plan", "twelve" = "12".
`values_conflict` holds when the typed tokens or the proper names of the two values differ: then
they are two values whatever the similarity of their statements ("PostgreSQL 15" and "16", "555-0134"
and "555-0143", "Tom Baker" and "Tom Becker"). The rules are grammar and formats only; docs/semantic.md
gives them.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from decimal import Decimal, InvalidOperation
from pathlib import Path

from core import lexicon
from core.timestamps import MONTHS

Token = tuple[str, str]

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_NUMBER_WORDS = {
    word: index
    for index, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_TENS_WORDS = {
    word: 10 * index for index, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)
}
# A number written in words: "thirty-four" and "twenty one" are one number, not a count of "four"s.
NUMBER_IN_WORDS = (
    rf"(?:{'|'.join(_TENS_WORDS)})(?:[- ](?:{'|'.join(list(_NUMBER_WORDS)[1:10])})(?![\w-]))?"
    rf"|{'|'.join(sorted(_NUMBER_WORDS, key=len, reverse=True))}"
)
_TENS_IN_WORDS = re.compile(
    rf"(?<![\w-])(?P<tens>{'|'.join(_TENS_WORDS)})(?:[- ](?P<ones>{'|'.join(list(_NUMBER_WORDS)[1:10])}))?(?![\w-])",
    re.I,
)


def number_in_words(text: str) -> int | None:
    """The number `text` writes in words ("thirty-four": 34, "twelve": 12), or None."""
    word = text.strip().casefold()
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    m = _TENS_IN_WORDS.fullmatch(word)
    if m is None:
        return None
    return _TENS_WORDS[m.group("tens").casefold()] + (
        _NUMBER_WORDS[m.group("ones").casefold()] if m.group("ones") else 0
    )


_ORDINAL_WORDS = {
    word: index
    for index, word in enumerate(
        "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split()
    )
}
_CURRENCIES = {
    "$": "usd",
    "us$": "usd",
    "usd": "usd",
    "dollar": "usd",
    "dollars": "usd",
    "€": "eur",
    "eur": "eur",
    "euro": "eur",
    "euros": "eur",
    "£": "gbp",
    "gbp": "gbp",
    "pound": "gbp",
    "pounds": "gbp",
    "¥": "jpy",
    "jpy": "jpy",
    "yen": "jpy",
    "chf": "chf",
    "cad": "cad",
    "aud": "aud",
    "inr": "inr",
    "₹": "inr",
}
_SYMBOL = r"(?:us\$|[$€£¥₹])"
_CODE = r"(?:usd|eur|gbp|jpy|chf|cad|aud|inr|dollars?|euros?|pounds?|yen)"
_AMOUNT_NUMBER = r"\d{1,3}(?:[,\s]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_SCALE = r"(?:k|m|bn|million|billion|thousand)?"
_SCALES = {"": 1, "k": 1000, "thousand": 1000, "m": 10**6, "million": 10**6, "bn": 10**9, "billion": 10**9}

# Order matters: the first kind that claims a span keeps it.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("email", re.compile(r"(?:mailto:)?(?P<x>[\w.%+-]+@[\w-]+(?:\.[\w-]+)+)", re.IGNORECASE)),
    (
        "url",
        re.compile(
            r"(?P<x>(?:[a-z][a-z0-9+.-]*://|www\.)[^\s,;]+|[a-z0-9-]+(?:\.[a-z0-9-]+)+\.[a-z]{2,}(?:/[^\s,;]*)?"
            r"|[a-z0-9-]+\.[a-z]{2,}/[^\s,;]*)",
            re.IGNORECASE,
        ),
    ),
    ("date", re.compile(r"(?P<iso>\d{4}-\d{1,2}-\d{1,2})", re.IGNORECASE)),
    (
        "date",
        re.compile(
            rf"\b(?P<m>{_MONTH})\.?\s+(?P<d>\d{{1,2}}){_ORD}\b(?:,?\s+(?P<y>\d{{4}})\b)?"
            rf"|\b(?P<d2>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<m2>{_MONTH})\b\.?(?:,?\s+(?P<y2>\d{{4}})\b)?",
            re.IGNORECASE,
        ),
    ),
    (
        "amount",
        re.compile(
            rf"(?P<c>{_SYMBOL})\s?(?P<n>{_AMOUNT_NUMBER})\s?(?P<s>{_SCALE})\b"
            rf"|\b(?P<c2>{_CODE})\s?(?P<n2>{_AMOUNT_NUMBER})\s?(?P<s2>{_SCALE})\b"
            rf"|(?<![\w.])(?P<n3>{_AMOUNT_NUMBER})\s?(?P<s3>{_SCALE})\s?(?P<c3>{_CODE})\b",
            re.IGNORECASE,
        ),
    ),
    ("phone", re.compile(r"(?<![\w.])(?P<x>\+?\(?\d[\d\s().-]{5,}\d)(?![\w])")),
    ("version", re.compile(r"(?<![\w.])v?(?P<x>\d+(?:\.\d+)+)(?![\w])", re.IGNORECASE)),
    (
        "number",
        re.compile(
            rf"(?:(?P<sign>[+-])|(?<![\w.,]))(?P<x>\d{{1,3}}(?:,\d{{3}})+|\d+)(?P<o>{_ORD})(?P<s>k|m|bn)?(?![\w])",
            re.IGNORECASE,
        ),
    ),
    ("number", re.compile(r"(?<![\w.])v(?P<x>\d+)(?![\w.])", re.IGNORECASE)),
]
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_ARTICLES = frozenset({"a", "an", "the"})
# Said of the value, not part of it: "now PST", "currently Pro".
_LEADING_ADVERBS = frozenset({"now", "currently", "still", "presently"})
MIN_PHONE_DIGITS = 7


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(re.sub(r"[,\s]", "", text))
    except InvalidOperation:
        return None


def _plain(number: Decimal) -> str:
    text = format(number.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _typed(kind: str, m: re.Match[str]) -> Token | None:
    """The canonical token of a match, or None when the span is not of this kind after all."""
    groups = {k: v for k, v in m.groupdict().items() if v is not None}
    if kind == "email":
        return kind, groups["x"].casefold()
    if kind == "url":
        url = re.sub(r"^[a-z][a-z0-9+.-]*://", "", groups["x"].rstrip(".").strip(), flags=re.IGNORECASE)
        host, slash, path = url.partition("/")
        host = host.casefold().removeprefix("www.")
        return kind, (host + slash + path).rstrip("/")
    if kind == "date":
        if "iso" in groups:
            year, month, day = (int(p) for p in groups["iso"].split("-"))
            return kind, f"{year:04d}-{month:02d}-{day:02d}"
        month_name = (groups.get("m") or groups.get("m2") or "").casefold()
        day = int(groups.get("d") or groups.get("d2") or 0)
        year_text = groups.get("y") or groups.get("y2")
        if not 1 <= day <= 31:
            return None
        return kind, f"{int(year_text):04d}-{MONTHS[month_name]:02d}-{day:02d}" if year_text else (
            f"--{MONTHS[month_name]:02d}-{day:02d}"
        )
    if kind == "amount":
        currency = (groups.get("c") or groups.get("c2") or groups.get("c3") or "").casefold()
        number = _decimal(groups.get("n") or groups.get("n2") or groups.get("n3") or "")
        scale = (groups.get("s") or groups.get("s2") or groups.get("s3") or "").casefold()
        if number is None:
            return None
        return kind, f"{_CURRENCIES.get(currency, currency)}:{_plain(number * _SCALES.get(scale, 1))}"
    if kind == "phone":
        text = groups["x"]
        digits = re.sub(r"\D", "", text)
        if len(digits) < MIN_PHONE_DIGITS:
            return None
        return kind, ("+" if text.startswith("+") else "") + digits
    if kind == "version":
        return kind, groups["x"]
    if kind == "number":
        number = _decimal(groups["x"])
        if number is None:
            return None
        sign = "-" if groups.get("sign") == "-" else ""
        return kind, sign + _plain(number * _SCALES.get((groups.get("s") or "").casefold(), 1))
    return None


def value_tokens(value: str) -> list[Token]:
    """The value as (kind, canonical) tokens in their order: typed ones, then ("word", w) for the rest."""
    text = _TENS_IN_WORDS.sub(lambda m: str(number_in_words(m.group(0))), unicodedata.normalize("NFKC", value))
    found: list[tuple[int, int, Token]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if any(start < e and s < end for s, e in taken):
                continue
            token = _typed(kind, m)
            if token is None:
                continue
            found.append((start, end, token))
            taken.append((start, end))
    cursor = 0
    pieces: list[tuple[int, Token]] = [(start, token) for start, _end, token in found]
    for start, end in [*sorted(taken), (len(text), len(text))]:
        for w in _WORD.finditer(text, cursor, start):
            word = w.group(0).casefold().replace("’", "'")
            if word in _NUMBER_WORDS:
                pieces.append((w.start(), ("number", str(_NUMBER_WORDS[word]))))
            elif word in _ORDINAL_WORDS:
                pieces.append((w.start(), ("number", str(_ORDINAL_WORDS[word]))))
            elif word not in _ARTICLES:
                pieces.append((w.start(), ("word", word)))
        cursor = max(cursor, end)
    tokens = [token for _start, token in sorted(pieces, key=lambda p: p[0])]
    while len(tokens) > 1 and tokens[0] in {("word", a) for a in _LEADING_ADVERBS}:
        tokens = tokens[1:]
    return tokens


def values_same(a: str, b: str) -> bool:
    """One value written two ways (case, spacing, punctuation, articles, number and date formats)."""
    return a.strip() == b.strip() or value_tokens(a) == value_tokens(b)


_FUNCTION_WORDS = Path(__file__).resolve().parent / "data" / "function_words.txt"
# Values of at most this many words are states or names, not clauses that may paraphrase each other.
SHORT_WORDS = 3
# A value of at most this many words is a name or a name and its head noun ("Tuesdays", "Georgian food"),
# not a sentence: its first word's capital is the name's.
NAMED_WORDS = 2


def _names(value: str) -> Counter[str]:
    """Proper names: words written with a capital, except a first word that is only sentence-case in a
    value longer than NAMED_WORDS words."""
    words = _WORD.findall(unicodedata.normalize("NFKC", value))
    sentence = len(words) > NAMED_WORDS
    return Counter(
        w.casefold()
        for i, w in enumerate(words)
        if any(ch.isupper() for ch in w) and not (sentence and i == 0 and w[0].isupper() and w[1:].islower())
    )


def values_conflict(a: str, b: str) -> bool:
    """Two different values: their typed tokens (numbers, versions, dates, addresses, phone numbers,
    URLs, amounts) or their proper names differ. Statements of such values are never duplicates."""
    if values_same(a, b):
        return False
    typed_a = Counter(t for t in value_tokens(a) if t[0] != "word")
    typed_b = Counter(t for t in value_tokens(b) if t[0] != "word")
    if typed_a != typed_b or _names(a) != _names(b):
        return True
    # Two states said with a word or two and no word in common ("in progress", "finished"): two values;
    # words of grammar are none in common ("9am to 5pm", "10am to 6pm").
    grammar = lexicon.words(_FUNCTION_WORDS)
    words_a = {t for t in value_tokens(a) if t[0] == "word" and t[1] not in grammar}
    words_b = {t for t in value_tokens(b) if t[0] == "word" and t[1] not in grammar}
    short = 0 < len(words_a) <= SHORT_WORDS and 0 < len(words_b) <= SHORT_WORDS
    # ... nor two of two words that share a head but each name a word the other does not ("half
    # marathon", "full marathon"; "oat milk", "almond milk"): one word more ("coffee", "black coffee")
    # may restate, and longer values ("likes hiking in the mountains") may paraphrase.
    paired = len(words_a) == len(words_b) == 2 and bool(words_a - words_b)
    return short and (not words_a & words_b or paired)


def value_spans(text: str) -> list[tuple[int, int, str]]:
    """The typed tokens of `text` (e-mail addresses, URLs, dates, amounts, phone numbers, versions,
    numbers) as (start, end, kind) spans, in order; words are not among them."""
    found: list[tuple[int, int, str]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if any(start < e and s < end for s, e, _ in found) or _typed(kind, m) is None:
                continue
            found.append((start, end, kind))
    return sorted(found)
