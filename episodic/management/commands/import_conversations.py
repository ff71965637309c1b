"""Import real conversations as episodes, through the same service (and validation) as the API.

    manage.py import_conversations --tenant acme --format locomo ../shared/datasets/locomo/locomo10.json
    manage.py import_conversations --tenant acme --format jsonl episodes.jsonl

LoCoMo: one subject per conversation (its sample_id), one session per LoCoMo session
(`<sample_id>:session_<n>`, started at its real date and time), one `message` episode per turn with
external_id = dia_id, role = the speaker, and the photo caption in the content when there is one.
JSONL: one episode per line in the shape of POST /v1/episodes; a line without external_id gets one
derived from its content (`jsonl:<sha256>`), so that the import stays idempotent.
Each batch commits on its own; a second run adds nothing and says so.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import DomainError
from episodic.services import episodes_append
from tenants.management.commands._tenant import add_tenant_argument, resolve_tenant
from tenants.models import Tenant
from tenants.scope import tenant_scope

BATCH = 500
_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass
class Counts:
    conversations: int = 0
    sessions: int = 0
    read: int = 0
    created: int = 0
    skipped: int = 0


def parse_locomo_datetime(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' (LoCoMo gives no zone; taken as UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def locomo_items(conversations: list[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(sample_id, the session's episode items) for every session of every conversation."""
    for sample in conversations:
        sample_id = str(sample["sample_id"])
        conversation = sample["conversation"]
        numbered = sorted(
            (int(m.group(1)), key)
            for key in conversation
            if (m := _SESSION_KEY.match(key)) and isinstance(conversation[key], list)
        )
        for number, key in numbered:
            started = parse_locomo_datetime(conversation[f"{key}_date_time"])
            items = []
            for offset, turn in enumerate(conversation[key]):
                text = str(turn.get("text", ""))
                caption = turn.get("blip_caption")
                if caption:
                    text = f"{text} [shares a photo: {caption}]".strip()
                payload: dict[str, Any] = {"locomo": {"sample_id": sample_id, "session": number}}
                for extra in ("img_url", "blip_caption", "query"):
                    if turn.get(extra):
                        payload[extra] = turn[extra]
                items.append(
                    {
                        "subject": sample_id,
                        "session": f"{sample_id}:{key}",
                        "kind": "message",
                        "role": str(turn["speaker"])[:64],
                        "content": text,
                        "payload": payload,
                        # Turns share their session's time; a second apart keeps their order.
                        "occurred_at": started + timedelta(seconds=offset),
                        "external_id": str(turn["dia_id"]),
                    }
                )
            yield sample_id, items


def jsonl_batches(path: Path) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(first line number, items) in batches, streamed line by line."""
    batch: list[dict[str, Any]] = []
    derived: set[tuple[Any, str]] = set()
    first = 1
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CommandError(f"line {number}: not JSON ({exc.msg})") from exc
            if not isinstance(item, dict):
                raise CommandError(f"line {number}: an episode is a JSON object")
            if not item.get("external_id"):
                canonical = json.dumps(item, sort_keys=True, separators=(",", ":"))
                item["external_id"] = f"jsonl:{hashlib.sha256(canonical.encode()).hexdigest()[:32]}"
                key = (item.get("session"), item["external_id"])
                if key in derived:  # the same line twice: one event
                    continue
                derived.add(key)
            if not batch:
                first = number
            batch.append(item)
            if len(batch) >= BATCH:
                yield first, batch
                batch = []
    if batch:
        yield first, batch


class Command(BaseCommand):
    help = "Import conversations (LoCoMo or JSONL) as episodes; idempotent."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--format", choices=("locomo", "jsonl"), required=True)
        parser.add_argument("path")
        parser.add_argument("--quiet", action="store_true", help="No progress lines, only the counts")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = resolve_tenant(options["tenant"])
        path = Path(options["path"])
        if not path.is_file():
            raise CommandError(f"No file {path}.")
        self.quiet = options["quiet"]
        started = time.perf_counter()
        counts = Counts()
        if options["format"] == "locomo":
            self._locomo(tenant, path, counts)
        else:
            self._jsonl(tenant, path, counts)
        elapsed = time.perf_counter() - started
        self.stdout.write(
            f"conversations={counts.conversations} sessions={counts.sessions} episodes_read={counts.read} "
            f"created={counts.created} skipped_existing={counts.skipped} seconds={elapsed:.2f}"
        )

    def _store(self, tenant: Tenant, items: list[dict[str, Any]], counts: Counts, where: str) -> None:
        try:
            with tenant_scope(tenant):
                created = episodes_append(tenant=tenant, items=items, skip_existing=True)
        except DomainError as exc:
            pointers = ", ".join(e["pointer"] for e in exc.errors[:5])
            raise CommandError(f"{where}: {exc.detail} [{pointers}]") from exc
        counts.read += len(items)
        counts.created += len(created)
        counts.skipped += len(items) - len(created)

    def _progress(self, message: str) -> None:
        if not self.quiet:
            sys.stderr.write(message + "\n")

    def _locomo(self, tenant: Tenant, path: Path, counts: Counts) -> None:
        try:
            conversations = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path}: not JSON ({exc.msg})") from exc
        if not isinstance(conversations, list):
            raise CommandError(f"{path}: expected the LoCoMo list of conversations")
        pending: list[dict[str, Any]] = []
        current = None
        for sample_id, items in locomo_items(conversations):
            if sample_id != current:
                if pending:
                    self._flush(tenant, pending, counts, current)
                    pending = []
                if current is not None:
                    self._progress(f"{current}: done ({counts.created} created, {counts.skipped} existing so far)")
                current = sample_id
                counts.conversations += 1
            counts.sessions += 1
            pending.extend(items)
            if len(pending) >= BATCH:
                self._flush(tenant, pending, counts, sample_id)
                pending = []
        if pending:
            self._flush(tenant, pending, counts, current)
        if current is not None:
            self._progress(f"{current}: done ({counts.created} created, {counts.skipped} existing so far)")

    def _flush(self, tenant: Tenant, items: list[dict[str, Any]], counts: Counts, where: Any) -> None:
        # Several sessions of a conversation per call: the batch limit, not the session, sets the size.
        for start in range(0, len(items), BATCH):
            self._store(tenant, items[start : start + BATCH], counts, str(where))

    def _jsonl(self, tenant: Tenant, path: Path, counts: Counts) -> None:
        sessions: set[str] = set()
        for first_line, items in jsonl_batches(path):
            sessions.update(str(i.get("session")) for i in items)
            try:
                self._store(tenant, items, counts, f"lines from {first_line}")
            except CommandError as exc:
                raise CommandError(f"{exc} (item n of the batch is line {first_line} + n, blank lines aside)") from exc
            self._progress(f"line {first_line + len(items) - 1}: {counts.created} created, {counts.skipped} existing")
        counts.sessions = len(sessions)
