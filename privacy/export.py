"""Whole-tenant export to gzip JSONL, streamed, archives included; and import into an empty tenant.

Line 1 is a header, then one line per row (`{"type": "row", "model": label, "data": {...}}`, field
names as database columns, embeddings included), then the archived episodes
(`{"type": "archived_episode", ...}`), then a footer with the counts. Import gives every row a new
primary key and rewrites the references (foreign keys, `source_episode_ids`); archived episodes come
back as hot episodes (the next archiving run moves them out again), API keys and idempotency records
are not exported (credentials and transient replays).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from django.apps import apps
from django.conf import settings
from django.db import models
from django.db.models import Sum
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from consolidation.lifecycle import EPISODE_FIELDS, iter_archive_rows
from consolidation.models import ArchiveManifest, ConsolidationWatermark
from core.errors import Conflict
from episodic.models import Episode
from episodic.passages import passages_create
from privacy.erasure import serialise
from semantic.models import FactSource
from tenants.models import Tenant
from tenants.scope import tenant_scope

FORMAT = "engram-tenant-export/1"
# Parents before children. Labels of apps not installed are skipped.
EXPORT_ORDER = [
    "episodic.Session",
    "episodic.Episode",
    "semantic.Fact",
    "semantic.FactSource",
    "semantic.FactChange",
    "procedural.Procedure",
    "procedural.ProcedureOutcome",
    "procedural.ProcedureEvent",
    "router.ContextTrace",
    "router.ContextFeedback",
    "consolidation.ConsolidationRun",
    "consolidation.FactDecayAnchor",
    "privacy.ErasureRequest",
]
# Labels of models that moved to another app since an export was written: its rows load as the new one.
MOVED = {"consolidation.ErasureRequest": "privacy.ErasureRequest"}
NOT_EXPORTED = {
    "tenants.ApiKey": "credentials are never exported",
    "tenants.IdempotencyRecord": "transient replays of answers",
    "tenants.TenantMembership": "operators, not tenant data",
    "consolidation.ConsolidationWatermark": "recomputed on import",
    "consolidation.ArchiveManifest": "archived episodes are exported as rows",
    "episodic.Passage": "derived from episodes: rebuilt on import",
}
VECTOR_FIELDS = {"embedding", "trigger_embedding"}
GENERATED = {"search_vector"}


def _models() -> list[type[models.Model]]:
    out = []
    for label in EXPORT_ORDER:
        try:
            out.append(apps.get_model(label))
        except LookupError:
            continue
    return out


def _row(instance: models.Model) -> dict[str, Any]:
    data = serialise(instance)
    for name in VECTOR_FIELDS:
        if any(f.name == name for f in instance._meta.concrete_fields):
            vector = getattr(instance, name)
            data[name] = [float(x) for x in vector] if vector is not None else None
    data.pop("tenant_id", None)
    return data


def export_totals(*, tenant: Tenant) -> dict[str, int]:
    """The rows an export of the tenant will write, per model (one COUNT each), in export order: the
    total a progress bar needs, and the header's promise to the importer."""
    totals: dict[str, int] = {}
    with tenant_scope(tenant):
        for model in _models():
            n = model.objects.count()  # type: ignore[attr-defined]
            if n:
                totals[model._meta.label] = n
        archived = ArchiveManifest.objects.aggregate(n=Sum("episode_count"))["n"] or 0
    if archived:
        totals["archived_episode"] = archived
    return totals


def tenant_export(
    *, tenant: Tenant, out: IO[bytes], progress: Callable[[str, int], None] | None = None
) -> dict[str, int]:
    """Stream the tenant to `out` as gzip JSONL; returns rows written per model. `progress(label, n)`
    hears (label, 0) as each model starts, then the rows written, in steps of up to 1000."""
    counts: Counter[str] = Counter()
    totals = export_totals(tenant=tenant)
    with gzip.GzipFile(fileobj=out, mode="wb") as gz:

        def write(obj: dict[str, Any]) -> None:
            gz.write((json.dumps(obj, default=str, separators=(",", ":")) + "\n").encode())

        write(
            {
                "type": "header",
                "format": FORMAT,
                "tenant": {"id": str(tenant.id), "slug": tenant.slug, "name": tenant.name, "settings": tenant.settings},
                "exported_at": timezone.now().isoformat(),
                "totals": totals,
            }
        )
        with tenant_scope(tenant):
            for model in _models():
                label = model._meta.label
                if progress:
                    progress(label, 0)  # the label changes before the first row, not 1000 rows later
                for instance in model.objects.order_by("pk").iterator(chunk_size=1000):  # type: ignore[attr-defined]
                    write({"type": "row", "model": label, "data": _row(instance)})
                    counts[label] += 1
                    if progress and counts[label] % 1000 == 0:
                        progress(label, 1000)
                if progress:
                    progress(label, counts[label] % 1000)
        if progress:
            progress("archived_episode", 0)
        for row in iter_archive_rows(tenant=tenant):
            write({"type": "archived_episode", "data": row})
            counts["archived_episode"] += 1
            if progress and counts["archived_episode"] % 1000 == 0:
                progress("archived_episode", 1000)
        if progress:
            progress("archived_episode", counts["archived_episode"] % 1000)
        write({"type": "footer", "counts": dict(counts)})
    return dict(counts)


