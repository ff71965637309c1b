"""Decay, forgetting and archiving: the slow daily work on what memory already holds.

- Decay: a fact's confidence is its confidence when last confirmed, halved every half-life of its
  category (TenantSettings.decay_half_life_days). The anchor is kept in FactDecayAnchor, so the job can
  run late or twice and still give the same value; a confirmation moves the anchor (restores it).
- Forgetting: a fact not confirmed within `forget_after_days`, or decayed below `confidence_floor`,
  expires through `semantic.services.fact_expire` (validity closed, history kept, never served).
- Archiving: episodes older than `retention_days` move to gzip JSONL in `storages["archive"]`, one
  file per tenant and month (rewritten, never appended in place), with an ArchiveManifest row, and
  leave the hot table. The file is written before the rows are deleted in the same transaction; a
  crash between the two leaves an orphan file, never a lost episode.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from consolidation.models import ArchiveManifest, FactDecayAnchor
from episodic.models import Episode, Passage, PassageSentence, Session, allow_episode_deletion
from episodic.passages import passages_create
from procedural.models import ProcedureOutcome
from semantic.models import ActorType, Fact, FactSource, FactStatus
from semantic.services import fact_expire, facts_decay
from semantic.types import Actor
from tenants.locks import tenant_xact_lock
from tenants.models import Tenant
from tenants.scope import tenant_scope

DECAY_CHUNK = 1000
ARCHIVE_CHUNK = 5000
# A decay smaller than this is not worth a FactChange row.
MIN_DECAY_STEP = 0.01

EPISODE_FIELDS = ("id", *Episode.RECORD_FIELDS)


@dataclasses.dataclass
class DecayReport:
    examined: int = 0
    decayed: int = 0
    expired_unconfirmed: int = 0
    expired_below_floor: int = 0


def decayed_confidence(*, anchor_confidence: float, anchor_at: datetime, half_life_days: float, now: datetime) -> float:
    age_days = max(0.0, (now - anchor_at).total_seconds() / 86400)
    return float(anchor_confidence * 0.5 ** (age_days / max(half_life_days, 1e-6)))


def facts_decay_and_forget(*, tenant: Tenant, now: datetime | None = None) -> DecayReport:

    now = now or timezone.now()
    config = tenant.config
    half_lives = config.decay_half_life_days
    default_half_life = half_lives.get("other", 90.0)
    forget_before = now - timedelta(days=config.forget_after_days)
    actor = Actor(type=ActorType.SYSTEM, id="consolidation:decay", reason="")
    report = DecayReport()
    last_id: uuid.UUID | None = None
    while True:
        with tenant_scope(tenant):
            qs = Fact.objects.filter(status=FactStatus.ACTIVE).order_by("id")
            if last_id is not None:
                qs = qs.filter(id__gt=last_id)
            facts = list(qs.only("id", "category", "confidence", "last_confirmed_at")[:DECAY_CHUNK])
            if not facts:
                return report
            last_id = facts[-1].id
            anchors = {a.fact_id: a for a in FactDecayAnchor.objects.filter(fact_id__in=[f.id for f in facts])}
            new_anchors: list[FactDecayAnchor] = []
            moved: list[FactDecayAnchor] = []
            decays: dict[uuid.UUID, float] = {}
            stale: list[uuid.UUID] = []
            floor: list[uuid.UUID] = []
            for fact in facts:
                report.examined += 1
                anchor = anchors.get(fact.id)
                if anchor is None:
                    anchor = FactDecayAnchor(
                        tenant=tenant,
                        fact_id=fact.id,
                        anchor_confidence=fact.confidence,
                        anchor_at=fact.last_confirmed_at,
                    )
                    new_anchors.append(anchor)
                elif anchor.anchor_at != fact.last_confirmed_at:
                    # Confirmed since the last pass: decay starts again from today's confidence.
                    anchor.anchor_confidence, anchor.anchor_at, anchor.updated_at = (
                        fact.confidence,
                        fact.last_confirmed_at,
                        now,
                    )
                    moved.append(anchor)
                if fact.last_confirmed_at < forget_before:
                    stale.append(fact.id)
                    continue
                target = decayed_confidence(
                    anchor_confidence=anchor.anchor_confidence,
                    anchor_at=anchor.anchor_at,
                    half_life_days=half_lives.get(fact.category, default_half_life),
                    now=now,
                )
                if target < config.confidence_floor:
                    floor.append(fact.id)
                elif fact.confidence - target >= MIN_DECAY_STEP:
                    decays[fact.id] = round(target, 4)
            FactDecayAnchor.objects.bulk_create(new_anchors)
            FactDecayAnchor.objects.bulk_update(moved, ["anchor_confidence", "anchor_at", "updated_at"])
            report.decayed += facts_decay(
                tenant=tenant,
                confidences=decays,
                actor=dataclasses.replace(actor, reason="confidence decays with time since the last confirmation"),
            )
            for fact_ids, reason in (
                (stale, f"not confirmed in {config.forget_after_days} days"),
                (floor, f"confidence decayed below {config.confidence_floor}"),
            ):
                for fact_id in fact_ids:
                    fact_expire(tenant=tenant, fact_id=fact_id, actor=dataclasses.replace(actor, reason=reason), at=now)
            report.expired_unconfirmed += len(stale)
            report.expired_below_floor += len(floor)


# --- archiving -----------------------------------------------------------------------------------


@dataclasses.dataclass
class ArchiveReport:
    episodes: int = 0
    files: int = 0
    months: list[str] = dataclasses.field(default_factory=list)


def _month(dt: datetime) -> str:
    return f"{dt.year:04d}-{dt.month:02d}"


def episode_row(episode: Episode, session_external_id: str, fact_ids: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {f: getattr(episode, f) for f in EPISODE_FIELDS}
    row["occurred_at"] = episode.occurred_at.isoformat()
    row["created_at"] = episode.created_at.isoformat()
    row["session"] = session_external_id
    # Provenance survives archiving: the facts this episode supported when it left the hot table.
    row["fact_ids"] = fact_ids
    return row


def read_archive(path: str) -> list[dict[str, Any]]:
    storage = storages["archive"]
    if not storage.exists(path):
        return []
    with storage.open(path, "rb") as fh:
        data = gzip.decompress(fh.read())
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def iter_archive_rows(*, tenant: Tenant, subject: str | None = None) -> Iterator[dict[str, Any]]:
    with tenant_scope(tenant):
        manifests = list(ArchiveManifest.objects.order_by("month"))
    for manifest in manifests:
        if subject is not None and subject not in manifest.subjects:
            continue
        for row in read_archive(manifest.path):
            if subject is None or row["subject"] == subject:
                yield row


def write_archive(
    *, tenant: Tenant, month: str, rows: Iterable[dict[str, Any]], manifest: ArchiveManifest | None
) -> ArchiveManifest | None:
    """Write the month's file anew (under a fresh name) and point the manifest at it. Returns the
    manifest, or None when no rows are left (file and manifest removed). Call inside the tenant scope."""
    storage = storages["archive"]
    ordered = sorted(rows, key=lambda r: r["id"])
    old_path = manifest.path if manifest else None
    if not ordered:
        if manifest is not None:
            manifest.delete()
            transaction.on_commit(lambda: storage.delete(old_path) if old_path else None)
        return None
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz:
        for row in ordered:
            gz.write((json.dumps(row, sort_keys=True, default=str) + "\n").encode())
    payload = buffer.getvalue()
    path = storage.save(f"{tenant.id}/episodes/{month}/{uuid.uuid4().hex}.jsonl.gz", ContentFile(payload))
    now = timezone.now()
    manifest = manifest or ArchiveManifest(tenant=tenant, month=month, created_at=now)
    manifest.path = path
    manifest.episode_count = len(ordered)
    manifest.bytes = len(payload)
    manifest.sha256 = hashlib.sha256(payload).hexdigest()
    manifest.subjects = sorted({r["subject"] for r in ordered})
    manifest.first_occurred_at = parse_datetime(min(r["occurred_at"] for r in ordered))
    manifest.last_occurred_at = parse_datetime(max(r["occurred_at"] for r in ordered))
    manifest.updated_at = now
    manifest.save()
    if old_path and old_path != path:
        transaction.on_commit(lambda: storage.delete(old_path))
    return manifest


def episodes_delete(*, tenant: Tenant, episode_ids: Collection[int]) -> int:
    """Delete episodes with what depends on them: their passages (and their sentences) and fact sources go, outcomes keep
    their row without the episode. Every statement names the tenant; Django's cascade would select and
    delete the dependents by episode id alone. Call inside the tenant scope. Returns the episodes deleted."""
    ids = list(episode_ids)
    if not ids:
        return 0
    with allow_episode_deletion():
        PassageSentence.objects.filter(episode_id__in=ids).delete()
        Passage.objects.filter(episode_id__in=ids).delete()
        FactSource.objects.filter(episode_id__in=ids).delete()
        ProcedureOutcome.objects.filter(episode_id__in=ids).update(episode=None)
        deleted, _ = Episode.objects.filter(id__in=ids).delete()
    return int(deleted)


def episodes_archive(*, tenant: Tenant, now: datetime | None = None, chunk: int = ARCHIVE_CHUNK) -> ArchiveReport:
    """Move episodes older than the tenant's retention to cold storage, a chunk per transaction."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=tenant.config.retention_days)
    report = ArchiveReport()
    while True:
        with tenant_scope(tenant):
            tenant_xact_lock(tenant.id, "archive")
            episodes = list(Episode.objects.filter(occurred_at__lt=cutoff).order_by("occurred_at", "id")[:chunk])
            if not episodes:
                return report
            sessions = dict(
                Session.objects.filter(id__in={e.session_id for e in episodes}).values_list("id", "external_id")
            )
            sources: dict[int, list[str]] = defaultdict(list)
            for episode_id, fact_id in FactSource.objects.filter(episode_id__in=[e.id for e in episodes]).values_list(
                "episode_id", "fact_id"
            ):
                sources[episode_id].append(str(fact_id))
            by_month: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for e in episodes:
                by_month[_month(e.occurred_at)].append(episode_row(e, sessions[e.session_id], sorted(sources[e.id])))
            for month, rows in by_month.items():
                manifest = ArchiveManifest.objects.select_for_update().filter(month=month).first()
                existing = read_archive(manifest.path) if manifest else []
                new_ids = {r["id"] for r in rows}
                write_archive(
                    tenant=tenant,
                    month=month,
                    rows=[r for r in existing if r["id"] not in new_ids] + rows,
                    manifest=manifest,
                )
                report.files += 1
                if month not in report.months:
                    report.months.append(month)
            episodes_delete(tenant=tenant, episode_ids=[e.id for e in episodes])
            report.episodes += len(episodes)


