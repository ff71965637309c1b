"""Normal forms for the keys a fact is matched on, and the default cardinality of attributes.

Two writers saying the same thing in different spellings ("PostgreSQL " vs "postgresql", "Primary
Database" vs "primary_database") must land on the same keys, or duplicates pile up side by side.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from semantic.models import Cardinality, FactCategory

_SPACE = re.compile(r"\s+")
_NON_KEY = re.compile(r"[^a-z0-9]+")
_TRAILING_PUNCT = ".,;:!?\"'`"

VALUE_KEY_MAX = 255
ATTRIBUTE_MAX = 100
ENTITY_MAX = 255

# Attributes whose cardinality writers do not have to state. A candidate's own `cardinality` wins, then
# the cardinality already stored for that entity and attribute, then this map, then the category
# default below, then single: a single-valued attribute that is really multi-valued loses values
# (superseded, still in history), the reverse piles up contradictions, so when unsure, single.
DEFAULT_CARDINALITY: dict[str, str] = {
    # single: one value at a time, a new one supersedes the old
    "name": Cardinality.SINGLE,
    "full_name": Cardinality.SINGLE,
    "email": Cardinality.SINGLE,
    "phone": Cardinality.SINGLE,
    "address": Cardinality.SINGLE,
    "location": Cardinality.SINGLE,
    "city": Cardinality.SINGLE,
    "country": Cardinality.SINGLE,
    "timezone": Cardinality.SINGLE,
    "language": Cardinality.SINGLE,
    "preferred_language": Cardinality.SINGLE,
    "role": Cardinality.SINGLE,
    "job_title": Cardinality.SINGLE,
    "employer": Cardinality.SINGLE,
    "company": Cardinality.SINGLE,
    "plan": Cardinality.SINGLE,
    "tier": Cardinality.SINGLE,
    "database": Cardinality.SINGLE,
    "database_version": Cardinality.SINGLE,
    "cloud_provider": Cardinality.SINGLE,
    "provider": Cardinality.SINGLE,
    "runs_on": Cardinality.SINGLE,
    "operating_system": Cardinality.SINGLE,
    "os": Cardinality.SINGLE,
    "version": Cardinality.SINGLE,
    "status": Cardinality.SINGLE,
    "birthday": Cardinality.SINGLE,
    "age": Cardinality.SINGLE,
    "relationship_status": Cardinality.SINGLE,
    "contact_preference": Cardinality.SINGLE,
    # multi: values accumulate
    "known_issues": Cardinality.MULTI,
    "known_issue": Cardinality.MULTI,
    "uses": Cardinality.MULTI,
    "likes": Cardinality.MULTI,
    "dislikes": Cardinality.MULTI,
    "interests": Cardinality.MULTI,
    "hobbies": Cardinality.MULTI,
    "skills": Cardinality.MULTI,
    "languages_spoken": Cardinality.MULTI,
    "tools": Cardinality.MULTI,
    "integrations": Cardinality.MULTI,
    "products": Cardinality.MULTI,
    "allergies": Cardinality.MULTI,
    "goals": Cardinality.MULTI,
    "friends": Cardinality.MULTI,
    "children": Cardinality.MULTI,
    "pets": Cardinality.MULTI,
    "visited": Cardinality.MULTI,
    "owns": Cardinality.MULTI,
    "member_of": Cardinality.MULTI,
}

CATEGORY_CARDINALITY: dict[str, str] = {FactCategory.KNOWN_ISSUES: Cardinality.MULTI}


def _clean(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def normalise_entity(entity: str) -> str:
    """Entities compare case-insensitively with collapsed whitespace: "Acme  Corp" == "acme corp"."""
    return _clean(entity).casefold()[:ENTITY_MAX]


def normalise_attribute(attribute: str) -> str:
    """A snake_case key: "Primary Database" -> "primary_database"."""
    return _NON_KEY.sub("_", _clean(attribute).casefold()).strip("_")[:ATTRIBUTE_MAX]


def value_key(value: str) -> str:
    """The comparison key of a value: case-folded, whitespace collapsed, trailing punctuation dropped.
    Long values keep a prefix and a digest so that the key fits its column and stays unique."""
    key = _clean(value).casefold().rstrip(_TRAILING_PUNCT).strip()
    if len(key) <= VALUE_KEY_MAX:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"{key[: VALUE_KEY_MAX - 33]}#{digest}"


def default_cardinality(attribute: str, category: str) -> str:
    return DEFAULT_CARDINALITY.get(attribute) or CATEGORY_CARDINALITY.get(category) or Cardinality.SINGLE
