"""Validation of a fact candidate: every field checked, every error reported with its JSON pointer,
the source episodes resolved within the tenant (another tenant's episode is reported as missing). Also
the test of a value that cannot stand as a fact (a fragment), shared by extraction and the router."""

from __future__ import annotations

import dataclasses
import math
import re
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from core.errors import ValidationProblem
from episodic.aliases import aliases_for
from episodic.models import Episode
from semantic.models import Cardinality, FactCategory, FactOrigin
from semantic.normalise import ATTRIBUTE_MAX, normalise_attribute, normalise_entity, value_key
from semantic.predicates import value_kind
from semantic.types import FactCandidate
from tenants.models import Tenant

# Pronouns and determiners that point at something instead of naming it.
_POINTING = frozenset(
    "it its it's this that these those them they their theirs he him his she her hers here there "
    "something anything everything nothing someone anyone everyone one ones which what who".split()
)
_FUNCTION = frozenset(
    "a an the and or but nor so yet to of in on at by for with from as into onto about than then "
    "if when while because since although though whether unless until that which who whom whose "
    "is are was were be been being am do does did have has had will would shall should can could "
    "may might must want wants need needs get gets got make makes go goes".split()
)
_NUMBER = re.compile(r"^[\W\d_]*\d[\W\d_]*(?:\s+\w+)?$")


def is_fragment(value: str, *, predicate: bool = False) -> bool:
    """A value that cannot stand as a fact: a bare number (or a number and a noun, "500 readers"),
    a pointing word ("its simplicity", "that"), a function word or auxiliary where a thing should be
    named ("want", "want more memory"), a clause left dangling on a preposition or conjunction, or
    unbalanced brackets ("13)"). A `predicate` ("went to a support group") may start with a verb."""
    text = value.strip().strip("\"'`").strip()
    words = re.findall(r"[\w'’-]+", text.lower())
    if not words:
        return True
    if _NUMBER.match(text) and not re.search(r"[a-z]{2,}\s*\d|\d\s*[a-z]{2,}\.", text.lower()):
        return True
    if words[0] in _POINTING:
        return True
    # A capitalised single word is a name ("Go", "Will"), not the function word it spells; so is one
    # with a version ("Go 1.21").
    named = text[:1].isupper() and (len(words) == 1 or re.match(r"^\S+\s+v?\d+(?:\.\d+)*$", text) is not None)
    if words[0] in _FUNCTION - {"a", "an", "the"} and not predicate and not named:
        return True
    if words[-1] in _FUNCTION - {"in", "on", "out", "up"} and len(words) > 1:
        return True
    for opening, closing in (("(", ")"), ("[", "]"), ("{", "}")):
        if text.count(opening) != text.count(closing):
            return True
    return False


# The states a project or product is in, as people say them: a closed vocabulary (the offline extractor
# reads a named thing's `status` from it). "in review" and "on hold" start with a preposition and are
# still whole values.
STATE_PHRASES = (
    r"in (?:planning|development|progress|testing|review|beta|production|maintenance)|on hold|on track|"
    r"behind schedule|ahead of schedule|launched|live|shipped|released|done|finished|completed?|cancell?ed|"
    r"paused|blocked|delayed|stalled|approved|rejected|archived|deprecated|abandoned"
)
_STATE = re.compile(rf"^(?:{STATE_PHRASES})$", re.IGNORECASE)
# An identifier (an e-mail address, a phone or account number) names a thing without being a phrase.
_IDENTIFIER = re.compile(r"^[^\s@]+@[^\s@]+\.\w+$|^\+?\d[\d\s().-]{5,}\d$")


def fact_value_is_fragment(value: str) -> bool:
    """A fact's value that is a fragment (`is_fragment`) and neither an identifier nor a state
    (STATE_PHRASES): such a fact is neither extracted (consolidation.services) nor served (router.policy)."""
    value = value.strip()
    if _IDENTIFIER.match(value) or _STATE.match(value):
        return False
    # A typed value stands alone: a count with its unit, an amount, a time or a date ("5 people",
    # "€1,350", "9:15"); its statement says what it is of.
    typed = value_kind(value)
    if typed is not None and typed.kind in {"count", "amount", "time", "date"}:
        return False
    return is_fragment(value)


# A value this long is a sentence, not the name of another entity.
OBJECT_ENTITY_MAX = 120


def allowed_categories(tenant: Tenant) -> set[str]:
    return set(FactCategory.values) | {c for c in tenant.config.extra_categories if isinstance(c, str)}


@dataclasses.dataclass
class PreparedFact:
    subject: str
    entity: str
    attribute: str
    value: str
    value_key: str
    statement: str
    category: str
    confidence: float
    cardinality: str | None
    origin: str
    object_entity: str | None
    # The value read as an entity's name (canonical), for relations: "" when the value is too long.
    value_entity: str
    episodes: list[Episode]
    observed_at: datetime

    @property
    def episode_ids(self) -> list[int]:
        return [e.id for e in self.episodes]


