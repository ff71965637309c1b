"""The blind update sets (evaluation/blind/updates_v1.jsonl, updates_v2.jsonl, updates_v3.jsonl): reading one,
checking its digest, and scoring what the public API answers for each pair. The command `manage.py blind_updates_eval`
drives it.

A value is matched by its content terms, case- and accent-insensitively: dates, times, amounts and
phone numbers are read into one form (`October 14`, `14 October` and `2027-10-14` are the same day;
`2pm` and `14:00` the same time; `$12k` and `12,000` the same amount), versions are kept as written
(`1.30` is not `1.3`), words lose a plural `s`, and a value that has a number, a date or a time is
held by anything that has those (`8 engineers` is held by a fact whose value is `8`). A fact holds a
value when every such term of the value is among the terms of the fact's value.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.timestamps import MONTHS

BLIND_DIR = Path(__file__).resolve().parent / "blind"
SETS = {name: BLIND_DIR / f"updates_{name}.jsonl" for name in ("v1", "v2", "v3")}
DEFAULT_SET = "v1"
SET_PATH = SETS[DEFAULT_SET]
SUMS_PATH = BLIND_DIR / "SHA256SUMS"

# A fact's value with more words than the typed value it holds plus this is a clause, not a value.
CLAUSE_SLACK_WORDS = 3

_MONTHS = MONTHS
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_NUMBER_WORDS = {
    "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60",
}  # fmt: skip
_UNITS = {
    "minute": "min", "mins": "min", "min": "min", "hour": "h", "hr": "h", "hrs": "h", "h": "h",
    "second": "sec", "secs": "sec", "sec": "sec", "wk": "week", "yr": "year", "yrs": "year", "kilo": "kg",
}  # fmt: skip
_STOPWORDS = frozenset(
    "a an the at on in of to and or for by is are be s t i my our we it its every each per from with now "
    "usd eur gbp".split()
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\b")
_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!:)")
_PHONE = re.compile(r"\+?\d[\d \-().]{5,}\d")
_TIME_AMPM = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b\.?")
_TIME_24 = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_KILO = re.compile(r"\b(\d+(?:\.\d+)?)k\b")
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
# A compound that starts with a letter and holds a digit stays one term: us-east-1, B-214, UTC+1.
_COMPOUND = re.compile(r"\b[a-z][a-z0-9]*(?:[-+][a-z0-9]+)+\b")
_TOKEN = re.compile(r"[a-z0-9_]+(?:\.[0-9]+)*|\d+(?:\.\d+)+")
_NUMERIC = re.compile(r"^(?:\d+(?:\.\d+)*|[dtp]-.+)$")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def _word(token: str) -> str:
    token = _NUMBER_WORDS.get(token, token)
    if token.isalpha() and len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        token = token[:-1]
    return _UNITS.get(token, token)


def terms(text: str) -> frozenset[str]:
    """The content terms of `text` (see the module's docstring)."""
    found: list[str] = []

    def keep(match: re.Match[str], term: str) -> str:
        found.append(term)
        return " "

    s = _fold(text)
    s = _EMAIL.sub(lambda m: keep(m, m.group(0)), s)
    s = _ISO_DATE.sub(lambda m: keep(m, f"d-{int(m.group(2)):02d}-{int(m.group(3)):02d}"), s)
    s = _DAY_MONTH.sub(lambda m: keep(m, f"d-{_MONTHS[m.group(2)]:02d}-{int(m.group(1)):02d}"), s)
    s = _MONTH_DAY.sub(lambda m: keep(m, f"d-{_MONTHS[m.group(1)]:02d}-{int(m.group(2)):02d}"), s)
    s = _THOUSANDS.sub("", s)

    def phone(m: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", m.group(0))
        return keep(m, f"p-{digits}") if len(digits) >= 7 and not re.fullmatch(r"[\d.]+", m.group(0)) else m.group(0)

    s = _PHONE.sub(phone, s)

    def ampm(m: re.Match[str]) -> str:
        hour = int(m.group(1)) % 12 + (12 if m.group(3) == "p" else 0)
        return keep(m, f"t-{hour:02d}:{int(m.group(2) or 0):02d}")

    s = _TIME_AMPM.sub(ampm, s)
    s = _TIME_24.sub(lambda m: keep(m, f"t-{int(m.group(1)):02d}:{m.group(2)}"), s)
    s = _KILO.sub(lambda m: _amount(float(m.group(1)) * 1000), s)
    s = _ORDINAL.sub(r"\1", s)
    s = _COMPOUND.sub(lambda m: keep(m, m.group(0)) if any(c.isdigit() for c in m.group(0)) else m.group(0), s)
    for token in _TOKEN.findall(s.replace("-", " ")):
        token = token.strip(".")
        if token and token not in _STOPWORDS:
            found.append(_word(token))
    return frozenset(t for t in found if t and t not in _STOPWORDS)


def _amount(value: float) -> str:
    return f" {int(value)} " if value == int(value) else f" {value} "


def required_terms(value: str) -> frozenset[str]:
    """What a text must have to hold `value`: its numbers, dates and times when it has any, else all
    its content terms."""
    all_terms = terms(value)
    numeric = frozenset(t for t in all_terms if _NUMERIC.match(t))
    return numeric or all_terms


def holds(text: str, value: str | None) -> bool:
    """Whether `text` names `value` (an empty value is held by nothing)."""
    if not value:
        return False
    needed = required_terms(value)
    return bool(needed) and needed <= terms(text)


def is_clause(fact_value: str, typed_value: str) -> bool:
    """A fact's value holding a typed value but many more words long than it: a clause."""
    return len(fact_value.split()) > len(typed_value.split()) + CLAUSE_SLACK_WORDS


# --- the set -------------------------------------------------------------------------------------


class SetDigestMismatch(Exception):
    """The set's file does not have the digest SHA256SUMS records for it."""


def set_path(name: str) -> Path:
    """The file of a set named by its version (`v1`, `v2`, `v3`), or the path given for any other set."""
    return SETS.get(name) or Path(name)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def recorded_digest(path: Path = SET_PATH, sums: Path = SUMS_PATH) -> str:
    for line in sums.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("*") == path.name:
            return parts[0]
    raise SetDigestMismatch(f"{sums.name} records no digest for {path.name}")


def verified_items(path: Path = SET_PATH, sums: Path = SUMS_PATH) -> list[dict[str, Any]]:
    """The set's items, after checking the file against its recorded digest (a changed file is refused)."""
    expected, actual = recorded_digest(path, sums), file_digest(path)
    if expected != actual:
        raise SetDigestMismatch(f"{path.name} has digest {actual}, {sums.name} records {expected}: refused")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- scoring --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FactSeen:
    """A fact of the pair's subject as GET /v1/facts?status=any answers it."""

    value: str
    status: str
    source_external_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContextItem:
    """An item of the POST /v1/context answer and where its line starts in the prompt."""

    text: str
    position: int


@dataclass
class PairScore:
    kind: str
    supersedes: bool
    covered: bool  # the first statement produced a fact holding the first value
    new_held: bool = False
    old_active: bool = False
    superseded: bool = False
    clause: bool = False
    newer_first: bool = False
    left_alone: bool = False


def score_pair(
    item: dict[str, Any], facts: Sequence[FactSeen], context: Sequence[ContextItem], *, first_external_id: str
) -> PairScore:
    """Score one pair from the subject's facts (every status) and the context served for its query."""
    old: str = item["old_value"]
    new: str = item.get("new_value") or ""
    active = [f for f in facts if f.status == "active"]
    covered = any(first_external_id in f.source_external_ids and holds(f.value, old) for f in facts)
    score = PairScore(kind=item["kind"], supersedes=bool(item["supersedes"]), covered=covered)
    score.old_active = any(holds(f.value, old) for f in active)
    if not score.supersedes:
        score.left_alone = score.old_active
        return score
    score.new_held = any(holds(f.value, new) for f in active)
    score.superseded = score.new_held and not score.old_active
    score.clause = any(
        (holds(f.value, new) and is_clause(f.value, new)) or (holds(f.value, old) and is_clause(f.value, old))
        for f in active
    )
    ordered = sorted(context, key=lambda c: c.position)
    first_new = next((c.position for c in ordered if holds(c.text, new)), None)
    first_old_only = next((c.position for c in ordered if holds(c.text, old) and not holds(c.text, new)), None)
    score.newer_first = first_new is not None and (first_old_only is None or first_new < first_old_only)
    return score


UPDATE_METRICS = (
    ("supersession_recall", "superseded"),
    ("new_value_held", "new_held"),
    ("old_value_still_active", "old_active"),
    ("value_is_clause", "clause"),
    ("context_newer_first", "newer_first"),
)
KEEP_METRICS = (("left_alone", "left_alone"),)


def aggregate(scores: Iterable[PairScore]) -> dict[str, Any]:
    """Per kind and overall, for update pairs and for pairs that must not supersede: counts and shares.
    Nothing of an item's text is in it."""
    scores = list(scores)
    out: dict[str, Any] = {}
    for group, supersedes, metrics in (("updates", True, UPDATE_METRICS), ("keeps", False, KEEP_METRICS)):
        chosen = [s for s in scores if s.supersedes is supersedes]
        kinds = sorted({s.kind for s in chosen})
        rows = [_row("overall", chosen, metrics, supersedes=supersedes)] + [
            _row(k, [s for s in chosen if s.kind == k], metrics, supersedes=supersedes) for k in kinds
        ]
        out[group] = rows
    return out


def _row(
    kind: str, scores: Sequence[PairScore], metrics: Sequence[tuple[str, str]], *, supersedes: bool
) -> dict[str, Any]:
    n = len(scores)
    covered = [s for s in scores if s.covered]
    row: dict[str, Any] = {"kind": kind, "pairs": n, "extraction_coverage": _share(len(covered), n)}
    for name, attr in metrics:
        row[name] = _share(sum(getattr(s, attr) for s in scores), n)
        row[f"{name}_if_covered"] = _share(sum(getattr(s, attr) for s in covered), len(covered))
    if supersedes:
        # Reading apart from deciding: both values were read (the first extracted, the new one held), so an
        # old value still active there is the update's decision, not the extractor's.
        both_read = [s for s in covered if s.new_held]
        row["both_read"] = _share(len(both_read), n)
        row["closed_if_both_read"] = _share(sum(not s.old_active for s in both_read), len(both_read))
    return row


def _share(count: int, total: int) -> float | None:
    return round(count / total, 3) if total else None
