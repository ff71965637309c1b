"""Other names of entities, per tenant: "mel" for "melanie", "aws" for "amazon web services".

An alias maps a name to the canonical name of an entity. Operators set aliases for the whole tenant
(the API and the admin); consolidation learns them from co-reference within one turn
(episodic.extraction.coreferences) for the subject whose conversation showed it. Which alias holds:
- an operator's alias, whoever asks;
- otherwise, for a subject, the alias learned from that subject's conversations (the first one
  learned: a learned alias is never replaced by another learned one);
- otherwise, without a subject, a learned alias on which every subject that taught one agrees.
Learned aliases stay with their subject because a nickname is about one conversation's people: "Sam"
in one subject's conversations need not be the "Samantha" of another's.

The table lives here because episodic is the lowest layer that reads it (entities of new episodes get
their canonical names, and the overlap channel of episode search matches an entity by any of its
names). Semantic memory reads it through these functions for fact merge and search; setting an alias
there also moves the facts filed under it (semantic.aliases).
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Literal

from django.db import IntegrityError, connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from core.db import fetch_prepared
from core.errors import Conflict, NotFound, ValidationProblem
from episodic.models import AliasSource, EntityAlias
from tenants.locks import tenant_xact_lock
from tenants.models import Tenant

ALIAS_MAX = 255
_SPACE = re.compile(r"\s+")


def alias_key(name: str) -> str:
    """The normal form of an entity name, as semantic.normalise.normalise_entity makes it: NFKC,
    whitespace collapsed, case-folded."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", name)).strip().casefold()[:ALIAS_MAX]


@dataclasses.dataclass(frozen=True)
class _Rule:
    alias: str
    entity: str
    source: str
    subject: str


def _resolve(rules: Iterable[_Rule], subject: str | None) -> dict[str, str]:
    by_alias: dict[str, list[_Rule]] = defaultdict(list)
    for rule in rules:
        by_alias[rule.alias].append(rule)
    out: dict[str, str] = {}
    for alias, found in by_alias.items():
        operator = [r for r in found if r.source == AliasSource.OPERATOR]
        if operator:
            out[alias] = operator[0].entity
        elif subject:
            mine = [r for r in found if r.subject == subject]
            if mine:
                out[alias] = mine[0].entity
        else:
            targets = {r.entity for r in found}
            if len(targets) == 1:
                out[alias] = targets.pop()
    return out


@dataclasses.dataclass(frozen=True)
class Aliases:
    """The aliases that hold for one reader (a subject, or none), over the names it asked about."""

    canonical_of: dict[str, str]

    def canonical(self, name: str) -> str:
        """The entity's canonical name (the name itself, normalised, when it is no alias)."""
        key = alias_key(name)
        return self.canonical_of.get(key, key)

    def is_known(self, name: str) -> bool:
        """Whether the name is an alias or the canonical name of one."""
        key = alias_key(name)
        return key in self.canonical_of or key in self.canonical_of.values()

    def group(self, name: str) -> list[str]:
        """Every name of the entity: its canonical name first, then its aliases (sorted)."""
        canonical = self.canonical(name)
        return [canonical, *sorted(a for a, e in self.canonical_of.items() if e == canonical and a != canonical)]


NO_ALIASES = Aliases(canonical_of={})

# The names asked about, the canonical names they resolve to, the other aliases of those, and the rules
# of those aliases (an operator may have taken one of them elsewhere): one statement.
_GROUP_SQL = """
SELECT alias, entity, source, subject FROM episodic_entityalias
WHERE tenant_id = %(tenant)s AND (source = 'operator' OR %(subject)s::text IS NULL OR subject = %(subject)s)
  AND alias IN (
    SELECT unnest(%(names)s::varchar[])
    UNION
    SELECT s.alias FROM episodic_entityalias s
    WHERE s.tenant_id = %(tenant)s AND s.entity IN (
        SELECT unnest(%(names)s::varchar[])
        UNION
        SELECT d.entity FROM episodic_entityalias d WHERE d.tenant_id = %(tenant)s AND d.alias = ANY(%(names)s)
    )
  )
"""

_DIRECT_SQL = """
SELECT alias, entity, source, subject FROM episodic_entityalias
WHERE tenant_id = %(tenant)s AND alias = ANY(%(names)s)
  AND (source = 'operator' OR %(subject)s::text IS NULL OR subject = ANY(%(subjects)s))
"""