def fact_prepare(*, tenant: Tenant, candidate: FactCandidate) -> PreparedFact:
    errors: list[dict[str, str]] = []

    def bad(pointer: str, detail: str) -> None:
        errors.append({"pointer": pointer, "detail": detail})

    max_chars = settings.ENGRAM["MAX_TEXT_CHARS"]
    entity = normalise_entity(candidate.entity or "")
    if not entity:
        bad("/entity", "entity must not be empty.")
    attribute = normalise_attribute(candidate.attribute or "")
    if not attribute:
        bad("/attribute", "attribute must contain at least one letter or digit.")
    elif len(candidate.attribute) > ATTRIBUTE_MAX * 2:
        bad("/attribute", f"attribute must be at most {ATTRIBUTE_MAX} characters.")
    value = (candidate.value or "").strip()
    if not value:
        bad("/value", "value must not be empty.")
    elif len(value) > max_chars:
        bad("/value", f"value must be at most {max_chars} characters.")
    statement = " ".join((candidate.statement or "").split())
    if not statement:
        bad("/statement", "statement must not be empty.")
    elif len(statement) > max_chars:
        bad("/statement", f"statement must be at most {max_chars} characters.")
    if candidate.category not in allowed_categories(tenant):
        bad("/category", f"unknown category {candidate.category!r}; allowed: {sorted(allowed_categories(tenant))}.")
    confidence = candidate.confidence
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not math.isfinite(confidence):
        bad("/confidence", "confidence must be a number between 0 and 1.")
        confidence = 0.0
    elif not 0.0 <= confidence <= 1.0:
        bad("/confidence", "confidence must be between 0 and 1.")
    if candidate.cardinality is not None and candidate.cardinality not in Cardinality.values:
        bad("/cardinality", f"cardinality must be one of {Cardinality.values}.")
    if candidate.origin not in FactOrigin.values:
        bad("/origin", f"origin must be one of {FactOrigin.values}.")
    # Exactly as written: a subject id is never trimmed or folded (DESIGN.md invariant 12).
    subject = candidate.subject or ""
    if len(subject) > 255:
        bad("/subject", "subject must be at most 255 characters.")
    elif subject and not subject.strip():
        bad("/subject", "subject must not be whitespace only.")
    object_entity = normalise_entity(candidate.object_entity) if candidate.object_entity else None

    episodes: list[Episode] = []
    ids = list(candidate.source_episode_ids or [])
    if ids:
        found = {
            e.id: e
            for e in Episode.objects.filter(id__in=[i for i in ids if isinstance(i, int)]).only(
                "id", "subject", "occurred_at"
            )
        }
        subjects = {e.subject for e in found.values()}
        if not subject and len(subjects) == 1:
            subject = subjects.pop()
        for index, episode_id in enumerate(ids):
            episode = found.get(episode_id) if isinstance(episode_id, int) else None
            if episode is None:
                # Another tenant's episode is reported exactly like a missing one.
                bad(f"/source_episode_ids/{index}", f"episode {episode_id} does not exist.")
            elif episode.subject != subject:
                bad(f"/source_episode_ids/{index}", f"episode {episode_id} is about another subject.")
            elif episode not in episodes:
                episodes.append(episode)
    if errors:
        raise ValidationProblem("; ".join(f"{e['pointer']}: {e['detail']}" for e in errors[:5]), errors=errors)

    # Another name of an entity files the fact under the entity's canonical name (episodic.aliases):
    # the subject's learned aliases and the tenant's operator ones.
    value_name = normalise_entity(value) if len(value) <= OBJECT_ENTITY_MAX else ""
    names = aliases_for(tenant=tenant, names=[entity, object_entity or "", value_name], subject=subject or None)
    entity = names.canonical(entity)
    object_entity = names.canonical(object_entity) if object_entity else None

    observed_at = candidate.observed_at
    if observed_at is not None and timezone.is_naive(observed_at):
        observed_at = timezone.make_aware(observed_at, timezone.get_current_timezone())
    if observed_at is None:
        observed_at = max((e.occurred_at for e in episodes), default=None) or timezone.now()
    return PreparedFact(
        subject=subject,
        entity=entity,
        attribute=attribute,
        value=value,
        value_key=value_key(value),
        statement=statement,
        category=candidate.category,
        confidence=float(confidence),
        cardinality=candidate.cardinality,
        origin=candidate.origin,
        object_entity=object_entity,
        value_entity=names.canonical(value_name) if value_name else "",
        episodes=episodes,
        observed_at=observed_at,
    )