def read_export(fh: IO[bytes]) -> Iterator[dict[str, Any]]:
    with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
        for line in gz:
            if line.strip():
                yield json.loads(line)


def _assert_empty(tenant: Tenant) -> None:
    with tenant_scope(tenant):
        for model in _models():
            if model.objects.exists():  # type: ignore[attr-defined]
                raise Conflict(
                    f"Tenant {tenant.slug} is not empty ({model._meta.label} has rows); import needs an empty tenant."
                )


class _Importer:
    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.maps: dict[str, dict[str, Any]] = {}
        self.deferred: list[tuple[type[models.Model], Any, str, Any]] = []
        self.counts: Counter[str] = Counter()
        self.sessions_by_external_id: dict[str, Any] = {}

    def _convert(
        self, model: type[models.Model], data: dict[str, Any]
    ) -> tuple[Any, dict[str, Any], list[tuple[str, Any]]]:
        fields: dict[str, Any] = {}
        later: list[tuple[str, Any]] = []
        old_pk = data.get(model._meta.pk.attname)
        for field in model._meta.concrete_fields:
            name, attname = field.name, field.attname
            if name in GENERATED or attname == "tenant_id" or field.primary_key or attname not in data:
                continue
            value = data[attname]
            if isinstance(field, models.ForeignKey) and value is not None:
                target = field.related_model._meta.label  # type: ignore[union-attr]
                mapped = self.maps.get(target, {}).get(str(value))
                if mapped is None:
                    if target == model._meta.label:
                        later.append((attname, value))  # self reference: set once every row exists
                    continue
                value = mapped
            elif isinstance(field, models.DateTimeField) and isinstance(value, str):
                value = parse_datetime(value)
            elif isinstance(field, models.UUIDField) and isinstance(value, str):
                value = uuid.UUID(value)
            fields[attname] = value
        if model._meta.label == "semantic.FactChange":
            episodes = self.maps.get("episodic.Episode", {})
            fields["source_episode_ids"] = [
                episodes[str(i)] for i in fields.get("source_episode_ids", []) if str(i) in episodes
            ]
        if isinstance(model._meta.pk, models.UUIDField):
            fields[model._meta.pk.attname] = uuid.uuid4()
        return old_pk, fields, later

    def add(self, model: type[models.Model], batch: list[dict[str, Any]]) -> None:
        label = model._meta.label
        converted = [self._convert(model, data) for data in batch]
        objs = [model(tenant=self.tenant, **fields) for _old, fields, _later in converted]
        model.objects.bulk_create(objs)  # type: ignore[attr-defined]
        if label == "episodic.Episode":
            passages_create(tenant=self.tenant, episodes=objs)  # type: ignore[arg-type]
        mapping = self.maps.setdefault(label, {})
        for (old_pk, _fields, later), obj in zip(converted, objs, strict=True):
            mapping[str(old_pk)] = obj.pk
            for attname, old_ref in later:
                self.deferred.append((model, obj.pk, attname, old_ref))
            if label == "episodic.Session":
                self.sessions_by_external_id[obj.external_id] = obj  # type: ignore[attr-defined]
        self.counts[label] += len(objs)

    def finish_deferred(self) -> None:
        for model, pk, attname, old_ref in self.deferred:
            target = self.maps.get(model._meta.label, {}).get(str(old_ref))
            if target is not None:
                model.objects.filter(pk=pk).update(**{attname: target})  # type: ignore[attr-defined]

    def add_archived(self, rows: list[dict[str, Any]]) -> None:

        episodes, links = [], []
        for row in rows:
            session = self.sessions_by_external_id.get(row["session"])
            if session is None:
                continue
            # A new primary key: every field of the archived row but its id.
            fields = {f: row[f] for f in EPISODE_FIELDS if f != "id"}
            episode = Episode(tenant=self.tenant, session=session, **fields)
            episodes.append((episode, row.get("fact_ids", [])))
        Episode.objects.bulk_create([e for e, _ in episodes])
        passages_create(tenant=self.tenant, episodes=[e for e, _ in episodes])
        facts = self.maps.get("semantic.Fact", {})
        for episode, fact_ids in episodes:
            links += [FactSource(tenant=self.tenant, fact_id=facts[f], episode=episode) for f in fact_ids if f in facts]
        FactSource.objects.bulk_create(links, ignore_conflicts=True)
        self.counts["archived_episode"] += len(episodes)