def archive_restore(*, tenant: Tenant, month: str) -> int:
    """Put a month's archived episodes back into the hot table (with their ids and the provenance of
    facts that still exist) and drop the file. Raise retention first, or the next archiving run moves
    them out again."""
    with tenant_scope(tenant):
        manifest = ArchiveManifest.objects.select_for_update().filter(month=month).first()
        if manifest is None:
            return 0
        rows = read_archive(manifest.path)
        sessions = {s.external_id: s for s in Session.objects.filter(external_id__in={r["session"] for r in rows})}
        live_facts = set(
            Fact.objects.filter(id__in={f for r in rows for f in r.get("fact_ids", [])}).values_list("id", flat=True)
        )
        episodes = []
        links = []
        for row in rows:
            session = sessions.get(row["session"])
            if session is None:
                continue
            fields = {f: row[f] for f in EPISODE_FIELDS}
            fields["occurred_at"] = parse_datetime(row["occurred_at"])
            fields["created_at"] = parse_datetime(row["created_at"])
            episodes.append(Episode(tenant=tenant, session=session, **fields))
            links += [
                FactSource(tenant=tenant, fact_id=uuid.UUID(f), episode_id=row["id"])
                for f in row.get("fact_ids", [])
                if uuid.UUID(f) in live_facts
            ]
        Episode.objects.bulk_create(episodes, ignore_conflicts=True)
        passages_create(tenant=tenant, episodes=episodes)
        FactSource.objects.bulk_create(links, ignore_conflicts=True)
        write_archive(tenant=tenant, month=month, rows=[], manifest=manifest)
    return len(episodes)