def _keys(names: Iterable[str]) -> list[str]:
    return sorted({key for key in (alias_key(n) for n in names if n) if key})


def aliases_for(*, tenant: Tenant, names: Iterable[str], subject: str | None = None, groups: bool = False) -> Aliases:
    """The aliases among `names` that hold for `subject` (see the module docstring); with `groups`,
    also every other alias of the entities they name (for Aliases.group). One query; none when there
    are no names."""
    keys = _keys(names)
    if not keys:
        return NO_ALIASES
    reader = subject or None
    params: dict[str, Any] = {"tenant": tenant.id, "names": keys, "subject": reader, "subjects": [reader or ""]}
    rules = [_Rule(*row) for row in fetch_prepared(_GROUP_SQL if groups else _DIRECT_SQL, params)]
    return Aliases(canonical_of=_resolve(rules, reader))


def canonical_entities(*, tenant: Tenant, entities_by_subject: Sequence[tuple[str, Sequence[str]]]) -> list[list[str]]:
    """For each (subject, entity names): the canonical names of those that are aliases for that
    subject, in order. One query for the whole batch (episode ingestion)."""
    keys = _keys(name for _, names in entities_by_subject for name in names)
    if not keys:
        return [[] for _ in entities_by_subject]
    subjects = sorted({subject for subject, names in entities_by_subject if names})
    with connection.cursor() as cursor:
        cursor.execute(_DIRECT_SQL, {"tenant": tenant.id, "names": keys, "subject": "", "subjects": subjects or [""]})
        rules = [_Rule(*row) for row in cursor.fetchall()]
    views: dict[str, dict[str, str]] = {}
    out: list[list[str]] = []
    for subject, names in entities_by_subject:
        view = views.get(subject)
        if view is None:
            view = views[subject] = _resolve(rules, subject or None)
        out.append([view[key] for key in (alias_key(n) for n in names) if key in view])
    return out


# --- the table, for operators and consolidation --------------------------------------------------------


def has_aliases(tenant: Tenant) -> bool:
    """Whether the tenant has ever had an alias (Tenant.has_entity_aliases): the read paths skip the
    lookup when not. Write paths resolve regardless, since they may hold a tenant loaded earlier."""
    return bool(tenant.has_entity_aliases)


def _mark(tenant: Tenant) -> None:
    if not tenant.has_entity_aliases:
        Tenant.objects.filter(pk=tenant.pk).update(has_entity_aliases=True)
        tenant.has_entity_aliases = True


def entity_alias_list(
    *,
    tenant: Tenant,
    entity: str | None = None,
    alias: str | None = None,
    source: str | None = None,
    subject: str | None = None,
) -> QuerySet[EntityAlias]:
    """The tenant's alias rows, newest first; `entity` and `alias` match their normal forms."""
    qs = EntityAlias.objects.all()
    if entity:
        qs = qs.filter(entity=alias_key(entity))
    if alias:
        qs = qs.filter(alias=alias_key(alias))
    if source:
        qs = qs.filter(source=source)
    if subject is not None:
        qs = qs.filter(subject=subject)
    return qs.order_by("-created_at", "-id")


def entity_alias_get(*, tenant: Tenant, alias_id: int) -> EntityAlias:
    # A larger id than a bigint holds is simply not found.
    found = EntityAlias.objects.filter(id=alias_id).first() if 0 < alias_id < 2**63 else None
    if found is None:
        raise NotFound(f"Alias {alias_id} does not exist.")
    return found


def _names(alias: str, entity: str) -> tuple[str, str]:
    errors: list[dict[str, str]] = []
    key, target = alias_key(alias or ""), alias_key(entity or "")
    if not key:
        errors.append({"pointer": "/alias", "detail": "alias must not be empty."})
    if not target:
        errors.append({"pointer": "/entity", "detail": "entity must not be empty."})
    elif key == target:
        errors.append({"pointer": "/entity", "detail": "an alias must name another entity than itself."})
    if errors:
        raise ValidationProblem("; ".join(f"{e['pointer']}: {e['detail']}" for e in errors), errors=errors)
    return key, target