def tenant_import(
    *,
    tenant: Tenant,
    fh: IO[bytes],
    batch_size: int = 1000,
    progress: Callable[[str, int], None] | None = None,
    on_total: Callable[[int | None], None] | None = None,
) -> dict[str, int]:
    """Load an export into `tenant`, which must hold no memory yet; all or nothing. `on_total` hears
    the rows the header announces (None for an export made before headers carried totals), and
    `progress(label, n)` each batch as it is loaded."""
    _assert_empty(tenant)
    importer = _Importer(tenant)
    with tenant_scope(tenant):
        pending_model: type[models.Model] | None = None
        batch: list[dict[str, Any]] = []
        archived: list[dict[str, Any]] = []

        def flush() -> None:
            if pending_model is not None and batch:
                importer.add(pending_model, batch)
                if progress:
                    progress(pending_model._meta.label, len(batch))
            batch.clear()

        def load_archived(rows: list[dict[str, Any]]) -> None:
            importer.add_archived(rows)
            if progress:
                progress("archived_episode", len(rows))

        for item in read_export(fh):
            kind = item.get("type")
            if kind == "header":
                if item.get("format") != FORMAT:
                    raise Conflict(f"Unknown export format {item.get('format')!r}; expected {FORMAT}.")
                if on_total:
                    announced = item.get("totals")
                    on_total(sum(announced.values()) if isinstance(announced, dict) else None)
            elif kind == "row":
                try:
                    model = apps.get_model(MOVED.get(item["model"], item["model"]))
                except LookupError:
                    continue
                if model is not pending_model or len(batch) >= batch_size:
                    flush()
                    pending_model = model
                batch.append(item["data"])
            elif kind == "archived_episode":
                flush()
                archived.append(item["data"])
                if len(archived) >= batch_size:
                    load_archived(archived)
                    archived = []
        flush()
        if archived:
            load_archived(archived)
        importer.finish_deferred()
        # Everything imported was consolidated at the source (its facts came along).

        last = Episode.objects.order_by("-id").values_list("id", flat=True).first() or 0
        ConsolidationWatermark.objects.update_or_create(
            tenant=tenant, defaults={"last_episode_id": last, "done_above": []}
        )
    return dict(importer.counts)


# --- export files filed from the admin --------------------------------------------------------------

EXPORT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*-\d{8}T\d{6}\.jsonl\.gz$")
PARTIAL = ".part"


@dataclasses.dataclass(frozen=True)
class ExportFile:
    name: str
    size: int
    modified: datetime
    done: bool


def _export_dir(tenant: Tenant) -> Path:
    return Path(settings.EXPORT_ROOT) / str(tenant.id)


def export_file_name(tenant: Tenant, at: datetime | None = None) -> str:
    return f"{tenant.slug}-{(at or timezone.now()):%Y%m%dT%H%M%S}.jsonl.gz"


def tenant_export_file(*, tenant: Tenant, name: str) -> Path:
    """Write the tenant's export to its folder under EXPORT_ROOT as `name`; written under a partial name
    and renamed when complete, so a listed file is always whole. Done already: left as it is."""
    if not EXPORT_NAME.match(name):
        raise ValueError(f"not an export file name: {name!r}")
    folder = _export_dir(tenant)
    final = folder / name
    if final.exists():
        return final
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / (name + PARTIAL)
    with open(partial, "wb") as fh:
        tenant_export(tenant=tenant, out=fh)
    os.replace(partial, final)
    return final


def tenant_export_files(*, tenant: Tenant) -> list[ExportFile]:
    """The tenant's export files, newest first; those still being written have done=False."""
    folder = _export_dir(tenant)
    if not folder.is_dir():
        return []
    out = []
    for path in folder.iterdir():
        done = not path.name.endswith(PARTIAL)
        name = path.name if done else path.name[: -len(PARTIAL)]
        if EXPORT_NAME.match(name):
            stat = path.stat()
            modified = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
            out.append(ExportFile(name=name, size=stat.st_size, modified=modified, done=done))
    return sorted(out, key=lambda f: f.name, reverse=True)


def export_file_path(*, tenant: Tenant, name: str) -> Path | None:
    """A finished export file of the tenant, or None (a name is matched, never joined as a path)."""
    if not EXPORT_NAME.match(name):
        return None
    path = _export_dir(tenant) / name
    return path if path.is_file() else None