def entity_alias_check(*, tenant: Tenant, alias: str, entity: str) -> tuple[str, str]:
    """The normal forms of an operator's alias and its entity, or the problem with them: an empty
    name or an alias of itself (400), an entity that is itself an operator's alias (409)."""
    key, target = _names(alias, entity)
    onward = EntityAlias.objects.filter(alias=target, source=AliasSource.OPERATOR).first()
    if onward is not None:
        raise Conflict(f"{target!r} is itself an alias of {onward.entity!r}; name that entity instead.")
    return key, target


AliasAction = Literal["created", "updated", "unchanged"]


@transaction.atomic
def entity_alias_put(
    *, tenant: Tenant, alias: str, entity: str, created_by: str = ""
) -> tuple[EntityAlias, AliasAction]:
    """An operator's alias, for the whole tenant; it replaces the operator's earlier choice for the
    same name and wins over every learned one. Aliases stay one step deep: pointing at a name that is
    itself an operator's alias is a conflict, and the aliases that pointed at the new alias now point
    at its entity (one that would name itself is dropped)."""
    tenant_xact_lock(tenant.id, "entity_alias")
    key, target = entity_alias_check(tenant=tenant, alias=alias, entity=entity)
    rows = EntityAlias.objects.all()
    now = timezone.now()
    existing = rows.filter(alias=key, source=AliasSource.OPERATOR).first()
    action: AliasAction
    if existing is None:
        row = EntityAlias.objects.create(
            tenant=tenant,
            alias=key,
            entity=target,
            source=AliasSource.OPERATOR,
            created_by=created_by[:255],
            created_at=now,
            updated_at=now,
        )
        _mark(tenant)
        action = "created"
    elif existing.entity == target:
        return existing, "unchanged"
    else:
        existing.entity, existing.updated_at = target, now
        existing.save(update_fields=["entity", "updated_at"])
        row, action = existing, "updated"
    pointing = rows.filter(entity=key)
    pointing.filter(alias=target).delete()
    pointing.update(entity=target, updated_at=now)
    return row, action


@transaction.atomic
def entity_alias_learn(
    *, tenant: Tenant, alias: str, entity: str, subject: str, episode_id: int | None = None
) -> EntityAlias | None:
    """Record an alias learned from the subject's conversation, conservatively: nothing when the name
    already resolves for this subject (an operator's alias or an earlier learned one wins), when the
    name is itself the canonical name of other aliases, or when it would name itself. The entity is
    taken through its own alias first. Returns the new row, or None."""
    if not subject:
        return None
    key, target = alias_key(alias or ""), alias_key(entity or "")
    if not key or not target:
        return None
    tenant_xact_lock(tenant.id, "entity_alias")
    known = aliases_for(tenant=tenant, names=[key, target], subject=subject, groups=True)
    target = known.canonical(target)
    if key == target or key in known.canonical_of or key in known.canonical_of.values():
        return None
    now = timezone.now()
    try:
        with transaction.atomic():
            row = EntityAlias.objects.create(
                tenant=tenant,
                alias=key,
                entity=target,
                source=AliasSource.LEARNED,
                subject=subject,
                source_episode_id=episode_id,
                created_by="consolidation",
                created_at=now,
                updated_at=now,
            )
    except IntegrityError:
        # Learned concurrently for the same subject: the first one stays.
        return None
    _mark(tenant)
    return row


def entity_alias_delete(*, tenant: Tenant, alias_id: int) -> EntityAlias:
    """Remove an alias (an operator's or a learned one); facts already merged under its entity stay
    there. A learned alias may be learned again from later conversations."""
    row = entity_alias_get(tenant=tenant, alias_id=alias_id)
    EntityAlias.objects.filter(id=row.id).delete()
    if not EntityAlias.objects.exists():
        Tenant.objects.filter(pk=tenant.pk).update(has_entity_aliases=False)
        tenant.has_entity_aliases = False
    return row


def learned_aliases_q(*, subject: str, episode_ids: Collection[int]) -> Q:
    """The learned aliases that are a subject's data: taught by the subject's conversations (or its
    episodes); the subject id compared exactly. An alias another subject's conversation taught is that
    subject's, whatever it names. An operator's alias is the tenant's setting, not derived from any
    subject."""
    taught = Q(subject=subject) | Q(source_episode_id__in=list(episode_ids) or [-1])
    return Q(source=AliasSource.LEARNED) & taught
